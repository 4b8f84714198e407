//! The retry loop (30 §5, G-44..G-57; 05; 95 CF-077..CF-082, CF-303, CF-304).
//! Tier 1: paused tokio clock, `ScriptedRunner`, memory backends.

use crate::support;

use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::governor::CallOptions;
use gateway_ports::{
    AttemptError, BackpressurePolicy, FailureReason, GatewayError, RetryPolicy, ScopeReason,
};
use gateway_testkit::Script;
use support::*;
use tokio::time::Instant;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

// covers: G-85, G-121, G-122
#[tokio::test(start_paused = true)]
async fn cf_077_single_success_attempts_one_no_terminal_row() {
    let fx = fx();
    fx.runner.push(ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.attempts, 1);
    assert!(!g.stats.logical_call_id.is_empty());
    assert_eq!(g.result.usage.prompt_tokens, 10);
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 0);
    fx.sink.assert_one_call(&g.stats.logical_call_id);
    assert_eq!(fx.sink.attempts()[0].call_id, g.call_id);
    fx.assert_usage("s1", 15, 0).await;
}

// covers: G-122
#[tokio::test(start_paused = true)]
async fn cf_078_transient_transient_ok_attempts_three() {
    let fx = fx();
    fx.runner.push_all([
        Script::fail(transient(500)),
        Script::fail(transient(500)),
        ok(),
    ]);
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.attempts, 3);
    assert_eq!(fx.runner.call_count(), 3);
    fx.gov.quiesce().await;
    fx.sink.assert_counts(3, 0);
}

