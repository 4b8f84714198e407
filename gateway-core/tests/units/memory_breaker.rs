//! `MemoryCircuitBreaker` beyond the shared contract suite (contract-tests runs CT-BRK-*): D7
//! defaults, the G-68 cap, R-45, R-46 bucket edges, G-75 and construction edge cases.

use std::sync::Arc;
use std::time::Duration;

use gateway_core::clock::FakeClock;
use gateway_core::memory::MemoryCircuitBreaker;
use gateway_core::memory::breaker::DEFAULT_PROBE_TTL_S;
use gateway_ports::{BreakerConfig, BreakerState, CircuitBreaker, FailureReason, GateDecision};

fn breaker(cfg: BreakerConfig) -> (MemoryCircuitBreaker, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new());
    (MemoryCircuitBreaker::new("s", cfg, clock.clone()), clock)
}

#[expect(clippy::expect_used, reason = "test helper")]
async fn fail(b: &MemoryCircuitBreaker, d: &GateDecision, reason: FailureReason) {
    b.record_failure(d, reason, false).await.expect("record");
}

#[expect(clippy::expect_used, reason = "test helper")]
async fn trip(b: &MemoryCircuitBreaker, n: u32) {
    for i in 0..n {
        let d = b.try_enter("a", &format!("t{i}")).await.expect("enter");
        fail(b, &d, FailureReason::NetworkError).await;
    }
}

/// D7: with default config, 4 failures keep it closed, the 5th opens for 60 s.
// covers: G-65
#[tokio::test]
async fn d7_defaults_open_after_five() {
    let (b, _) = breaker(BreakerConfig::default());
    trip(&b, 4).await;
    assert_eq!(
        b.snapshot("a").await.expect("snap").state,
        BreakerState::Closed
    );
    trip(&b, 1).await;
    let s = b.snapshot("a").await.expect("snap");
    assert_eq!(s.state, BreakerState::Open);
    assert_eq!(s.open_until_s, Some(60.0));
    assert_eq!(s.current_cooldown_s, 60.0);
}

/// D7 / G-65: `probe_ttl_s = None` falls back to 125 s (default timeout 120 + 5).
// covers: G-65
#[tokio::test]
async fn d7_probe_ttl_default_125() {
    assert_eq!(DEFAULT_PROBE_TTL_S, 125.0);
    let (b, clock) = breaker(BreakerConfig {
        fail_threshold: 1,
        ..BreakerConfig::default()
    });
    trip(&b, 1).await;
    clock.advance(Duration::from_secs(60));
    assert!(b.try_enter("a", "p").await.expect("enter").is_probe);
    clock.advance(Duration::from_secs(124));
    assert!(!b.try_enter("a", "x").await.expect("enter").allowed);
    clock.advance(Duration::from_secs(1));
    assert!(b.try_enter("a", "y").await.expect("enter").is_probe);
}

/// G-68: 60, 120, 240, 480, 600, 600 and the cap holds for many re-opens; a close resets it.
#[tokio::test]
async fn g_68_cooldown_doubles_to_cap_and_resets() {
    let (b, clock) = breaker(BreakerConfig {
        fail_threshold: 1,
        probe_ttl_s: Some(10.0),
        ..BreakerConfig::default()
    });
    trip(&b, 1).await;
    let mut seen = vec![b.snapshot("a").await.expect("snap").current_cooldown_s];
    for _ in 0..40 {
        clock.advance(Duration::from_secs(600));
        let p = b.try_enter("a", "p").await.expect("enter");
        assert!(p.is_probe);
        fail(&b, &p, FailureReason::Timeout).await;
        seen.push(b.snapshot("a").await.expect("snap").current_cooldown_s);
    }
    assert_eq!(&seen[..6], &[60.0, 120.0, 240.0, 480.0, 600.0, 600.0]);
    assert!(seen.iter().all(|c| *c <= 600.0));
    clock.advance(Duration::from_secs(600));
    let p = b.try_enter("a", "p").await.expect("enter");
    b.record_success(&p, true).await.expect("success");
    trip(&b, 1).await;
    assert_eq!(
        b.snapshot("a").await.expect("snap").current_cooldown_s,
        60.0
    );
}

/// a half-open denial reports exactly `Some(0.0)`; an open denial the remaining cooldown.
#[tokio::test]
async fn r_45_half_open_denial_zero() {
    let (b, clock) = breaker(BreakerConfig {
        fail_threshold: 1,
        ..BreakerConfig::default()
    });
    trip(&b, 1).await;
    clock.advance(Duration::from_millis(59_500));
    assert_eq!(
        b.try_enter("a", "x").await.expect("enter").retry_after_s,
        Some(0.5)
    );
    clock.advance(Duration::from_millis(500));
    assert!(b.try_enter("a", "p").await.expect("enter").is_probe);
    let d = b.try_enter("a", "x").await.expect("enter");
    assert_eq!((d.allowed, d.retry_after_s), (false, Some(0.0)));
}

