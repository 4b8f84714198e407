//! Streamed 200 responses (10 §8.1 CT-CHAT-04…09; 40 S-7, S-8, S-10, S-17, S-29; 05 R-27,
//! R-28, R-29): events in wire order as each read arrives, exactly one terminal event, clean and
//! broken ends, the caps, content decoding, the JSON answer to a streamed request, and closing
//! the connection when the stream is dropped or ended early.

use futures_util::StreamExt as _;
use gateway_ports::{
    KeepAliveKind, NetworkFaultKind, SourceConfig, WireEvent, WireFailure, WireResponse,
};
use serde_json::json;

use super::raw::{After, RawServer};
use super::{
    TransportHarness, assert_one_terminal_last, chat, chat_plain, chat_stream, chat_with, collect,
    error_cap, frame_cap, raw_script, sim, source, stream_events,
};

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

/// CT-CHAT-05 (covers S-8): a generated stream arrives as `Events` with its headers and content
/// type, the chunks in wire order, ending with `Done`.
// covers: S-8
pub async fn ct_chat_05_generated_stream_events_in_order_with_headers(h: &dyn TransportHarness) {
    let upstream = sim(
        r#"{"version":1,"responses":[{"headers":[["content-type","text/event-stream"],["x-trace","t-1"]],
            "completion":{"content":"abcd","chunks":2}}]}"#,
    );
    let src = source(&upstream.base_url());
    let t = chat(h, &src);
    let Ok(WireResponse::Events {
        headers,
        content_type,
        events,
    }) = t.send(chat_stream(&src)).await
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

/// CT-CHAT-05: events are yielded as each is complete, before the body ends (here it never
/// does).
pub async fn ct_chat_05_events_yielded_before_the_body_ends(h: &dyn TransportHarness) {
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b": ping\n\ndata: {\"n\":1}\n\n"],
        "hang",
    ));
    let src = source(&upstream.base_url());
    let t = chat(h, &src);
    let Ok(WireResponse::Events { mut events, .. }) = t.send(chat_stream(&src)).await else {
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

/// CT-CHAT-06: a clean end of body without `[DONE]` is `End`.
pub async fn ct_chat_06_clean_end_without_done_is_end(h: &dyn TransportHarness) {
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b"data: {\"n\":1}\n\n"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&*chat(h, &src), &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Chunk(json!({"n": 1}).into()), WireEvent::End]
    );
}

/// CT-CHAT-06, S-29: a reset is `ReadError(Read)`, never `End`, even after a finish_reason and
/// usage.
pub async fn ct_chat_06_reset_is_read_error_never_end(h: &dyn TransportHarness) {
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
    let events = stream_events(&*chat(h, &src), &src).await;
    assert_one_terminal_last(&events);
    assert_eq!(events.len(), 3, "{events:?}");
    match events.last() {
        Some(WireEvent::ReadError(fault)) => assert_eq!(fault.kind, NetworkFaultKind::Read),
        other => panic!("expected ReadError, got {other:?}"),
    }
}

/// CT-CHAT-06, S-29: the close of a close-delimited body is a clean end.
pub async fn ct_chat_06_close_delimited_body_end_is_clean(h: &dyn TransportHarness) {
    let upstream = sim(
        r#"{"version":1,"responses":[{"headers":[["content-type","text/event-stream"]],"framing":"close",
            "chunks":[{"text":"data: {\"n\":1}\n\n"}]}]}"#,
    );
    let src = source(&upstream.base_url());
    let events = stream_events(&*chat(h, &src), &src).await;
    assert_eq!(
        events,
        vec![WireEvent::Chunk(json!({"n": 1}).into()), WireEvent::End]
    );
}

/// CT-CHAT-07 (covers S-1): no judgement: an `error` key inside a data event and a
/// finish_reason are plain `Chunk`s.
// covers: S-1
pub async fn ct_chat_07_no_judgement_of_chunk_contents(h: &dyn TransportHarness) {
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "text/event-stream")],
        &[b"data: {\"error\":{\"code\":429}}\n\ndata: {\"choices\":[{\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let events = stream_events(&*chat(h, &src), &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::Chunk(json!({"error": {"code": 429}}).into()),
            WireEvent::Chunk(json!({"choices": [{"finish_reason": "length"}]}).into()),
            WireEvent::Done,
        ]
    );
}

