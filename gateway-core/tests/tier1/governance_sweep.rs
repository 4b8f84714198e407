//! Governance rules the other suites exercised without pinning them by name (05 R-32 sweep):
//! fail-closed admission and quiet write-backs (30 G-7, G-82, G-83), the neutral breaker
//! success of `ResultInvalid` / `RequestRejected` (G-71, G-89; 50 V-48), the health feed
//! (G-90) and global progress (G-54). Tier 1: paused clock, `ScriptedRunner`, memory backends.
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns the cleanup worker; the library never spawns"
)]

use crate::hedge_support;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::governor::{CallOptions, Governor, GovernorBuilder};
use gateway_core::pacer::NoopPacer;
use gateway_core::select::StaticSelector;
use gateway_ports::{
    BackendError, BackendErrorKind, CircuitBreaker, FailureReason, GatewayError, RateLimiter,
};
use gateway_testkit::hooked::{BreakerMethod, LimiterMethod};
use gateway_testkit::{HookedBreaker, HookedLimiter, RecordingRowSink, Script, ScriptedRunner};
use hedge_support::FxBuilder;
use support::*;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

/// A one-source governor over the given ports, with its cleanup worker.
fn governor(
    limiter: Arc<dyn RateLimiter>,
    breaker: Arc<dyn CircuitBreaker>,
) -> (Governor, tokio::task::JoinHandle<()>) {
    let (gov, rx) = GovernorBuilder::new("llm", vec![source("s1")], limiter, breaker)
        .selector(Arc::new(StaticSelector))
        .pacer(Arc::new(NoopPacer))
        .retry(retry(3, 0.001, 0.01))
        .row_sink(Arc::new(RecordingRowSink::new()))
        .build();
    (gov, tokio::spawn(run_cleanup_worker(rx)))
}

