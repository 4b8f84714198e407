//! The second round of wire decisions in the classifier, tier 1 (pure functions over recorded
//! wire facts): README D19 (retry hints beyond `Retry-After`), D23 (status amendments), D24
//! (relayed quota and context markers), D27 (`bad_response`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_core::classify::{
    CAPACITY_MARKERS, CONTEXT_OVERFLOW_MARKERS, Classification, ClassifyContext,
    MODEL_MISSING_MARKERS, classify_error_value, classify_http, failure_reason,
    is_insufficient_quota,
};
use gateway_core::retry_after::parse_retry_hint;
use gateway_ports::{AttemptFailure, Category, ErrorOperation, FailureReason, ReasonCode};
use proptest::prelude::*;
use serde_json::json;

const SRC: &str = "litellm_1";

fn wall() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_767_225_600) // 2026-01-01T00:00:00Z
}

fn ctx() -> ClassifyContext<'static> {
    ClassifyContext::new(SRC, ErrorOperation::Chat, wall())
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

fn http(status: u16, headers: &[(&str, &str)], body: &str) -> Classification {
    classify_http(status, &h(headers), body, &ctx())
}

fn hint(headers: &[(&str, &str)], body: &str) -> Option<f64> {
    parse_retry_hint(&h(headers), body, SRC, wall())
}

// ── D19: retry hints beyond Retry-After ──────────────────────────────────────────────────────

#[test]
fn d19_relay_renamed_headers() {
    assert_eq!(
        hint(&[("llm_provider-retry-after-ms", "2500")], ""),
        Some(2.5)
    );
    assert_eq!(hint(&[("llm_provider-retry-after", "6")], ""), Some(6.0));
    // ms preferred over the seconds form.
    assert_eq!(
        hint(
            &[
                ("llm_provider-retry-after", "6"),
                ("llm_provider-retry-after-ms", "100")
            ],
            ""
        ),
        Some(0.1)
    );
    // D4's own headers win over the relay's.
    assert_eq!(
        hint(
            &[("retry-after", "3"), ("llm_provider-retry-after", "6")],
            ""
        ),
        Some(3.0)
    );
    // An unusable relay value falls through to the next source.
    assert_eq!(
        hint(
            &[
                ("llm_provider-retry-after", "soon"),
                ("x-ratelimit-reset-requests", "1.5s")
            ],
            ""
        ),
        Some(1.5)
    );
}

#[test]
fn d19_ratelimit_reset_go_durations() {
    assert_eq!(
        hint(&[("x-ratelimit-reset-requests", "6m0s")], ""),
        Some(360.0)
    );
    assert_eq!(
        hint(&[("x-ratelimit-reset-tokens", "250ms")], ""),
        Some(0.25)
    );
    assert_eq!(hint(&[("x-ratelimit-reset-tokens", "12")], ""), Some(12.0));
    // Without remaining headers: the larger of the two.
    assert_eq!(
        hint(
            &[
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-reset-tokens", "6m0s")
            ],
            ""
        ),
        Some(360.0)
    );
    // The exhausted dimension wins, even when it is the shorter.
    assert_eq!(
        hint(
            &[
                ("x-ratelimit-reset-requests", "1s"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-tokens", "6m0s"),
                ("x-ratelimit-remaining-tokens", "4000"),
            ],
            ""
        ),
        Some(1.0)
    );
    assert_eq!(hint(&[("x-ratelimit-reset-requests", "0s")], ""), None);
    assert_eq!(hint(&[("x-ratelimit-reset-requests", "later")], ""), None);
}

#[test]
fn d19_body_hints_openrouter_epoch_ms_and_google_retry_info() {
    let now_ms = 1_767_225_600_000_u64;
    let future = format!(
        r#"{{"error":{{"message":"Rate limit exceeded","code":429,"metadata":{{"headers":{{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"{}"}}}}}}}}"#,
        now_ms + 42_000
    );
    assert_eq!(hint(&[], &future), Some(42.0));
    let as_number = format!(
        r#"{{"error":{{"metadata":{{"headers":{{"X-RateLimit-Reset":{}}}}}}}}}"#,
        now_ms + 1_500
    );
    assert_eq!(hint(&[], &as_number), Some(1.5));
    let past = format!(
        r#"{{"error":{{"metadata":{{"headers":{{"X-RateLimit-Reset":"{}"}}}}}}}}"#,
        now_ms - 5_000
    );
    assert_eq!(hint(&[], &past), None, "past values are ignored");

    let google = json!([{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}
    ]}}])
    .to_string();
    assert_eq!(hint(&[], &google), Some(30.0));
    let google_obj = json!({"error": {"details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.250s"}
    ]}})
    .to_string();
    assert_eq!(hint(&[], &google_obj), Some(1.25));
    // A retryDelay outside a RetryInfo detail does not count.
    let other = json!({"error": {"details": [{"retryDelay": "30s"}]}}).to_string();
    assert_eq!(hint(&[], &other), None);
    assert_eq!(hint(&[], "<html>busy</html>"), None);
}

