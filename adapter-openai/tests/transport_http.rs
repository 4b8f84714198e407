//! Status and failure facts (10 §7, §8.1 CT-CHAT-02, -03, -08, §8.2 CT-EMB-02; 40 S-7, S-12;
//! 05 R-25): every status ≠ 200 is `Http` with headers and the retained body; failures before a
//! status line are `Network` with their kind; a non-stream 200 body is returned raw, capped, or
//! `ReadError` when it breaks.

mod support;

use adapter_openai::TransportOptions;
use gateway_ports::error::{NetworkFaultKind, WireFailure};
use gateway_ports::ports::transport::{ChatTransport, EmbeddingTransport, Endpoint, WireResponse};
use serde_json::json;
use support::*;

fn http_parts(err: WireFailure) -> (u16, Vec<(String, String)>, String) {
    match err {
        WireFailure::Http {
            status,
            headers,
            body,
        } => (status, headers, body),
        other => panic!("expected Http, got {other:?}"),
    }
}

#[tokio::test]
async fn ct_chat_02_non_200_statuses_for_stream_and_non_stream() {
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
            let t = transport(&src);
            let req = if stream {
                chat_stream(&src)
            } else {
                chat_plain(&src)
            };
            let (got, headers, text) = http_parts(ChatTransport::send(&t, req).await.unwrap_err());
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

#[tokio::test]
async fn ct_chat_02_duplicate_headers_kept() {
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
    let t = transport(&src);
    let (_, headers, _) = http_parts(ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err());
    let values: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n == "retry-after")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(values, ["1", "2"]);
}

#[tokio::test]
async fn s_7_error_body_truncated_at_max_error_body_bytes() {
    let big = vec![b'e'; 5000];
    let sim = sim(&raw_script(
        500,
        &[("content-type", "text/plain")],
        &[&big[..2000], &big[2000..]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let options = TransportOptions {
        max_error_body_bytes: 3000,
        ..TransportOptions::default()
    };
    let t = transport_with(&src, options);
    let (status, _, body) =
        http_parts(ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err());
    assert_eq!(status, 500);
    assert_eq!(body.len(), 3000, "truncated at the cap, never an error");
}

#[tokio::test]
async fn s_7_error_body_decoded_lossy() {
    let sim = sim(&raw_script(
        400,
        &[("content-type", "text/plain")],
        &[b"bad \xff byte"],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = transport(&src);
    let (_, _, body) = http_parts(ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err());
    assert_eq!(body, "bad \u{fffd} byte");
}

#[tokio::test]
async fn s_7_error_body_broken_keeps_what_was_read() {
    let sim = sim(&raw_script(
        503,
        &[("content-type", "text/plain")],
        &[b"partial"],
        "reset",
    ));
    let src = source(&sim.base_url());
    let t = transport(&src);
    let (status, _, body) =
        http_parts(ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err());
    assert_eq!(status, 503);
    assert!("partial".starts_with(&body), "{body:?}");
}

#[tokio::test]
async fn ct_chat_03_connect_refused_is_network_connect() {
    let src = source(&refused_base_url());
    let t = transport(&src);
    for stream in [true, false] {
        let req = if stream {
            chat_stream(&src)
        } else {
            chat_plain(&src)
        };
        match ChatTransport::send(&t, req).await {
            Err(WireFailure::Network(fault)) => {
                assert_eq!(fault.kind, NetworkFaultKind::Connect, "{fault}");
                assert!(!fault.detail.contains(KEY));
            }
            other => panic!("expected Network(Connect), got {other:?}"),
        }
    }
}

#[tokio::test]
async fn ct_chat_03_tls_handshake_failure_is_network_tls() {
    // An https URL pointed at a plain-HTTP server: the handshake fails.
    let sim = sim(r#"{"version":1,"responses":[{"completion":{"content":"x"}}]}"#);
    let url = sim.base_url().replace("http://", "https://");
    let src = source(&url);
    let t = transport(&src);
    match ChatTransport::send(&t, chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Tls, "{fault}")
        }
        other => panic!("expected Network(Tls), got {other:?}"),
    }
}

#[tokio::test]
async fn ct_chat_03_garbage_status_line_is_network_protocol() {
    let server = RawServer::start(b"NOT-HTTP garbage\r\n\r\n".to_vec(), After::Close).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    match ChatTransport::send(&t, chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected Network(Protocol), got {other:?}"),
    }
}

#[tokio::test]
async fn ct_chat_03_closed_before_status_is_network() {
    // The server reads the request and closes without answering.
    let server = RawServer::start(Vec::new(), After::Close).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    match ChatTransport::send(&t, chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            // hyper: "connection closed before message completed" (httpx RemoteProtocolError).
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected Network, got {other:?}"),
    }
}

#[tokio::test]
async fn ct_chat_08_non_stream_body_raw_with_headers() {
    let raw = b"{\"id\":\"x\",\"choices\":[]}  \n";
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json"), ("x-upstream", "v")],
        &[&raw[..5], &raw[5..]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = transport(&src);
    let Ok(WireResponse::Body(body)) = ChatTransport::send(&t, chat_plain(&src)).await else {
        panic!("non-stream 200 gives Body");
    };
    assert_eq!(&body.bytes[..], &raw[..], "raw bytes, unjudged");
    assert!(
        body.headers
            .iter()
            .any(|(n, v)| n == "x-upstream" && v == "v")
    );
}

#[tokio::test]
async fn ct_chat_08_non_stream_body_over_max_frame_bytes() {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b' '; 600], &[b' '; 600]],
        "eof",
    ));
    let src = source(&sim.base_url());
    let options = TransportOptions {
        max_frame_bytes: 1000,
        ..TransportOptions::default()
    };
    let t = transport_with(&src, options);
    let err = ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err();
    assert_eq!(err, WireFailure::FrameTooLarge { limit: 1000 });
}

#[tokio::test]
async fn r_29_non_stream_body_over_max_response_bytes() {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b' '; 600]],
        "eof",
    ));
    let src = gateway_ports::config::SourceConfig {
        max_response_bytes: 500,
        ..source(&sim.base_url())
    };
    let t = transport(&src);
    let err = ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err();
    assert_eq!(err, WireFailure::FrameTooLarge { limit: 500 });
}

