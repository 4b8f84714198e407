//! Error types: `GatewayError` (the one error of every public call), the assembly-time
//! `ConfigError`/`ConfigWarning`, and the *facts* ports report at their boundary
//! (`WireFailure`, `NetworkFault`, `BackendError`, `CacheError`, `RecordError`, `ArchiveFault`).
//!
//! Owns the taxonomy's shape. Ports return facts, never
//! `GatewayError`: one classifier in `gateway-core` turns facts into categories.
//! `GatewayError` boxes every payload so `Result<T, GatewayError>` stays two words;
//! callers ask questions (`category()`, `reason_code()`, `retry_after_s()`, …) instead of
//! matching variants. No error text ever contains a secret.

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;

use crate::vocab::{
    Category, CauseKind, ErrorOperation, FailureReason, ReasonCode, ScopeReason, wire_enum,
};

/// What a failed attempt carries: the payload of `Transient`, `SourceDead`,
/// `RequestRejected`, and the inner part of `ResultInvalid`.
#[derive(Debug, Clone, PartialEq)]
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
    /// Parsed server hint in seconds; only ever `Some` on `Transient`.
    pub retry_after_s: Option<f64>,
    /// Body summary; diagnostic side data, never governance.
    pub body_text: Option<String>,
    /// Stable reason token.
    pub reason_code: Option<ReasonCode>,
    /// Underlying fault kind → telemetry `cause_type`.
    pub cause: Option<CauseKind>,
    /// `Some` when the failure ended a streamed call **after** its commit point:
    /// the output already forwarded to the caller. Such a failure is never retried.
    pub committed: Option<Box<PartialOutput>>,
}

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
            committed: None,
        }
    }
}

impl fmt::Display for AttemptFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Payload of `GatewayError::ResultInvalid` .
#[derive(Debug, Clone, PartialEq)]
pub struct ResultInvalidDetails {
    /// The failure; `http_status`, `retry_after_s` and `body_text` are `None`.
    pub failure: AttemptFailure,
    /// Structured-output validation errors (70); empty otherwise.
    pub validation_errors: Vec<String>,
    /// Structured-output repair error (70).
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
}

/// The unavailable family's payload: "the whole scope is temporarily unavailable —
/// defer, do not count it against your business failure budget".
#[derive(Debug, Clone, PartialEq)]
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
    pub last_failure: Option<Box<GatewayError>>,
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
        }
    }
}

impl fmt::Display for Unavailable {
    /// `"{scope} gateway temporarily unavailable: {reason}"`, or the `detail` for
    /// `backend_unavailable`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.reason, &self.detail) {
            (ScopeReason::BackendUnavailable, Some(detail)) => f.write_str(detail),
            // A scope that can never admit names the limit (issue 22).
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
pub struct SourceNotConfiguredDetails {
    /// Scope label.
    pub scope: String,
    /// The unknown source name.
    pub source_name: String,
}

/// Payload of `GatewayError::CallDeadlineExceeded`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadlineExceededDetails {
    /// Scope label.
    pub scope: String,
    /// The deadline that expired, in seconds.
    pub deadline_s: f64,
    /// Per-source reasons gathered before the deadline (empty when no attempt failed).
    pub per_source_reasons: BTreeMap<String, FailureReason>,
    /// The last attempt failure before the deadline (`None` when no attempt had failed);
    /// exposed via `Error::source()`, never in telemetry.
    pub last_failure: Option<Box<GatewayError>>,
}

/// Payload of `GatewayError::InvalidArgument`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidArgumentDetails {
    /// Where it came from, spelt the Rust way, e.g. `ChatRequest::call_deadline`.
    pub origin: String,
    /// English description.
    pub message: String,
}

