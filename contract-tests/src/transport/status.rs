//! Status and failure facts (10 §7, §8.1 CT-CHAT-02, -03, -04, -08, -09; 40 S-7, S-11, S-12;
//! 05 R-25, R-29): every status ≠ 200 is `Http` with its headers and the retained body; a
//! failure before a status line is `Network` with its kind; a non-stream 200 body is returned
//! raw, capped, or `ReadError` when it breaks; no timer but the connect timeout.

use std::time::Duration;

use gateway_ports::{NetworkFaultKind, SourceConfig, WireFailure, WireResponse};

use super::raw::{After, RawServer, full_backlog, refused_base_url};
use super::{
    KEY, TransportHarness, chat, chat_plain, chat_stream, chat_with, error_cap, frame_cap,
    http_parts, raw_script, sim, source,
};

/// CT-CHAT-02: every status ≠ 200 (2xx included) is `Http` with the status, every header (names
/// lower-cased, values as received, `retry-after` and `retry-after-ms` among them) and the
/// body, for stream and non-stream requests alike.
pub async fn ct_chat_02_non_200_statuses_for_stream_and_non_stream(h: &dyn TransportHarness) {
    for status in [201_u16, 202, 204, 400, 401, 429, 500, 503] {
        for stream in [true, false] {
            let body: &[u8] = if status == 204 {
                b""
            } else {
                b"{\"error\":\"x\"}"
            };
            let sim = sim(&raw_script(
                status,
                &[
                    ("content-type", "application/json"),
                    ("retry-after", "3"),
                    ("retry-after-ms", "2500"),
                    ("X-Custom", "A b"),
                ],
                &[body],
                "eof",
            ));
            let src = source(&sim.base_url());
            let t = chat(h, &src);
            let req = if stream {
                chat_stream(&src)
            } else {
                chat_plain(&src)
            };
            let (got, headers, text) = http_parts(t.send(req).await.expect_err("non-200"));
            assert_eq!(got, status, "stream={stream}");
            let has = |n: &str, v: &str| headers.iter().any(|(hn, hv)| hn == n && hv == v);
            assert!(has("retry-after", "3"), "{headers:?}");
            assert!(has("retry-after-ms", "2500"));
            assert!(
                has("x-custom", "A b"),
                "names lower-cased, values as received"
            );
            if status == 204 {
                assert_eq!(text, "");
            } else {
                assert_eq!(text, "{\"error\":\"x\"}");
            }
        }
    }
}

/// CT-CHAT-02: a repeated header keeps every value, in order.
pub async fn ct_chat_02_duplicate_headers_kept(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        429,
        &[
            ("retry-after", "1"),
            ("Retry-After", "2"),
            ("content-type", "text/plain"),
        ],
        &[b"slow down"],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let (_, headers, _) = http_parts(t.send(chat_plain(&src)).await.expect_err("429"));
    let values: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n == "retry-after")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(values, ["1", "2"]);
}

