//! Per-source HTTP clients: one reqwest client (and connection pool) per source, built once at
//! construction from its `SourceConfig`, with the request URLs and fixed headers precomputed.
//!
//! Owns 05 R-25 (client settings), R-33 (`HEADERS`, `QUERY`, `AUTH_STYLE`, `CA_FILE`), 40 S-11
//! (a connect timeout and no other timer; content decoding) and 10 §8.1 CT-CHAT-01 (redirects not
//! followed), plus the adapter's size options. Everything that can fail from
//! configuration fails here, at construction, as a typed [`TransportBuildError`] that names the
//! source and the field — never at request time.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use gateway_ports::config::SourceConfig;
use gateway_ports::error::ConfigError;
use gateway_ports::ports::transport::Endpoint;
use gateway_ports::vocab::AuthStyle;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Url};

/// Default `max_error_body_bytes`: 1 MiB = 1 048 576 bytes.
pub const DEFAULT_MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

/// Default `max_frame_bytes`: 16 MiB = 16 777 216 bytes.
pub const DEFAULT_MAX_FRAME_BYTES: usize = crate::sse::DEFAULT_MAX_FRAME_BYTES;

/// The request header carrying the attempt's `call_id`.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The `api-key` header of `AUTH_STYLE=api_key_header` (Azure).
pub const API_KEY_HEADER: &str = "api-key";

/// Builder options of `adapter-openai`: not environment keys; the facade uses
/// the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportOptions {
    /// Cap in bytes on one SSE line, one event's data and one 200 non-stream body (40 S-12,
    /// S-17); default 16 MiB. Above it: `FrameTooLarge { limit }`.
    pub max_frame_bytes: usize,
    /// How many bytes of a non-200 body are retained; default 1 MiB. A longer body is
    /// truncated there (never an error) and its connection is closed, not pooled.
    pub max_error_body_bytes: usize,
}

impl Default for TransportOptions {
    fn default() -> Self {
        Self {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_error_body_bytes: DEFAULT_MAX_ERROR_BODY_BYTES,
        }
    }
}

/// Why a transport could not be built from its sources (20 §11 stage F9; 05 R-25).
///
/// Every variant names the source and the configuration field; none carries a secret (header
/// values and keys are never included). Convert with [`TransportBuildError::to_config_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportBuildError {
    /// `CA_FILE` is unreadable, not PEM, or holds no usable certificate (code
    /// `source.ca_file`).
    #[error("source {source_name}: CA_FILE {path:?} {reason}")]
    CaFile {
        /// The source.
        source_name: String,
        /// The configured path.
        path: PathBuf,
        /// What is wrong (secret-free).
        reason: String,
    },
    /// A `HEADERS` entry is not a valid HTTP header name or value (code `source.headers`). Only
    /// the name is reported, never the value.
    #[error("source {source_name}: HEADERS entry {name:?} is not a valid HTTP header")]
    Header {
        /// The source.
        source_name: String,
        /// The configured header name.
        name: String,
    },
    /// The API key cannot be sent as a header value (code `source.identity`).
    #[error("source {source_name}: API_KEY is not a valid HTTP header value")]
    ApiKey {
        /// The source.
        source_name: String,
    },
    /// `BASE_URL` (with the endpoint path and `QUERY`) is not a valid absolute URL (code
    /// `source.identity`).
    #[error("source {source_name}: BASE_URL is not a valid absolute http(s) URL")]
    BaseUrl {
        /// The source.
        source_name: String,
    },
    /// `TTFT_TIMEOUT_S` / `TIMEOUT_S` is not a finite positive number of seconds (code
    /// `source.watchdog`).
    #[error("source {source_name}: {field} is not a positive duration")]
    Timeout {
        /// The source.
        source_name: String,
        /// `TTFT_TIMEOUT_S` or `TIMEOUT_S` (whichever gave the connect timeout), or
        /// `POOL_IDLE_TIMEOUT_S`.
        field: &'static str,
    },
    /// Two sources share a name (code `source.duplicate`).
    #[error("source {source_name} is configured twice")]
    DuplicateSource {
        /// The repeated name.
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
    /// The stable `ConfigError` code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::CaFile { .. } => "source.ca_file",
            Self::Header { .. } => "source.headers",
            Self::ApiKey { .. } | Self::BaseUrl { .. } => "source.identity",
            Self::Timeout { .. } => "source.watchdog",
            Self::DuplicateSource { .. } => "source.duplicate",
            Self::Client { .. } => "transport.client",
        }
    }

    /// The per-source key segment at fault (`CA_FILE`, `HEADERS`, `API_KEY`, `BASE_URL`,
    /// `TTFT_TIMEOUT_S`/`TIMEOUT_S`), so the facade can name the full environment key
    /// `{SCOPE}__{PROVIDER}__{N}__{FIELD}`; `None` when no single field is at fault.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::CaFile { .. } => Some("CA_FILE"),
            Self::Header { .. } => Some("HEADERS"),
            Self::ApiKey { .. } => Some("API_KEY"),
            Self::BaseUrl { .. } => Some("BASE_URL"),
            Self::Timeout { field, .. } => Some(field),
            Self::DuplicateSource { .. } | Self::Client { .. } => None,
        }
    }

    /// The source the error concerns.
    pub fn source_name(&self) -> &str {
        match self {
            Self::CaFile { source_name, .. }
            | Self::Header { source_name, .. }
            | Self::ApiKey { source_name }
            | Self::BaseUrl { source_name }
            | Self::Timeout { source_name, .. }
            | Self::DuplicateSource { source_name }
            | Self::Client { source_name, .. } => source_name,
        }
    }

    /// This error as a `ConfigError` with [`code`](Self::code) and the given origin (the
    /// environment key, settings field or builder method).
    pub fn to_config_error(&self, origin: impl Into<String>) -> ConfigError {
        ConfigError::new(self.code(), origin, self.to_string())
    }
}

