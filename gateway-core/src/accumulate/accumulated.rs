//! The accumulated result of one attempt and the assembly helpers both readings share.
//!
//! [`Accumulated`] is what a stream ([`super::Accumulator::finish`]) and a non-stream body
//! ([`super::parse_non_stream_body`]) both produce: the input of the verdict and of response
//! building. Beside it: the tool-call summaries the verdict reads, usage resolution (measured,
//! plausible, details), the `finish:` warning and `finalize_text`. Pure functions of values;
//! no state machine here.

use std::collections::BTreeSet;

use gateway_ports::{
    FinishClass, FinishReason, OpenAiChatCompletion, ResponseMode, Usage, UsageSource,
};
use serde_json::{Map, Value};

use super::error::{AccumulateError, ProtocolViolation};
use super::warnings::DialectWarning;
use crate::thinking::strip_think_tags;

/// Adds the `finish:` warning for a finish of class `unknown`.
pub(super) fn push_finish_warning(
    warnings: &mut Vec<DialectWarning>,
    finish: Option<&FinishReason>,
) {
    if let Some(finish) = finish
        && finish.class() == FinishClass::Unknown
    {
        warnings.push(DialectWarning::UnregisteredFinish {
            value: finish.as_str().to_owned(),
        });
    }
}

/// The shape of a tool call's `function.arguments`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolArguments {
    /// No `arguments` key (or no `function` object).
    Absent,
    /// `arguments` stayed `null`.
    Null,
    /// `arguments` is neither a string nor null.
    NotString,
    /// A string that is empty or whitespace only.
    Empty,
    /// A string that parses as JSON.
    Json,
    /// A non-empty string that does not parse as JSON (cut arguments).
    NotJson,
}

/// One tool call of the openai message, as the verdict sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallSummary {
    /// The call's id (synthesized or not); `None` when it is not a non-empty string.
    pub id: Option<String>,
    /// The id was synthesized.
    pub id_synthesized: bool,
    /// `function.name` when it is a non-empty string; `None` → `tool_incomplete`.
    pub name: Option<String>,
    /// The shape of `function.arguments`.
    pub arguments: ToolArguments,
}

/// Summaries of the non-null elements of `message.tool_calls` (empty when absent or not an
/// array); `synthesized[i]` says whether element `i` got a synthesized id.
pub(super) fn summarize_tools(
    message: &Map<String, Value>,
    synthesized: &[bool],
) -> Vec<ToolCallSummary> {
    let Some(Value::Array(tools)) = message.get("tool_calls") else {
        return Vec::new();
    };
    tools
        .iter()
        .enumerate()
        .filter(|(_, tool)| !tool.is_null())
        .map(|(position, tool)| {
            let function = tool.get("function").and_then(Value::as_object);
            let arguments = match function.and_then(|f| f.get("arguments")) {
                None => ToolArguments::Absent,
                Some(Value::Null) => ToolArguments::Null,
                Some(Value::String(text)) if text.trim().is_empty() => ToolArguments::Empty,
                Some(Value::String(text)) => {
                    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
                        ToolArguments::Json
                    } else {
                        ToolArguments::NotJson
                    }
                }
                Some(_) => ToolArguments::NotString,
            };
            ToolCallSummary {
                id: tool
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned),
                id_synthesized: synthesized.get(position).copied().unwrap_or(false),
                name: function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned),
                arguments,
            }
        })
        .collect()
}

/// The accumulated result of one attempt, streamed ([`Accumulator::finish`](crate::accumulate::Accumulator::finish)) or not
/// ([`parse_non_stream_body`](crate::accumulate::parse_non_stream_body)) — the input of the verdict (50) and of response building.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Accumulated {
    /// The mode of the attempt.
    pub mode: ResponseMode,
    /// Text projection of the content, think tags stripped where the profile asks.
    pub content: String,
    /// Thinking projection (S-98 stream, S-99 non-stream) plus stripped think spans.
    pub thinking: String,
    /// The raw finish_reason; never `""`.
    pub finish_reason: Option<FinishReason>,
    /// A finish_reason was recorded.
    pub finish_seen: bool,
    /// The response id (S-42 stream, S-113 non-stream); never `""`.
    pub response_id: Option<String>,
    /// The first model name with a non-whitespace character.
    pub model_reported: Option<String>,
    /// The last non-null usage object, exactly as received.
    pub usage_raw: Option<Map<String, Value>>,
    /// Usage arrived in or after the finish frame; stream only (`false` non-stream).
    pub usage_after_finish: bool,
    /// openai mode: the message (S-65 `raw_message()`, or the non-stream message after S-111
    /// step 4); `None` in text mode. Never passes through `finalize_text`.
    pub message: Option<Map<String, Value>>,
    /// openai mode: the non-null tool calls of `message`, in snapshot order.
    pub tool_calls: Vec<ToolCallSummary>,
    /// Conflict paths, sorted.
    pub conflicts: BTreeSet<String>,
    /// Dialect warnings in S-95 step 1 order (split-data-lines notice first), at most 1024.
    pub warnings: Vec<DialectWarning>,
    /// The accumulated `refusal` text: `delta.refusal` fragments or
    /// `message.refusal`; `""` when none.
    pub refusal: String,
    /// Text mode: the answer carried at least one tool call; always `false` in
    /// openai mode, where the tool calls are in `message`.
    pub tool_calls_in_text: bool,
}

