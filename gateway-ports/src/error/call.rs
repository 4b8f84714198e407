//! The call-level error: [`GatewayError`], the one error of every public call, and its payloads.
//!
//! A call ends in one error that says what to do next: fix the request (`RequestRejected`,
//! `InvalidArgument`), treat the answer as unusable (`ResultInvalid`), wait and ask again (the
//! unavailable family, with `retry_after_s`), give up on time (`CallDeadlineExceeded`), or accept
//! a partial stream (`Committed`). Every error raised after an upstream request carries the
//! call's last attempt failure, the per-source reasons and the number of upstream requests made.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;

use super::attempt::{AttemptError, AttemptFailure, ResultInvalidDetails};
use super::config::ConfigError;
use crate::vocab::{Category, FailureReason, ReasonCode, ScopeReason};

/// The output a streamed call had forwarded to its caller before it failed after the commit
/// point. The failure's `reason_code` is the verdict's reason.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct PartialOutput {
    /// Content forwarded so far (the text projection).
    pub content: String,
    /// Reasoning forwarded so far (empty unless the caller opted in to reasoning deltas).
    pub reasoning: String,
}

impl PartialOutput {
    /// Partial output with this content and reasoning.
    pub fn new(content: impl Into<String>, reasoning: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            reasoning: reasoning.into(),
        }
    }

    /// Content forwarded before the failure.
    pub fn content(&self) -> &str {
        &self.content
    }

    /// Reasoning forwarded before the failure.
    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }
}

/// Payload of the call-level errors an attempt's own failure caused: `RequestRejected`,
/// `ResultInvalid` and `Committed`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallFailure {
    /// The attempt failure that ended the call.
    pub cause: AttemptError,
    /// `Committed`: the output forwarded to the caller before the failure.
    pub partial: Option<PartialOutput>,
    /// Upstream requests the call made (attempts that reached the transport).
    pub attempts: u32,
}

impl CallFailure {
    /// The attempt failure that ended the call.
    pub fn cause(&self) -> &AttemptError {
        &self.cause
    }

    /// The cause's failure (`ResultInvalid`: its inner failure): message, source, status.
    pub fn failure(&self) -> &AttemptFailure {
        self.cause.failure()
    }

    /// The cause's `ResultInvalid` details (validation and repair errors, raw text).
    pub fn result_invalid_details(&self) -> Option<&ResultInvalidDetails> {
        self.cause.result_invalid_details()
    }

    /// The output forwarded before a post-commit failure.
    pub fn partial_output(&self) -> Option<&PartialOutput> {
        self.partial.as_ref()
    }

    /// Upstream requests the call made.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

/// The unavailable family's payload: "the whole scope is temporarily unavailable —
/// defer, do not count it against your business failure budget".
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Unavailable {
    /// Scope label.
    pub scope: String,
    /// Why.
    pub reason: ScopeReason,
    /// Seconds to wait; always finite and ≥ 0.
    pub retry_after_s: f64,
    /// Per-source reasons.
    pub per_source_reasons: BTreeMap<String, FailureReason>,
    /// `GovernanceBackend`: the backend diagnostic (also its display text).
    pub detail: Option<String>,
    /// Last absorbed attempt failure; exposed via `Error::source()`, never in telemetry.
    pub last_failure: Option<Box<AttemptError>>,
    /// Upstream requests the call made.
    pub attempts: u32,
}

impl Unavailable {
    /// A payload with no per-source reasons, detail or last failure. A non-finite or negative
    /// `retry_after_s` is stored as `0.0` (always finite and ≥ 0).
    pub fn new(scope: impl Into<String>, reason: ScopeReason, retry_after_s: f64) -> Self {
        let retry_after_s = if retry_after_s.is_finite() && retry_after_s > 0.0 {
            retry_after_s
        } else {
            0.0
        };
        Self {
            scope: scope.into(),
            reason,
            retry_after_s,
            per_source_reasons: BTreeMap::new(),
            detail: None,
            last_failure: None,
            attempts: 0,
        }
    }

    /// Scope label.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// Why the scope is unavailable.
    pub fn reason(&self) -> ScopeReason {
        self.reason
    }