/// One source's client, URLs and fixed request headers. `Debug` shows no header value.
#[derive(Clone)]
pub(crate) struct SourceClient {
    pub(crate) client: Client,
    /// The same client without connection reuse: the one immediate re-send after
    /// a pooled connection turned out closed goes out on a fresh connection.
    pub(crate) fresh: Client,
    chat_url: Url,
    embeddings_url: Url,
    pub(crate) models_url: Url,
    /// `HEADERS`, then the auth header (values marked sensitive), then `Content-Type`.
    pub(crate) headers: HeaderMap,
    /// `timeout_s` in seconds (the doctor probe bound).
    pub(crate) timeout_s: f64,
    /// `max_response_bytes`.
    pub(crate) max_response_bytes: u64,
}

impl fmt::Debug for SourceClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceClient")
            .field("chat_path", &self.chat_url.path())
            .field("header_names", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_s", &self.timeout_s)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl SourceClient {
    /// Builds the client of one source.
    pub(crate) fn build(source: &SourceConfig) -> Result<Self, TransportBuildError> {
        let name = || source.name.clone();
        let (connect_s, field) = match source.ttft_timeout_s {
            Some(s) => (s, "TTFT_TIMEOUT_S"),
            None => (source.timeout_s, "TIMEOUT_S"),
        };
        let connect_timeout = Duration::try_from_secs_f64(connect_s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| TransportBuildError::Timeout {
                source_name: name(),
                field,
            })?;

        // README D29: idle pooled connections are closed after `POOL_IDLE_TIMEOUT_S` (default
        // 4 s, below the 5 s keep-alive of Node and llama.cpp servers).
        let pool_idle = Duration::try_from_secs_f64(source.pool_idle_timeout_s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| TransportBuildError::Timeout {
                source_name: name(),
                field: "POOL_IDLE_TIMEOUT_S",
            })?;
        let certs = match &source.ca_file {
            Some(path) => read_ca_file(&source.name, path)?,
            None => Vec::new(),
        };
        let build = |reuse: bool| {
            let mut builder = Client::builder()
                .connect_timeout(connect_timeout)
                .redirect(reqwest::redirect::Policy::none())
                .use_rustls_tls();
            builder = if reuse {
                builder.pool_idle_timeout(pool_idle)
            } else {
                builder.pool_max_idle_per_host(0)
            };
            if !source.trust_env {
                builder = builder.no_proxy();
            }
            for cert in &certs {
                builder = builder.add_root_certificate(cert.clone());
            }
            builder.build().map_err(|e| TransportBuildError::Client {
                source_name: name(),
                detail: e.without_url().to_string(),
            })
        };
        let client = build(true)?;
        let fresh = build(false)?;

        let url = |path: &str| endpoint_url(&source.base_url, path, &source.query);
        let bad_url = || TransportBuildError::BaseUrl {
            source_name: name(),
        };
        let chat_url = url(Endpoint::ChatCompletions.path()).ok_or_else(bad_url)?;
        let embeddings_url = url(Endpoint::Embeddings.path()).ok_or_else(bad_url)?;
        let models_url = url("/models").ok_or_else(bad_url)?;

        Ok(Self {
            client,
            fresh,
            chat_url,
            embeddings_url,
            models_url,
            headers: fixed_headers(source)?,
            timeout_s: source.timeout_s,
            max_response_bytes: source.max_response_bytes,
        })
    }

    /// The URL of an endpoint, with `QUERY` applied.
    pub(crate) fn url(&self, endpoint: Endpoint) -> &Url {
        match endpoint {
            Endpoint::ChatCompletions => &self.chat_url,
            Endpoint::Embeddings => &self.embeddings_url,
        }
    }
}