impl Accumulated {
    /// `true` when the last usage is *measured*.
    pub fn usage_measured(&self) -> bool {
        self.usage_raw
            .as_ref()
            .is_some_and(|u| measured_usage(u).is_some())
    }

    /// Token resolution: measured → as reported with `Measured` (`Estimated`
    /// when `salvaged`); otherwise 0 / 0 with `Unavailable`. `cached_prompt_tokens` and
    /// `reasoning_tokens` come from the last usage object either way.
    pub fn usage(&self, salvaged: bool) -> (Usage, UsageSource) {
        let Some(raw) = &self.usage_raw else {
            return (Usage::default(), UsageSource::Unavailable);
        };
        // One pass over the object (05 R-56): the plausibility check, the measured counts and
        // the details all come from the same reading.
        let fields = UsageFields::read(raw);
        let reported = fields.reported();
        if reported.is_some_and(|u| !usage_is_plausible(&u)) {
            // Issue 22: nothing of an implausible usage object is kept.
            return (Usage::default(), UsageSource::Unavailable);
        }
        let (mut usage, source) = match reported {
            Some(usage) if salvaged => (usage, UsageSource::Estimated),
            Some(usage) => (usage, UsageSource::Measured),
            None => (Usage::default(), UsageSource::Unavailable),
        };
        usage.cached_prompt_tokens = fields.cached;
        usage.reasoning_tokens = fields.reasoning;
        (usage, source)
    }

    /// The openai snapshot: `None` in text mode; otherwise
    /// `OpenAiChatCompletion::try_new` over deep copies of the message and usage, a failure
    /// being `Transient(protocol_error)`. Call it only after the verdict delivered.
    pub fn completion(&self) -> Option<Result<OpenAiChatCompletion, AccumulateError>> {
        let message = self.message.as_ref()?;
        Some(
            OpenAiChatCompletion::try_new(
                message.clone(),
                self.finish_reason.as_ref().map(|f| f.as_str().to_owned()),
                self.response_id.clone(),
                self.usage_raw.clone(),
            )
            .map_err(|shape| AccumulateError::Protocol(ProtocolViolation::Snapshot(shape))),
        )
    }

    /// A tool call has no non-empty function name (`tool_incomplete`, synthesis never
    /// invents a name).
    pub fn any_tool_without_name(&self) -> bool {
        self.tool_calls.iter().any(|t| t.name.is_none())
    }

    /// some tool call's `arguments` is non-empty text that does not parse as JSON
    /// (the turn is delivered but not cacheable). Empty arguments do not count (chosen).
    pub fn tool_arguments_unparsable(&self) -> bool {
        self.tool_calls
            .iter()
            .any(|t| t.arguments == ToolArguments::NotJson)
    }

    /// Some tool id was synthesized.
    pub fn any_synthesized_tool_id(&self) -> bool {
        self.tool_calls.iter().any(|t| t.id_synthesized)
    }
}

/// A JSON non-negative integer (booleans excluded), S-104.
fn count(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// Measured usage: `prompt_tokens` and `completion_tokens` both JSON non-negative
/// integers; with the S-107 details. `None` otherwise (`{}` is not measured).
///
/// A usage object that is *implausible* ([`usage_is_plausible`]) is not measured either: it is
/// treated as unavailable (the attempt settles its estimate, no cost is computed) and the
/// executor logs one warning per source (issue 22).
pub fn measured_usage(usage: &Map<String, Value>) -> Option<Usage> {
    reported_usage(usage).filter(usage_is_plausible)
}

/// The counts as reported, before the plausibility check.
fn reported_usage(usage: &Map<String, Value>) -> Option<Usage> {
    UsageFields::read(usage).reported()
}

/// The token counts of one usage object, read in one pass over its keys (a hashed lookup per
/// key costs more than comparing the few keys an object has).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct UsageFields {
    prompt: Option<u64>,
    completion: Option<u64>,
    /// `prompt_tokens_details.cached_tokens`, else `prompt_cache_hit_tokens`.
    cached: Option<u64>,
    /// `completion_tokens_details.reasoning_tokens`.
    reasoning: Option<u64>,
}

impl UsageFields {
    fn read(usage: &Map<String, Value>) -> Self {
        let mut fields = Self::default();
        let mut cache_hit = None;
        for (key, value) in usage {
            match key.as_str() {
                "prompt_tokens" => fields.prompt = count(Some(value)),
                "completion_tokens" => fields.completion = count(Some(value)),
                "prompt_tokens_details" => fields.cached = count(value.get("cached_tokens")),
                "prompt_cache_hit_tokens" => cache_hit = count(Some(value)),
                "completion_tokens_details" => {
                    fields.reasoning = count(value.get("reasoning_tokens"));
                }
                _ => {}
            }
        }
        fields.cached = fields.cached.or(cache_hit);
        fields
    }

