//! The one classifier: wire failure facts → category, reason code, failure reason, hint
//! (spec 30 §2).
//!
//! Adapters report facts ([`WireFailure`], [`NetworkFault`], SSE `error` events, 200 bodies with
//! an `error` key); this module alone turns them into one of the four categories,
//! so that every transport, the retry loop, the breaker feed and telemetry agree. It owns:
//!
//! - the HTTP status table, with the two body facts that change a category: the closed
//!   list of context-overflow markers (any status, checked first) and
//!   `insufficient_quota` on a 429;
//! - in-band error objects of a 200 stream or body;
//! - transport faults and their `cause_type`;
//! - the failure reason that feeds breaker, health and pacer;
//! - when a retry hint is parsed (`Transient` 429 and 503; README D23: 522/524, the
//!   capacity markers, and every status but 400/401/403/404 as a deferral; D19 hint sources);
//! - the model-missing and capacity markers and the relayed quota codes;
//! - the message templates.
//!
//! Typing decisions read the **raw** body as retained by the adapter; messages and `body_text`
//! carry the scrubbed summary (`crate::redact`). Classification never
//! depends on configuration or history, except that hints depend on the wall clock.
//!
//! The result is a small [`Classification`] (category + failure reason + the
//! [`AttemptFailure`] payload) that the retry loop consumes; [`Classification::into_error`]
//! builds the [`GatewayError`]. Protocol and verdict facts of a 200 response (malformed JSON,
//! truncated streams, …; G-22) are judged by the streaming and verdict modules with their own
//! reason texts; they use [`failure_reason`] for the breaker feed.

use std::fmt;
use std::time::SystemTime;

use gateway_ports::{
    AttemptError, AttemptFailure, Category, CauseKind, ErrorOperation, FailureReason, NetworkFault,
    ReasonCode, WireFailure,
};
use serde_json::{Map, Value};

use crate::redact::{ScrubOptions, scrub, scrubbed_summary};
use crate::retry_after::parse_retry_hint;

/// The closed list of context-overflow markers, lower-case. A non-200
/// response or an in-band error frame whose raw text contains one (ASCII case-insensitive) is
/// `RequestRejected` with reason code `context_length_exceeded`. Adding one is a spec change.
///
/// Sources: OpenAI (`context_length_exceeded`, "maximum context length"), llama.cpp
/// (`exceed_context_size_error`, "exceeds the available context size", case 035), LM Studio
/// ("context size has been exceeded"), Anthropic ("prompt is too long"); README D24 adds the
/// LiteLLM relay's names (`ContextWindowExceededError`, `context_window_exceeded`, "context
/// window exceeded") and Gemini/Bedrock's "input is too long".
pub const CONTEXT_OVERFLOW_MARKERS: [&str; 10] = [
    "context_length_exceeded",
    "exceed_context_size_error",
    "maximum context length",
    "context size has been exceeded",
    "exceeds the available context size",
    "prompt is too long",
    "context window exceeded",
    "contextwindowexceedederror",
    "context_window_exceeded",
    "input is too long",
];

/// The body fact that makes a 429 `SourceDead`.
pub const INSUFFICIENT_QUOTA: &str = "insufficient_quota";

/// The quota-exhausted error codes of G-20 with addition: OpenAI's
/// `billing_hard_limit_reached` (seen behind LiteLLM, which rewrites the type to
/// `throttling_error` but keeps the code or the message).
pub const QUOTA_CODES: [&str; 2] = [INSUFFICIENT_QUOTA, "billing_hard_limit_reached"];

/// OpenAI's quota sentence, matched ASCII case-insensitively anywhere in the raw
/// body: LiteLLM keeps it when it rewrites `insufficient_quota` to `throttling_error`.
pub const QUOTA_SENTENCE: &str = "you exceeded your current quota";

/// Model-missing markers, lower-case, matched ASCII case-insensitively in the raw
/// body of a 400, 404 or 422: the model is missing on this source, so the source is
/// `SourceDead` and the call fails over. Sources: OpenAI `model_not_found`; LiteLLM "Invalid
/// model name"; Ollama "model not found"; vLLM / TGI "unknown model", "no such model".
pub const MODEL_MISSING_MARKERS: [&str; 5] = [
    "model_not_found",
    "invalid model name",
    "model not found",
    "unknown model",
    "no such model",
];

