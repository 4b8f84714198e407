//! The classifier's vocabulary: the context it reads ([`ClassifyContext`]), the watchdog
//! kinds ([`LivenessKind`]), the verdict ([`Classification`]) and the message helpers every
//! classifying file shares.

use std::fmt;
use std::time::SystemTime;

use gateway_ports::{
    AttemptError, AttemptFailure, Category, ErrorOperation, FailureReason, ReasonCode,
};

use crate::redact::ScrubOptions;

use super::reason::failure_reason;

/// What the classifier needs besides the fact itself.
///
/// `Debug` never prints the source key (see [`ScrubOptions`]).
#[derive(Debug, Clone, Copy)]
pub struct ClassifyContext<'a> {
    /// The source that produced the fact; named in every message.
    pub source_name: &'a str,
    /// The HTTP sub-operation, carried into the failure.
    pub operation: ErrorOperation,
    /// Local wall clock for HTTP-date Retry-After hints (not the `Date`
    /// header).
    pub wall_now: SystemTime,
    /// What to scrub from summaries and messages: the source's key, and whether IP
    /// addresses are redacted (`PGW_REDACT_IPS`).
    pub scrub: ScrubOptions<'a>,
}

impl<'a> ClassifyContext<'a> {
    /// A context with the default scrubbing (no source key; IP addresses redacted).
    pub fn new(source_name: &'a str, operation: ErrorOperation, wall_now: SystemTime) -> Self {
        Self {
            source_name,
            operation,
            wall_now,
            scrub: ScrubOptions::default(),
        }
    }

    /// The same context with these scrub options.
    pub fn with_scrub(mut self, scrub: ScrubOptions<'a>) -> Self {
        self.scrub = scrub;
        self
    }
}

/// Which core watchdog expired: named in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LivenessKind {
    /// Time to first progress (`ttft`).
    Ttft,
    /// Gap between progress chunks (`inter_token`).
    InterToken,
    /// Whole-attempt budget (`total`; also the non-stream total).
    Total,
}

impl LivenessKind {
    /// The token used in messages: `ttft`, `inter_token`, `total`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ttft => "ttft",
            Self::InterToken => "inter_token",
            Self::Total => "total",
        }
    }
}

impl fmt::Display for LivenessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict on one failure fact: what the retry loop, the breaker feed, telemetry
/// and the caller's error need.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// One of the four categories.
    pub category: Category,
    /// The breaker/health/pacer reason: `Some` for `Transient` and `SourceDead`,
    /// `None` for `RequestRejected` and `ResultInvalid` (they feed a neutral success).
    pub failure_reason: Option<FailureReason>,
    /// The payload: message, source, operation, `http_status`, `retry_after_s` (only on a
    /// `Transient` failure with a usable hint), `body_text` (scrubbed summary),
    /// `reason_code`, `cause`.
    pub failure: AttemptFailure,
}

impl Classification {
    /// Builds a classification, deriving the failure reason from the payload.
    pub fn new(category: Category, failure: AttemptFailure) -> Self {
        Self {
            category,
            failure_reason: failure_reason(category, &failure),
            failure,
        }
    }

    /// The reason code, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.failure.reason_code
    }

    /// The HTTP status received, if the fact was an HTTP failure.
    pub fn http_status(&self) -> Option<u16> {
        self.failure.http_status
    }

    /// The server hint in seconds, if one was parsed.
    pub fn retry_after_s(&self) -> Option<f64> {
        self.failure.retry_after_s
    }

    /// `true` when the failure reason is `rate_limited` (an HTTP 429 or an in-band 429): the
    /// round is rate-limited — budget-exempt in chat, a pacer cut, counted in neither
    /// breaker channel.
    pub fn is_rate_limited(&self) -> bool {
        self.failure_reason == Some(FailureReason::RateLimited)
    }

    /// The `AttemptError` of this verdict: `Transient`, `SourceDead`,
    /// `RequestRejected`, or `ResultInvalid` wrapping the failure with no validation data.
    pub fn into_error(self) -> AttemptError {
        AttemptError::of_category(self.category, self.failure)
    }
}

impl From<Classification> for AttemptError {
    fn from(classification: Classification) -> Self {
        classification.into_error()
    }
}

/// `compose(prefix, summary)` of 30 G-16: `prefix` alone when the summary is empty, else
/// `"{prefix} | {summary}"`.
pub fn compose(prefix: String, summary: &str) -> String {
    if summary.is_empty() {
        prefix
    } else {
        format!("{prefix} | {summary}")
    }
}

/// A failure naming the context's source and operation, with every optional field `None`.
pub(super) fn base_failure(ctx: &ClassifyContext<'_>, message: String) -> AttemptFailure {
    let mut failure = AttemptFailure::new(message, ctx.operation);
    failure.source_name = Some(ctx.source_name.to_owned());
    failure
}