/// The one error type of every public call. `#[non_exhaustive]`:
/// variants are only appended. Every payload is boxed so the value is two words.
///
/// `Transient` and `SourceDead` never reach a caller as the top-level error: they are
/// absorbed by the retry loop and appear only in `Unavailable::last_failure` and telemetry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GatewayError {
    /// The source may succeed if asked again.
    Transient(Box<AttemptFailure>),
    /// This source cannot serve now (credentials, quota, endpoint).
    SourceDead(Box<AttemptFailure>),
    /// The upstream (or the transport, before sending) refused this request.
    RequestRejected(Box<AttemptFailure>),
    /// The source answered, but the result is deterministically unusable.
    ResultInvalid(Box<ResultInvalidDetails>),
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
        }))
    }

    /// `InvalidArgument`.
    pub fn invalid_argument(origin: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument(Box::new(InvalidArgumentDetails {
            origin: origin.into(),
            message: message.into(),
        }))
    }

    /// Stable type name (telemetry `error_type`; the CLI's exit-code key).
    pub const fn type_name(&self) -> &'static str {
        match self {
            Self::Transient(_) => "TransientError",
            Self::SourceDead(_) => "SourceDeadError",
            Self::RequestRejected(_) => "RequestRejectedError",
            Self::ResultInvalid(_) => "ResultInvalidError",
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

    /// The category for the four per-attempt outcomes; `None` otherwise.
    pub const fn category(&self) -> Option<Category> {
        match self {
            Self::Transient(_) => Some(Category::Transient),
            Self::SourceDead(_) => Some(Category::SourceDead),
            Self::RequestRejected(_) => Some(Category::RequestRejected),
            Self::ResultInvalid(_) => Some(Category::ResultInvalid),
            _ => None,
        }
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

    /// The last attempt failure a call-level error carries: the unavailable
    /// family's and `CallDeadlineExceeded`'s; `None` for other variants or before any attempt
    /// failed.
    pub fn last_failure(&self) -> Option<&GatewayError> {
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

    /// Attaches a call's cause: when this is a call-level error that carries one
    /// (unavailable family, `CallDeadlineExceeded`), sets `last_failure` if it has none and
    /// adds the sources of `reasons` it does not name yet; a source `reasons` calls
    /// `source_dead` keeps that reason over a later `circuit_open` (its own verdict opened the
    /// breaker). Other variants are returned as is.
    pub fn with_cause(
        mut self,
        last_failure: Option<&GatewayError>,
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

    /// The attempt failure of the four categories (`ResultInvalid`: its inner failure).
    pub fn attempt_failure(&self) -> Option<&AttemptFailure> {
        match self {
            Self::Transient(f) | Self::SourceDead(f) | Self::RequestRejected(f) => Some(f),
            Self::ResultInvalid(d) => Some(&d.failure),
            _ => None,
        }
    }

    /// `true` when this error ended a streamed call after its commit point: the
    /// caller already received part of the answer and the call was not retried.
    pub fn is_committed(&self) -> bool {
        self.partial_output().is_some()
    }

    /// The output forwarded before a post-commit failure, if any.
    pub fn partial_output(&self) -> Option<&PartialOutput> {
        self.attempt_failure().and_then(|f| f.committed.as_deref())
    }

    /// Marks this error as a post-commit failure carrying `partial`. Errors that
    /// carry no attempt failure are returned unchanged.
    #[must_use]
    pub fn into_committed(mut self, partial: PartialOutput) -> Self {
        match &mut self {
            Self::Transient(f) | Self::SourceDead(f) | Self::RequestRejected(f) => {
                f.committed = Some(Box::new(partial));
            }
            Self::ResultInvalid(d) => d.failure.committed = Some(Box::new(partial)),
            _ => {}
        }
        self
    }

    /// The `ResultInvalid` details.
    pub fn result_invalid_details(&self) -> Option<&ResultInvalidDetails> {
        match self {
            Self::ResultInvalid(d) => Some(d),
            _ => None,
        }
    }

    /// The `ConfigError` carried by `Config`.
    pub fn config_error(&self) -> Option<&ConfigError> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }

    /// Seconds to wait before asking again: `Some` only for the unavailable family. A `Transient`'s server hint is on [`AttemptFailure::retry_after_s`].
    pub fn retry_after_s(&self) -> Option<f64> {
        self.unavailable().map(|u| u.retry_after_s)
    }

    /// The failure's reason code, if any.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        self.attempt_failure().and_then(|f| f.reason_code)
    }

    /// The failure's HTTP status, if any.
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
            Self::Transient(a) | Self::SourceDead(a) | Self::RequestRejected(a) => a.fmt(f),
            Self::ResultInvalid(d) => d.failure.fmt(f),
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
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.last_failure().map(|e| e as &(dyn StdError + 'static))
    }
}

impl From<ConfigError> for GatewayError {
    fn from(error: ConfigError) -> Self {
        Self::Config(Box::new(error))
    }
}

/// An assembly-time configuration error: a stable `code`, the `origin` (the
/// environment key that matched, the settings field or the builder method) and an English
/// message that never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// Stable identifier, e.g. `"hedge.after_ge_min_timeout"`.
    pub code: &'static str,
    /// Env key, settings field or builder method.
    pub origin: String,
    /// English description.
    pub message: String,
}

impl ConfigError {
    /// Builds a configuration error.
    pub fn new(code: &'static str, origin: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            origin: origin.into(),
            message: message.into(),
        }
    }
}