/// Capacity markers, lower-case, matched ASCII case-insensitively in the raw body
/// of a 400 or 409: the server is busy, not the request wrong → `Transient` (like 529).
/// Sources: OpenAI "model is at capacity" (409), Anthropic `overloaded_error` relayed as 400,
/// "server is overloaded" (vLLM / relays).
pub const CAPACITY_MARKERS: [&str; 3] = [
    "model is at capacity",
    "overloaded_error",
    "server is overloaded",
];

/// Statuses that mean an upstream timeout: 408, 504 and Cloudflare's 522
/// (connection timed out) and 524 (a timeout occurred).
pub const TIMEOUT_STATUSES: [u16; 4] = [408, 504, 522, 524];

/// What the classifier needs besides the fact itself.
///
/// `Debug` never prints the source key (see [`ScrubOptions`]).
#[derive(Debug, Clone, Copy)]
pub struct ClassifyContext<'a> {
    /// The source that produced the fact; named in every message.
    pub source_name: &'a str,
    /// The HTTP sub-operation, carried into the failure.
    pub operation: ErrorOperation,
    /// Local wall clock for HTTP-date Retry-After hints (not the `Date`
    /// header).
    pub wall_now: SystemTime,
    /// What to scrub from summaries and messages: the source's key, and whether IP
    /// addresses are redacted (`PGW_REDACT_IPS`).
    pub scrub: ScrubOptions<'a>,
}

impl<'a> ClassifyContext<'a> {
    /// A context with the default scrubbing (no source key; IP addresses redacted).
    pub fn new(source_name: &'a str, operation: ErrorOperation, wall_now: SystemTime) -> Self {
        Self {
            source_name,
            operation,
            wall_now,
            scrub: ScrubOptions::default(),
        }
    }

    /// The same context with these scrub options.
    pub fn with_scrub(mut self, scrub: ScrubOptions<'a>) -> Self {
        self.scrub = scrub;
        self
    }
}

/// Which core watchdog expired: named in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LivenessKind {
    /// Time to first progress (`ttft`).
    Ttft,
    /// Gap between progress chunks (`inter_token`).
    InterToken,
    /// Whole-attempt budget (`total`; also the non-stream total).
    Total,
}

impl LivenessKind {
    /// The token used in messages: `ttft`, `inter_token`, `total`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::InterToken => "inter_token",
            Self::Total => "total",
        }
    }
}

impl fmt::Display for LivenessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict on one failure fact: what the retry loop, the breaker feed, telemetry
/// and the caller's error need.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// One of the four categories.
    pub category: Category,
    /// The breaker/health/pacer reason: `Some` for `Transient` and `SourceDead`,
    /// `None` for `RequestRejected` and `ResultInvalid` (they feed a neutral success).
    pub failure_reason: Option<FailureReason>,
    /// The payload: message, source, operation, `http_status`, `retry_after_s` (only on a
    /// `Transient` failure with a usable hint), `body_text` (scrubbed summary),
    /// `reason_code`, `cause`.
    pub failure: AttemptFailure,
}

impl Classification {
    /// Builds a classification, deriving the failure reason from the payload.
    pub fn new(category: Category, failure: AttemptFailure) -> Self {
        Self {
            category,
            failure_reason: failure_reason(category, &failure),
            failure,
        }
    }

    /// The reason code, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.failure.reason_code
    }

    /// The HTTP status received, if the fact was an HTTP failure.
    pub fn http_status(&self) -> Option<u16> {
        self.failure.http_status
    }

    /// The server hint in seconds, if one was parsed.
    pub fn retry_after_s(&self) -> Option<f64> {
        self.failure.retry_after_s
    }

    /// `true` when the failure reason is `rate_limited` (an HTTP 429 or an in-band 429): the
    /// round is rate-limited — budget-exempt in chat, a pacer cut, counted in neither
    /// breaker channel.
    pub fn is_rate_limited(&self) -> bool {
        self.failure_reason == Some(FailureReason::RateLimited)
    }

    /// The `AttemptError` of this verdict: `Transient`, `SourceDead`,
    /// `RequestRejected`, or `ResultInvalid` wrapping the failure with no validation data.
    pub fn into_error(self) -> AttemptError {
        AttemptError::of_category(self.category, self.failure)
    }
}

impl From<Classification> for AttemptError {
    fn from(classification: Classification) -> Self {
        classification.into_error()
    }
}

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

