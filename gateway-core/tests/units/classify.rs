//! The one classifier: 30 G-15, G-16, G-18..G-31; README D14, D15, D18; 05 R-34;
//! conformance rows CF-095, CF-096, CF-238, CF-239, CF-241; wire cases 018, 019 (the in-band
//! frames; the HTTP cases 030–035 are in `cases_classify.rs`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_core::classify::{
    CONTEXT_OVERFLOW_MARKERS, Classification, ClassifyContext, LivenessKind, classify_error_event,
    classify_error_value, classify_http, classify_liveness_timeout, classify_network_fault,
    classify_read_error, classify_wire_failure, compose, contains_context_overflow_marker,
    failure_reason, failure_reason_of, in_band_status, is_insufficient_quota,
};
use gateway_core::redact::{SUMMARY_MAX_CHARS, ScrubOptions};
use gateway_ports::{
    AttemptError, AttemptFailure, Category, CauseKind, ErrorOperation, FailureReason, NetworkFault,
    NetworkFaultKind, ReasonCode, WireFailure,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const SRC: &str = "qwen_1";

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

fn http(status: u16, body: &str) -> Classification {
    classify_http(status, &[], body, &ctx())
}

fn http_hinted(status: u16, retry_after: &str, body: &str) -> Classification {
    classify_http(status, &h(&[("retry-after", retry_after)]), body, &ctx())
}

#[track_caller]
fn assert_verdict(c: &Classification, category: Category, reason: Option<FailureReason>) {
    assert_eq!(c.category, category, "{c:?}");
    assert_eq!(c.failure_reason, reason, "{c:?}");
}

// ── G-19: the status table ───────────────────────────────────────────────────────────────────

#[test]
fn g_19_cf_096_400_is_request_rejected() {
    let c = http(400, r#"{"error":{"message":"bad"}}"#);
    assert_verdict(&c, Category::RequestRejected, None);
    assert_eq!(c.http_status(), Some(400));
    assert_eq!(c.reason_code(), None, "G-28: HTTP failures carry no code");
    let e = c.into_error();
    assert!(matches!(e, AttemptError::RequestRejected(_)));
    assert_eq!(e.type_name(), "RequestRejectedError");
}

#[test]
fn g_19_401_403_are_source_dead() {
    for status in [401, 403] {
        let c = http_hinted(status, "5", "unauthorized");
        assert_verdict(&c, Category::SourceDead, Some(FailureReason::SourceDead));
        assert_eq!(c.retry_after_s(), None);
    }
}

#[test]
fn g_19_429_is_transient_rate_limited_with_hint() {
    let c = http_hinted(429, "33", r#"{"error":{"message":"slow down"}}"#);
    assert_verdict(&c, Category::Transient, Some(FailureReason::RateLimited));
    assert_eq!(c.retry_after_s(), Some(33.0));
    assert!(c.is_rate_limited());
    assert_eq!(c.reason_code(), None);
}

// covers: G-31
/// README D23 widens G-31: every 5xx carrying a usable hint keeps it (a deferral).
#[test]
fn g_19_d23_5xx_transient_with_their_hint() {
    for status in [500, 502, 503] {
        let c = http_hinted(status, "7", "oops");
        assert_verdict(&c, Category::Transient, Some(FailureReason::NetworkError));
        assert_eq!(c.retry_after_s(), Some(7.0), "{status}: D23 hint");
        let c = http(status, "oops");
        assert_eq!(c.retry_after_s(), None, "{status}: no header, no hint");
    }
    let c = http_hinted(504, "7", "gateway timeout");
    assert_verdict(&c, Category::Transient, Some(FailureReason::Timeout));
    assert_eq!(c.retry_after_s(), Some(7.0));
}

#[test]
fn g_19_chosen_rows() {
    use Category::*;
    let rows: &[(u16, Category, Option<FailureReason>)] = &[
        (529, Transient, Some(FailureReason::NetworkError)),
        (408, Transient, Some(FailureReason::Timeout)),
        (425, Transient, Some(FailureReason::NetworkError)),
        (402, SourceDead, Some(FailureReason::SourceDead)),
        (404, SourceDead, Some(FailureReason::SourceDead)),
        (405, SourceDead, Some(FailureReason::SourceDead)),
        (501, SourceDead, Some(FailureReason::SourceDead)),
        (505, SourceDead, Some(FailureReason::SourceDead)),
        (406, RequestRejected, None),
        (409, RequestRejected, None),
        (410, RequestRejected, None),
        (413, RequestRejected, None),
        (415, RequestRejected, None),
        (422, RequestRejected, None),
        (451, RequestRejected, None),
        (499, RequestRejected, None),
        (506, Transient, Some(FailureReason::NetworkError)),
        (520, Transient, Some(FailureReason::NetworkError)),
        (528, Transient, Some(FailureReason::NetworkError)),
        (530, Transient, Some(FailureReason::NetworkError)),
        (599, Transient, Some(FailureReason::NetworkError)),
        (201, Transient, Some(FailureReason::NetworkError)),
        (204, Transient, Some(FailureReason::NetworkError)),
        (299, Transient, Some(FailureReason::NetworkError)),
        (301, SourceDead, Some(FailureReason::SourceDead)),
        (302, SourceDead, Some(FailureReason::SourceDead)),
        (307, SourceDead, Some(FailureReason::SourceDead)),
        (0, Transient, Some(FailureReason::NetworkError)),
        (100, Transient, Some(FailureReason::NetworkError)),
        (199, Transient, Some(FailureReason::NetworkError)),
        (600, Transient, Some(FailureReason::NetworkError)),
        (u16::MAX, Transient, Some(FailureReason::NetworkError)),
    ];
    for &(status, category, reason) in rows {
        let c = http(status, "body");
        assert_eq!(
            (c.category, c.failure_reason),
            (category, reason),
            "status {status}"
        );
        assert_eq!(c.retry_after_s(), None, "status {status}: G-31");
        assert_eq!(c.http_status(), Some(status));
        // README D23: with a usable hint, every non-2xx but 400/401/403/404 is a deferral.
        let hinted = http_hinted(status, "9", "body");
        if (200..=299).contains(&status) || matches!(status, 400 | 401 | 403 | 404) {
            assert_eq!(hinted.category, category, "status {status}: no deferral");
            assert_eq!(hinted.retry_after_s(), None, "status {status}");
        } else {
            assert_eq!(hinted.category, Category::Transient, "status {status}: D23");
            assert_eq!(hinted.retry_after_s(), Some(9.0), "status {status}: D23");
        }
    }
}

#[test]
fn g_19_no_other_phrase_is_searched() {
    // A rate-limit phrase in a 500 or 400 body changes nothing (non-goal; R-60 030 C).
    let c = http(500, "rate limit exceeded, please retry after 45 seconds");
    assert_verdict(&c, Category::Transient, Some(FailureReason::NetworkError));
    assert_eq!(c.retry_after_s(), None);
    let c = http(400, r#"{"error":{"type":"rate_limit_error"}}"#);
    assert_verdict(&c, Category::RequestRejected, None);
    // insufficient_quota only matters on a 429.
    let c = http(500, r#"{"error":{"type":"insufficient_quota"}}"#);
    assert_verdict(&c, Category::Transient, Some(FailureReason::NetworkError));
}

// ── G-20: insufficient_quota ─────────────────────────────────────────────────────────────────

#[test]
fn g_20_insufficient_quota_json_type_or_code() {
    for body in [
        r#"{"error":{"type":"insufficient_quota"}}"#,
        r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
        r#"{"error":{"message":"x","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
    ] {
        let c = http_hinted(429, "5", body);
        assert_verdict(&c, Category::SourceDead, Some(FailureReason::SourceDead));
        assert_eq!(c.retry_after_s(), None, "a SourceDead 429 parses no hint");
        assert!(
            c.failure
                .message
                .starts_with("qwen_1: insufficient_quota: 429 | ")
        );
    }
}

#[test]
fn g_20_substring_fallback_is_case_sensitive() {
    assert!(is_insufficient_quota("quota: insufficient_quota (billing)"));
    assert!(is_insufficient_quota(
        r#"{"error":{"message":"insufficient_quota"}}"#
    ));
    assert!(is_insufficient_quota(r#"{"error":"insufficient_quota"}"#));
    assert!(is_insufficient_quota(
        r#"{"error":{"type":null,"message":"insufficient_quota"}}"#
    ));
    assert!(!is_insufficient_quota("INSUFFICIENT_QUOTA"));
    assert!(!is_insufficient_quota("insufficient quota"));
    // JSON with a type/code that says something else decides: the message is not searched.
    assert!(!is_insufficient_quota(
        r#"{"error":{"type":"rate_limit_error","message":"see insufficient_quota docs"}}"#
    ));
    let c = http(429, "INSUFFICIENT_QUOTA");
    assert_verdict(&c, Category::Transient, Some(FailureReason::RateLimited));
}

#[test]
fn g_20_reads_the_untruncated_raw_body_not_the_summary() {
    // The fact sits far beyond the 2048-char summary: the summary cut would lose it.
    let body = format!(
        r#"{{"error":{{"message":"{}","type":"insufficient_quota"}}}}"#,
        "x".repeat(10_000)
    );
    let c = http(429, &body);
    assert_verdict(&c, Category::SourceDead, Some(FailureReason::SourceDead));
    assert!(c.failure.body_text.as_ref().unwrap().chars().count() <= SUMMARY_MAX_CHARS);
}

// covers: G-31
#[test]
fn cf_095_g_37_insufficient_quota_with_inf_retry_after_is_source_dead_silently() {
    let c = http_hinted(429, "inf", r#"{"error":{"type":"insufficient_quota"}}"#);
    assert_verdict(&c, Category::SourceDead, Some(FailureReason::SourceDead));
    assert_eq!(c.retry_after_s(), None);
    assert!(matches!(c.into_error(), AttemptError::SourceDead(_)));
}

#[test]
fn g_34_bad_hint_never_changes_the_category() {
    for raw in ["inf", "soon", "-1", "", "nan"] {
        let c = http_hinted(429, raw, "{}");
        assert_verdict(&c, Category::Transient, Some(FailureReason::RateLimited));
        assert_eq!(c.retry_after_s(), None);
    }
}

// ── G-20a / D14: context-overflow markers ────────────────────────────────────────────────────

#[test]
fn d14_g_20a_every_marker_on_any_status() {
    for marker in CONTEXT_OVERFLOW_MARKERS {
        for status in [400, 401, 403, 404, 413, 422, 429, 500, 503, 520, 302, 201] {
            let c = http_hinted(
                status,
                "5",
                &format!(r#"{{"error":{{"message":"{marker}"}}}}"#),
            );
            assert_verdict(&c, Category::RequestRejected, None);
            assert_eq!(
                c.reason_code(),
                Some(ReasonCode::ContextLengthExceeded),
                "{marker} {status}"
            );
            assert_eq!(c.retry_after_s(), None, "G-31: no hint");
            assert_eq!(c.http_status(), Some(status));
            assert!(
                c.failure.message.starts_with(&format!(
                    "qwen_1: HTTP {status} (context_length_exceeded) | "
                )),
                "{}",
                c.failure.message
            );
        }
    }
}

#[test]
fn d14_g_20a_precedes_insufficient_quota() {
    let c = http(
        429,
        r#"{"error":{"type":"insufficient_quota","message":"prompt is too long"}}"#,
    );
    assert_eq!(c.category, Category::RequestRejected);
    assert_eq!(c.reason_code(), Some(ReasonCode::ContextLengthExceeded));
}

#[test]
fn d14_g_20a_ascii_letters_fold_other_bytes_exact() {
    assert!(contains_context_overflow_marker("CONTEXT_LENGTH_EXCEEDED"));
    assert!(contains_context_overflow_marker(
        "This model's Maximum Context Length is 4096"
    ));
    assert!(contains_context_overflow_marker(
        "PROMPT IS TOO LONG: 5 > 4"
    ));
    assert!(contains_context_overflow_marker(
        "Context Size Has Been Exceeded."
    ));
    assert!(
        !contains_context_overflow_marker("maximum  context length"),
        "two spaces"
    );
    assert!(!contains_context_overflow_marker("maximum_context_length"));
    assert!(!contains_context_overflow_marker("context-length-exceeded"));
    assert!(!contains_context_overflow_marker(
        "the context window is full"
    ));
    assert!(
        !contains_context_overflow_marker("prompt is too\u{a0}long"),
        "NBSP ≠ space"
    );
    // Non-ASCII letters never fold: the Kelvin sign K is not k.
    assert!(!contains_context_overflow_marker("\u{212a}"));
}

#[test]
fn d14_r_34_classification_reads_the_raw_body_not_the_scrubbed_one() {
    // Scrubbing would turn this into `<redacted>`; the raw body still carries the marker.
    let body = "error: sk-context_length_exceeded_abc";
    let c = http(500, body);
    assert_eq!(c.category, Category::RequestRejected);
    assert_eq!(c.failure.body_text.as_deref(), Some("error: <redacted>"));
    // The same for insufficient_quota hidden in a key-shaped token.
    let c = http(429, "key sk-insufficient_quota_1");
    assert_eq!(c.category, Category::SourceDead);
    assert_eq!(c.failure.body_text.as_deref(), Some("key <redacted>"));
}

#[test]
fn d14_marker_beyond_the_summary_cut_still_classifies() {
    let body = format!(
        "{} maximum context length {}",
        "a".repeat(3000),
        "b".repeat(3000)
    );
    let c = http(500, &body);
    assert_eq!(c.reason_code(), Some(ReasonCode::ContextLengthExceeded));
}

// ── G-16, G-26, G-27, R-34: messages and body_text ───────────────────────────────────────────

#[test]
fn g_16_message_templates() {
    assert_eq!(http(500, "").failure.message, "qwen_1: HTTP 500");
    assert_eq!(http(500, " \n ").failure.message, "qwen_1: HTTP 500");
    assert_eq!(http(500, "boom").failure.message, "qwen_1: HTTP 500 | boom");
    assert_eq!(http(429, "").failure.message, "qwen_1: rate limited: 429");
    assert_eq!(
        http(429, "insufficient_quota").failure.message,
        "qwen_1: insufficient_quota: 429 | insufficient_quota"
    );
    assert_eq!(compose("p".to_owned(), ""), "p");
    assert_eq!(compose("p".to_owned(), "s"), "p | s");
}

#[test]
fn g_27_http_failure_carries_summary_in_body_text_and_message() {
    let c = http(502, "<html>\n  <title>502 Bad Gateway</title>\n</html>");
    let summary = "<html> <title>502 Bad Gateway</title> </html>";
    assert_eq!(c.failure.body_text.as_deref(), Some(summary));
    assert_eq!(c.failure.message, format!("qwen_1: HTTP 502 | {summary}"));
    assert_eq!(c.failure.source_name.as_deref(), Some(SRC));
    assert_eq!(c.failure.operation, ErrorOperation::Chat);
    assert_eq!(c.failure.cause, None, "G-15: HTTP failures have no cause");
}

#[test]
fn g_11_operation_is_carried() {
    let c = classify_http(
        500,
        &[],
        "x",
        &ClassifyContext::new("e_1", ErrorOperation::Embedding, wall()),
    );
    assert_eq!(c.failure.operation, ErrorOperation::Embedding);
}

#[test]
fn r_34_key_bearer_and_ips_never_reach_message_or_body_text() {
    let scrub = ScrubOptions {
        source_key: Some("my-own-key-123"),
        redact_ips: true,
        source: None,
    };
    let cx = ctx().with_scrub(scrub);
    let body =
        "bad key my-own-key-123 from 198.51.100.7; header Bearer abc.def; other sk-abcdefghijkl";
    let c = classify_http(401, &[], body, &cx);
    let text = format!(
        "{} {}",
        c.failure.message,
        c.failure.body_text.as_deref().unwrap()
    );
    for secret in [
        "my-own-key-123",
        "198.51.100.7",
        "abc.def",
        "sk-abcdefghijkl",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(!format!("{cx:?}").contains("my-own-key-123"));
    // PGW_REDACT_IPS=false keeps the address, still scrubs the key.
    let cx = ctx().with_scrub(ScrubOptions {
        source_key: Some("my-own-key-123"),
        redact_ips: false,
        source: None,
    });
    let c = classify_http(401, &[], body, &cx);
    assert!(c.failure.message.contains("198.51.100.7"));
    assert!(!c.failure.message.contains("my-own-key-123"));
}

// ── G-20b / D15 / D18: in-band error frames ──────────────────────────────────────────────────

fn frame(error: Value) -> Classification {
    classify_error_value(&error, &ctx())
}

#[track_caller]
fn assert_frame(c: &Classification, category: Category, code: Option<ReasonCode>) {
    assert_eq!(c.category, category, "{c:?}");
    assert_eq!(c.reason_code(), code, "{c:?}");
    assert_eq!(c.http_status(), None, "G-20b: status was 200");
    assert_eq!(c.retry_after_s(), None, "G-31: a frame has no headers");
    assert_eq!(c.failure.cause, None);
}

#[test]
fn g_20b_row_1_context_overflow_marker() {
    // Wire case 019: llama.cpp exceed_context_size_error inside a 200 stream.
    let c = frame(
        json!({"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}),
    );
    assert_frame(
        &c,
        Category::RequestRejected,
        Some(ReasonCode::ContextLengthExceeded),
    );
    assert_eq!(c.failure_reason, None);
    assert!(
        c.failure.message.starts_with(
            "qwen_1: upstream chat error frame (context_length_exceeded) | {\"error\":"
        )
    );
    // A marker wins over an in-band 429.
    let c = frame(json!({"code":429,"message":"prompt is too long"}));
    assert_eq!(c.category, Category::RequestRejected);
}

#[test]
fn g_20b_row_2_in_band_429_insufficient_quota_is_source_dead() {
    let c = frame(json!({"code":429,"type":"insufficient_quota","message":"quota"}));
    assert_frame(&c, Category::SourceDead, None);
    assert_eq!(c.failure_reason, Some(FailureReason::SourceDead));
    assert!(
        c.failure
            .message
            .starts_with("qwen_1: upstream chat error frame | ")
    );
    // Without a 429, insufficient_quota alone is row 5.
    let c = frame(json!({"type":"insufficient_quota"}));
    assert_frame(
        &c,
        Category::Transient,
        Some(ReasonCode::UpstreamErrorFrame),
    );
}

#[test]
fn g_20b_row_3_in_band_429_is_rate_limited() {
    // Wire case 018 B (OpenRouter numeric code).
    let c = frame(
        json!({"code":429,"message":"Upstream rate limit exceeded","metadata":{"error_type":"rate_limit_exceeded"}}),
    );
    assert_frame(&c, Category::Transient, Some(ReasonCode::RateLimited));
    assert_eq!(c.failure_reason, Some(FailureReason::RateLimited));
    assert!(c.is_rate_limited());
    assert!(
        c.failure
            .message
            .starts_with("qwen_1: upstream chat error frame (rate_limited) | ")
    );
    // Azure / LiteLLM string status, and `status` when `code` is not numeric.
    for error in [
        json!({"code":"429","message":"x"}),
        json!({"code":"rate_limit","status":429}),
        json!({"code":true,"status":"429"}),
        json!({"code":1000,"status":429}),
    ] {
        let c = frame(error.clone());
        assert_frame(&c, Category::Transient, Some(ReasonCode::RateLimited));
    }
}

#[test]
fn g_20b_row_4_in_band_401_403_are_source_dead() {
    for code in [401, 403] {
        let c = frame(json!({"code":code,"message":"invalid api key"}));
        assert_frame(&c, Category::SourceDead, None);
        assert_eq!(c.failure_reason, Some(FailureReason::SourceDead));
    }
    let c = frame(json!({"status":"403"}));
    assert_eq!(c.category, Category::SourceDead);
}

#[test]
fn g_20b_row_5_everything_else_is_upstream_error_frame() {
    for error in [
        // Wire case 018 A and C; CF-241 string code.
        json!({"code":"server_error","message":"Provider disconnected unexpectedly"}),
        json!({"message":"the server had an error processing your request"}),
        json!({"code":"upstream_stream_read_error"}),
        // HTTP rows are not applied to frames: 400, 404, 500 stay row 5.
        json!({"code":400,"message":"bad"}),
        json!({"code":404}),
        json!({"code":500}),
        json!({"code":503}),
        // Not in-band statuses.
        json!({"code":429.0}),
        json!({"code":"4290"}),
        json!({"code":" 429"}),
        json!({"code":true}),
        json!({"code":-429}),
        json!({"code":99999}),
        json!({"status":[429]}),
        // CF-238 / CF-239: null, {} and non-object values.
        Value::Null,
        json!({}),
        json!("rate limited"),
        json!(429),
        json!([{"code":429}]),
    ] {
        let c = frame(error.clone());
        assert_frame(
            &c,
            Category::Transient,
            Some(ReasonCode::UpstreamErrorFrame),
        );
        assert_eq!(
            c.failure_reason,
            Some(FailureReason::NetworkError),
            "{error}"
        );
        assert!(
            c.failure
                .message
                .starts_with("qwen_1: upstream chat error frame")
        );
        assert!(
            !c.failure.message.contains("frame ("),
            "{}",
            c.failure.message
        );
    }
}

#[test]
fn g_20b_cf_238_null_error_frame_text_and_body_text() {
    let c = frame(Value::Null);
    assert_eq!(c.failure.body_text.as_deref(), Some(r#"{"error":null}"#));
    assert_eq!(
        c.failure.message,
        r#"qwen_1: upstream chat error frame | {"error":null}"#
    );
    let c = frame(json!({"code":"x","message":"a  b"}));
    assert_eq!(
        c.failure.body_text.as_deref(),
        Some(r#"{"error":{"code":"x","message":"a b"}}"#),
        "compact JSON of {{\"error\": value}}, key order kept, summarized"
    );
}

#[test]
fn g_20b_d18_error_events() {
    // SSE `event: error` / D18 `error:` field / non-SSE JSON line: the data is the frame text.
    let c = classify_error_event(r#"{"error":{"code":429,"message":"slow"}}"#, &ctx());
    assert_frame(&c, Category::Transient, Some(ReasonCode::RateLimited));
    assert_eq!(
        c.failure.body_text.as_deref(),
        Some(r#"{"error":{"code":429,"message":"slow"}}"#)
    );
    let c = classify_error_event(r#"{"error":{"code":401}}"#, &ctx());
    assert_eq!(c.category, Category::SourceDead);
    // Data that is not JSON, or whose `error` is not an object: no error object → row 5.
    let c = classify_error_event("upstream exploded", &ctx());
    assert_frame(
        &c,
        Category::Transient,
        Some(ReasonCode::UpstreamErrorFrame),
    );
    assert_eq!(c.failure.body_text.as_deref(), Some("upstream exploded"));
    let c = classify_error_event(r#"{"code":429}"#, &ctx());
    assert_frame(
        &c,
        Category::Transient,
        Some(ReasonCode::UpstreamErrorFrame),
    );
    let c = classify_error_event(r#"{"error":"429"}"#, &ctx());
    assert_frame(
        &c,
        Category::Transient,
        Some(ReasonCode::UpstreamErrorFrame),
    );
    // The D14 marker list applies to the raw data even when it is not JSON.
    let c = classify_error_event("Context size has been exceeded.", &ctx());
    assert_frame(
        &c,
        Category::RequestRejected,
        Some(ReasonCode::ContextLengthExceeded),
    );
}

#[test]
fn g_20b_in_band_status_extraction() {
    let obj = |v: Value| v.as_object().cloned().unwrap();
    assert_eq!(in_band_status(&obj(json!({"code":429}))), Some(429));
    assert_eq!(in_band_status(&obj(json!({"code":"503"}))), Some(503));
    assert_eq!(in_band_status(&obj(json!({"status":100}))), Some(100));
    assert_eq!(in_band_status(&obj(json!({"status":599}))), Some(599));
    assert_eq!(in_band_status(&obj(json!({"status":600}))), None);
    assert_eq!(in_band_status(&obj(json!({"status":99}))), None);
    assert_eq!(in_band_status(&obj(json!({"code":"099"}))), None);
    assert_eq!(
        in_band_status(&obj(json!({"code":401,"status":429}))),
        Some(401),
        "code first"
    );
    assert_eq!(
        in_band_status(&obj(json!({"code":"x","status":"403"}))),
        Some(403)
    );
    assert_eq!(
        in_band_status(&obj(json!({"code":"٤٢٩"}))),
        None,
        "ASCII digits only"
    );
    assert_eq!(in_band_status(&obj(json!({}))), None);
}

#[test]
fn g_20b_r_34_frame_summary_is_scrubbed() {
    let c = frame(json!({"message":"key sk-live-abcdefgh1234 from 10.2.3.4 rejected"}));
    let body = c.failure.body_text.unwrap();
    assert!(
        !body.contains("sk-live") && !body.contains("10.2.3.4"),
        "{body}"
    );
}

// ── G-21 / G-15: transport faults ────────────────────────────────────────────────────────────

#[test]
fn g_21_g_15_network_fault_kinds() {
    use NetworkFaultKind as K;
    let rows = [
        (
            K::ConnectTimeout,
            CauseKind::ConnectTimeout,
            FailureReason::Timeout,
        ),
        (
            K::PoolTimeout,
            CauseKind::PoolTimeout,
            FailureReason::Timeout,
        ),
        (
            K::ReadTimeout,
            CauseKind::ReadTimeout,
            FailureReason::Timeout,
        ),
        (
            K::WriteTimeout,
            CauseKind::WriteTimeout,
            FailureReason::Timeout,
        ),
        (
            K::Connect,
            CauseKind::ConnectError,
            FailureReason::NetworkError,
        ),
        (K::Tls, CauseKind::ConnectError, FailureReason::NetworkError),
        (K::Write, CauseKind::WriteError, FailureReason::NetworkError),
        (K::Read, CauseKind::ReadError, FailureReason::NetworkError),
        (
            K::Protocol,
            CauseKind::RemoteProtocolError,
            FailureReason::NetworkError,
        ),
        (
            K::Other,
            CauseKind::NetworkError,
            FailureReason::NetworkError,
        ),
    ];
    for (kind, cause, reason) in rows {
        let c = classify_network_fault(&NetworkFault::new(kind, "boom"), &ctx());
        assert_verdict(&c, Category::Transient, Some(reason));
        assert_eq!(c.failure.cause, Some(cause), "{kind:?}");
        assert_eq!(c.reason_code(), None);
        assert_eq!(c.http_status(), None);
        assert_eq!(
            c.failure.message,
            format!("qwen_1: network error ({cause}): boom")
        );
        let via_wire = classify_wire_failure(
            &WireFailure::Network(NetworkFault::new(kind, "boom")),
            &ctx(),
        );
        assert_eq!(via_wire, c);
    }
}

#[test]
fn g_16_network_message_empty_detail_falls_back_to_cause_and_is_scrubbed() {
    let c = classify_network_fault(
        &NetworkFault::new(NetworkFaultKind::ConnectTimeout, ""),
        &ctx(),
    );
    assert_eq!(
        c.failure.message,
        "qwen_1: network error (ConnectTimeout): ConnectTimeout"
    );
    let c = classify_network_fault(
        &NetworkFault::new(NetworkFaultKind::Connect, "refused by 192.0.2.10:443"),
        &ctx(),
    );
    assert_eq!(
        c.failure.message,
        "qwen_1: network error (ConnectError): refused by <redacted>:443"
    );
}

#[test]
fn g_21_read_error_after_200() {
    let fault = NetworkFault::new(NetworkFaultKind::Read, "connection reset");
    let c = classify_read_error(&fault, &ctx());
    assert_verdict(&c, Category::Transient, Some(FailureReason::NetworkError));
    assert_eq!(c.reason_code(), Some(ReasonCode::ReadError));
    assert_eq!(c.failure.cause, Some(CauseKind::ReadError));
    let c = classify_read_error(
        &NetworkFault::new(NetworkFaultKind::Protocol, "incomplete chunked body"),
        &ctx(),
    );
    assert_eq!(c.failure.cause, Some(CauseKind::RemoteProtocolError));
    let via_wire = classify_wire_failure(&WireFailure::ReadError(fault), &ctx());
    assert_eq!(via_wire.reason_code(), Some(ReasonCode::ReadError));
}

// covers: S-91
#[test]
fn g_21_watchdog_expiry_is_liveness_timeout() {
    for (kind, token) in [
        (LivenessKind::Ttft, "ttft"),
        (LivenessKind::InterToken, "inter_token"),
        (LivenessKind::Total, "total"),
    ] {
        let c = classify_liveness_timeout(kind, &ctx());
        assert_verdict(&c, Category::Transient, Some(FailureReason::Timeout));
        assert_eq!(c.reason_code(), Some(ReasonCode::LivenessTimeout));
        assert_eq!(c.failure.cause, Some(CauseKind::StreamLivenessTimeout));
        assert_eq!(
            c.failure.message,
            format!("qwen_1: stream liveness timeout ({token})")
        );
    }
}

// covers: G-24, V-53
#[test]
fn g_21_g_22_frame_too_large_and_unsupported() {
    let c = classify_wire_failure(&WireFailure::FrameTooLarge { limit: 16_777_216 }, &ctx());
    assert_verdict(&c, Category::ResultInvalid, None);
    assert_eq!(c.reason_code(), Some(ReasonCode::ResponseTooLarge));
    let e = c.into_error();
    assert!(matches!(e, AttemptError::ResultInvalid(_)));
    assert_eq!(e.reason_code(), Some(ReasonCode::ResponseTooLarge));

    let c = classify_wire_failure(&WireFailure::Unsupported { what: "n > 1" }, &ctx());
    assert_verdict(&c, Category::RequestRejected, None);
    assert_eq!(c.reason_code(), None);
    assert!(c.failure.message.contains("n > 1"));
}

#[test]
fn g_18_wire_http_dispatches_to_the_status_table() {
    let failure = WireFailure::Http {
        status: 429,
        headers: h(&[("retry-after-ms", "1500")]),
        body: "{}".to_owned(),
    };
    let c = classify_wire_failure(&failure, &ctx());
    assert_verdict(&c, Category::Transient, Some(FailureReason::RateLimited));
    assert_eq!(c.retry_after_s(), Some(1.5));
}

// ── G-30: failure reason, and the GatewayError built from a classification ───────────────────

#[test]
fn g_30_failure_reason_rules() {
    let mut f = AttemptFailure::new("m", ErrorOperation::Chat);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::NetworkError)
    );
    f.http_status = Some(504);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::Timeout)
    );
    f.http_status = Some(408);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::Timeout)
    );
    f.http_status = Some(429);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::RateLimited)
    );
    f.http_status = None;
    f.reason_code = Some(ReasonCode::RateLimited);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::RateLimited)
    );
    f.reason_code = Some(ReasonCode::MissingDone);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::BadResponse),
        "README D27: a malformed answer is bad_response"
    );
    f.cause = Some(CauseKind::StreamLivenessTimeout);
    assert_eq!(
        failure_reason(Category::Transient, &f),
        Some(FailureReason::Timeout)
    );
    assert_eq!(
        failure_reason(Category::SourceDead, &f),
        Some(FailureReason::SourceDead)
    );
    assert_eq!(failure_reason(Category::RequestRejected, &f), None);
    assert_eq!(failure_reason(Category::ResultInvalid, &f), None);
}

#[test]
fn g_30_failure_reason_of_errors_matches_the_classification() {
    for c in [
        http(429, ""),
        http(503, ""),
        http(504, ""),
        http(401, ""),
        http(400, ""),
        frame(json!({"code":429})),
    ] {
        let reason = c.failure_reason;
        let e = c.into_error();
        assert_eq!(failure_reason_of(&e), reason, "{e:?}");
    }
}

#[test]
fn g_2_into_error_keeps_the_payload() {
    let c = http_hinted(429, "2.5", "slow");
    let e: AttemptError = c.clone().into();
    assert_eq!(e.category(), Category::Transient);
    assert_eq!(e.type_name(), "TransientError");
    assert_eq!(e.http_status(), Some(429));
    assert_eq!(e.failure(), &c.failure);
    assert_eq!(
        e.retry_after_s(),
        Some(2.5),
        "the attempt keeps the server hint"
    );
    assert_eq!(e.to_string(), "qwen_1: rate limited: 429 | slow");
}

// ── invariants ───────────────────────────────────────────────────────────────────────────────

proptest! {
    /// G-18, G-29: any status, headers and body → no panic; the verdict is deterministic;
    /// hints only on Transient failures (README D23); the summary is bounded.
    // covers: G-1
    #[test]
    fn g_29_classify_http_total_and_deterministic(
        status in any::<u16>(),
        body in "\\PC{0,400}",
        ra in ".{0,30}",
    ) {
        let headers = vec![("retry-after".to_owned(), ra)];
        let a = classify_http(status, &headers, &body, &ctx());
        let b = classify_http(status, &headers, &body, &ctx());
        prop_assert_eq!(&a, &b);
        if a.retry_after_s().is_some() {
            prop_assert_eq!(a.category, Category::Transient);
            // README D23: a deferral on any non-2xx but 400/401/403/404.
            prop_assert!(!(200..=299).contains(&status) && !matches!(status, 400 | 401 | 403 | 404));
        }
        prop_assert!(a.failure.body_text.as_ref().unwrap().chars().count() <= SUMMARY_MAX_CHARS);
        prop_assert_eq!(a.failure_reason.is_some(), matches!(a.category, Category::Transient | Category::SourceDead));
    }

    /// D14: a marker anywhere in any non-200 body makes it RequestRejected.
    #[test]
    fn d14_marker_anywhere_wins(status in any::<u16>(), pre in "\\PC{0,200}", post in "\\PC{0,200}", idx in 0usize..6, upper in any::<bool>()) {
        let marker = CONTEXT_OVERFLOW_MARKERS[idx];
        let marker = if upper { marker.to_ascii_uppercase() } else { marker.to_owned() };
        let c = http(status, &format!("{pre}{marker}{post}"));
        prop_assert_eq!(c.category, Category::RequestRejected);
        prop_assert_eq!(c.reason_code(), Some(ReasonCode::ContextLengthExceeded));
    }

    /// G-20b: any error event data → no panic; http_status and hint always None.
    // covers: G-1
    #[test]
    fn g_20b_error_event_total(data in "\\PC{0,300}") {
        let c = classify_error_event(&data, &ctx());
        prop_assert_eq!(c.http_status(), None);
        prop_assert_eq!(c.retry_after_s(), None);
        prop_assert!(c.reason_code().is_some() || c.category == Category::SourceDead);
    }
}