    /// Seconds to wait before asking again (finite, ≥ 0).
    pub fn retry_after_s(&self) -> f64 {
        self.retry_after_s
    }
}

impl fmt::Display for Unavailable {
    /// `"{scope} gateway temporarily unavailable: {reason}"`, or the `detail` for
    /// `backend_unavailable`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.reason, &self.detail) {
            (ScopeReason::BackendUnavailable, Some(detail)) => f.write_str(detail),
            // A scope that can never admit names the limit.
            (ScopeReason::QuotaFull, Some(detail)) => write!(
                f,
                "{} gateway temporarily unavailable: {}; {detail}",
                self.scope, self.reason
            ),
            _ => write!(
                f,
                "{} gateway temporarily unavailable: {}",
                self.scope, self.reason
            ),
        }
    }
}

/// Payload of `GatewayError::SourceNotConfigured`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceNotConfiguredDetails {
    /// Scope label.
    pub scope: String,
    /// The unknown source name.
    pub source_name: String,
}

/// Payload of `GatewayError::CallDeadlineExceeded`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeadlineExceededDetails {
    /// Scope label.
    pub scope: String,
    /// The deadline that expired, in seconds.
    pub deadline_s: f64,
    /// Per-source reasons gathered before the deadline (empty when no attempt failed).
    pub per_source_reasons: BTreeMap<String, FailureReason>,
    /// The last attempt failure before the deadline (`None` when no attempt had failed);
    /// exposed via `Error::source()`, never in telemetry.
    pub last_failure: Option<Box<AttemptError>>,
    /// Upstream requests the call made.
    pub attempts: u32,
}

impl DeadlineExceededDetails {
    /// The deadline that expired, in seconds.
    pub fn deadline_s(&self) -> f64 {
        self.deadline_s
    }
}

/// Payload of `GatewayError::InvalidArgument`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvalidArgumentDetails {
    /// Where it came from, spelt the Rust way, e.g. `ChatRequest::call_deadline`.
    pub origin: String,
    /// English description.
    pub message: String,
}

/// The one error type of every public call. `#[non_exhaustive]`: variants are only appended.
/// Every payload is boxed so the value is two words.
///
/// Ask it questions (`category()`, `reason_code()`, `retry_after_s()`, `last_failure()`,
/// `attempts()`) or match the variant. The per-attempt categories `Transient` and
/// `SourceDead` are not variants: retries and failover absorb them, and they appear as the
/// call's [`last_failure`](Self::last_failure) (or inside `Committed`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GatewayError {
    /// The upstream (or the transport, before sending) refused this request: fix the request.
    RequestRejected(Box<CallFailure>),
    /// The source answered, but the result is deterministically unusable.
    ResultInvalid(Box<CallFailure>),
    /// A streamed call failed after its commit point: the caller already received part of the
    /// answer (`partial_output()`), and the call was not retried.
    Committed(Box<CallFailure>),
    /// Reason `no_sources` | `retry_exhausted` | `stalled` | `quota_full`.
    AllSourcesExhausted(Box<Unavailable>),
    /// Reason `circuit_open`.
    CircuitOpen(Box<Unavailable>),
    /// Reason `backend_unavailable`; `retry_after_s` 5.0; displays its `detail`.
    GovernanceBackend(Box<Unavailable>),
    /// A source unknown to the rate-limiter backend: an assembly defect (not retryable later).
    SourceNotConfigured(Box<SourceNotConfiguredDetails>),
    /// The call's own deadline passed; no `retry_after_s` by design.
    CallDeadlineExceeded(Box<DeadlineExceededDetails>),
    /// A bad argument combination found before any I/O.
    InvalidArgument(Box<InvalidArgumentDetails>),
    /// A call on a closed client.
    ClientClosed,
    /// An assembly-time configuration error carried as a `GatewayError` for callers
    /// (e.g. the CLI) that want one error type. Never returned by a call.
    Config(Box<ConfigError>),
}

