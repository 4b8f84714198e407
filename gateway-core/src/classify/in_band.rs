//! In-band error objects of a 200 stream or body (G-20b): error events, `error` keys and the
//! in-band status.

use gateway_ports::{Category, ReasonCode};
use serde_json::{Map, Value};

use crate::redact::scrubbed_summary;

use super::classification::{Classification, ClassifyContext, base_failure, compose};
use super::markers::{contains_context_overflow_marker, is_insufficient_quota};

/// Classifies a chunk or 200 non-stream body with a top-level `error` key, whatever its value
/// (`null` and `{}` included): an in-band error frame.
///
/// `error_value` is the value of the `error` key. The frame text is the compact JSON text of
/// `{"error": value}`; the error object is the value when it is a JSON object. See
/// [`classify_error_event`] for the rows.
pub fn classify_error_value(error_value: &Value, ctx: &ClassifyContext<'_>) -> Classification {
    let frame_text = format!("{{\"error\":{error_value}}}");
    classify_in_band(&frame_text, error_value.as_object(), ctx)
}

/// Classifies an SSE event of type `error`, an SSE field line named `error`, or a non-SSE line
/// of a 200 event-stream that is a JSON object with an `error` key — all reported as
/// `WireEvent::ErrorEvent { data }`.
///
/// The frame text is `data`; the error object is the `error` member of `data` when `data`
/// parses as a JSON object and that member is an object. Rows, first match wins:
/// 1. the frame text contains a context-overflow marker → `RequestRejected`
///    `context_length_exceeded`;
/// 2. in-band status 429 and `insufficient_quota` (G-20 applied to the frame text) →
///    `SourceDead`;
/// 3. in-band status 429 → `Transient` `rate_limited` (a rate-limited failure in every respect);
/// 4. in-band status 401 or 403 → `SourceDead`;
/// 5. anything else → `Transient` `upstream_error_frame` (failure reason `network_error`).
///
/// The in-band status is the first of the error object's `code` and `status` members that is a
/// JSON integer, or a string of exactly three ASCII digits, in `100..=599`. Every row:
/// `http_status = None`, no Retry-After (a frame has no headers), `cause = None`,
/// `body_text` = the scrubbed summary of the frame text, message per G-16.
pub fn classify_error_event(data: &str, ctx: &ClassifyContext<'_>) -> Classification {
    let parsed: Option<Value> = serde_json::from_str(data).ok();
    let error_object = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(Value::as_object);
    classify_in_band(data, error_object, ctx)
}

/// The G-20b rows over a frame text and its error object.
fn classify_in_band(
    frame_text: &str,
    error_object: Option<&Map<String, Value>>,
    ctx: &ClassifyContext<'_>,
) -> Classification {
    let source = ctx.source_name;
    let summary = scrubbed_summary(frame_text, &ctx.scrub);
    let status = error_object.and_then(in_band_status);

    let (category, reason_code) = if contains_context_overflow_marker(frame_text) {
        (
            Category::RequestRejected,
            Some(ReasonCode::ContextLengthExceeded),
        )
    } else if status == Some(429) && is_insufficient_quota(frame_text) {
        (Category::SourceDead, None)
    } else if status == Some(429) {
        (Category::Transient, Some(ReasonCode::RateLimited))
    } else if matches!(status, Some(401 | 403)) {
        (Category::SourceDead, None)
    } else {
        (Category::Transient, Some(ReasonCode::UpstreamErrorFrame))
    };

    let prefix = match reason_code {
        Some(code @ (ReasonCode::ContextLengthExceeded | ReasonCode::RateLimited)) => {
            format!("{source}: upstream chat error frame ({code})")
        }
        _ => format!("{source}: upstream chat error frame"),
    };
    let mut failure = base_failure(ctx, compose(prefix, &summary));
    failure.reason_code = reason_code;
    failure.body_text = Some(summary);
    Classification::new(category, failure)
}

/// The in-band status of an error object: the first of `code` and `status` that is a
/// JSON integer or a string of exactly three ASCII digits, with a value in `100..=599`.
/// Booleans, floats, other strings and out-of-range numbers do not count.
pub fn in_band_status(error_object: &Map<String, Value>) -> Option<u16> {
    ["code", "status"]
        .into_iter()
        .filter_map(|key| error_object.get(key))
        .find_map(|value| {
            let status = match value {
                Value::Number(n) => n.as_u64().and_then(|u| u16::try_from(u).ok()),
                Value::String(s) if s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()) => {
                    s.parse::<u16>().ok()
                }
                _ => None,
            };
            status.filter(|s| (100..=599).contains(s))
        })
}