/// the rate window is whole 1-second buckets: a sample at t = 0.9 s leaves the 60 s
/// window at t = 60.0 s (its bucket [0, 1) ends), not at 60.9 s.
#[tokio::test]
async fn r_46_one_second_buckets() {
    let (b, clock) = breaker(BreakerConfig {
        fail_threshold: 100,
        ..BreakerConfig::default()
    });
    clock.advance(Duration::from_millis(900));
    trip(&b, 3).await;
    clock.advance(Duration::from_millis(59_099));
    assert_eq!(b.snapshot("a").await.expect("snap").window_calls, 3);
    clock.advance(Duration::from_millis(1));
    assert_eq!(b.snapshot("a").await.expect("snap").window_calls, 0);
}

/// G-75: `force_open` on an already open breaker keeps the later `until`.
#[tokio::test]
async fn g_75_force_open_keeps_later_until() {
    let (b, clock) = breaker(BreakerConfig {
        fail_threshold: 1,
        ..BreakerConfig::default()
    });
    let d = b.try_enter("a", "c").await.expect("enter");
    b.record_failure(&d, FailureReason::SourceDead, true)
        .await
        .expect("record");
    assert_eq!(
        b.snapshot("a").await.expect("snap").open_until_s,
        Some(60.0)
    );
    clock.advance(Duration::from_secs(60));
    let p = b.try_enter("a", "p").await.expect("enter");
    b.record_failure(&p, FailureReason::SourceDead, true)
        .await
        .expect("record");
    let s = b.snapshot("a").await.expect("snap");
    assert_eq!((s.state, s.open_until_s), (BreakerState::Open, Some(180.0)));
}

/// G-76: admission-only reasons (`circuit_open`, `quota_full`, `paced`) never count either.
#[tokio::test]
async fn g_76_admission_reasons_not_counted() {
    let (b, _) = breaker(BreakerConfig {
        fail_threshold: 1,
        ..BreakerConfig::default()
    });
    for r in [
        FailureReason::CircuitOpen,
        FailureReason::QuotaFull,
        FailureReason::Paced,
        FailureReason::RateLimited,
    ] {
        let d = b.try_enter("a", "c").await.expect("enter");
        fail(&b, &d, r).await;
    }
    let s = b.snapshot("a").await.expect("snap");
    assert_eq!((s.state, s.window_calls), (BreakerState::Closed, 0));
}

/// A denied decision writes nothing back; unknown sources snapshot as closed; closed breakers
/// fail closed (CT-BRK-10) but accept write-backs.
#[tokio::test]
async fn ct_brk_10_close_and_denied_writes() {
    let (b, _) = breaker(BreakerConfig {
        fail_threshold: 1,
        ..BreakerConfig::default()
    });
    let fresh = b.snapshot("never").await.expect("snap");
    assert_eq!((fresh.state, fresh.epoch), (BreakerState::Closed, 0));
    assert_eq!(fresh.current_cooldown_s, 60.0);
    let held = b.try_enter("a", "h").await.expect("enter");
    trip(&b, 1).await;
    let denied = b.try_enter("a", "d").await.expect("enter");
    b.record_success(&denied, true).await.expect("record");
    assert_eq!(
        b.snapshot("a").await.expect("snap").state,
        BreakerState::Open
    );
    b.close().await;
    b.close().await;
    assert!(b.try_enter("a", "x").await.is_err());
    assert!(b.snapshot("a").await.is_err());
    b.record_success(&held, true)
        .await
        .expect("write-back after close");
    assert!(format!("{b:?}").contains("MemoryCircuitBreaker"));
}

/// Out-of-domain configuration is clamped, never a panic.
#[tokio::test]
async fn config_out_of_domain_clamped() {
    let (b, _) = breaker(BreakerConfig {
        fail_threshold: 0,
        fail_rate: f64::NAN,
        min_calls: 0,
        window_s: -1.0,
        cooldown_s: f64::INFINITY,
        cooldown_max_s: f64::NAN,
        probe_ttl_s: Some(f64::NAN),
    });
    trip(&b, 1).await;
    let d = b.try_enter("a", "x").await.expect("enter");
    assert!(d.allowed || d.retry_after_s.is_some_and(f64::is_finite));
}
