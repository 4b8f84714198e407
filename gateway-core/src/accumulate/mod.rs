//! Chunk accumulation: the pure, synchronous state machine that turns the JSON chunks of one
//! streamed attempt — or one non-stream 200 body — into an [`Accumulated`] result (40 §4–§6,
//! §9–§13; README D12).
//!
//! Owns, per attempt (created fresh, never shared between retries or hedge legs):
//! - frame admission on a chunk: object check, in-band `error` key (classified by
//!   [`crate::classify`]), `usage` type and sink, model sink;
//! - accumulation: the chunk `id` and `finish_reason` identity rules with `""` as
//!   absent, choice selection, `null` = absent at every level, content and reasoning
//!   fragments, tool calls with the D13 slot rules and synthesized ids, the lossless
//!   unknown-field merge of openai mode with conflict deletion, usage position;
//! - per-frame facts the executor needs: progress, finish, usage ([`FrameFacts`]);
//! - post-stream assembly inputs (§9–§11): thinking projection, think-tag stripping where the
//!   provider profile asks, measured usage, dialect warnings in S-95
//!   order, the openai snapshot ([`Accumulated::completion`]);
//! - the non-stream body ([`parse_non_stream_body`]) through the same rules;
//! - the per-attempt memory bound: retained bytes and tool-call slots.
//!
//! It never reads a clock, never logs and never judges completeness: the executor drives it,
//! the verdict (50) judges [`Accumulated`], and the client's [`WarningThrottle`] logs warnings.
//! Failures are typed ([`AccumulateError`]) and become a [`Classification`] through
//! [`AccumulateError::classify`]. It never panics on any JSON value.

mod body;
mod fast;
mod merge;
mod tools;
mod warnings;

use std::collections::BTreeSet;

use gateway_ports::{
    AttemptFailure, Category, ChunkJson, CompletionShapeError, FinishClass, FinishReason,
    OpenAiChatCompletion, ReasonCode, ResponseMode, Usage, UsageSource, WireNotice,
};
use serde_json::{Map, Value};

use crate::classify::{
    Classification, ClassifyContext, classify_error_value, classify_frame_too_large,
};
use crate::thinking::strip_think_tags;

pub use body::{parse_non_stream_body, parse_non_stream_value};
pub use tools::{MAX_TOOL_SLOTS, synthesized_tool_id};
pub use warnings::{
    Admission, DialectWarning, SATURATION_MESSAGE, WARNING_CAPACITY, WarningThrottle,
};

use merge::{MergeState, fragment_progress};
use tools::{ToolCalls, append_string};

/// Default per-attempt cap on retained response bytes: 64 MiB (`MAX_RESPONSE_BYTES`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Most dialect warnings one attempt collects (40 S-116 capacity; chosen per attempt too).
const WARNINGS_PER_ATTEMPT: usize = WARNING_CAPACITY;

/// Per-attempt options of the accumulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccumulateOptions {
    /// The attempt's `call_id` (a UUIDv4): the hash key of synthesized tool ids when the
    /// upstream sent no response id.
    pub call_id: String,
    /// The source name; used in classification messages and warning texts only.
    pub source_name: String,
    /// Cap on the bytes an attempt retains (stream) or on the body length (non-stream), in
    /// bytes; beyond it → `ResultInvalid(response_too_large)`. Default 64 MiB.
    pub max_response_bytes: usize,
    /// Whether the provider profile strips inline `<think>…</think>` from the text projection
    /// (the `qwen` profile). Default `false`.
    pub inline_think_tags: bool,
}

impl AccumulateOptions {
    /// Options with the defaults: 64 MiB, no inline think tags.
    pub fn new(call_id: impl Into<String>, source_name: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            source_name: source_name.into(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            inline_think_tags: false,
        }
    }
}

