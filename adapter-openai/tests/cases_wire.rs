//! Public wire cases owned by the transport (05 R-32; cases README): the framing and HTTP facts
//! of 001 B, 002 B, 021, 022, 024, 025, 027, 028, 034 and the retained status, headers and body
//! of 030, 031, 032, 035. Each is replayed byte-exact by `upstream-sim` (one script write per
//! read the case marks) and read through the real client; the tests assert the `WireEvent`s or
//! the `WireFailure` facts. What the facts *mean* (complete, truncated, rate limited, context
//! overflow) is judged by `gateway-core` and tested there. The bytes are copied from
//! `shared/cases/NNN-*.md`; nothing is read from there at test time.

mod support;

use gateway_ports::config::SourceConfig;
use gateway_ports::error::{NetworkFaultKind, WireFailure};
use gateway_ports::ports::transport::{
    ChatTransport, ChunkJson, EmbeddingTransport, Endpoint, KeepAliveKind, WireEvent, WireResponse,
};
use serde_json::{Value, json};
use support::*;

/// A script replaying one response: status, headers in order, one write per chunk.
fn script(
    status: u16,
    headers: &[(&str, &str)],
    chunks: &[&[u8]],
    framing: &str,
    end: &str,
) -> String {
    let headers: Vec<Value> = headers.iter().map(|(n, v)| json!([n, v])).collect();
    let chunks: Vec<Value> = chunks.iter().map(|c| json!({"base64": b64(c)})).collect();
    json!({
        "version": 1,
        "responses": [{
            "status": status,
            "headers": headers,
            "chunks": chunks,
            "framing": framing,
            "end": end,
        }]
    })
    .to_string()
}

/// Replays an SSE body (chunked, 200) for a streamed chat request; returns the content type
/// and every event.
async fn replay_stream(
    content_type: &str,
    reads: &[&[u8]],
    end: &str,
) -> (Option<String>, Vec<WireEvent>) {
    let upstream = sim(&script(
        200,
        &[("content-type", content_type)],
        reads,
        "chunked",
        end,
    ));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    match ChatTransport::send(&t, chat_stream(&src)).await {
        Ok(WireResponse::Events {
            content_type,
            events,
            ..
        }) => {
            let events = collect(events).await;
            assert_one_terminal_last(&events);
            (content_type, events)
        }
        other => panic!("expected Events, got {other:?}"),
    }
}

/// Replays a non-200 response for a chat request (stream and non-stream alike) and returns the
/// `Http` facts.
async fn replay_status(
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
    framing: &str,
    stream: bool,
) -> (u16, Vec<(String, String)>, String) {
    let upstream = sim(&script(status, headers, &[body], framing, "eof"));
    let src = source(&upstream.base_url());
    let t = transport(&src);
    let req = if stream {
        chat_stream(&src)
    } else {
        chat_plain(&src)
    };
    match ChatTransport::send(&t, req).await {
        Err(WireFailure::Http {
            status,
            headers,
            body,
        }) => (status, headers, body),
        other => panic!("expected Http, got {other:?}"),
    }
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn chunk(text: &str) -> WireEvent {
    match ChunkJson::parse(text) {
        Ok(chunk) => WireEvent::Chunk(chunk),
        Err(e) => panic!("case JSON does not parse: {e}"),
    }
}

fn contents(events: &[WireEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            WireEvent::Chunk(v) => v.to_value()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned),
            _ => None,
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

// ---------------------------------------------------------------- 001 / 002: end of body

const C001_1: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}"#;
const C001_2: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{"content":" there."},"finish_reason":null}]}"#;
const C001_3: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

#[tokio::test]
async fn case_001_b_done_without_trailing_newline() {
    // S-28: the unterminated final `data: [DONE]` is flushed at the clean end of body.
    let events_part = format!("data: {C001_1}\n\ndata: {C001_2}\n\ndata: {C001_3}\n\n");
    let (_, events) = replay_stream(
        "text/event-stream",
        &[events_part.as_bytes(), b"data: [DONE]"],
        "eof",
    )
    .await;
    assert_eq!(
        events,
        vec![chunk(C001_1), chunk(C001_2), chunk(C001_3), WireEvent::Done]
    );
    assert_eq!(contents(&events), "Hello there.");
}

const C002_1: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
const C002_2: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"content":"The three largest"},"logprobs":null,"finish_reason":null}]}"#;
const C002_3: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"content":" cities are"},"logprobs":null,"finish_reason":null}]}"#;

