//! Adversarial tests of the transport against a hostile upstream on 127.0.0.1: gzip bombs on a
//! stream and on a body, garbage instead of a status line, huge and countless headers, HTML on a
//! 200 stream, a slowloris error body, and secrets in `QUERY` and the key.
//!
//! The hostile server runs on a plain OS thread with blocking sockets, so the only tokio tasks
//! alive in the test runtime are the transport's own: every test checks that they are gone once
//! the transport and its responses are dropped (no leaked task or connection; 40 S-10, S-17,
//! S-29, S-31; 05 ).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed setup is a failed test"
)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use adapter_openai::{OpenAiTransport, TransportOptions};
use futures_util::StreamExt as _;
use gateway_ports::config::{Secret, SourceConfig};
use gateway_ports::error::WireFailure;
use gateway_ports::ports::transport::{
    ChatTransport, Endpoint, WireEvent, WireRequest, WireResponse,
};
use serde_json::json;

const KEY: &str = "sk-adversarial-0123456789";
const QUERY_SECRET: &str = "query-secret-value-42";

/// What the hostile server does after writing its bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    Close,
    /// Keep the connection open, reading until the client leaves.
    Hold,
}

/// Serves one connection on an OS thread: reads one request, writes `response`, then `after`.
/// The receiver gets one message when the connection is over (client gone or closed).
fn hostile(response: Vec<u8>, after: After) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (done_tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut buf = Vec::new();
        let mut scratch = [0u8; 8192];
        // Head, then a Content-Length body.
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    break;
                }
            }
            match stream.read(&mut scratch) {
                Ok(0) | Err(_) => {
                    let _ = done_tx.send(());
                    return;
                }
                Ok(n) => buf.extend_from_slice(&scratch[..n]),
            }
        }
        // A client that stops reading makes this fail once it leaves: that is fine.
        let _ = stream.write_all(&response);
        match after {
            After::Close => {
                let _ = stream.shutdown(Shutdown::Write);
            }
            After::Hold => while matches!(stream.read(&mut scratch), Ok(n) if n > 0) {},
        }
        let _ = done_tx.send(());
    });
    (format!("http://{addr}/v1"), done)
}

fn source(base_url: &str) -> SourceConfig {
    let mut s = SourceConfig::new("adv_1", "adv", base_url, Some(Secret::from(KEY)), "m-1");
    s.query
        .insert("api-key".to_owned(), QUERY_SECRET.to_owned());
    s
}

fn request(source: &SourceConfig, stream: bool) -> WireRequest {
    WireRequest {
        source: Arc::new(source.clone()),
        call_id: "call-adv".to_owned(),
        endpoint: Endpoint::ChatCompletions,
        body: json!({"model": "m-1", "messages": [], "stream": stream}).into(),
        stream,
    }
}

async fn send(
    transport: &OpenAiTransport,
    source: &SourceConfig,
    stream: bool,
) -> Result<WireResponse, WireFailure> {
    ChatTransport::send(transport, request(source, stream)).await
}

/// No secret in any rendering of a failure.
fn assert_secret_free(text: &str) {
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains(QUERY_SECRET), "{text}");
}

/// Waits (bounded, without blocking the runtime: hyper's connection task must run to close the
/// socket) until the hostile server saw its connection end.
async fn wait_closed(done: &mpsc::Receiver<()>) {
    for _ in 0..1000 {
        if done.try_recv().is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the connection was never closed (leaked)");
}

/// Waits (bounded) until the runtime's alive tasks are back to `baseline`.
async fn assert_tasks_back_to(baseline: usize) {
    let metrics = tokio::runtime::Handle::current().metrics();
    for _ in 0..400 {
        if metrics.num_alive_tasks() <= baseline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "leaked tasks: {} alive, baseline {baseline}",
        metrics.num_alive_tasks()
    );
}

/// Raw deflate, LSB-first bit packing (RFC 1951 §3.1.1).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, bits: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push((self.acc & 0xff) as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// Huffman codes are packed starting with their most significant bit.
    fn code(&mut self, code: u32, len: u32) {
        for i in (0..len).rev() {
            self.put((code >> i) & 1, 1);
        }
    }
}

