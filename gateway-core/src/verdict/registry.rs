//! The reason-code registry: which category every stable reason code
//! belongs to, and which codes each layer may raise.
//!
//! The category of a code is fixed by the registry table of V-45; the classifier
//! (`crate::classify`) and the streaming layer raise the non-verdict codes with their own
//! templates, this module raises the verdict and completeness codes (see `super::VerdictFailure`).

use gateway_ports::{Category, ReasonCode};

/// The verdict kernel's codes, exactly: the outcome table's failures.
pub const VERDICT_CODES: [ReasonCode; 7] = [
    ReasonCode::UpstreamFinishError,
    ReasonCode::ToolTruncated,
    ReasonCode::ToolArgumentsNull,
    ReasonCode::ToolIncomplete,
    ReasonCode::LengthWithoutContent,
    ReasonCode::FilteredWithoutContent,
    ReasonCode::EmptyCompletion,
];

/// The codes raised by stream completeness.
pub const COMPLETENESS_CODES: [ReasonCode; 2] = [ReasonCode::MissingDone, ReasonCode::EarlyEof];

/// The codes of terminal wire facts that fail a stream before completeness (V-44;
/// `super::StreamTerminal::failure_code`).
pub const TERMINAL_CODES: [ReasonCode; 3] = [
    ReasonCode::ReadError,
    ReasonCode::ResponseTooLarge,
    ReasonCode::LivenessTimeout,
];

/// The category of a reason code by the registry of 50 V-45: `Transient` for
/// `upstream_finish_error`, `tool_incomplete`, `empty_completion`, `missing_done`, `early_eof`,
/// `upstream_error_frame`, `rate_limited`, `malformed_json`, `protocol_error`, `read_error`,
/// `liveness_timeout`, `empty_response`, `invalid_json`; `ResultInvalid` for `tool_truncated`,
/// `tool_arguments_null`, `length_without_content`, `filtered_without_content`,
/// `response_too_large`, `refused`, `tool_calls_in_text_mode`,
/// `malformed_item`; `RequestRejected` for `context_length_exceeded`.
///
/// `None` only for a code added to `ReasonCode` after this registry (the enum is
/// `#[non_exhaustive]`); a test walks `ReasonCode::ALL` so that cannot ship silently.
pub fn reason_category(code: ReasonCode) -> Option<Category> {
    use ReasonCode as R;
    Some(match code {
        R::UpstreamFinishError
        | R::ToolIncomplete
        | R::EmptyCompletion
        | R::MissingDone
        | R::EarlyEof
        | R::UpstreamErrorFrame
        | R::RateLimited
        | R::MalformedJson
        | R::ProtocolError
        | R::ReadError
        | R::LivenessTimeout
        | R::EmptyResponse
        | R::InvalidJson => Category::Transient,
        R::ToolTruncated
        | R::ToolArgumentsNull
        | R::LengthWithoutContent
        | R::FilteredWithoutContent
        | R::ResponseTooLarge
        | R::Refused
        | R::ToolCallsInTextMode
        | R::MalformedItem => Category::ResultInvalid,
        R::ContextLengthExceeded => Category::RequestRejected,
        _ => return None,
    })
}
