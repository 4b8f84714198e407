//! Admission (30 §6, G-58..G-84; README D2; 05; 95 CF-073, CF-088..CF-090).
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns concurrent calls; the library never spawns"
)]

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use gateway_core::admission::{Pick, Rejections};
use gateway_core::attempt::TransportResult;
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_ports::{BackpressurePolicy, FailureReason, GatewayError, ScopeReason, WaitPolicy};
use gateway_testkit::Script;
use support::*;
use tokio::time::Instant;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

// covers: G-60
#[tokio::test(start_paused = true)]
async fn cf_088_g_78_three_transients_open_breaker_fourth_pick_circuit_open() {
    let fx = FxBuilder {
        retry: retry(99, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    for _ in 0..9 {
        fx.runner.push(Script::fail(transient(500)));
    }
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    assert_eq!(fx.runner.call_count(), 3);
}

// covers: G-58, G-60
#[tokio::test(start_paused = true)]
async fn cf_073_s1_rejected_pick_adds_nothing_tpm_1200() {
    let mut s = source("s1");
    s.tpm = 10_000;
    let fx = FxBuilder {
        sources: vec![s],
        retry: retry(99, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    for _ in 0..9 {
        fx.runner.push(Script::fail(transient(500)));
    }
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)));
    fx.assert_usage("s1", 1200, 0).await;
    assert_eq!(
        fx.limiter.tracked_permits(),
        3,
        "window entries only, no held slot"
    );
}

#[tokio::test(start_paused = true)]
async fn cf_089_g_75_source_dead_force_opens_on_one_strike() {
    let fx = FxBuilder::default().sources(&["s1", "s2"]).build();
    fx.runner.push_for("s2", Script::fail(dead()));
    // s2 first: demote s1 by putting s1 behind — use push order: s1 succeeds next call.
    fx.runner.push_for("s1", Script::fail(transient(500)));
    fx.runner.push_for("s1", ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(fx.runner.calls(), ["s1", "s2", "s1"]);
    assert_eq!(g.source.name, "s1");
    let d = fx.breaker.try_enter("s2", "x").await.unwrap();
    assert!(!d.allowed, "s2 open after one SourceDead");
}

#[tokio::test(start_paused = true)]
async fn cf_090_g_63_exclude_all_is_not_a_rejection() {
    let fx = FxBuilder::default().sources(&["s1", "s2"]).build();
    let mut reasons = BTreeMap::from([("prior".to_owned(), FailureReason::RateLimited)]);
    let before = reasons.clone();
    let pick = fx
        .gov
        .admission()
        .pick("call", &mut reasons, &HashMap::new(), &["s1", "s2"])
        .await
        .unwrap();
    match pick {
        Pick::NothingRunnable(r) => assert_eq!(r, Rejections::default()),
        Pick::Picked(_) => panic!("nothing may be picked"),
    }
    assert_eq!(reasons, before);
    fx.assert_usage("s1", 0, 0).await;
}

// covers: G-79
#[tokio::test(start_paused = true)]
async fn g_80_quota_full_fail_fast_carries_hint_and_reasons() {
    let fx = FxBuilder {
        quota_full: WaitPolicy::FailFast,
        ..FxBuilder::default()
    }
    .build();
    let hold = fx.runner.push(Script::hang());
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let first = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    hold.entered().await;
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert!(matches!(e, GatewayError::AllSourcesExhausted(_)));
    assert_eq!(u.reason, ScopeReason::QuotaFull);
    assert_eq!(
        u.per_source_reasons.get("s1"),
        Some(&FailureReason::QuotaFull)
    );
    assert!(u.retry_after_s >= 0.01);
    first.abort();
    let _ = first.await;
}

// covers: G-56
#[tokio::test(start_paused = true)]
async fn g_80_r_11_quota_wait_is_woken_by_release_not_polling() {
    // poll_interval 100 s: only the limiter's Notify can wake the waiter promptly.
    let fx = FxBuilder {
        backpressure: BackpressurePolicy {
            stall_window_s: 300.0,
            poll_interval_s: 100.0,
        },
        ..FxBuilder::default()
    }
    .build();
    let gate = fx
        .runner
        .push(Script::new().gate().then_ok(TransportResult::ok(1, 1)));
    fx.runner.push(ok());
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let first = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    gate.entered().await;
    let start = Instant::now();
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let second = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        fx.runner.call_count(),
        1,
        "nothing is sent while waiting (G-56)"
    );
    assert_eq!(fx.gov.admission().waiters(), 1);
    gate.release();
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fx.gov.admission().waiters(), 0);
}