#[tokio::test]
async fn case_002_b_reset_without_terminating_chunk_is_read_error() {
    // S-29: the connection is reset before the zero-length chunk → ReadError, never End.
    let body = format!("data: {C002_1}\n\ndata: {C002_2}\n\ndata: {C002_3}\n\n");
    let (_, events) = replay_stream("text/event-stream", &[body.as_bytes()], "reset").await;
    assert_eq!(&events[..3], &[chunk(C002_1), chunk(C002_2), chunk(C002_3)]);
    match &events[3] {
        WireEvent::ReadError(fault) => assert_eq!(fault.kind, NetworkFaultKind::Read),
        other => panic!("expected ReadError, got {other:?}"),
    }
    assert_eq!(events.len(), 4);
    assert_eq!(contents(&events), "The three largest cities are");
}

#[tokio::test]
async fn case_002_b_close_without_terminating_chunk_is_read_error() {
    // The "closed" reading of 002 B: FIN inside chunked framing (incomplete chunked read).
    let body = format!("data: {C002_1}\n\ndata: {C002_2}\n\ndata: {C002_3}\n\n");
    let upstream = sim(&script(
        200,
        &[
            ("content-type", "text/event-stream"),
            ("transfer-encoding", "chunked"),
        ],
        &[format!("{:x}\r\n{body}\r\n", body.len()).as_bytes()],
        "close",
        "eof",
    ));
    let src = source(&upstream.base_url());
    let Ok(WireResponse::Events { events, .. }) =
        ChatTransport::send(&transport(&src), chat_stream(&src)).await
    else {
        panic!("Events expected");
    };
    let events = collect(events).await;
    assert_one_terminal_last(&events);
    assert_eq!(&events[..3], &[chunk(C002_1), chunk(C002_2), chunk(C002_3)]);
    assert!(matches!(events[3], WireEvent::ReadError(_)), "{events:?}");
}

// ---------------------------------------------------------------- 021 / 022: comments, empty events

#[tokio::test]
async fn case_021_comment_keep_alives_before_and_among_events() {
    let d1 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let d2 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{"role":"assistant","content":"亚"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let d3 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let body = format!(
        ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\ndata: {d1}\n\n: keep-alive\n\ndata: {d2}\n\n:ping\ndata: {d3}\n\ndata: [DONE]\n\n"
    );
    let (_, events) = replay_stream("text/event-stream", &[body.as_bytes()], "eof").await;
    let comment = WireEvent::KeepAlive(KeepAliveKind::Comment);
    assert_eq!(
        events,
        vec![
            comment.clone(),
            comment.clone(),
            chunk(d1),
            comment.clone(),
            chunk(d2),
            comment,
            chunk(d3),
            WireEvent::Done,
        ]
    );
    assert_eq!(contents(&events), "亚");
}

#[tokio::test]
async fn case_022_dataless_blocks_and_empty_data() {
    let d1 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}"#;
    let d2 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#;
    let d3 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let body = format!(
        "retry: 3000\n\nid: 1\ndata: {d1}\n\n: ping\n\nid: 2\ndata: {d2}\n\nevent: ping\n\ndata:\n\nid: 3\ndata: {d3}\n\ndata: [DONE]\n\n"
    );
    let (_, events) = replay_stream("text/event-stream", &[body.as_bytes()], "eof").await;
    assert_eq!(
        events,
        vec![
            chunk(d1),
            WireEvent::KeepAlive(KeepAliveKind::Comment),
            chunk(d2),
            WireEvent::KeepAlive(KeepAliveKind::EmptyData),
            chunk(d3),
            WireEvent::Done,
        ]
    );
    assert_eq!(contents(&events), "Hello");
}

// ---------------------------------------------------------------- 024 / 025: field and line syntax

#[tokio::test]
async fn case_024_data_prefix_without_space() {
    let d1 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{"role":"assistant","content":"你好"},"finish_reason":null}]}"#;
    let d2 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{"content":"  world"},"finish_reason":null}]}"#;
    let d3 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let body = format!("data:{d1}\n\ndata:{d2}\n\ndata:{d3}\n\ndata:[DONE]\n\n");
    let (ct, events) =
        replay_stream("text/event-stream;charset=UTF-8", &[body.as_bytes()], "eof").await;
    assert_eq!(ct.as_deref(), Some("text/event-stream;charset=UTF-8"));
    assert_eq!(
        events,
        vec![chunk(d1), chunk(d2), chunk(d3), WireEvent::Done]
    );
    assert_eq!(contents(&events), "你好  world");
}

