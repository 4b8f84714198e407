//! `adapter-monkeyocr`: the `OcrTransport` of PolyGateway over reqwest, for MonkeyOCR servers
//! (10 §8.3 CT-OCR-01..06).
//!
//! It performs requests and reports wire facts; the core judges them (README principle):
//! - text: one multipart `POST {base_url}/ocr/text` (one `file` part, filename sniffed);
//!   status ≠ 200 → `OcrWireFailure { stage: OcrText, Http }`; 200 → the body, unjudged;
//! - layout: `POST {base_url}/parse?return_type=zip_all` (stage `Parse`); the adapter reads only
//!   the result location (`download_url`) from the envelope, never `success`. A
//!   location that is server-relative is joined to `base_url`; an absolute one is fetched only
//!   when its scheme, host and port are those of `base_url`, else the archive is
//!   `Err(ArchiveFault::ForeignLocation)` and nothing is fetched. The download (stage
//!   `DownloadResult`) is read up to 64 MiB and decoded in memory by [`archive::decode_archive`]
//!   (needed members ≤ 32 MiB, zip bombs and path-traversal names refused as typed faults);
//! - health: `GET {base_url}/health`, unjudged.
//!
//! Every request carries the source's `HEADERS`, the key per `AUTH_STYLE` (optional for OCR),
//! `QUERY` and `X-Request-Id: <call_id>`, uses the source's `CA_FILE`, follows no
//! redirect, and sends only the form — never `extra_body`. The adapter sets a
//! connect timeout only; the core bounds one invocation by `timeout_s` and a health probe
//! by `min(timeout_s, 10 s)`. Errors and `Debug` never carry a key, a header value or a
//! URL (which may hold `QUERY` values).

pub mod archive;
mod fault;
pub mod multipart;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use gateway_ports::config::SourceConfig;
use gateway_ports::error::ConfigError;
use gateway_ports::vocab::AuthStyle;
use gateway_ports::{
    ArchiveFault, OcrLayoutWire, OcrStage, OcrTransport, OcrWireFailure, OcrWireRequest, WireBody,
    WireFailure,
};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Response, Url};

pub use archive::{ArchiveCaps, MAX_ARCHIVE_BYTES, MAX_MEMBER_BYTES, decode_archive};

/// The request header carrying the attempt's `call_id`.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Largest JSON answer (text envelope, parse envelope, health) read: 16 MiB = 16 777 216 bytes,
/// the OpenAI adapter's `max_frame_bytes` (or the source's `max_response_bytes` when smaller).
/// Above it: `WireFailure::FrameTooLarge`.
pub const MAX_ENVELOPE_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes of a non-200 body are retained: 1 MiB.
pub const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

/// Largest `CA_FILE` read: 16 MiB.
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;

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

/// One source's client, base URL and fixed headers. `Debug` shows no header value or URL.
#[derive(Clone)]
struct SourceClient {
    client: Client,
    base: Url,
    query: BTreeMap<String, String>,
    headers: HeaderMap,
    envelope_cap: usize,
}

impl fmt::Debug for SourceClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceClient")
            .field("header_names", &self.headers.keys().collect::<Vec<_>>())
            .field("envelope_cap", &self.envelope_cap)
            .finish_non_exhaustive()
    }
}

