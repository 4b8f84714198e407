//! The second round of wire decisions at the executor, tier 1 (05 R-30: `ScriptedWire` on the
//! paused clock, judged by `ChatExecutor` end to end): README D20 (content sniffing, trailing
//! `data: [DONE]`), D21 (content parts), D22 (refusals), D27 (tool calls in text mode), D35
//! (changing chunk ids); and the public cases 040, 042, 043 and 050 (bytes copied from
//! `shared/cases/`, never read at test time).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;

use std::sync::Arc;

use exec::*;
use gateway_core::accumulate::{Admission, DialectWarning};
use gateway_ports::{Category, FailureReason, ReasonCode, ResponseMode, StreamEnd};
use serde_json::{Value, json};
use upstream_sim::script::{End, Headers, RawChunk, Response};

const TEXT: ResponseMode = ResponseMode::Text;
const OPENAI: ResponseMode = ResponseMode::OpenAi;

/// A 200 with this content type and these writes, then `end`.
fn typed(
    content_type: &str,
    chunks: Vec<RawChunk>,
    end: End,
) -> Arc<gateway_testkit::ScriptedWire> {
    wire_of(vec![Response {
        headers: Some(Headers::from_pairs([("content-type", content_type)])),
        chunks: Some(chunks),
        end,
        ..Response::default()
    }])
}

async fn stream_run(mode: ResponseMode, wire: Arc<gateway_testkit::ScriptedWire>) -> Run {
    run_on(wire, source(), request(mode, true)).await
}

async fn body_run(mode: ResponseMode, content_type: &str, body: &str) -> Run {
    run_on(
        typed(content_type, vec![raw(0, body)], End::Eof),
        source(),
        request(mode, false),
    )
    .await
}

/// `true` when the run raised `warning` for source `s1` (the throttle already holds it).
fn warned(run: &Run, warning: &DialectWarning) -> bool {
    run.warnings.admit("s1", warning) == Admission::Suppressed
}

const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;

// ── D20 ──────────────────────────────────────────────────────────────────────────────────────

