//! Rate limiter contract rows CT-LIM-01..12, 14, 15. Each row is a
//! generic async function over a [`Backend`]; none sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use gateway_ports::{Acquire, BackendErrorKind, LimitGate};

use crate::{Backend, global, must_deny, must_grant, secs, source, usage};

/// CT-LIM-01: a grant takes one source and one global concurrency slot, one RPM unit of each and
/// `est` TPM of each.
// covers: G-73
pub async fn ct_lim_01_six_gates_taken<B: Backend>(b: &B) {
    let l = b
        .limiter(
            &[source("a", 2, 10, 1000), source("b", 2, 10, 1000)],
            global(3, 20, 2000),
            100.0,
        )
        .await;
    let _p = must_grant(&*l, "a", 400).await;
    assert_eq!(usage(&*l, "a").await, (400, 1, 1));
    assert_eq!(usage(&*l, "b").await, (0, 0, 0), "other source untouched");
    // The global gates were taken too: two more grants fill global concurrency (3).
    let _q = must_grant(&*l, "b", 100).await;
    let _r = must_grant(&*l, "b", 100).await;
    assert_eq!(must_deny(&*l, "a", 1).await.0, LimitGate::GlobalConcurrency);
}

/// CT-LIM-01: `0` limits are unlimited (source and global).
pub async fn ct_lim_01_zero_is_unlimited<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    let mut held = Vec::new();
    for _ in 0..200 {
        held.push(must_grant(&*l, "a", 1_000_000).await);
    }
    assert_eq!(usage(&*l, "a").await, (200_000_000, 200, 200));
    for p in held {
        p.release().await.expect("release");
    }
    assert_eq!(usage(&*l, "a").await.2, 0);
}

/// CT-LIM-02: each of the six gates refuses by name, and a denial reserves nothing.
// covers: G-73
pub async fn ct_lim_02_denial_names_gate_and_changes_nothing<B: Backend>(b: &B) {
    // (source limits, global limits, gate expected after one grant of est 600)
    let cases = [
        ((1, 0, 0), (0, 0, 0), LimitGate::SourceConcurrency),
        ((0, 1, 0), (0, 0, 0), LimitGate::SourceRpm),
        ((0, 0, 1000), (0, 0, 0), LimitGate::SourceTpm),
        ((0, 0, 0), (1, 0, 0), LimitGate::GlobalConcurrency),
        ((0, 0, 0), (0, 1, 0), LimitGate::GlobalRpm),
        ((0, 0, 0), (0, 0, 1000), LimitGate::GlobalTpm),
    ];
    for ((sc, sr, st), (gc, gr, gt), gate) in cases {
        let l = b
            .limiter(&[source("a", sc, sr, st)], global(gc, gr, gt), 100.0)
            .await;
        let _p = must_grant(&*l, "a", 600).await;
        let before = usage(&*l, "a").await;
        let (got, hint) = must_deny(&*l, "a", 600).await;
        assert_eq!(got, gate, "limits {:?}", ((sc, sr, st), (gc, gr, gt)));
        if let Some(h) = hint {
            assert!(h.is_finite() && h >= 0.0, "{gate}: hint {h}");
        }
        assert_eq!(
            usage(&*l, "a").await,
            before,
            "{gate}: denial changed nothing"
        );
    }
}

/// CT-LIM-02: a denial at a global gate leaves the source gates (already passed) untouched, and
/// the first refusing gate in order is named.
pub async fn ct_lim_02_global_denial_leaves_source_untouched<B: Backend>(b: &B) {
    let l = b
        .limiter(
            &[source("a", 5, 50, 5000), source("b", 5, 50, 5000)],
            global(10, 50, 1000),
            100.0,
        )
        .await;
    let _p = must_grant(&*l, "b", 800).await;
    let (gate, _) = must_deny(&*l, "a", 300).await;
    assert_eq!(gate, LimitGate::GlobalTpm);
    assert_eq!(usage(&*l, "a").await, (0, 0, 0));
    assert_eq!(usage(&*l, "b").await, (800, 1, 1));
    // Source concurrency is checked before the global TPM gate.
    let l = b
        .limiter(&[source("a", 1, 0, 0)], global(0, 0, 100), 100.0)
        .await;
    let _p = must_grant(&*l, "a", 100).await;
    assert_eq!(
        must_deny(&*l, "a", 100).await.0,
        LimitGate::SourceConcurrency
    );
}