/// Why a chunk or body broke the protocol: `Transient(protocol_error)` with this reason.
/// [`ProtocolViolation::reason`] is the spec's reason text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolViolation {
    /// the chunk or body is not a JSON object.
    NotObject,
    /// `usage` present, non-null and not an object.
    UsageNotObject,
    /// the chunk `id` is not a string (openai stream).
    IdNotString,
    /// a second, different non-empty chunk `id` (openai stream).
    IdConflict,
    /// `choices` is not an array.
    ChoicesNotArray,
    /// S-46, S-111: openai mode needs exactly one choice.
    SingleChoiceOnly,
    /// S-46, S-47, S-111: a choice is not an object.
    ChoiceNotObject,
    /// S-46, S-111: the openai choice index is not the integer 0.
    ChoiceIndexNotZero,
    /// the openai stream finish_reason is not a string.
    FinishReasonNotString,
    /// the openai non-stream finish_reason is neither a string nor null.
    FinishReasonNotStringOrNull,
    /// a second, different non-empty finish_reason (openai stream).
    FinishReasonConflict,
    /// `delta` is not an object.
    DeltaNotObject,
    /// S-54, S-111: a role other than `assistant` (openai).
    RoleNotAssistant,
    /// `content` is neither a string nor null.
    ContentType,
    /// `reasoning_content` is neither a string nor null.
    ReasoningContentType,
    /// `tool_calls` is not an array (openai stream).
    ToolCallsNotArray,
    /// a tool element is not an object.
    ToolNotObject,
    /// a tool `index` is not a non-negative integer.
    ToolIndex,
    /// S-61, S-62: a tool `id` is not a string.
    ToolIdNotString,
    /// a tool `type` is not a string.
    ToolTypeNotString,
    /// a second, different tool `type` for one call.
    ToolTypeConflict,
    /// `function` is not an object.
    FunctionNotObject,
    /// `function.name` is neither a string nor null.
    FunctionNameType,
    /// `function.arguments` is neither a string nor null.
    FunctionArgumentsType,
    /// a tool call would need a slot beyond [`MAX_TOOL_SLOTS`].
    TooManyToolCalls,
    /// S-111 (text): `choices` absent, `null` or `[]` in a non-stream body.
    NoChoices,
    /// S-111 (text): `choices` not an array or `choices[0]` not an object.
    ChoicesMalformed,
    /// the message is not an object, or its content/reasoning_content has a bad type.
    MessageMalformed,
    /// the snapshot failed `OpenAiChatCompletion::try_new`.
    Snapshot(CompletionShapeError),
}

impl ProtocolViolation {
    /// The reason text; never contains payload data.
    pub fn reason(self) -> &'static str {
        match self {
            Self::NotObject => "chat response must be a JSON object",
            Self::UsageNotObject => "usage must be an object or null",
            Self::IdNotString | Self::ToolIdNotString => "id must be a string",
            Self::IdConflict => "id conflict",
            Self::ChoicesNotArray => "choices must be an array",
            Self::SingleChoiceOnly => "only a single choice is supported",
            Self::ChoiceNotObject => "choice must be an object",
            Self::ChoiceIndexNotZero => "choice index must be 0",
            Self::FinishReasonNotString => "finish_reason must be a string",
            Self::FinishReasonNotStringOrNull => "finish_reason must be a string or null",
            Self::FinishReasonConflict => "finish_reason conflict",
            Self::DeltaNotObject => "delta must be an object",
            Self::RoleNotAssistant => "role must be assistant",
            Self::ContentType => "content must be a string or null",
            Self::ReasoningContentType => "reasoning_content must be a string or null",
            Self::ToolCallsNotArray => "tool_calls must be an array",
            Self::ToolNotObject => "tool must be an object",
            Self::ToolIndex => "tool index must be a non-negative integer",
            Self::ToolTypeNotString => "type must be a string",
            Self::ToolTypeConflict => "type conflict",
            Self::FunctionNotObject => "function must be an object",
            Self::FunctionNameType => "name must be a string or null",
            Self::FunctionArgumentsType => "arguments must be a string or null",
            Self::TooManyToolCalls => "more than 1024 tool-call slots",
            Self::NoChoices => "response has no choices",
            Self::ChoicesMalformed => "choices malformed",
            Self::MessageMalformed => "message malformed",
            // 50 V-46: the snapshot reasons carry the `completion` prefix.
            Self::Snapshot(shape) => match shape {
                CompletionShapeError::Role => "completion message must have role assistant",
                CompletionShapeError::ContentType => {
                    "completion content/reasoning_content must be a string or null"
                }
                CompletionShapeError::ToolCallsType => {
                    "completion tool_calls must be an array or null"
                }
                _ => "completion tool identity or function fields missing, conflicting or invalid",
            },
        }
    }
}

