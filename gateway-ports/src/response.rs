//! Response and result types returned to callers: `LlmResponse` (with the fidelity snapshot
//! `OpenAiChatCompletion`), `Usage`, `CallStats`, `EmbeddingResponse`, the OCR results.
//!
//! Owns their shape. They are append-only: `#[non_exhaustive]`, `Default`,
//! all fields `pub`, so third parties build them with `Default` plus field assignment; serde
//! round-trips them with `#[serde(default)]` so older serialised values still load.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::vocab::{Effort, FinishReason, StreamEnd, ThinkingObservation, UsageSource};

/// Token usage. `None` = not reported, never zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens (includes reasoning tokens when the vendor counts them there).
    pub completion_tokens: u64,
    /// Vendor prompt-cache hits; `None` = not reported.
    pub cached_prompt_tokens: Option<u64>,
    /// Reasoning tokens; `None` = not reported ("unavailable ≠ zero").
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Usage with these two counts and the optional counts unreported.
    pub const fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            cached_prompt_tokens: None,
            reasoning_tokens: None,
        }
    }
}

/// Frozen statistics of one logical call. Field order is the original's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct CallStats {
    /// UUIDv4 shared by every attempt of the call; fresh on a cache hit.
    pub logical_call_id: String,
    /// Attempts registered (passed admission, reached the transport).
    pub attempts: u32,
    /// Injected-clock ms from the statistics boundary to the snapshot.
    pub total_latency_ms: u64,
    /// Hedge legs actually dispatched over all rounds.
    pub hedges: u32,
    /// Net generation time in ms (60): winning wall minus stall, clamped at 0.
    pub generation_ms: u64,
    /// The final hedged round was won by the hedge leg.
    pub hedge_won: bool,
    /// Above-threshold mid-stream silence in ms on the winning leg; `None` = not observed.
    pub stall_ms: Option<u64>,
    /// Gaps counted in `stall_ms`; `None` together with it.
    pub stall_count: Option<u32>,
}

impl CallStats {
    /// The original's three-argument constructor; the rest at defaults.
    pub fn new(logical_call_id: impl Into<String>, attempts: u32, total_latency_ms: u64) -> Self {
        Self {
            logical_call_id: logical_call_id.into(),
            attempts,
            total_latency_ms,
            ..Self::default()
        }
    }
}

/// Why [`OpenAiChatCompletion::try_new`] refused a snapshot.
/// The display text is the fixed reason; values are never included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompletionShapeError {
    /// `message.role` is not `"assistant"`.
    #[error("completion message must have role assistant")]
    Role,
    /// `content` or `reasoning_content` is neither a string nor null.
    #[error("completion content/reasoning_content must be a string or null")]
    ContentType,
    /// `tool_calls` is neither absent, null nor an array.
    #[error("completion tool_calls must be an array or null")]
    ToolCallsType,
    /// A tool call's id, type or function fields are missing, conflicting or invalid.
    #[error("completion tool identity or function fields missing, conflicting or invalid")]
    ToolShape,
}

/// The fidelity snapshot of the single choice (the original `OpenAIChatCompletion`).
///
/// Fields are private; the only constructor is [`OpenAiChatCompletion::try_new`] and
/// `Deserialize` goes through it, so a malformed cache entry is refused (a miss).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawCompletion")]
pub struct OpenAiChatCompletion {
    message: Map<String, Value>,
    finish_reason: Option<String>,
    response_id: Option<String>,
    usage: Option<Map<String, Value>>,
}

/// Unchecked serde form of [`OpenAiChatCompletion`].
#[derive(Deserialize)]
struct RawCompletion {
    message: Map<String, Value>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
}

impl TryFrom<RawCompletion> for OpenAiChatCompletion {
    type Error = CompletionShapeError;

    fn try_from(raw: RawCompletion) -> Result<Self, Self::Error> {
        Self::try_new(raw.message, raw.finish_reason, raw.response_id, raw.usage)
    }
}

