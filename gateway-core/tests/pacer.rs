//! AIMD pacer (30 §6.5 G-72; 05 ).
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns concurrent callers; the library never spawns"
)]

use std::sync::Arc;
use std::time::Duration;

use gateway_core::pacer::{AimdPacer, NoopPacer, Pacer};
use gateway_ports::SourceConfig;
use proptest::prelude::*;

/// G-72: initial limit 8 admits 8 concurrent, the 9th is refused; `leave` frees one.
#[test]
fn g_72_initial_limit_8() {
    let p = AimdPacer::new(64.0);
    assert_eq!(p.limit("a"), Some(8.0));
    for _ in 0..8 {
        assert!(p.try_enter("a"));
    }
    assert!(!p.try_enter("a"));
    assert!(p.try_enter("b"), "per source");
    assert_eq!(p.inflight("a"), 8);
    p.leave("a");
    assert!(p.try_enter("a"));
}

/// G-72: backpressure halves down to the floor 1; floor 1 still admits one.
#[test]
fn g_72_backpressure_halves_to_floor() {
    let p = AimdPacer::new(64.0);
    let mut seen = Vec::new();
    for _ in 0..5 {
        p.on_backpressure("a");
        seen.push(p.limit("a").expect("limit"));
    }
    assert_eq!(seen, vec![4.0, 2.0, 1.0, 1.0, 1.0]);
    assert!(p.try_enter("a"));
    assert!(!p.try_enter("a"));
}

/// G-72: success adds `1/limit`, capped at the ceiling; admitted = `max(1, floor(limit))`.
#[test]
fn g_72_success_additive_increase_to_ceiling() {
    let p = AimdPacer::new(10.0);
    p.on_success("a");
    assert_eq!(p.limit("a"), Some(8.125));
    for _ in 0..1000 {
        p.on_success("a");
    }
    assert_eq!(p.limit("a"), Some(10.0));
    for _ in 0..10 {
        assert!(p.try_enter("a"));
    }
    assert!(!p.try_enter("a"));
}

/// G-72: ceiling = max(64, max over sources of max_concurrency).
#[test]
fn g_72_ceiling_from_sources() {
    let mut a = SourceConfig::new("a", "p", "http://127.0.0.1:1", None, "m");
    assert_eq!(
        AimdPacer::for_sources(std::slice::from_ref(&a)).ceiling(),
        64.0
    );
    a.max_concurrency = 200;
    let b = SourceConfig::new("b", "p", "http://127.0.0.1:1", None, "m");
    assert_eq!(AimdPacer::for_sources(&[a, b]).ceiling(), 200.0);
    assert_eq!(AimdPacer::for_sources(&[]).ceiling(), 64.0);
    // A ceiling below the initial limit caps it; nonsense ceilings become 1.
    assert_eq!(AimdPacer::new(4.0).limit("x"), Some(4.0));
    assert_eq!(AimdPacer::new(f64::NAN).limit("x"), Some(1.0));
}

/// G-72: a stray `leave` never underflows.
#[test]
fn g_72_leave_saturates() {
    let p = AimdPacer::new(64.0);
    p.leave("a");
    assert_eq!(p.inflight("a"), 0);
    assert!(p.try_enter("a"));
    p.leave("a");
    p.leave("a");
    assert_eq!(p.inflight("a"), 0);
}

/// `NoopPacer` admits everything and has nothing to wait for.
#[test]
fn r_5_noop_pacer() {
    let p = NoopPacer;
    for _ in 0..10_000 {
        assert!(p.try_enter("a"));
    }
    p.on_backpressure("a");
    assert!(p.try_enter("a"));
    assert_eq!(p.limit("a"), None);
    assert!(p.wakeup().is_none());
}

/// `leave` wakes a waiting pick; on the paused clock an un-woken waiter would hit its
/// one-hour bound.
#[tokio::test(start_paused = true)]
async fn r_11_leave_wakes_waiter() {
    let shared = Arc::new(tokio::sync::Notify::new());
    let p = Arc::new(AimdPacer::new(1.0).with_notify(shared.clone()));
    assert!(p.try_enter("a"));
    let wake = p.wakeup().expect("aimd has a wakeup");
    assert!(Arc::ptr_eq(&wake, &shared));
    let waiter = {
        let p = p.clone();
        tokio::spawn(async move {
            let n = wake.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            assert!(!p.try_enter("a"));
            tokio::time::timeout(Duration::from_secs(3600), n)
                .await
                .expect("woken by leave");
            p.try_enter("a")
        })
    };
    tokio::task::yield_now().await;
    p.leave("a");
    assert!(waiter.await.expect("waiter"));
}

proptest! {
    /// G-72 invariants: limit ∈ [1, ceiling]; paced in-flight never exceeds max(1, floor(limit))
    /// at admission time; leaving everything returns in-flight to 0.
    #[test]
    fn g_72_invariants(ops in proptest::collection::vec(0u8..4, 1..300)) {
        let p = AimdPacer::new(64.0);
        let mut held = 0u32;
        for op in ops {
            match op {
                0 => if p.try_enter("a") {
                    held += 1;
                    let lim = p.limit("a").unwrap_or(0.0).floor().max(1.0);
                    prop_assert!(f64::from(held) <= lim);
                },
                1 => if held > 0 { p.leave("a"); held -= 1; },
                2 => p.on_success("a"),
                _ => p.on_backpressure("a"),
            }
            let l = p.limit("a").unwrap_or(0.0);
            prop_assert!((1.0..=64.0).contains(&l));
            prop_assert_eq!(p.inflight("a"), held);
        }
        for _ in 0..held { p.leave("a"); }
        prop_assert_eq!(p.inflight("a"), 0);
    }
}
