//! Circuit breaker contract rows CT-BRK-01..10, 12 and the G-76 feed rule (30 G-65..G-76;
//! D7; 05 R-45). Each row is a generic async function over a [`Backend`]; none sleeps.
//! Rate-window rows probe at whole-second instants.

use std::sync::Arc;

use gateway_ports::{
    BackendErrorKind, BreakerConfig, BreakerState, CircuitBreaker, FailureReason, GateDecision,
};

use crate::{Backend, secs};

/// The harness configuration of 30 G-65: `fail_threshold = 3`, `cooldown_s = 60`,
/// `probe_ttl_s = 120`, other fields D7 defaults (`min_calls` 20, `fail_rate` 0.5, window 60 s,
/// cap 600 s).
pub fn harness_config() -> BreakerConfig {
    BreakerConfig {
        fail_threshold: 3,
        cooldown_s: 60.0,
        probe_ttl_s: Some(120.0),
        ..BreakerConfig::default()
    }
}

/// `try_enter` or panic.
pub async fn enter(br: &dyn CircuitBreaker, source: &str, owner: &str) -> GateDecision {
    br.try_enter(source, owner).await.expect("try_enter")
}

/// Records one counted (timeout) failure.
pub async fn fail(br: &dyn CircuitBreaker, d: &GateDecision) {
    br.record_failure(d, FailureReason::Timeout, false)
        .await
        .expect("record_failure");
}

/// Records one counted success.
pub async fn succeed(br: &dyn CircuitBreaker, d: &GateDecision) {
    br.record_success(d, true).await.expect("record_success");
}

/// Opens `source` with `n` admitted attempts that each fail (counted).
pub async fn trip(br: &dyn CircuitBreaker, source: &str, n: u32) {
    for i in 0..n {
        let d = enter(br, source, &format!("trip-{i}")).await;
        assert!(d.allowed, "trip attempt {i} denied");
        fail(br, &d).await;
    }
}

async fn state(br: &dyn CircuitBreaker, source: &str) -> BreakerState {
    br.snapshot(source).await.expect("snapshot").state
}

fn assert_close(got: Option<f64>, want: f64) {
    let got = got.expect("retry_after_s");
    assert!((got - want).abs() < 0.5, "retry_after_s {got}, want {want}");
}

/// CT-BRK-01: closed → `allowed`, not a probe.
// covers: G-67
pub async fn ct_brk_01_closed_allows<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let d = enter(&*br, "a", "c1").await;
    assert!(d.allowed && !d.is_probe);
    assert_eq!((d.source.as_str(), d.owner.as_str()), ("a", "c1"));
    assert_eq!(d.retry_after_s, None);
    assert_eq!(d.probe_lease(), None);
    assert_eq!(state(&*br, "a").await, BreakerState::Closed);
}

/// CT-BRK-02: `fail_threshold` consecutive counted failures open; a success resets the count.
// covers: G-66
pub async fn ct_brk_02_consecutive_failures_open<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 2).await;
    let d = enter(&*br, "a", "s").await;
    succeed(&*br, &d).await;
    trip(&*br, "a", 2).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Closed);
    assert_eq!(
        br.snapshot("a").await.expect("snap").consecutive_failures,
        2
    );
    trip(&*br, "a", 1).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Open);
    assert!(!enter(&*br, "a", "x").await.allowed);
    assert!(enter(&*br, "b", "x").await.allowed, "per source");
}

/// CT-BRK-02: health evidence (≥ `min_calls` samples, rate < `fail_rate`) suppresses the
/// consecutive channel.
// covers: G-66
pub async fn ct_brk_02_health_evidence_suppresses_consecutive<B: Backend>(b: &B) {
    let br = b
        .breaker(BreakerConfig {
            fail_threshold: 5,
            ..harness_config()
        })
        .await;
    for i in 0..20 {
        let d = enter(&*br, "a", &format!("ok-{i}")).await;
        succeed(&*br, &d).await;
    }
    trip(&*br, "a", 5).await;
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(s.state, BreakerState::Closed, "5 of 25 failed: healthy");
    assert_eq!(
        (s.consecutive_failures, s.window_calls, s.window_failures),
        (5, 25, 5)
    );
}

/// CT-BRK-02: with ≥ `min_calls` samples, a failure rate ≥ `fail_rate` opens.
// covers: G-66
pub async fn ct_brk_02_rate_channel_opens<B: Backend>(b: &B) {
    let br = b
        .breaker(BreakerConfig {
            fail_threshold: 100,
            ..harness_config()
        })
        .await;
    for i in 0..10 {
        let d = enter(&*br, "a", &format!("ok-{i}")).await;
        succeed(&*br, &d).await;
    }
    trip(&*br, "a", 9).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Closed, "19 samples");
    trip(&*br, "a", 1).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Open, "10/20 = 0.5");
}

