//! Streamed 200 responses over real sockets (10 §8.1 CT-CHAT-04…09; 40 S-8…S-12, S-17, S-29;
//! 05 R-27, R-28, R-29): events in wire order as each read arrives, exactly one terminal event,
//! broken bodies, caps, the JSON answer to a streamed request, connection reuse and release.

mod support;

use adapter_openai::TransportOptions;
use futures_util::StreamExt as _;
use gateway_ports::config::SourceConfig;
use gateway_ports::error::{NetworkFaultKind, WireFailure};
use gateway_ports::ports::transport::{ChatTransport, KeepAliveKind, WireEvent, WireResponse};
use serde_json::json;
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

// covers: S-8
#[tokio::test]
async fn ct_chat_05_generated_stream_events_in_order_with_headers() {
    let upstream = sim(
        r#"{"version":1,"responses":[{"headers":[["content-type","text/event-stream"],["x-trace","t-1"]],
            "completion":{"content":"abcd","chunks":2}}]}"#,
    );
    let src = source(&upstream.base_url());
    let t = transport(&src);
    let Ok(WireResponse::Events {
        headers,
        content_type,
        events,
    }) = ChatTransport::send(&t, chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    assert_eq!(content_type.as_deref(), Some("text/event-stream"));
    assert!(headers.iter().any(|(n, v)| n == "x-trace" && v == "t-1"));
    let events = collect(events).await;
    assert_one_terminal_last(&events);
    assert_eq!(events.last(), Some(&WireEvent::Done));
    let content: String = events
        .iter()
        .filter_map(|e| match e {
            WireEvent::Chunk(v) => v.to_value()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(content, "abcd", "chunks in wire order");
}

#[tokio::test]
async fn ct_chat_05_events_yielded_before_the_body_ends() {
    // The body never ends (`end: hang`): the first event must still arrive.
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b": ping\n\ndata: {\"n\":1}\n\n"],
        "hang",
    ));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    let Ok(WireResponse::Events { mut events, .. }) =
        ChatTransport::send(&t, chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    assert_eq!(
        events.next().await,
        Some(WireEvent::KeepAlive(KeepAliveKind::Comment))
    );
    assert_eq!(
        events.next().await,
        Some(WireEvent::Chunk(json!({"n": 1}).into()))
    );
}

#[tokio::test]
async fn ct_chat_06_clean_end_without_done_is_end() {
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b"data: {\"n\":1}\n\n"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Chunk(json!({"n": 1}).into()), WireEvent::End]
    );
}

#[tokio::test]
async fn ct_chat_06_reset_is_read_error_never_end() {
    // S-29: even after a finish_reason and usage, a broken body is ReadError.
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[
            b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n",
        ],
        "reset",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert_one_terminal_last(&events);
    assert_eq!(events.len(), 3, "{events:?}");
    match events.last() {
        Some(WireEvent::ReadError(fault)) => assert_eq!(fault.kind, NetworkFaultKind::Read),
        other => panic!("expected ReadError, got {other:?}"),
    }
}

#[tokio::test]
async fn ct_chat_06_close_delimited_body_end_is_clean() {
    // S-29: the close of a close-delimited body is a clean end.
    let upstream = sim(
        r#"{"version":1,"responses":[{"headers":[["content-type","text/event-stream"]],"framing":"close",
            "chunks":[{"text":"data: {\"n\":1}\n\n"}]}]}"#,
    );
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Chunk(json!({"n": 1}).into()), WireEvent::End]
    );
}

// covers: S-1
#[tokio::test]
async fn ct_chat_07_no_judgement_of_chunk_contents() {
    // An `error` key inside a data event, a finish_reason, usage: all plain Chunks.
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b"data: {\"error\":{\"code\":429}}\n\ndata: {\"choices\":[{\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::Chunk(json!({"error": {"code": 429}}).into()),
            WireEvent::Chunk(json!({"choices": [{"finish_reason": "length"}]}).into()),
            WireEvent::Done,
        ]
    );
}

