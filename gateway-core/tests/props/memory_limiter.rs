//! `MemoryRateLimiter` beyond the shared contract suite (contract-tests runs CT-LIM-*): the
//! accounting invariant and zero leaks under random interleavings (proptest), the R-11 wakeup,
//! the R-9 fast path without a runtime, and construction edge cases.
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns concurrent waiters; the library never spawns"
)]

use std::sync::Arc;
use std::time::Duration;

use gateway_core::clock::FakeClock;
use gateway_core::memory::MemoryRateLimiter;
use gateway_ports::{Acquire, GlobalLimits, LimitGate, Permit, RateLimiter, SourceConfig};
use proptest::prelude::*;

use super::permit_model::{M, PermitOp, apply, permit_op, release_all, source};

#[expect(clippy::expect_used, reason = "test helper")]
fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

const LEASE_S: u64 = 90;
const WINDOW_S: u64 = 60;

#[derive(Debug, Clone)]
enum Op {
    Acquire { src: usize, est: u64 },
    Permit(PermitOp),
    Advance { secs: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, 0..1500u64).prop_map(|(src, est)| Op::Acquire { src, est }),
        6 => permit_op().prop_map(Op::Permit),
        2 => (0..70u64).prop_map(|secs| Op::Advance { secs }),
    ]
}

struct Limits {
    conc: u32,
    rpm: u32,
    tpm: u64,
}

const SOURCES: [(&str, Limits); 2] = [
    (
        "a",
        Limits {
            conc: 3,
            rpm: 10,
            tpm: 3000,
        },
    ),
    (
        "b",
        Limits {
            conc: 0,
            rpm: 0,
            tpm: 0,
        },
    ),
];
const GLOBAL: Limits = Limits {
    conc: 4,
    rpm: 15,
    tpm: 5000,
};

/// (tpm, rpm, inflight) the model expects for `src` (`None` = global) at `now`.
fn model_usage(ms: &[M], src: Option<usize>, now: u64) -> (u64, u32, u32) {
    let mine = ms.iter().filter(|m| src.is_none_or(|s| s == m.src));
    let (mut tpm, mut rpm, mut inflight) = (0, 0, 0);
    for m in mine {
        if now - m.granted_at < WINDOW_S {
            tpm += m.tokens;
            rpm += 1;
        }
        if !m.released && now - m.granted_at < LEASE_S {
            inflight += 1;
        }
    }
    (tpm, rpm, inflight)
}

fn model_gate(ms: &[M], src: usize, est: u64, now: u64) -> Option<LimitGate> {
    let (st, sr, sc) = model_usage(ms, Some(src), now);
    let (gt, gr, gc) = model_usage(ms, None, now);
    let l = &SOURCES[src].1;
    let checks = [
        (l.conc > 0 && sc >= l.conc, LimitGate::SourceConcurrency),
        (l.rpm > 0 && sr >= l.rpm, LimitGate::SourceRpm),
        (l.tpm > 0 && st + est > l.tpm, LimitGate::SourceTpm),
        (
            GLOBAL.conc > 0 && gc >= GLOBAL.conc,
            LimitGate::GlobalConcurrency,
        ),
        (GLOBAL.rpm > 0 && gr >= GLOBAL.rpm, LimitGate::GlobalRpm),
        (
            GLOBAL.tpm > 0 && gt + est > GLOBAL.tpm,
            LimitGate::GlobalTpm,
        ),
    ];
    checks.iter().find(|(hit, _)| *hit).map(|(_, g)| *g)
}

#[expect(clippy::expect_used, reason = "test helper")]
async fn check(l: &MemoryRateLimiter, ms: &[M], now: u64) -> Result<(), TestCaseError> {
    for (i, (name, lim)) in SOURCES.iter().enumerate() {
        let s = l.source_stats(name).await.expect("stats");
        let (tpm, rpm, inflight) = model_usage(ms, Some(i), now);
        prop_assert_eq!(
            (s.tpm_used, s.rpm_used, s.inflight),
            (tpm, rpm, inflight),
            "{}",
            name
        );
        if lim.conc > 0 {
            prop_assert!(s.inflight <= lim.conc);
        }
        if lim.rpm > 0 {
            prop_assert!(s.rpm_used <= lim.rpm);
        }
    }
    let g = l.global_stats();
    prop_assert_eq!(
        (g.tpm_used, g.rpm_used, g.inflight),
        model_usage(ms, None, now)
    );
    prop_assert!(g.inflight <= GLOBAL.conc);
    Ok(())
}

