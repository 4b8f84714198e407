//! The per-attempt classification: [`AttemptError`] (the four categories) and its payloads.
//!
//! One upstream attempt ends in one of four categories. The retry loop, the hedge and the
//! executor work in these terms; a caller sees them only inside a call-level
//! [`GatewayError`](super::GatewayError) (as its cause, or as `last_failure`), never as the
//! call's own error, because `Transient` and `SourceDead` are absorbed by retries and failover.

use std::error::Error as StdError;
use std::fmt;

use crate::vocab::{Category, CauseKind, ErrorOperation, ReasonCode};

/// What a failed attempt carries: the payload of `Transient`, `SourceDead`,
/// `RequestRejected`, and the inner part of `ResultInvalid`.
///
/// Build it with [`AttemptFailure::new`] and set the fields that apply.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AttemptFailure {
    /// Full display text; never echoes secrets, raw headers, tool arguments or payloads.
    pub message: String,
    /// The source that produced it; `None` only if raised before a source existed.
    pub source_name: Option<String>,
    /// HTTP sub-operation, not the telemetry `operation` column.
    pub operation: ErrorOperation,
    /// Status actually received on a failed HTTP response; `None` for network faults, in-band
    /// frames and pre-HTTP refusals.
    pub http_status: Option<u16>,
    /// Parsed server hint (`Retry-After` and its relatives) in seconds; only ever `Some` on
    /// `Transient`.
    pub retry_after_s: Option<f64>,
    /// Body summary; diagnostic side data, never governance.
    pub body_text: Option<String>,
    /// Stable reason token.
    pub reason_code: Option<ReasonCode>,
    /// Underlying fault kind → telemetry `cause_type`.
    pub cause: Option<CauseKind>,
}

impl AttemptFailure {
    /// A failure with this message and operation; every optional field `None`.
    pub fn new(message: impl Into<String>, operation: ErrorOperation) -> Self {
        Self {
            message: message.into(),
            source_name: None,
            operation,
            http_status: None,
            retry_after_s: None,
            body_text: None,
            reason_code: None,
            cause: None,
        }
    }

    /// The display text (never a secret).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The source that produced the failure, if one existed.
    pub fn source_name(&self) -> Option<&str> {
        self.source_name.as_deref()
    }

    /// The HTTP status received, if the failure was an HTTP response.
    pub fn http_status(&self) -> Option<u16> {
        self.http_status
    }

    /// The server's wait hint in seconds, if it sent one.
    pub fn retry_after_s(&self) -> Option<f64> {
        self.retry_after_s
    }

    /// The stable reason token, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.reason_code
    }

    /// The underlying fault kind (telemetry `cause_type`), if any.
    pub fn cause(&self) -> Option<CauseKind> {
        self.cause
    }
}

impl fmt::Display for AttemptFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Payload of `ResultInvalid`: the failure plus the structured-output diagnostics.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResultInvalidDetails {
    /// The failure; `http_status`, `retry_after_s` and `body_text` are `None`.
    pub failure: AttemptFailure,
    /// Structured-output validation errors; empty otherwise.
    pub validation_errors: Vec<String>,
    /// Structured-output repair error.
    pub repair_error: Option<String>,
    /// The raw text; `""` for verdict failures; never in telemetry.
    pub raw_text: String,
}

impl ResultInvalidDetails {
    /// Details wrapping `failure`, with no validation data and an empty `raw_text`.
    pub fn new(failure: AttemptFailure) -> Self {
        Self {
            failure,
            validation_errors: Vec::new(),
            repair_error: None,
            raw_text: String::new(),
        }
    }

    /// The failure.
    pub fn failure(&self) -> &AttemptFailure {
        &self.failure
    }

    /// Structured-output validation errors (empty unless a schema check failed).
    pub fn validation_errors(&self) -> &[String] {
        &self.validation_errors
    }

    /// Structured-output repair error, if the repair step failed.
    pub fn repair_error(&self) -> Option<&str> {
        self.repair_error.as_deref()
    }

    /// The raw answer text that failed the check (`""` for verdict failures).
    pub fn raw_text(&self) -> &str {
        &self.raw_text
    }
}

