//! Public wire cases at the loop level (05 R-60): the classifier (`classify`) turns the
//! case's HTTP facts into the attempt failure; the loop governs the wait.

use crate::support;

use std::time::{Duration, SystemTime};

use gateway_core::attempt::TransportResult;
use gateway_core::classify::{ClassifyContext, classify_http};
use gateway_core::governor::CallOptions;
use gateway_ports::{AttemptError, ErrorOperation, GatewayError, RetryPolicy, ScopeReason};
use gateway_testkit::Script;
use support::*;
use tokio::time::Instant;

fn http_429(headers: &[(&str, &str)], body: &str) -> AttemptError {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    // A fixed wall instant: every Retry-After here is relative, and the core reads the wall clock
    // only through the Clock port.
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_735_689_600);
    let ctx = ClassifyContext::new("s1", ErrorOperation::Chat, wall);
    classify_http(429, &headers, body, &ctx).into_error()
}

const BODY_030: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 33 seconds."}}"#;

#[tokio::test(start_paused = true)]
async fn case_030_a_retry_after_ms_preferred_and_slept() {
    let fx = fx();
    let e = http_429(
        &[("retry-after", "33"), ("retry-after-ms", "33000")],
        BODY_030,
    );
    fx.runner
        .push_all([Script::fail(e), Script::ok(TransportResult::ok(10, 5))]);
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(33));
    assert_eq!(g.stats.attempts, 2);
}

#[tokio::test(start_paused = true)]
async fn case_030_b_fractional_ms_header() {
    let fx = fx();
    let e = http_429(&[("retry-after-ms", "1500")], BODY_030);
    fx.runner
        .push_all([Script::fail(e), Script::ok(TransportResult::ok(10, 5))]);
    let start = Instant::now();
    fx.chat().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn case_030_c_no_header_backoff_applies() {
    // 05 R-60: no phrase search for hints (G-19) — plain backoff (0.001 · 1.0 with rng 0.5).
    let fx = fx();
    let e = http_429(&[], BODY_030);
    fx.runner
        .push_all([Script::fail(e), Script::ok(TransportResult::ok(10, 5))]);
    let start = Instant::now();
    fx.chat().await.unwrap();
    assert!(start.elapsed() < Duration::from_millis(10));
}

const BODY_032: &str = r#"{"error":{"code":"429","message":"Please retry after 86400 seconds."}}"#;

#[tokio::test(start_paused = true)]
async fn case_032_huge_hint_with_cap_fails_fast_with_hint() {
    let fx = FxBuilder {
        retry: RetryPolicy {
            max_hint_s: Some(120.0),
            ..retry(3, 0.001, 0.01)
        },
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(http_429(
        &[("retry-after", "86400")],
        BODY_032,
    )));
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(unavailable(&e).retry_after_s, 86_400.0);
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
}

#[tokio::test(start_paused = true)]
async fn case_032_huge_hint_with_deadline_ends_at_deadline() {
    let fx = fx();
    fx.runner.push(Script::fail(http_429(
        &[("retry-after", "86400")],
        BODY_032,
    )));
    let start = Instant::now();
    let e = fx
        .chat_with(CallOptions::default().with_deadline(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(fx.runner.call_count(), 1);
}