#[tokio::test]
async fn case_025_a_crlf_split_between_cr_and_lf() {
    let d1 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#;
    let d2 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let read1 = cat(&[b"data: ", d1.as_bytes(), b"\r"]);
    let read2 = cat(&[
        b"\n\r\ndata: ",
        d2.as_bytes(),
        b"\r\n\r\ndata: [DONE]\r\n\r\n",
    ]);
    let (_, events) =
        replay_stream("text/event-stream; charset=utf-8", &[&read1, &read2], "eof").await;
    assert_eq!(events, vec![chunk(d1), chunk(d2), WireEvent::Done]);
    assert_eq!(contents(&events), "Hi");
}

const C025_1: &str = r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
const C025_2: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

#[tokio::test]
async fn case_025_b_bare_cr_terminators() {
    let body = format!("data: {C025_1}\r\rdata: {C025_2}\r\rdata: [DONE]\r\r");
    let (_, events) = replay_stream("text/event-stream", &[body.as_bytes()], "eof").await;
    assert_eq!(events, vec![chunk(C025_1), chunk(C025_2), WireEvent::Done]);
}

#[tokio::test]
async fn case_025_c_mixed_terminators() {
    let body = format!("data: {C025_1}\r\n\ndata: {C025_2}\n\r\ndata: [DONE]\r\n\n");
    let (_, events) = replay_stream("text/event-stream", &[body.as_bytes()], "eof").await;
    assert_eq!(events, vec![chunk(C025_1), chunk(C025_2), WireEvent::Done]);
}

// ---------------------------------------------------------------- 027 / 028: bytes and decoding

const C027_STOP: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
const C027_HEAD: &[u8] = br#"data: {"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v4-flash","choices":[{"index":0,"delta":{"role":"assistant","content":""#;
const C027_TAIL: &[u8] = br#""},"finish_reason":null}]}"#;

async fn case_027(content_reads: (&[u8], &[u8]), expected: &str) {
    let read1 = cat(&[C027_HEAD, content_reads.0]);
    let read2 = cat(&[content_reads.1, C027_TAIL, b"\n\n"]);
    let read3 = format!("data: {C027_STOP}\n\ndata: [DONE]\n\n");
    let (_, events) = replay_stream(
        "text/event-stream",
        &[&read1, &read2, read3.as_bytes()],
        "eof",
    )
    .await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[1], chunk(C027_STOP));
    assert_eq!(events[2], WireEvent::Done);
    assert_eq!(contents(&events), expected);
    assert!(!contents(&events).contains('\u{fffd}'));
}

#[tokio::test]
async fn case_027_a_cjk_split_after_lead_byte() {
    case_027(
        (b"\xe4", b"\xbf\xae\xe5\xa4\x8d\xe6\x96\xb9\xe6\xb3\x95"),
        "修复方法",
    )
    .await;
}

#[tokio::test]
async fn case_027_b_emoji_split_two_and_two() {
    case_027((b"ok \xf0\x9f", b"\x8c\x8d"), "ok 🌍").await;
}

const C028_1: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"A"},"finish_reason":null}]}"#;
const C028_2: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"B\ufeff"},"finish_reason":null}]}"#;
const C028_3: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

fn case_028_rest() -> String {
    format!("data: {C028_1}\n\ndata: {C028_2}\n\ndata: {C028_3}\n\ndata: [DONE]\n\n")
}

#[tokio::test]
async fn case_028_a_leading_bom_contiguous() {
    let body = cat(&[b"\xef\xbb\xbf", case_028_rest().as_bytes()]);
    let (_, events) = replay_stream("text/event-stream", &[&body], "eof").await;
    assert_eq!(
        events,
        vec![chunk(C028_1), chunk(C028_2), chunk(C028_3), WireEvent::Done]
    );
    assert_eq!(contents(&events), "AB\u{feff}");
}

#[tokio::test]
async fn case_028_b_leading_bom_split_across_reads() {
    let read3 = cat(&[b"\xbf", case_028_rest().as_bytes()]);
    let (_, events) = replay_stream("text/event-stream", &[b"\xef", b"\xbb", &read3], "eof").await;
    assert_eq!(
        events,
        vec![chunk(C028_1), chunk(C028_2), chunk(C028_3), WireEvent::Done]
    );
    assert_eq!(contents(&events), "AB\u{feff}");
}

// ---------------------------------------------------------------- 034: HTML instead of JSON