/// S-7: a non-200 body longer than `max_error_body_bytes` is truncated there, never an error.
pub async fn s_7_error_body_truncated_at_max_error_body_bytes(h: &dyn TransportHarness) {
    let big = vec![b'e'; 5000];
    let sim = sim(&raw_script(
        500,
        &[("content-type", "text/plain")],
        &[&big[..2000], &big[2000..]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = chat_with(h, &src, error_cap(3000));
    let (status, _, body) = http_parts(t.send(chat_plain(&src)).await.expect_err("500"));
    assert_eq!(status, 500);
    assert_eq!(body.len(), 3000, "truncated at the cap, never an error");
}

/// S-7: the retained error body is UTF-8 with replacement, never an error.
pub async fn s_7_error_body_decoded_lossy(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        400,
        &[("content-type", "text/plain")],
        &[b"bad \xff byte"],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let (_, _, body) = http_parts(t.send(chat_plain(&src)).await.expect_err("400"));
    assert_eq!(body, "bad \u{fffd} byte");
}

/// S-7: an error body that breaks keeps what was read; the failure is still `Http`.
pub async fn s_7_error_body_broken_keeps_what_was_read(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        503,
        &[("content-type", "text/plain")],
        &[b"partial"],
        "reset",
    ));
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let (status, _, body) = http_parts(t.send(chat_plain(&src)).await.expect_err("503"));
    assert_eq!(status, 503);
    assert!("partial".starts_with(&body), "{body:?}");
}

/// CT-CHAT-03: a refused connection is `Network(Connect)`; the detail never carries the key.
pub async fn ct_chat_03_connect_refused_is_network_connect(h: &dyn TransportHarness) {
    let src = source(&refused_base_url());
    let t = chat(h, &src);
    for stream in [true, false] {
        let req = if stream {
            chat_stream(&src)
        } else {
            chat_plain(&src)
        };
        match t.send(req).await {
            Err(WireFailure::Network(fault)) => {
                assert_eq!(fault.kind, NetworkFaultKind::Connect, "{fault}");
                assert!(!fault.detail.contains(KEY));
            }
            other => panic!("expected Network(Connect), got {other:?}"),
        }
    }
}

/// CT-CHAT-03: a failed TLS handshake (an https URL at a plain-HTTP server) is `Network(Tls)`.
pub async fn ct_chat_03_tls_handshake_failure_is_network_tls(h: &dyn TransportHarness) {
    let sim = sim(r#"{"version":1,"responses":[{"completion":{"content":"x"}}]}"#);
    let url = sim.base_url().replace("http://", "https://");
    let src = source(&url);
    let t = chat(h, &src);
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Tls, "{fault}")
        }
        other => panic!("expected Network(Tls), got {other:?}"),
    }
}

/// CT-CHAT-03: an answer that is not HTTP is `Network(Protocol)`.
pub async fn ct_chat_03_garbage_status_line_is_network_protocol(h: &dyn TransportHarness) {
    let server = RawServer::start(b"NOT-HTTP garbage\r\n\r\n".to_vec(), After::Close).await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected Network(Protocol), got {other:?}"),
    }
}

/// CT-CHAT-03: a connection closed after the request and before a status line is
/// `Network(Protocol)` (httpx's `RemoteProtocolError`).
pub async fn ct_chat_03_closed_before_status_is_network(h: &dyn TransportHarness) {
    let server = RawServer::start(Vec::new(), After::Close).await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected Network, got {other:?}"),
    }
}

/// CT-CHAT-08: a non-stream 200 is `Body` with the raw bytes (read across writes) and the
/// headers, unjudged.
pub async fn ct_chat_08_non_stream_body_raw_with_headers(h: &dyn TransportHarness) {
    let raw = b"{\"id\":\"x\",\"choices\":[]}  \n";
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json"), ("x-upstream", "v")],
        &[&raw[..5], &raw[5..]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let Ok(WireResponse::Body(body)) = t.send(chat_plain(&src)).await else {
        panic!("non-stream 200 gives Body");
    };
    assert_eq!(&body.bytes[..], &raw[..], "raw bytes, unjudged");
    assert!(
        body.headers
            .iter()
            .any(|(n, v)| n == "x-upstream" && v == "v")
    );
}

/// CT-CHAT-08: a non-stream body over `max_frame_bytes` is `FrameTooLarge { limit }`.
pub async fn ct_chat_08_non_stream_body_over_max_frame_bytes(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b' '; 600], &[b' '; 600]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = chat_with(h, &src, frame_cap(1000));
    let err = t.send(chat_plain(&src)).await.expect_err("too large");
    assert_eq!(err, WireFailure::FrameTooLarge { limit: 1000 });
}