#[test]
fn d19_hint_is_read_on_429_and_never_changes_the_category() {
    let c = http(429, &[("x-ratelimit-reset-requests", "6m0s")], "{}");
    assert_eq!(c.category, Category::Transient);
    assert_eq!(c.failure_reason, Some(FailureReason::RateLimited));
    assert_eq!(c.retry_after_s(), Some(360.0));
    let c = http(503, &[("llm_provider-retry-after", "6")], "busy");
    assert_eq!(c.retry_after_s(), Some(6.0));
    // 400/401/403/404 never read a hint.
    for status in [400, 401, 403, 404] {
        let c = http(status, &[("retry-after", "5")], "no");
        assert_eq!(c.retry_after_s(), None, "{status}");
    }
}

// ── D23: statuses that mean "later" or "not here" ────────────────────────────────────────────

#[test]
fn d23_522_524_are_timeouts() {
    for status in [522, 524] {
        let c = http(status, &[], "cloudflare");
        assert_eq!(c.category, Category::Transient, "{status}");
        assert_eq!(c.failure_reason, Some(FailureReason::Timeout), "{status}");
    }
}

#[test]
fn d23_deferral_with_a_hint() {
    let c = http(409, &[("retry-after", "2")], "conflict");
    assert_eq!(c.category, Category::Transient);
    assert_eq!(c.retry_after_s(), Some(2.0));
    let c = http(409, &[], "conflict");
    assert_eq!(
        c.category,
        Category::RequestRejected,
        "no hint, no deferral"
    );
    let c = http(422, &[("x-ratelimit-reset-tokens", "1s")], "x");
    assert_eq!(c.category, Category::Transient);
    // 400 with a hint stays a rejection.
    let c = http(400, &[("retry-after", "2")], "bad");
    assert_eq!(c.category, Category::RequestRejected);
}

#[test]
fn d23_model_missing_is_source_dead_on_400_404_422() {
    let litellm = r#"{"error":{"message":"litellm.BadRequestError: Invalid model name passed in model=gpt-x. Call `/v1/models` to view available models for your key.","type":"invalid_request_error","param":"model","code":"400"}}"#;
    for status in [400, 404, 422] {
        let c = http(status, &[], litellm);
        assert_eq!(c.category, Category::SourceDead, "{status}");
        assert_eq!(c.failure_reason, Some(FailureReason::SourceDead));
        assert!(c.failure.message.contains(SRC), "{}", c.failure.message);
    }
    for marker in MODEL_MISSING_MARKERS {
        let body = format!("xx {} yy", marker.to_ascii_uppercase());
        assert_eq!(
            http(400, &[], &body).category,
            Category::SourceDead,
            "{marker}"
        );
        // Other statuses are not searched.
        assert_ne!(
            http(409, &[], &body).category,
            Category::SourceDead,
            "{marker}"
        );
    }
    // Context overflow wins over a model-missing marker.
    let both = "unknown model; maximum context length exceeded";
    assert_eq!(http(400, &[], both).category, Category::RequestRejected);
}

