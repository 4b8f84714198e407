//! Tier 1 (05 R-30) of the executor's judgment on the wire: the completion verdict rows of 95 §8
//! (CF-201..CF-236) and the frame admission rows of 95 §5 (CF-099, CF-121), plus 40 S-33/S-97,
//! played by `gateway_testkit::ScriptedWire` and judged by `ChatExecutor` end to end (accumulator,
//! verdict, snapshot). Byte-exact framing is tier 2 (`adapter-openai/tests/judgment_cases.rs`).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;

use std::sync::Arc;

use exec::*;
use gateway_core::accumulate::WarningThrottle;
use gateway_core::attempt::{AttemptCtx, AttemptOutcome, AttemptRunner as _, LegControl};
use gateway_core::executor::{ChatExecutor, ExecutorOptions};
use gateway_ports::{Category, ReasonCode, ResponseMode, StreamEnd, UsageSource};
use serde_json::{Value, json};
use upstream_sim::script::{End, RawChunk};

/// `_THINK` of 95: one frame `{"role":"assistant","reasoning_content":"long thought"}`.
const THINK: &str = r#"{"role":"assistant","reasoning_content":"long thought"}"#;
const ROLE: &str = r#"{"role":"assistant"}"#;

fn ended(chunks: Vec<RawChunk>) -> Arc<gateway_testkit::ScriptedWire> {
    wire_of(vec![response(chunks, End::Eof)])
}

async fn text(chunks: Vec<RawChunk>) -> Run {
    run_text(ended(chunks)).await
}

async fn openai(chunks: Vec<RawChunk>) -> Run {
    run_openai(ended(chunks)).await
}

async fn text_salvage(chunks: Vec<RawChunk>) -> Run {
    run_on(
        ended(chunks),
        salvage_source(),
        request(ResponseMode::Text, true),
    )
    .await
}

async fn openai_salvage(chunks: Vec<RawChunk>) -> Run {
    run_on(
        ended(chunks),
        salvage_source(),
        request(ResponseMode::OpenAi, true),
    )
    .await
}

async fn body(mode: ResponseMode, text: &str) -> Run {
    run_on(json_body(0, text), source(), request(mode, false)).await
}

fn message_of(run: &Run) -> serde_json::Map<String, Value> {
    run.ok().completion.as_ref().unwrap().message().clone()
}

#[tokio::test(start_paused = true)]
async fn cf_201_eof_after_finish_with_measured_usage_is_complete() {
    for finish in ["stop", "length"] {
        let frames = || {
            vec![
                delta(0, r#"{"role":"assistant","content":"hel"}"#, None, None),
                delta(0, r#"{"content":"lo"}"#, Some(finish), Some(USAGE)),
            ]
        };
        for run in [text(frames()).await, openai(frames()).await] {
            let r = run.ok();
            assert_eq!(r.content, "hello");
            assert_eq!(r.stream_end, Some(StreamEnd::EofAfterFinish));
            assert_eq!(r.usage_source, UsageSource::Measured);
            assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (11, 7));
            assert_eq!(r.finish_reason.as_ref().map(|f| f.as_str()), Some(finish));
        }
        let run = openai(frames()).await;
        assert_eq!(
            run.ok().completion.as_ref().unwrap().finish_reason(),
            Some(finish)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn cf_202_openai_tool_call_without_done_is_eof_after_finish() {
    let tool = json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "lookup", "arguments": "{\"q\": 1}"}}]});
    let run = openai(vec![
        delta(0, &tool.to_string(), None, None),
        delta(0, "{}", Some("tool_calls"), None),
        usage_only(0),
    ])
    .await;
    let message = message_of(&run);
    assert_eq!(
        message["tool_calls"][0]["function"],
        json!({"name": "lookup", "arguments": "{\"q\": 1}"})
    );
    assert_eq!(run.ok().stream_end, Some(StreamEnd::EofAfterFinish));
    assert_eq!(run.ok().usage_source, UsageSource::Measured);
}