/// A gzip member whose deflate stream expands to `1 + 258 * copies` zero bytes (13 bits per
/// 258 bytes: a fixed-Huffman <length 258, distance 1> pair), without a trailer — the reader
/// must stop at its cap long before the end.
fn gzip_bomb(copies: usize) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // BTYPE = 01, fixed Huffman
    bits.code(0x30, 8); // literal 0
    for _ in 0..copies {
        bits.code(0b1100_0101, 8); // length code 285 = 258
        bits.code(0, 5); // distance code 0 = 1
    }
    bits.code(0, 7); // end of block
    if bits.n > 0 {
        bits.out.push((bits.acc & 0xff) as u8);
    }
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(&bits.out);
    gz
}

fn response(head: &str, body: &[u8]) -> Vec<u8> {
    let mut out = head.replace('\n', "\r\n").into_bytes();
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

#[tokio::test]
async fn r_29_gzip_bomb_body_stops_at_the_per_attempt_cap() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    // 8 MiB of zeros from ~53 KB on the wire; the cap is 1 MiB of decoded bytes.
    let bytes = response(
        "HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Encoding: gzip\nConnection: close\n",
        &gzip_bomb(32_516),
    );
    let (base_url, done) = hostile(bytes, After::Close);
    let mut src = source(&base_url);
    src.max_response_bytes = 1024 * 1024;
    let transport = OpenAiTransport::new([&src], TransportOptions::default()).unwrap();
    let err = send(&transport, &src, false).await.err().unwrap();
    assert_eq!(err, WireFailure::FrameTooLarge { limit: 1024 * 1024 });
    drop(transport);
    wait_closed(&done).await;
    assert_tasks_back_to(baseline).await;
}

#[tokio::test]
async fn s_17_gzip_bomb_on_a_stream_stops_at_the_frame_cap() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let bytes = response(
        "HTTP/1.1 200 OK\nContent-Type: text/event-stream\nContent-Encoding: gzip\nConnection: close\n",
        &gzip_bomb(32_516),
    );
    let (base_url, done) = hostile(bytes, After::Close);
    let src = source(&base_url);
    let options = TransportOptions {
        max_frame_bytes: 64 * 1024,
        ..TransportOptions::default()
    };
    let transport = OpenAiTransport::new([&src], options).unwrap();
    let Ok(WireResponse::Events { events, .. }) = send(&transport, &src, true).await else {
        panic!("a 200 stream");
    };
    let events: Vec<WireEvent> = events.collect().await;
    assert_eq!(events, vec![WireEvent::FrameTooLarge { limit: 64 * 1024 }]);
    drop(transport);
    wait_closed(&done).await;
    assert_tasks_back_to(baseline).await;
}

#[tokio::test]
async fn s_7_garbage_and_oversized_heads_are_network_faults_without_secrets() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let many_headers: String = (0..300).map(|i| format!("x-h{i}: v\n")).collect();
    let heads: Vec<Vec<u8>> = vec![
        b"\x00\xff\xfegarbage that is not HTTP at all\r\n\r\n".to_vec(),
        b"HTTP/1.1 abc Nope\r\n\r\n".to_vec(),
        response(
            &format!(
                "HTTP/1.1 200 OK\nx-huge: {}\nContent-Length: 0\n",
                "a".repeat(2 * 1024 * 1024)
            ),
            b"",
        ),
        response(
            &format!("HTTP/1.1 200 OK\n{many_headers}Content-Length: 0\n"),
            b"",
        ),
    ];
    for head in heads {
        let (base_url, done) = hostile(head, After::Close);
        let src = source(&base_url);
        let transport = OpenAiTransport::new([&src], TransportOptions::default()).unwrap();
        let err = send(&transport, &src, true).await.err().unwrap();
        assert!(matches!(err, WireFailure::Network(_)), "{err:?}");
        assert_secret_free(&format!("{err} {err:?}"));
        drop(transport);
        wait_closed(&done).await;
    }
    assert_tasks_back_to(baseline).await;
}

#[tokio::test]
async fn s_7_refused_connect_detail_never_shows_the_query_or_key() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let src = source(&format!("http://{addr}/v1"));
    let transport = OpenAiTransport::new([&src], TransportOptions::default()).unwrap();
    let err = send(&transport, &src, false).await.err().unwrap();
    assert!(matches!(err, WireFailure::Network(_)), "{err:?}");
    assert_secret_free(&format!("{err} {err:?} {transport:?}"));
}

