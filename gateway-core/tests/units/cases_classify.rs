//! Public wire cases 030, 031, 032, 034, 035 (`../shared/cases`, bytes copied in) through the
//! classifier, Retry-After and backoff. Where a case's "Expected" section differs from the
//! specification, the test pins the specification and says why (05 R-60).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_core::backoff::{RetryPolicy, backoff_delay};
use gateway_core::classify::{Classification, ClassifyContext, classify_wire_failure};
use gateway_core::retry_after::hint_exceeds_cap;
use gateway_ports::{Category, ErrorOperation, FailureReason, ReasonCode, WireFailure};

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), (*v).to_owned()))
        .collect()
}

fn classify_at(
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
    operation: ErrorOperation,
    wall_now: SystemTime,
) -> Classification {
    let failure = WireFailure::Http {
        status,
        headers: h(headers),
        body: body.to_owned(),
    };
    classify_wire_failure(
        &failure,
        &ClassifyContext::new("azure_1", operation, wall_now),
    )
}

fn classify(status: u16, headers: &[(&str, &str)], body: &str) -> Classification {
    // 2026-01-01T00:00:00Z; only HTTP-date hints read it.
    let wall = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    classify_at(status, headers, body, ErrorOperation::Chat, wall)
}

#[track_caller]
fn assert_rate_limited(c: &Classification) {
    assert_eq!(c.category, Category::Transient, "{c:?}");
    assert_eq!(c.failure_reason, Some(FailureReason::RateLimited));
    assert!(c.is_rate_limited());
    assert_eq!(c.http_status(), Some(429));
}

#[expect(clippy::unwrap_used, reason = "test helper on constant inputs")]
fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap()
}

// ── 030: 429 with Retry-After in seconds (Azure OpenAI) ──────────────────────────────────────

const CASE_030_BODY_33: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 33 seconds."}}"#;
const CASE_030_BODY_2: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 2 seconds."}}"#;
const CASE_030_BODY_45: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 45 seconds."}}"#;

#[test]
fn case_030_a_retry_after_seconds_ms_header_preferred() {
    let c = classify(
        429,
        &[
            ("Content-Type", "application/json"),
            ("Retry-After", "33"),
            ("retry-after-ms", "33000"),
            ("x-ratelimit-remaining-requests", "79"),
            ("x-ratelimit-remaining-tokens", "0"),
        ],
        CASE_030_BODY_33,
    );
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), Some(33.0));
    // D3: the next attempt waits at least the hint (never clamped by backoff_max_s = 10).
    let d = backoff_delay(&RetryPolicy::default(), 1, c.retry_after_s(), || 0.5);
    assert_eq!(d, secs(33.0));
}

#[test]
fn case_030_a_ms_header_wins_when_they_disagree() {
    let c = classify(
        429,
        &[("Retry-After", "33"), ("retry-after-ms", "12500")],
        CASE_030_BODY_33,
    );
    assert_eq!(c.retry_after_s(), Some(12.5));
}

#[test]
fn case_030_b_fractional_ms_header_only() {
    let c = classify(
        429,
        &[
            ("Content-Type", "application/json"),
            ("retry-after-ms", "1500"),
        ],
        CASE_030_BODY_2,
    );
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), Some(1.5));
}

#[test]
fn case_030_c_no_header_no_phrase_search_backoff_applies() {
    // The case expects "retry after 45 seconds" parsed from the message; the spec does not
    // search bodies for hints (30 G-19 "no other phrase", 05 R-60 "030 C"): no hint, so the
    // ordinary exponential backoff with jitter applies.
    let c = classify(
        429,
        &[("Content-Type", "application/json")],
        CASE_030_BODY_45,
    );
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), None);
    let p = RetryPolicy::default();
    assert_eq!(backoff_delay(&p, 1, c.retry_after_s(), || 0.5), secs(1.0));
    assert_eq!(backoff_delay(&p, 2, c.retry_after_s(), || 0.5), secs(2.0));
    // The message carries the (scrubbed) body summary, so the phrase is still visible.
    assert!(
        c.failure
            .message
            .starts_with("azure_1: rate limited: 429 | {\"error\"")
    );
    assert!(c.failure.message.contains("Please retry after 45 seconds."));
}

// ── 031: Retry-After as an HTTP-date ─────────────────────────────────────────────────────────

const CASE_031_BODY: &str = r#"{"error":{"message":"Rate limit reached for requests. Please slow down.","type":"rate_limit_error","code":"rate_limit_exceeded"}}"#;
const CASE_031_DATE: &str = "Wed, 21 Oct 2015 07:27:00 GMT";