impl SourceClient {
    fn build(source: &SourceConfig) -> Result<Self, TransportBuildError> {
        let name = || source.name.clone();
        let connect = Duration::try_from_secs_f64(source.timeout_s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| TransportBuildError::Timeout {
                source_name: name(),
            })?;
        let mut builder = Client::builder()
            .connect_timeout(connect)
            .redirect(reqwest::redirect::Policy::none())
            .use_rustls_tls();
        if !source.trust_env {
            builder = builder.no_proxy();
        }
        if let Some(path) = &source.ca_file {
            for cert in read_ca_file(&source.name, path)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|e| TransportBuildError::Client {
            source_name: name(),
            detail: e.without_url().to_string(),
        })?;
        let base = Url::parse(source.base_url.trim_end_matches('/'))
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && !u.cannot_be_a_base())
            .filter(|u| u.host_str().is_some())
            .ok_or_else(|| TransportBuildError::BaseUrl {
                source_name: name(),
            })?;
        Ok(Self {
            client,
            base,
            query: source.query.clone(),
            headers: fixed_headers(source)?,
            envelope_cap: usize::try_from(source.max_response_bytes)
                .unwrap_or(usize::MAX)
                .min(MAX_ENVELOPE_BYTES),
        })
    }

    /// `{base_url}{path}` with `QUERY` (and `extra` pairs) appended.
    fn url(&self, path: &str, extra: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        let joined = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        if !self.query.is_empty() || !extra.is_empty() {
            let mut pairs = url.query_pairs_mut();
            pairs.extend_pairs(&self.query);
            pairs.extend_pairs(extra);
        }
        url
    }

    /// The download URL of a result location: a server-relative path is joined to
    /// `base_url`; an absolute URL (or a scheme-relative `//host/...`) must have the scheme,
    /// host and port of `base_url`. `Err(ForeignLocation)` otherwise.
    fn result_url(&self, location: &str) -> Result<Url, ArchiveFault> {
        let location = location.trim();
        let absolute = location.contains("://") || location.starts_with("//");
        if !absolute {
            let path = if location.starts_with('/') {
                location.to_owned()
            } else {
                format!("/{location}")
            };
            let (path, query) = match path.split_once('?') {
                Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
                None => (path, None),
            };
            let mut url = self.url(&path, &[]);
            if let Some(q) = query {
                let merged = match url.query() {
                    Some(existing) if !existing.is_empty() => format!("{existing}&{q}"),
                    _ => q,
                };
                url.set_query(Some(&merged));
            }
            return Ok(url);
        }
        let url = self
            .base
            .join(location)
            .map_err(|_| ArchiveFault::ForeignLocation)?;
        let same = url.scheme() == self.base.scheme()
            && url.host_str().map(str::to_ascii_lowercase)
                == self.base.host_str().map(str::to_ascii_lowercase)
            && url.port_or_known_default() == self.base.port_or_known_default()
            && url.username().is_empty()
            && url.password().is_none();
        if same {
            let mut url = url;
            if !self.query.is_empty() {
                url.query_pairs_mut().extend_pairs(&self.query);
            }
            Ok(url)
        } else {
            Err(ArchiveFault::ForeignLocation)
        }
    }
}

fn read_ca_file(
    source_name: &str,
    path: &PathBuf,
) -> Result<Vec<reqwest::Certificate>, TransportBuildError> {
    use std::io::Read as _;
    let fail = |reason: String| TransportBuildError::CaFile {
        source_name: source_name.to_owned(),
        path: path.clone(),
        reason,
    };
    let mut pem = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CA_FILE_BYTES + 1).read_to_end(&mut pem))
        .map_err(|e| fail(format!("cannot be read ({})", e.kind())))?;
    if pem.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(fail(format!("is larger than {MAX_CA_FILE_BYTES} bytes")));
    }
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|_| fail("is not a PEM certificate file".to_owned()))?;
    if certs.is_empty() {
        return Err(fail("holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// `HEADERS`, then the key per `AUTH_STYLE` (values marked sensitive). An OCR key is optional.
fn fixed_headers(source: &SourceConfig) -> Result<HeaderMap, TransportBuildError> {
    let mut headers = HeaderMap::with_capacity(source.headers.len() + 1);
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
                HeaderName::from_static("api-key"),
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
    headers.remove(REQUEST_ID_HEADER);
    headers.remove(header::CONTENT_TYPE);
    Ok(headers)
}

/// The MonkeyOCR transport: one reqwest client per source, built at construction. Requests for a
/// source it was not built with get a client built on the spot (configuration errors then are a
/// `WireFailure::Unsupported`).
#[derive(Clone)]
pub struct MonkeyOcrTransport {
    clients: Arc<HashMap<String, SourceClient>>,
}

impl fmt::Debug for MonkeyOcrTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonkeyOcrTransport")
            .field("sources", &self.clients.len())
            .finish()
    }
}

/// What one read of a body produced.
enum Read {
    /// The whole body.
    Whole(Bytes),
    /// The body exceeds the cap (the connection is dropped, not pooled).
    Over,
}

/// Reads `response` up to `cap` bytes, never more than `cap + 1` into memory.
async fn read_capped(mut response: Response, cap: usize) -> Result<Read, reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(cap).unwrap_or(u64::MAX))
    {
        return Ok(Read::Over);
    }
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if out.len().saturating_add(chunk.len()) > cap {
            return Ok(Read::Over);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Read::Whole(Bytes::from(out)))
}