// covers: G-45, G-57, G-118, G-122
#[tokio::test(start_paused = true)]
async fn cf_079_g_46_429s_budget_free_but_counted() {
    // max_attempts = 1: two 429 rounds do not consume budget (chat), yet count as attempts.
    let fx = FxBuilder {
        retry: retry(1, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push_all([
        Script::fail(rate_limited(Some(1.0))),
        Script::fail(rate_limited(Some(1.0))),
        ok(),
    ]);
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.attempts, 3);
    assert_eq!(fx.runner.call_count(), 3);
    // Each backoff is at least the 1.0 s hint (D3: max(delay, retry_after)).
    assert!(start.elapsed() >= Duration::from_secs(2));
}

// covers: G-122, G-3
#[tokio::test(start_paused = true)]
async fn cf_080_g_48_five_transients_exhaust_after_three() {
    let fx = fx();
    for _ in 0..5 {
        fx.runner.push(Script::fail(transient(503)));
    }
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert!(matches!(e, GatewayError::AllSourcesExhausted(_)));
    assert_eq!(u.reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 3);
    assert_eq!(
        u.per_source_reasons.get("s1"),
        Some(&FailureReason::NetworkError)
    );
    // G-8: last_failure is the last absorbed Transient; G-12: max(base, no hint) = base.
    assert!(matches!(
        u.last_failure.as_deref(),
        Some(AttemptError::Transient(_))
    ));
    assert_eq!(u.retry_after_s, 0.001);
    fx.gov.quiesce().await;
    // CF-303 (row-count half): 3 attempt rows + 1 terminal row, terminal attempts == 3.
    fx.sink.assert_counts(3, 1);
    let t = &fx.sink.terminals()[0];
    assert_eq!(t.error_type(), Some("AllSourcesExhausted"));
    assert_eq!(t.stats.attempts, 3);
    assert_eq!(t.call.scope, "llm");
    assert_eq!(t.call.operation.as_str(), "chat");
    fx.sink.assert_one_call(&t.stats.logical_call_id);
    // tpm = 1000 admits only two 400-token reservations per minute: the third waited for the
    // window (QUOTA_FULL = wait); CF-073 pins the 1200 with tpm = 10000.
    fx.assert_usage("s1", 400, 0).await;
}

#[tokio::test(start_paused = true)]
async fn g_12_retry_exhausted_hint_is_largest_server_hint() {
    let fx = FxBuilder {
        retry: retry(2, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    // Two 503s, the first with a 2.5 s hint (503 hints are parsed, G-31).
    let mut with_hint = transient(503);
    if let AttemptError::Transient(f) = &mut with_hint {
        f.retry_after_s = Some(2.5);
    }
    fx.runner
        .push_all([Script::fail(with_hint), Script::fail(transient(503))]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).retry_after_s, 2.5);
}

// covers: G-57
#[tokio::test(start_paused = true)]
async fn g_46_embed_loop_counts_429_no_exemption() {
    // The embedding/OCR loops count every failure, 429 included (LoopPolicy EMBED).
    let fx = fx();
    for _ in 0..5 {
        fx.runner.push(Script::fail(rate_limited(Some(0.01))));
    }
    let e = fx
        .gov
        .run_embed(&fx.runner, CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 3);
    assert_eq!(
        unavailable(&e).per_source_reasons.get("s1"),
        Some(&FailureReason::RateLimited)
    );
}

#[tokio::test(start_paused = true)]
async fn g_47_source_dead_switches_immediately_without_backoff() {
    let fx = FxBuilder {
        retry: retry(3, 5.0, 30.0),
        ..FxBuilder::default().sources(&["s1", "s2"])
    }
    .build();
    fx.runner.push_for("s1", Script::fail(dead()));
    fx.runner.push_for("s2", ok());
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no backoff after SourceDead"
    );
    assert_eq!(fx.runner.calls(), ["s1", "s2"]);
    assert_eq!(g.stats.attempts, 2);
    assert_eq!(g.source.name, "s2");
    // SourceDead settles 0 (G-87) and force-opens s1 (G-75).
    fx.assert_usage("s1", 0, 0).await;
    fx.assert_usage("s2", 15, 0).await;
    let d = fx.breaker.try_enter("s1", "probe").await.unwrap();
    assert!(!d.allowed);
}

fn refused_connect() -> AttemptError {
    let mut refused = transient(500);
    if let AttemptError::Transient(f) = &mut refused {
        f.http_status = None;
        f.cause = Some(gateway_ports::CauseKind::ConnectError);
    }
    refused
}

/// A transient failure whose request never reached the server (connect refused) settles the
/// TPM reservation at 0; one that reached it (HTTP 500) keeps the estimate (issue 23).
// covers: G-87
#[tokio::test(start_paused = true)]
async fn g_87_connect_failure_settles_zero_tpm_not_the_estimate() {
    for (failure, charged) in [(refused_connect(), false), (transient(500), true)] {
        let fx = FxBuilder {
            retry: retry(3, 0.001, 0.01),
            ..FxBuilder::default().sources(&["s1", "s2"])
        }
        .build();
        fx.runner.push_for("s1", Script::fail(failure));
        fx.runner.push_for("s2", ok());
        let g = fx.chat().await.unwrap();
        assert_eq!(fx.runner.calls(), ["s1", "s2"]);
        assert_eq!(g.source.name, "s2");
        let s1 = fx.stats("s1").await;
        assert_eq!(s1.inflight, 0);
        assert_eq!(s1.tpm_used > 0, charged, "{s1:?}");
        fx.assert_usage("s2", 15, 0).await;
    }
}

/// README D25: a 401 on the only source opens its breaker; the call ends `CircuitOpen` and
/// still carries the cause: `last_failure` is the 401, the source's reason `source_dead`.
// covers: G-47, D25
#[tokio::test(start_paused = true)]
async fn g_47_d25_single_source_dead_then_circuit_open_keeps_the_401() {
    let fx = fx();
    fx.runner.push(Script::fail(dead()));
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    let u = unavailable(&e);
    assert_eq!(
        u.per_source_reasons.get("s1"),
        Some(&FailureReason::SourceDead)
    );
    let last = e.last_failure().expect("D25: last_failure");
    assert_eq!(last.http_status(), Some(401));
    assert!(matches!(last, AttemptError::SourceDead(_)), "{last:?}");
    assert_eq!(
        std::error::Error::source(&e).map(ToString::to_string),
        Some(last.to_string())
    );
    // G-12: max(poll, remaining cooldown reported) = 60 s.
    assert!((u.retry_after_s - 60.0).abs() < 1e-6, "{}", u.retry_after_s);
    assert_eq!(fx.runner.call_count(), 1);
    assert_eq!(e.attempts(), 1, "the attempt count travels with the error");
}

// covers: G-5, G-24, CF-304
#[tokio::test(start_paused = true)]
async fn g_50_cf_096_request_rejected_propagates_with_rows() {
    let fx = fx();
    fx.runner.push_all([Script::fail(rejected()), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::RequestRejected(_)));
    assert_eq!(e.http_status(), Some(400));
    assert_eq!(fx.runner.call_count(), 1, "no retry, no switch");
    fx.gov.quiesce().await;
    // CF-304 (row-count half): one attempt row, one terminal row, same logical_call_id.
    fx.sink.assert_counts(1, 1);
    assert_eq!(
        fx.sink.attempt_error_types(),
        [Some("RequestRejectedError")]
    );
    assert_eq!(
        fx.sink.terminals()[0].error_type(),
        Some("RequestRejectedError")
    );
    fx.sink
        .assert_one_call(&fx.sink.terminals()[0].stats.logical_call_id.clone());
    fx.assert_usage("s1", 0, 0).await;
}

// covers: G-5, V-48, V-49, V-52
#[tokio::test(start_paused = true)]
async fn g_50_result_invalid_propagates_settles_zero() {
    let fx = fx();
    fx.runner.push_all([Script::fail(invalid()), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::ResultInvalid(_)));
    assert_eq!(fx.runner.call_count(), 1);
    fx.assert_usage("s1", 0, 0).await;
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 1);
}