impl OpenAiChatCompletion {
    /// Checks and builds a snapshot, in order: role is `assistant`; `content` and
    /// `reasoning_content` a string or null (absent is fine; `content` may also be an array of
    /// objects with a string `type`); `tool_calls` absent, null or an
    /// array; every non-null tool has a non-empty string `id` unique within the message,
    /// `type == "function"` and an object `function` with a non-empty string `name` and a string
    /// `arguments`. An empty `finish_reason` or `response_id` is absent.
    pub fn try_new(
        message: Map<String, Value>,
        finish_reason: Option<String>,
        response_id: Option<String>,
        usage: Option<Map<String, Value>>,
    ) -> Result<Self, CompletionShapeError> {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            return Err(CompletionShapeError::Role);
        }
        for key in ["content", "reasoning_content"] {
            match message.get(key) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                // README D21: `content` as an array of typed parts is kept raw.
                Some(Value::Array(parts))
                    if key == "content"
                        && parts
                            .iter()
                            .all(|p| p.get("type").is_some_and(Value::is_string)) => {}
                Some(_) => return Err(CompletionShapeError::ContentType),
            }
        }
        match message.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(tools)) => check_tools(tools)?,
            Some(_) => return Err(CompletionShapeError::ToolCallsType),
        }
        Ok(Self {
            message,
            finish_reason: finish_reason.filter(|s| !s.is_empty()),
            response_id: response_id.filter(|s| !s.is_empty()),
            usage,
        })
    }

    /// The assembled assistant message, lossless.
    pub fn message(&self) -> &Map<String, Value> {
        &self.message
    }

    /// Raw upstream finish_reason; never `""`.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// Upstream response `id`; never back-filled, never `""`.
    pub fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    /// Snapshot of the last non-null usage object, untouched.
    pub fn usage(&self) -> Option<&Map<String, Value>> {
        self.usage.as_ref()
    }

    /// `message.tool_calls` as a slice (empty when absent or null).
    pub fn tool_calls(&self) -> &[Value] {
        match self.message.get("tool_calls") {
            Some(Value::Array(tools)) => tools,
            _ => &[],
        }
    }

    /// Consumes the snapshot and returns its message.
    pub fn into_message(self) -> Map<String, Value> {
        self.message
    }
}

fn check_tools(tools: &[Value]) -> Result<(), CompletionShapeError> {
    let mut seen: Vec<&str> = Vec::with_capacity(tools.len());
    for tool in tools {
        let tool = match tool {
            Value::Null => continue,
            Value::Object(tool) => tool,
            _ => return Err(CompletionShapeError::ToolShape),
        };
        let id = match tool.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id,
            _ => return Err(CompletionShapeError::ToolShape),
        };
        if seen.contains(&id) {
            return Err(CompletionShapeError::ToolShape);
        }
        seen.push(id);
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Err(CompletionShapeError::ToolShape);
        }
        let Some(Value::Object(function)) = tool.get("function") else {
            return Err(CompletionShapeError::ToolShape);
        };
        match function.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => {}
            _ => return Err(CompletionShapeError::ToolShape),
        }
        if !matches!(function.get("arguments"), Some(Value::String(_))) {
            return Err(CompletionShapeError::ToolShape);
        }
    }
    Ok(())
}

/// The result of `GatewayClient::chat`. Built only by the core (or the cache read path).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct LlmResponse {
    /// Text projection (think tags stripped per provider profile).
    pub content: String,
    /// Reasoning projection.
    pub thinking: String,
    /// Configured model of the winning source.
    pub model: String,
    /// Provider of the winning source.
    pub provider: String,
    /// Token usage of the winning attempt.
    pub usage: Usage,
    /// Winning attempt wall time in ms; `0` on a cache hit.
    pub latency_ms: u64,
    /// Request sent → first progress chunk, in ms; `None` for non-stream and cache hits.
    pub ttft_ms: Option<f64>,
    /// Largest gap between adjacent progress chunks in ms.
    pub max_inter_token_ms: Option<f64>,
    /// Served from the response cache.
    pub cache_hit: bool,
    /// UUIDv4 of the producing attempt; fresh on a cache hit.
    pub call_id: String,
    /// The winning source.
    pub source_name: String,
    /// Trust level of `usage`.
    pub usage_source: UsageSource,
    /// Parsed structured output.
    pub structured_data: Option<Value>,
    /// First valid model name the upstream reported.
    pub model_reported: Option<String>,
    /// Whether the model reasoned (70).
    pub thinking_observation: ThinkingObservation,
    /// The level actually sent upstream; `None` = none stated.
    pub applied_effort: Option<Effort>,
    /// Always `None`: cost exists only in telemetry.
    pub cost: Option<f64>,
    /// Statistics of the logical call; `None` only on third-party values (= unknown).
    pub call_stats: Option<CallStats>,
    /// `Some` iff `response_mode = OpenAi`.
    pub completion: Option<OpenAiChatCompletion>,
    /// Raw upstream finish_reason (`""` counts as not reported).
    pub finish_reason: Option<FinishReason>,
    /// How the winning stream ended; `None` for non-stream and cache hits.
    pub stream_end: Option<StreamEnd>,
}

