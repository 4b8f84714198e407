//! Why a [`MonkeyOcrTransport`](crate::MonkeyOcrTransport) could not be built ([`TransportBuildError`]) and the
//! configuration error each cause becomes.
//!
//! Separate so construction failures are one type in one place.

use std::path::PathBuf;

use gateway_ports::error::ConfigError;

/// Why the transport could not be built (20 §11 stage F9). Names the source and the field, never
/// a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportBuildError {
    /// `BASE_URL` is not an absolute http(s) URL (code `source.identity`).
    #[error("source {source_name}: BASE_URL is not a valid absolute http(s) URL")]
    BaseUrl {
        /// The source.
        source_name: String,
    },
    /// A `HEADERS` entry is not a valid HTTP header (code `source.headers`); the name only.
    #[error("source {source_name}: HEADERS entry {name:?} is not a valid HTTP header")]
    Header {
        /// The source.
        source_name: String,
        /// The configured header name.
        name: String,
    },
    /// The key cannot be sent as a header value (code `source.identity`).
    #[error("source {source_name}: API_KEY is not a valid HTTP header value")]
    ApiKey {
        /// The source.
        source_name: String,
    },
    /// `CA_FILE` is unreadable, too large or holds no PEM certificate (code `source.ca_file`).
    #[error("source {source_name}: CA_FILE {path:?} {reason}")]
    CaFile {
        /// The source.
        source_name: String,
        /// The configured path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `TIMEOUT_S` (the connect timeout) is not a positive finite number (code `source.watchdog`).
    #[error("source {source_name}: TIMEOUT_S is not a positive duration")]
    Timeout {
        /// The source.
        source_name: String,
    },
    /// reqwest refused the client settings (code `transport.client`).
    #[error("source {source_name}: the HTTP client could not be built: {detail}")]
    Client {
        /// The source.
        source_name: String,
        /// reqwest's description.
        detail: String,
    },
}

impl TransportBuildError {
    /// The stable `ConfigError` code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BaseUrl { .. } | Self::ApiKey { .. } => "source.identity",
            Self::Header { .. } => "source.headers",
            Self::CaFile { .. } => "source.ca_file",
            Self::Timeout { .. } => "source.watchdog",
            Self::Client { .. } => "transport.client",
        }
    }

    /// The per-source key segment at fault, if one is.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::BaseUrl { .. } => Some("BASE_URL"),
            Self::Header { .. } => Some("HEADERS"),
            Self::ApiKey { .. } => Some("API_KEY"),
            Self::CaFile { .. } => Some("CA_FILE"),
            Self::Timeout { .. } => Some("TIMEOUT_S"),
            Self::Client { .. } => None,
        }
    }

    /// The source the error concerns.
    pub fn source_name(&self) -> &str {
        match self {
            Self::BaseUrl { source_name }
            | Self::Header { source_name, .. }
            | Self::ApiKey { source_name }
            | Self::CaFile { source_name, .. }
            | Self::Timeout { source_name }
            | Self::Client { source_name, .. } => source_name,
        }
    }

    /// This error as a `ConfigError` with [`code`](Self::code) and `origin`.
    pub fn to_config_error(&self, origin: impl Into<String>) -> ConfigError {
        ConfigError::new(self.code(), origin, self.to_string())
    }
}