/// CT-BRK-02: samples older than `window_s` leave the rate window.
pub async fn ct_brk_02_rate_window_slides<B: Backend>(b: &B) {
    let br = b
        .breaker(BreakerConfig {
            fail_threshold: 100,
            ..harness_config()
        })
        .await;
    trip(&*br, "a", 10).await;
    b.time().advance(secs(59)).await;
    assert_eq!(br.snapshot("a").await.expect("snap").window_calls, 10);
    b.time().advance(secs(1)).await;
    assert_eq!(br.snapshot("a").await.expect("snap").window_calls, 0);
    for i in 0..9 {
        let d = enter(&*br, "a", &format!("ok-{i}")).await;
        succeed(&*br, &d).await;
    }
    trip(&*br, "a", 1).await;
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(
        s.state,
        BreakerState::Closed,
        "old failures no longer count"
    );
    assert_eq!((s.window_calls, s.window_failures), (10, 1));
}

/// CT-BRK-02 / G-75: `force_open` opens on one strike.
pub async fn ct_brk_02_force_open_one_strike<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let d = enter(&*br, "s2", "c").await;
    br.record_failure(&d, FailureReason::SourceDead, true)
        .await
        .expect("record_failure");
    let denied = enter(&*br, "s2", "next").await;
    assert!(!denied.allowed);
    assert_close(denied.retry_after_s, 60.0);
}

/// CT-BRK-03: open denies with the remaining cooldown; each re-open without a close doubles it,
/// capped at `cooldown_max_s`.
// covers: G-67
pub async fn ct_brk_03_cooldown_remaining_and_doubling<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 3).await;
    assert_close(enter(&*br, "a", "x").await.retry_after_s, 60.0);
    b.time().advance(secs(20)).await;
    let d = enter(&*br, "a", "x").await;
    assert!(!d.allowed && !d.is_probe);
    assert_close(d.retry_after_s, 40.0);
    b.time().advance(secs(40)).await;
    for want in [120.0, 240.0, 480.0, 600.0, 600.0] {
        let p = enter(&*br, "a", "probe").await;
        assert!(p.allowed && p.is_probe, "half-open after the cooldown");
        fail(&*br, &p).await;
        let s = br.snapshot("a").await.expect("snapshot");
        assert_eq!(s.state, BreakerState::Open);
        assert!((s.current_cooldown_s - want).abs() < 1e-9, "{s:?}");
        assert_close(enter(&*br, "a", "x").await.retry_after_s, want);
        b.time().advance(secs(want as u64)).await;
    }
}

/// CT-BRK-04: after the cooldown exactly one concurrent caller probes; the others are
/// denied with `retry_after_s = Some(0.0)`.
// covers: G-67
pub async fn ct_brk_04_single_half_open_probe<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 3).await;
    b.time().advance(secs(60)).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let br = Arc::clone(&br);
        tasks.push(tokio::spawn(async move {
            br.try_enter("a", &format!("c{i}"))
                .await
                .expect("try_enter")
        }));
    }
    let mut probes = 0;
    for t in tasks {
        let d = t.await.expect("task");
        if d.is_probe {
            assert!(d.allowed);
            probes += 1;
        } else {
            assert!(!d.allowed);
            assert_eq!(d.retry_after_s, Some(0.0));
        }
    }
    assert_eq!(probes, 1);
    assert_eq!(state(&*br, "a").await, BreakerState::HalfOpen);
}

/// CT-BRK-05: probe success closes and resets counters and cooldown; every open and close bumps
/// the epoch.
// covers: G-69
pub async fn ct_brk_05_probe_success_closes_and_resets<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let e0 = br.snapshot("a").await.expect("snapshot").epoch;
    trip(&*br, "a", 3).await;
    assert_eq!(br.snapshot("a").await.expect("snap").epoch, e0 + 1);
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p").await;
    assert_eq!(p.epoch, e0 + 1);
    fail(&*br, &p).await; // re-open: 120 s
    assert_eq!(br.snapshot("a").await.expect("snap").epoch, e0 + 2);
    b.time().advance(secs(120)).await;
    let p = enter(&*br, "a", "p2").await;
    assert!(p.is_probe);
    succeed(&*br, &p).await;
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(s.state, BreakerState::Closed);
    assert_eq!(s.epoch, e0 + 3);
    assert_eq!(
        (s.consecutive_failures, s.window_calls, s.window_failures),
        (0, 0, 0)
    );
    assert_eq!(s.open_until_s, None);
    assert!(
        (s.current_cooldown_s - 60.0).abs() < 1e-9,
        "cooldown reset: {s:?}"
    );
    let d = enter(&*br, "a", "after").await;
    assert!(d.allowed && !d.is_probe && d.epoch == e0 + 3);
    trip(&*br, "a", 3).await;
    assert_close(enter(&*br, "a", "x").await.retry_after_s, 60.0);
}