const C034_A_HTML: &str = "<!DOCTYPE html>\n<html lang=\"en-US\"><head><title>api.example.com | 520: Web server is returning an unknown error</title></head>\n<body><div id=\"cf-error-details\"><h1>Web server is returning an unknown error</h1><span>Error code 520</span>\n<p>Cloudflare Ray ID: <RAY_ID> &bull; Your IP: <CLIENT_IP> &bull; Performance &amp; security by Cloudflare</p></div></body></html>\n";
const C034_B_HTML: &str = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";

#[tokio::test]
async fn case_034_a_cloudflare_520_html() {
    for stream in [true, false] {
        let (status, headers, body) = replay_status(
            520,
            &[
                ("Content-Type", "text/html; charset=UTF-8"),
                ("Server", "cloudflare"),
                ("CF-RAY", "<RAY_ID>"),
            ],
            C034_A_HTML.as_bytes(),
            "chunked",
            stream,
        )
        .await;
        assert_eq!(status, 520);
        assert_eq!(
            header(&headers, "content-type"),
            ["text/html; charset=UTF-8"]
        );
        assert_eq!(header(&headers, "server"), ["cloudflare"]);
        assert_eq!(header(&headers, "cf-ray"), ["<RAY_ID>"]);
        assert_eq!(
            body, C034_A_HTML,
            "retained raw; summarising and redaction are the core's"
        );
    }
}