/// 2015-10-21T07:27:00Z plus `offset_ms`.
fn oct_21_2015_0727(offset_ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_445_412_420) + Duration::from_millis(offset_ms)
}

fn case_031(retry_after: &str, wall_now: SystemTime) -> Classification {
    classify_at(
        429,
        &[
            ("Date", CASE_031_DATE),
            ("Retry-After", retry_after),
            ("Content-Type", "application/json"),
        ],
        CASE_031_BODY,
        ErrorOperation::Chat,
        wall_now,
    )
}

#[test]
fn case_031_a_http_date_relative_to_the_local_clock() {
    // Local clock equal to the response's Date: 60 s.
    let c = case_031("Wed, 21 Oct 2015 07:28:00 GMT", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), Some(60.0));
    // The case computes against the `Date` header and rounds up; the spec uses the local clock
    // (05 R-60 "031") and the exact difference (30 G-32 step 3): 30 s later → 30 s, not 60.
    let c = case_031("Wed, 21 Oct 2015 07:28:00 GMT", oct_21_2015_0727(30_000));
    assert_eq!(c.retry_after_s(), Some(30.0));
    let c = case_031("Wed, 21 Oct 2015 07:28:00 GMT", oct_21_2015_0727(250));
    assert_eq!(c.retry_after_s(), Some(59.75));
    // A local clock past the date (the present day) → no hint, silently; still rate-limited.
    let today = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let c = case_031("Wed, 21 Oct 2015 07:28:00 GMT", today);
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), None);
}

#[test]
fn case_031_b_date_before_now_is_no_hint() {
    // The case says "0 s, still subject to backoff floor": no hint means exactly that — the
    // ordinary backoff applies (30 G-32: a past date → None).
    let c = case_031("Wed, 21 Oct 2015 07:26:00 GMT", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), None);
    let d = backoff_delay(&RetryPolicy::default(), 1, c.retry_after_s(), || 0.0);
    assert_eq!(d, secs(0.5));
}

#[test]
fn case_031_c_unparseable_is_ignored() {
    let c = case_031("soon", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), None);
}

#[test]
fn case_031_d_decimal_seconds() {
    let c = case_031("1.5", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), Some(1.5));
}

#[test]
fn case_031_e_negative_is_ignored() {
    let c = case_031("-5", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), None);
}

#[test]
fn case_031_f_rfc_850_date() {
    let c = case_031("Wednesday, 21-Oct-15 07:28:00 GMT", oct_21_2015_0727(0));
    assert_rate_limited(&c);
    assert_eq!(c.retry_after_s(), Some(60.0));
}

// ── 032: a 429 asking for 86400 s ────────────────────────────────────────────────────────────

const CASE_032_BODY: &str = r#"{"error":{"code":"429","message":"Requests to the Embeddings_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds."}}"#;

#[test]
fn case_032_huge_retry_after_is_not_clamped() {
    let wall = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    let c = classify_at(
        429,
        &[
            ("Content-Type", "application/json"),
            ("Retry-After", "86400"),
        ],
        CASE_032_BODY,
        ErrorOperation::Embedding,
        wall,
    );
    assert_rate_limited(&c);
    assert_eq!(c.failure.operation, ErrorOperation::Embedding);
    // Seconds, never milliseconds; reported as is.
    assert_eq!(c.retry_after_s(), Some(86400.0));
    // The case wants a configured maximum wait to fail fast. The spec: never clamped by
    // backoff_max_s (30 G-35); slept in full unless the call deadline or the optional
    // RETRY__MAX_HINT_S bounds it (05 R-35, R-60 "032").
    let p = RetryPolicy::default();
    assert_eq!(
        backoff_delay(&p, 1, c.retry_after_s(), || 0.99),
        secs(86400.0)
    );
    assert!(!hint_exceeds_cap(86400.0, p.max_hint_s), "unset: no cap");
    let capped = RetryPolicy {
        max_hint_s: Some(120.0),
        ..p
    };
    assert!(
        hint_exceeds_cap(86400.0, capped.max_hint_s),
        "with RETRY__MAX_HINT_S=120 the call fails at once carrying retry_after_s = 86400"
    );
}

// ── 034: HTML error pages on 5xx (Cloudflare 520, nginx 502) ─────────────────────────────────

const CASE_034_A_BODY: &str = r#"<!DOCTYPE html>
<html lang="en-US"><head><title>api.example.com | 520: Web server is returning an unknown error</title></head>
<body><div id="cf-error-details"><h1>Web server is returning an unknown error</h1><span>Error code 520</span>
<p>Cloudflare Ray ID: <RAY_ID> &bull; Your IP: <CLIENT_IP> &bull; Performance &amp; security by Cloudflare</p></div></body></html>
"#;

