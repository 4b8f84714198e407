//! Framing fixtures for the public wire cases (../cases 001, 002, 018, 019, 021, 022, 024, 025,
//! 027, 028, 034), bytes copied in, fed with the read boundaries each case marks. These assert the
//! framer's events only; the end-to-end versions through the transport and the core come later.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failing unwrap is a failing test"
)]

use adapter_openai::sse::{DEFAULT_MAX_FRAME_BYTES, SseEvent, SseFramer, SseKeepAlive, SseNotice};
use gateway_ports::ports::transport::ChunkJson;
use serde_json::Value;

/// Feeds each read in order, then the clean end of body.
fn frame_reads(reads: &[&[u8]]) -> Vec<SseEvent> {
    let mut framer = SseFramer::new(DEFAULT_MAX_FRAME_BYTES);
    let mut out = Vec::new();
    for read in reads {
        framer.push(read, &mut out);
    }
    framer.finish(&mut out);
    out
}

fn chunk(json: &str) -> SseEvent {
    SseEvent::Chunk(ChunkJson::parse(json).unwrap())
}

/// `choices[0].delta.content` of a `Chunk`.
fn content(event: &SseEvent) -> Option<String> {
    match event {
        SseEvent::Chunk(value) => value
            .to_value()
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// No parsed value anywhere holds a CR (case 025).
fn no_cr(value: &Value) -> bool {
    match value {
        Value::String(s) => !s.contains('\r'),
        Value::Array(items) => items.iter().all(no_cr),
        Value::Object(map) => map.iter().all(|(k, v)| !k.contains('\r') && no_cr(v)),
        _ => true,
    }
}

const COMMENT: SseEvent = SseEvent::KeepAlive(SseKeepAlive::Comment);

// ---- 001 / 002 -------------------------------------------------------------------------------

const C001_1: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}"#;
const C001_2: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{"content":" there."},"finish_reason":null}]}"#;
const C001_3: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"local-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

fn case_001_body() -> String {
    format!("data: {C001_1}\n\ndata: {C001_2}\n\ndata: {C001_3}\n\n")
}

#[test]
fn case_001_stream_ends_without_done_a_yields_end() {
    // S-29: clean end of body → `End`; completeness is the core's (S-1).
    let out = frame_reads(&[case_001_body().as_bytes()]);
    assert_eq!(
        out,
        vec![chunk(C001_1), chunk(C001_2), chunk(C001_3), SseEvent::End]
    );
}

#[test]
fn case_001_done_without_blank_line_b_is_flushed() {
    // S-28: the unterminated `data: [DONE]` at EOF is flushed and yields `Done` (terminal, no End).
    let body = format!("{}data: [DONE]", case_001_body());
    let out = frame_reads(&[body.as_bytes()]);
    assert_eq!(
        out,
        vec![chunk(C001_1), chunk(C001_2), chunk(C001_3), SseEvent::Done]
    );
}

const C002_1: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
const C002_2: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"content":"The three largest"},"logprobs":null,"finish_reason":null}]}"#;
const C002_3: &str = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"qwen","choices":[{"index":0,"delta":{"content":" cities are"},"logprobs":null,"finish_reason":null}]}"#;

fn case_002_body() -> String {
    format!("data: {C002_1}\n\ndata: {C002_2}\n\ndata: {C002_3}\n\n")
}

#[test]
fn case_002_stream_truncated_clean_close_a_yields_end() {
    let out = frame_reads(&[case_002_body().as_bytes()]);
    assert_eq!(
        out,
        vec![chunk(C002_1), chunk(C002_2), chunk(C002_3), SseEvent::End]
    );
}

#[test]
fn case_002_stream_truncated_cut_b_yields_no_terminal() {
    // S-29: a broken body is never `finish`ed; the framer yields no terminal and the transport
    // adds `ReadError`.
    let mut framer = SseFramer::new(DEFAULT_MAX_FRAME_BYTES);
    let mut out = Vec::new();
    framer.push(case_002_body().as_bytes(), &mut out);
    assert_eq!(out, vec![chunk(C002_1), chunk(C002_2), chunk(C002_3)]);
    assert!(!framer.is_finished());
}

// ---- 018 / 019: in-band errors pass as chunks (judged by the core, CT-CHAT-07) ----------------