/// S-17: a line over `max_frame_bytes`, split across reads, is a terminal `FrameTooLarge`.
pub async fn s_17_frame_too_large_over_the_wire(h: &dyn TransportHarness) {
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
    let t = chat_with(h, &src, frame_cap(128));
    let events = stream_events(&*t, &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::Chunk(json!({"n": 1}).into()),
            WireEvent::FrameTooLarge { limit: 128 }
        ]
    );
}

/// R-29: a stream past the source's `max_response_bytes` ends with `FrameTooLarge` at that
/// limit, before the read that crossed it is framed.
pub async fn r_29_stream_over_max_response_bytes(h: &dyn TransportHarness) {
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
    let events = stream_events(&*chat(h, &src), &src).await;
    assert_eq!(
        events,
        vec![
            WireEvent::KeepAlive(KeepAliveKind::Comment),
            WireEvent::KeepAlive(KeepAliveKind::Comment),
            WireEvent::FrameTooLarge { limit: 40 },
        ]
    );
}

/// R-27: a JSON body answering a streamed request is `Events` with its content type and one
/// `Chunk` of the whole body, then `End`.
pub async fn r_27_json_body_to_streamed_request_is_one_event(h: &dyn TransportHarness) {
    let body = br#"{"id":"c-1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json; charset=utf-8")],
        &[&body[..20], &body[20..]],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = chat(h, &src);
    let Ok(WireResponse::Events {
        content_type,
        events,
        ..
    }) = t.send(chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    assert_eq!(
        content_type.as_deref(),
        Some("application/json; charset=utf-8")
    );
    let expected: serde_json::Value = serde_json::from_slice(body).expect("JSON");
    assert_eq!(
        collect(events).await,
        vec![WireEvent::Chunk(expected.into()), WireEvent::End]
    );
}

/// CT-CHAT-04 (covers S-11): content decoding is the transport's: a gzip stream is decoded
/// before framing (and `accept-encoding` offers gzip), a gzip body is returned decoded.
// covers: S-11
pub async fn ct_chat_04_gzip_decoded_before_framing(h: &dyn TransportHarness) {
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
    let events = stream_events(&*chat(h, &src), &src).await;
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
    let Ok(WireResponse::Body(body)) = chat(h, &src).send(chat_plain(&src)).await else {
        panic!("Body expected");
    };
    assert_eq!(&body.bytes[..], b"{\"id\":\"x\"}");
}

/// CT-CHAT-06 as amended by R-28: bytes after `[DONE]` are not parsed, and a connection whose
/// body continues is closed, not reused (the next stream needs a new connection).
pub async fn r_28_connection_dropped_after_done_when_body_continues(h: &dyn TransportHarness) {
    let mut response = sse_head();
    response.extend_from_slice(&chunked(b"data: [DONE]\n\ndata: {\"late\":1}\n\n"));
    let mut server = RawServer::start(response, After::Hold).await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    let events = stream_events(&*t, &src).await;
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
    let _ = stream_events(&*t, &src).await;
    assert_eq!(
        server.accepted(),
        2,
        "the second stream needed a new connection"
    );
}

/// CT-CHAT-09: dropping the event stream closes the connection (the server observes EOF).
pub async fn ct_chat_09_dropping_the_stream_closes_the_connection(h: &dyn TransportHarness) {
    let mut response = sse_head();
    response.extend_from_slice(&chunked(b"data: {\"n\":1}\n\n"));
    let mut server = RawServer::start(response, After::Hold).await;
    let src = source(&server.base_url);
    let t = chat(h, &src);
    let Ok(WireResponse::Events { mut events, .. }) = t.send(chat_stream(&src)).await else {
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

/// S-7, CT-CHAT-09: an error body cut at `max_error_body_bytes` with the rest withheld is
/// truncated, and the half-read connection is closed rather than kept.
pub async fn s_7_truncated_error_body_connection_closed(h: &dyn TransportHarness) {
    let mut head = b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 4000\r\n\r\n".to_vec();
    head.extend(std::iter::repeat_n(b'x', 2000));
    let mut server = RawServer::start(head, After::Hold).await;
    let src = source(&server.base_url);
    let t = chat_with(h, &src, error_cap(100));
    let err = t.send(chat_plain(&src)).await.expect_err("500");
    assert!(
        matches!(err, WireFailure::Http { status: 500, ref body, .. } if body.len() == 100),
        "{err}"
    );
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "closed rather than pooled"
    );
}