#[tokio::test(start_paused = true)]
async fn r_37_waiters_beyond_max_are_shed_quota_full() {
    let fx = FxBuilder {
        max_waiters: Some(1),
        ..FxBuilder::default()
    }
    .build();
    let hold = fx.runner.push(Script::hang());
    let spawn_call = |fx: &Fx| {
        let gov = fx.gov.clone();
        let runner = fx.runner.clone();
        tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await })
    };
    let a = spawn_call(&fx);
    hold.entered().await;
    let b = spawn_call(&fx);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(fx.gov.admission().waiters(), 1);
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO, "shed at once");
    assert_eq!(unavailable(&e).reason, ScopeReason::QuotaFull);
    a.abort();
    b.abort();
    let _ = (a.await, b.await);
    fx.gov.quiesce().await;
    fx.assert_usage("s1", 400, 0).await;
}

// covers: G-56, G-79
#[tokio::test(start_paused = true)]
async fn g_80_circuit_open_wait_naps_then_stalls() {
    // CIRCUIT_OPEN = wait: no request while the breaker is open; the stall rule ends the wait.
    let fx = FxBuilder {
        circuit_open: WaitPolicy::Wait,
        backpressure: BackpressurePolicy {
            stall_window_s: 1.0,
            poll_interval_s: 0.25,
        },
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(dead()));
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::Stalled);
    assert_eq!(fx.runner.call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn g_81_pacer_rejection_always_waits() {
    // A pacer at limit 1 with QUOTA_FULL = fail_fast: a paced candidate still waits (G-81).
    let pacer: Arc<dyn Pacer> = Arc::new(AimdPacer::new(1.0));
    let mut s = source("s1");
    s.max_concurrency = 0;
    let fx = FxBuilder {
        sources: vec![s],
        quota_full: WaitPolicy::FailFast,
        pacer: Some(pacer.clone()),
        ..FxBuilder::default()
    }
    .build();
    let gate = fx
        .runner
        .push(Script::new().gate().then_ok(TransportResult::ok(1, 1)));
    fx.runner.push(ok());
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let first = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    gate.entered().await;
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let second = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fx.runner.call_count(), 1);
    gate.release();
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
    assert_eq!(pacer.inflight("s1"), 0);
}

#[tokio::test(start_paused = true)]
async fn r_45_half_open_denial_hint_is_poll_interval() {
    // Open s1, let the cooldown pass, hold the half-open probe with a hanging call; a second
    // call is denied in half-open (retry_after 0.0) → CircuitOpen with poll_interval_s.
    let fx = FxBuilder {
        breaker: gateway_ports::BreakerConfig {
            fail_threshold: 1,
            cooldown_s: 1.0,
            probe_ttl_s: Some(120.0),
            ..gateway_ports::BreakerConfig::default()
        },
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(dead()));
    let _ = fx.chat().await.unwrap_err();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let probe = fx.runner.push(Script::hang());
    let gov = fx.gov.clone();
    let runner = fx.runner.clone();
    let a = tokio::spawn(async move { gov.run_chat(&runner, Default::default()).await });
    probe.entered().await;
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    assert_eq!(unavailable(&e).retry_after_s, 0.01);
    // Dropping the probe holder releases the probe (S3): the next caller may probe.
    a.abort();
    let _ = a.await;
    let d = fx.breaker.try_enter("s1", "next").await.unwrap();
    assert!(d.allowed && d.is_probe);
}