/// An assembly-time warning (carries the source where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// Stable identifier, e.g. `"hedge.single_source"`.
    pub code: &'static str,
    /// English description.
    pub message: String,
    /// The source it concerns, if any.
    pub source: Option<String>,
    /// The configuration key it concerns, if one key is at fault (e.g. the unknown key of 20
    /// §2.5), so a strict caller such as `pgw` can turn the warning into a `ConfigError` naming it.
    pub key: Option<String>,
}

impl ConfigWarning {
    /// A warning without a source.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            source: None,
            key: None,
        }
    }

    /// The same warning naming the configuration `key` at fault.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The same warning naming `source`.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

wire_enum! {
    /// Kind of a network fault; the core maps it to `CauseKind`.
    pub enum NetworkFaultKind {
        /// `"connect_timeout"`.
        ConnectTimeout => "connect_timeout",
        /// `"connect"` (refused, DNS).
        Connect => "connect",
        /// `"tls"`.
        Tls => "tls",
        /// `"write_timeout"`.
        WriteTimeout => "write_timeout",
        /// `"write"`.
        Write => "write",
        /// `"read_timeout"`.
        ReadTimeout => "read_timeout",
        /// `"read"`.
        Read => "read",
        /// `"pool_timeout"`.
        PoolTimeout => "pool_timeout",
        /// `"protocol"`.
        Protocol => "protocol",
        /// `"other"`.
        Other => "other",
    }
}

impl NetworkFaultKind {
    /// The telemetry `cause_type` of this kind.
    pub const fn cause_kind(self) -> CauseKind {
        match self {
            Self::ConnectTimeout => CauseKind::ConnectTimeout,
            Self::Connect | Self::Tls => CauseKind::ConnectError,
            Self::WriteTimeout => CauseKind::WriteTimeout,
            Self::Write => CauseKind::WriteError,
            Self::ReadTimeout => CauseKind::ReadTimeout,
            Self::Read => CauseKind::ReadError,
            Self::PoolTimeout => CauseKind::PoolTimeout,
            Self::Protocol => CauseKind::RemoteProtocolError,
            Self::Other => CauseKind::NetworkError,
        }
    }
}

/// A network fault: `detail` is a secret-free description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}")]
pub struct NetworkFault {
    /// The kind.
    pub kind: NetworkFaultKind,
    /// Secret-free description.
    pub detail: String,
}