impl GatewayError {
    /// The call-level error of an attempt failure that ends the call: `RequestRejected` and
    /// `ResultInvalid` keep their category. `Transient` and `SourceDead` never end a call by
    /// themselves (retries and failover absorb them); handed here, they become
    /// `AllSourcesExhausted` (`retry_exhausted`, scope `scope`) carrying the failure.
    pub fn from_attempt(scope: &str, error: AttemptError) -> Self {
        let failure = |cause| {
            Box::new(CallFailure {
                cause,
                partial: None,
                attempts: 0,
            })
        };
        match error {
            AttemptError::RequestRejected(_) => Self::RequestRejected(failure(error)),
            AttemptError::ResultInvalid(_) => Self::ResultInvalid(failure(error)),
            AttemptError::Transient(_) | AttemptError::SourceDead(_) => {
                let mut u = Unavailable::new(scope, ScopeReason::RetryExhausted, 0.0);
                u.last_failure = Some(Box::new(error));
                Self::all_sources_exhausted(u)
            }
        }
    }

    /// `RequestRejected` from a failure (a refusal found before or without retries).
    pub fn request_rejected(failure: AttemptFailure) -> Self {
        Self::from_attempt("", AttemptError::request_rejected(failure))
    }

    /// `ResultInvalid` from its details.
    pub fn result_invalid(details: ResultInvalidDetails) -> Self {
        Self::from_attempt("", AttemptError::result_invalid(details))
    }

    /// `Committed`: `cause` ended a streamed call after `partial` was forwarded.
    pub fn committed(cause: AttemptError, partial: PartialOutput) -> Self {
        Self::Committed(Box::new(CallFailure {
            cause,
            partial: Some(partial),
            attempts: 0,
        }))
    }

    /// `AllSourcesExhausted` from its payload.
    pub fn all_sources_exhausted(unavailable: Unavailable) -> Self {
        Self::AllSourcesExhausted(Box::new(unavailable))
    }

    /// `CircuitOpen` from its payload.
    pub fn circuit_open(unavailable: Unavailable) -> Self {
        Self::CircuitOpen(Box::new(unavailable))
    }

    /// `GovernanceBackend` from its payload.
    pub fn governance_backend(unavailable: Unavailable) -> Self {
        Self::GovernanceBackend(Box::new(unavailable))
    }

    /// `SourceNotConfigured`.
    pub fn source_not_configured(scope: impl Into<String>, source_name: impl Into<String>) -> Self {
        Self::SourceNotConfigured(Box::new(SourceNotConfiguredDetails {
            scope: scope.into(),
            source_name: source_name.into(),
        }))
    }

    /// `CallDeadlineExceeded`.
    pub fn call_deadline_exceeded(scope: impl Into<String>, deadline_s: f64) -> Self {
        Self::CallDeadlineExceeded(Box::new(DeadlineExceededDetails {
            scope: scope.into(),
            deadline_s,
            per_source_reasons: BTreeMap::new(),
            last_failure: None,
            attempts: 0,
        }))
    }

    /// `InvalidArgument`.
    pub fn invalid_argument(origin: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument(Box::new(InvalidArgumentDetails {
            origin: origin.into(),
            message: message.into(),
        }))
    }