#[test]
fn d23_capacity_markers_on_400_409_are_transient() {
    for marker in CAPACITY_MARKERS {
        for status in [400, 409] {
            let c = http(status, &[], &format!("{{\"error\":\"{marker}\"}}"));
            assert_eq!(c.category, Category::Transient, "{status} {marker}");
            assert_eq!(c.failure_reason, Some(FailureReason::NetworkError));
        }
        assert_eq!(
            http(422, &[], marker).category,
            Category::RequestRejected,
            "422 not searched"
        );
    }
    let c = http(409, &[("retry-after", "3")], "Model is at capacity");
    assert_eq!(c.retry_after_s(), Some(3.0));
}

// ── D24: relayed quota and context markers ───────────────────────────────────────────────────

#[test]
fn d24_relayed_quota_markers() {
    let litellm = r#"{"error":{"message":"litellm.RateLimitError: You exceeded your current quota, please check your plan and billing details.","type":"throttling_error","param":null,"code":"429"}}"#;
    assert!(is_insufficient_quota(litellm));
    let c = http(429, &[("retry-after", "30")], litellm);
    assert_eq!(c.category, Category::SourceDead);
    assert!(is_insufficient_quota(
        r#"{"error":{"type":"billing_hard_limit_reached"}}"#
    ));
    assert!(is_insufficient_quota(
        r#"[{"error":{"code":"billing_hard_limit_reached"}}]"#
    ));
    assert!(is_insufficient_quota(
        r#"{"error":{"error":{"code":"insufficient_quota"},"type":"proxy_error"}}"#
    ));
    assert!(is_insufficient_quota("billing_hard_limit_reached"));
    assert!(!is_insufficient_quota(
        r#"{"error":{"type":"throttling_error","message":"slow down"}}"#
    ));
    // In-band frames too.
    let frame = classify_error_value(
        &json!({"code": 429, "message": "You exceeded your current quota"}),
        &ctx(),
    );
    assert_eq!(frame.category, Category::SourceDead);
}

#[test]
fn d24_context_markers_behind_relays() {
    for body in [
        "litellm.ContextWindowExceededError: too long",
        r#"{"error":{"code":"context_window_exceeded"}}"#,
        "Context window exceeded for model",
        "Input is too long for requested model.",
    ] {
        let c = http(500, &[], body);
        assert_eq!(c.category, Category::RequestRejected, "{body}");
        assert_eq!(c.reason_code(), Some(ReasonCode::ContextLengthExceeded));
    }
    assert_eq!(CONTEXT_OVERFLOW_MARKERS.len(), 10);
}

// ── D27: bad_response ────────────────────────────────────────────────────────────────────────

#[test]
fn d27_malformed_answers_are_bad_response() {
    for code in [
        ReasonCode::EmptyCompletion,
        ReasonCode::EmptyResponse,
        ReasonCode::ProtocolError,
        ReasonCode::InvalidJson,
        ReasonCode::MalformedJson,
        ReasonCode::MissingDone,
        ReasonCode::EarlyEof,
        ReasonCode::ToolIncomplete,
    ] {
        let mut f = AttemptFailure::new("x", ErrorOperation::Chat);
        f.reason_code = Some(code);
        assert_eq!(
            failure_reason(Category::Transient, &f),
            Some(FailureReason::BadResponse),
            "{code}"
        );
    }
    let mut f = AttemptFailure::new("x", ErrorOperation::Chat);
    f.reason_code = Some(ReasonCode::ReadError);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::NetworkError)
    );
    assert!(FailureReason::BadResponse.is_attempt_failure());
}

proptest! {
    /// D19: any header values and body → no panic; a hint is finite and > 0.
    #[test]
    fn d19_parse_retry_hint_total(
        a in ".{0,20}", b in ".{0,20}", c in ".{0,20}", body in "\\PC{0,200}",
    ) {
        let headers = h(&[
            ("llm_provider-retry-after", &a),
            ("x-ratelimit-reset-requests", &b),
            ("x-ratelimit-reset-tokens", &c),
        ]);
        if let Some(s) = parse_retry_hint(&headers, &body, SRC, wall()) {
            prop_assert!(s.is_finite() && s > 0.0);
        }
    }
}
