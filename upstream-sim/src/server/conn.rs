//! One connection: read HTTP/1.1 requests (keep-alive), record each, plan its answer with the
//! shared [`ScriptRunner`](crate::script::ScriptRunner) and execute the plan on the raw socket.
//!
//! Responses are written by hand rather than through hyper so that every scripted write is one
//! `write` call (one HTTP chunk; TCP_NODELAY is on), a TCP reset is a real RST (SO_LINGER 0), and
//! close-delimited bodies end with a real close.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Shared;
use super::record::RecordedRequest;
use crate::script::{CHUNKED_TERMINATOR, End, Framing, Head, Plan, RequestFacts};

/// Largest accepted request head (request line and headers), in bytes.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest accepted request body, in bytes.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// Most request headers parsed.
const MAX_HEADERS: usize = 96;

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    close: bool,
}

/// Why a request could not be read.
enum ReadFail {
    /// The client closed or the socket failed: drop the connection silently.
    Gone,
    /// The request is malformed or too large: answer 400 and close.
    Bad(&'static str),
}

impl From<std::io::Error> for ReadFail {
    fn from(_: std::io::Error) -> Self {
        Self::Gone
    }
}

/// Serves requests on one connection until the client leaves, a plan closes it, or the
/// simulator shuts down (the task is aborted).
pub(crate) async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    if stream.set_nodelay(true).is_err() {
        return;
    }
    let mut buf = BytesMut::with_capacity(8 * 1024);
    let mut out = Vec::with_capacity(1024);
    // When the previous response on this connection ended (README D29 keep-alive idle timeout).
    let mut idle_since: Option<tokio::time::Instant> = None;
    loop {
        let request = match read_request(&mut stream, &mut buf).await {
            Ok(Some(r)) => r,
            Ok(None) | Err(ReadFail::Gone) => return,
            Err(ReadFail::Bad(why)) => {
                let plan = crate::script::render_error(400, "bad_request", why);
                out.clear();
                plan.encode_head(&mut out);
                out.extend_from_slice(&plan.body());
                let _ = stream.write_all(&out).await;
                return;
            }
        };
        if let (Some(since), Some(idle_ms)) = (idle_since, shared.keep_alive_idle_ms())
            && since.elapsed() >= Duration::from_millis(idle_ms)
        {
            // The server closed this idle connection as the request crossed: never answered,
            // never recorded.
            return;
        }
        let content_type = request
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default();
        let json: Option<serde_json::Value> = if request.body.is_empty() {
            None
        } else {
            serde_json::from_slice(&request.body)
                .ok()
                .or_else(|| crate::script::ocr::multipart_summary(&content_type, &request.body))
        };
        let facts = RequestFacts::from_parts(&request.method, &request.path, json.as_ref());
        let plan = shared.plan(&facts);
        shared.record(shared.recording().then(|| {
            RecordedRequest::new(
                &request.method,
                &request.path,
                &request.headers,
                json,
                request.body.len(),
            )
        }));
        match execute(&mut stream, &plan, &mut out).await {
            Ok(true) if !request.close => idle_since = Some(tokio::time::Instant::now()),
            _ => return,
        }
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// Keeps the connection open, discarding anything the client sends, until it leaves.
async fn hold(stream: &mut TcpStream) {
    let mut scratch = [0u8; 1024];
    loop {
        match stream.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Executes a plan. Returns whether the connection may serve another request.
async fn execute(stream: &mut TcpStream, plan: &Plan, out: &mut Vec<u8>) -> std::io::Result<bool> {
    sleep_ms(plan.head_delay_ms).await;
    if plan.head == Head::Hang {
        hold(stream).await;
        return Ok(false);
    }
    out.clear();
    plan.encode_head(out);
    let writes = if plan.bodyless() {
        &[][..]
    } else {
        &plan.writes[..]
    };
    let terminate = !plan.bodyless() && plan.end == End::Eof && plan.framing == Framing::Chunked;
    for (i, w) in writes.iter().enumerate() {
        if w.delay_ms > 0 {
            if !out.is_empty() {
                stream.write_all(out).await?;
                out.clear();
            }
            sleep_ms(w.delay_ms).await;
        }
        plan.encode_write(out, &w.bytes);
        if terminate && i + 1 == writes.len() {
            out.extend_from_slice(CHUNKED_TERMINATOR);
        }
        if !out.is_empty() {
            stream.write_all(out).await?;
            out.clear();
        }
    }
    if terminate && writes.is_empty() {
        out.extend_from_slice(CHUNKED_TERMINATOR);
    }
    if !out.is_empty() {
        stream.write_all(out).await?;
        out.clear();
    }
    match plan.end {
        End::Eof if plan.framing == Framing::Close && !plan.bodyless() => {
            stream.shutdown().await?;
            Ok(false)
        }
        End::Eof => Ok(true),
        End::Reset => {
            socket2::SockRef::from(&*stream).set_linger(Some(Duration::ZERO))?;
            // Dropping the stream with SO_LINGER 0 sends the RST.
            Ok(false)
        }
        End::Hang => {
            hold(stream).await;
            Ok(false)
        }
    }
}

async fn fill(stream: &mut TcpStream, buf: &mut BytesMut) -> Result<(), ReadFail> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(8 * 1024);
    }
    match stream.read_buf(buf).await? {
        0 => Err(ReadFail::Gone),
        _ => Ok(()),
    }
}

/// Reads one request; `Ok(None)` when the client closed cleanly between requests.
async fn read_request(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> Result<Option<Request>, ReadFail> {
    let (head_len, method, path, headers, http10) = loop {
        if !buf.is_empty() {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut slots);
            match req.parse(buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers: Vec<(String, Vec<u8>)> = req
                        .headers
                        .iter()
                        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                        .collect();
                    break (
                        n,
                        req.method.unwrap_or("GET").to_owned(),
                        req.path.unwrap_or("/").to_owned(),
                        headers,
                        req.version == Some(0),
                    );
                }
                Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
                    return Err(ReadFail::Bad("request head too large"));
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(ReadFail::Bad("too many request headers"));
                }
                Err(_) => return Err(ReadFail::Bad("malformed request")),
            }
        }
        let before = buf.len();
        match fill(stream, buf).await {
            Ok(()) => {}
            Err(ReadFail::Gone) if before == 0 => return Ok(None),
            Err(e) => return Err(e),
        }
    };
    buf.advance(head_len);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).trim().to_ascii_lowercase())
    };
    let connection = header("connection").unwrap_or_default();
    let close = connection.contains("close") || (http10 && !connection.contains("keep-alive"));
    let chunked = header("transfer-encoding").is_some_and(|te| te.ends_with("chunked"));
    if header("expect").is_some_and(|e| e == "100-continue") {
        // curl sends this for larger bodies and would otherwise wait a second.
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let body = if chunked {
        read_chunked_body(stream, buf).await?
    } else {
        let len = match header("content-length") {
            Some(v) => v
                .parse::<usize>()
                .map_err(|_| ReadFail::Bad("invalid content-length"))?,
            None => 0,
        };
        if len > MAX_BODY_BYTES {
            return Err(ReadFail::Bad("request body too large"));
        }
        while buf.len() < len {
            fill(stream, buf).await?;
        }
        buf.split_to(len).to_vec()
    };
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
        close,
    }))
}

async fn read_chunked_body(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
) -> Result<Vec<u8>, ReadFail> {
    let mut body = Vec::new();
    loop {
        match httparse::parse_chunk_size(buf) {
            Ok(httparse::Status::Complete((consumed, size))) => {
                let size = usize::try_from(size).map_err(|_| ReadFail::Bad("chunk too large"))?;
                if body.len().saturating_add(size) > MAX_BODY_BYTES {
                    return Err(ReadFail::Bad("request body too large"));
                }
                let need = consumed + size + 2;
                while buf.len() < need {
                    fill(stream, buf).await?;
                }
                body.extend_from_slice(&buf[consumed..consumed + size]);
                buf.advance(need);
                if size == 0 {
                    return Ok(body);
                }
            }
            // A chunk-size line (with its extensions) is never longer than a request head: an
            // endless extension must not grow the buffer without bound.
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
                return Err(ReadFail::Bad("chunk size line too long"));
            }
            Ok(httparse::Status::Partial) => fill(stream, buf).await?,
            Err(_) => return Err(ReadFail::Bad("malformed chunked body")),
        }
    }
}