fn truncated_variants() -> Vec<Vec<RawChunk>> {
    let c = || delta(0, r#"{"role":"assistant","content":"partial"}"#, None, None);
    vec![
        vec![c(), usage_only(0)],
        vec![c(), delta(0, "{}", Some("stop"), None)],
        vec![c(), usage_only(0), delta(0, "{}", Some("stop"), None)],
        vec![c(), delta(0, "{}", Some("stop"), Some("{}"))],
    ]
}

#[tokio::test(start_paused = true)]
async fn cf_203_v_19_truncated_streams_fail_missing_done() {
    for frames in truncated_variants() {
        openai_salvage(frames.clone())
            .await
            .assert_fails(Category::Transient, ReasonCode::MissingDone);
        text(frames)
            .await
            .assert_fails(Category::Transient, ReasonCode::MissingDone);
    }
}

#[tokio::test(start_paused = true)]
async fn cf_204_v_17_text_salvage_delivers_with_estimated_usage() {
    let run = text_salvage(vec![content(0, "partial"), usage_only(0)]).await;
    let r = run.ok();
    assert_eq!(r.content, "partial");
    assert_eq!(r.stream_end, Some(StreamEnd::Salvaged));
    assert_eq!(r.usage_source, UsageSource::Estimated);
}

#[tokio::test(start_paused = true)]
async fn cf_205_missing_done_governs_only_true_truncation() {
    let complete = || vec![content(0, "x"), delta(0, "{}", Some("stop"), Some(USAGE))];
    assert_eq!(
        text(complete()).await.ok().stream_end,
        Some(StreamEnd::EofAfterFinish)
    );
    assert_eq!(
        text_salvage(complete()).await.ok().stream_end,
        Some(StreamEnd::EofAfterFinish)
    );
    for frames in [
        vec![content(0, "x")],
        vec![content(0, "x"), delta(0, "{}", Some("stop"), None)],
    ] {
        text(frames.clone())
            .await
            .assert_fails(Category::Transient, ReasonCode::MissingDone);
        assert_eq!(
            text_salvage(frames).await.ok().stream_end,
            Some(StreamEnd::Salvaged)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn cf_206_done_ends_the_stream() {
    let frames = || {
        vec![
            delta(0, r#"{"role":"assistant","content":"ok"}"#, None, None),
            delta(0, "{}", Some("stop"), Some(USAGE)),
            done(0),
        ]
    };
    for run in [text(frames()).await, openai(frames()).await] {
        assert_eq!(run.ok().stream_end, Some(StreamEnd::Done));
        assert_eq!(
            run.ok().finish_reason.as_ref().map(|f| f.as_str()),
            Some("stop")
        );
    }
}

#[tokio::test(start_paused = true)]
async fn cf_207_upstream_error_finish_fails_with_and_without_done() {
    for with_done in [true, false] {
        let frames = || {
            let mut f = vec![
                delta(0, r#"{"role":"assistant","content":"half"}"#, None, None),
                delta(0, "{}", Some("network_error"), Some(USAGE)),
            ];
            if with_done {
                f.push(done(0));
            }
            f
        };
        text(frames())
            .await
            .assert_fails(Category::Transient, ReasonCode::UpstreamFinishError);
        openai(frames())
            .await
            .assert_fails(Category::Transient, ReasonCode::UpstreamFinishError);
    }
}

#[tokio::test(start_paused = true)]
async fn cf_208_openai_thinking_only_length_is_delivered() {
    for with_done in [true, false] {
        let mut frames = vec![
            delta(0, THINK, None, None),
            delta(0, "{}", Some("length"), Some(USAGE)),
        ];
        if with_done {
            frames.push(done(0));
        }
        let run = openai(frames).await;
        let message = message_of(&run);
        assert_eq!(message["reasoning_content"], "long thought");
        assert!(
            message
                .get("content")
                .is_none_or(|c| c.is_null() || c == "")
        );
        assert_eq!(run.ok().thinking, "long thought");
        assert_eq!(
            run.ok().finish_reason.as_ref().map(|f| f.as_str()),
            Some("length")
        );
    }
}

/// 95 CF-209..CF-215 (V-74): `(first delta, finish, text outcome)`; openai delivers unless
/// stated.
// covers: CF-210, CF-211, CF-212, CF-213, CF-214
#[tokio::test(start_paused = true)]
async fn cf_209_to_cf_215_v_74_stream_outcome_table_by_mode() {
    type Row<'a> = (&'a str, &'a str, Option<(Category, ReasonCode)>, bool);
    let rows: [Row<'_>; 7] = [
        (
            THINK,
            "length",
            Some((Category::ResultInvalid, ReasonCode::LengthWithoutContent)),
            true,
        ),
        (
            ROLE,
            "length",
            Some((Category::ResultInvalid, ReasonCode::LengthWithoutContent)),
            true,
        ),
        (
            THINK,
            "content_filter",
            Some((Category::ResultInvalid, ReasonCode::FilteredWithoutContent)),
            true,
        ),
        (
            ROLE,
            "sensitive",
            Some((Category::ResultInvalid, ReasonCode::FilteredWithoutContent)),
            true,
        ),
        (
            THINK,
            "stop",
            Some((Category::Transient, ReasonCode::EmptyCompletion)),
            true,
        ),
        // README D22: a text-mode answer whose only output is a refusal.
        (
            r#"{"role":"assistant","refusal":"no"}"#,
            "stop",
            Some((Category::ResultInvalid, ReasonCode::Refused)),
            true,
        ),
        (
            ROLE,
            "stop",
            Some((Category::Transient, ReasonCode::EmptyCompletion)),
            false,
        ),
    ];
    for (first, finish, text_outcome, openai_delivers) in rows {
        let frames = || {
            vec![
                delta(0, first, None, None),
                delta(0, "{}", Some(finish), Some(USAGE)),
                done(0),
            ]
        };
        let run = text(frames()).await;
        if let Some((category, code)) = text_outcome {
            run.assert_fails(category, code);
        }
        let run = openai(frames()).await;
        if openai_delivers {
            assert!(
                matches!(run.outcome, AttemptOutcome::Success(_)),
                "{first} {finish}: {:?}",
                run.outcome
            );
        } else {
            run.assert_fails(Category::Transient, ReasonCode::EmptyCompletion);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn cf_216_cf_217_zero_output_with_done_is_empty_completion() {
    let rows: Vec<fn() -> Vec<RawChunk>> = vec![
        || vec![delta(0, THINK, None, None), usage_only(0), done(0)],
        || {
            vec![
                delta(0, ROLE, None, None),
                delta(0, "{}", Some("stop"), None),
                done(0),
            ]
        },
        || vec![delta(0, ROLE, None, None), done(0)],
    ];
    for frames in rows {
        text(frames())
            .await
            .assert_fails(Category::Transient, ReasonCode::EmptyCompletion);
        openai(frames())
            .await
            .assert_fails(Category::Transient, ReasonCode::EmptyCompletion);
    }
}

#[tokio::test(start_paused = true)]
async fn cf_218_openai_whitespace_content_is_kept() {
    let run = openai(vec![
        delta(
            0,
            r#"{"role":"assistant","content":"  "}"#,
            Some("stop"),
            Some(USAGE),
        ),
        done(0),
    ])
    .await;
    assert_eq!(message_of(&run)["content"], "  ");
}

#[tokio::test(start_paused = true)]
async fn cf_219_cf_220_cf_221_openai_tool_verdicts() {
    let tool = |t: Value| json!({"role": "assistant", "tool_calls": [t]}).to_string();
    let truncated =
        tool(json!({"index": 0, "id": "c", "type": "function", "function": {"arguments": "{\"q"}}));
    openai(vec![
        delta(0, &truncated, Some("length"), Some(USAGE)),
        done(0),
    ])
    .await
    .assert_fails(Category::ResultInvalid, ReasonCode::ToolTruncated);

    let nameless = json!({"role": "assistant", "content": "text", "tool_calls": [
        {"index": 0, "id": "c", "type": "function", "function": {"arguments": "{}"}}]});
    openai(vec![
        delta(0, &nameless.to_string(), Some("stop"), Some(USAGE)),
        done(0),
    ])
    .await
    .assert_fails(Category::Transient, ReasonCode::ToolIncomplete);

    let null_args = tool(
        json!({"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": null}}),
    );
    openai(vec![
        delta(0, &null_args, Some("tool_calls"), Some(USAGE)),
        done(0),
    ])
    .await
    .assert_fails(Category::ResultInvalid, ReasonCode::ToolArgumentsNull);
}

#[tokio::test(start_paused = true)]
async fn cf_222_null_refusal_and_tool_calls_are_kept_in_the_snapshot() {
    let run = openai(vec![
        delta(
            0,
            r#"{"role":"assistant","content":"ok","refusal":null,"tool_calls":null}"#,
            Some("stop"),
            Some(USAGE),
        ),
        done(0),
    ])
    .await;
    let message = message_of(&run);
    assert_eq!(message["content"], "ok");
    assert_eq!(message.get("refusal"), Some(&Value::Null));
    assert_eq!(run.ok().content, "ok");
}

fn body_of(message: Value, finish: Value) -> String {
    json!({"id": "chatcmpl-1", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7}})
    .to_string()
}

// covers: S-112
#[tokio::test(start_paused = true)]
async fn cf_223_non_stream_nulls_are_kept() {
    let b = body_of(
        json!({"role": "assistant", "content": "hi", "tool_calls": null, "refusal": null}),
        json!("stop"),
    );
    let run = body(ResponseMode::OpenAi, &b).await;
    assert_eq!(message_of(&run)["tool_calls"], Value::Null);
    assert_eq!(run.ok().stream_end, None);
}

/// 95 CF-224..CF-229 (V-75): non-stream rows in both modes.
// covers: CF-225, CF-226, CF-227, CF-228
#[tokio::test(start_paused = true)]
async fn cf_224_to_cf_229_v_75_non_stream_outcome_table() {
    type Row = (
        Value,
        Value,
        Option<(Category, ReasonCode)>,
        Option<(Category, ReasonCode)>,
    );
    let ri = Category::ResultInvalid;
    let t = Category::Transient;
    let rows: Vec<Row> = vec![
        (
            json!({"reasoning_content": "t"}),
            json!("length"),
            Some((ri, ReasonCode::LengthWithoutContent)),
            None,
        ),
        (
            json!({"content": ""}),
            json!("content_filter"),
            Some((ri, ReasonCode::FilteredWithoutContent)),
            None,
        ),
        (
            json!({"reasoning_content": "t"}),
            json!("stop"),
            Some((t, ReasonCode::EmptyCompletion)),
            None,
        ),
        (
            json!({"reasoning_content": "t"}),
            Value::Null,
            Some((t, ReasonCode::EmptyCompletion)),
            Some((t, ReasonCode::EmptyCompletion)),
        ),
        (
            json!({"content": "a"}),
            json!("network_error"),
            Some((t, ReasonCode::UpstreamFinishError)),
            Some((t, ReasonCode::UpstreamFinishError)),
        ),
        (json!({"content": "a"}), json!("length"), None, None),
    ];
    for (mut message, finish, text_outcome, openai_outcome) in rows {
        message["role"] = json!("assistant");
        let b = body_of(message.clone(), finish.clone());
        for (mode, expected) in [
            (ResponseMode::Text, text_outcome),
            (ResponseMode::OpenAi, openai_outcome),
        ] {
            let run = body(mode, &b).await;
            match expected {
                Some((category, code)) => run.assert_fails(category, code),
                None => {
                    assert!(
                        matches!(run.outcome, AttemptOutcome::Success(_)),
                        "{message} {finish} {mode:?}: {:?}",
                        run.outcome
                    );
                    assert_eq!(run.ok().stream_end, None);
                }
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn cf_230_v_38_non_stream_truncated_tool_is_judged_before_the_snapshot() {
    let b = body_of(
        json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{"}}]}),
        json!("length"),
    );
    body(ResponseMode::OpenAi, &b)
        .await
        .assert_fails(Category::ResultInvalid, ReasonCode::ToolTruncated);
}

#[tokio::test(start_paused = true)]
async fn cf_234_v_16_salvaged_content_is_judged_by_the_outcome_table() {
    let run = text_salvage(vec![
        content(0, "part"),
        delta(0, "{}", Some("length"), None),
    ])
    .await;
    let r = run.ok();
    assert_eq!(r.content, "part");
    assert_eq!(r.stream_end, Some(StreamEnd::Salvaged));
    assert_eq!(r.finish_reason.as_ref().map(|f| f.as_str()), Some("length"));
}

#[tokio::test(start_paused = true)]
async fn cf_236_openai_extra_choices_are_transient() {
    let two = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"}},
        {"index": 1, "message": {"role": "assistant", "content": "b"}}]});
    body(ResponseMode::OpenAi, &two.to_string())
        .await
        .assert_fails(Category::Transient, ReasonCode::ProtocolError);
    let index_one = frame(
        0,
        r#"{"choices":[{"index":1,"delta":{"role":"assistant","content":"x"}}]}"#,
    );
    openai(vec![index_one, done(0)])
        .await
        .assert_fails(Category::Transient, ReasonCode::ProtocolError);
}

#[tokio::test(start_paused = true)]
async fn cf_237_s_114_non_stream_without_role_is_a_protocol_error() {
    let b = body_of(json!({"content": "a"}), json!("stop"));
    body(ResponseMode::OpenAi, &b)
        .await
        .assert_fails(Category::Transient, ReasonCode::ProtocolError);
}

// ---- frame admission (40 S-33, S-97; 95 §5) -------------------------------------------------

// covers: S-120, V-42
#[tokio::test(start_paused = true)]
async fn cf_099_s_33_malformed_frame_is_transient_without_echo() {
    let run = text(vec![
        content(0, "a"),
        raw(0, "data: {not-json\n\n"),
        done(0),
    ])
    .await;
    run.assert_fails(Category::Transient, ReasonCode::MalformedJson);
    assert!(run.message().contains("malformed"));
    assert!(
        !run.message().contains("not-json"),
        "the payload is never echoed"
    );
    assert_eq!(run.wire.open_streams(), 0);
}

#[tokio::test(start_paused = true)]
async fn s_33_error_event_stops_the_stream_and_classifies_in_band() {
    let run = text(vec![
        content(0, "a"),
        raw(
            0,
            "event: error\ndata: {\"error\":{\"code\":429,\"message\":\"slow down\"}}\n\n",
        ),
        done(0),
    ])
    .await;
    run.assert_fails(Category::Transient, ReasonCode::RateLimited);
    assert_eq!(
        run.err().http_status(),
        None,
        "an in-band code never becomes http_status"
    );
}

#[tokio::test(start_paused = true)]
async fn s_35_error_key_chunk_fails_even_under_salvage_and_done() {
    let run = text_salvage(vec![
        content(0, "a"),
        frame(0, r#"{"error":null}"#),
        usage_only(0),
        done(0),
    ])
    .await;
    run.assert_fails(Category::Transient, ReasonCode::UpstreamErrorFrame);
}

// covers: V-42
#[tokio::test(start_paused = true)]
async fn s_97_case_034_unrecognized_excerpt_explains_a_zero_output_stream() {
    let html = "<html><body>502 Bad Gateway</body></html>\n";
    let run = text(vec![raw(0, html)]).await;
    run.assert_fails(Category::Transient, ReasonCode::EarlyEof);
    let body_text = run.err().failure().body_text.clone().unwrap();
    assert!(body_text.contains("502 Bad Gateway"), "{body_text}");
    let run = openai(vec![raw(0, html)]).await;
    run.assert_fails(Category::Transient, ReasonCode::MissingDone);
}

// covers: V-4
#[tokio::test(start_paused = true)]
async fn cf_121_s_115_unknown_field_conflict_and_unregistered_finish_warn_once_per_source() {
    let warnings = Arc::new(WarningThrottle::new());
    let req = request(ResponseMode::OpenAi, true);
    for _ in 0..2 {
        let wire = ended(vec![
            delta(
                0,
                r#"{"role":"assistant","content":"a","ext":1}"#,
                None,
                None,
            ),
            delta(0, r#"{"ext":2}"#, None, None),
            delta(0, "{}", Some("end_turn"), Some(USAGE)),
        ]);
        let run_executor = ChatExecutor::new(wire, req.clone())
            .with_options(ExecutorOptions::default().with_warnings(warnings.clone()));
        let out = run_executor
            .run(
                AttemptCtx::new("call-1", Arc::new(source())),
                None,
                LegControl::new(),
            )
            .await;
        let AttemptOutcome::Success(result) = out else {
            panic!("expected delivery, got {out:?}");
        };
        let message = result.completion.as_ref().unwrap().message();
        assert!(
            message.get("ext").is_none(),
            "the conflicting field is deleted"
        );
        assert_eq!(
            result.finish_reason.as_ref().map(|f| f.as_str()),
            Some("end_turn")
        );
    }
    assert_eq!(
        warnings.len(),
        2,
        "field:delta.ext and finish:end_turn, each once"
    );
}

/// `tool_frames()` of 95: role + `content: null`; tools index 1 (`b`) then index 0 (`a`);
/// argument continuations; finish `tool_calls`; chunk id `upstream-1`.
fn tool_frames() -> Vec<RawChunk> {
    let tools = json!({"role": "assistant", "content": null, "tool_calls": [
        {"index": 1, "id": "b", "type": "function", "function": {"name": "echo", "arguments": "{\"v\":"}},
        {"index": 0, "id": "a", "type": "function", "function": {"name": "echo", "arguments": "{"}}]});
    let rest = json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"v\": \"中\" }"}},
        {"index": 1, "function": {"arguments": "2}"}}]});
    vec![
        delta(0, &tools.to_string(), None, None),
        delta(10, &rest.to_string(), Some("tool_calls"), Some(USAGE)),
        done(0),
    ]
}

#[tokio::test(start_paused = true)]
async fn cf_112_cf_120_tool_frames_stream_in_openai_mode() {
    let run = openai(tool_frames()).await;
    let r = run.ok();
    let m = message_of(&run);
    assert_eq!(m["tool_calls"][0]["id"], "a");
    assert_eq!(
        m["tool_calls"][0]["function"]["arguments"],
        "{\"v\": \"中\" }"
    );
    assert_eq!(m["tool_calls"][1]["function"]["arguments"], "{\"v\":2}");
    assert_eq!(m["content"], Value::Null);
    assert_eq!(
        r.completion.as_ref().unwrap().response_id(),
        Some("upstream-1")
    );
    assert!(r.ttft_ms.is_some());
    assert_eq!(r.stall_count, Some(0));
    assert!(run.progress > 0, "R-12: the counter is > 0");
    // CF-120 / R-14: the transport receives only the WireRequest the core built.
    let sent = run.wire.requests();
    assert_eq!(sent.len(), 1);
    let body = &sent[0].body;
    assert_eq!(body["model"], "m-1");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"][0]["content"], "hi");
    assert!(sent[0].stream);
    assert_eq!(sent[0].call_id, "call-0001");
}

#[tokio::test(start_paused = true)]
async fn cf_113_non_stream_tool_message_is_returned_as_sent() {
    let message = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": 1}"}}]});
    let run = body(
        ResponseMode::OpenAi,
        &body_of(message.clone(), json!("tool_calls")),
    )
    .await;
    assert_eq!(Value::Object(message_of(&run)), message);
    let r = run.ok();
    assert_eq!((r.ttft_ms, r.stall_ms, r.stall_count), (None, None, None));
    assert_eq!(run.progress, 0);
    assert_eq!(run.wire.requests()[0].body["stream"], false);
    assert!(
        run.wire.requests()[0]
            .body
            .value()
            .get("stream_options")
            .is_none()
    );
}

#[tokio::test(start_paused = true)]
async fn cf_116_s_98_s_99_reasoning_alias_projection() {
    let stop = || delta(0, r#"{"content":"a"}"#, Some("stop"), Some(USAGE));
    let rows: Vec<(Vec<RawChunk>, &str)> = vec![
        (
            vec![
                delta(0, r#"{"reasoning":"r1"}"#, None, None),
                stop(),
                done(0),
            ],
            "r1",
        ),
        (
            vec![
                delta(
                    0,
                    r#"{"reasoning":"r1","reasoning_content":"rc"}"#,
                    None,
                    None,
                ),
                stop(),
                done(0),
            ],
            "rc",
        ),
        (
            vec![
                delta(
                    0,
                    r#"{"reasoning":"r1","reasoning_content":""}"#,
                    None,
                    None,
                ),
                stop(),
                done(0),
            ],
            "r1",
        ),
    ];
    for (frames, thinking) in rows {
        assert_eq!(text(frames).await.ok().thinking, thinking);
    }
    let b = body_of(
        json!({"role": "assistant", "content": "a", "reasoning": "nr"}),
        json!("stop"),
    );
    assert_eq!(body(ResponseMode::Text, &b).await.ok().thinking, "nr");
}
