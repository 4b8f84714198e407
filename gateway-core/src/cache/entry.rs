//! The cache entry codec: the JSON stored for a response and the
//! strict restore that turns a stored string back into a hit — or into a miss on any doubt.

use gateway_ports::{
    Effort, FinishReason, LlmResponse, OpenAiChatCompletion, ResponseMode,
    StructuredOutputStrategy, StructuredSpec, ThinkingObservation, Usage, UsageSource,
};
use serde::Deserialize;
use serde_json::Value;

use crate::verdict::{effective_finish, is_cacheable_raw};

/// Serialises `response` for the cache: the JSON of its fields without
/// `structured_data` and `call_stats` (stats describe one call; replaying them would lie about
/// retries and latency), `completion` as its four fields.
///
/// Errors: the serializer's (only a value JSON cannot represent); the write path logs the
/// error's type only and skips the write.
pub fn encode_entry(response: &LlmResponse) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(response)?;
    if let Value::Object(map) = &mut value {
        map.remove("structured_data");
        map.remove("call_stats");
    }
    serde_json::to_string(&value)
}

/// Why a stored entry was not served (a miss). The read path logs it as a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreMiss {
    /// Step 1–2: not a JSON object, or a known field of the wrong type.
    #[error("cache entry is not a valid response object")]
    Malformed,
    /// Step 3: `completion` is not an object or fails the snapshot validation.
    #[error("cache entry completion is invalid")]
    Completion,
    /// Steps 4–5: the stored values are not cacheable in this call's response mode.
    #[error("cache entry is not cacheable")]
    NotCacheable,
    /// Step 7: this call's structured strategy does not accept the stored text.
    #[error("cache entry does not parse with this call's structured strategy")]
    Structured,
}

/// The raw stored form: typed where a wrong type can only mean a corrupt entry, raw
/// `Value`s where the restore judges the value itself (finish, stream end, completion,
/// observation, effort). Unknown members are ignored; missing ones take their defaults.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StoredEntry {
    content: String,
    thinking: String,
    model: String,
    provider: String,
    usage: Usage,
    source_name: String,
    usage_source: UsageSource,
    model_reported: Option<String>,
    thinking_observation: Option<Value>,
    applied_effort: Option<Value>,
    completion: Option<Value>,
    finish_reason: Option<Value>,
    stream_end: Option<Value>,
}

/// The structured part of a restore: the call's spec and its strategies.
#[derive(Clone, Copy)]
pub struct RestoreStructured<'a> {
    /// The call's spec.
    pub spec: &'a StructuredSpec,
    /// The strategy that parses the stored text (zero network): the call's round-0 strategy.
    pub strategy: &'a dyn StructuredOutputStrategy,
    /// The call's escalation strategy, tried when `strategy` refuses the stored text (the
    /// stored answer may come from a re-ask round that used it).
    pub escalation: Option<&'a dyn StructuredOutputStrategy>,
}

impl<'a> RestoreStructured<'a> {
    /// `structured_data` of a stored `content`: `strategy`'s parse, else `escalation`'s.
    ///
    /// Errors: [`RestoreMiss::Structured`] when no strategy accepts the text.
    pub fn rebuild(&self, content: &str) -> Result<serde_json::Value, RestoreMiss> {
        match self.strategy.parse(content, self.spec) {
            Ok(value) => Ok(value),
            Err(_) => match self.escalation {
                Some(escalation) => escalation
                    .parse(content, self.spec)
                    .map_err(|_| RestoreMiss::Structured),
                None => Err(RestoreMiss::Structured),
            },
        }
    }
}

impl std::fmt::Debug for RestoreStructured<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestoreStructured")
            .field("spec", &self.spec)
            .field("strategy", &self.strategy.name())
            .field("escalation", &self.escalation.map(|e| e.name()))
            .finish()
    }
}

/// Restores a stored entry for a call in `mode` (steps 1–7) and applies the hit
/// rewrite of C-58 except what belongs to the call (`call_id`, `call_stats`, set by the caller):
/// `cache_hit true`, `latency_ms 0`, `ttft_ms` / `max_inter_token_ms` / `stream_end` `None`,
/// `finish_reason` = the effective finish, `cost None`, historic completion, usage, model,
/// provider, source, observation and effort. `structured_data` is rebuilt with this call's
/// strategy; in text mode `completion` is `None`.
///
/// Errors: the [`RestoreMiss`] reason; every one is a miss.
pub fn decode_entry(
    stored: &str,
    mode: ResponseMode,
    structured: Option<RestoreStructured<'_>>,
) -> Result<LlmResponse, RestoreMiss> {
    // Step 1: an object (serde would also accept a JSON array for a struct).
    if !stored.trim_start().starts_with('{') {
        return Err(RestoreMiss::Malformed);
    }
    // Step 2: known fields only, defaults for missing ones.
    let entry: StoredEntry = serde_json::from_str(stored).map_err(|_| RestoreMiss::Malformed)?;
    // Step 3.
    let completion = match entry.completion {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(
            serde_json::from_value::<OpenAiChatCompletion>(v)
                .map_err(|_| RestoreMiss::Completion)?,
        ),
        Some(_) => return Err(RestoreMiss::Completion),
    };
    // Steps 4–5 on the stored values (the raw predicate refuses a non-string finish and an
    // illegal or salvaged stream end).
    if !is_cacheable_raw(
        mode,
        &entry.content,
        entry.finish_reason.as_ref(),
        entry.stream_end.as_ref(),
        completion.as_ref(),
    ) {
        return Err(RestoreMiss::NotCacheable);
    }
    let top = match &entry.finish_reason {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let finish =
        effective_finish(top, completion.as_ref()).and_then(|f| FinishReason::new(f.to_owned()));
    // Step 6: lenient coercions.
    let thinking_observation = match &entry.thinking_observation {
        Some(Value::String(s)) => {
            ThinkingObservation::from_wire(s).unwrap_or(ThinkingObservation::Unknown)
        }
        _ => ThinkingObservation::Unknown,
    };
    let applied_effort = match &entry.applied_effort {
        Some(Value::String(s)) => Effort::from_wire(s),
        _ => None,
    };
    // Step 7.
    let structured_data = match structured {
        Some(s) => Some(s.rebuild(&entry.content)?),
        None => None,
    };
    let mut out = LlmResponse::default();
    out.content = entry.content;
    out.thinking = entry.thinking;
    out.model = entry.model;
    out.provider = entry.provider;
    out.usage = entry.usage;
    out.latency_ms = 0;
    out.ttft_ms = None;
    out.max_inter_token_ms = None;
    out.cache_hit = true;
    out.source_name = entry.source_name;
    out.usage_source = entry.usage_source;
    out.structured_data = structured_data;
    out.model_reported = entry.model_reported;
    out.thinking_observation = thinking_observation;
    out.applied_effort = applied_effort;
    out.cost = None;
    out.call_stats = None;
    out.completion = match mode {
        ResponseMode::OpenAi => completion,
        ResponseMode::Text => None,
    };
    out.finish_reason = finish;
    out.stream_end = None;
    Ok(out)
}