/// CT-LIM-03: `settle(actual)` adjusts source and global TPM by `actual − est`.
pub async fn ct_lim_03_settle_arithmetic<B: Backend>(b: &B) {
    for (actual, expected) in [(1000u64, 1000u64), (400, 400), (0, 0), (150, 150)] {
        let l = b
            .limiter(
                &[source("a", 0, 0, 10_000), source("b", 0, 0, 0)],
                global(0, 0, 10_000),
                100.0,
            )
            .await;
        let _other = must_grant(&*l, "b", 50).await;
        let p = must_grant(&*l, "a", 400).await;
        assert_eq!(p.est_tokens(), 400);
        assert_eq!(p.source(), "a");
        p.settle(actual).await.expect("settle");
        assert_eq!(usage(&*l, "a").await.0, expected, "actual {actual}");
        // Global TPM moved the same way: it admits exactly 10 000 − 50 − expected more.
        let room = 10_000 - 50 - expected;
        let q = must_grant(&*l, "b", room).await;
        assert_eq!(must_deny(&*l, "b", 1).await.0, LimitGate::GlobalTpm);
        q.release().await.expect("release");
        p.release().await.expect("release");
    }
}

/// CT-LIM-04: a second `settle` is a no-op; `settle` after `release` is a no-op.
pub async fn ct_lim_04_settle_at_most_once<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    let p = must_grant(&*l, "a", 400).await;
    p.settle(100).await.expect("settle");
    p.settle(900).await.expect("second settle");
    assert_eq!(usage(&*l, "a").await.0, 100);
    p.release().await.expect("release");
    let q = must_grant(&*l, "a", 400).await;
    q.release().await.expect("release");
    q.settle(0).await.expect("settle after release");
    assert_eq!(
        usage(&*l, "a").await.0,
        500,
        "settle after release kept est"
    );
}

/// CT-LIM-05: `release` frees the slots, is idempotent, and in-flight returns to zero.
pub async fn ct_lim_05_release_idempotent_inflight_zero<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 2, 0, 0)], global(2, 0, 0), 100.0)
        .await;
    let p = must_grant(&*l, "a", 10).await;
    let q = must_grant(&*l, "a", 10).await;
    assert_eq!(usage(&*l, "a").await.2, 2);
    p.release().await.expect("release");
    p.release().await.expect("second release");
    assert_eq!(usage(&*l, "a").await.2, 1, "no double decrement");
    let r = must_grant(&*l, "a", 10).await;
    assert_eq!(
        must_deny(&*l, "a", 10).await.0,
        LimitGate::SourceConcurrency
    );
    q.release().await.expect("release");
    r.release().await.expect("release");
    r.release().await.expect("release");
    assert_eq!(usage(&*l, "a").await.2, 0);
}

/// CT-LIM-06: granted-then-abandoned: the lease frees the slots, TPM stays at `est`.
pub async fn ct_lim_06_lease_reclaims_abandoned_permit<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 1, 0, 0)], global(1, 0, 0), 30.0)
        .await;
    drop(must_grant(&*l, "a", 400).await); // holder died without settle or release
    b.time().advance(secs(29)).await;
    assert_eq!(must_deny(&*l, "a", 1).await.0, LimitGate::SourceConcurrency);
    assert_eq!(usage(&*l, "a").await, (400, 1, 1));
    b.time().advance(secs(1)).await;
    assert_eq!(
        usage(&*l, "a").await,
        (400, 1, 0),
        "slot reclaimed, est kept"
    );
    let p = must_grant(&*l, "a", 1).await;
    p.settle_and_release_now(1);
    p.release().await.expect("release");
}

/// CT-LIM-06: granted-settled-then-abandoned: the lease frees the slots, TPM stays at the
/// settled value.
pub async fn ct_lim_06_lease_reclaims_settled_permit<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 1, 0, 0)], global(1, 0, 0), 30.0)
        .await;
    let p = must_grant(&*l, "a", 400).await;
    p.settle(150).await.expect("settle");
    drop(p); // died between settle and release
    b.time().advance(secs(30)).await;
    assert_eq!(usage(&*l, "a").await, (150, 1, 0));
    let _q = must_grant(&*l, "a", 1).await;
}

/// CT-LIM-06: after a reclaim, a late `release` is a no-op (no double decrement) and a late
/// `settle` of a not-yet-settled permit still applies.
pub async fn ct_lim_06_late_release_and_settle_after_reclaim<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 2, 0, 0)], global(0, 0, 0), 30.0)
        .await;
    let old = must_grant(&*l, "a", 400).await;
    b.time().advance(secs(30)).await;
    let young = must_grant(&*l, "a", 10).await;
    assert_eq!(usage(&*l, "a").await, (410, 2, 1), "old slot reclaimed");
    old.release().await.expect("late release");
    assert_eq!(usage(&*l, "a").await.2, 1, "late release is a no-op");
    let old2 = must_grant(&*l, "a", 500).await;
    b.time().advance(secs(30)).await; // reclaims `young` and `old2`
    assert_eq!(usage(&*l, "a").await.2, 0);
    old2.settle(100).await.expect("late settle");
    // `old` aged out of the window at t=60; `young` (10) and `old2` (settled 100) remain.
    assert_eq!(usage(&*l, "a").await, (110, 2, 0));
    young.release().await.expect("release");
    old2.release().await.expect("release");
    assert_eq!(usage(&*l, "a").await.2, 0);
}