/// The result of `EmbeddingClient::embed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct EmbeddingResponse {
    /// One vector per input text, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Common vector dimension; `0` for empty input.
    pub dim: u32,
    /// Configured model of the first batch's source.
    pub model: String,
    /// Provider of the first batch's source.
    pub provider: String,
    /// Summed usage; `completion_tokens` = 0.
    pub usage: Usage,
    /// Weakest usage source over batches (default `Measured`).
    pub usage_source: UsageSource,
    /// Sum of the successful batch attempts' latencies in ms.
    pub latency_ms: u64,
    /// call_id of the first batch's successful attempt; fresh for empty input.
    pub call_id: String,
    /// Source name, or the distinct names in first-use order joined by `,`.
    pub source_name: String,
    /// Always `None`.
    pub cost: Option<f64>,
    /// Whole call, all batches.
    pub call_stats: Option<CallStats>,
}

impl Default for EmbeddingResponse {
    fn default() -> Self {
        Self {
            vectors: Vec::new(),
            dim: 0,
            model: String::new(),
            provider: String::new(),
            usage: Usage::default(),
            usage_source: UsageSource::Measured,
            latency_ms: 0,
            call_id: String::new(),
            source_name: String::new(),
            cost: None,
            call_stats: None,
        }
    }
}

/// The result of `OcrClient::recognize_text`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct OcrTextResult {
    /// Recognised text; `""` is the legal "no text".
    pub text: String,
    /// The source that served it.
    pub source_name: String,
    /// Always zeros (OCR has no tokens).
    pub usage: Usage,
    /// Attempt latency in ms.
    pub latency_ms: u64,
    /// The attempt's call_id.
    pub call_id: String,
    /// The upstream envelope.
    pub raw: Value,
    /// Statistics of the logical call.
    pub call_stats: Option<CallStats>,
}

/// One layout element, mapped from a `_content_list.json` item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OcrLayoutElement {
    /// `item.type`.
    pub kind: String,
    /// `item.page_idx`.
    pub page_index: Option<u64>,
    /// `item.text`, else `item.table_body`.
    pub text: Option<String>,
    /// `item.img_path`.
    pub image_path: Option<String>,
    /// The whole item.
    pub raw: Value,
}

/// A page size `[width, height]`; serialises as a two-element array.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PageSize(pub f64, pub f64);

impl PageSize {
    /// Page width.
    pub fn width(&self) -> f64 {
        self.0
    }

    /// Page height.
    pub fn height(&self) -> f64 {
        self.1
    }
}

/// The result of `OcrClient::parse_layout`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct OcrLayoutResult {
    /// Elements in order; empty is the legal "no elements".
    pub elements: Vec<OcrLayoutElement>,
    /// Page sizes in page order.
    pub page_sizes: Vec<PageSize>,
    /// The `.md` member, or `""`.
    pub markdown: String,
    /// The source that served it.
    pub source_name: String,
    /// Always zeros.
    pub usage: Usage,
    /// Attempt latency in ms.
    pub latency_ms: u64,
    /// The attempt's call_id.
    pub call_id: String,
    /// The upstream parse envelope.
    pub raw: Value,
    /// Statistics of the logical call.
    pub call_stats: Option<CallStats>,
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "prompt={} completion={}",
            self.prompt_tokens, self.completion_tokens
        )
    }
}
