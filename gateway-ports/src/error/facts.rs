//! The facts ports report at their boundary: `WireFailure`, `NetworkFault`, `BackendError`,
//! `CacheError`, `RecordError`, `ArchiveFault`. Ports return these, never a category: one
//! classifier in `gateway-core` turns facts into categories.

use std::fmt;

use crate::vocab::{CauseKind, wire_enum};

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