/// CT-LIM-06 with the harness lease of 100 s: an abandoned permit's slot is free after 100 s.
pub async fn ct_lim_06_lease_ttl_100_frees_slot<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 1, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    drop(must_grant(&*l, "a", 400).await);
    b.time().advance(secs(99)).await;
    assert_eq!(usage(&*l, "a").await.2, 1);
    b.time().advance(secs(1)).await;
    assert_eq!(usage(&*l, "a").await.2, 0);
    let p = must_grant(&*l, "a", 400).await;
    p.release().await.expect("release");
}

/// CT-LIM-07: `est` above the source's own non-zero `tpm` is never granted.
pub async fn ct_lim_07_est_above_tpm_never_granted<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 1)], global(0, 0, 0), 100.0)
        .await;
    for _ in 0..3 {
        assert_eq!(must_deny(&*l, "a", 1000).await.0, LimitGate::SourceTpm);
        b.time().advance(secs(120)).await;
    }
    assert_eq!(usage(&*l, "a").await, (0, 0, 0));
}

/// CT-LIM-08: an unknown source is `SourceNotConfigured`.
pub async fn ct_lim_08_unknown_source<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    let e = l.try_acquire("zz", 1).await.expect_err("unknown source");
    assert_eq!(e.kind, BackendErrorKind::SourceNotConfigured);
    assert!(e.detail.contains("zz"));
    let e = l.source_stats("zz").await.expect_err("unknown source");
    assert_eq!(e.kind, BackendErrorKind::SourceNotConfigured);
}

/// CT-LIM-09: an unavailable backend answers `Unavailable` and never grants.
pub async fn ct_lim_09_unavailable_fails_closed<B: Backend>(b: &B) {
    let l = b.unavailable_limiter(&[source("a", 0, 0, 0)]).await;
    for _ in 0..3 {
        match l.try_acquire("a", 1).await {
            Err(e) => assert_eq!(e.kind, BackendErrorKind::Unavailable),
            Ok(a) => panic!("unavailable backend answered {a:?}"),
        }
    }
    let e = l.source_stats("a").await.expect_err("stats");
    assert_eq!(e.kind, BackendErrorKind::Unavailable);
}

