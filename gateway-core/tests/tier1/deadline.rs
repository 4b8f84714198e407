//! The call deadline (30 §8, G-91..G-103; 95 CF-057..CF-066, CF-309, CF-310, CF-312, CF-315,
//! CF-317, CF-318).

use crate::support;

use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::deadline::{ensure_call_deadline_s, resolve_call_deadline, with_deadline};
use gateway_core::governor::CallOptions;
use gateway_core::rows::CancelLabel;
use gateway_ports::{AttemptError, GatewayError, GlobalLimits, RateLimiter};
use gateway_testkit::Script;
use support::*;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

fn cde(e: &GatewayError) -> (String, f64) {
    match e {
        GatewayError::CallDeadlineExceeded(d) => (d.scope.clone(), d.deadline_s),
        other => panic!("expected CallDeadlineExceeded, got {other:?}"),
    }
}

#[test]
fn cf_057_domain_accepts_unset_and_positive() {
    assert_eq!(ensure_call_deadline_s(None, "o").unwrap(), None);
    assert_eq!(
        ensure_call_deadline_s(Some(3.0), "o").unwrap(),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        ensure_call_deadline_s(Some(0.5), "o").unwrap(),
        Some(Duration::from_millis(500))
    );
}

// covers: G-96
#[test]
fn cf_058_cf_059_domain_rejects_with_origin() {
    for v in [
        0.0,
        -0.0,
        -1.0,
        -0.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        "1e400".parse().unwrap(),
    ] {
        let e = ensure_call_deadline_s(Some(v), "LLM__CALL_DEADLINE_S").unwrap_err();
        assert_eq!(e.code, "deadline.domain");
        assert_eq!(e.origin, "LLM__CALL_DEADLINE_S");
    }
}

// covers: G-96
#[test]
fn cf_317_g_98_per_call_zero_is_invalid_argument() {
    let e = resolve_call_deadline(None, Some(Duration::ZERO), "ChatOptions::call_deadline")
        .unwrap_err();
    assert!(
        matches!(e, GatewayError::InvalidArgument(ref d) if d.origin == "ChatOptions::call_deadline")
    );
    // G-97: None inherits; a value overrides.
    let a = Some(Duration::from_secs(5));
    assert_eq!(resolve_call_deadline(a, None, "o").unwrap(), a);
    assert_eq!(
        resolve_call_deadline(a, Some(Duration::from_secs(1)), "o").unwrap(),
        Some(Duration::from_secs(1))
    );
}

// covers: G-93
#[tokio::test(start_paused = true)]
async fn cf_066_unset_deadline_plain_await() {
    assert_eq!(with_deadline(None, async { 7 }).await.unwrap(), 7);
}

// covers: G-114, G-91
#[tokio::test(start_paused = true)]
async fn cf_060_cf_312_expiry_in_flight_one_cancelled_row_one_terminal() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::hang());
    let e = fx.chat().await.unwrap_err();
    assert_eq!(cde(&e), ("llm".to_owned(), 0.05));
    assert_eq!(e.retry_after_s(), None, "no retry_after_s by design");
    // G-101: the cancelled attempt was settled and its row written before the return.
    fx.assert_usage("s1", 400, 0).await;
    fx.sink.assert_counts(1, 1);
    assert_eq!(fx.sink.attempt_labels(), [Some(CancelLabel::Cancelled)]);
    let t = &fx.sink.terminals()[0];
    assert_eq!(t.error_type(), Some("CallDeadlineExceeded"));
    fx.sink.assert_one_call(&t.stats.logical_call_id);
}

