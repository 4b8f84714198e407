//! The generated answers of a response: a chat [`Completion`] (reasoning, tool calls, usage
//! frames) and an [`Embedding`].
//!
//! Separate from the response envelope: these say what the body holds, not how it is framed.

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

/// A generated chat completion (spec 15 "Completion"): SSE frames when the request has
/// `"stream": true`, else one `chat.completion` JSON body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// Assistant text, split evenly (by characters) across `chunks` content frames.
    #[serde(default)]
    pub content: String,
    /// Reasoning text, sent before the content (split like the content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Which delta/message field carries the reasoning.
    #[serde(default)]
    pub reasoning_field: ReasoningField,
    /// Tool calls, each sent as an identity frame then argument fragments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The finish frame's `finish_reason`; `None` (JSON `null`) sends no finish frame.
    /// Default `"stop"`.
    #[serde(default = "default_finish_reason")]
    pub finish_reason: Option<String>,
    /// The usage object: computed from lengths (field absent), omitted (`null`) or given.
    #[serde(default, skip_serializing_if = "UsageSpec::is_computed")]
    pub usage: UsageSpec,
    /// Where the usage goes in a stream.
    #[serde(default)]
    pub usage_frame: UsageFrame,
    /// Number of content frames (and of reasoning frames, and of argument fragments per tool
    /// call), at most one per character; default 8, must be >= 1.
    #[serde(default = "default_chunks")]
    pub chunks: u32,
    /// Delay before the first frame of the stream, in milliseconds.
    #[serde(default)]
    pub ttft_ms: u64,
    /// Delay before every later reasoning, content, tool and finish frame, in milliseconds.
    #[serde(default)]
    pub inter_chunk_ms: u64,
    /// Whether `data: [DONE]` ends the stream; default true.
    #[serde(default = "default_true")]
    pub done: bool,
    /// The `model` written in the frames; default: the request's model (else `sim-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_finish_reason() -> Option<String> {
    Some("stop".to_owned())
}

fn default_chunks() -> u32 {
    8
}

pub(super) fn default_true() -> bool {
    true
}

impl Default for Completion {
    fn default() -> Self {
        Self {
            content: String::new(),
            reasoning: None,
            reasoning_field: ReasoningField::default(),
            tool_calls: Vec::new(),
            finish_reason: default_finish_reason(),
            usage: UsageSpec::default(),
            usage_frame: UsageFrame::default(),
            chunks: default_chunks(),
            ttft_ms: 0,
            inter_chunk_ms: 0,
            done: true,
            model: None,
        }
    }
}

impl Completion {
    /// A completion of this text with every other field at its default.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// The field that carries reasoning text in deltas and messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningField {
    /// `reasoning_content` (DeepSeek style).
    #[default]
    ReasoningContent,
    /// `reasoning` (OpenRouter style).
    Reasoning,
}

impl ReasoningField {
    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning_content",
            Self::Reasoning => "reasoning",
        }
    }
}

/// One tool call of a completion.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call id; absent sends a tool call without `id` (case 012).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function name.
    pub name: String,
    /// The function arguments, as raw text (not necessarily valid JSON).
    #[serde(default)]
    pub arguments: String,
}

/// Where a stream's usage goes (spec 15 `usage_frame`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageFrame {
    /// A trailing `{"choices": [], "usage": …}` frame after the finish frame.
    #[default]
    Separate,
    /// `usage` on the finish frame (not sent when there is no finish frame).
    InFinish,
    /// No usage in the stream.
    None,
}

/// The completion's usage: JSON field absent → [`UsageSpec::Computed`], `null` →
/// [`UsageSpec::Omitted`], an object → [`UsageSpec::Given`].
#[derive(Debug, Clone, Default, PartialEq)]
pub enum UsageSpec {
    /// Computed from lengths: tokens = ceil(characters / 4) of the prompt and of the output.
    #[default]
    Computed,
    /// No usage anywhere (non-stream body without `usage`, no usage frame).
    Omitted,
    /// This object, verbatim (`prompt_tokens`, `completion_tokens`, any extra fields).
    Given(serde_json::Map<String, serde_json::Value>),
}

impl UsageSpec {
    /// Whether this is the default (computed) usage.
    pub fn is_computed(&self) -> bool {
        matches!(self, Self::Computed)
    }
}

impl Serialize for UsageSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Computed | Self::Omitted => serializer.serialize_none(),
            Self::Given(m) => m.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for UsageSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match Option::<serde_json::Map<String, serde_json::Value>>::deserialize(deserializer)? {
                None => Self::Omitted,
                Some(m) => Self::Given(m),
            },
        )
    }
}

/// A generated embeddings response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Embedding {
    /// Dimensions of each vector.
    pub dim: u32,
}
