//! Failures a transport returns from `send`, and the HTTP status table with the body facts
//! that change a category (context overflow, quota, model missing, capacity) and the retry
//! hint rules (README D23).

use gateway_ports::{Category, ReasonCode, WireFailure};

use crate::redact::scrubbed_summary;
use crate::retry_after::parse_retry_hint;

use super::classification::{Classification, ClassifyContext, base_failure, compose};
use super::fault::{classify_frame_too_large, classify_network_fault, classify_read_error};
use super::markers::{
    CAPACITY_MARKERS, MODEL_MISSING_MARKERS, contains_context_overflow_marker, contains_marker,
    is_insufficient_quota,
};

/// Classifies any failure a transport returns from `send`.
///
/// - `Http` → [`classify_http`];
/// - `Network` (before a status line) → [`classify_network_fault`];
/// - `ReadError` (a 200 body that broke) → [`classify_read_error`];
/// - `FrameTooLarge` → `ResultInvalid(response_too_large)`;
/// - `Unsupported` → `RequestRejected` with no reason code.
pub fn classify_wire_failure(failure: &WireFailure, ctx: &ClassifyContext<'_>) -> Classification {
    match failure {
        WireFailure::Http {
            status,
            headers,
            body,
        } => classify_http(*status, headers, body, ctx),
        WireFailure::Network(fault) => classify_network_fault(fault, ctx),
        WireFailure::ReadError(fault) => classify_read_error(fault, ctx),
        WireFailure::FrameTooLarge { limit } => classify_frame_too_large(*limit, ctx),
        WireFailure::Unsupported { what } => {
            let failure = base_failure(
                ctx,
                format!(
                    "{}: transport cannot serve this request: {what}",
                    ctx.source_name
                ),
            );
            Classification::new(Category::RequestRejected, failure)
        }
    }
}

/// Classifies an HTTP response whose status is not 200.
///
/// `headers` are the response headers (names lower-cased); `raw_body` is the body as retained
/// by the adapter (up to `max_error_body_bytes`), never a summary — typing decisions read it.
///
/// Order: a context-overflow marker in the raw body (any status) → `RequestRejected`
/// `context_length_exceeded`; then the status table: 400 → `RequestRejected`; 401/403 →
/// `SourceDead`; 429 with `insufficient_quota` → `SourceDead` (no hint parsed, no warning);
/// other 429 → `Transient` `rate_limited` with the retry hint; 400/404/422 with a model-missing
/// marker → `SourceDead`; 400/409 with a capacity marker → `Transient` with the hint;
/// then any status but 400/401/403/404 that carries a usable hint is a
/// `Transient` deferral with that hint; 5xx → `Transient` (503, 522, 524 with
/// the hint; 504 `timeout`); 408/425 → `Transient`; 402/404/405/501/505/3xx → `SourceDead`;
/// other 4xx → `RequestRejected`; other values → `Transient`.
///
/// The failure carries `http_status`, `body_text` = the scrubbed summary and the
/// message `"{source}: HTTP {status} | {summary}"` (or its 429 / context-overflow form).
pub fn classify_http(
    status: u16,
    headers: &[(String, String)],
    raw_body: &str,
    ctx: &ClassifyContext<'_>,
) -> Classification {
    let source = ctx.source_name;
    let summary = scrubbed_summary(raw_body, &ctx.scrub);

    let (category, reason_code, parse_hint, prefix) = if contains_context_overflow_marker(raw_body)
    {
        (
            Category::RequestRejected,
            Some(ReasonCode::ContextLengthExceeded),
            false,
            format!("{source}: HTTP {status} (context_length_exceeded)"),
        )
    } else if status == 429 && is_insufficient_quota(raw_body) {
        (
            Category::SourceDead,
            None,
            false,
            format!("{source}: insufficient_quota: 429"),
        )
    } else if status == 429 {
        (
            Category::Transient,
            None,
            true,
            format!("{source}: rate limited: 429"),
        )
    } else if matches!(status, 400 | 404 | 422) && contains_marker(raw_body, &MODEL_MISSING_MARKERS)
    {
        (
            Category::SourceDead,
            None,
            false,
            format!("{source}: HTTP {status} (model not found on this source)"),
        )
    } else if matches!(status, 400 | 409) && contains_marker(raw_body, &CAPACITY_MARKERS) {
        (
            Category::Transient,
            None,
            true,
            format!("{source}: HTTP {status} (model overloaded)"),
        )
    } else {
        let (category, parse_hint) = status_row(status);
        (
            category,
            None,
            parse_hint || may_defer(status),
            format!("{source}: HTTP {status}"),
        )
    };

    let hint = if parse_hint {
        parse_retry_hint(headers, raw_body, source, ctx.wall_now)
    } else {
        None
    };
    // README D23: a usable hint on a status that may defer makes the failure a deferral.
    let category = if hint.is_some() {
        Category::Transient
    } else {
        category
    };
    let mut failure = base_failure(ctx, compose(prefix, &summary));
    failure.http_status = Some(status);
    failure.reason_code = reason_code;
    failure.retry_after_s = hint;
    failure.body_text = Some(summary);
    Classification::new(category, failure)
}

/// `true` when a usable hint on `status` makes it a deferral: every non-2xx
/// status except 400, 401, 403 and 404.
fn may_defer(status: u16) -> bool {
    !(200..=299).contains(&status) && !matches!(status, 400 | 401 | 403 | 404)
}

/// The category of a status without body facts, and whether a Retry-After hint is parsed
/// (30 G-19 rows after the first; 429 is handled by the caller).
fn status_row(status: u16) -> (Category, bool) {
    match status / 100 {
        4 => match status {
            // 401, 403 credentials; 402 billing; 404, 405 endpoint or model missing.
            401..=405 => (Category::SourceDead, false),
            408 | 425 | 429 => (Category::Transient, false),
            // 400 and every other client error: not retried (no retry amplification).
            _ => (Category::RequestRejected, false),
        },
        5 => match status {
            501 | 505 => (Category::SourceDead, false),
            503 | 522 | 524 => (Category::Transient, true),
            _ => (Category::Transient, false),
        },
        // Redirects are not followed: a misconfigured `base_url`.
        3 => (Category::SourceDead, false),
        // 2xx other than 200, and anything below 200 or from 600 on.
        _ => (Category::Transient, false),
    }
}