#[tokio::test]
async fn ct_chat_08_non_stream_body_broken_is_read_error() {
    let sim = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[b"{\"id\":"],
        "reset",
    ));
    let src = source(&sim.base_url());
    let t = transport(&src);
    match ChatTransport::send(&t, chat_plain(&src)).await {
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

#[tokio::test]
async fn ct_chat_08_close_before_content_length_is_read_error() {
    let server = RawServer::start(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{\"id\":".to_vec(),
        After::Close,
    )
    .await;
    let src = source(&server.base_url);
    let t = transport(&src);
    match ChatTransport::send(&t, chat_plain(&src)).await {
        Err(WireFailure::ReadError(fault)) => {
            // S-29: premature close with Content-Length outstanding (httpx RemoteProtocolError).
            assert_eq!(fault.kind, NetworkFaultKind::Protocol, "{fault}");
        }
        other => panic!("expected ReadError, got {other:?}"),
    }
}

#[tokio::test]
async fn ct_emb_02_embedding_failures() {
    // CT-CHAT-02: status ≠ 200.
    let upstream = sim(&raw_script(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after", "86400"),
        ],
        &[b"{\"error\":{\"code\":\"429\"}}"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    let body = json!({"model": "m-1", "input": ["a"]});
    let (status, headers, _) = http_parts(
        EmbeddingTransport::send(&t, request(&src, Endpoint::Embeddings, body.clone(), false))
            .await
            .unwrap_err(),
    );
    assert_eq!(status, 429);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "retry-after" && v == "86400")
    );

    // CT-CHAT-03: before a status line.
    let refused = source(&refused_base_url());
    let t = transport(&refused);
    assert!(matches!(
        EmbeddingTransport::send(&t, request(&refused, Endpoint::Embeddings, body.clone(), false)).await,
        Err(WireFailure::Network(f)) if f.kind == NetworkFaultKind::Connect
    ));

    // CT-CHAT-08: capped and broken bodies.
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b'1'; 64]],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = transport_with(
        &src,
        TransportOptions {
            max_frame_bytes: 32,
            ..TransportOptions::default()
        },
    );
    assert_eq!(
        EmbeddingTransport::send(&t, request(&src, Endpoint::Embeddings, body.clone(), false))
            .await,
        Err(WireFailure::FrameTooLarge { limit: 32 })
    );
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[b"{\"data\":"],
        "reset",
    ));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    assert!(matches!(
        EmbeddingTransport::send(&t, request(&src, Endpoint::Embeddings, body, false)).await,
        Err(WireFailure::ReadError(_))
    ));
}

#[tokio::test]
async fn ct_chat_09_dropping_send_closes_the_connection() {
    // A server that reads the request and never answers; dropping the send future must close
    // the connection (the server observes EOF).
    let mut server = RawServer::start(Vec::new(), After::Hold).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    let req = chat_plain(&src);
    {
        let send = ChatTransport::send(&t, req);
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

// covers: S-11
#[tokio::test]
async fn r_25_connect_timeout_is_ttft_timeout_and_network_connect_timeout() {
    let (_listener, addr, _fill) = full_backlog().await;
    let src = gateway_ports::config::SourceConfig {
        ttft_timeout_s: Some(0.2),
        inter_token_timeout_s: Some(0.1),
        timeout_s: 30.0,
        ..source(&format!("http://{addr}/v1"))
    };
    let t = transport(&src);
    let started = tokio::time::Instant::now();
    match ChatTransport::send(&t, chat_plain(&src)).await {
        Err(WireFailure::Network(fault)) => {
            assert_eq!(fault.kind, NetworkFaultKind::ConnectTimeout, "{fault}");
        }
        other => panic!("expected Network(ConnectTimeout), got {other:?}"),
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= std::time::Duration::from_millis(200),
        "{elapsed:?}"
    );
    assert!(
        elapsed < std::time::Duration::from_secs(20),
        "not timeout_s: {elapsed:?}"
    );
}

// covers: S-11
#[tokio::test]
async fn ct_chat_04_no_read_timer_on_a_body() {
    // Connect timeout 0.2 s; the body pauses 0.8 s (4×) between writes and still arrives whole.
    let script = r#"{"version":1,"responses":[{"headers":[["content-type","application/json"]],
            "chunks":[{"text":"{\"id\":"},{"text":"\"x\"}","delay_ms":800}]}]}"#;
    let upstream = sim(script);
    let src = gateway_ports::config::SourceConfig {
        ttft_timeout_s: Some(0.2),
        inter_token_timeout_s: Some(0.1),
        timeout_s: 30.0,
        ..source(&upstream.base_url())
    };
    let t = transport(&src);
    let Ok(WireResponse::Body(body)) = ChatTransport::send(&t, chat_plain(&src)).await else {
        panic!("the slow body is read whole");
    };
    assert_eq!(&body.bytes[..], b"{\"id\":\"x\"}");
}