/// Classifies a failure before a status line (DNS, connect, TLS, request write, pool): always
/// `Transient`, cause per 30 G-15, failure reason `timeout` for the timeout kinds else
/// `network_error`, no reason code. Message:
/// `"{source}: network error ({cause}): {detail}"`, the detail scrubbed and replaced by
/// the cause name when empty.
pub fn classify_network_fault(fault: &NetworkFault, ctx: &ClassifyContext<'_>) -> Classification {
    let cause = fault.kind.cause_kind();
    let mut failure = base_failure(ctx, network_message(ctx, cause, &fault.detail));
    failure.cause = Some(cause);
    Classification::new(Category::Transient, failure)
}

/// Classifies a body that broke after a 200 status (mid-stream `WireEvent::ReadError`, or
/// `WireFailure::ReadError` of a non-stream body): `Transient` with reason code `read_error`
/// and the fault's cause (`ReadError`, `RemoteProtocolError`, …) — never a clean end, even after
/// a finish_reason and usage.
pub fn classify_read_error(fault: &NetworkFault, ctx: &ClassifyContext<'_>) -> Classification {
    let cause = fault.kind.cause_kind();
    let mut failure = base_failure(ctx, network_message(ctx, cause, &fault.detail));
    failure.cause = Some(cause);
    failure.reason_code = Some(ReasonCode::ReadError);
    Classification::new(Category::Transient, failure)
}

/// Classifies a frame or 200 body over the framing cap: `ResultInvalid(response_too_large)`.
/// `limit_bytes` is the cap that was exceeded.
pub fn classify_frame_too_large(limit_bytes: usize, ctx: &ClassifyContext<'_>) -> Classification {
    let mut failure = base_failure(
        ctx,
        format!(
            "{}: response too large (response_too_large): over {limit_bytes} bytes",
            ctx.source_name
        ),
    );
    failure.reason_code = Some(ReasonCode::ResponseTooLarge);
    Classification::new(Category::ResultInvalid, failure)
}

/// Classifies a core watchdog expiry: `Transient(liveness_timeout)`, cause
/// `StreamLivenessTimeout`, failure reason `timeout`.
/// Message: `"{source}: stream liveness timeout ({kind})"`.
pub fn classify_liveness_timeout(kind: LivenessKind, ctx: &ClassifyContext<'_>) -> Classification {
    let mut failure = base_failure(
        ctx,
        format!("{}: stream liveness timeout ({kind})", ctx.source_name),
    );
    failure.cause = Some(CauseKind::StreamLivenessTimeout);
    failure.reason_code = Some(ReasonCode::LivenessTimeout);
    Classification::new(Category::Transient, failure)
}

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

/// `true` when `raw` contains a context-overflow marker: a substring
/// search in which only the ASCII letters fold case; every other byte must match exactly.
pub fn contains_context_overflow_marker(raw: &str) -> bool {
    contains_marker(raw, &CONTEXT_OVERFLOW_MARKERS)
}

/// `true` when `raw` contains one of the lower-case `markers`, folding ASCII letters only
/// (the G-20a comparison, shared by README D14).
pub fn contains_marker(raw: &str, markers: &[&str]) -> bool {
    // `to_ascii_lowercase` folds A–Z only, so this is exactly the G-20a comparison.
    let folded = raw.to_ascii_lowercase();
    markers.iter().any(|marker| folded.contains(marker))
}

/// `true` when a raw body says the quota is exhausted (30 G-20 with README D24).
///
/// 1. The raw text contains [`QUOTA_SENTENCE`] (ASCII case-insensitive) → `true`.
/// 2. Parsed as JSON, the error objects are the top-level `error`, the first element of an
///    array body (or its `error`), and a nested `error.error`. When any of them has a non-null
///    `type` or `code`, the answer is whether one of those equals a [`QUOTA_CODES`] entry.
/// 3. Otherwise (not JSON, or no such field) the raw text contains a [`QUOTA_CODES`] entry
///    (case-sensitive).
///
/// Reads the untruncated raw body, never a summary.
pub fn is_insufficient_quota(raw: &str) -> bool {
    if contains_marker(raw, &[QUOTA_SENTENCE]) {
        return true;
    }
    let parsed: Option<Value> = serde_json::from_str(raw).ok();
    let top = match parsed.as_ref() {
        Some(Value::Array(items)) => items.first(),
        other => other,
    };
    let mut objects: Vec<&Map<String, Value>> = Vec::new();
    if let Some(top) = top {
        if let Some(error) = top.get("error").and_then(Value::as_object) {
            objects.push(error);
            if let Some(nested) = error.get("error").and_then(Value::as_object) {
                objects.push(nested);
            }
        } else if parsed.as_ref().is_some_and(Value::is_array)
            && let Some(obj) = top.as_object()
        {
            objects.push(obj);
        }
    }
    let fields: Vec<&Value> = objects
        .iter()
        .flat_map(|error| {
            ["type", "code"]
                .into_iter()
                .filter_map(|key| error.get(key))
        })
        .filter(|v| !v.is_null())
        .collect();
    if !fields.is_empty() {
        return fields
            .iter()
            .any(|v| v.as_str().is_some_and(|s| QUOTA_CODES.contains(&s)));
    }
    QUOTA_CODES.iter().any(|code| raw.contains(code))
}