#[test]
fn case_018_midstream_error_chunk_is_a_plain_chunk() {
    let c1 = r#"{"id":"gen-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"openai/gpt-4o","provider":"OpenAI","choices":[{"index":0,"delta":{"role":"assistant","content":"The answer is"},"finish_reason":null}]}"#;
    let c2 = r#"{"id":"gen-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"openai/gpt-4o","provider":"OpenAI","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#;
    let body = format!(": OPENROUTER PROCESSING\n\ndata: {c1}\n\ndata: {c2}\n\n");
    assert_eq!(
        frame_reads(&[body.as_bytes()]),
        vec![COMMENT, chunk(c1), chunk(c2), SseEvent::End]
    );
    // Variant C: followed by [DONE].
    let c3 = r#"{"model":"gpt-4o","error":{"message":"the server had an error processing your request"},"choices":[]}"#;
    let body = format!("data: {c3}\n\ndata: [DONE]\n\n");
    assert_eq!(
        frame_reads(&[body.as_bytes()]),
        vec![chunk(c3), SseEvent::Done]
    );
}

#[test]
fn case_019_context_error_only_event_is_a_plain_chunk() {
    let c = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#;
    let body = format!("data: {c}\n\n");
    assert_eq!(
        frame_reads(&[body.as_bytes()]),
        vec![chunk(c), SseEvent::End]
    );
    // D18 variants of the same error: an SSE field named `error`, and a raw JSON line.
    let body = format!("error: {c}\n\n");
    assert_eq!(
        frame_reads(&[body.as_bytes()]),
        vec![SseEvent::ErrorEvent { data: c.into() }, SseEvent::End]
    );
    let body = format!("{c}\n");
    assert_eq!(
        frame_reads(&[body.as_bytes()]),
        vec![SseEvent::ErrorEvent { data: c.into() }, SseEvent::End]
    );
}

// ---- 021 -------------------------------------------------------------------------------------

#[test]
fn case_021_openrouter_processing_comments() {
    let c1 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let c2 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{"role":"assistant","content":"亚"},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let c3 = r#"{"id":"gen-XXXX","provider":"OpenAI","model":"openai/gpt-4o-mini","object":"chat.completion.chunk","created":1700000000,"choices":[{"index":0,"delta":{},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"system_fingerprint":"fp_XXXX"}"#;
    let body = format!(
        ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\ndata: {c1}\n\n: keep-alive\n\ndata: {c2}\n\n:ping\ndata: {c3}\n\ndata: [DONE]\n\n"
    );
    let out = frame_reads(&[body.as_bytes()]);
    assert_eq!(
        out,
        vec![
            COMMENT,
            COMMENT,
            chunk(c1),
            COMMENT,
            chunk(c2),
            COMMENT, // `:ping` inside the block does not end it (S-19)
            chunk(c3),
            SseEvent::Done,
        ]
    );
    assert_eq!(content(&out[4]).as_deref(), Some("亚"));
}

// ---- 022 -------------------------------------------------------------------------------------

#[test]
fn case_022_dataless_event_after_keepalive() {
    let c1 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}"#;
    let c2 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#;
    let c3 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let body = format!(
        "retry: 3000\n\nid: 1\ndata: {c1}\n\n: ping\n\nid: 2\ndata: {c2}\n\nevent: ping\n\ndata:\n\nid: 3\ndata: {c3}\n\ndata: [DONE]\n\n"
    );
    let out = frame_reads(&[body.as_bytes()]);
    assert_eq!(
        out,
        vec![
            // `retry:` block: nothing (S-21)
            chunk(c1),
            COMMENT, // `: ping` + blank line: the comment only, no event (S-19, S-21)
            chunk(c2),
            // `event: ping` only: nothing (S-21)
            SseEvent::KeepAlive(SseKeepAlive::EmptyData), // `data:` (S-23)
            chunk(c3),
            SseEvent::Done,
        ]
    );
    let text: String = out.iter().filter_map(content).collect();
    assert_eq!(text, "Hello");
}

// ---- 024 -------------------------------------------------------------------------------------

#[test]
fn case_024_data_prefix_without_space() {
    let c1 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{"role":"assistant","content":"你好"},"finish_reason":null}]}"#;
    let c2 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{"content":"  world"},"finish_reason":null}]}"#;
    let c3 = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-v3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let body = format!("data:{c1}\n\ndata:{c2}\n\ndata:{c3}\n\ndata:[DONE]\n\n");
    let out = frame_reads(&[body.as_bytes()]);
    assert_eq!(out, vec![chunk(c1), chunk(c2), chunk(c3), SseEvent::Done]);
    let text: String = out.iter().filter_map(content).collect();
    assert_eq!(text, "你好  world");

    // Mixed forms in one stream.
    let body = format!("data:{c1}\n\ndata: {c2}\n\ndata:{c3}\n\ndata: [DONE]\n\n");
    assert_eq!(frame_reads(&[body.as_bytes()]), out);
}

