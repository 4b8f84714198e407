//! `TinyTransport`: a second, minimal `ChatTransport` + `EmbeddingTransport`, written only to
//! show that the transport contract suite is generic (issue 14). Test code: never shipped.
//!
//! It shares nothing with `adapter-openai` but the ports: HTTP/1.1 over hyper's connection API
//! (one TCP connection per request, no pool, no retry), rustls for `https`, gzip decoded with
//! flate2, and its own small SSE framer. Every connection is owned by the future or stream that
//! uses it; dropping either aborts the connection task, which closes the socket. The only timer
//! is the connect timeout, `ttft_timeout_s.unwrap_or(timeout_s)`.
//!
//! The framer covers what the wire rows exercise (40 §3 in outline): `\n` / `\r\n` lines,
//! comments, `data:` joined by `\n`, `event:` (type `error` → `ErrorEvent`), `id:` and
//! `retry:` ignored, `[DONE]`, empty data, JSON or `MalformedFrame`, other lines as
//! `Unrecognized` (4 096 bytes per stream) unless they are a JSON object with an `error` key, the
//! line and data caps, and the unterminated last event flushed at a clean end. It does not do the
//! OpenAI adapter's dialect rescues (README D20 sniffing, split data lines).

use std::collections::{HashMap, VecDeque};
use std::error::Error as StdError;
use std::io::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use contract_tests::transport::WireLimits;
use futures_util::StreamExt as _;
use gateway_ports::{
    AuthStyle, ChatTransport, ChunkJson, EmbeddingTransport, KeepAliveKind, NetworkFault,
    NetworkFaultKind, SourceConfig, WireBody, WireEvent, WireEventStream, WireFailure, WireRequest,
    WireResponse, is_json_content_type,
};
use http::header;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Most bytes of `Unrecognized` excerpts per stream.
const EXCERPT_BUDGET: usize = 4096;

/// The transport of a fixed set of sources.
pub struct TinyTransport {
    sources: HashMap<String, SourceConfig>,
    limits: WireLimits,
    tls: tokio_rustls::TlsConnector,
}

impl TinyTransport {
    /// A transport serving `sources` with these size limits; rustls with the webpki roots.
    pub fn new(sources: &[SourceConfig], limits: WireLimits) -> Self {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Self {
            sources: sources
                .iter()
                .map(|s| (s.name.clone(), s.clone()))
                .collect(),
            limits,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        }
    }

    /// Connects, sends the request and returns the status, headers and body reader.
    async fn exchange(&self, req: &WireRequest) -> Result<Answer, WireFailure> {
        let src = self
            .sources
            .get(&req.source.name)
            .ok_or(unsupported("source not registered with this transport"))?;
        let url = format!(
            "{}{}{}",
            src.base_url.trim_end_matches('/'),
            req.endpoint.path(),
            query(src)
        );
        let uri: http::Uri = url
            .parse()
            .map_err(|_| unsupported("base_url is not a URL"))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(unsupported("base_url is not http(s)")),
        };
        let host = uri
            .host()
            .ok_or(unsupported("base_url has no host"))?
            .trim_matches(['[', ']'])
            .to_owned();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let authority = uri.authority().map(|a| a.as_str().to_owned());
        let path = uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str)
            .to_owned();

        let connect_s = src.ttft_timeout_s.unwrap_or(src.timeout_s);
        let connect_timeout =
            Duration::try_from_secs_f64(connect_s).unwrap_or(Duration::from_secs(30));
        let connect = async {
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| net(NetworkFaultKind::Connect, "connect failed", e.kind()))?;
            if !tls {
                return Ok::<Box<dyn Io>, WireFailure>(Box::new(tcp));
            }
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| unsupported("base_url host is not a TLS server name"))?;
            let stream = self
                .tls
                .connect(name, tcp)
                .await
                .map_err(|e| net(NetworkFaultKind::Tls, "TLS handshake failed", e.kind()))?;
            Ok(Box::new(stream))
        };
        let io = tokio::time::timeout(connect_timeout, connect)
            .await
            .map_err(|_| {
                WireFailure::Network(NetworkFault::new(
                    NetworkFaultKind::ConnectTimeout,
                    "connect timed out",
                ))
            })??;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| WireFailure::Network(fault(&e, Phase::Send)))?;
        // Owned by this future, then by the body reader: dropped → the socket closes.
        let conn = Conn(tokio::spawn(async move {
            let _ = conn.await;
        }));

        // R-14: the core's bytes, verbatim.
        let body = req.body.bytes().clone();
        let mut builder = http::Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT_ENCODING, "gzip")
            .header("x-request-id", req.call_id.as_str());
        if let Some(authority) = authority {
            builder = builder.header(header::HOST, authority);
        }
        match (src.auth_style, &src.api_key) {
            (AuthStyle::Bearer, Some(key)) => {
                builder = builder.header(
                    header::AUTHORIZATION,
                    format!("Bearer {}", key.expose_secret()),
                );
            }
            (AuthStyle::ApiKeyHeader, Some(key)) => {
                builder = builder.header("api-key", key.expose_secret().as_str());
            }
            _ => {}
        }
        for (name, value) in &src.headers {
            builder = builder.header(name.as_str(), value.expose_secret().as_str());
        }
        // The builder's error would name the bad header; the fixed text never carries a value.
        let request = builder
            .body(Full::new(body))
            .map_err(|_| unsupported("a header name or value is not valid HTTP"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| WireFailure::Network(fault(&e, Phase::Send)))?;
        let (parts, incoming) = response.into_parts();
        let gzip = parts
            .headers
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        let headers = parts
            .headers
            .iter()
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect();
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let status = parts.status.as_u16();
        let reader = Reader {
            body: incoming,
            gzip: gzip.then(|| flate2::write::GzDecoder::new(Vec::new())),
            ended: false,
            _conn: conn,
        };
        let body_cap = usize::try_from(src.max_response_bytes)
            .map_or(self.limits.max_frame_bytes, |r| {
                r.min(self.limits.max_frame_bytes)
            });
        let answer = Answer {
            headers,
            content_type,
            reader,
            body_cap,
            max_response_bytes: src.max_response_bytes,
        };
        if status == 200 {
            Ok(answer)
        } else {
            Err(answer
                .failure(status, self.limits.max_error_body_bytes)
                .await)
        }
    }
}

