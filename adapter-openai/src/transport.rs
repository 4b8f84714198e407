//! `OpenAiTransport`: the OpenAI-compatible `ChatTransport` and `EmbeddingTransport` over
//! reqwest, plus the `pgw doctor` probe.
//!
//! Owns one HTTP exchange per `send` and the wire facts it reports (10 §8.1,
//! §8.2; 05 R-14): the request (URL, headers, the body bytes as the core serialised them, sent
//! verbatim), the status split (200 → events or body; anything else → `WireFailure::Http`), the
//! error body retained up to `max_error_body_bytes`, and network faults before a status line.
//! It judges nothing: no classification, no retry, no timer besides the connect timeout.
//!
//! Cancellation (10 §8.0 rule 2): every future and stream here owns its
//! response; dropping it drops the response, and hyper closes a connection whose body was not
//! read to its end, so the upstream sees the disconnect and nothing half-read is pooled.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use gateway_ports::config::SourceConfig;
use gateway_ports::error::WireFailure;
use gateway_ports::ports::transport::{
    ChatTransport, EmbeddingTransport, Endpoint, WireBody, WireEventStream, WireRequest,
    WireResponse, is_json_content_type,
};
use reqwest::header::{self, HeaderMap, HeaderValue};

use crate::client::{REQUEST_ID_HEADER, SourceClient, TransportBuildError, TransportOptions};
use crate::events::{BodyReadError, BodyStream, SseEventStream, json_body_events, read_capped};
use crate::fault::{Phase, is_stale_connection, network_fault};

/// Stable `code` of the debug event logged when a stale pooled connection was re-sent on a
/// fresh one.
pub const STALE_CONNECTION_RESENT: &str = "transport.stale_connection_resent";

/// Upper bound of the doctor probe, in seconds (`min(timeout_s, 10 s)`).
pub const PROBE_MAX_S: f64 = 10.0;

/// The OpenAI-compatible transport of every configured source (one type
/// implements both ports).
///
/// Holds one reqwest client (one connection pool) per source, built at construction.
/// A request is served by the client registered under `WireRequest.source.name`, with the URLs
/// and headers of the configuration given at construction. Cheap to clone (the clients are
/// reference-counted).
#[derive(Clone)]
pub struct OpenAiTransport {
    clients: HashMap<String, SourceClient>,
    options: TransportOptions,
    /// `(source, warning code)` pairs already logged (one warning per source);
    /// bounded by the number of sources times the few codes.
    warned: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<(String, &'static str)>>>,
}

impl fmt::Debug for OpenAiTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.clients.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("OpenAiTransport")
            .field("sources", &names)
            .field("options", &self.options)
            .finish()
    }
}

