//! This adapter's own stream and connection choices over real sockets (05; 40 S-7;
//! README D20): the JSON-typed body that is empty, not JSON (sniffed and framed as SSE), too large
//! or broken; a connection reused from the pool after a body read to its end; a truncated error
//! body's connection closed while a short one stays pooled. The streamed-response contract rows
//! (CT-CHAT-04…09) run from `contract_tests::transport` in `transport_contract.rs`.

mod support;

use adapter_openai::TransportOptions;
use gateway_ports::config::SourceConfig;
use gateway_ports::error::WireFailure;
use gateway_ports::ports::transport::{ChatTransport, KeepAliveKind, WireEvent, WireResponse};
use support::*;

async fn stream_events(t: &adapter_openai::OpenAiTransport, src: &SourceConfig) -> Vec<WireEvent> {
    match ChatTransport::send(t, chat_stream(src)).await {
        Ok(WireResponse::Events { events, .. }) => collect(events).await,
        other => panic!("expected Events, got {other:?}"),
    }
}

fn chunked(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
    out
}

fn sse_head() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        .to_vec()
}

#[tokio::test]
async fn r_27_json_body_empty_invalid_too_large_broken() {
    let cases: [(&[u8], &str, Vec<WireEvent>); 3] = [
        (
            b"  \n",
            "eof",
            vec![
                WireEvent::KeepAlive(KeepAliveKind::EmptyData),
                WireEvent::End,
            ],
        ),
        // README D20: a JSON-typed body that does not start with `{` or `[` is framed as SSE.
        (
            b"<html>oops</html>",
            "eof",
            vec![
                WireEvent::Unrecognized {
                    excerpt: "<html>oops</html>".into(),
                },
                WireEvent::End,
            ],
        ),
        (
            &[b' '; 200],
            "eof",
            vec![WireEvent::FrameTooLarge { limit: 100 }],
        ),
    ];
    for (body, end, expected) in cases {
        let upstream = sim(&raw_script(
            200,
            &[("content-type", "application/json")],
            &[body],
            end,
        ));
        let src = source(&upstream.base_url());
        let t = transport_with(
            &src,
            TransportOptions {
                max_frame_bytes: 100,
                ..TransportOptions::default()
            },
        );
        assert_eq!(stream_events(&t, &src).await, expected);
    }
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[b"{\"id\":"],
        "reset",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert!(
        matches!(events.as_slice(), [WireEvent::ReadError(_)]),
        "{events:?}"
    );
}

#[tokio::test]
async fn r_28_connection_pooled_after_done_when_body_ended() {
    let mut response = sse_head();
    let mut last = chunked(b"data: {\"n\":1}\n\ndata: [DONE]\n\n");
    last.extend_from_slice(b"0\r\n\r\n");
    response.extend_from_slice(&last);
    let server = RawServer::start(response, After::KeepAlive).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    for _ in 0..3 {
        let events = stream_events(&t, &src).await;
        assert_eq!(events.last(), Some(&WireEvent::Done));
    }
    assert_eq!(
        server.accepted(),
        1,
        "one connection reused for all three streams"
    );
}

#[tokio::test]
async fn s_7_truncated_error_body_connection_not_pooled() {
    // 4 000 bytes announced, 2 000 sent, the rest withheld: the body is truncated at the cap
    // and the half-read connection is closed, not pooled.
    let mut head = b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 4000\r\n\r\n".to_vec();
    head.extend(std::iter::repeat_n(b'x', 2000));
    let mut server = RawServer::start(head, After::Hold).await;
    let src = source(&server.base_url);
    let t = transport_with(
        &src,
        TransportOptions {
            max_error_body_bytes: 100,
            ..TransportOptions::default()
        },
    );
    let err = ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err();
    assert!(
        matches!(err, WireFailure::Http { status: 500, ref body, .. } if body.len() == 100),
        "{err}"
    );
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "closed rather than pooled"
    );

    // A short error body read to its end keeps the connection.
    let short = b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain\r\ncontent-length: 4\r\n\r\nslow".to_vec();
    let server = RawServer::start(short, After::KeepAlive).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    for _ in 0..2 {
        let _ = ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err();
    }
    assert_eq!(server.accepted(), 1);
}