/// How one upstream attempt failed: the four categories every failure is classified into.
/// The retry loop retries `Transient`, fails over on `SourceDead`, and ends the call on
/// `RequestRejected` and `ResultInvalid`. Every payload is boxed so the value is two words.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AttemptError {
    /// The source may succeed if asked again.
    Transient(Box<AttemptFailure>),
    /// This source cannot serve now (credentials, quota, endpoint).
    SourceDead(Box<AttemptFailure>),
    /// The upstream (or the transport, before sending) refused this request.
    RequestRejected(Box<AttemptFailure>),
    /// The source answered, but the result is deterministically unusable.
    ResultInvalid(Box<ResultInvalidDetails>),
}

impl AttemptError {
    /// `Transient` from a failure.
    pub fn transient(failure: AttemptFailure) -> Self {
        Self::Transient(Box::new(failure))
    }

    /// `SourceDead` from a failure.
    pub fn source_dead(failure: AttemptFailure) -> Self {
        Self::SourceDead(Box::new(failure))
    }

    /// `RequestRejected` from a failure.
    pub fn request_rejected(failure: AttemptFailure) -> Self {
        Self::RequestRejected(Box::new(failure))
    }

    /// `ResultInvalid` from its details.
    pub fn result_invalid(details: ResultInvalidDetails) -> Self {
        Self::ResultInvalid(Box::new(details))
    }

    /// An error of `category` carrying `failure` (`ResultInvalid`: with no validation data).
    pub fn of_category(category: Category, failure: AttemptFailure) -> Self {
        match category {
            Category::Transient => Self::transient(failure),
            Category::SourceDead => Self::source_dead(failure),
            Category::RequestRejected => Self::request_rejected(failure),
            Category::ResultInvalid => Self::result_invalid(ResultInvalidDetails::new(failure)),
        }
    }

    /// The category.
    pub const fn category(&self) -> Category {
        match self {
            Self::Transient(_) => Category::Transient,
            Self::SourceDead(_) => Category::SourceDead,
            Self::RequestRejected(_) => Category::RequestRejected,
            Self::ResultInvalid(_) => Category::ResultInvalid,
        }
    }

    /// Stable type name (telemetry `error_type`; the CLI's exit-code key).
    pub const fn type_name(&self) -> &'static str {
        match self {
            Self::Transient(_) => "TransientError",
            Self::SourceDead(_) => "SourceDeadError",
            Self::RequestRejected(_) => "RequestRejectedError",
            Self::ResultInvalid(_) => "ResultInvalidError",
        }
    }

    /// The failure (`ResultInvalid`: its inner failure).
    pub fn failure(&self) -> &AttemptFailure {
        match self {
            Self::Transient(f) | Self::SourceDead(f) | Self::RequestRejected(f) => f,
            Self::ResultInvalid(d) => &d.failure,
        }
    }

    /// The failure, mutable (the loop adds the source name and hints after classifying).
    pub fn failure_mut(&mut self) -> &mut AttemptFailure {
        match self {
            Self::Transient(f) | Self::SourceDead(f) | Self::RequestRejected(f) => f,
            Self::ResultInvalid(d) => &mut d.failure,
        }
    }

    /// The `ResultInvalid` details.
    pub fn result_invalid_details(&self) -> Option<&ResultInvalidDetails> {
        match self {
            Self::ResultInvalid(d) => Some(d),
            _ => None,
        }
    }

    /// The failure's reason code, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.failure().reason_code
    }

    /// The failure's HTTP status, if any.
    pub fn http_status(&self) -> Option<u16> {
        self.failure().http_status
    }

    /// The source that failed, if one existed.
    pub fn source_name(&self) -> Option<&str> {
        self.failure().source_name.as_deref()
    }

    /// The server's wait hint in seconds (only ever on `Transient`).
    pub fn retry_after_s(&self) -> Option<f64> {
        self.failure().retry_after_s
    }
}

impl fmt::Display for AttemptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.failure().fmt(f)
    }
}

impl StdError for AttemptError {}