#[expect(clippy::expect_used, reason = "test helper")]
async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let clock = Arc::new(FakeClock::new());
    let sources: Vec<SourceConfig> = SOURCES
        .iter()
        .map(|(n, l)| source(n, l.conc, l.rpm, l.tpm))
        .collect();
    let global = GlobalLimits {
        max_concurrency: GLOBAL.conc,
        rpm: GLOBAL.rpm,
        tpm: GLOBAL.tpm,
    };
    let l = MemoryRateLimiter::new("p", &sources, global, LEASE_S as f64, clock.clone());
    let mut ms: Vec<M> = Vec::new();
    // Live handles: (model index, permit).
    let mut held: Vec<(usize, Box<dyn Permit>)> = Vec::new();
    let mut now = 0u64;
    for op in ops {
        match op {
            Op::Acquire { src, est } => {
                let expected = model_gate(&ms, src, est, now);
                match l.try_acquire(SOURCES[src].0, est).await.expect("acquire") {
                    Acquire::Granted(p) => {
                        prop_assert_eq!(expected, None, "granted past a gate");
                        ms.push(M::granted(src, est, now));
                        held.push((ms.len() - 1, p));
                    }
                    Acquire::Denied { gate, wait_hint_s } => {
                        prop_assert_eq!(expected, Some(gate));
                        if let Some(h) = wait_hint_s {
                            prop_assert!((0.0..=60.0).contains(&h), "hint {}", h);
                        }
                    }
                }
            }
            Op::Permit(op) => apply(op, &mut held, &mut ms).await?,
            Op::Advance { secs } => {
                clock.advance(Duration::from_secs(secs));
                now += secs;
            }
        }
        check(&l, &ms, now).await?;
    }
    // Zero leaks: release every held permit, let every lease run out.
    release_all(&held, &mut ms).await;
    check(&l, &ms, now).await?;
    clock.advance(Duration::from_secs(LEASE_S));
    now += LEASE_S;
    check(&l, &ms, now).await?;
    prop_assert_eq!(l.global_stats().inflight, 0);
    prop_assert_eq!(l.tracked_permits(), 0, "no permit record leaked");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// 30 G-74, D11, CT-LIM-01..06, -10, -14: under random interleavings of acquire, settle,
    /// release, fast path, cancellation (drop without release) and lease expiry, used TPM equals
    /// the settled amounts plus the held estimates of unsettled permits in the window, RPM and
    /// in-flight match the model, every grant/denial matches the six gates, and after releasing
    /// or expiring everything nothing is in flight or tracked.
    #[test]
    fn g_74_accounting_invariant_and_zero_leaks(ops in proptest::collection::vec(op(), 1..80)) {
        rt().block_on(run(ops))?;
    }
}

/// 05 R-9: the fast path needs no runtime and returns `true` with the effect applied.
// covers: G-106
#[test]
fn r_9_fast_path_without_runtime() {
    let clock = Arc::new(FakeClock::new());
    let l = MemoryRateLimiter::new(
        "s",
        &[source("a", 1, 0, 0)],
        GlobalLimits::default(),
        100.0,
        clock,
    );
    let rt = rt();
    let p = match rt.block_on(l.try_acquire("a", 400)).expect("acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, .. } => panic!("denied at {gate}"),
    };
    // Outside any runtime context:
    assert!(p.settle_and_release_now(50));
    let s = l.global_stats();
    assert_eq!((s.tpm_used, s.inflight), (50, 0));
    assert!(p.settle_and_release_now(999), "idempotent, still true");
    assert_eq!(l.global_stats().tpm_used, 50);
}

/// 05 R-11: a release wakes a waiting pick through the `Notify` (no polling). On the paused
/// clock an un-woken waiter would hit its one-hour bound instead.
#[tokio::test(start_paused = true)]
async fn r_11_release_wakes_waiter() {
    let l = MemoryRateLimiter::new(
        "s",
        &[source("a", 1, 0, 0)],
        GlobalLimits::default(),
        100.0,
        Arc::new(FakeClock::new()),
    );
    let p = match l.try_acquire("a", 1).await.expect("acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, .. } => panic!("denied at {gate}"),
    };
    let notify = l.notify();
    let waiter = {
        let l = l.clone();
        tokio::spawn(async move {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            assert!(matches!(
                l.try_acquire("a", 1).await.expect("acquire"),
                Acquire::Denied { .. }
            ));
            let start = tokio::time::Instant::now();
            tokio::time::timeout(Duration::from_secs(3600), notified)
                .await
                .expect("woken by release, not by the bound");
            assert_eq!(start.elapsed(), Duration::ZERO);
            matches!(
                l.try_acquire("a", 1).await.expect("acquire"),
                Acquire::Granted(_)
            )
        })
    };
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    p.release().await.expect("release");
    assert!(waiter.await.expect("waiter"), "slot free after wakeup");
}

