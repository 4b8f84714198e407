//! The streamed state machine: [`Accumulator`], one per attempt.
//!
//! Frame admission in spec order (object check, in-band `error` key, `usage` type and sink,
//! model sink, chunk `id` identity, choice selection, `finish_reason` identity), the memory
//! bound, framing notices and the post-stream assembly ([`Accumulator::finish`]). What one
//! selected choice's `delta` adds (content and reasoning fragments, tool calls, the openai merge,
//! content parts) is the child module `delta`, which shares the machine's private state.

mod delta;

use std::collections::BTreeSet;

use gateway_ports::{ChunkJson, FinishReason, ResponseMode, WireNotice};
use serde_json::{Map, Value};

use super::accumulated::{Accumulated, finalize_text, push_finish_warning, summarize_tools};
use super::error::{AccumulateError, ProtocolViolation};
use super::fast;
use super::merge::MergeState;
use super::options::{AccumulateOptions, FrameFacts};
use super::tools::ToolCalls;
use super::warnings::{DialectWarning, WARNING_CAPACITY};

/// Most dialect warnings one attempt collects (40 S-116 capacity; chosen per attempt too).
const WARNINGS_PER_ATTEMPT: usize = WARNING_CAPACITY;

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
}

/// The model sink: a string with at least one non-whitespace character.
/// The model sink's test for one string.
pub(super) fn model_text(model: &str) -> Option<String> {
    (!model.trim().is_empty()).then(|| model.to_owned())
}

pub(super) fn model_of(object: &Map<String, Value>) -> Option<String> {
    match object.get("model") {
        Some(Value::String(model)) => model_text(model),
        _ => None,
    }
}
