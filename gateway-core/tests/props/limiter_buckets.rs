//! `MemoryRateLimiter` scopes without RPM and TPM limits (issue 21): their usage is counted in
//! 100 ms buckets and a permit's record lives only while it holds its slots. Deterministic rows
//! on the paused tokio clock (roll-over, settle into the grant's bucket, release, a memory bound
//! over 100 000 cycles); the proptest against the exact model is in `limiter_buckets_props`.

use std::sync::Arc;
use std::time::Duration;

use gateway_core::clock::TokioClock;
use gateway_core::memory::MemoryRateLimiter;
use gateway_ports::{Acquire, Clock, GlobalLimits, Permit, RateLimiter, SourceConfig};

use super::permit_model::source;

/// A limiter on a `TokioClock` (the paused runtime's time) and that clock.
fn limiter(
    sources: &[SourceConfig],
    global: GlobalLimits,
    lease_s: f64,
) -> (MemoryRateLimiter, TokioClock) {
    let clock = TokioClock::new();
    let l = MemoryRateLimiter::new("b", sources, global, lease_s, Arc::new(clock));
    (l, clock)
}

#[expect(clippy::expect_used, reason = "test helper")]
async fn grant(l: &MemoryRateLimiter, src: &str, est: u64) -> Box<dyn Permit> {
    match l.try_acquire(src, est).await.expect("acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, .. } => panic!("denied at {gate}"),
    }
}

/// (tpm, rpm, inflight) of `src` and of the global scope.
#[expect(clippy::expect_used, reason = "test helper")]
async fn usage(l: &MemoryRateLimiter, src: &str) -> [(u64, u32, u32); 2] {
    let s = l.source_stats(src).await.expect("stats");
    let g = l.global_stats();
    [
        (s.tpm_used, s.rpm_used, s.inflight),
        (g.tpm_used, g.rpm_used, g.inflight),
    ]
}

/// Advances the paused runtime until `clock` reads `ms` milliseconds.
async fn at_ms(clock: &TokioClock, ms: u64) {
    let target = Duration::from_millis(ms);
    let now = clock.monotonic();
    assert!(target >= now, "time only moves forward");
    tokio::time::advance(target - now).await;
}

/// A grant counts until the 100 ms bucket 60 s after its own begins: a grant at 0.05 s leaves
/// with its bucket at 60.0 s (0.05 s early, within one bucket), one at 0.15 s at 60.1 s.
#[tokio::test(start_paused = true)]
async fn r_46_bucket_roll_over_at_the_window_edge() {
    let (l, c) = limiter(&[source("a", 0, 0, 0)], GlobalLimits::default(), 1000.0);
    let at = |ms: u64| at_ms(&c, ms);
    grant(&l, "a", 10).await.settle_and_release_now(10);
    at(50).await;
    grant(&l, "a", 20).await.settle_and_release_now(20);
    at(150).await;
    grant(&l, "a", 40).await.settle_and_release_now(40);
    assert_eq!(usage(&l, "a").await, [(70, 3, 0); 2]);
    assert_eq!(l.tracked_permits(), 0, "no record once released");
    at(59_999).await;
    assert_eq!(usage(&l, "a").await, [(70, 3, 0); 2]);
    at(60_000).await;
    assert_eq!(usage(&l, "a").await, [(40, 1, 0); 2], "bucket 0 left");
    at(60_099).await;
    assert_eq!(usage(&l, "a").await, [(40, 1, 0); 2]);
    at(60_100).await;
    assert_eq!(usage(&l, "a").await, [(0, 0, 0); 2]);
    // A long idle gap and a new grant into a reused bucket.
    at(3_600_000).await;
    grant(&l, "a", 5).await.settle_and_release_now(5);
    assert_eq!(usage(&l, "a").await, [(5, 1, 0); 2]);
}

/// Settle replaces the estimate in the bucket the grant was counted in, not the current one:
/// when that bucket leaves, the settled amount leaves with it. A settle after the bucket left
/// changes nothing (no negative count, no panic).
#[tokio::test(start_paused = true)]
async fn g_74_settle_adjusts_the_grant_bucket() {
    let (l, c) = limiter(&[source("a", 0, 0, 0)], GlobalLimits::default(), 1000.0);
    let p = grant(&l, "a", 400).await;
    at_ms(&c, 30_000).await;
    let q = grant(&l, "a", 100).await;
    at_ms(&c, 50_000).await;
    p.settle(1000).await.expect("settle");
    assert_eq!(usage(&l, "a").await, [(1100, 2, 2); 2]);
    at_ms(&c, 60_000).await;
    assert_eq!(usage(&l, "a").await, [(100, 1, 2); 2], "p left with 1000");
    // q's bucket rolls out before q settles: the late settle is a no-op.
    at_ms(&c, 90_000).await;
    assert_eq!(usage(&l, "a").await, [(0, 0, 2); 2]);
    q.settle(0).await.expect("settle after the bucket left");
    assert_eq!(usage(&l, "a").await, [(0, 0, 2); 2]);
    // A refund larger than anything live in the window cannot go negative.
    let r = grant(&l, "a", 10).await;
    r.settle(0).await.expect("settle");
    r.settle(0).await.expect("second settle is a no-op");
    assert_eq!(usage(&l, "a").await, [(0, 1, 3); 2]);
    for x in [p, q, r] {
        x.release().await.expect("release");
    }
    assert_eq!(usage(&l, "a").await, [(0, 1, 0); 2]);
    assert_eq!(l.tracked_permits(), 0);
}