// ---- 025 -------------------------------------------------------------------------------------

#[test]
fn case_025_crlf_split_across_reads_a() {
    let read1: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\r";
    let read2: &[u8] = b"\n\r\ndata: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n";
    let out = frame_reads(&[read1, read2]);
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(content(&out[0]).as_deref(), Some("Hi"));
    assert!(
        matches!(&out[1], SseEvent::Chunk(v) if v.to_value().pointer("/choices/0/finish_reason") == Some(&Value::from("stop")))
    );
    assert_eq!(out[2], SseEvent::Done);
    for event in &out {
        if let SseEvent::Chunk(v) = event {
            assert!(no_cr(&v.to_value()));
        }
    }
    // One read gives the same events.
    assert_eq!(frame_reads(&[&[read1, read2].concat()]), out);
}

#[test]
fn case_025_bare_cr_b() {
    let body: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\r\rdata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\rdata: [DONE]\r\r";
    let out = frame_reads(&[body]);
    assert_eq!(
        out,
        vec![
            chunk(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            SseEvent::Done,
        ]
    );
}

#[test]
fn case_025_mixed_terminators_c() {
    let body: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\r\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\r\ndata: [DONE]\r\n\n";
    let out = frame_reads(&[body]);
    assert_eq!(
        out,
        vec![
            chunk(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#),
            chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
            SseEvent::Done,
        ]
    );
}

// ---- 027 -------------------------------------------------------------------------------------

const C027_STOP: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"deepseek-v4-flash\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn case_027_utf8_split_across_reads_a_cjk() {
    let read1: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"deepseek-v4-flash\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\xe4";
    let read2: &[u8] =
        b"\xbf\xae\xe5\xa4\x8d\xe6\x96\xb9\xe6\xb3\x95\"},\"finish_reason\":null}]}\n\n";
    let out = frame_reads(&[read1, read2, C027_STOP]);
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(content(&out[0]).as_deref(), Some("修复方法"));
    assert!(matches!(out[1], SseEvent::Chunk(_)));
    assert_eq!(out[2], SseEvent::Done);
}

#[test]
fn case_027_utf8_split_across_reads_b_emoji() {
    let read1: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"deepseek-v4-flash\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok \xf0\x9f";
    let read2: &[u8] = b"\x8c\x8d\"},\"finish_reason\":null}]}\n\n";
    let out = frame_reads(&[read1, read2, C027_STOP]);
    assert_eq!(out.len(), 3, "{out:?}");
    assert_eq!(content(&out[0]).as_deref(), Some("ok 🌍"));
    assert_eq!(out[2], SseEvent::Done);
}

// ---- 028 -------------------------------------------------------------------------------------

const C028_BODY_AFTER_BOM: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"A\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\\ufeff\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn case_028_leading_bom_contiguous_a_and_split_b() {
    let a = frame_reads(&[&[b"\xef\xbb\xbf", C028_BODY_AFTER_BOM].concat()]);
    assert_eq!(a.len(), 4, "{a:?}");
    let text: String = a.iter().filter_map(content).collect();
    assert_eq!(text, "AB\u{feff}");
    assert_eq!(a[3], SseEvent::Done);

    let read3 = [b"\xbf", C028_BODY_AFTER_BOM].concat();
    let b = frame_reads(&[b"\xef", b"\xbb", &read3]);
    assert_eq!(a, b);
}

// ---- 034 -------------------------------------------------------------------------------------

#[test]
fn case_034_html_on_a_200_stream_is_unrecognized_only() {
    let body: &[u8] = b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";
    let out = frame_reads(&[body]);
    assert_eq!(out.len(), 8, "{out:?}");
    assert!(
        out[..7]
            .iter()
            .all(|e| matches!(e, SseEvent::Unrecognized { .. }))
    );
    assert_eq!(
        out[1],
        SseEvent::Unrecognized {
            excerpt: "<head><title>502 Bad Gateway</title></head>".into()
        }
    );
    assert_eq!(out[7], SseEvent::End);
}

#[test]
fn s_26_split_data_lines_notice_precedes_recovered_chunks() {
    // Not a public case; kept next to the fixtures as the one multi-chunk framing shape.
    let out = frame_reads(&[b"data: {\"a\":1}\ndata: {\"b\":2}\ndata: [DONE]\n\n"]);
    assert_eq!(
        out,
        vec![
            SseEvent::Notice(SseNotice::SplitDataLines),
            chunk(r#"{"a":1}"#),
            chunk(r#"{"b":2}"#),
            SseEvent::Done,
        ]
    );
}