/// CT-BRK-06: a probe lease that expires without a write-back is reclaimed.
// covers: G-69
pub async fn ct_brk_06_expired_probe_lease_reclaimed<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 3).await;
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "dead").await;
    assert!(p.is_probe);
    drop(p);
    b.time().advance(secs(119)).await;
    assert!(!enter(&*br, "a", "x").await.allowed, "lease still live");
    b.time().advance(secs(1)).await;
    let q = enter(&*br, "a", "next").await;
    assert!(q.allowed && q.is_probe, "expired lease reclaimed");
}

/// CT-BRK-07: `release_probe` frees the slot without an outcome; idempotent; no-op for
/// non-probe decisions.
// covers: G-69
pub async fn ct_brk_07_release_probe<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let closed = enter(&*br, "a", "c").await;
    br.release_probe(&closed).await.expect("release non-probe");
    trip(&*br, "a", 3).await;
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p1").await;
    assert!(p.is_probe);
    let denied = enter(&*br, "a", "x").await;
    br.release_probe(&denied).await.expect("release denied");
    assert!(
        !enter(&*br, "a", "y").await.allowed,
        "denied release is a no-op"
    );
    br.release_probe(&p).await.expect("release");
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(s.state, BreakerState::HalfOpen, "no outcome recorded");
    let q = enter(&*br, "a", "p2").await;
    assert!(q.is_probe, "next caller probes");
    br.release_probe(&p).await.expect("second release");
    assert!(
        !enter(&*br, "a", "z").await.allowed,
        "idempotent: p2 keeps its probe"
    );
}

/// CT-BRK-08: write-backs carrying an older epoch change nothing.
// covers: G-70
pub async fn ct_brk_08_epoch_fencing<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let stale = enter(&*br, "a", "stale").await;
    trip(&*br, "a", 3).await;
    let before = br.snapshot("a").await.expect("snapshot");
    succeed(&*br, &stale).await;
    br.record_failure(&stale, FailureReason::SourceDead, true)
        .await
        .expect("record_failure");
    assert_eq!(br.snapshot("a").await.expect("snapshot"), before);
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p").await;
    assert!(p.is_probe);
    succeed(&*br, &stale).await;
    fail(&*br, &stale).await;
    br.release_probe(&stale).await.expect("release");
    assert_eq!(state(&*br, "a").await, BreakerState::HalfOpen);
    assert!(!enter(&*br, "a", "x").await.allowed, "probe still held");
    succeed(&*br, &p).await;
    let closed_epoch = br.snapshot("a").await.expect("snapshot").epoch;
    fail(&*br, &p).await; // the probe's epoch is now stale
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(
        (s.state, s.epoch, s.consecutive_failures),
        (BreakerState::Closed, closed_epoch, 0)
    );
}

/// CT-BRK-08: a stale probe (same owner, older epoch) cannot free the current probe.
// covers: G-70
pub async fn ct_brk_08_stale_probe_release_fenced<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 3).await;
    b.time().advance(secs(60)).await;
    let p1 = enter(&*br, "a", "x").await;
    fail(&*br, &p1).await; // re-open for 120 s, epoch + 1
    b.time().advance(secs(120)).await;
    let p2 = enter(&*br, "a", "x").await;
    assert!(p2.is_probe && p2.epoch > p1.epoch);
    br.release_probe(&p1).await.expect("stale release");
    let lease = p1.probe_lease().expect("p1 was a probe");
    let _ = br.release_probe_now(&lease);
    assert!(!enter(&*br, "a", "y").await.allowed, "p2 keeps the probe");
}

/// CT-BRK-09: `record_success(count_attempt = false)` resets the consecutive count, adds no window
/// sample, and completes a probe as success.
// covers: G-71
pub async fn ct_brk_09_count_attempt_false<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 2).await;
    let d = enter(&*br, "a", "ri").await;
    br.record_success(&d, false).await.expect("record_success");
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(
        (s.consecutive_failures, s.window_calls, s.window_failures),
        (0, 2, 2)
    );
    trip(&*br, "a", 2).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Closed);
    trip(&*br, "a", 1).await;
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p").await;
    br.record_success(&p, false).await.expect("record_success");
    assert_eq!(state(&*br, "a").await, BreakerState::Closed);
}

