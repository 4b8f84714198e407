//! Why a chunk or a non-stream body failed, and the classifier's verdict on it.
//!
//! [`ProtocolViolation`] names every envelope defect with the spec's reason text;
//! [`AccumulateError`] is what the accumulator and the body parser return, and
//! [`AccumulateError::classify`] turns it into a [`Classification`] (the only place this module
//! meets `crate::classify`). Kept apart from the state machine so the verdict, the body parser
//! and the tool-slot code name the errors without depending on the machine.

use gateway_ports::{AttemptFailure, Category, CompletionShapeError, ReasonCode};
use serde_json::Value;

use crate::classify::{
    Classification, ClassifyContext, classify_error_value, classify_frame_too_large,
};

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
    /// a tool call would need a slot beyond `MAX_TOOL_SLOTS`.
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