fn header_pairs(response: &Response) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// A non-200 answer as `WireFailure::Http` (body retained up to 1 MiB, truncated silently).
async fn http_failure(mut response: Response) -> WireFailure {
    let status = response.status().as_u16();
    let headers = header_pairs(&response);
    let mut kept = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if kept.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    WireFailure::Http {
        status,
        headers,
        body: gateway_ports::body_text(&kept).into_owned(),
    }
}

/// A 200 JSON answer read whole within `cap`.
async fn read_body(response: Response, cap: usize) -> Result<WireBody, WireFailure> {
    let headers = header_pairs(&response);
    match read_capped(response, cap).await {
        Ok(Read::Whole(bytes)) => Ok(WireBody { headers, bytes }),
        Ok(Read::Over) => Err(WireFailure::FrameTooLarge { limit: cap }),
        Err(e) => Err(WireFailure::ReadError(fault::network_fault(
            &e,
            fault::Phase::Body,
        ))),
    }
}

/// The result location named by a parse envelope: a non-empty string `download_url`.
/// Nothing else of the envelope is read.
pub fn result_location(envelope: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(envelope).ok()?;
    value
        .get("download_url")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

impl MonkeyOcrTransport {
    /// Builds one client per source. Errors name the source and the field.
    pub fn new(sources: &[SourceConfig]) -> Result<Self, TransportBuildError> {
        let mut clients = HashMap::with_capacity(sources.len());
        for source in sources {
            clients.insert(source.name.clone(), SourceClient::build(source)?);
        }
        Ok(Self {
            clients: Arc::new(clients),
        })
    }

    fn client(&self, source: &SourceConfig) -> Result<SourceClient, WireFailure> {
        match self.clients.get(&source.name) {
            Some(c) => Ok(c.clone()),
            None => SourceClient::build(source).map_err(|_| WireFailure::Unsupported {
                what: "a source whose configuration cannot build an HTTP client",
            }),
        }
    }

    /// One multipart POST; the response when a status arrived.
    async fn post_form(
        client: &SourceClient,
        url: Url,
        req: &OcrWireRequest,
    ) -> Result<Response, WireFailure> {
        let (content_type, body) = multipart::file_form(&req.image, &req.call_id);
        client
            .client
            .post(url)
            .headers(client.headers.clone())
            .header(header::CONTENT_TYPE, content_type)
            .header(REQUEST_ID_HEADER, req.call_id.as_str())
            .body(body)
            .send()
            .await
            .map_err(|e| WireFailure::Network(fault::network_fault(&e, fault::Phase::Send)))
    }

    async fn get(
        client: &SourceClient,
        url: Url,
        call_id: Option<&str>,
    ) -> Result<Response, WireFailure> {
        let mut request = client.client.get(url).headers(client.headers.clone());
        if let Some(id) = call_id {
            request = request.header(REQUEST_ID_HEADER, id);
        }
        request
            .send()
            .await
            .map_err(|e| WireFailure::Network(fault::network_fault(&e, fault::Phase::Send)))
    }

    /// The archive step of a layout call (stage `DownloadResult`).
    async fn download(
        client: &SourceClient,
        location: &str,
        call_id: &str,
    ) -> Result<Result<Vec<gateway_ports::ArchiveEntry>, ArchiveFault>, OcrWireFailure> {
        let fail = |failure| OcrWireFailure {
            stage: OcrStage::DownloadResult,
            failure,
        };
        let url = match client.result_url(location) {
            Ok(url) => url,
            Err(fault) => return Ok(Err(fault)),
        };
        let response = Self::get(client, url, Some(call_id)).await.map_err(fail)?;
        if response.status().as_u16() != 200 {
            return Err(fail(http_failure(response).await));
        }
        match read_capped(response, MAX_ARCHIVE_BYTES).await {
            Ok(Read::Over) => Ok(Err(ArchiveFault::TooLarge {
                limit: MAX_ARCHIVE_BYTES,
            })),
            Ok(Read::Whole(bytes)) => Ok(decode_archive(&bytes, ArchiveCaps::default())),
            Err(e) => Err(fail(WireFailure::ReadError(fault::network_fault(
                &e,
                fault::Phase::Body,
            )))),
        }
    }
}

#[async_trait]
impl OcrTransport for MonkeyOcrTransport {
    async fn recognize_text(&self, req: OcrWireRequest) -> Result<WireBody, OcrWireFailure> {
        let fail = |failure| OcrWireFailure {
            stage: OcrStage::OcrText,
            failure,
        };
        let client = self.client(&req.source).map_err(fail)?;
        let url = client.url("/ocr/text", &[]);
        let response = Self::post_form(&client, url, &req).await.map_err(fail)?;
        if response.status().as_u16() != 200 {
            return Err(fail(http_failure(response).await));
        }
        read_body(response, client.envelope_cap).await.map_err(fail)
    }

    async fn parse_layout(&self, req: OcrWireRequest) -> Result<OcrLayoutWire, OcrWireFailure> {
        let fail = |failure| OcrWireFailure {
            stage: OcrStage::Parse,
            failure,
        };
        let client = self.client(&req.source).map_err(fail)?;
        let url = client.url("/parse", &[("return_type", "zip_all")]);
        let response = Self::post_form(&client, url, &req).await.map_err(fail)?;
        if response.status().as_u16() != 200 {
            return Err(fail(http_failure(response).await));
        }
        let envelope = read_body(response, client.envelope_cap)
            .await
            .map_err(fail)?;
        let archive = match result_location(&envelope.bytes) {
            None => None,
            Some(location) => Some(Self::download(&client, &location, &req.call_id).await?),
        };
        Ok(OcrLayoutWire { envelope, archive })
    }

    async fn check_health(&self, source: &SourceConfig) -> Result<WireBody, WireFailure> {
        let client = self.client(source)?;
        let url = client.url("/health", &[]);
        let response = Self::get(&client, url, None).await?;
        if response.status().as_u16() != 200 {
            return Err(http_failure(response).await);
        }
        read_body(response, MAX_ERROR_BODY_BYTES).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_ports::config::Secret;

    fn source(base: &str) -> SourceConfig {
        SourceConfig::new("monkey_1", "monkey", base, None, "monkeyocr")
    }

    fn client(base: &str) -> SourceClient {
        SourceClient::build(&source(base)).unwrap()
    }

    #[test]
    fn o_13_relative_location_joins_base_url() {
        let c = client("http://127.0.0.1:7861");
        assert_eq!(
            c.result_url("/static/a.zip").unwrap().as_str(),
            "http://127.0.0.1:7861/static/a.zip"
        );
        assert_eq!(
            c.result_url("static/a.zip").unwrap().as_str(),
            "http://127.0.0.1:7861/static/a.zip"
        );
        let c = client("http://h.invalid:8000/ocr/");
        assert_eq!(
            c.result_url("/static/a.zip?x=1").unwrap().as_str(),
            "http://h.invalid:8000/ocr/static/a.zip?x=1"
        );
    }

    #[test]
    fn o_13_absolute_location_same_origin_only() {
        let c = client("http://127.0.0.1:7861");
        assert!(c.result_url("http://127.0.0.1:7861/static/a.zip").is_ok());
        for foreign in [
            "http://127.0.0.1:7862/static/a.zip",
            "https://127.0.0.1:7861/static/a.zip",
            "http://evil.invalid:7861/static/a.zip",
            "//evil.invalid/static/a.zip",
            "http://user:pw@127.0.0.1:7861/a.zip",
            "file:///etc/passwd",
        ] {
            assert_eq!(
                c.result_url(foreign),
                Err(ArchiveFault::ForeignLocation),
                "{foreign}"
            );
        }
        // Default port spelt out is the same origin.
        let c = client("http://h.invalid");
        assert!(c.result_url("http://h.invalid:80/a.zip").is_ok());
    }

    #[test]
    fn ct_ocr_03_only_the_location_is_read() {
        assert_eq!(
            result_location(br#"{"success":false,"download_url":"/static/x.zip"}"#).as_deref(),
            Some("/static/x.zip")
        );
        assert_eq!(
            result_location(br#"{"success":true,"download_url":null}"#),
            None
        );
        assert_eq!(result_location(br#"{"download_url":"  "}"#), None);
        assert_eq!(result_location(b"not json"), None);
    }

    #[test]
    fn r_33_query_and_auth_applied_key_optional() {
        let mut src = source("http://h.invalid/base");
        src.query.insert("api-version".to_owned(), "1".to_owned());
        let c = SourceClient::build(&src).unwrap();
        assert_eq!(
            c.url("/parse", &[("return_type", "zip_all")]).as_str(),
            "http://h.invalid/base/parse?api-version=1&return_type=zip_all"
        );
        assert!(c.headers.get("authorization").is_none());
        src.api_key = Some(Secret::from("sk-ocr-secret"));
        let c = SourceClient::build(&src).unwrap();
        assert_eq!(
            c.headers.get("authorization").map(|v| v.as_bytes()),
            Some(&b"Bearer sk-ocr-secret"[..])
        );
        assert!(!format!("{c:?}").contains("sk-ocr-secret"));
    }

    #[test]
    fn f9_bad_base_url_names_the_field() {
        let err = SourceClient::build(&source("ftp://h.invalid")).unwrap_err();
        assert_eq!(err.field(), Some("BASE_URL"));
        assert_eq!(err.code(), "source.identity");
    }

    proptest::proptest! {
        /// whatever location a server names, the download URL stays on the source's own
        /// scheme, host and port (or the location is refused as foreign).
        #[test]
        fn o_13_download_never_leaves_the_origin(location in "\\PC{0,60}", host in "[a-z]{1,8}", port in 1u16..65535) {
            let c = client("http://127.0.0.1:7861/base");
            for loc in [location.clone(), format!("http://{host}:{port}/{location}"), format!("//{host}/{location}")] {
                if let Ok(url) = c.result_url(&loc) {
                    proptest::prop_assert_eq!(url.scheme(), "http");
                    proptest::prop_assert_eq!(url.host_str(), Some("127.0.0.1"));
                    proptest::prop_assert_eq!(url.port_or_known_default(), Some(7861));
                }
            }
        }

        /// a member name with a `..` component is never accepted.
        #[test]
        fn o_15_dot_dot_component_is_never_safe(a in "[a-z/]{0,10}", b in "[a-z/]{0,10}") {
            let name = format!("{a}/../{b}");
            proptest::prop_assert!(!archive::is_safe_member_name(&name));
        }
    }
}
