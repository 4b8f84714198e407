//! The scope retry budget `{SCOPE}__RETRY__BUDGET_RATIO` (05 R-35; 30 G-46 and G-48 as
//! superseded by it). Tier 1: paused tokio clock, `ScriptedRunner`, memory backends.

use crate::support;

use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::budget::RetryBudgetStats;
use gateway_core::governor::CallOptions;
use gateway_ports::{AttemptError, FailureReason, GatewayError, RetryPolicy, ScopeReason};
use gateway_testkit::Script;
use support::*;
use tokio::time::Instant;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

/// A source whose quota never makes a caller wait (the budget window is only 10 s).
fn roomy(name: &str) -> gateway_ports::SourceConfig {
    let mut s = source(name);
    s.tpm = 0;
    s
}

fn budgeted(ratio: f64, max_attempts: u32) -> FxBuilder {
    FxBuilder {
        sources: vec![roomy("s1")],
        retry: RetryPolicy {
            budget_ratio: Some(ratio),
            ..retry(max_attempts, 0.001, 0.01)
        },
        ..FxBuilder::default()
    }
}

fn stats(first_attempts: u64, withdrawals: u64) -> RetryBudgetStats {
    let mut s = RetryBudgetStats::default();
    s.first_attempts = first_attempts;
    s.withdrawals = withdrawals;
    s
}

#[tokio::test(start_paused = true)]
async fn r_35_budget_unset_is_off() {
    let fx = fx();
    assert!(fx.gov.retry_budget().is_none());
    for _ in 0..5 {
        fx.runner.push(Script::fail(transient(503)));
    }
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(
        fx.runner.call_count(),
        3,
        "only max_attempts bounds the loop"
    );
}

#[tokio::test(start_paused = true)]
async fn r_35_g_48_refused_retry_ends_with_the_last_failure() {
    // ratio 0.5, one first attempt: a retry needs 1 ≤ 0.5 × 1 → refused.
    let fx = budgeted(0.5, 3).build();
    fx.runner.push_all([Script::fail(transient(503)), ok()]);
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no backoff before a refusal"
    );
    let u = unavailable(&e);
    assert!(matches!(e, GatewayError::AllSourcesExhausted(_)), "{e:?}");
    assert_eq!(u.reason, ScopeReason::RetryExhausted);
    // G-3: the caller still learns what failed.
    let last = u.last_failure.as_deref().expect("last_failure");
    assert!(matches!(last, AttemptError::Transient(_)), "{last:?}");
    assert_eq!(last.http_status(), Some(503));
    assert_eq!(
        u.per_source_reasons.get("s1"),
        Some(&FailureReason::NetworkError)
    );
    assert_eq!(u.retry_after_s, 0.001, "G-12: max(base, no hint)");
    assert_eq!(fx.runner.call_count(), 1);
    assert_eq!(fx.gov.retry_budget().unwrap().stats(), stats(1, 0));
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 1);
}

#[tokio::test(start_paused = true)]
async fn r_35_ratio_one_allows_one_retry_per_first_attempt() {
    let fx = budgeted(1.0, 5).build();
    for _ in 0..5 {
        fx.runner.push(Script::fail(transient(500)));
    }
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(
        fx.runner.call_count(),
        2,
        "first attempt + one budgeted retry"
    );
    assert_eq!(fx.gov.retry_budget().unwrap().stats(), stats(1, 1));
}

#[tokio::test(start_paused = true)]
async fn r_35_budget_is_shared_by_all_calls_of_the_scope() {
    let fx = budgeted(0.5, 3).build();
    // Two clean calls deposit two first attempts.
    fx.runner.push_all([ok(), ok()]);
    fx.chat().await.unwrap();
    fx.chat().await.unwrap();
    // Third call: 3 first attempts, retry 1 ≤ 1.5 → allowed.
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    assert_eq!(fx.chat().await.unwrap().stats.attempts, 2);
    // Fourth: 4 first attempts, retry 2 ≤ 2 → allowed.
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    assert_eq!(fx.chat().await.unwrap().stats.attempts, 2);
    // Fifth: 5 first attempts, retry 3 ≤ 2.5 → refused.
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 7);
    assert_eq!(fx.gov.retry_budget().unwrap().stats(), stats(5, 2));
}

#[tokio::test(start_paused = true)]
async fn r_35_window_forgets_after_10_s() {
    let fx = budgeted(0.5, 3).build();
    fx.runner.push_all([ok(), ok()]);
    fx.chat().await.unwrap();
    fx.chat().await.unwrap();
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(fx.gov.retry_budget().unwrap().stats(), stats(0, 0));
    // Only this call's first attempt is in the window now: 1 > 0.5 × 1.
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
}

#[tokio::test(start_paused = true)]
async fn r_35_g_46_budget_exempt_429_is_still_a_retry() {
    // Chat 429s consume no `fails`, but every further round is a retry for the scope budget.
    let fx = budgeted(1.0, 1).build();
    fx.runner.push_all([
        Script::fail(rate_limited(Some(0.01))),
        Script::fail(rate_limited(Some(0.01))),
        ok(),
    ]);
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert_eq!(u.reason, ScopeReason::RetryExhausted, "not stalled");
    assert_eq!(fx.runner.call_count(), 2);
    assert_eq!(
        u.last_failure
            .as_deref()
            .and_then(AttemptError::http_status),
        Some(429)
    );
    assert_eq!(u.retry_after_s, 0.01, "G-12: the largest server hint");
}

#[tokio::test(start_paused = true)]
async fn r_35_g_47_source_dead_switch_is_a_retry() {
    let fx = FxBuilder {
        sources: vec![roomy("s1"), roomy("s2")],
        ..budgeted(0.5, 3)
    }
    .build();
    fx.runner.push_for("s1", Script::fail(dead()));
    fx.runner.push_for("s2", ok());
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.calls(), ["s1"], "the switch is refused");
    assert!(matches!(
        unavailable(&e).last_failure.as_deref(),
        Some(AttemptError::SourceDead(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn r_35_hedges_charge_the_same_budget() {
    // The hedge orchestrator calls `try_withdraw` before dispatching a hedge leg: a hedge
    // withdrawn here leaves less for retries.
    let fx = budgeted(0.5, 3).build();
    fx.runner.push_all([ok(), ok()]);
    fx.chat().await.unwrap();
    fx.chat().await.unwrap();
    let budget = fx.gov.retry_budget().unwrap().clone();
    assert!(budget.try_withdraw(), "hedge: 1 ≤ 0.5 × 2");
    assert!(!budget.try_withdraw(), "second hedge: 2 > 1");
    // Without the hedge this retry would pass (1 ≤ 1.5); with it, 2 > 1.5.
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(budget.stats(), stats(3, 1));
}

#[tokio::test(start_paused = true)]
async fn r_35_embed_loop_charges_the_budget_too() {
    let fx = budgeted(0.5, 3).build();
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let e = fx
        .gov
        .run_embed(&fx.runner, CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 1);
}