/// R-29: a non-stream body over the source's `max_response_bytes` is `FrameTooLarge` at that
/// limit.
pub async fn r_29_non_stream_body_over_max_response_bytes(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b' '; 600]],
        "eof",
    ));
    let src = SourceConfig {
        max_response_bytes: 500,
        ..source(&sim.base_url())
    };
    let t = chat(h, &src);
    let err = t.send(chat_plain(&src)).await.expect_err("too large");
    assert_eq!(err, WireFailure::FrameTooLarge { limit: 500 });
}

/// CT-CHAT-08: a reset during a non-stream body is `ReadError(Read)`; the payload is never
/// echoed in the detail.
pub async fn ct_chat_08_non_stream_body_broken_is_read_error(h: &dyn TransportHarness) {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[b"{\"id\":"],
        "reset",
    ));
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::ReadError(fault)) => {
            assert_eq!(
                fault.kind,
                NetworkFaultKind::Read,
                "a reset is a read error: {fault}"
            );
            assert!(!fault.detail.contains("{\"id\""), "payload never echoed");
        }
        other => panic!("expected ReadError, got {other:?}"),
    }
}

/// CT-CHAT-08, S-29: a close with `Content-Length` outstanding is `ReadError(Protocol)`.
pub async fn ct_chat_08_close_before_content_length_is_read_error(h: &dyn TransportHarness) {
    let server = RawServer::start(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{\"id\":".to_vec(),
        After::Close,
    )
    .await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::ReadError(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected ReadError, got {other:?}"),
    }
}

/// CT-CHAT-09: dropping the `send` future before an answer closes the connection (the server
/// observes EOF).
pub async fn ct_chat_09_dropping_send_closes_the_connection(h: &dyn TransportHarness) {
    let mut server = RawServer::start(Vec::new(), After::Hold).await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    let req = chat_plain(&src);
    {
        let send = t.send(req);
        tokio::pin!(send);
        tokio::select! {
            _ = &mut send => panic!("the server never answers"),
            got = server.requests.recv() => assert!(got.is_some()),
        }
    } // the send future is dropped here
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "the upstream saw the disconnect"
    );
}

/// CT-CHAT-04 as amended by R-25 (covers S-11): the connect timeout is
/// `ttft_timeout_s.unwrap_or(timeout_s)` and its expiry is `Network(ConnectTimeout)`.
// covers: S-11
pub async fn r_25_connect_timeout_is_ttft_timeout_and_network_connect_timeout(
    h: &dyn TransportHarness,
) {
    let (_listener, addr, _fill) = full_backlog().await;
    let src = SourceConfig {
        ttft_timeout_s: Some(0.2),
        inter_token_timeout_s: Some(0.1),
        timeout_s: 30.0,
        ..source(&format!("http://{addr}/v1"))
    };
    let t = chat(h, &src);
    let started = tokio::time::Instant::now();
    match t.send(chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::ConnectTimeout, "{fault}");
        }
        other => panic!("expected Network(ConnectTimeout), got {other:?}"),
    }
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_secs(20),
        "not timeout_s: {elapsed:?}"
    );
}

/// CT-CHAT-04 (covers S-11): no read timer on a body: with a 0.2 s connect timeout, a body that
/// pauses 0.8 s between writes still arrives whole.
// covers: S-11
pub async fn ct_chat_04_no_read_timer_on_a_body(h: &dyn TransportHarness) {
    let script = r#"{"version":1,"responses":[{"headers":[["content-type","application/json"]],
            "chunks":[{"text":"{\"id\":"},{"text":"\"x\"}","delay_ms":800}]}]}"#;
    let upstream = sim(script);
    let src = SourceConfig {
        ttft_timeout_s: Some(0.2),
        inter_token_timeout_s: Some(0.1),
        timeout_s: 30.0,
        ..source(&upstream.base_url())
    };
    let t = chat(h, &src);
    let Ok(WireResponse::Body(body)) = t.send(chat_plain(&src)).await else {
        panic!("the slow body is read whole");
    };
    assert_eq!(&body.bytes[..], b"{\"id\":\"x\"}");
}