/// 05 R-11: a lease reclaim and a refunding settle also wake waiters; a shared `Notify` can be
/// injected (`with_notify`).
#[tokio::test(start_paused = true)]
async fn r_11_shared_notify_and_reclaim_wake() {
    let shared = Arc::new(tokio::sync::Notify::new());
    let clock = Arc::new(FakeClock::new());
    let l = MemoryRateLimiter::new(
        "s",
        &[source("a", 1, 0, 1000)],
        GlobalLimits::default(),
        10.0,
        clock.clone(),
    )
    .with_notify(shared.clone());
    assert!(Arc::ptr_eq(&l.notify(), &shared));
    let p = match l.try_acquire("a", 900).await.expect("acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, .. } => panic!("denied at {gate}"),
    };
    let n = shared.notified();
    tokio::pin!(n);
    n.as_mut().enable();
    p.settle(100).await.expect("settle"); // refund 800
    tokio::time::timeout(Duration::from_secs(1), n)
        .await
        .expect("refund wakes");
    drop(p);
    let n = shared.notified();
    tokio::pin!(n);
    n.as_mut().enable();
    clock.advance(Duration::from_secs(10));
    assert_eq!(l.source_stats("a").await.expect("stats").inflight, 0);
    tokio::time::timeout(Duration::from_secs(1), n)
        .await
        .expect("reclaim wakes");
}

/// 30 G-74 wait hints: RPM/TPM denials hint the seconds until enough entries age out;
/// concurrency denials and impossible estimates give none.
#[tokio::test]
async fn g_74_wait_hints() {
    let clock = Arc::new(FakeClock::new());
    let l = MemoryRateLimiter::new(
        "s",
        &[source("a", 1, 0, 0), source("b", 0, 1, 500)],
        GlobalLimits::default(),
        100.0,
        clock.clone(),
    );
    let _p = l.try_acquire("a", 1).await.expect("acquire");
    match l.try_acquire("a", 1).await.expect("acquire") {
        Acquire::Denied { gate, wait_hint_s } => {
            assert_eq!((gate, wait_hint_s), (LimitGate::SourceConcurrency, None));
        }
        Acquire::Granted(_) => panic!("granted"),
    }
    let _q = l.try_acquire("b", 100).await.expect("acquire");
    clock.advance(Duration::from_secs(15));
    match l.try_acquire("b", 1).await.expect("acquire") {
        Acquire::Denied { gate, wait_hint_s } => {
            assert_eq!((gate, wait_hint_s), (LimitGate::SourceRpm, Some(45.0)));
        }
        Acquire::Granted(_) => panic!("granted"),
    }
}

/// Construction: a permit's `Debug` and id name the scope and no secret; unknown sources are
/// `SourceNotConfigured`; a closed limiter fails closed but lets permits finish.
#[tokio::test]
async fn ct_lim_08_09_construction_and_close() {
    let mut s = source("a", 0, 0, 0);
    s.api_key = Some("sk-secretsecret".into());
    let l = MemoryRateLimiter::new(
        "scope1",
        &[s],
        GlobalLimits::default(),
        100.0,
        Arc::new(FakeClock::new()),
    );
    assert_eq!(l.scope(), "scope1");
    let p = match l.try_acquire("a", 5).await.expect("acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, .. } => panic!("denied at {gate}"),
    };
    assert!(p.id().starts_with("scope1:"));
    let dbg = format!("{p:?} {l:?}");
    assert!(!dbg.contains("sk-secret"), "{dbg}");
    l.close().await;
    l.close().await;
    assert!(l.try_acquire("a", 1).await.is_err());
    assert!(l.progress_age_s().await.is_err());
    p.settle(1).await.expect("settle after close");
    p.release().await.expect("release after close");
    assert_eq!(l.global_stats().inflight, 0);
}