#[tokio::test(start_paused = true)]
async fn g_49_no_sources_terminal_row_zero_attempts() {
    let fx = FxBuilder {
        sources: vec![],
        ..FxBuilder::default()
    }
    .build();
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert_eq!(u.reason, ScopeReason::NoSources);
    assert_eq!(u.retry_after_s, 0.0);
    fx.gov.quiesce().await;
    fx.sink.assert_counts(0, 1);
    assert_eq!(fx.sink.terminals()[0].stats.attempts, 0);
}

#[tokio::test(start_paused = true)]
async fn g_38_backoff_sleeps_formula_with_injected_jitter() {
    // base 2.0, n = 1, rng → 2.0 → 2.0 · (0.5 + 2.0) = 5.0 s (G-40).
    let fx = FxBuilder {
        retry: retry(3, 2.0, 30.0),
        jitter: 2.0,
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(g.stats.attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn cf_083_generation_excludes_backoff() {
    let fx = FxBuilder {
        retry: retry(3, 2.0, 30.0),
        jitter: 2.0,
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push_all([
        Script::fail(transient(500)),
        Script::succeed_after(Duration::from_millis(250), TransportResult::ok(10, 5)),
    ]);
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.generation_ms, 250);
    assert!(
        g.stats.total_latency_ms >= 5250,
        "{}",
        g.stats.total_latency_ms
    );
}

#[tokio::test(start_paused = true)]
async fn g_41_no_sleep_after_exhausting_round() {
    let fx = FxBuilder {
        retry: retry(2, 5.0, 30.0),
        jitter: 0.5,
        ..FxBuilder::default()
    }
    .build();
    fx.runner
        .push_all([Script::fail(transient(500)), Script::fail(transient(500))]);
    let start = Instant::now();
    let _ = fx.chat().await.unwrap_err();
    // One backoff (5.0 · 1.0) between the rounds, none after the last.
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn g_55_pure_429_sequence_ends_stalled() {
    // Chat: 429s are budget-free; only the stall window ends them (G-46, G-55).
    let fx = FxBuilder {
        retry: retry(1, 0.01, 0.05),
        backpressure: BackpressurePolicy {
            stall_window_s: 0.3,
            poll_interval_s: 0.01,
        },
        ..FxBuilder::default()
    }
    .build();
    for _ in 0..200 {
        fx.runner.push(Script::fail(rate_limited(Some(0.01))));
    }
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert_eq!(u.reason, ScopeReason::Stalled);
    assert_eq!(u.retry_after_s, 0.05, "G-12: backoff_max_s");
    assert!(fx.runner.call_count() > 1);
    fx.gov.quiesce().await;
    let (attempts, terminals) = fx.sink.counts();
    assert_eq!((attempts, terminals), (fx.runner.call_count(), 1));
}

#[tokio::test(start_paused = true)]
async fn g_52_single_timeout_does_not_exhaust_stall_budget() {
    // One attempt uses 1.0 s (> the 0.3 s window): productive, not waiting.
    let fx = FxBuilder {
        backpressure: BackpressurePolicy {
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
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn r_35_hint_above_cap_fails_at_once_with_the_hint() {
    let fx = FxBuilder {
        retry: RetryPolicy {
            max_hint_s: Some(60.0),
            ..retry(3, 0.001, 0.01)
        },
        ..FxBuilder::default()
    }
    .build();
    fx.runner
        .push_all([Script::fail(rate_limited(Some(86_400.0))), ok()]);
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(unavailable(&e).retry_after_s, 86_400.0);
    assert_eq!(fx.runner.call_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn g_62_failed_source_is_demoted_within_the_call() {
    let fx = FxBuilder::default().sources(&["s1", "s2"]).build();
    fx.runner.push_for("s1", Script::fail(transient(500)));
    fx.runner.push_for("s2", ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(fx.runner.calls(), ["s1", "s2"]);
    assert_eq!(g.source.name, "s2");
}

// ── README D26: failing over does not wait ───────────────────────────────────────────────────

/// Two sources, a 5 s backoff base: the second source is tried at once after the first fails.
fn two_sources(retry: RetryPolicy) -> Fx {
    FxBuilder {
        retry,
        ..FxBuilder::default().sources(&["s1", "s2"])
    }
    .build()
}

#[tokio::test(start_paused = true)]
async fn d26_500_then_healthy_succeeds_without_backoff() {
    let fx = two_sources(retry(3, 5.0, 30.0));
    fx.runner.push_for("s1", Script::fail(transient(500)));
    fx.runner.push_for("s2", ok());
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "D26: no backoff before failover"
    );
    assert_eq!(fx.runner.calls(), ["s1", "s2"]);
    assert_eq!(g.source.name, "s2");
    assert_eq!(g.stats.attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn d26_429_retry_after_30_then_healthy_succeeds_at_once() {
    for hint_status in [429_u16, 503] {
        let fx = two_sources(retry(3, 1.0, 10.0));
        let mut failure = rate_limited(Some(30.0));
        if hint_status == 503 {
            failure = transient(503);
            if let AttemptError::Transient(f) = &mut failure {
                f.retry_after_s = Some(30.0);
            }
        }
        fx.runner.push_for("s1", Script::fail(failure));
        fx.runner.push_for("s2", ok());
        let start = Instant::now();
        let g = fx.chat().await.unwrap();
        assert_eq!(start.elapsed(), Duration::ZERO, "{hint_status}: D26");
        assert_eq!(g.source.name, "s2");
    }
}

#[tokio::test(start_paused = true)]
async fn d26_hint_above_max_hint_s_fails_over_instead_of_failing() {
    let fx = two_sources(RetryPolicy {
        max_hint_s: Some(10.0),
        ..retry(3, 1.0, 10.0)
    });
    fx.runner
        .push_for("s1", Script::fail(rate_limited(Some(30.0))));
    fx.runner.push_for("s2", ok());
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(
        g.source.name, "s2",
        "R-35 cap ends the call only when nothing else runs"
    );
}

#[tokio::test(start_paused = true)]
async fn d26_hint_with_a_5_s_call_deadline_fails_over() {
    let fx = FxBuilder {
        retry: retry(3, 1.0, 10.0),
        deadline: Some(Duration::from_secs(5)),
        ..FxBuilder::default().sources(&["s1", "s2"])
    }
    .build();
    fx.runner
        .push_for("s1", Script::fail(rate_limited(Some(30.0))));
    fx.runner.push_for("s2", ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(g.source.name, "s2");
}

#[tokio::test(start_paused = true)]
async fn d26_single_source_still_waits_for_its_hint() {
    let fx = fx();
    fx.runner
        .push_all([Script::fail(rate_limited(Some(2.0))), ok()]);
    let start = Instant::now();
    fx.chat().await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(2),
        "D3: the hint is slept"
    );
    assert!(start.elapsed() < Duration::from_millis(2100));
}

#[tokio::test(start_paused = true)]
async fn d26_sleeps_only_until_the_earliest_source_is_runnable() {
    // s1 asks for 30 s, s2 fails with a plain 500 (backoff 1.0 s × jitter factor 1.0 on the
    // second failed round → 2.0 s): the call waits for s2, not for s1's 30 s.
    let fx = two_sources(retry(4, 1.0, 10.0));
    fx.runner
        .push_for("s1", Script::fail(rate_limited(Some(30.0))));
    fx.runner.push_for("s2", Script::fail(transient(500)));
    fx.runner.push_for("s2", ok());
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(g.source.name, "s2");
    assert_eq!(fx.runner.calls(), ["s1", "s2", "s2"]);
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn d26_hint_cap_ends_the_call_when_no_other_source_can_run() {
    let fx = two_sources(RetryPolicy {
        max_hint_s: Some(60.0),
        ..retry(3, 1.0, 10.0)
    });
    fx.runner
        .push_for("s1", Script::fail(rate_limited(Some(86_400.0))));
    fx.runner.push_for("s2", Script::fail(dead()));
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(unavailable(&e).retry_after_s, 86_400.0);
    assert_eq!(fx.runner.calls(), ["s1", "s2"]);
    assert!(
        unavailable(&e).last_failure.is_some(),
        "D25: the cause is kept"
    );
}