#[tokio::test]
async fn case_034_b_nginx_502_html_with_content_length() {
    let (status, headers, body) = replay_status(
        502,
        &[("Content-Type", "text/html"), ("Server", "nginx")],
        C034_B_HTML.as_bytes(),
        "content_length",
        true,
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(header(&headers, "server"), ["nginx"]);
    assert_eq!(
        header(&headers, "content-length"),
        [C034_B_HTML.len().to_string().as_str()]
    );
    assert_eq!(body, C034_B_HTML);
}

#[tokio::test]
async fn case_034_html_with_status_200_on_a_stream_is_unrecognized_lines() {
    // The case's last point: HTML under 200 on a streamed request. Not SSE, not `{`: every line
    // is `Unrecognized` (S-20, S-30, R-26), then the clean end; the core finds no content.
    let (ct, events) = replay_stream("text/html", &[C034_B_HTML.as_bytes()], "eof").await;
    assert_eq!(ct.as_deref(), Some("text/html"));
    let lines: Vec<WireEvent> = C034_B_HTML
        .lines()
        .map(|l| WireEvent::Unrecognized {
            excerpt: l.to_owned(),
        })
        .collect();
    assert_eq!(&events[..events.len() - 1], &lines[..]);
    assert_eq!(events.last(), Some(&WireEvent::End));
}

// ---------------------------------------------------------------- 030 / 031 / 032: 429 facts

const C030_BODY_A: &str = r#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 33 seconds."}}"#;

#[tokio::test]
async fn case_030_a_429_retry_after_headers_retained() {
    for stream in [true, false] {
        let (status, headers, body) = replay_status(
            429,
            &[
                ("Content-Type", "application/json"),
                ("Retry-After", "33"),
                ("retry-after-ms", "33000"),
                ("x-ratelimit-remaining-requests", "79"),
                ("x-ratelimit-remaining-tokens", "0"),
            ],
            C030_BODY_A.as_bytes(),
            "chunked",
            stream,
        )
        .await;
        assert_eq!(status, 429);
        assert_eq!(header(&headers, "retry-after"), ["33"]);
        assert_eq!(header(&headers, "retry-after-ms"), ["33000"]);
        assert_eq!(header(&headers, "x-ratelimit-remaining-requests"), ["79"]);
        assert_eq!(header(&headers, "x-ratelimit-remaining-tokens"), ["0"]);
        assert_eq!(body, C030_BODY_A);
    }
}

#[tokio::test]
async fn case_030_b_ms_header_only() {
    let body = C030_BODY_A.replace("33 seconds", "2 seconds");
    let (status, headers, got) = replay_status(
        429,
        &[
            ("Content-Type", "application/json"),
            ("retry-after-ms", "1500"),
        ],
        body.as_bytes(),
        "chunked",
        true,
    )
    .await;
    assert_eq!(status, 429);
    assert_eq!(header(&headers, "retry-after-ms"), ["1500"]);
    assert!(header(&headers, "retry-after").is_empty());
    assert_eq!(got, body);
}

#[tokio::test]
async fn case_030_c_hint_only_in_the_message() {
    // R-60: no phrase search for hints (G-19); the adapter only retains the body.
    let body = C030_BODY_A.replace("33 seconds", "45 seconds");
    let (status, headers, got) = replay_status(
        429,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
        "chunked",
        false,
    )
    .await;
    assert_eq!(status, 429);
    assert!(header(&headers, "retry-after").is_empty());
    assert!(header(&headers, "retry-after-ms").is_empty());
    assert_eq!(got, body);
}

#[tokio::test]
async fn case_031_retry_after_http_date_and_other_forms_retained_as_received() {
    let body = r#"{"error":{"message":"Rate limit reached for requests. Please slow down.","type":"rate_limit_error","code":"rate_limit_exceeded"}}"#;
    for value in [
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "Wed, 21 Oct 2015 07:26:00 GMT",
        "soon",
        "1.5",
        "-5",
        "Wednesday, 21-Oct-15 07:28:00 GMT",
    ] {
        let (status, headers, got) = replay_status(
            429,
            &[
                ("Date", "Wed, 21 Oct 2015 07:27:00 GMT"),
                ("Retry-After", value),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
            "chunked",
            true,
        )
        .await;
        assert_eq!(status, 429);
        assert_eq!(header(&headers, "retry-after"), [value]);
        assert_eq!(header(&headers, "date"), ["Wed, 21 Oct 2015 07:27:00 GMT"]);
        assert_eq!(got, body);
    }
}

#[tokio::test]
async fn case_032_huge_retry_after_on_azure_embeddings() {
    let body = r#"{"error":{"code":"429","message":"Requests to the Embeddings_Create Operation under Azure OpenAI API version 2024-02-15-preview have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds."}}"#;
    // The Azure deployment path is not an OpenAI path: the response matches it explicitly.
    let mut scripted: Value = serde_json::from_str(&script(
        429,
        &[
            ("Content-Type", "application/json"),
            ("Retry-After", "86400"),
        ],
        &[body.as_bytes()],
        "chunked",
        "eof",
    ))
    .unwrap();
    scripted["responses"][0]["match"] = json!({"path": "/openai/deployments/dep-1/embeddings"});
    let upstream = sim(&scripted.to_string());
    let mut src = SourceConfig {
        auth_style: gateway_ports::vocab::AuthStyle::ApiKeyHeader,
        ..source(&format!("{}/openai/deployments/dep-1", upstream.addr_url()))
    };
    src.query
        .insert("api-version".to_owned(), "2024-02-15-preview".to_owned());
    let t = transport(&src);
    let req = request(
        &src,
        Endpoint::Embeddings,
        json!({"model": "m-1", "input": ["a", "b", "c"]}),
        false,
    );
    match EmbeddingTransport::send(&t, req).await {
        Err(WireFailure::Http {
            status,
            headers,
            body: got,
        }) => {
            assert_eq!(status, 429);
            assert_eq!(header(&headers, "retry-after"), ["86400"]);
            assert_eq!(got, body);
        }
        other => panic!("expected Http, got {other:?}"),
    }
    let r = &upstream.wait_for_requests(1).await[0];
    assert_eq!(
        r.path,
        "/openai/deployments/dep-1/embeddings?api-version=2024-02-15-preview"
    );
}

/// `http://ADDR` of a simulator, without the `/v1` prefix.
trait AddrUrl {
    fn addr_url(&self) -> String;
}

impl AddrUrl for upstream_sim::SimHandle {
    fn addr_url(&self) -> String {
        format!("http://{}", self.addr())
    }
}

// ---------------------------------------------------------------- 035: context overflow bodies

#[tokio::test]
async fn case_035_context_overflow_bodies_retained_with_their_status() {
    let rows: [(&str, u16, &str, &str); 5] = [
        (
            "A",
            400,
            "application/json",
            r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            "B",
            500,
            "application/json; charset=utf-8",
            r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
        ),
        (
            "C",
            400,
            "application/json; charset=utf-8",
            r#"{"error":{"code":400,"message":"request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4390,"n_ctx":4096}}"#,
        ),
        (
            "D",
            400,
            "application/json",
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            "E",
            400,
            "application/json",
            r#"{"error":{"code":400,"message":"prompt is too long: 1284668 tokens > 1000000 maximum"}}"#,
        ),
    ];
    for (variant, status, content_type, body) in rows {
        for stream in [true, false] {
            let (got_status, headers, got_body) = replay_status(
                status,
                &[("Content-Type", content_type)],
                body.as_bytes(),
                "chunked",
                stream,
            )
            .await;
            assert_eq!(got_status, status, "035 {variant}");
            assert_eq!(
                header(&headers, "content-type"),
                [content_type],
                "035 {variant}"
            );
            assert_eq!(
                got_body, body,
                "035 {variant}: the body the D14 markers are read from"
            );
        }
    }
}