#[tokio::test(start_paused = true)]
async fn g_83_g_7_admission_backend_errors_fail_closed_before_any_send() {
    let fx = fx();
    for kind in [
        BackendErrorKind::Unavailable,
        BackendErrorKind::Protocol,
        BackendErrorKind::SourceNotConfigured,
    ] {
        // The limiter fails.
        let limiter = Arc::new(HookedLimiter::new(fx.limiter.clone()));
        limiter.fail(
            LimiterMethod::TryAcquire,
            BackendError::new(kind, "limiter backend down"),
        );
        let (gov, worker) = governor(limiter, fx.breaker.clone());
        let runner = ScriptedRunner::new();
        runner.push(ok());
        let e = gov
            .run_chat(&runner, CallOptions::default())
            .await
            .unwrap_err();
        // The breaker fails at the gate.
        let breaker = Arc::new(HookedBreaker::new(fx.breaker.clone()));
        breaker.fail(
            BreakerMethod::TryEnter,
            BackendError::new(kind, "breaker backend down"),
        );
        let (gov2, worker2) = governor(fx.limiter.clone(), breaker);
        let e2 = gov2
            .run_chat(&runner, CallOptions::default())
            .await
            .unwrap_err();
        for e in [&e, &e2] {
            if kind == BackendErrorKind::SourceNotConfigured {
                assert!(matches!(e, GatewayError::SourceNotConfigured(_)), "{e:?}");
            } else {
                assert!(matches!(e, GatewayError::GovernanceBackend(_)), "{e:?}");
                assert_eq!(unavailable(e).retry_after_s, 5.0);
            }
        }
        // Fail closed: not a single request went out, no retry, nothing left acquired.
        assert_eq!(runner.call_count(), 0, "{kind:?}");
        fx.assert_usage("s1", 0, 0).await;
        for (g, w) in [(gov, worker), (gov2, worker2)] {
            g.close().await;
            w.await.unwrap();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn g_7_g_82_failed_write_backs_never_change_the_outcome() {
    let fx = fx();
    let breaker = Arc::new(HookedBreaker::new(fx.breaker.clone()));
    breaker.fail_write_backs(BackendError::new(BackendErrorKind::Unavailable, "down"));
    let (gov, worker) = governor(fx.limiter.clone(), breaker);
    let runner = ScriptedRunner::new();
    // record_failure fails after the transient, record_success after the success: neither
    // propagates; the call retries and succeeds; settlement is unaffected (400 + 15).
    runner.push_all([Script::fail(transient(500)), ok()]);
    let g = gov.run_chat(&runner, CallOptions::default()).await.unwrap();
    assert_eq!(g.stats.attempts, 2);
    fx.assert_usage("s1", 415, 0).await;
    // A ResultInvalid stays exactly that when its neutral success write-back fails.
    runner.push(Script::fail(invalid()));
    let e = gov
        .run_chat(&runner, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::ResultInvalid(_)), "{e:?}");
    assert_eq!(runner.call_count(), 3);
    fx.assert_usage("s1", 415, 0).await;
    gov.close().await;
    worker.await.unwrap();
}

// covers: V-48, V-49, V-52, G-5
#[tokio::test(start_paused = true)]
async fn g_89_g_71_result_invalid_and_request_rejected_are_neutral() {
    for (bad, is_invalid) in [(invalid(), true), (rejected(), false)] {
        let fx = FxBuilder::hedge_off().build();
        // Two counted failures on s1 before the call.
        for _ in 0..2 {
            let d = fx.breaker.try_enter("s1", "prior").await.unwrap();
            fx.breaker
                .record_failure(&d, FailureReason::NetworkError, false)
                .await
                .unwrap();
        }
        let before = fx.breaker.snapshot("s1").await.unwrap();
        assert_eq!(before.consecutive_failures, 2);
        fx.push_for("s1", Script::fail(bad));
        let e = fx.chat_non_stream().await.unwrap_err();
        if is_invalid {
            assert!(matches!(e, GatewayError::ResultInvalid(_)), "{e:?}");
        } else {
            assert!(matches!(e, GatewayError::RequestRejected(_)), "{e:?}");
        }
        // Not retried, no source switch.
        assert_eq!(fx.calls(), ["s1"]);
        // record_success(count_attempt = false): consecutive := 0, no window sample.
        let after = fx.breaker.snapshot("s1").await.unwrap();
        assert_eq!(after.consecutive_failures, 0);
        assert_eq!(after.window_calls, before.window_calls);
        assert_eq!(after.window_failures, before.window_failures);
        // No health feed; settlement 0.
        assert!(fx.selector.feed().is_empty(), "{:?}", fx.selector.feed());
        fx.assert_usage("s1", 0, 0).await;
    }
}

// covers: G-77, V-47
#[tokio::test(start_paused = true)]
async fn g_90_health_feed_by_outcome() {
    let feed = |outcome: Vec<Script>| async move {
        let fx = FxBuilder::hedge_off().sources(&["s1"]).build();
        for s in outcome {
            fx.push_for("s1", s);
        }
        let _ = fx.chat_non_stream().await;
        fx.selector
            .feed()
            .into_iter()
            .map(|(_, ok)| ok)
            .collect::<Vec<_>>()
    };
    // Transient (5xx), Transient 429, then a success.
    assert_eq!(
        feed(vec![
            Script::fail(transient(500)),
            Script::fail(rate_limited(Some(0.01))),
            ok()
        ])
        .await,
        [false, false, true]
    );
    assert_eq!(feed(vec![Script::fail(dead())]).await, [false]);
    assert!(feed(vec![Script::fail(rejected())]).await.is_empty());
    assert!(feed(vec![Script::fail(invalid())]).await.is_empty());
    // A cancelled attempt feeds nothing.
    let fx = FxBuilder::hedge_off().sources(&["s1"]).build();
    fx.push_for("s1", Script::hang());
    let r = tokio::time::timeout(Duration::from_secs(1), fx.chat_non_stream()).await;
    assert!(r.is_err());
    fx.gov.quiesce().await;
    assert!(fx.selector.feed().is_empty());
    // G-77: nor does it record a breaker failure.
    let snap = fx.breaker.snapshot("s1").await.unwrap();
    assert_eq!((snap.consecutive_failures, snap.window_failures), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn g_64_cooldown_memo_skips_the_breaker_until_the_reported_cooldown_ends() {
    let fx = fx();
    let breaker = Arc::new(HookedBreaker::new(fx.breaker.clone()));
    let (gov, worker) = governor(fx.limiter.clone(), breaker.clone());
    let runner = ScriptedRunner::new();
    // SourceDead force-opens s1 (cooldown 60 s); the switch round is denied by the breaker,
    // which writes the memo.
    runner.push(Script::fail(dead()));
    let e = gov
        .run_chat(&runner, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    let entered = breaker.count(BreakerMethod::TryEnter);
    assert_eq!(entered, 2);
    // A memo hit is a breaker-class rejection without a breaker round trip.
    tokio::time::advance(Duration::from_secs(30)).await;
    let e = gov
        .run_chat(&runner, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    assert_eq!(
        unavailable(&e).per_source_reasons.get("s1"),
        Some(&FailureReason::CircuitOpen)
    );
    assert_eq!(breaker.count(BreakerMethod::TryEnter), entered);
    // The memo never outlives the cooldown the breaker reported: after it the breaker is asked
    // again and grants the half-open probe.
    tokio::time::advance(Duration::from_secs(31)).await;
    runner.push(ok());
    gov.run_chat(&runner, CallOptions::default()).await.unwrap();
    assert_eq!(breaker.count(BreakerMethod::TryEnter), entered + 1);
    assert_eq!(runner.call_count(), 2);
    gov.close().await;
    worker.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn g_54_only_a_success_marks_global_progress() {
    let fx = FxBuilder {
        retry: retry(1, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    tokio::time::advance(Duration::from_secs(10)).await;
    fx.runner.push(Script::fail(transient(500)));
    let _ = fx.chat().await.unwrap_err();
    assert!(fx.limiter.progress_age_s().await.unwrap() >= 10.0);
    fx.runner.push(ok());
    fx.chat().await.unwrap();
    assert!(fx.limiter.progress_age_s().await.unwrap() < 0.001);
}

#[tokio::test(start_paused = true)]
async fn cf_091_embedding_attempt_using_its_whole_timeout_does_not_exhaust_the_stall_window() {
    // One embedding attempt runs 1.0 s (> the 0.3 s stall window): productive, not waiting.
    let fx = FxBuilder {
        backpressure: gateway_ports::BackpressurePolicy {
            stall_window_s: 0.3,
            poll_interval_s: 0.01,
        },
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push_all([
        Script::fail_after(Duration::from_secs(1), transient(504)),
        ok(),
    ]);
    let g = fx
        .gov
        .run_embed(&fx.runner, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(g.stats.attempts, 2);
    assert_eq!(fx.runner.call_count(), 2);
}

#[tokio::test(start_paused = true)]
async fn cf_293_ticking_recorder_of_one_and_a_half_seconds_is_1500_ms() {
    let fx = FxBuilder {
        fake_clock: true,
        tick_rows: Some(Duration::from_millis(1500)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.total_latency_ms, 1500, "milliseconds, not 1 or 1.5");
}

#[tokio::test(start_paused = true)]
async fn cf_294_statistics_without_a_recorder() {
    let fx = fx();
    let (gov, rx) = GovernorBuilder::new(
        "llm",
        vec![source("s1")],
        fx.limiter.clone(),
        fx.breaker.clone(),
    )
    .selector(Arc::new(StaticSelector))
    .pacer(Arc::new(NoopPacer))
    .build();
    let worker = tokio::spawn(run_cleanup_worker(rx));
    let runner = ScriptedRunner::new();
    runner.push(ok());
    let g = gov.run_chat(&runner, CallOptions::default()).await.unwrap();
    assert_eq!(g.stats.attempts, 1);
    assert!(!g.stats.logical_call_id.is_empty());
    gov.close().await;
    worker.await.unwrap();
}