/// A permit whose slot was reclaimed by its lease has no record left, yet its late settle still
/// applies once (it is still in the window) and a late release is a no-op.
#[tokio::test(start_paused = true)]
async fn g_74_late_settle_after_reclaim_without_record() {
    let (l, c) = limiter(&[source("a", 1, 0, 0)], GlobalLimits::default(), 10.0);
    let p = grant(&l, "a", 400).await;
    at_ms(&c, 10_000).await;
    assert_eq!(usage(&l, "a").await, [(400, 1, 0); 2], "slot reclaimed");
    assert_eq!(l.tracked_permits(), 0, "record gone with the slot");
    p.settle(30).await.expect("late settle");
    assert_eq!(usage(&l, "a").await, [(30, 1, 0); 2]);
    p.settle(999).await.expect("at most once");
    p.release().await.expect("late release");
    assert_eq!(usage(&l, "a").await, [(30, 1, 0); 2]);
    let q = grant(&l, "a", 1).await;
    assert_eq!(usage(&l, "a").await, [(31, 2, 1); 2], "no double decrement");
    q.release().await.expect("release");
    q.settle(0).await.expect("settle after release is a no-op");
    assert_eq!(usage(&l, "a").await, [(31, 2, 0); 2]);
}

/// Mixed scopes: an unlimited source under a limited global scope keeps the exact entry for the
/// global gates and buckets for itself; a limited source under an unlimited global the reverse.
/// Both settle on either side.
#[tokio::test(start_paused = true)]
async fn r_46_mixed_exact_and_bucket_scopes() {
    let global = GlobalLimits {
        max_concurrency: 0,
        rpm: 0,
        tpm: 1000,
    };
    let (l, c) = limiter(&[source("a", 0, 0, 0)], global, 1000.0);
    let p = grant(&l, "a", 900).await;
    p.settle_and_release_now(100);
    assert_eq!(usage(&l, "a").await, [(100, 1, 0); 2]);
    assert_eq!(l.tracked_permits(), 1, "the exact global window keeps it");
    let q = grant(&l, "a", 900).await;
    assert!(matches!(
        l.try_acquire("a", 1).await.expect("acquire"),
        Acquire::Denied { .. }
    ));
    q.release().await.expect("release");
    at_ms(&c, 60_000).await;
    assert_eq!(usage(&l, "a").await, [(0, 0, 0); 2]);
    assert_eq!(l.tracked_permits(), 0);

    let (l, c) = limiter(&[source("a", 0, 5, 0)], GlobalLimits::default(), 1000.0);
    let p = grant(&l, "a", 900).await;
    p.settle_and_release_now(100);
    assert_eq!(usage(&l, "a").await, [(100, 1, 0); 2]);
    at_ms(&c, 120_000).await;
    assert_eq!(usage(&l, "a").await, [(0, 0, 0); 2]);
    assert_eq!(l.retained_entries(), 0);
}

/// The memory bound: 100 000 acquire/settle/release cycles, one per millisecond (100 s, longer
/// than the window), with eight permits always in flight and one held for the whole run, never
/// retain more than a small multiple of the permits in flight — the exact mode would hold the
/// 60 000 entries of a 60 s window at that rate, and ten times more at 10 000 calls per second.
#[tokio::test(start_paused = true)]
async fn r_46_retained_records_bounded_over_100k_cycles() {
    let (l, c) = limiter(
        &[source("a", 0, 0, 0), source("b", 0, 0, 0)],
        GlobalLimits::default(),
        1000.0,
    );
    let long = grant(&l, "b", 1).await;
    let mut held = std::collections::VecDeque::new();
    let mut max_retained = 0;
    for i in 0..100_000u32 {
        tokio::time::advance(Duration::from_millis(1)).await;
        held.push_back(grant(&l, "a", 3).await);
        if held.len() > 8
            && let Some(p) = held.pop_front()
        {
            assert!(p.settle_and_release_now(2));
        }
        if i % 97 == 0 {
            max_retained = max_retained.max(l.retained_entries());
            assert!(l.tracked_permits() <= 9 + 1);
        }
    }
    max_retained = max_retained.max(l.retained_entries());
    assert!(max_retained <= 2 * 10 + 64 + 10, "retained {max_retained}");
    // Grants at 1 ms … 100 000 ms; at 100 s the exact window holds the 60 000 from 40.001 s
    // on, the buckets the 59 901 from 40.1 s on (within one 100 ms bucket). Tokens: settled 2
    // each, 3 for the eight still held.
    let [(tpm, rpm, inflight), g] = usage(&l, "a").await;
    assert_eq!(inflight, 8);
    assert_eq!(rpm, 59_901);
    assert_eq!(tpm, u64::from(rpm) * 2 + 8);
    // The long permit's grant left the window long ago; only its slot counts.
    assert_eq!(g, (tpm, rpm, 9));
    for p in held {
        p.release().await.expect("release");
    }
    long.release().await.expect("release");
    assert_eq!(l.tracked_permits(), 0);
    at_ms(&c, 200_000).await;
    assert_eq!(usage(&l, "a").await, [(0, 0, 0); 2]);
    assert_eq!(l.retained_entries(), 0);
}