/// The failure reason of a classified attempt: `SourceDead` → `source_dead`;
/// `Transient` with status 429 or reason code `rate_limited` → `rate_limited`; `Transient` with
/// a timeout cause (`ConnectTimeout`, `ReadTimeout`, `WriteTimeout`, `PoolTimeout`,
/// `StreamLivenessTimeout`) or status 408/504/522/524 → `timeout`; a malformed
/// answer ([`is_bad_response_code`]) → `bad_response`; every other `Transient` →
/// `network_error`; `RequestRejected` and `ResultInvalid` → `None`.
pub fn failure_reason(category: Category, failure: &AttemptFailure) -> Option<FailureReason> {
    match category {
        Category::SourceDead => Some(FailureReason::SourceDead),
        Category::Transient => Some(
            if failure.http_status == Some(429)
                || failure.reason_code == Some(ReasonCode::RateLimited)
            {
                FailureReason::RateLimited
            } else if matches!(
                failure.cause,
                Some(
                    CauseKind::ConnectTimeout
                        | CauseKind::ReadTimeout
                        | CauseKind::WriteTimeout
                        | CauseKind::PoolTimeout
                        | CauseKind::StreamLivenessTimeout
                )
            ) || failure
                .http_status
                .is_some_and(|status| TIMEOUT_STATUSES.contains(&status))
            {
                FailureReason::Timeout
            } else if failure.reason_code.is_some_and(is_bad_response_code) {
                FailureReason::BadResponse
            } else {
                FailureReason::NetworkError
            },
        ),
        Category::RequestRejected | Category::ResultInvalid => None,
    }
}

/// `true` for the reason codes of a malformed answer: the verdict's and the
/// stream's `Transient` failures — empty completion or response, protocol error, invalid or
/// malformed JSON, truncation (`missing_done`, `early_eof`), an incomplete tool call. Their
/// failure reason is `bad_response`, which breaker and health treat like `network_error`.
pub fn is_bad_response_code(code: ReasonCode) -> bool {
    matches!(
        code,
        ReasonCode::EmptyCompletion
            | ReasonCode::EmptyResponse
            | ReasonCode::ProtocolError
            | ReasonCode::InvalidJson
            | ReasonCode::MalformedJson
            | ReasonCode::MissingDone
            | ReasonCode::EarlyEof
            | ReasonCode::ToolIncomplete
    )
}

/// [`failure_reason`] of an `AttemptError`.
pub fn failure_reason_of(error: &AttemptError) -> Option<FailureReason> {
    failure_reason(error.category(), error.failure())
}

/// `compose(prefix, summary)` of 30 G-16: `prefix` alone when the summary is empty, else
/// `"{prefix} | {summary}"`.
pub fn compose(prefix: String, summary: &str) -> String {
    if summary.is_empty() {
        prefix
    } else {
        format!("{prefix} | {summary}")
    }
}

/// A failure naming the context's source and operation, with every optional field `None`.
fn base_failure(ctx: &ClassifyContext<'_>, message: String) -> AttemptFailure {
    let mut failure = AttemptFailure::new(message, ctx.operation);
    failure.source_name = Some(ctx.source_name.to_owned());
    failure
}

/// `"{source}: network error ({cause}): {detail}"`; an empty detail falls back to the
/// cause name; the detail is scrubbed.
fn network_message(ctx: &ClassifyContext<'_>, cause: CauseKind, detail: &str) -> String {
    let detail = detail.trim();
    let detail = if detail.is_empty() {
        cause.as_str().to_owned()
    } else {
        scrub(detail, &ctx.scrub)
    };
    format!("{}: network error ({cause}): {detail}", ctx.source_name)
}