const CASE_034_B_BODY: &str = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";

#[test]
fn case_034_a_cloudflare_520_html_is_transient() {
    let c = classify(
        520,
        &[
            ("Content-Type", "text/html; charset=UTF-8"),
            ("Server", "cloudflare"),
            ("CF-RAY", "<RAY_ID>"),
        ],
        CASE_034_A_BODY,
    );
    assert_eq!(c.category, Category::Transient);
    assert_eq!(c.failure_reason, Some(FailureReason::NetworkError));
    assert_eq!(c.http_status(), Some(520));
    assert_eq!(c.retry_after_s(), None);
    // The summary is the whole page collapsed to one line (30 G-26), not the case's
    // "status + <title>" excerpt: the spec keeps head and tail of the body.
    let body_text = c.failure.body_text.clone().unwrap_or_default();
    assert!(!body_text.contains('\n'));
    assert!(
        body_text.starts_with(
            "<!DOCTYPE html> <html lang=\"en-US\"><head><title>api.example.com | 520:"
        )
    );
    assert!(body_text.ends_with("</p></div></body></html>"));
    assert_eq!(
        c.failure.message,
        format!("azure_1: HTTP 520 | {body_text}")
    );
}

#[test]
fn case_034_a_client_ip_is_redacted() {
    // The case's placeholders stand for a real address: put one in and check R-34 removes it.
    let body = CASE_034_A_BODY
        .replace("<CLIENT_IP>", "203.0.113.77")
        .replace("<RAY_ID>", "8c3f1b2a9d4e5f60-FRA");
    let c = classify(520, &[("Content-Type", "text/html")], &body);
    assert_eq!(c.category, Category::Transient);
    let text = format!(
        "{} {}",
        c.failure.message,
        c.failure.body_text.unwrap_or_default()
    );
    assert!(!text.contains("203.0.113.77"), "{text}");
    assert!(text.contains("Your IP: <redacted> &bull;"));
    let c = classify(
        520,
        &[],
        &format!("{body} from 2001:db8:85a3::8a2e:370:7334"),
    );
    assert!(!c.failure.message.contains("2001:db8"), "IPv6 too");
}

#[test]
fn case_034_b_nginx_502_html_is_transient() {
    let c = classify(
        502,
        &[
            ("Content-Type", "text/html"),
            ("Content-Length", "150"),
            ("Server", "nginx"),
        ],
        CASE_034_B_BODY,
    );
    assert_eq!(c.category, Category::Transient);
    assert_eq!(c.failure_reason, Some(FailureReason::NetworkError));
    assert_eq!(
        c.failure.body_text.as_deref(),
        Some(
            "<html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>502 Bad Gateway</h1></center> <hr><center>nginx</center> </body> </html>"
        )
    );
}

// ── 035: context length exceeded, whatever the status ────────────────────────────────────────

#[track_caller]
fn assert_context_overflow(status: u16, body: &str) {
    let c = classify(status, &[("Content-Type", "application/json")], body);
    assert_eq!(c.category, Category::RequestRejected, "{c:?}");
    assert_eq!(c.reason_code(), Some(ReasonCode::ContextLengthExceeded));
    assert_eq!(
        c.failure_reason, None,
        "fatal: no breaker failure, no retry"
    );
    assert_eq!(c.http_status(), Some(status));
    assert!(
        c.failure.message.starts_with(&format!(
            "azure_1: HTTP {status} (context_length_exceeded) | "
        )),
        "{}",
        c.failure.message
    );
    let e = c.into_error();
    assert_eq!(e.type_name(), "RequestRejectedError");
    assert_eq!(e.reason_code(), Some(ReasonCode::ContextLengthExceeded));
}

#[test]
fn case_035_a_vllm_400() {
    assert_context_overflow(
        400,
        r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
    );
}

#[test]
fn case_035_b_llama_cpp_500_wins_over_5xx() {
    assert_context_overflow(
        500,
        r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
    );
}

#[test]
fn case_035_c_llama_cpp_400() {
    assert_context_overflow(
        400,
        r#"{"error":{"code":400,"message":"request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4390,"n_ctx":4096}}"#,
    );
}

#[test]
fn case_035_d_openai_400() {
    assert_context_overflow(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
}

#[test]
fn case_035_e_openrouter_400() {
    assert_context_overflow(
        400,
        r#"{"error":{"code":400,"message":"prompt is too long: 1284668 tokens > 1000000 maximum"}}"#,
    );
}