// covers: G-102
#[tokio::test(start_paused = true)]
async fn cf_309_expires_during_backoff_one_transport_call() {
    let fx = FxBuilder {
        retry: retry(3, 5.0, 30.0),
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(cde(&e), ("llm".to_owned(), 0.05));
    assert_eq!(fx.runner.call_count(), 1);
    fx.sink.assert_counts(1, 1);
}

/// README D25: a deadline that ends a call after three 429s carries the last 429 as
/// `last_failure` and the source's `rate_limited` reason.
// covers: D25, G-102
#[tokio::test(start_paused = true)]
async fn d25_deadline_after_three_429s_carries_the_last_429() {
    let fx = FxBuilder {
        retry: retry(10, 1.0, 1.0),
        deadline: Some(Duration::from_secs(60)),
        ..FxBuilder::default()
    }
    .build();
    let mut last = rate_limited(None);
    if let AttemptError::Transient(f) = &mut last {
        f.message = "s: rate limited: 429 (third)".to_owned();
    }
    fx.runner.push_all([
        Script::fail(rate_limited(None)),
        Script::fail(rate_limited(None)),
        Script::fail(last.clone()),
        // Should a fourth attempt start before the deadline, it hangs in flight.
        Script::fail_after(Duration::from_secs(600), transient(500)),
    ]);
    let e = fx.chat().await.unwrap_err();
    assert_eq!(cde(&e), ("llm".to_owned(), 60.0));
    assert!(fx.runner.call_count() >= 3, "three 429s, then the deadline");
    let cause = e.last_failure().expect("D25: last_failure");
    assert_eq!(cause.http_status(), Some(429));
    assert_eq!(cause, &last, "the last of the three");
    assert_eq!(
        e.per_source_reasons().and_then(|r| r.get("s1")),
        Some(&gateway_ports::FailureReason::RateLimited)
    );
    assert_eq!(
        e.attempts(),
        u32::try_from(fx.runner.call_count()).unwrap(),
        "the attempt count travels with the error"
    );
}

// covers: G-102
#[tokio::test(start_paused = true)]
async fn cf_310_expires_while_queued_for_quota_zero_calls() {
    // The TPM window is full (another holder took 1000 of 1500) but a call could fit later;
    // a TPM that no call can ever fit fails at once instead (issue 22, hostile_never_admit).
    let mut s = source("s1");
    s.tpm = 1500;
    s.est_tokens = Some(1000);
    let fx = FxBuilder {
        sources: vec![s],
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    let gateway_ports::Acquire::Granted(_held) = fx.limiter.try_acquire("s1", 1000).await.unwrap()
    else {
        panic!("the first 1000 tokens fit");
    };
    fx.runner.push(ok());
    let e = fx.chat().await.unwrap_err();
    cde(&e);
    assert_eq!(fx.runner.call_count(), 0);
    assert_eq!(
        fx.gov.admission().waiters(),
        0,
        "the waiter slot is released on drop"
    );
    fx.sink.assert_counts(0, 1);
}

// covers: G-97
#[tokio::test(start_paused = true)]
async fn cf_318_assembled_deadline_inherited_per_call_none() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::hang());
    let e = fx.chat_with(CallOptions::default()).await.unwrap_err();
    cde(&e);
}

#[tokio::test(start_paused = true)]
async fn cf_317_per_call_zero_no_transport_no_rows() {
    let fx = fx();
    fx.runner.push(ok());
    let e = fx
        .chat_with(CallOptions::default().with_deadline(Duration::ZERO))
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::InvalidArgument(_)));
    assert_eq!(fx.runner.call_count(), 0);
    fx.gov.quiesce().await;
    fx.sink.assert_counts(0, 0);
}

#[tokio::test(start_paused = true)]
async fn cf_064_success_just_before_deadline() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::succeed_after(
        Duration::from_millis(49),
        TransportResult::ok(10, 5),
    ));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.attempts, 1);
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 0);
}

#[tokio::test(start_paused = true)]
async fn cf_061_inner_failure_first_is_not_deadline() {
    let fx = FxBuilder {
        retry: retry(1, 0.001, 0.01),
        deadline: Some(Duration::from_secs(1)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail_after(
        Duration::from_millis(10),
        transient(504),
    ));
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::AllSourcesExhausted(_)), "{e:?}");
}

// covers: S-4
#[tokio::test(start_paused = true)]
async fn cf_315_g_99_injected_clock_jump_fires_nothing() {
    let fx = FxBuilder {
        fake_clock: true,
        deadline: Some(Duration::from_secs(5)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(
        Script::new()
            .advance_clock(Duration::from_secs(1_000_000))
            .then_ok(TransportResult::ok(10, 5)),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.total_latency_ms, 1_000_000_000);
}

#[tokio::test(start_paused = true)]
async fn g_103_ocr_hang_deadline_settles_zero() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::hang());
    let e = fx
        .gov
        .run_ocr(
            &fx.runner,
            gateway_ports::CallOperation::RecognizeText,
            CallOptions::default(),
        )
        .await
        .unwrap_err();
    cde(&e);
    fx.assert_usage("s1", 0, 0).await; // S6
    let _ = GlobalLimits::default();
    let _ = fx.limiter.progress_age_s().await;
}
