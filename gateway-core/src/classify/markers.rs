//! The closed marker lists and code tables the classifier matches in raw bodies and frames
//! (context overflow, quota, model missing, capacity, timeout statuses), and the two
//! matchers over them: the ASCII case-folding substring test and the quota-body test.

use serde_json::{Map, Value};

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