impl OpenAiTransport {
    /// Builds the clients of `sources`: `trust_env = false` → no proxy;
    /// `connect_timeout = ttft_timeout_s.unwrap_or(timeout_s)` and no other timer;
    /// rustls with the webpki roots plus the source's `CA_FILE`, read now; redirects not
    /// followed; gzip, brotli and deflate decoded.
    ///
    /// Errors: [`TransportBuildError`] naming the source and field — an unreadable or non-PEM
    /// `CA_FILE` (`source.ca_file`), an invalid `HEADERS` name or value (`source.headers`), a
    /// key that is not a header value or a `BASE_URL` that is not an absolute http(s) URL
    /// (`source.identity`), a non-positive connect timeout (`source.watchdog`), a repeated
    /// source name (`source.duplicate`).
    pub fn new<'a>(
        sources: impl IntoIterator<Item = &'a SourceConfig>,
        options: TransportOptions,
    ) -> Result<Self, TransportBuildError> {
        let mut clients = HashMap::new();
        for source in sources {
            if clients.contains_key(&source.name) {
                return Err(TransportBuildError::DuplicateSource {
                    source_name: source.name.clone(),
                });
            }
            clients.insert(source.name.clone(), SourceClient::build(source)?);
        }
        Ok(Self {
            clients,
            options,
            warned: std::sync::Arc::default(),
        })
    }

    /// Logs `code` for `source` once per transport. Names the declared media type
    /// (a header value the server chose, never a secret), never body bytes.
    fn warn_once(&self, source: &str, code: &'static str, declared: Option<&str>) {
        let first = self
            .warned
            .lock()
            .map(|mut set| set.insert((source.to_owned(), code)))
            .unwrap_or(false);
        if first {
            let declared: String = declared.unwrap_or("(none)").chars().take(64).collect();
            tracing::warn!(
                code,
                source,
                declared,
                "{source}: the response body does not match its Content-Type ({declared}); \
                 read by its first byte ({code})"
            );
        }
    }

    /// The size options in force.
    pub fn options(&self) -> TransportOptions {
        self.options
    }

    /// Whether a client was built for this source name.
    pub fn has_source(&self, name: &str) -> bool {
        self.clients.contains_key(name)
    }

    fn client(&self, name: &str) -> Result<&SourceClient, WireFailure> {
        self.clients.get(name).ok_or(WireFailure::Unsupported {
            what: "source not registered with this transport",
        })
    }

    /// `GET {base_url}/models` for `pgw doctor`: no admission, no breaker, no
    /// telemetry; bounded by `min(timeout_s, 10 s)`. Sends the source's `HEADERS`, `QUERY` and
    /// authentication.
    ///
    /// Returns the status received, whatever it is (the doctor judges 200 vs 401 …); the body is
    /// not read. Errors: `WireFailure::Network` when no status arrived (a timeout after connect
    /// is `ReadTimeout`), `WireFailure::Unsupported` for a source this transport was not built
    /// with.
    pub async fn probe_models(&self, source: &SourceConfig) -> Result<u16, WireFailure> {
        let client = self.client(&source.name)?;
        let bound_s = if client.timeout_s.is_finite() && client.timeout_s > 0.0 {
            client.timeout_s.min(PROBE_MAX_S)
        } else {
            PROBE_MAX_S
        };
        let bound = Duration::try_from_secs_f64(bound_s).unwrap_or(Duration::from_secs(10));
        let mut headers = client.headers.clone();
        headers.remove(header::CONTENT_TYPE);
        let response = client
            .client
            .get(client.models_url.clone())
            .headers(headers)
            .timeout(bound)
            .send()
            .await
            .map_err(|e| WireFailure::Network(network_fault(&e, Phase::Send)))?;
        Ok(response.status().as_u16())
    }

    /// `GET {base_url}/models` with the answer's body: like
    /// [`OpenAiTransport::probe_models`], and the body read up to [`PROBE_BODY_MAX_BYTES`] so the
    /// doctor can check that the list names the model, or show the server's reason.
    pub async fn probe_models_answer(
        &self,
        source: &SourceConfig,
    ) -> Result<ProbeAnswer, WireFailure> {
        let client = self.client(&source.name)?;
        let mut headers = client.headers.clone();
        headers.remove(header::CONTENT_TYPE);
        let request = client
            .client
            .get(client.models_url.clone())
            .headers(headers);
        probe_send(request, probe_bound(client)).await
    }

    /// One minimal chat completion for `pgw doctor`: `max_tokens: 1`, one user
    /// message, `"stream": false`, the source's model, `HEADERS`, `QUERY` and authentication
    /// (no `EXTRA_BODY`: a probe must not pay for sampling options). Bounded like
    /// [`OpenAiTransport::probe_models`]; no admission, breaker or telemetry.
    pub async fn probe_chat(&self, source: &SourceConfig) -> Result<ProbeAnswer, WireFailure> {
        let client = self.client(&source.name)?;
        let body = serde_json::json!({
            "model": source.model,
            "messages": [{"role": "user", "content": "ping"}],
            "max_tokens": 1,
            "stream": false,
        });
        let request = client
            .client
            .post(client.url(Endpoint::ChatCompletions).clone())
            .headers(client.headers.clone())
            .body(body.to_string());
        probe_send(request, probe_bound(client)).await
    }

    /// One one-word embedding for `pgw doctor`, bounded like the other probes.
    pub async fn probe_embedding(&self, source: &SourceConfig) -> Result<ProbeAnswer, WireFailure> {
        let client = self.client(&source.name)?;
        let body = serde_json::json!({"model": source.model, "input": ["ping"]});
        let request = client
            .client
            .post(client.url(Endpoint::Embeddings).clone())
            .headers(client.headers.clone())
            .body(body.to_string());
        probe_send(request, probe_bound(client)).await
    }

    /// Sends the request and returns the 200 response; any other status is read into
    /// `WireFailure::Http` (S-7 outcome 2), a failure before the status is `Network` (outcome 3).
    async fn exchange(
        &self,
        request: &WireRequest,
    ) -> Result<(&SourceClient, reqwest::Response), WireFailure> {
        let client = self.client(&request.source.name)?;
        let request_id =
            HeaderValue::from_str(&request.call_id).map_err(|_| WireFailure::Unsupported {
                what: "call_id is not a valid HTTP header value",
            })?;
        // the bytes exactly as the core serialised them; cloning `Bytes` is a count.
        let body = request.body.bytes().clone();
        let post = |http: &reqwest::Client| {
            http.post(client.url(request.endpoint).clone())
                .headers(client.headers.clone())
                .header(REQUEST_ID_HEADER, request_id.clone())
                .body(body.clone())
                .send()
        };
        let failed = |e: &reqwest::Error| {
            let fault = network_fault(e, Phase::Send);
            tracing::debug!(
                source = %request.source.name,
                call_id = %request.call_id,
                kind = %fault.kind,
                "upstream request failed before a status line"
            );
            WireFailure::Network(fault)
        };
        let response = match post(&client.client).await {
            Ok(response) => response,
            // README D29: a pooled connection the server had already closed fails before any
            // response byte; re-send once, at once, on a fresh connection, inside this attempt.
            Err(e) if is_stale_connection(&e) => {
                tracing::debug!(
                    source = %request.source.name,
                    call_id = %request.call_id,
                    code = STALE_CONNECTION_RESENT,
                    "connection closed before any response byte; re-sent once on a fresh connection"
                );
                post(&client.fresh).await.map_err(|e| failed(&e))?
            }
            Err(e) => return Err(failed(&e)),
        };
        let status = response.status().as_u16();
        if status != 200 {
            tracing::debug!(
                source = %request.source.name,
                call_id = %request.call_id,
                status,
                "upstream answered a non-200 status"
            );
            return Err(http_failure(response, self.options.max_error_body_bytes).await);
        }
        Ok((client, response))
    }

    /// The whole 200 body, capped at `min(max_frame_bytes, max_response_bytes)`.
    async fn whole_body(
        &self,
        client: &SourceClient,
        response: reqwest::Response,
    ) -> Result<WireBody, WireFailure> {
        let headers = header_pairs(response.headers());
        let limit = body_limit(self.options.max_frame_bytes, client.max_response_bytes);
        match read_capped(body_stream(response), limit).await {
            Ok(bytes) => Ok(WireBody { headers, bytes }),
            Err(BodyReadError::TooLarge { limit }) => Err(WireFailure::FrameTooLarge { limit }),
            Err(BodyReadError::Broken(e)) => {
                Err(WireFailure::ReadError(network_fault(&e, Phase::Body)))
            }
        }
    }

    /// The `Events` response of a streamed 200.
    ///
    /// the declared media type is a first guess; the first non-whitespace byte of
    /// the body decides. A JSON-typed body that does not start with `{` or `[` is framed as SSE;
    /// a `text/event-stream` (or untyped) body that starts with `{` is read whole as one JSON
    /// body. The reported `content_type` is then the effective one (`text/event-stream` or
    /// `application/json`), so the core judges what was framed, and the rescue logs one
    /// `dialect:content_type_mismatch` warning per source.
    async fn events(
        &self,
        source_name: &str,
        client: &SourceClient,
        response: reqwest::Response,
    ) -> WireResponse {
        let headers = header_pairs(response.headers());
        let declared = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let sniff_cap = body_limit(self.options.max_frame_bytes, client.max_response_bytes);
        let (first, body) = sniff_first_byte(body_stream(response), sniff_cap).await;
        let declared_json = declared.as_deref().is_some_and(is_json_content_type);
        let content_type = match first {
            Some(b'{' | b'[') if !declared_json => {
                self.warn_once(source_name, CONTENT_TYPE_MISMATCH, declared.as_deref());
                Some(SNIFFED_JSON.to_owned())
            }
            Some(b) if declared_json && b != b'{' && b != b'[' => {
                self.warn_once(source_name, CONTENT_TYPE_MISMATCH, declared.as_deref());
                Some(SNIFFED_SSE.to_owned())
            }
            _ => declared,
        };
        let events: WireEventStream = if content_type.as_deref().is_some_and(is_json_content_type) {
            // not framed; the whole body becomes one event, read on the first poll so
            // that `send` still resolves at the status line.
            let limit = body_limit(self.options.max_frame_bytes, client.max_response_bytes);
            let read = async move { json_body_events(read_capped(body, limit).await) };
            Box::pin(futures_util::stream::once(read).flat_map(futures_util::stream::iter))
        } else {
            Box::pin(SseEventStream::new(
                body,
                self.options.max_frame_bytes,
                client.max_response_bytes,
            ))
        };
        WireResponse::Events {
            headers,
            content_type,
            events,
        }
    }
}