/// CT-BRK-10: an unavailable backend answers `Err`, never `allowed`.
// covers: G-67
pub async fn ct_brk_10_unavailable_fails_closed<B: Backend>(b: &B) {
    let br = b.unavailable_breaker(harness_config()).await;
    match br.try_enter("a", "c").await {
        Err(e) => assert_eq!(e.kind, BackendErrorKind::Unavailable),
        Ok(d) => panic!("unavailable breaker answered {d:?}"),
    }
}

/// CT-BRK-12: a `release_probe_now` that returns `true` has freed the probe before it
/// returns (with CT-BRK-07/08 semantics); `false` changed nothing.
pub async fn ct_brk_12_fast_path<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    trip(&*br, "a", 3).await;
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p1").await;
    let lease = p.probe_lease().expect("probe");
    assert_eq!(
        (lease.source.as_str(), lease.owner.as_str(), lease.epoch),
        ("a", "p1", p.epoch)
    );
    if br.release_probe_now(&lease) {
        let q = enter(&*br, "a", "p2").await;
        assert!(q.is_probe, "freed before returning");
        assert!(br.release_probe_now(&lease));
        assert!(!enter(&*br, "a", "z").await.allowed, "idempotent");
    } else {
        assert!(
            !enter(&*br, "a", "z").await.allowed,
            "false changed nothing"
        );
        br.release_probe(&p).await.expect("release");
        assert!(enter(&*br, "a", "p2").await.is_probe);
    }
}

/// 30 G-76 / G-69: `rate_limited` counts in neither channel, does not reset the consecutive
/// counter, and leaves a probe half-open (released, no transition).
pub async fn g_76_rate_limited_counts_in_neither_channel<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    let rl = |d: GateDecision| {
        let br = Arc::clone(&br);
        async move {
            br.record_failure(&d, FailureReason::RateLimited, false)
                .await
                .expect("record_failure");
        }
    };
    for i in 0..5 {
        rl(enter(&*br, "a", &format!("r{i}")).await).await;
    }
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!(
        (s.state, s.consecutive_failures, s.window_calls),
        (BreakerState::Closed, 0, 0)
    );
    trip(&*br, "a", 2).await;
    rl(enter(&*br, "a", "r").await).await;
    assert_eq!(
        br.snapshot("a").await.expect("snap").consecutive_failures,
        2
    );
    trip(&*br, "a", 1).await;
    assert_eq!(state(&*br, "a").await, BreakerState::Open);
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p").await;
    assert!(p.is_probe);
    let epoch = p.epoch;
    rl(p).await;
    let s = br.snapshot("a").await.expect("snapshot");
    assert_eq!((s.state, s.epoch), (BreakerState::HalfOpen, epoch));
    assert!(enter(&*br, "a", "next").await.is_probe, "probe released");
}

/// `open_count` in the snapshot: every open counts (the consecutive trip, a failed probe's
/// re-open, a forced open), closing does not reset it, and a source never seen reports 0.
// covers: R-39
pub async fn r_39_open_count_counts_every_open<B: Backend>(b: &B) {
    let br = b.breaker(harness_config()).await;
    assert_eq!(br.snapshot("a").await.expect("snap").open_count, 0);
    trip(&*br, "a", 3).await;
    assert_eq!(br.snapshot("a").await.expect("snap").open_count, 1);
    b.time().advance(secs(60)).await;
    let p = enter(&*br, "a", "p").await;
    assert!(p.is_probe);
    fail(&*br, &p).await; // re-open: 120 s
    let s = br.snapshot("a").await.expect("snap");
    assert_eq!((s.state, s.open_count), (BreakerState::Open, 2));
    b.time().advance(secs(120)).await;
    let p = enter(&*br, "a", "p2").await;
    succeed(&*br, &p).await;
    let s = br.snapshot("a").await.expect("snap");
    assert_eq!(
        (s.state, s.open_count),
        (BreakerState::Closed, 2),
        "close keeps the count"
    );
    let d = enter(&*br, "a", "dead").await;
    br.record_failure(&d, FailureReason::Timeout, true)
        .await
        .expect("record_failure");
    assert_eq!(br.snapshot("a").await.expect("snap").open_count, 3);
    assert_eq!(br.snapshot("b").await.expect("snap").open_count, 0);
}