    /// The counts when `prompt_tokens` and `completion_tokens` are both counts.
    fn reported(self) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: self.prompt?,
            completion_tokens: self.completion?,
            cached_prompt_tokens: self.cached,
            reasoning_tokens: self.reasoning,
        })
    }
}

/// Largest token count of one attempt taken as measured: 100 000 000 (10^8). No model's
/// context or output comes near it; a larger count (e.g. `prompt_tokens` = 2^64 − 1) would
/// poison the TPM window and the cost, so it is refused (issue 22; docs/decisions.md).
pub const MAX_PLAUSIBLE_TOKENS: u64 = 100_000_000;

/// Plausible usage (issue 22): every count at most [`MAX_PLAUSIBLE_TOKENS`], `cached` not above
/// `prompt_tokens`, `reasoning` not above `completion_tokens`.
pub fn usage_is_plausible(usage: &Usage) -> bool {
    let within = |n: u64| n <= MAX_PLAUSIBLE_TOKENS;
    within(usage.prompt_tokens)
        && within(usage.completion_tokens)
        && usage
            .cached_prompt_tokens
            .is_none_or(|c| c <= usage.prompt_tokens)
        && usage
            .reasoning_tokens
            .is_none_or(|r| r <= usage.completion_tokens)
}

/// `true` when `usage` reports both counts as integers but fails [`usage_is_plausible`].
pub fn usage_is_implausible(usage: &Map<String, Value>) -> bool {
    reported_usage(usage).is_some_and(|u| !usage_is_plausible(&u))
}

/// `(cached_prompt_tokens, reasoning_tokens)` of a usage object, the way the lookups read them
/// (the reference [`UsageFields::read`] is tested against).
#[cfg(test)]
fn usage_details(usage: &Map<String, Value>) -> (Option<u64>, Option<u64>) {
    let cached = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens")),
    )
    .or_else(|| count(usage.get("prompt_cache_hit_tokens")));
    let reasoning = count(
        usage
            .get("completion_tokens_details")
            .and_then(|d| d.get("reasoning_tokens")),
    );
    (cached, reasoning)
}

/// `finalize_text` of 40 S-100 with the provider profile's flag: without inline think tags the
/// inputs unchanged; with them the `<think>…</think>` spans of
/// [`crate::thinking::strip_think_tags`] move from the content to the end of the thinking.
pub(super) fn finalize_text(
    content: &str,
    thinking: &str,
    inline_think_tags: bool,
) -> (String, String) {
    if !inline_think_tags {
        return (content.to_owned(), thinking.to_owned());
    }
    let split = strip_think_tags(content);
    let mut all = String::with_capacity(thinking.len() + split.thinking.len());
    all.push_str(thinking);
    all.push_str(&split.thinking);
    (split.content, all)
}

#[cfg(test)]
mod usage_reading_tests {
    use super::*;
    use proptest::prelude::*;

    /// A usage field value: a count, a negative or fractional number, a string, null, or a
    /// details object.
    fn field() -> impl Strategy<Value = Value> {
        prop_oneof![
            (0u64..1_000_000).prop_map(Value::from),
            Just(Value::from(u64::MAX)),
            Just(Value::from(-3)),
            Just(Value::from(1.5)),
            Just(Value::from("12")),
            Just(Value::Null),
            Just(Value::Bool(true)),
            (0u64..1000)
                .prop_map(|n| serde_json::json!({"cached_tokens": n, "reasoning_tokens": n})),
            Just(serde_json::json!({"cached_tokens": "x"})),
        ]
    }

    fn usage_object() -> impl Strategy<Value = Map<String, Value>> {
        let keys = [
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "prompt_tokens_details",
            "completion_tokens_details",
            "prompt_cache_hit_tokens",
            "other",
        ];
        proptest::collection::vec((0..keys.len(), field()), 0..8).prop_map(move |pairs| {
            pairs
                .into_iter()
                .map(|(k, v)| (keys[k].to_owned(), v))
                .collect()
        })
    }

    proptest! {
        /// 05 R-56: the one-pass usage reading equals the key-by-key lookups it replaced.
        #[test]
        fn one_pass_usage_reading_equals_the_lookups(usage in usage_object()) {
            let fields = UsageFields::read(&usage);
            let (cached, reasoning) = usage_details(&usage);
            prop_assert_eq!(fields.cached, cached);
            prop_assert_eq!(fields.reasoning, reasoning);
            let looked_up = (|| {
                Some(Usage {
                    prompt_tokens: count(usage.get("prompt_tokens"))?,
                    completion_tokens: count(usage.get("completion_tokens"))?,
                    cached_prompt_tokens: cached,
                    reasoning_tokens: reasoning,
                })
            })();
            prop_assert_eq!(fields.reported(), looked_up);
        }
    }
}