#[tokio::test(start_paused = true)]
async fn d20_event_stream_labelled_json_is_framed_as_sse() {
    for mode in [TEXT, OPENAI] {
        let run = stream_run(
            mode,
            typed(
                "application/json",
                vec![
                    delta(0, r#"{"role":"assistant","content":"Hel"}"#, None, None),
                    delta(0, r#"{"content":"lo"}"#, Some("stop"), None),
                    done(0),
                ],
                End::Eof,
            ),
        )
        .await;
        assert_eq!(run.ok().content, "Hello", "{mode:?}");
        assert_eq!(run.ok().stream_end, Some(StreamEnd::Done));
    }
}

#[tokio::test(start_paused = true)]
async fn d20_json_completion_under_event_stream_is_read_as_a_body() {
    for mode in [TEXT, OPENAI] {
        let run = stream_run(
            mode,
            typed(
                "text/event-stream",
                vec![raw(0, "\n"), raw(0, COMPLETION)],
                End::Eof,
            ),
        )
        .await;
        assert_eq!(run.ok().content, "Paris.", "{mode:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn d20_json_then_trailing_done_is_that_json() {
    let trailed = format!("{COMPLETION}\n\n: keep-alive\n\ndata: [DONE]\n\n");
    for mode in [TEXT, OPENAI] {
        let run = body_run(mode, "application/json", &trailed).await;
        assert_eq!(run.ok().content, "Paris.", "{mode:?}");
        assert!(
            warned(&run, &DialectWarning::TrailingSse),
            "one dialect:trailing_sse"
        );
        // The same on a streamed request answered with a JSON body.
        let run = stream_run(
            mode,
            typed("application/json", vec![raw(0, &trailed)], End::Eof),
        )
        .await;
        assert_eq!(run.ok().content, "Paris.", "{mode:?} streamed");
    }
    // Anything else after the JSON stays invalid JSON.
    let run = body_run(
        TEXT,
        "application/json",
        &format!("{COMPLETION}\ndata: more"),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::InvalidJson);
}

// ── D21 ──────────────────────────────────────────────────────────────────────────────────────

const PARTS: &str = r#"[{"type":"thinking","thinking":[{"type":"text","text":"Let me think."}]},{"type":"text","text":"The answer is 4."}]"#;

#[tokio::test(start_paused = true)]
async fn d21_content_parts_in_a_body() {
    let body = format!(
        r#"{{"id":"x","model":"magistral","choices":[{{"index":0,"message":{{"role":"assistant","content":{PARTS}}},"finish_reason":"stop"}}]}}"#
    );
    let run = body_run(TEXT, "application/json", &body).await;
    assert_eq!(run.ok().content, "The answer is 4.");
    assert_eq!(run.ok().thinking, "Let me think.");
    let run = body_run(OPENAI, "application/json", &body).await;
    assert_eq!(run.ok().content, "The answer is 4.");
    let message = run.ok().completion.as_ref().unwrap().message().clone();
    assert_eq!(
        message["content"],
        serde_json::from_str::<Value>(PARTS).unwrap(),
        "fidelity keeps the raw array"
    );
}

#[tokio::test(start_paused = true)]
async fn d21_content_parts_in_a_stream_and_unknown_parts_skipped() {
    for mode in [TEXT, OPENAI] {
        let run = stream_run(
            mode,
            typed(
                "text/event-stream",
                vec![
                    delta(0, &format!(r#"{{"role":"assistant","content":{PARTS}}}"#), None, None),
                    delta(
                        0,
                        r#"{"content":[{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":" Done."}]}"#,
                        Some("stop"),
                        None,
                    ),
                    done(0),
                ],
                End::Eof,
            ),
        )
        .await;
        assert_eq!(run.ok().content, "The answer is 4. Done.", "{mode:?}");
        assert_eq!(run.ok().thinking, "Let me think.", "{mode:?}");
        assert!(warned(
            &run,
            &DialectWarning::UnknownContentPart {
                kind: "image_url".to_owned()
            }
        ));
    }
    // Any other non-string content stays a protocol error.
    let run = body_run(
        TEXT,
        "application/json",
        r#"{"choices":[{"index":0,"message":{"content":[1,2]},"finish_reason":"stop"}]}"#,
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::ProtocolError);
}

// ── D22 ──────────────────────────────────────────────────────────────────────────────────────

const REFUSAL_BODY: &str = r#"{"id":"r1","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I'm sorry, I can't help with that."},"finish_reason":"stop"}]}"#;

#[tokio::test(start_paused = true)]
async fn d22_text_mode_refusal_is_result_invalid_refused() {
    let run = body_run(TEXT, "application/json", REFUSAL_BODY).await;
    run.assert_fails(Category::ResultInvalid, ReasonCode::Refused);
    assert!(
        run.message().contains("I'm sorry, I can't help with that."),
        "{}",
        run.message()
    );
    // Streamed the same way.
    let run = stream_run(
        TEXT,
        sse(vec![
            delta(
                0,
                r#"{"role":"assistant","content":null,"refusal":"I'm sorry"}"#,
                None,
                None,
            ),
            delta(0, r#"{"refusal":", no."}"#, Some("stop"), None),
            done(0),
        ]),
    )
    .await;
    run.assert_fails(Category::ResultInvalid, ReasonCode::Refused);
    assert!(
        run.message().contains("I'm sorry, no."),
        "{}",
        run.message()
    );
}

#[tokio::test(start_paused = true)]
async fn d22_fidelity_mode_delivers_the_refusal() {
    let run = body_run(OPENAI, "application/json", REFUSAL_BODY).await;
    let message = run.ok().completion.as_ref().unwrap().message().clone();
    assert_eq!(
        message["refusal"],
        json!("I'm sorry, I can't help with that.")
    );
    assert_eq!(
        run.ok().finish_reason.as_ref().map(|f| f.as_str()),
        Some("stop")
    );
    let run = stream_run(
        OPENAI,
        sse(vec![
            delta(
                0,
                r#"{"role":"assistant","content":null,"refusal":"I'm sorry"}"#,
                None,
                None,
            ),
            delta(0, r#"{"refusal":", no."}"#, Some("stop"), None),
            done(0),
        ]),
    )
    .await;
    let message = run.ok().completion.as_ref().unwrap().message().clone();
    assert_eq!(message["refusal"], json!("I'm sorry, no."));
}

// ── D27 ──────────────────────────────────────────────────────────────────────────────────────

#[tokio::test(start_paused = true)]
async fn d27_tool_calls_in_text_mode_are_result_invalid() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
    let run = body_run(TEXT, "application/json", body).await;
    run.assert_fails(Category::ResultInvalid, ReasonCode::ToolCallsInTextMode);
    assert!(
        run.message().contains("openai response mode"),
        "{}",
        run.message()
    );
    let run = stream_run(
        TEXT,
        sse(vec![
            delta(
                0,
                r#"{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}"#,
                Some("tool_calls"),
                None,
            ),
            done(0),
        ]),
    )
    .await;
    run.assert_fails(Category::ResultInvalid, ReasonCode::ToolCallsInTextMode);
}

#[tokio::test(start_paused = true)]
async fn d27_empty_completion_reason_is_bad_response() {
    let run = stream_run(
        TEXT,
        sse(vec![
            delta(0, r#"{"role":"assistant"}"#, Some("stop"), None),
            done(0),
        ]),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::EmptyCompletion);
    assert_eq!(
        gateway_core::classify::failure_reason_of(run.err()),
        Some(FailureReason::BadResponse)
    );
}

// ── D35 ──────────────────────────────────────────────────────────────────────────────────────

#[tokio::test(start_paused = true)]
async fn d35_chunk_ids_that_change_are_accepted() {
    for mode in [TEXT, OPENAI] {
        let run = stream_run(
            mode,
            sse(vec![
                frame(0, r#"{"id":"a1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}"#),
                frame(0, r#"{"id":"b2","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#),
                frame(0, r#"{"id":"c3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#),
                done(0),
            ]),
        )
        .await;
        assert_eq!(run.ok().content, "Hello", "{mode:?}");
        assert!(warned(&run, &DialectWarning::ChunkIdChanges), "{mode:?}");
        if mode == OPENAI {
            assert_eq!(
                run.ok().completion.as_ref().unwrap().response_id(),
                Some("a1"),
                "first id kept"
            );
        }
    }
}

// ── public cases 040, 042, 043, 050 ─────────────────────────────────────────────────────────

const C040_A: [&str; 2] = [
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat","choices":[{"index":0,"delta":{"role":"assistant","content":"The capital"},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat","choices":[{"index":0,"delta":{"content":" of France"},"finish_reason":null}]}"#,
];
const C040_B: [&str; 2] = [
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat","choices":[{"index":0,"delta":{"role":"assistant","content":"Paris."},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-chat","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":14,"completion_tokens":2,"total_tokens":16}}"#,
];
const C040_C: [&str; 2] = [
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Let me work through"},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"reasoning_content":" the constraints one by one."},"finish_reason":null}]}"#,
];

#[tokio::test(start_paused = true)]
async fn case_040_a_b_reset_mid_stream_is_read_error() {
    for frames in [C040_A, C040_B] {
        for mode in [TEXT, OPENAI] {
            let chunks = frames.iter().map(|f| frame(0, f)).collect();
            let run = stream_run(mode, wire_of(vec![response(chunks, End::Reset)])).await;
            run.assert_fails(Category::Transient, ReasonCode::ReadError);
            assert_eq!(
                gateway_core::classify::failure_reason_of(run.err()),
                Some(FailureReason::NetworkError)
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn case_040_c_text_line_then_clean_end_is_truncated() {
    for mode in [TEXT, OPENAI] {
        let mut chunks: Vec<RawChunk> = C040_C.iter().map(|f| frame(0, f)).collect();
        chunks.push(raw(0, "upstream error: read ECONNRESET\n"));
        let run = stream_run(mode, wire_of(vec![response(chunks, End::Eof)])).await;
        run.assert_fails(Category::Transient, ReasonCode::MissingDone);
    }
}

const C042_A: [&str; 5] = [
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1}}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":14,"completion_tokens":2}}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":12,"total_tokens":15,"completion_tokens":3}}"#,
];

#[tokio::test(start_paused = true)]
async fn case_042_a_cumulative_usage_last_snapshot_never_summed() {
    for mode in [TEXT, OPENAI] {
        let mut chunks: Vec<RawChunk> = C042_A.iter().map(|f| frame(0, f)).collect();
        chunks.push(done(0));
        let run = stream_run(mode, sse(chunks)).await;
        assert_eq!(run.ok().content, "Hello world!");
        assert_eq!(
            (
                run.ok().usage.prompt_tokens,
                run.ok().usage.completion_tokens
            ),
            (12, 3)
        );
        assert_eq!(run.ok().stream_end, Some(StreamEnd::Done));
    }
}

#[tokio::test(start_paused = true)]
async fn case_042_b_usage_on_the_finish_chunk_is_eof_after_finish() {
    for mode in [TEXT, OPENAI] {
        let chunks: Vec<RawChunk> = C042_A[..4].iter().map(|f| frame(0, f)).collect();
        let run = stream_run(mode, sse(chunks)).await;
        assert_eq!(run.ok().content, "Hello world!");
        assert_eq!(run.ok().stream_end, Some(StreamEnd::EofAfterFinish));
        assert_eq!(run.ok().usage.completion_tokens, 3);
    }
}

#[tokio::test(start_paused = true)]
async fn case_042_c_cut_after_cumulative_usage_is_truncated() {
    for mode in [TEXT, OPENAI] {
        let chunks: Vec<RawChunk> = C042_A[..2].iter().map(|f| frame(0, f)).collect();
        let run = stream_run(mode, sse(chunks)).await;
        run.assert_fails(Category::Transient, ReasonCode::MissingDone);
    }
}

const C043: [&str; 5] = [
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"glm-x","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"glm-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0001","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"glm-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"glm-x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"city"}}]},"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"glm-x","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
];

#[tokio::test(start_paused = true)]
async fn case_043_tool_call_cut_by_length() {
    let chunks = || {
        let mut c: Vec<RawChunk> = C043.iter().map(|f| frame(0, f)).collect();
        c.push(done(0));
        c
    };
    // Fidelity: delivered with finish "length" and the call as received.
    let run = stream_run(OPENAI, sse(chunks())).await;
    let message = run.ok().completion.as_ref().unwrap().message().clone();
    assert_eq!(
        run.ok().finish_reason.as_ref().map(|f| f.as_str()),
        Some("length")
    );
    assert_eq!(message["tool_calls"][0]["id"], json!("call_0001"));
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        json!("{\"city")
    );
    assert_eq!(run.ok().stream_end, Some(StreamEnd::Done));
    // Text: length without content (not tool_calls_in_text_mode: the cut decides first).
    let run = stream_run(TEXT, sse(chunks())).await;
    run.assert_fails(Category::ResultInvalid, ReasonCode::LengthWithoutContent);
}

#[tokio::test(start_paused = true)]
async fn case_050_heartbeat_inside_a_data_line_is_malformed_json() {
    let first = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The quick"},"finish_reason":null}]}"#;
    let last = r#"{"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    for mode in [TEXT, OPENAI] {
        let chunks = vec![
            frame(0, first),
            raw(
                0,
                r#"data: {"id":"chatcmpl-XXXX","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" brown fo"#,
            ),
            raw(1000, ": heartbeat\n\n"),
            raw(0, "x\"},\"finish_reason\":null}]}\n\n"),
            frame(0, last),
            done(0),
        ];
        let run = stream_run(mode, sse(chunks)).await;
        run.assert_fails(Category::Transient, ReasonCode::MalformedJson);
        assert_eq!(
            gateway_core::classify::failure_reason_of(run.err()),
            Some(FailureReason::BadResponse)
        );
    }
}