#[async_trait]
impl ChatTransport for OpenAiTransport {
    /// One HTTP exchange. `stream = true` and 200 → `Events` (an SSE
    /// stream, or for a JSON content type the un-framed body of R-27); `stream = false` and 200
    /// → `Body`. Errors: `Http` (status ≠ 200, 201/204 included), `Network` (before a status),
    /// `FrameTooLarge`/`ReadError` (non-stream body), `Unsupported` (unknown source, a `call_id`
    /// that is not a header value).
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        let (client, response) = self.exchange(&request).await?;
        if request.stream {
            Ok(self.events(&request.source.name, client, response).await)
        } else {
            self.whole_body(client, response)
                .await
                .map(WireResponse::Body)
        }
    }
}

#[async_trait]
impl EmbeddingTransport for OpenAiTransport {
    /// One `POST {base_url}/embeddings` (CT-EMB-01/02; the endpoint is taken from
    /// `request.endpoint`, which the core sets to `Embeddings`). Always non-stream: the 200
    /// body, unjudged. Errors as the non-stream chat path.
    async fn send(&self, request: WireRequest) -> Result<WireBody, WireFailure> {
        let (client, response) = self.exchange(&request).await?;
        self.whole_body(client, response).await
    }
}

/// Most bytes of a probe answer's body that are kept.
pub const PROBE_BODY_MAX_BYTES: usize = 64 * 1024;