/// CT-LIM-10: under many concurrent `try_acquire` calls no limit is exceeded, and in-flight
/// returns to zero after every permit is released.
pub async fn ct_lim_10_concurrent_acquires_respect_limits<B: Backend>(b: &B) {
    const TASKS: usize = 64;
    const TRIES: usize = 20;
    let l = b
        .limiter(
            &[source("a", 3, 1000, 9000), source("b", 4, 1000, 0)],
            global(5, 40, 0),
            100.0,
        )
        .await;
    let live = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
    let grants = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let (l, live, grants) = (Arc::clone(&l), Arc::clone(&live), Arc::clone(&grants));
        tasks.push(tokio::spawn(async move {
            let (name, i, cap) = if t % 2 == 0 { ("a", 0, 3) } else { ("b", 1, 4) };
            for _ in 0..TRIES {
                match l.try_acquire(name, 300).await.expect("try_acquire") {
                    Acquire::Granted(p) => {
                        grants[i].fetch_add(1, Ordering::SeqCst);
                        let n = live[i].fetch_add(1, Ordering::SeqCst) + 1;
                        let g = live[2].fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(n <= cap, "{name}: {n} in flight > {cap}");
                        assert!(g <= 5, "global: {g} in flight > 5");
                        tokio::task::yield_now().await;
                        live[i].fetch_sub(1, Ordering::SeqCst);
                        live[2].fetch_sub(1, Ordering::SeqCst);
                        p.settle(300).await.expect("settle");
                        p.release().await.expect("release");
                    }
                    Acquire::Denied { .. } => tokio::task::yield_now().await,
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let (ga, gb) = (
        grants[0].load(Ordering::SeqCst),
        grants[1].load(Ordering::SeqCst),
    );
    assert!(ga + gb <= 40, "global rpm exceeded: {ga} + {gb}");
    assert!(ga <= 30, "source tpm exceeded: {ga} × 300 > 9000");
    assert!(ga + gb > 0);
    let (ta, ra, ia) = usage(&*l, "a").await;
    let (tb, rb, ib) = usage(&*l, "b").await;
    assert_eq!((ia, ib), (0, 0), "in-flight back to zero");
    assert_eq!((ra, rb), (ga, gb));
    assert_eq!((ta, tb), (u64::from(ga) * 300, u64::from(gb) * 300));
}

/// CT-LIM-11: `source_stats` reflects each grant, settle and release once it returned.
pub async fn ct_lim_11_stats_reflect_operations<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    assert_eq!(usage(&*l, "a").await, (0, 0, 0));
    let p = must_grant(&*l, "a", 400).await;
    assert_eq!(usage(&*l, "a").await, (400, 1, 1));
    let q = must_grant(&*l, "a", 100).await;
    assert_eq!(usage(&*l, "a").await, (500, 2, 2));
    p.settle(50).await.expect("settle");
    assert_eq!(usage(&*l, "a").await, (150, 2, 2));
    p.release().await.expect("release");
    assert_eq!(usage(&*l, "a").await, (150, 2, 1));
    q.settle(700).await.expect("settle");
    q.release().await.expect("release");
    assert_eq!(usage(&*l, "a").await, (750, 2, 0));
}

/// CT-LIM-12: `progress_age_s` counts from construction, then from the last mark.
pub async fn ct_lim_12_progress_age<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    let age = l.progress_age_s().await.expect("age");
    assert!(age.abs() < 0.5, "fresh limiter age {age}");
    b.time().advance(secs(5)).await;
    let age = l.progress_age_s().await.expect("age");
    assert!((age - 5.0).abs() < 0.5, "age {age}");
    l.mark_progress().await.expect("mark");
    assert!(l.progress_age_s().await.expect("age") < 0.5);
    b.time().advance(secs(2)).await;
    let age = l.progress_age_s().await.expect("age");
    assert!((age - 2.0).abs() < 0.5, "age {age}");
}

/// CT-LIM-14: RPM and TPM are sliding 60 s windows of per-permit entries; an entry
/// ages out exactly 60 s after its grant, in-flight reservations included.
pub async fn ct_lim_14_sliding_window<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 0, 2, 1000)], global(0, 0, 0), 1000.0)
        .await;
    let p = must_grant(&*l, "a", 300).await;
    p.settle_and_release_now(300);
    p.release().await.expect("release");
    b.time().advance(secs(30)).await;
    let q = must_grant(&*l, "a", 600).await; // still in flight: its entry counts
    let (gate, hint) = must_deny(&*l, "a", 1).await;
    assert_eq!(gate, LimitGate::SourceRpm);
    if let Some(h) = hint {
        assert!((h - 30.0).abs() < 1.0, "rpm hint {h}");
    }
    b.time().advance(secs(29)).await;
    assert_eq!(usage(&*l, "a").await, (900, 2, 1));
    b.time().advance(secs(1)).await; // t = 60: the first entry ages out
    assert_eq!(usage(&*l, "a").await, (600, 1, 1));
    // TPM: 600 in the window; 500 does not fit, 400 does.
    let (gate, hint) = must_deny(&*l, "a", 500).await;
    assert_eq!(gate, LimitGate::SourceTpm);
    if let Some(h) = hint {
        assert!((h - 30.0).abs() < 1.0, "tpm hint {h}");
    }
    let r = must_grant(&*l, "a", 400).await;
    b.time().advance(secs(30)).await; // t = 90: q's entry ages out although q is in flight
    assert_eq!(usage(&*l, "a").await, (400, 1, 2));
    q.release().await.expect("release");
    r.release().await.expect("release");
    b.time().advance(secs(60)).await;
    assert_eq!(usage(&*l, "a").await, (0, 0, 0));
}

/// CT-LIM-15: a fast path that returns `true` has settled and released before it
/// returns, as every later operation of the limiter sees it, with the at-most-once /
/// idempotence rules; `false` changed nothing.
pub async fn ct_lim_15_fast_path<B: Backend>(b: &B) {
    let l = b
        .limiter(&[source("a", 1, 0, 0)], global(0, 0, 0), 100.0)
        .await;
    let p = must_grant(&*l, "a", 400).await;
    if p.settle_and_release_now(120) {
        assert_eq!(usage(&*l, "a").await, (120, 1, 0));
        p.settle(999).await.expect("settle after fast path");
        p.release().await.expect("release after fast path");
        assert!(p.settle_and_release_now(5));
        assert_eq!(usage(&*l, "a").await, (120, 1, 0), "idempotent");
    } else {
        assert_eq!(usage(&*l, "a").await, (400, 1, 1), "false changed nothing");
        p.settle(120).await.expect("settle");
        p.release().await.expect("release");
        assert_eq!(usage(&*l, "a").await, (120, 1, 0));
    }
    let _q = must_grant(&*l, "a", 1).await;
}
