//! Output summaries: the only input of the outcome table besides the mode and
//! the finish class.
//!
//! Text mode summarises the projected strings; fidelity (`openai`) mode summarises the assembled
//! message, including the tool-call snapshot check and the "only `arguments: null`"
//! dialect. Nothing here rewrites the delivered message.

use serde_json::{Map, Value};

/// What an attempt produced, as the outcome table sees it.
///
/// `null_arguments` defaults to `false`. Test tuples in the spec are written
/// `(any_output, body_output, tools_present, tools_ok)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OutputSummary {
    /// Anything at all was produced (whitespace counts; V-21).
    pub any_output: bool,
    /// A body: non-blank projected content, or (openai) complete tool calls.
    pub body_output: bool,
    /// (openai) `tool_calls` holds at least one non-null element.
    pub tools_present: bool,
    /// (openai) [`tool_snapshot_ok`]; always `true` in text mode.
    pub tools_ok: bool,
    /// (openai) the tools' only defect is `function.arguments: null`.
    pub null_arguments: bool,
}

impl OutputSummary {
    /// A summary from the spec's four-tuple, with `null_arguments = false`.
    pub const fn new(
        any_output: bool,
        body_output: bool,
        tools_present: bool,
        tools_ok: bool,
    ) -> Self {
        Self {
            any_output,
            body_output,
            tools_present,
            tools_ok,
            null_arguments: false,
        }
    }

    /// `NONE = (F,F,F,T)`: no output at all.
    pub const NONE: Self = Self::new(false, false, false, true);
    /// `THINK = (T,F,F,T)`: output without a body, e.g. reasoning only.
    pub const THINK: Self = Self::new(true, false, false, true);
    /// `BODY = (T,T,F,T)`: a body.
    pub const BODY: Self = Self::new(true, true, false, true);
    /// `BAD_TOOL = (T,T,T,F)`: a broken tool call next to a body.
    pub const BAD_TOOL: Self = Self::new(true, true, true, false);
}

/// Text-mode summary of the projected strings (pinned V-28): `any_output = content != ""
/// || thinking != ""` (whitespace counts); `body_output = content.trim() != ""`; no tools.
pub fn summarize_text(content: &str, thinking: &str) -> OutputSummary {
    OutputSummary::new(
        !content.is_empty() || !thinking.is_empty(),
        !content.trim().is_empty(),
        false,
        true,
    )
}

/// Fidelity-mode summary of the assembled message (pinned V-29):
/// - `tools_present` = `tool_calls` is an array with at least one non-null element;
/// - `tools_ok` = [`tool_snapshot_ok`];
/// - `any_output` = `tools_present` or [`has_string`] of the message without `role` and
///   `tool_calls`;
/// - `body_output` = `projected_content.trim() != ""` or (`tools_present` and `tools_ok`);
/// - `null_arguments` = not `tools_ok` and `tool_snapshot_ok(fill_null_arguments(message))`.
///
/// `projected_content` is the think-stripped projection on the transport paths and the raw
/// `message.content` inside the cacheability predicate.
pub fn summarize_message(message: &Map<String, Value>, projected_content: &str) -> OutputSummary {
    let tools_present = matches!(
        message.get("tool_calls"),
        Some(Value::Array(tools)) if tools.iter().any(|t| !t.is_null())
    );
    let tools_ok = tool_snapshot_ok(message);
    let any_output = tools_present
        || message
            .iter()
            .filter(|(key, _)| key.as_str() != "role" && key.as_str() != "tool_calls")
            .any(|(_, value)| has_string(value));
    let body_output = !projected_content.trim().is_empty() || (tools_present && tools_ok);
    let null_arguments = !tools_ok && tool_snapshot_ok(&fill_null_arguments(message));
    OutputSummary {
        any_output,
        body_output,
        tools_present,
        tools_ok,
        null_arguments,
    }
}

/// `has_string`: a string → non-empty; an object → any value qualifies; an array → any
/// element qualifies; anything else → `false`. Whitespace counts.
pub fn has_string(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.is_empty(),
        Value::Object(map) => map.values().any(has_string),
        Value::Array(items) => items.iter().any(has_string),
        _ => false,
    }
}

/// The tool-call snapshot invariant (pinned there): `tool_calls` absent or `null` →
/// `true`; present and not an array → `false`; otherwise every element is `null` (skipped) or
/// an object with `id` a non-empty string not seen before in this message, `type == "function"`,
/// and `function` an object with `name` a non-empty string and `arguments` a string (may be
/// empty).
pub fn tool_snapshot_ok(message: &Map<String, Value>) -> bool {
    let tools = match message.get("tool_calls") {
        None | Some(Value::Null) => return true,
        Some(Value::Array(tools)) => tools,
        Some(_) => return false,
    };
    let mut seen: Vec<&str> = Vec::with_capacity(tools.len());
    for tool in tools {
        let tool = match tool {
            Value::Null => continue,
            Value::Object(tool) => tool,
            _ => return false,
        };
        let Some(id) = tool
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
        else {
            return false;
        };
        if seen.contains(&id) {
            return false;
        }
        seen.push(id);
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return false;
        }
        let Some(Value::Object(function)) = tool.get("function") else {
            return false;
        };
        if function
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return false;
        }
        if !matches!(function.get("arguments"), Some(Value::String(_))) {
            return false;
        }
    }
    true
}

/// A copy of `message` in which every tool's `function.arguments: null` is replaced by `""`,
/// *for classification only*: the delivered message is never rewritten. Only an
/// explicit `null` is filled; a missing `arguments` key stays a defect.
pub fn fill_null_arguments(message: &Map<String, Value>) -> Map<String, Value> {
    let mut filled = message.clone();
    if let Some(Value::Array(tools)) = filled.get_mut("tool_calls") {
        for tool in tools.iter_mut() {
            if let Some(Value::Object(function)) = tool.get_mut("function")
                && let Some(arguments) = function.get_mut("arguments")
                && arguments.is_null()
            {
                *arguments = Value::String(String::new());
            }
        }
    }
    filled
}
