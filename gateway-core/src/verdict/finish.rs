//! Finish classes and the effective finish.
//!
//! The raw `finish_reason` is never normalised: these functions only *classify* it. The
//! typed classification itself lives on [`FinishReason::class`] in `gateway-ports`; this module
//! adds the forms the verdict's call sites hold — a raw `&str` (where `""` is absent), a raw
//! cache `Value` (non-strings are `unknown`), and the effective finish of a cached entry.

use gateway_ports::{FinishClass, FinishReason, OpenAiChatCompletion};
use serde_json::Value;

/// The finish class of a raw `finish_reason`, case-sensitive: `None` and `""` are
/// `Absent`; `stop`/`tool_calls`/`function_call` `Natural`; `length` `Truncated`;
/// `content_filter`/`sensitive` `Filtered`; `network_error`/`error` `UpstreamError`; every other
/// string (`STOP`, `end_turn`, …) `Unknown`.
pub fn classify_finish(finish_reason: Option<&str>) -> FinishClass {
    match finish_reason.and_then(FinishReason::new) {
        Some(reason) => reason.class(),
        None => FinishClass::Absent,
    }
}

/// The finish class of a raw JSON value as found in a cache entry:
/// absent or `null` → `Absent`; a string → [`classify_finish`]; any other value (e.g. `5`) →
/// `Unknown`.
pub fn classify_finish_value(value: Option<&Value>) -> FinishClass {
    match value {
        None | Some(Value::Null) => FinishClass::Absent,
        Some(Value::String(s)) => classify_finish(Some(s)),
        Some(_) => FinishClass::Unknown,
    }
}

/// The effective finish of a response: the top-level value unless it is none
/// or `""`, else the completion's `finish_reason` when a completion exists (also `""` → none),
/// else none. The same function serves the cache write and read paths (entries written by 1.3.9
/// had no top-level finish).
pub fn effective_finish<'a>(
    finish_reason: Option<&'a str>,
    completion: Option<&'a OpenAiChatCompletion>,
) -> Option<&'a str> {
    finish_reason
        .filter(|s| !s.is_empty())
        .or_else(|| completion.and_then(OpenAiChatCompletion::finish_reason))
        .filter(|s| !s.is_empty())
}