    /// Stable type name (telemetry `error_type`; the CLI's exit-code key). `Committed` reports
    /// its cause's type name.
    pub const fn type_name(&self) -> &'static str {
        match self {
            Self::RequestRejected(_) => "RequestRejectedError",
            Self::ResultInvalid(_) => "ResultInvalidError",
            Self::Committed(c) => c.cause.type_name(),
            Self::AllSourcesExhausted(_) => "AllSourcesExhausted",
            Self::CircuitOpen(_) => "CircuitOpenError",
            Self::GovernanceBackend(_) => "GovernanceBackendError",
            Self::SourceNotConfigured(_) => "SourceNotConfiguredError",
            Self::CallDeadlineExceeded(_) => "CallDeadlineExceeded",
            Self::InvalidArgument(_) => "InvalidArgument",
            Self::ClientClosed => "ClientClosed",
            Self::Config(_) => "ConfigError",
        }
    }

    fn call_failure(&self) -> Option<&CallFailure> {
        match self {
            Self::RequestRejected(c) | Self::ResultInvalid(c) | Self::Committed(c) => Some(c),
            _ => None,
        }
    }

    /// The attempt category of the failure that ended the call (`RequestRejected`,
    /// `ResultInvalid`, `Committed`); `None` otherwise.
    pub const fn category(&self) -> Option<Category> {
        match self {
            Self::RequestRejected(c) | Self::ResultInvalid(c) | Self::Committed(c) => {
                Some(c.cause.category())
            }
            _ => None,
        }
    }

    /// The attempt error that ended the call (`RequestRejected`, `ResultInvalid`,
    /// `Committed`); `None` otherwise.
    pub fn attempt_error(&self) -> Option<&AttemptError> {
        self.call_failure().map(|c| &c.cause)
    }

    /// The attempt failure that ended the call (`ResultInvalid`: its inner failure).
    pub fn attempt_failure(&self) -> Option<&AttemptFailure> {
        self.attempt_error().map(AttemptError::failure)
    }

    /// The unavailable-family payload (the original `except GatewayUnavailableError`).
    pub fn unavailable(&self) -> Option<&Unavailable> {
        match self {
            Self::AllSourcesExhausted(u) | Self::CircuitOpen(u) | Self::GovernanceBackend(u) => {
                Some(u)
            }
            _ => None,
        }
    }

    /// The last attempt failure the call absorbed before it ended as an unavailable-family
    /// error or `CallDeadlineExceeded`; `None` before any attempt failed. The errors an attempt
    /// ended (`RequestRejected`, `ResultInvalid`, `Committed`) carry that attempt as their
    /// [`attempt_error`](Self::attempt_error) instead.
    pub fn last_failure(&self) -> Option<&AttemptError> {
        match self {
            Self::CallDeadlineExceeded(d) => d.last_failure.as_deref(),
            _ => self.unavailable().and_then(|u| u.last_failure.as_deref()),
        }
    }

    /// The per-source reasons a call-level error carries: the unavailable
    /// family's and `CallDeadlineExceeded`'s; `None` for other variants.
    pub fn per_source_reasons(&self) -> Option<&BTreeMap<String, FailureReason>> {
        match self {
            Self::CallDeadlineExceeded(d) => Some(&d.per_source_reasons),
            _ => self.unavailable().map(|u| &u.per_source_reasons),
        }
    }

    /// Upstream requests the call made (attempts that reached the transport); 0 for errors
    /// raised before any request.
    pub fn attempts(&self) -> u32 {
        match self {
            Self::RequestRejected(c) | Self::ResultInvalid(c) | Self::Committed(c) => c.attempts,
            Self::CallDeadlineExceeded(d) => d.attempts,
            _ => self.unavailable().map_or(0, |u| u.attempts),
        }
    }

    /// The same error with its attempt count set to `attempts` (variants raised before I/O
    /// carry none and are returned as is).
    #[must_use]
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        match &mut self {
            Self::RequestRejected(c) | Self::ResultInvalid(c) | Self::Committed(c) => {
                c.attempts = attempts;
            }
            Self::AllSourcesExhausted(u) | Self::CircuitOpen(u) | Self::GovernanceBackend(u) => {
                u.attempts = attempts;
            }
            Self::CallDeadlineExceeded(d) => d.attempts = attempts,
            _ => {}
        }
        self
    }

    /// Attaches a call's cause: when this is a call-level error that carries one
    /// (unavailable family, `CallDeadlineExceeded`), sets `last_failure` if it has none and
    /// adds the sources of `reasons` it does not name yet; a source `reasons` calls
    /// `source_dead` keeps that reason over a later `circuit_open` (its own verdict opened the
    /// breaker). Other variants are returned as is.
    #[must_use]
    pub fn with_cause(
        mut self,
        last_failure: Option<&AttemptError>,
        reasons: &BTreeMap<String, FailureReason>,
    ) -> Self {
        let (slot, map) = match &mut self {
            Self::AllSourcesExhausted(u) | Self::CircuitOpen(u) | Self::GovernanceBackend(u) => {
                (&mut u.last_failure, &mut u.per_source_reasons)
            }
            Self::CallDeadlineExceeded(d) => (&mut d.last_failure, &mut d.per_source_reasons),
            _ => return self,
        };
        if slot.is_none() {
            *slot = last_failure.cloned().map(Box::new);
        }
        for (source, reason) in reasons {
            let entry = map.entry(source.clone()).or_insert(*reason);
            if *reason == FailureReason::SourceDead && *entry == FailureReason::CircuitOpen {
                *entry = FailureReason::SourceDead;
            }
        }
        self
    }

    /// `true` when this error ended a streamed call after its commit point: the
    /// caller already received part of the answer and the call was not retried.
    pub fn is_committed(&self) -> bool {
        matches!(self, Self::Committed(_))
    }

    /// The output forwarded before a post-commit failure, if any.
    pub fn partial_output(&self) -> Option<&PartialOutput> {
        self.call_failure().and_then(CallFailure::partial_output)
    }

    /// Marks this error as a post-commit failure carrying `partial`: `RequestRejected` and
    /// `ResultInvalid` become `Committed` with the same cause. Other errors are returned as is.
    #[must_use]
    pub fn into_committed(self, partial: PartialOutput) -> Self {
        match self {
            Self::RequestRejected(mut c) | Self::ResultInvalid(mut c) => {
                c.partial = Some(partial);
                Self::Committed(c)
            }
            other => other,
        }
    }

    /// The `ResultInvalid` details (also of a `Committed` error whose cause is one).
    pub fn result_invalid_details(&self) -> Option<&ResultInvalidDetails> {
        self.attempt_error()
            .and_then(AttemptError::result_invalid_details)
    }

    /// The `ConfigError` carried by `Config`.
    pub fn config_error(&self) -> Option<&ConfigError> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }

    /// Seconds to wait before asking again: `Some` only for the unavailable family. An
    /// absorbed failure's server hint is on [`last_failure`](Self::last_failure).
    pub fn retry_after_s(&self) -> Option<f64> {
        self.unavailable().map(|u| u.retry_after_s)
    }

    /// The reason code of the failure that ended the call, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.attempt_failure().and_then(|f| f.reason_code)
    }

    /// The HTTP status of the failure that ended the call, if any.
    pub fn http_status(&self) -> Option<u16> {
        self.attempt_failure().and_then(|f| f.http_status)
    }

    /// The source the failure names: the attempt's source, or the unknown source of
    /// `SourceNotConfigured`.
    pub fn source_name(&self) -> Option<&str> {
        match self {
            Self::SourceNotConfigured(d) => Some(&d.source_name),
            _ => self
                .attempt_failure()
                .and_then(|f| f.source_name.as_deref()),
        }
    }

    /// The scope label, for the variants that carry one.
    pub fn scope(&self) -> Option<&str> {
        match self {
            Self::SourceNotConfigured(d) => Some(&d.scope),
            Self::CallDeadlineExceeded(d) => Some(&d.scope),
            _ => self.unavailable().map(|u| u.scope.as_str()),
        }
    }

    /// `true` for the unavailable family: defer and retry after `retry_after_s`.
    pub fn is_retryable_later(&self) -> bool {
        self.unavailable().is_some()
    }
}

impl fmt::Display for GatewayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RequestRejected(c) | Self::ResultInvalid(c) | Self::Committed(c) => {
                c.cause.fmt(f)
            }
            Self::AllSourcesExhausted(u) | Self::CircuitOpen(u) | Self::GovernanceBackend(u) => {
                u.fmt(f)
            }
            Self::SourceNotConfigured(d) => write!(
                f,
                "{}: source {} is not configured in the rate-limiter backend",
                d.scope, d.source_name
            ),
            Self::CallDeadlineExceeded(d) => {
                write!(f, "{} call deadline {}s expired", d.scope, d.deadline_s)
            }
            Self::InvalidArgument(d) => write!(f, "{}: {}", d.origin, d.message),
            Self::ClientClosed => f.write_str("client is closed"),
            Self::Config(e) => e.fmt(f),
        }
    }
}

impl StdError for GatewayError {
    /// The absorbed failure behind an unavailable-family error or a deadline.
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.last_failure().map(|e| e as &(dyn StdError + 'static))
    }
}

impl From<ConfigError> for GatewayError {
    fn from(error: ConfigError) -> Self {
        Self::Config(Box::new(error))
    }
}
