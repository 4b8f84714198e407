//! Shared helpers of the adapter's tier-2 tests (05 R-30): real sockets on 127.0.0.1 through
//! `upstream-sim` in-process, plus a tiny raw server for the facts the simulator does not record
//! (connection reuse, client disconnects). Event-driven: no sleeps.

#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers: a failed setup is a failed test"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use adapter_openai::{OpenAiTransport, TransportOptions};
use futures_util::StreamExt as _;
use gateway_ports::config::{Secret, SourceConfig};
use gateway_ports::ports::transport::{Endpoint, WireEvent, WireEventStream, WireRequest};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

/// The test API key (never a real one).
pub const KEY: &str = "sk-test-0123456789";

/// Starts the simulator with a script given as JSON text.
pub fn sim(script_json: &str) -> SimHandle {
    let script = Script::from_json(script_json).expect("valid script");
    Sim::start(script).expect("simulator starts")
}

/// A source named `test_1` pointing at `base_url`, bearer key [`KEY`].
pub fn source(base_url: &str) -> SourceConfig {
    SourceConfig::new("test_1", "test", base_url, Some(Secret::from(KEY)), "m-1")
}

/// A transport with default options for one source.
pub fn transport(source: &SourceConfig) -> OpenAiTransport {
    OpenAiTransport::new([source], TransportOptions::default()).expect("transport builds")
}

/// A transport with these options for one source.
pub fn transport_with(source: &SourceConfig, options: TransportOptions) -> OpenAiTransport {
    OpenAiTransport::new([source], options).expect("transport builds")
}

/// A chat request body as the core would build it.
pub fn chat_body(stream: bool) -> Value {
    let mut body = json!({
        "model": "m-1",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// A wire request for `source`.
pub fn request(
    source: &SourceConfig,
    endpoint: Endpoint,
    body: Value,
    stream: bool,
) -> WireRequest {
    WireRequest {
        source: Arc::new(source.clone()),
        call_id: "call-0001".to_owned(),
        endpoint,
        body,
        stream,
    }
}

/// A streamed chat request.
pub fn chat_stream(source: &SourceConfig) -> WireRequest {
    request(source, Endpoint::ChatCompletions, chat_body(true), true)
}

/// A non-stream chat request.
pub fn chat_plain(source: &SourceConfig) -> WireRequest {
    request(source, Endpoint::ChatCompletions, chat_body(false), false)
}

/// Collects a whole event stream.
pub async fn collect(events: WireEventStream) -> Vec<WireEvent> {
    events.collect().await
}

/// CT-CHAT-06: exactly one terminal event, and it is the last.
pub fn assert_one_terminal_last(events: &[WireEvent]) {
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal event: {events:?}");
    assert!(
        events.last().is_some_and(WireEvent::is_terminal),
        "the terminal event is last: {events:?}"
    );
}

/// A script that answers with raw chunks (one write each) and these headers.
pub fn raw_script(status: u16, headers: &[(&str, &str)], chunks: &[&[u8]], end: &str) -> String {
    use std::fmt::Write as _;
    let mut hs = String::new();
    for (i, (n, v)) in headers.iter().enumerate() {
        if i > 0 {
            hs.push(',');
        }
        let _ = write!(hs, "[{},{}]", json!(n), json!(v));
    }
    let mut cs = String::new();
    for (i, c) in chunks.iter().enumerate() {
        if i > 0 {
            cs.push(',');
        }
        let _ = write!(cs, "{{\"base64\":{}}}", json!(b64(c)));
    }
    format!(
        r#"{{"version":1,"responses":[{{"status":{status},"headers":[{hs}],"chunks":[{cs}],"end":"{end}"}}]}}"#
    )
}

/// Standard base64 (the script's `base64` chunk form).
pub fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// What the raw server does after writing its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Serve the next request on the same connection (keep-alive).
    KeepAlive,
    /// Close the connection.
    Close,
    /// Keep the connection open, reading until the client leaves.
    Hold,
}

/// A raw HTTP/1.1 server that answers every request with the same bytes, counts accepted
/// connections, and reports when a client closes its connection.
pub struct RawServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    accepted: Arc<AtomicUsize>,
    /// One message per connection the client closed (read returned 0 or failed).
    pub closed: mpsc::UnboundedReceiver<()>,
    /// One message per request head received.
    pub requests: mpsc::UnboundedReceiver<()>,
}

impl RawServer {
    /// Starts the server. `response` is written after each request, then the connection is
    /// handled per `after`.
    pub async fn start(response: Vec<u8>, after: After) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let (req_tx, requests) = mpsc::unbounded_channel();
        let counter = Arc::clone(&accepted);
        let response = Arc::new(response);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let closed_tx = closed_tx.clone();
                let req_tx = req_tx.clone();
                let response = Arc::clone(&response);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut scratch = [0u8; 4096];
                    loop {
                        // Read one request: head plus Content-Length body.
                        let complete = loop {
                            if let Some(end) = find(&buf, b"\r\n\r\n") {
                                let head =
                                    String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                                let len = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length:"))
                                    .and_then(|v| v.trim().parse::<usize>().ok())
                                    .unwrap_or(0);
                                if buf.len() >= end + 4 + len {
                                    buf.drain(..end + 4 + len);
                                    break true;
                                }
                            }
                            match stream.read(&mut scratch).await {
                                Ok(0) | Err(_) => break false,
                                Ok(n) => buf.extend_from_slice(&scratch[..n]),
                            }
                        };
                        if !complete {
                            let _ = closed_tx.send(());
                            return;
                        }
                        let _ = req_tx.send(());
                        if stream.write_all(&response).await.is_err() {
                            let _ = closed_tx.send(());
                            return;
                        }
                        if after == After::Close {
                            return;
                        }
                        if after == After::Hold {
                            loop {
                                match stream.read(&mut scratch).await {
                                    Ok(0) | Err(_) => {
                                        let _ = closed_tx.send(());
                                        return;
                                    }
                                    Ok(_) => {}
                                }
                            }
                        }
                    }
                });
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            accepted,
            closed,
            requests,
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A base URL whose port refuses connections (a listener bound, then closed).
pub fn refused_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/v1")
}

/// A listener whose accept queue is full: further SYNs are dropped, so a connect hangs.
/// Returns the listener (kept alive) and the streams filling its queue.
pub async fn full_backlog() -> (
    socket2::Socket,
    std::net::SocketAddr,
    Vec<tokio::net::TcpStream>,
) {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut fill = Vec::new();
    // Linux queues backlog + 1 connections; fill until a connect stops completing.
    for _ in 0..16 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(std::time::Duration::from_millis(100), connect).await {
            Ok(Ok(s)) => fill.push(s),
            _ => break,
        }
    }
    (sock, addr, fill)
}
