//! One source's HTTP client: the reqwest client (TLS roots from `CA_FILE`), its base URL and
//! fixed headers (auth, `HEADERS`).
//!
//! Separate from the transport: built once per source at construction.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use gateway_ports::ArchiveFault;
use gateway_ports::config::SourceConfig;
use gateway_ports::vocab::AuthStyle;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Url, header};

use crate::build_error::TransportBuildError;
use crate::{MAX_ENVELOPE_BYTES, REQUEST_ID_HEADER};

/// Largest `CA_FILE` read: 16 MiB.
const MAX_CA_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// One source's client, base URL and fixed headers. `Debug` shows no header value or URL.
#[derive(Clone)]
pub(crate) struct SourceClient {
    pub(crate) client: Client,
    pub(crate) base: Url,
    pub(crate) query: BTreeMap<String, String>,
    pub(crate) headers: HeaderMap,
    pub(crate) envelope_cap: usize,
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
    pub(crate) fn build(source: &SourceConfig) -> Result<Self, TransportBuildError> {
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
    pub(crate) fn url(&self, path: &str, extra: &[(&str, &str)]) -> Url {
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
    pub(crate) fn result_url(&self, location: &str) -> Result<Url, ArchiveFault> {
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