/// What a doctor probe received: the status and the body, cut at
/// [`PROBE_BODY_MAX_BYTES`] (UTF-8 with replacement). Judged by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body text, possibly cut.
    pub body: String,
}

/// The probe bound: `min(timeout_s, 10 s)`.
fn probe_bound(client: &SourceClient) -> Duration {
    let bound_s = if client.timeout_s.is_finite() && client.timeout_s > 0.0 {
        client.timeout_s.min(PROBE_MAX_S)
    } else {
        PROBE_MAX_S
    };
    Duration::try_from_secs_f64(bound_s).unwrap_or(Duration::from_secs(10))
}

/// Sends one probe and reads its answer (status and capped body) within `bound`.
async fn probe_send(
    request: reqwest::RequestBuilder,
    bound: Duration,
) -> Result<ProbeAnswer, WireFailure> {
    let read = async {
        let mut response = request
            .send()
            .await
            .map_err(|e| WireFailure::Network(network_fault(&e, Phase::Send)))?;
        let status = response.status().as_u16();
        let mut body: Vec<u8> = Vec::new();
        while let Ok(Some(bytes)) = response.chunk().await {
            let room = PROBE_BODY_MAX_BYTES.saturating_sub(body.len());
            body.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
            if body.len() >= PROBE_BODY_MAX_BYTES {
                break;
            }
        }
        Ok(ProbeAnswer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    };
    match tokio::time::timeout(bound, read).await {
        Ok(result) => result,
        Err(_) => Err(WireFailure::Network(gateway_ports::NetworkFault::new(
            gateway_ports::NetworkFaultKind::ReadTimeout,
            "probe timed out",
        ))),
    }
}

/// Stable code of the README D20 warning: the body's first byte contradicted its media type.
pub const CONTENT_TYPE_MISMATCH: &str = "dialect:content_type_mismatch";

/// The media type reported for a body sniffed as one JSON value.
const SNIFFED_JSON: &str = "application/json";
/// The media type reported for a body sniffed as an event stream.
const SNIFFED_SSE: &str = "text/event-stream";

/// Reads the body until its first non-whitespace byte and gives it back with a
/// stream that replays the reads taken. `None` when the body ended (or broke) first; the error
/// is replayed too, so the framer reports it as usual. Whitespace here is the JSON and SSE
/// blank set (space, tab, CR, LF) plus a leading UTF-8 BOM. At most `cap` bytes of whitespace
/// are held; past that the declared type stands (the framer then applies its own caps).
async fn sniff_first_byte(mut body: BodyStream, cap: usize) -> (Option<u8>, BodyStream) {
    let mut taken: Vec<reqwest::Result<bytes::Bytes>> = Vec::new();
    let mut first = None;
    let mut offset_bom = true;
    let mut held = 0_usize;
    while held <= cap {
        let Some(next) = body.next().await else {
            break;
        };
        held = held.saturating_add(next.as_ref().map_or(0, bytes::Bytes::len));
        let found = match &next {
            Ok(bytes) => {
                let mut slice: &[u8] = bytes;
                if offset_bom {
                    // Only the very first bytes of the body may be a BOM.
                    if let Some(rest) = slice.strip_prefix(b"\xEF\xBB\xBF") {
                        slice = rest;
                    }
                    if !slice.is_empty() {
                        offset_bom = false;
                    }
                }
                slice
                    .iter()
                    .copied()
                    .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            }
            Err(_) => None,
        };
        let broken = next.is_err();
        taken.push(next);
        if found.is_some() || broken {
            first = found;
            break;
        }
    }
    let replay = futures_util::stream::iter(taken).chain(body);
    (first, Box::pin(replay))
}

/// The per-attempt body cap of a whole body: `min(max_frame_bytes, max_response_bytes)`.
fn body_limit(max_frame_bytes: usize, max_response_bytes: u64) -> usize {
    usize::try_from(max_response_bytes).map_or(max_frame_bytes, |r| r.min(max_frame_bytes))
}

fn body_stream(response: reqwest::Response) -> BodyStream {
    Box::pin(response.bytes_stream())
}

/// Every response header: names lower-case (as `http` stores them), values as received (UTF-8
/// with replacement), duplicates kept, in `HeaderMap` order (grouped by name).
fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// `WireFailure::Http` of a non-200 response: the body read until its end or until
/// `limit` bytes are retained; a longer body is truncated there (the response is then dropped
/// unread, so its connection is closed, never pooled); a body that breaks keeps what was read.
async fn http_failure(mut response: reqwest::Response, limit: usize) -> WireFailure {
    let status = response.status().as_u16();
    let headers = header_pairs(response.headers());
    let mut body: Vec<u8> = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(bytes)) => {
                let room = limit.saturating_sub(body.len());
                if bytes.len() > room {
                    body.extend_from_slice(bytes.get(..room).unwrap_or_default());
                    break;
                }
                body.extend_from_slice(&bytes);
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(
                    status,
                    kind = %network_fault(&e, Phase::Body).kind,
                    retained_bytes = body.len(),
                    "error body broke while being read; keeping what was read"
                );
                break;
            }
        }
    }
    drop(response);
    WireFailure::Http {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}