/// A failed chunk or body. Once a chunk fails, the attempt is
/// over: the accumulator repeats the error for every later chunk.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AccumulateError {
    /// `Transient(protocol_error)` with this reason.
    #[error("protocol_error: {}", .0.reason())]
    Protocol(ProtocolViolation),
    /// A top-level `error` key, whatever its value: the boxed value of that key.
    /// Its category comes from [`classify_error_value`].
    #[error("upstream chat error frame")]
    ErrorFrame(Box<Value>),
    /// `ResultInvalid(response_too_large)`.
    #[error("response_too_large: over {limit_bytes} bytes")]
    ResponseTooLarge {
        /// The cap that was exceeded, in bytes.
        limit_bytes: usize,
    },
    /// A non-stream body that is empty or whitespace only: `Transient(empty_response)`.
    #[error("empty_response")]
    EmptyResponse,
    /// A non-stream body that is not JSON: `Transient(invalid_json)`; never echoed.
    #[error("invalid_json")]
    InvalidJson,
}

impl AccumulateError {
    /// Turns the failure into the classifier's verdict:
    /// protocol → `Transient(protocol_error)`, message
    /// `"{source}: malformed chat response (protocol_error): {reason}"`; error frame →
    /// [`classify_error_value`]; too large → [`classify_frame_too_large`]; empty body →
    /// `Transient(empty_response)`; invalid JSON → `Transient(invalid_json)`.
    pub fn classify(&self, ctx: &ClassifyContext<'_>) -> Classification {
        let source = ctx.source_name;
        let (code, message) = match self {
            Self::ErrorFrame(value) => return classify_error_value(value, ctx),
            Self::ResponseTooLarge { limit_bytes } => {
                return classify_frame_too_large(*limit_bytes, ctx);
            }
            Self::Protocol(violation) => (
                ReasonCode::ProtocolError,
                format!(
                    "{source}: malformed chat response (protocol_error): {}",
                    violation.reason()
                ),
            ),
            Self::EmptyResponse => (
                ReasonCode::EmptyResponse,
                format!("{source}: empty response body (empty_response)"),
            ),
            Self::InvalidJson => (
                ReasonCode::InvalidJson,
                format!("{source}: response body is not JSON (invalid_json)"),
            ),
        };
        let mut failure = AttemptFailure::new(message, ctx.operation);
        failure.source_name = Some(source.to_owned());
        failure.reason_code = Some(code);
        Classification::new(Category::Transient, failure)
    }
}

/// The fragments of one frame: strings, `""` when absent, and whether the frame is
/// progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatDelta {
    /// The `content` fragment.
    pub content: String,
    /// The `reasoning_content` fragment.
    pub reasoning_content: String,
    /// The `reasoning` alias fragment.
    pub reasoning: String,
    /// Whether the frame is progress: at most one progress event per frame.
    pub progress: bool,
}

/// What one chunk told the executor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameFacts {
    /// The frame's fragments and progress flag.
    pub delta: ChatDelta,
    /// A choice was selected in this frame; `false` for usage-only and
    /// annotation frames.
    pub choice_selected: bool,
    /// This frame recorded the finish_reason for the first time.
    pub finish_recorded: bool,
    /// A finish_reason is recorded, after this frame.
    pub finish_seen: bool,
    /// This frame carried a non-null usage object, now the last usage.
    pub usage_recorded: bool,
}

impl FrameFacts {
    /// `true` when the frame is progress: drives watchdogs, TTFT and stall timestamps.
    pub fn is_progress(&self) -> bool {
        self.delta.progress
    }
}

/// The accumulator of one streamed attempt. Create one per attempt.
#[derive(Debug)]
pub struct Accumulator {
    mode: ResponseMode,
    options: AccumulateOptions,
    /// The openai message being assembled (without the calls, which live in `tools`).
    message: Map<String, Value>,
    merger: MergeState,
    tools: ToolCalls,
    content: String,
    reasoning_content: String,
    reasoning: String,
    /// A non-empty `reasoning_content` fragment arrived.
    reasoning_content_seen: bool,
    finish_reason: Option<String>,
    usage_after_finish: bool,
    response_id: Option<String>,
    model: Option<String>,
    usage: Option<Map<String, Value>>,
    text_bytes: usize,
    notices: Vec<DialectWarning>,
    failed: Option<AccumulateError>,
    /// the accumulated `refusal` fragments.
    refusal: String,
    /// text mode saw at least one tool-call element.
    text_tool_calls: bool,
}

impl Accumulator {
    /// A fresh accumulator for one attempt in `mode`.
    pub fn new(mode: ResponseMode, options: AccumulateOptions) -> Self {
        Self {
            mode,
            options,
            message: Map::new(),
            merger: MergeState::default(),
            tools: ToolCalls::default(),
            content: String::new(),
            reasoning_content: String::new(),
            reasoning: String::new(),
            reasoning_content_seen: false,
            finish_reason: None,
            usage_after_finish: false,
            response_id: None,
            model: None,
            usage: None,
            text_bytes: 0,
            notices: Vec::new(),
            failed: None,
            refusal: String::new(),
            text_tool_calls: false,
        }
    }