#[async_trait]
impl ChatTransport for TinyTransport {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        let answer = self.exchange(&request).await?;
        if !request.stream {
            return answer.whole().await.map(WireResponse::Body);
        }
        let headers = answer.headers.clone();
        let content_type = answer.content_type.clone();
        let events: WireEventStream = if content_type.as_deref().is_some_and(is_json_content_type) {
            // A JSON answer to a streamed request: one event of the whole body, read on the
            // first poll.
            let read = async move {
                match answer.whole().await {
                    Ok(body) => vec![WireEvent::from_json_body(&body.bytes), WireEvent::End],
                    Err(WireFailure::FrameTooLarge { limit }) => {
                        vec![WireEvent::FrameTooLarge { limit }]
                    }
                    Err(WireFailure::ReadError(fault)) => vec![WireEvent::ReadError(fault)],
                    Err(other) => vec![WireEvent::ReadError(NetworkFault::new(
                        NetworkFaultKind::Other,
                        other.to_string(),
                    ))],
                }
            };
            Box::pin(futures_util::stream::once(read).flat_map(futures_util::stream::iter))
        } else {
            sse_events(answer, self.limits.max_frame_bytes)
        };
        Ok(WireResponse::Events {
            headers,
            content_type,
            events,
        })
    }
}

#[async_trait]
impl EmbeddingTransport for TinyTransport {
    async fn send(&self, request: WireRequest) -> Result<WireBody, WireFailure> {
        self.exchange(&request).await?.whole().await
    }
}

/// A connected stream, plain or TLS.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The connection task; aborted (socket closed) when dropped.
struct Conn(JoinHandle<()>);

impl Drop for Conn {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response whose status line arrived.
struct Answer {
    headers: Vec<(String, String)>,
    content_type: Option<String>,
    reader: Reader,
    /// `min(max_frame_bytes, max_response_bytes)`: the cap on a whole body.
    body_cap: usize,
    max_response_bytes: u64,
}

impl Answer {
    /// The whole 200 body, capped.
    async fn whole(mut self) -> Result<WireBody, WireFailure> {
        let mut bytes = Vec::new();
        while let Some(read) = self.reader.next().await {
            let read = read.map_err(WireFailure::ReadError)?;
            if bytes.len() + read.len() > self.body_cap {
                return Err(WireFailure::FrameTooLarge {
                    limit: self.body_cap,
                });
            }
            bytes.extend_from_slice(&read);
        }
        Ok(WireBody {
            headers: self.headers,
            bytes: bytes.into(),
        })
    }

