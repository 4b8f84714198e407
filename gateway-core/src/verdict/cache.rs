//! Cacheability: the ONE predicate shared by the cache write and read paths (50 §10,
//! V-57..V-60; 70 C-49..C-51; 05 R-23).
//!
//! *Cacheable ⊂ deliverable*: only delivered results are ever asked, and of those only a natural
//! or absent finish with a body, not salvaged, may enter the TTL — replaying an accident for a
//! whole TTL would turn it into a certainty. Every entry point below funnels into the same
//! private judgement, so the write path, the read path and the verdict's `cacheable` flag can
//! never disagree.

use gateway_ports::{FinishClass, LlmResponse, OpenAiChatCompletion, ResponseMode, StreamEnd};
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use super::finish::{classify_finish, classify_finish_value, effective_finish};
use super::summary::summarize_message;

/// `is_cacheable(mode, content, finish_reason, stream_end, completion)` (50 V-58 with the
/// effective finish of V-59; 70 C-49; 05 R-42). Not cacheable if any holds, in this order:
/// 1. `stream_end` is `Salvaged` (only none, `Done`, `EofAfterFinish` pass);
/// 2. the class of `effective_finish(finish_reason, completion)` is not `Natural` or `Absent`;
/// 3. openai mode: `completion` is none; otherwise, with `raw` = `completion.message.content`
///    when it is a string else `""` and `summary = summarize_message(message, raw)`, not
///    (`summary.body_output` and (`content.trim() != ""` or complete tools present)); and
///    any tool call's `function.arguments` string fails to parse as JSON;
/// 4. text mode: `content.trim() == ""`.
///
/// `content` is the delivered text projection (`LlmResponse.content`).
pub fn is_cacheable(
    mode: ResponseMode,
    content: &str,
    finish_reason: Option<&str>,
    stream_end: Option<StreamEnd>,
    completion: Option<&OpenAiChatCompletion>,
) -> bool {
    let class = classify_finish(effective_finish(finish_reason, completion));
    judge(
        mode,
        content,
        class,
        stream_end,
        completion.map(OpenAiChatCompletion::message),
    )
}

/// [`is_cacheable`] over the assembled message instead of the snapshot, for the verdict, which
/// runs before the snapshot is constructed. `finish_reason` is the attempt's finish
/// (on a fresh attempt the top-level and the completion's finish are the same value, so it is
/// the effective finish); `message` is the openai message (`None` in text mode).
pub fn is_cacheable_message(
    mode: ResponseMode,
    content: &str,
    finish_reason: Option<&str>,
    stream_end: Option<StreamEnd>,
    message: Option<&Map<String, Value>>,
) -> bool {
    judge(
        mode,
        content,
        classify_finish(finish_reason),
        stream_end,
        message,
    )
}

/// [`is_cacheable`] of a delivered response (its `content`, `finish_reason`, `stream_end` and
/// `completion`): the cache write path and the read path after decoding (judged
/// on the stored values, before the hit override).
pub fn is_cacheable_response(mode: ResponseMode, response: &LlmResponse) -> bool {
    is_cacheable(
        mode,
        &response.content,
        response.finish_reason.as_ref().map(|f| f.as_str()),
        response.stream_end,
        response.completion.as_ref(),
    )
}

/// [`is_cacheable`] over raw cache-entry values (the DTO holds raw `Value`s until
/// judged): `stream_end` absent or `null` is none, a string of the `StreamEnd` domain is that
/// value, anything else (`"bogus"`, a number) is not cacheable; `finish_reason` absent, `null`
/// or `""` falls back to the completion's finish, a string is classified by V-2, and any
/// other value (e.g. `5`) is `Unknown` and therefore not cacheable.
pub fn is_cacheable_raw(
    mode: ResponseMode,
    content: &str,
    finish_reason: Option<&Value>,
    stream_end: Option<&Value>,
    completion: Option<&OpenAiChatCompletion>,
) -> bool {
    let stream_end = match stream_end {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match StreamEnd::from_wire(s) {
            Some(end) => Some(end),
            None => return false,
        },
        Some(_) => return false,
    };
    let class = match finish_reason {
        None | Some(Value::Null) => classify_finish(effective_finish(None, completion)),
        Some(Value::String(s)) => classify_finish(effective_finish(Some(s), completion)),
        other => classify_finish_value(other),
    };
    judge(
        mode,
        content,
        class,
        stream_end,
        completion.map(OpenAiChatCompletion::message),
    )
}

/// `true` when every tool call's `function.arguments` string in `message` parses as JSON.
/// Null elements, non-object tools and non-string arguments are skipped (they fail
/// the snapshot check of V-24 instead). An empty string is not JSON, so a parameterless call
/// that sent `""` is delivered but not cached.
pub fn tool_arguments_parse(message: &Map<String, Value>) -> bool {
    let Some(Value::Array(tools)) = message.get("tool_calls") else {
        return true;
    };
    tools
        .iter()
        .filter_map(|tool| tool.get("function")?.get("arguments")?.as_str())
        .all(|arguments| serde_json::from_str::<IgnoredAny>(arguments).is_ok())
}

/// The one judgement (V-58 steps 1–4 plus R-42).
fn judge(
    mode: ResponseMode,
    content: &str,
    finish_class: FinishClass,
    stream_end: Option<StreamEnd>,
    message: Option<&Map<String, Value>>,
) -> bool {
    // Step 1.
    if matches!(stream_end, Some(StreamEnd::Salvaged)) {
        return false;
    }
    // Step 2.
    if !matches!(finish_class, FinishClass::Natural | FinishClass::Absent) {
        return false;
    }
    match mode {
        // Step 3 and R-42.
        ResponseMode::OpenAi => {
            let Some(message) = message else {
                return false;
            };
            let raw = message.get("content").and_then(Value::as_str).unwrap_or("");
            let summary = summarize_message(message, raw);
            let has_tools = summary.tools_present && summary.tools_ok;
            summary.body_output
                && (!content.trim().is_empty() || has_tools)
                && tool_arguments_parse(message)
        }
        // Step 4.
        ResponseMode::Text => !content.trim().is_empty(),
    }
}