impl NetworkFault {
    /// Builds a fault.
    pub fn new(kind: NetworkFaultKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

/// How one HTTP exchange failed, as a fact. Neither `Display` nor `Debug`
/// echoes the body or header values (an upstream may echo the key back); read the
/// fields for them.
#[derive(Clone, PartialEq, thiserror::Error)]
pub enum WireFailure {
    /// Any status ≠ 200; headers with lower-cased names; body decoded as UTF-8 with
    /// replacement, at most `max_error_body_bytes` retained.
    #[error("upstream HTTP status {status} ({} body bytes retained)", body.len())]
    Http {
        /// The status received.
        status: u16,
        /// Every response header, names lower-cased, values as received.
        headers: Vec<(String, String)>,
        /// The retained body.
        body: String,
    },
    /// Failure before a status line (DNS, connect, TLS, request write).
    #[error("network fault ({0})")]
    Network(NetworkFault),
    /// A 200 non-stream body over `max_frame_bytes`.
    #[error("body exceeds {limit} bytes")]
    FrameTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// A 200 non-stream body that broke while being read.
    #[error("body read failed ({0})")]
    ReadError(NetworkFault),
    /// The transport cannot serve this request shape (→ `RequestRejected`).
    #[error("transport cannot serve this request: {what}")]
    Unsupported {
        /// What is unsupported.
        what: &'static str,
    },
}

/// The OCR result archive could not be fetched safely or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveFault {
    /// Not a decodable ZIP.
    #[error("result archive is not decodable")]
    Undecodable,
    /// Archive or member over its cap.
    #[error("result archive exceeds {limit} bytes")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The result location is not under the source's scheme, host and port.
    #[error("result archive location is foreign to the source")]
    ForeignLocation,
    /// A member name is absolute, climbs out of the archive (`..`), or holds a backslash, a
    /// drive prefix or a NUL byte (path traversal); the archive is refused as a whole.
    #[error("result archive has an unsafe member name")]
    UnsafeMemberName,
}

impl fmt::Debug for WireFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http {
                status,
                headers,
                body,
            } => f
                .debug_struct("Http")
                .field("status", status)
                .field(
                    "header_names",
                    &headers
                        .iter()
                        .map(|(name, _)| name.as_str())
                        .collect::<Vec<_>>(),
                )
                .field("body_len", &body.len())
                .finish(),
            Self::Network(fault) => f.debug_tuple("Network").field(fault).finish(),
            Self::FrameTooLarge { limit } => f
                .debug_struct("FrameTooLarge")
                .field("limit", limit)
                .finish(),
            Self::ReadError(fault) => f.debug_tuple("ReadError").field(fault).finish(),
            Self::Unsupported { what } => {
                f.debug_struct("Unsupported").field("what", what).finish()
            }
        }
    }
}

wire_enum! {
    /// Kind of a limiter/permit/breaker backend error.
    pub enum BackendErrorKind {
        /// `"unavailable"` → `GovernanceBackend`.
        Unavailable => "unavailable",
        /// `"source_not_configured"` → `SourceNotConfigured`.
        SourceNotConfigured => "source_not_configured",
        /// `"protocol"` → `GovernanceBackend`.
        Protocol => "protocol",
    }
}

/// A limiter, permit or breaker backend error. `detail` is secret-free.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {detail}")]
pub struct BackendError {
    /// The kind.
    pub kind: BackendErrorKind,
    /// Secret-free diagnostic (for `SourceNotConfigured`: the source name).
    pub detail: String,
}

impl BackendError {
    /// Builds an error.
    pub fn new(kind: BackendErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }

    /// `Unavailable` with this detail.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::Unavailable, detail)
    }

    /// `SourceNotConfigured` naming the source.
    pub fn source_not_configured(source: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::SourceNotConfigured, source)
    }

    /// `Protocol` with this detail.
    pub fn protocol(detail: impl Into<String>) -> Self {
        Self::new(BackendErrorKind::Protocol, detail)
    }
}

/// A response-cache backend error; always degraded to a warning by the core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cache backend: {detail}")]
pub struct CacheError {
    /// Secret-free diagnostic.
    pub detail: String,
}

impl CacheError {
    /// Builds an error.
    pub fn new(detail: impl Into<String>) -> Self {
        Self {
            detail: detail.into(),
        }
    }
}

wire_enum! {
    /// Kind of a telemetry recorder error.
    pub enum RecordErrorKind {
        /// `"unavailable"`.
        Unavailable => "unavailable",
        /// `"timeout"`.
        Timeout => "timeout",
        /// `"rejected"`.
        Rejected => "rejected",
        /// `"dropped"`.
        Dropped => "dropped",
    }
}

/// A telemetry recorder error; only ever logged by the emitter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("telemetry {kind}: {detail}")]
pub struct RecordError {
    /// The kind.
    pub kind: RecordErrorKind,
    /// Secret-free diagnostic.
    pub detail: String,
}

impl RecordError {
    /// Builds an error.
    pub fn new(kind: RecordErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}