    /// The `Http` failure of a non-200 answer: at most `cap` body bytes kept, lossy UTF-8; a
    /// body that breaks keeps what was read.
    async fn failure(mut self, status: u16, cap: usize) -> WireFailure {
        let mut kept = Vec::new();
        while kept.len() < cap {
            match self.reader.next().await {
                Some(Ok(read)) => {
                    let room = cap - kept.len();
                    kept.extend_from_slice(&read[..read.len().min(room)]);
                }
                _ => break,
            }
        }
        WireFailure::Http {
            status,
            headers: self.headers,
            body: String::from_utf8_lossy(&kept).into_owned(),
        }
    }
}

/// Reads decoded body bytes; owns the connection.
struct Reader {
    body: Incoming,
    gzip: Option<flate2::write::GzDecoder<Vec<u8>>>,
    ended: bool,
    _conn: Conn,
}

impl Reader {
    /// The next decoded bytes, `None` at the clean end, or the fault that broke the body.
    async fn next(&mut self) -> Option<Result<Bytes, NetworkFault>> {
        loop {
            if self.ended {
                return None;
            }
            match self.body.frame().await {
                None => {
                    self.ended = true;
                    let gz = self.gzip.take()?;
                    return match gz.finish() {
                        Ok(rest) if rest.is_empty() => None,
                        Ok(rest) => Some(Ok(rest.into())),
                        Err(_) => Some(Err(broken_gzip())),
                    };
                }
                Some(Err(e)) => {
                    self.ended = true;
                    return Some(Err(fault(&e, Phase::Body)));
                }
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue; // trailers
                    };
                    let Some(gz) = self.gzip.as_mut() else {
                        return Some(Ok(data));
                    };
                    if gz.write_all(&data).is_err() {
                        self.ended = true;
                        return Some(Err(broken_gzip()));
                    }
                    let out = std::mem::take(gz.get_mut());
                    if !out.is_empty() {
                        return Some(Ok(out.into()));
                    }
                }
            }
        }
    }
}

fn broken_gzip() -> NetworkFault {
    NetworkFault::new(NetworkFaultKind::Read, "gzip body is corrupt")
}

/// The event stream of a 200 SSE body: frames each read as it arrives; the terminal event
/// drops the reader (and closes the connection) at once.
fn sse_events(answer: Answer, max_frame_bytes: usize) -> WireEventStream {
    struct State {
        reader: Option<Reader>,
        framer: Framer,
        queue: VecDeque<WireEvent>,
        read_bytes: u64,
        max_response_bytes: u64,
    }
    let state = State {
        reader: Some(answer.reader),
        framer: Framer::new(max_frame_bytes),
        queue: VecDeque::new(),
        read_bytes: 0,
        max_response_bytes: answer.max_response_bytes,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.queue.pop_front() {
                return Some((event, st));
            }
            let reader = st.reader.as_mut()?;
            let mut out = Vec::new();
            match reader.next().await {
                Some(Ok(read)) => {
                    st.read_bytes = st.read_bytes.saturating_add(read.len() as u64);
                    if st.read_bytes > st.max_response_bytes {
                        let limit = usize::try_from(st.max_response_bytes).unwrap_or(usize::MAX);
                        out.push(WireEvent::FrameTooLarge { limit });
                        st.reader = None;
                    } else if st.framer.push(&read, &mut out) {
                        st.reader = None;
                    }
                }
                None => {
                    st.framer.finish(&mut out);
                    st.reader = None;
                }
                Some(Err(fault)) => {
                    out.push(WireEvent::ReadError(fault));
                    st.reader = None;
                }
            }
            st.queue.extend(out);
        }
    }))
}

/// A small SSE framer (see the module doc for what it covers).
struct Framer {
    max: usize,
    line: Vec<u8>,
    data: Option<String>,
    event: String,
    excerpt_budget: usize,
    done: bool,
}