    /// The mode this accumulator was built for.
    pub fn mode(&self) -> ResponseMode {
        self.mode
    }

    /// Admits and accumulates one chunk (`WireEvent::Chunk`), in the order S-34, S-35, S-36,
    /// S-37/S-38, S-39. Errors: [`AccumulateError::Protocol`],
    /// [`AccumulateError::ErrorFrame`], [`AccumulateError::ResponseTooLarge`] when
    /// the retained bytes pass `max_response_bytes`. After an error every later call
    /// returns the same error.
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<FrameFacts, AccumulateError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.admit(chunk);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    /// Admits one chunk as the transport delivered it ([`ChunkJson`]): the same rules
    /// and results as [`Accumulator::push_chunk`] on its parsed value. In text mode the common
    /// chunk shapes are read straight from the text without building a `Value`; any
    /// other shape, and every chunk in openai mode, goes through [`Accumulator::push_chunk`].
    pub fn push_json(&mut self, chunk: &ChunkJson) -> Result<FrameFacts, AccumulateError> {
        if self.mode == ResponseMode::Text
            && self.failed.is_none()
            && let Some(frame) = chunk.text_frame()
        {
            let result = self.admit_text_frame(frame);
            if let Err(error) = &result {
                self.failed = Some(error.clone());
            }
            return result;
        }
        self.push_chunk(&chunk.to_value())
    }

    /// Text-mode admission of a frame read by the transport's check (`TextFrame::read`): `admit` restricted to
    /// the shapes that reader accepts (no `error` key; `usage` null or an object; string or
    /// absent `id`, `model`, `finish_reason`; deltas of `role`, `content`, `reasoning_content`
    /// and `reasoning` only).
    fn admit_text_frame(
        &mut self,
        mut frame: fast::TextFrame<'_>,
    ) -> Result<FrameFacts, AccumulateError> {
        if self.model.is_none() {
            self.model = frame.model.as_deref().and_then(model_text);
        }
        if let Some(id) = &frame.id {
            self.string_id(id)?;
        }
        let mut facts = FrameFacts::default();
        if let Some(choice) = frame.choice() {
            facts.choice_selected = true;
            let mut progress = false;
            for (key, fragment) in [
                ("content", &choice.delta.content),
                ("reasoning_content", &choice.delta.reasoning_content),
                ("reasoning", &choice.delta.reasoning),
            ] {
                if let Some(fragment) = fragment {
                    self.take_fragment(key, fragment, &mut facts.delta);
                    progress |= !fragment.is_empty();
                }
            }
            facts.delta.progress = progress;
            if let Some(reason) = &choice.finish_reason {
                self.string_finish(reason, &mut facts)?;
            }
        }
        self.end_frame(frame.usage.take(), facts)
    }

    /// Records a framing notice: `SplitDataLines` raises the `sse:split_data_lines`
    /// dialect warning. Never progress.
    pub fn push_notice(&mut self, notice: WireNotice) {
        match notice {
            WireNotice::SplitDataLines => {
                if !self.notices.contains(&DialectWarning::SplitDataLines) {
                    self.notices.push(DialectWarning::SplitDataLines);
                }
            }
        }
    }

