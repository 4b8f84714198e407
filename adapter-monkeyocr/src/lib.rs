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
mod body;
mod build_error;
mod client;
mod fault;
pub mod multipart;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use gateway_ports::config::SourceConfig;
use gateway_ports::{
    ArchiveFault, OcrLayoutWire, OcrStage, OcrTransport, OcrWireFailure, OcrWireRequest, WireBody,
    WireFailure,
};
use reqwest::header::{self};
use reqwest::{Response, Url};

pub use archive::{ArchiveCaps, MAX_ARCHIVE_BYTES, MAX_MEMBER_BYTES, decode_archive};
pub use body::result_location;
use body::{Read, http_failure, read_body, read_capped};
pub use build_error::TransportBuildError;
use client::SourceClient;

/// The request header carrying the attempt's `call_id`.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Largest JSON answer (text envelope, parse envelope, health) read: 16 MiB = 16 777 216 bytes,
/// the OpenAI adapter's `max_frame_bytes` (or the source's `max_response_bytes` when smaller).
/// Above it: `WireFailure::FrameTooLarge`.
pub const MAX_ENVELOPE_BYTES: usize = 16 * 1024 * 1024;

/// How many bytes of a non-200 body are retained: 1 MiB.
pub const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;

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
mod tests;