#[tokio::test]
async fn s_30_html_on_a_200_stream_is_bounded_unrecognized_text() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let html: String = (0..2000)
        .map(|i| format!("<div class=\"row\">line {i} \u{fffd}\u{7f}</div>\n"))
        .collect();
    let mut body = html.into_bytes();
    body.extend_from_slice(b"\xff\xfe\xc3\n");
    let bytes = response(
        "HTTP/1.1 200 OK\nContent-Type: text/html; charset=latin1\nConnection: close\n",
        &body,
    );
    let (base_url, done) = hostile(bytes, After::Close);
    let src = source(&base_url);
    let transport = OpenAiTransport::new([&src], TransportOptions::default()).unwrap();
    let Ok(WireResponse::Events { events, .. }) = send(&transport, &src, true).await else {
        panic!("a 200 stream");
    };
    let events: Vec<WireEvent> = events.collect().await;
    assert_eq!(events.last(), Some(&WireEvent::End));
    let excerpt_bytes: usize = events
        .iter()
        .map(|e| match e {
            WireEvent::Unrecognized { excerpt } => excerpt.len(),
            _ => 0,
        })
        .sum();
    assert!(excerpt_bytes <= 4096, "{excerpt_bytes}");
    assert!(
        events
            .iter()
            .all(|e| matches!(e, WireEvent::Unrecognized { .. } | WireEvent::End)),
        "{events:?}"
    );
    drop(transport);
    wait_closed(&done).await;
    assert_tasks_back_to(baseline).await;
}

#[tokio::test]
async fn s_10_slowloris_error_body_is_released_when_the_caller_gives_up() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    // A 500 that promises a megabyte and sends 40 bytes, then holds the connection open.
    let bytes = response(
        "HTTP/1.1 500 Internal Server Error\nContent-Type: application/json\nContent-Length: 1048576\n",
        b"{\"error\":{\"message\":\"slow ...",
    );
    let (base_url, done) = hostile(bytes, After::Hold);
    let src = source(&base_url);
    let transport = OpenAiTransport::new([&src], TransportOptions::default()).unwrap();
    // The transport has no read timer (40 S-11): the core's watchdogs bound it. Here the
    // caller gives up instead; dropping the future must release the connection.
    let outcome =
        tokio::time::timeout(Duration::from_millis(300), send(&transport, &src, false)).await;
    assert!(outcome.is_err(), "the body never completes");
    drop(transport);
    wait_closed(&done).await;
    assert_tasks_back_to(baseline).await;
}

#[tokio::test]
async fn s_7_error_body_larger_than_the_retention_cap_is_truncated() {
    let baseline = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let body = vec![b'e'; 256 * 1024];
    let bytes = response(
        &format!(
            "HTTP/1.1 503 Service Unavailable\nContent-Length: {}\nRetry-After: NaN\n",
            body.len()
        ),
        &body,
    );
    let (base_url, done) = hostile(bytes, After::Hold);
    let src = source(&base_url);
    let options = TransportOptions {
        max_error_body_bytes: 1000,
        ..TransportOptions::default()
    };
    let transport = OpenAiTransport::new([&src], options).unwrap();
    let Err(WireFailure::Http { status, body, .. }) = send(&transport, &src, false).await else {
        panic!("an HTTP failure");
    };
    assert_eq!(status, 503);
    assert_eq!(body.len(), 1000);
    drop(transport);
    wait_closed(&done).await;
    assert_tasks_back_to(baseline).await;
}

#[test]
fn r_33_headers_and_key_errors_never_echo_values() {
    let mut src = source("http://127.0.0.1:9/v1");
    src.headers.insert(
        "x-tenant".to_owned(),
        Secret::from("hdr-secret\r\ninjected: 1"),
    );
    let err = OpenAiTransport::new([&src], TransportOptions::default()).unwrap_err();
    let text = format!(
        "{err} {err:?} {:?}",
        err.to_config_error("LLM__ADV__1__HEADERS")
    );
    assert!(!text.contains("hdr-secret"), "{text}");
    let mut src = source("http://127.0.0.1:9/v1");
    src.api_key = Some(Secret::from("sk-with\nnewline-secret"));
    let err = OpenAiTransport::new([&src], TransportOptions::default()).unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(!text.contains("newline-secret"), "{text}");
}