#[tokio::test]
async fn s_17_frame_too_large_over_the_wire() {
    let mut line = b"data: {\"x\":\"".to_vec();
    line.extend(std::iter::repeat_n(b'a', 300));
    line.extend_from_slice(b"\"}\n\n");
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[
            b"data: {\"n\":1}\n\n",
            &line[..100],
            &line[100..],
            b"data: [DONE]\n\n",
        ],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = transport_with(
        &src,
        TransportOptions {
            max_frame_bytes: 128,
            ..TransportOptions::default()
        },
    );
    let events = stream_events(&t, &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::Chunk(json!({"n": 1}).into()),
            WireEvent::FrameTooLarge { limit: 128 }
        ]
    );
}

#[tokio::test]
async fn r_29_stream_over_max_response_bytes() {
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[
            b": keep-alive\n\n",
            b": keep-alive\n\n",
            b": keep-alive\n\n",
            b"data: [DONE]\n\n",
        ],
        "eof",
    ));
    let src = SourceConfig {
        max_response_bytes: 40,
        ..source(&upstream.base_url())
    };
    let events = stream_events(&transport(&src), &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::KeepAlive(KeepAliveKind::Comment),
            WireEvent::KeepAlive(KeepAliveKind::Comment),
            WireEvent::FrameTooLarge { limit: 40 },
        ]
    );
}

#[tokio::test]
async fn r_27_json_body_to_streamed_request_is_one_event() {
    let body = br#"{"id":"c-1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json; charset=utf-8")],
        &[&body[..20], &body[20..]],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    let Ok(WireResponse::Events {
        content_type,
        events,
        ..
    }) = ChatTransport::send(&t, chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    assert_eq!(
        content_type.as_deref(),
        Some("application/json; charset=utf-8")
    );
    let expected: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(
        collect(events).await,
        vec![WireEvent::Chunk(expected.into()), WireEvent::End]
    );
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

// covers: S-11
#[tokio::test]
async fn ct_chat_04_gzip_decoded_before_framing() {
    const GZ_SSE: [u8; 45] = [
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 75, 73, 44, 73, 180, 82, 168, 86, 74, 84, 178, 50, 172,
        229, 226, 74, 1, 115, 163, 93, 252, 253, 92, 99, 185, 184, 0, 177, 183, 95, 52, 29, 0, 0,
        0,
    ];
    const GZ_JSON: [u8; 30] = [
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 171, 86, 202, 76, 81, 178, 82, 170, 80, 170, 5, 0, 188,
        126, 83, 137, 10, 0, 0, 0,
    ];
    let upstream = sim(&raw_script(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("content-encoding", "gzip"),
        ],
        &[&GZ_SSE[..10], &GZ_SSE[10..]],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&transport(&src), &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Chunk(json!({"a": 1}).into()), WireEvent::Done]
    );
    let r = &upstream.wait_for_requests(1).await[0];
    assert!(
        r.header("accept-encoding")
            .is_some_and(|v| v.contains("gzip"))
    );

    let upstream = sim(&raw_script(
        200,
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        &[&GZ_JSON],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let Ok(WireResponse::Body(body)) =
        ChatTransport::send(&transport(&src), chat_plain(&src)).await
    else {
        panic!("Body expected");
    };
    assert_eq!(&body.bytes[..], b"{\"id\":\"x\"}");
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
async fn r_28_connection_dropped_after_done_when_body_continues() {
    // Bytes after [DONE] and no end of body: the connection is closed, not pooled.
    let mut response = sse_head();
    response.extend_from_slice(&chunked(b"data: [DONE]\n\ndata: {\"late\":1}\n\n"));
    let mut server = RawServer::start(response, After::Hold).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    let events = stream_events(&t, &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Done],
        "nothing after [DONE] is parsed"
    );
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "the connection was closed"
    );
    let _ = stream_events(&t, &src).await;
    assert_eq!(
        server.accepted(),
        2,
        "the second stream needed a new connection"
    );
}

#[tokio::test]
async fn ct_chat_09_dropping_the_stream_closes_the_connection() {
    let mut response = sse_head();
    response.extend_from_slice(&chunked(b"data: {\"n\":1}\n\n"));
    let mut server = RawServer::start(response, After::Hold).await;
    let src = source(&server.base_url);
    let t = transport(&src);
    let Ok(WireResponse::Events { mut events, .. }) =
        ChatTransport::send(&t, chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    assert_eq!(
        events.next().await,
        Some(WireEvent::Chunk(json!({"n": 1}).into()))
    );
    drop(events);
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "the upstream saw the disconnect"
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
