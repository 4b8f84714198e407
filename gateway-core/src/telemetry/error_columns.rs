//! The error columns of a row (80 T-20, T-21): `error`, `error_type`, `cause_type`,
//! `http_status_code` and `error_body`, from one pure function of the row's error input.
//!
//! Apart from the shaper because the same columns are read by other callers (the structured
//! ladder's tests pin the terminal text) and because the rule is one function: an attempt
//! carries status, cause and scrubbed body; a terminal row only the text and type; a label only
//! the text.

use gateway_ports::{AttemptError, CallOperation, CauseKind, GatewayError, TelemetryRow};

use super::text::{MAX_ERROR_CHARS, cut_chars, format_bounded_errors};
use crate::redact::{ScrubOptions, scrubbed_summary};

/// What a row's error columns are derived from.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ErrorInput<'a> {
    /// No error (success, cache hit).
    None,
    /// A label (`cancelled`, `hedge_cancelled`): never parsed for diagnostics.
    Label(&'a str),
    /// A failed attempt's error; `scrub` removes secrets from its body.
    Attempt(&'a AttemptError, ScrubOptions<'a>),
    /// The error that ended the call (terminal row): no status, cause or body.
    Terminal(&'a GatewayError),
}

/// The five error columns of one row.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ErrorFields {
    /// `error`.
    pub error: Option<String>,
    /// `error_type`.
    pub error_type: Option<&'static str>,
    /// `cause_type`: attempt rows only.
    pub cause_type: Option<CauseKind>,
    /// `http_status_code`: attempt rows only, as received.
    pub http_status_code: Option<i32>,
    /// `error_body`: the scrubbed body summary, empty → `None`; attempt rows only.
    pub error_body: Option<String>,
}

/// The one pure function of 80 T-20: error columns from the row's error input. `operation` is
/// the call site's; OCR rows use the class-prefixed `"<type name>: <message>"`.
pub fn error_fields(input: ErrorInput<'_>, operation: CallOperation) -> ErrorFields {
    match input {
        ErrorInput::None => ErrorFields::default(),
        ErrorInput::Label(label) => ErrorFields {
            error: Some(label.to_owned()),
            ..ErrorFields::default()
        },
        ErrorInput::Attempt(error, scrub) => {
            let failure = error.failure();
            ErrorFields {
                error: Some(error_text(error, error.type_name(), operation)),
                error_type: Some(error.type_name()),
                cause_type: failure.cause,
                http_status_code: failure.http_status.map(i32::from),
                error_body: failure
                    .body_text
                    .as_deref()
                    .map(|body| scrubbed_summary(body, &scrub))
                    .filter(|body| !body.is_empty()),
            }
        }
        ErrorInput::Terminal(error) => {
            let mut text = error_text(error, error.type_name(), operation);
            if let Some(details) = error.result_invalid_details() {
                if let Some(repair) = &details.repair_error {
                    text.push_str(" | repair=");
                    text.push_str(cut_chars(repair, MAX_ERROR_CHARS));
                }
                if !details.validation_errors.is_empty() {
                    text.push_str(" | validation=");
                    text.push_str(&format_bounded_errors(&details.validation_errors));
                }
            }
            ErrorFields {
                error: Some(text),
                error_type: Some(error.type_name()),
                ..ErrorFields::default()
            }
        }
    }
}

/// The `error` text of 80 T-21: the display message, or the type name when it is empty; OCR
/// operations use `"<type name>: <message>"`.
pub fn error_text(
    error: &dyn std::fmt::Display,
    type_name: &'static str,
    operation: CallOperation,
) -> String {
    let message = error.to_string();
    match (is_ocr(operation), message.is_empty()) {
        (_, true) => type_name.to_owned(),
        (true, false) => format!("{type_name}: {message}"),
        (false, false) => message,
    }
}

pub(super) const fn is_ocr(operation: CallOperation) -> bool {
    matches!(
        operation,
        CallOperation::RecognizeText | CallOperation::ParseLayout
    )
}

pub(super) fn apply_errors(row: &mut TelemetryRow, errors: ErrorFields) {
    let ErrorFields {
        error,
        error_type,
        cause_type,
        http_status_code,
        error_body,
    } = errors;
    row.error = error;
    row.error_type = error_type;
    row.cause_type = cause_type;
    row.http_status_code = http_status_code;
    row.error_body = error_body;
}