    /// The recorded finish_reason, raw; never `""`.
    pub fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// `true` once a finish_reason is recorded.
    pub fn finish_seen(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// `true` when a usage object arrived in or after the finish frame.
    pub fn usage_after_finish(&self) -> bool {
        self.usage_after_finish
    }

    /// The normalized conflict paths so far, sorted.
    pub fn conflicts(&self) -> &BTreeSet<String> {
        &self.merger.conflicts
    }

    /// The fixed response id (openai; text mode: the first non-empty string id, never
    /// checked); never `""`.
    pub fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    /// The openai message so far: a deep copy whose `tool_calls` holds the calls in slot
    /// order with synthesized ids, or what S-58/S-60 set when there are no calls.
    /// `None` in text mode.
    pub fn raw_message(&self) -> Option<Map<String, Value>> {
        self.assemble_message().map(|(message, _)| message)
    }

    fn assemble_message(&self) -> Option<(Map<String, Value>, Vec<bool>)> {
        if self.mode != ResponseMode::OpenAi {
            return None;
        }
        let mut message = self.message.clone();
        let mut synthesized = Vec::new();
        if !self.tools.is_empty() {
            let key = self.response_id.as_deref().unwrap_or(&self.options.call_id);
            let (tools, flags) = self.tools.snapshot(key);
            synthesized = flags;
            message.insert("tool_calls".to_owned(), Value::Array(tools));
        }
        Some((message, synthesized))
    }

    /// Post-stream assembly inputs (S-95 steps 1–4, 6): warnings in S-95 order, the thinking
    /// projection, `finalize_text`, the message (openai), usage facts.
    pub fn finish(self) -> Accumulated {
        let assembled = self.assemble_message();
        let mut warnings = self.notices.clone();
        for path in &self.merger.conflicts {
            warnings.push(DialectWarning::FieldConflict { path: path.clone() });
        }
        let (message, synthesized) = match assembled {
            Some((message, synthesized)) => (Some(message), synthesized),
            None => (None, Vec::new()),
        };
        if synthesized.iter().any(|s| *s) {
            warnings.push(DialectWarning::SynthesizedToolId);
        }
        let finish_reason = self.finish_reason.and_then(FinishReason::new);
        push_finish_warning(&mut warnings, finish_reason.as_ref());
        warnings.truncate(WARNINGS_PER_ATTEMPT);
        let thinking_raw = if self.reasoning_content_seen {
            self.reasoning_content
        } else {
            self.reasoning
        };
        let (content, thinking) =
            finalize_text(&self.content, &thinking_raw, self.options.inline_think_tags);
        let tool_calls = message
            .as_ref()
            .map(|m| summarize_tools(m, &synthesized))
            .unwrap_or_default();
        Accumulated {
            mode: self.mode,
            content,
            thinking,
            finish_seen: finish_reason.is_some(),
            finish_reason,
            response_id: self.response_id,
            model_reported: self.model,
            usage_raw: self.usage,
            usage_after_finish: self.usage_after_finish,
            message,
            tool_calls,
            conflicts: self.merger.conflicts,
            warnings,
            refusal: self.refusal,
            tool_calls_in_text: self.text_tool_calls,
        }
    }

    fn retained_bytes(&self) -> usize {
        self.text_bytes.saturating_add(self.merger.retained_bytes)
    }

    fn charge_text(&mut self, bytes: usize) {
        self.text_bytes = self.text_bytes.saturating_add(bytes);
    }

    fn admit(&mut self, chunk: &Value) -> Result<FrameFacts, AccumulateError> {
        let Value::Object(chunk) = chunk else {
            return Err(AccumulateError::Protocol(ProtocolViolation::NotObject));
        };
        if let Some(error) = chunk.get("error") {
            return Err(AccumulateError::ErrorFrame(Box::new(error.clone())));
        }
        let usage = match chunk.get("usage") {
            None | Some(Value::Null) => None,
            Some(Value::Object(usage)) => Some(usage),
            Some(_) => return Err(AccumulateError::Protocol(ProtocolViolation::UsageNotObject)),
        };
        if self.model.is_none() {
            self.model = model_of(chunk);
        }
        self.chunk_id(chunk.get("id"))?;

        let mut facts = FrameFacts::default();
        match chunk.get("choices") {
            None | Some(Value::Null) => {}
            Some(Value::Array(choices)) => {
                if let Some(choice) = self.select_choice(choices)? {
                    facts.choice_selected = true;
                    self.choice(choice, &mut facts)?;
                }
            }
            Some(_) => {
                return Err(AccumulateError::Protocol(
                    ProtocolViolation::ChoicesNotArray,
                ));
            }
        }
        self.end_frame(usage.cloned(), facts)
    }

    /// The tail of frame admission shared by both readings: finish state, the usage sink
    /// and the memory bound.
    fn end_frame(
        &mut self,
        usage: Option<Map<String, Value>>,
        mut facts: FrameFacts,
    ) -> Result<FrameFacts, AccumulateError> {
        facts.finish_seen = self.finish_reason.is_some();
        if let Some(usage) = usage {
            self.usage = Some(usage);
            facts.usage_recorded = true;
            if facts.finish_seen {
                self.usage_after_finish = true;
            }
        }
        if self.retained_bytes() > self.options.max_response_bytes {
            return Err(AccumulateError::ResponseTooLarge {
                limit_bytes: self.options.max_response_bytes,
            });
        }
        Ok(facts)
    }

    /// S-42 (openai identity rule; text mode records the first non-empty string leniently).
    fn chunk_id(&mut self, id: Option<&Value>) -> Result<(), AccumulateError> {
        match id {
            None | Some(Value::Null) => Ok(()),
            Some(Value::String(id)) => self.string_id(id),
            Some(_) if self.mode == ResponseMode::OpenAi => {
                Err(AccumulateError::Protocol(ProtocolViolation::IdNotString))
            }
            Some(_) => Ok(()),
        }
    }

    /// for a string id; `""` is absent.
    fn string_id(&mut self, id: &str) -> Result<(), AccumulateError> {
        match &self.response_id {
            _ if id.is_empty() => Ok(()),
            None => {
                self.response_id = Some(id.to_owned());
                Ok(())
            }
            Some(fixed) if fixed == id => Ok(()),
            // README D35: a chunk id that changes (mockllm gives every chunk a fresh one) is
            // accepted in both modes; the first id is kept and one dialect warning raised.
            Some(_) => {
                if !self.notices.contains(&DialectWarning::ChunkIdChanges) {
                    self.notices.push(DialectWarning::ChunkIdChanges);
                }
                Ok(())
            }
        }
    }

    /// `content` as an array of parts. `text` parts append to the content,
    /// `thinking` / `reasoning` parts to the reasoning projection; other types are skipped with
    /// one dialect warning each. `Err` when the array is not one of parts (→ `protocol_error`).
    fn content_parts(
        &mut self,
        parts: &[Value],
        out: &mut ChatDelta,
    ) -> Result<bool, ProtocolViolation> {
        let read = read_content_parts(parts).ok_or(ProtocolViolation::ContentType)?;
        for kind in read.skipped {
            let warning = DialectWarning::UnknownContentPart { kind };
            if !self.notices.contains(&warning) {
                self.notices.push(warning);
            }
        }
        if !read.text.is_empty() {
            self.take_fragment("content", &read.text, out);
        }
        if !read.thinking.is_empty() {
            self.take_fragment("reasoning", &read.thinking, out);
        }
        Ok(!read.text.is_empty() || !read.thinking.is_empty())
    }

    /// S-49, S-50 for a string finish_reason; `""` is absent.
    fn string_finish(
        &mut self,
        reason: &str,
        facts: &mut FrameFacts,
    ) -> Result<(), AccumulateError> {
        match &self.finish_reason {
            _ if reason.is_empty() => {}
            None => {
                self.finish_reason = Some(reason.to_owned());
                facts.finish_recorded = true;
            }
            Some(fixed) if fixed == reason => {}
            Some(_) if self.mode == ResponseMode::OpenAi => {
                return Err(AccumulateError::Protocol(
                    ProtocolViolation::FinishReasonConflict,
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// S-44, S-46, S-47.
    fn select_choice<'v>(
        &self,
        choices: &'v [Value],
    ) -> Result<Option<&'v Map<String, Value>>, AccumulateError> {
        let violation = |v| Err(AccumulateError::Protocol(v));
        if choices.is_empty() {
            return Ok(None);
        }
        match self.mode {
            ResponseMode::OpenAi => {
                let [choice] = choices else {
                    return violation(ProtocolViolation::SingleChoiceOnly);
                };
                let Value::Object(choice) = choice else {
                    return violation(ProtocolViolation::ChoiceNotObject);
                };
                if choice.get("index").and_then(Value::as_u64) != Some(0) {
                    return violation(ProtocolViolation::ChoiceIndexNotZero);
                }
                Ok(Some(choice))
            }
            ResponseMode::Text => {
                for choice in choices {
                    let Value::Object(choice) = choice else {
                        return violation(ProtocolViolation::ChoiceNotObject);
                    };
                    match choice.get("index") {
                        None | Some(Value::Null) => return Ok(Some(choice)),
                        Some(index) if index.as_u64() == Some(0) => return Ok(Some(choice)),
                        Some(_) => {}
                    }
                }
                Ok(None)
            }
        }
    }

    /// The selected choice: delta, then finish_reason.
    fn choice(
        &mut self,
        choice: &Map<String, Value>,
        facts: &mut FrameFacts,
    ) -> Result<(), AccumulateError> {
        let empty = Map::new();
        let delta = match choice.get("delta") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(delta)) => delta,
            Some(_) => return Err(AccumulateError::Protocol(ProtocolViolation::DeltaNotObject)),
        };
        let result = match self.mode {
            ResponseMode::OpenAi => self.delta_openai(delta, &mut facts.delta),
            ResponseMode::Text => self.delta_text(delta, &mut facts.delta),
        };
        result.map_err(AccumulateError::Protocol)?;

        match choice.get("finish_reason") {
            None | Some(Value::Null) => {}
            Some(Value::String(reason)) => self.string_finish(reason, facts)?,
            Some(_) if self.mode == ResponseMode::OpenAi => {
                return Err(AccumulateError::Protocol(
                    ProtocolViolation::FinishReasonNotString,
                ));
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// Records a content / reasoning_content / reasoning fragment for the text projection.
    fn take_fragment(&mut self, key: &str, fragment: &str, delta: &mut ChatDelta) {
        self.charge_text(fragment.len());
        match key {
            "content" => {
                self.content.push_str(fragment);
                delta.content.push_str(fragment);
            }
            "reasoning_content" => {
                self.reasoning_content.push_str(fragment);
                delta.reasoning_content.push_str(fragment);
                self.reasoning_content_seen |= !fragment.is_empty();
            }
            _ => {
                self.reasoning.push_str(fragment);
                delta.reasoning.push_str(fragment);
            }
        }
    }

    /// openai-mode delta.
    fn delta_openai(
        &mut self,
        delta: &Map<String, Value>,
        out: &mut ChatDelta,
    ) -> Result<(), ProtocolViolation> {
        let mut progress = false;
        for (key, value) in delta {
            match key.as_str() {
                "role" => match value {
                    Value::Null => {
                        self.message.entry("role").or_insert(Value::Null);
                    }
                    Value::String(role) if role == "assistant" => {
                        self.message
                            .insert("role".to_owned(), Value::String(role.clone()));
                    }
                    _ => return Err(ProtocolViolation::RoleNotAssistant),
                },
                "content" | "reasoning_content" => match value {
                    Value::Null => {
                        self.message.entry(key.as_str()).or_insert(Value::Null);
                    }
                    Value::String(fragment) => {
                        append_string(&mut self.message, key, fragment);
                        self.charge_text(fragment.len());
                        self.take_fragment(key, fragment, out);
                        progress |= !fragment.is_empty();
                    }
                    // README D21: fidelity mode keeps the raw parts in the completion.
                    Value::Array(parts) if key == "content" => {
                        progress |= self.content_parts(parts, out)?;
                        match self.message.get_mut("content") {
                            Some(Value::Array(kept)) => kept.extend(parts.iter().cloned()),
                            None | Some(Value::Null) => {
                                self.message
                                    .insert("content".to_owned(), Value::Array(parts.clone()));
                            }
                            Some(_) => return Err(ProtocolViolation::ContentType),
                        }
                    }
                    _ if key == "content" => return Err(ProtocolViolation::ContentType),
                    _ => return Err(ProtocolViolation::ReasoningContentType),
                },
                "tool_calls" => match value {
                    Value::Null => {
                        self.message.entry("tool_calls").or_insert(Value::Null);
                    }
                    Value::Array(elements) => {
                        let unset =
                            matches!(self.message.get("tool_calls"), None | Some(Value::Null));
                        if unset && (elements.is_empty() || elements.iter().any(|e| !e.is_null())) {
                            self.message
                                .insert("tool_calls".to_owned(), Value::Array(Vec::new()));
                        }
                        progress |= self.tools.merge_openai(elements, &mut self.merger)?;
                    }
                    _ => return Err(ProtocolViolation::ToolCallsNotArray),
                },
                other => {
                    if other == "reasoning"
                        && let Value::String(fragment) = value
                    {
                        self.take_fragment("reasoning", fragment, out);
                    }
                    if other == "refusal"
                        && let Value::String(fragment) = value
                    {
                        self.refusal.push_str(fragment);
                    }
                    let path = format!("delta.{other}");
                    progress |= self
                        .merger
                        .merge_key(&mut self.message, other, value, &path);
                }
            }
        }
        out.progress = progress;
        Ok(())
    }

    /// text-mode delta (S-54 role ignored).
    fn delta_text(
        &mut self,
        delta: &Map<String, Value>,
        out: &mut ChatDelta,
    ) -> Result<(), ProtocolViolation> {
        let mut progress = false;
        for (key, value) in delta {
            match key.as_str() {
                "role" => {}
                "content" | "reasoning_content" => match value {
                    Value::Null => {}
                    Value::String(fragment) => {
                        self.take_fragment(key, fragment, out);
                        progress |= !fragment.is_empty();
                    }
                    Value::Array(parts) if key == "content" => {
                        progress |= self.content_parts(parts, out)?;
                    }
                    _ if key == "content" => return Err(ProtocolViolation::ContentType),
                    _ => return Err(ProtocolViolation::ReasoningContentType),
                },
                "tool_calls" => {
                    if let Value::Array(elements) = value {
                        self.text_tool_calls |= elements.iter().any(|e| !e.is_null());
                        progress |= self.tools.observe_text(elements)?;
                    }
                }
                other => {
                    if other == "reasoning"
                        && let Value::String(fragment) = value
                    {
                        self.take_fragment("reasoning", fragment, out);
                    }
                    if other == "refusal"
                        && let Value::String(fragment) = value
                    {
                        self.charge_text(fragment.len());
                        self.refusal.push_str(fragment);
                    }
                    progress |= fragment_progress(other, value);
                }
            }
        }
        out.progress = progress;
        Ok(())
    }
}

/// What an array of content parts says.
#[derive(Debug, Default)]
pub(crate) struct ContentParts {
    /// The `text` parts' text, concatenated.
    pub(crate) text: String,
    /// The `thinking` / `reasoning` parts' nested text, concatenated.
    pub(crate) thinking: String,
    /// The types of the skipped parts.
    pub(crate) skipped: Vec<String>,
}

/// Reads `content` given as an array of parts (Mistral's
/// `[{"type":"thinking","thinking":[{"type":"text","text":…}]},{"type":"text","text":…}]`).
/// `None` when the array is empty or an element is not an object with a string `type`.
pub(crate) fn read_content_parts(parts: &[Value]) -> Option<ContentParts> {
    if parts.is_empty() {
        return None; // an empty array is not "an array of parts"
    }
    let mut read = ContentParts::default();
    for part in parts {
        let part = part.as_object()?;
        let kind = part.get("type")?.as_str()?;
        match kind {
            "text" => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    read.text.push_str(text);
                }
            }
            "thinking" | "reasoning" => {
                for key in ["thinking", "reasoning", "text", "content", "summary"] {
                    if let Some(value) = part.get(key) {
                        nested_text(value, &mut read.thinking);
                        break;
                    }
                }
            }
            other => {
                if !read.skipped.iter().any(|k| k == other) {
                    read.skipped.push(other.to_owned());
                }
            }
        }
    }
    Some(read)
}

/// Appends the text of a nested thinking value: a string, or an array of strings and objects
/// with a string `text`.
fn nested_text(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(text) => out.push_str(text),
                    Value::Object(obj) => {
                        if let Some(text) = obj.get("text").and_then(Value::as_str) {
                            out.push_str(text);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// The model sink: a string with at least one non-whitespace character.
/// The model sink's test for one string.
fn model_text(model: &str) -> Option<String> {
    (!model.trim().is_empty()).then(|| model.to_owned())
}

fn model_of(object: &Map<String, Value>) -> Option<String> {
    match object.get("model") {
        Some(Value::String(model)) => model_text(model),
        _ => None,
    }
}

/// Adds the `finish:` warning for a finish of class `unknown`.
fn push_finish_warning(warnings: &mut Vec<DialectWarning>, finish: Option<&FinishReason>) {
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
fn summarize_tools(message: &Map<String, Value>, synthesized: &[bool]) -> Vec<ToolCallSummary> {
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

/// The accumulated result of one attempt, streamed ([`Accumulator::finish`]) or not
/// ([`parse_non_stream_body`]) — the input of the verdict (50) and of response building.
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
        if usage_is_implausible(raw) {
            // Issue 22: nothing of an implausible usage object is kept.
            return (Usage::default(), UsageSource::Unavailable);
        }
        let (cached, reasoning) = usage_details(raw);
        let (mut usage, source) = match measured_usage(raw) {
            Some(usage) if salvaged => (usage, UsageSource::Estimated),
            Some(usage) => (usage, UsageSource::Measured),
            None => (Usage::default(), UsageSource::Unavailable),
        };
        usage.cached_prompt_tokens = cached;
        usage.reasoning_tokens = reasoning;
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
    let prompt = count(usage.get("prompt_tokens"))?;
    let completion = count(usage.get("completion_tokens"))?;
    let (cached, reasoning) = usage_details(usage);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_prompt_tokens: cached,
        reasoning_tokens: reasoning,
    })
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

/// `(cached_prompt_tokens, reasoning_tokens)` of a usage object.
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
fn finalize_text(content: &str, thinking: &str, inline_think_tags: bool) -> (String, String) {
    if !inline_think_tags {
        return (content.to_owned(), thinking.to_owned());
    }
    let split = strip_think_tags(content);
    let mut all = String::with_capacity(thinking.len() + split.thinking.len());
    all.push_str(thinking);
    all.push_str(&split.thinking);
    (split.content, all)
}