impl Framer {
    fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            data: None,
            event: String::new(),
            excerpt_budget: EXCERPT_BUDGET,
            done: false,
        }
    }

    /// Frames one read; `true` once a terminal event was pushed (the rest is ignored).
    fn push(&mut self, mut bytes: &[u8], out: &mut Vec<WireEvent>) -> bool {
        while !self.done {
            let end = bytes.iter().position(|&b| b == b'\n');
            let piece = end.unwrap_or(bytes.len());
            if self.line.len() + piece > self.max {
                self.terminal(WireEvent::FrameTooLarge { limit: self.max }, out);
                break;
            }
            self.line.extend_from_slice(&bytes[..piece]);
            let Some(end) = end else {
                break;
            };
            bytes = &bytes[end + 1..];
            let line = std::mem::take(&mut self.line);
            self.line(&line, out);
        }
        self.done
    }

    /// The clean end of body: the last line and event flushed, then `End`.
    fn finish(&mut self, out: &mut Vec<WireEvent>) {
        if !self.done && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line(&line, out);
        }
        if !self.done {
            self.dispatch(out);
        }
        if !self.done {
            self.terminal(WireEvent::End, out);
        }
    }

    fn terminal(&mut self, event: WireEvent, out: &mut Vec<WireEvent>) {
        out.push(event);
        self.done = true;
    }

    fn line(&mut self, raw: &[u8], out: &mut Vec<WireEvent>) {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let text = String::from_utf8_lossy(raw);
        if text.is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            out.push(WireEvent::KeepAlive(KeepAliveKind::Comment));
            return;
        }
        let (name, value) = match text.split_once(':') {
            Some((name, value)) => (name, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*text, ""),
        };
        match name {
            "data" => {
                let data = match self.data.take() {
                    Some(mut data) => {
                        data.push('\n');
                        data.push_str(value);
                        data
                    }
                    None => value.to_owned(),
                };
                if data.len() > self.max {
                    self.terminal(WireEvent::FrameTooLarge { limit: self.max }, out);
                } else {
                    self.data = Some(data);
                }
            }
            "event" => value.clone_into(&mut self.event),
            "id" | "retry" => {}
            _ => self.non_sse(&text, out),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<WireEvent>) {
        let event = std::mem::take(&mut self.event);
        let Some(data) = self.data.take() else {
            return;
        };
        if event == "error" {
            out.push(WireEvent::ErrorEvent { data });
        } else if data.trim() == "[DONE]" {
            self.terminal(WireEvent::Done, out);
        } else if data.trim().is_empty() {
            out.push(WireEvent::KeepAlive(KeepAliveKind::EmptyData));
        } else {
            out.push(match ChunkJson::parse(&data) {
                Ok(chunk) => WireEvent::Chunk(chunk),
                Err(_) => WireEvent::MalformedFrame { len: data.len() },
            });
        }
    }

    fn non_sse(&mut self, line: &str, out: &mut Vec<WireEvent>) {
        let is_error_object = line.trim_start().starts_with('{')
            && serde_json::from_str::<serde_json::Value>(line)
                .is_ok_and(|v| v.get("error").is_some());
        if is_error_object {
            out.push(WireEvent::ErrorEvent {
                data: line.to_owned(),
            });
            return;
        }
        if self.excerpt_budget == 0 {
            return;
        }
        let mut cut = line.len().min(self.excerpt_budget);
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        self.excerpt_budget -= cut;
        out.push(WireEvent::Unrecognized {
            excerpt: line[..cut].to_owned(),
        });
    }
}

/// When a hyper error happened.
#[derive(Clone, Copy)]
enum Phase {
    /// Before the status line.
    Send,
    /// While reading a body.
    Body,
}

/// The fault of a hyper error: the peer broke HTTP (a parse error, or EOF before the message
/// was complete) → `Protocol`; a broken pipe before the status → `Write`; any other I/O error
/// → `Read`. The detail is a fixed text and the I/O error kind, never a payload.
fn fault(err: &hyper::Error, phase: Phase) -> NetworkFault {
    let mut protocol = err.is_parse() || err.is_incomplete_message();
    let mut io_kind = None;
    let mut cur: Option<&(dyn StdError + 'static)> = err.source();
    for _ in 0..16 {
        let Some(e) = cur else { break };
        if let Some(io_err) = e.downcast_ref::<io::Error>() {
            io_kind = Some(io_err.kind());
            if let Some(inner) = io_err.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        cur = e.source();
    }
    if io_kind == Some(io::ErrorKind::UnexpectedEof) {
        protocol = true;
    }
    let write = matches!(phase, Phase::Send)
        && (err.is_body_write_aborted() || io_kind == Some(io::ErrorKind::BrokenPipe));
    let kind = if write {
        NetworkFaultKind::Write
    } else if protocol {
        NetworkFaultKind::Protocol
    } else if io_kind.is_some() || matches!(phase, Phase::Body) {
        NetworkFaultKind::Read
    } else {
        NetworkFaultKind::Other
    };
    let what = match phase {
        Phase::Send => "failed before the status line",
        Phase::Body => "body read failed",
    };
    match io_kind {
        Some(k) => NetworkFault::new(kind, format!("{what}: {k}")),
        None => NetworkFault::new(kind, what),
    }
}

fn net(kind: NetworkFaultKind, what: &str, io_kind: io::ErrorKind) -> WireFailure {
    WireFailure::Network(NetworkFault::new(kind, format!("{what}: {io_kind}")))
}

fn unsupported(what: &'static str) -> WireFailure {
    WireFailure::Unsupported { what }
}

/// `?k=v&…` of the source's `QUERY`, percent-encoded; empty without one.
fn query(src: &SourceConfig) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, (k, v)) in src.query.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        for (j, part) in [k, v].into_iter().enumerate() {
            if j == 1 {
                out.push('=');
            }
            for b in part.bytes() {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    out.push(char::from(b));
                } else {
                    let _ = write!(out, "%{b:02X}");
                }
            }
        }
    }
    out
}