/// `{base_url}{path}` with the `QUERY` pairs appended; `None` unless an absolute http(s) URL.
fn endpoint_url(base_url: &str, path: &str, query: &BTreeMap<String, String>) -> Option<Url> {
    let mut url = Url::parse(&format!("{}{path}", base_url.trim_end_matches('/'))).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return None;
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    Some(url)
}

/// Largest `CA_FILE` read, in bytes: 16 MiB = 16 777 216 (a PEM bundle of every public root is
/// about 250 KiB). A larger file (or an endless one such as `/dev/zero`) is a `source.ca_file`
/// error instead of an unbounded read.
pub(crate) const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads `CA_FILE` once: a PEM bundle with at least one certificate, at most
/// [`MAX_CA_FILE_BYTES`].
fn read_ca_file(
    source_name: &str,
    path: &std::path::Path,
) -> Result<Vec<reqwest::Certificate>, TransportBuildError> {
    let fail = |reason: String| TransportBuildError::CaFile {
        source_name: source_name.to_owned(),
        path: path.to_path_buf(),
        reason,
    };
    let pem = gateway_ports::files::read_regular_file_capped(path, MAX_CA_FILE_BYTES)
        .map_err(|e| fail(e.to_string()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| fail("is not a PEM certificate file".to_owned()))?;
    if certs.is_empty() {
        return Err(fail("holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// The headers every request of this source carries, in this order: the source's `HEADERS`
/// (values literal: `${NAME}` references are resolved by the configuration layer), the
/// authentication header per `AUTH_STYLE`, and `Content-Type: application/json`. The adapter's
/// own headers replace a configured header of the same name (configuration refuses those names
/// anyway). Secret values are marked sensitive so `Debug` never shows them.
fn fixed_headers(source: &SourceConfig) -> Result<HeaderMap, TransportBuildError> {
    let mut headers = HeaderMap::with_capacity(source.headers.len() + 2);
    for (name, value) in &source.headers {
        let bad = || TransportBuildError::Header {
            source_name: source.name.clone(),
            name: name.clone(),
        };
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let mut header_value = HeaderValue::from_str(value.expose_secret()).map_err(|_| bad())?;
        header_value.set_sensitive(true);
        headers.append(header_name, header_value);
    }
    if let Some(key) = &source.api_key {
        let auth = match source.auth_style {
            AuthStyle::Bearer => Some((
                header::AUTHORIZATION,
                format!("Bearer {}", key.expose_secret()),
            )),
            AuthStyle::ApiKeyHeader => Some((
                HeaderName::from_static(API_KEY_HEADER),
                key.expose_secret().clone(),
            )),
            AuthStyle::None => None,
        };
        if let Some((name, value)) = auth {
            let mut value =
                HeaderValue::from_str(&value).map_err(|_| TransportBuildError::ApiKey {
                    source_name: source.name.clone(),
                })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
    }
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.remove(REQUEST_ID_HEADER);
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_ports::config::Secret;

    fn source() -> SourceConfig {
        SourceConfig::new(
            "azure_1",
            "azure",
            "https://example.invalid/openai/",
            Some(Secret::from("sk-test-key")),
            "m",
        )
    }

    #[test]
    fn r_33_query_appended_to_every_url() {
        let mut query = BTreeMap::new();
        query.insert("api-version".to_owned(), "2024-10-21".to_owned());
        let url = endpoint_url("https://h.invalid/openai", "/chat/completions", &query);
        assert_eq!(
            url.map(String::from).as_deref(),
            Some("https://h.invalid/openai/chat/completions?api-version=2024-10-21")
        );
    }

    #[test]
    fn r_33_base_url_must_be_absolute_http() {
        let q = BTreeMap::new();
        assert!(endpoint_url("ftp://h.invalid", "/models", &q).is_none());
        assert!(endpoint_url("not a url", "/models", &q).is_none());
        assert!(endpoint_url("http://127.0.0.1:9/v1/", "/models", &q).is_some());
    }

    #[test]
    fn r_33_auth_styles() {
        let bearer = fixed_headers(&source()).unwrap();
        assert_eq!(
            bearer.get("authorization").map(|v| v.as_bytes()),
            Some(&b"Bearer sk-test-key"[..])
        );
        assert!(bearer.get(API_KEY_HEADER).is_none());

        let azure = SourceConfig {
            auth_style: AuthStyle::ApiKeyHeader,
            ..source()
        };
        let h = fixed_headers(&azure).unwrap();
        assert_eq!(
            h.get(API_KEY_HEADER).map(|v| v.as_bytes()),
            Some(&b"sk-test-key"[..])
        );
        assert!(h.get("authorization").is_none());

        let none = SourceConfig {
            auth_style: AuthStyle::None,
            ..source()
        };
        let h = fixed_headers(&none).unwrap();
        assert!(h.get("authorization").is_none() && h.get(API_KEY_HEADER).is_none());
    }

    #[test]
    fn r_15_debug_never_shows_secrets() {
        let mut src = source();
        src.headers
            .insert("x-tenant-token".to_owned(), Secret::from("hdr-secret"));
        let client = SourceClient::build(&src).unwrap();
        let text = format!("{client:?} {:?}", client.headers);
        assert!(!text.contains("sk-test-key"), "{text}");
        assert!(!text.contains("hdr-secret"), "{text}");
    }

    #[test]
    fn r_33_bad_header_names_the_field_not_the_value() {
        let mut src = source();
        src.headers
            .insert("bad header".to_owned(), Secret::from("v-secret"));
        let err = SourceClient::build(&src).unwrap_err();
        assert_eq!(err.code(), "source.headers");
        assert_eq!(err.field(), Some("HEADERS"));
        assert!(!err.to_string().contains("v-secret"));
        let mut src = source();
        src.headers
            .insert("x-ok".to_owned(), Secret::from("line\nbreak-secret"));
        let err = SourceClient::build(&src).unwrap_err();
        assert!(!err.to_string().contains("break-secret"));
    }

    #[test]
    fn r_33_endless_ca_file_is_a_typed_error_not_an_unbounded_read() {
        // Adversarial: `/dev/zero` never ends; the read stops at the cap.
        let src = SourceConfig {
            ca_file: Some(PathBuf::from("/dev/zero")),
            ..source()
        };
        let err = SourceClient::build(&src).unwrap_err();
        assert_eq!(err.code(), "source.ca_file");
        assert_eq!(err.field(), Some("CA_FILE"));
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn r_25_connect_timeout_must_be_positive() {
        let src = SourceConfig {
            ttft_timeout_s: Some(f64::NAN),
            ..source()
        };
        let err = SourceClient::build(&src).unwrap_err();
        assert_eq!(err.field(), Some("TTFT_TIMEOUT_S"));
        assert_eq!(err.code(), "source.watchdog");
        let src = SourceConfig {
            timeout_s: 0.0,
            ..source()
        };
        assert_eq!(
            SourceClient::build(&src).unwrap_err().field(),
            Some("TIMEOUT_S")
        );
    }
}
