//! Chunk accumulation (40 §4–§6, §9–§13; README D12, D13, D15, D16, D17; 05 R-29, R-42):
//! table tests per S-rule and the accumulator rows CF-123..CF-157 and CF-238..CF-240 of 95 §6, §9.
//! The wire cases are in `cases_accumulate.rs`, the invariants in `accumulate_props.rs`.

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly on purpose")]

use std::time::{Duration, UNIX_EPOCH};

use gateway_core::accumulate::{
    AccumulateError, AccumulateOptions, Accumulated, Accumulator, Admission, DialectWarning,
    MAX_TOOL_SLOTS, ProtocolViolation, SATURATION_MESSAGE, ToolArguments, WARNING_CAPACITY,
    WarningThrottle, measured_usage, parse_non_stream_body, synthesized_tool_id,
};
use gateway_core::classify::ClassifyContext;
use gateway_ports::{
    Category, CompletionShapeError, ErrorOperation, ReasonCode, ResponseMode, UsageSource,
    WireNotice,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const OPENAI: ResponseMode = ResponseMode::OpenAi;
const TEXT: ResponseMode = ResponseMode::Text;
const CALL_ID: &str = "0b6f3c1e-8d4a-4f7e-9a51-2c3d4e5f6a7b";

fn opts() -> AccumulateOptions {
    AccumulateOptions::new(CALL_ID, "qwen_1")
}

fn ctx() -> ClassifyContext<'static> {
    ClassifyContext::new(
        "qwen_1",
        ErrorOperation::Chat,
        UNIX_EPOCH + Duration::from_secs(1_767_225_600),
    )
}

/// `chunk(delta)` of 40 §15: `{"id": "upstream-1", "choices": [{"index": 0, "delta": …}]}`.
fn chunk(delta: Value) -> Value {
    json!({"id": "upstream-1", "choices": [{"index": 0, "delta": delta}]})
}

fn chunk_fin(delta: Value, finish: &str) -> Value {
    json!({"id": "upstream-1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage_frame() -> Value {
    json!({"id": "upstream-1", "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}})
}

/// `tool_frames()` of 40 §15 / 95 conventions.
fn tool_frames() -> Vec<Value> {
    vec![
        chunk(json!({"role": "assistant", "content": null})),
        chunk(json!({"tool_calls": [
            {"index": 1, "id": "b", "type": "function", "function": {"name": "echo", "arguments": "{\"v\":"}},
            {"index": 0, "id": "a", "type": "function", "function": {"name": "echo", "arguments": "{"}}
        ]})),
        chunk_fin(
            json!({"tool_calls": [
                {"index": 0, "function": {"arguments": "\"v\": \"中\" }"}},
                {"index": 1, "function": {"arguments": "2}"}}
            ]}),
            "tool_calls",
        ),
    ]
}

fn run(mode: ResponseMode, chunks: &[Value]) -> Result<Accumulated, AccumulateError> {
    let mut acc = Accumulator::new(mode, opts());
    for c in chunks {
        acc.push_chunk(c)?;
    }
    Ok(acc.finish())
}

fn progress_of(mode: ResponseMode, chunks: &[Value]) -> Vec<bool> {
    let mut acc = Accumulator::new(mode, opts());
    chunks
        .iter()
        .map(|c| acc.push_chunk(c).unwrap().is_progress())
        .collect()
}

fn push_err(mode: ResponseMode, chunks: &[Value]) -> AccumulateError {
    run(mode, chunks).unwrap_err()
}

fn protocol(v: ProtocolViolation) -> AccumulateError {
    AccumulateError::Protocol(v)
}

fn message(acc: &Accumulated) -> &Map<String, Value> {
    acc.message.as_ref().unwrap()
}

fn tools(acc: &Accumulated) -> Vec<Value> {
    message(acc)["tool_calls"].as_array().unwrap().clone()
}

fn body(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

// ---- 95 §6 accumulator rows -------------------------------------------------------------

#[test]
fn cf_123_tool_frames_merge_in_index_order() {
    let acc = run(OPENAI, &tool_frames()).unwrap();
    let tools = tools(&acc);
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["id"], "a");
    assert_eq!(tools[1]["id"], "b");
    assert_eq!(tools[0]["function"]["arguments"], "{\"v\": \"中\" }");
    assert_eq!(tools[1]["function"]["arguments"], "{\"v\":2}");
    assert!(
        tools.iter().all(|t| t.get("index").is_none()),
        "index never emitted (S-65)"
    );
    assert_eq!(message(&acc)["content"], Value::Null);
    assert_eq!(acc.response_id.as_deref(), Some("upstream-1"));
    assert_eq!(acc.finish_reason.as_ref().unwrap().as_str(), "tool_calls");
    let completion = acc.completion().unwrap().unwrap();
    assert_eq!(completion.tool_calls().len(), 2);
    assert_eq!(completion.response_id(), Some("upstream-1"));
}

// covers: S-54, S-76, S-121
#[test]
fn cf_124_final_role_absent_user_or_tool_fails() {
    // Role never set → the snapshot fails at finish (S-75, S-76).
    let acc = run(OPENAI, &[chunk(json!({"content": "hi"}))]).unwrap();
    assert_eq!(
        acc.completion().unwrap().unwrap_err(),
        protocol(ProtocolViolation::Snapshot(CompletionShapeError::Role))
    );
    // A non-assistant role in a delta fails at the chunk (S-54).
    for role in ["user", "tool"] {
        assert_eq!(
            push_err(OPENAI, &[chunk(json!({"role": role}))]),
            protocol(ProtocolViolation::RoleNotAssistant)
        );
    }
    // Non-stream: role absent, user, tool → role failure before the verdict (S-111, S-114).
    for msg in [
        json!({"content": "ok"}),
        json!({"role": "user", "content": "ok"}),
        json!({"role": "tool", "content": "ok"}),
    ] {
        let b = body(json!({"choices": [{"message": msg}]}));
        assert_eq!(
            parse_non_stream_body(&b, OPENAI, &opts()).unwrap_err(),
            protocol(ProtocolViolation::RoleNotAssistant)
        );
    }
}

// covers: S-75, S-121
#[test]
fn cf_125_bad_tool_fails_snapshot_missing_id_is_synthesized() {
    let good = json!({"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": "lookup", "arguments": "{\"q\": 1}"}});
    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut t = good.clone();
        f(&mut t);
        vec![chunk_fin(
            json!({"role": "assistant", "content": "text", "tool_calls": [t]}),
            "tool_calls",
        )]
    };
    let cases: Vec<Vec<Value>> = vec![
        mutate(&|t| t["type"] = json!("custom")),
        mutate(&|t| {
            t["function"].as_object_mut().unwrap().remove("name");
        }),
        mutate(&|t| {
            t["function"].as_object_mut().unwrap().remove("arguments");
        }),
    ];
    for frames in cases {
        let acc = run(OPENAI, &frames).unwrap();
        assert_eq!(
            acc.completion().unwrap().unwrap_err(),
            protocol(ProtocolViolation::Snapshot(CompletionShapeError::ToolShape)),
            "content does not rescue a bad tool"
        );
    }
    // arguments 12 already fails at the chunk.
    assert_eq!(
        push_err(OPENAI, &mutate(&|t| t["function"]["arguments"] = json!(12))),
        protocol(ProtocolViolation::FunctionArgumentsType)
    );
    // Changed by D13: no id → a synthesized id, delivered, one warning.
    let acc = run(
        OPENAI,
        &mutate(&|t| {
            t.as_object_mut().unwrap().remove("id");
        }),
    )
    .unwrap();
    let id = tools(&acc)[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(id, synthesized_tool_id("upstream-1", 0));
    assert!(acc.completion().unwrap().is_ok());
    assert_eq!(acc.warnings, vec![DialectWarning::SynthesizedToolId]);
    assert!(acc.any_synthesized_tool_id());
}

// covers: S-53, S-59, S-121, V-46
#[test]
fn cf_126_invalid_deltas_fail_at_the_chunk_index_null_accepted() {
    let rows = [
        (json!([]), ProtocolViolation::DeltaNotObject),
        (
            json!({"tool_calls": {}}),
            ProtocolViolation::ToolCallsNotArray,
        ),
        (json!({"content": []}), ProtocolViolation::ContentType),
        (json!({"role": "user"}), ProtocolViolation::RoleNotAssistant),
        (
            json!({"tool_calls": [{"index": true, "id": "a"}]}),
            ProtocolViolation::ToolIndex,
        ),
        (
            json!({"tool_calls": [{"index": -1, "id": "a"}]}),
            ProtocolViolation::ToolIndex,
        ),
        (
            json!({"tool_calls": [{"index": 0, "function": {"arguments": 12}}]}),
            ProtocolViolation::FunctionArgumentsType,
        ),
    ];
    for (delta, violation) in rows {
        let mut acc = Accumulator::new(OPENAI, opts());
        assert_eq!(
            acc.push_chunk(&chunk(delta.clone())).unwrap_err(),
            protocol(violation),
            "{delta}"
        );
        // The failure sticks for the rest of the attempt.
        assert!(acc.push_chunk(&chunk(json!({"content": "x"}))).is_err());
    }
    // Changed by D13: index null is accepted and resolved by S-61.
    let acc = run(
        OPENAI,
        &[chunk(json!({"role": "assistant", "tool_calls": [
            {"index": null, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]}))],
    )
    .unwrap();
    assert_eq!(tools(&acc)[0]["id"], "a");
}

// covers: S-77, S-78
#[test]
fn cf_127_repeated_identity_not_progress_new_id_opens_a_call() {
    let same = chunk(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function"}]}));
    let other = chunk(json!({"tool_calls": [{"index": 0, "id": "other"}]}));
    assert_eq!(
        progress_of(OPENAI, &[same.clone(), same.clone(), other.clone()]),
        [true, false, true]
    );
    let acc = run(OPENAI, &[same.clone(), same, other]).unwrap();
    let tools = tools(&acc);
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["id"], "a", "never concatenated");
    assert_eq!(tools[1]["id"], "other");
}

// covers: S-78
#[test]
fn cf_128_role_only_empty_and_empty_content_are_not_progress() {
    for mode in [OPENAI, TEXT] {
        assert_eq!(
            progress_of(
                mode,
                &[
                    chunk(json!({"role": "assistant"})),
                    chunk(json!({})),
                    chunk(json!({"content": ""})),
                ]
            ),
            [false, false, false]
        );
    }
}

// covers: S-112, V-35
#[test]
fn cf_129_non_stream_keeps_extensions_and_truncated_arguments() {
    let input = json!({"id": "r1", "choices": [{"index": 0, "finish_reason": "length", "message": {
        "role": "assistant", "content": null, "extension": {"nested": [1]},
        "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{\"unfinished\":"}}]
    }}], "usage": {"extra": 3}});
    let acc = parse_non_stream_body(&body(input.clone()), OPENAI, &opts()).unwrap();
    let msg = message(&acc);
    assert_eq!(msg["extension"], json!({"nested": [1]}));
    assert_eq!(
        msg["tool_calls"][0]["function"]["arguments"],
        "{\"unfinished\":"
    );
    assert_eq!(Value::Object(msg.clone()), input["choices"][0]["message"]);
    assert_eq!(acc.usage_raw.as_ref().unwrap()["extra"], 3);
    assert_eq!(acc.finish_reason.as_ref().unwrap().as_str(), "length");
    assert!(acc.tool_arguments_unparsable(), "R-42: cut arguments");
    // Deep copy: mutating the result does not touch a second parse or the snapshot.
    let completion = acc.completion().unwrap().unwrap();
    let mut copy = acc.clone();
    copy.message
        .as_mut()
        .unwrap()
        .insert("extension".into(), json!(0));
    assert_eq!(completion.message()["extension"], json!({"nested": [1]}));
}

#[test]
fn cf_130_non_stream_openai_single_choice_only() {
    let rows = [
        (json!([]), ProtocolViolation::SingleChoiceOnly),
        (
            json!([{"index": 1, "message": {}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (json!([{}, {}]), ProtocolViolation::SingleChoiceOnly),
        (
            json!([{"index": null, "message": {"role": "assistant"}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (json!([7]), ProtocolViolation::ChoiceNotObject),
        (json!({}), ProtocolViolation::ChoicesNotArray),
    ];
    for (choices, violation) in rows {
        let b = body(json!({"choices": choices}));
        assert_eq!(
            parse_non_stream_body(&b, OPENAI, &opts()).unwrap_err(),
            protocol(violation)
        );
    }
}

// covers: S-60
#[test]
fn cf_131_explicit_empty_tool_calls_kept() {
    let acc = run(
        OPENAI,
        &[chunk(
            json!({"role": "assistant", "content": "x", "tool_calls": []}),
        )],
    )
    .unwrap();
    assert_eq!(message(&acc)["tool_calls"], json!([]));
}

// covers: S-55, S-75, S-108
#[test]
fn cf_132_fragments_concatenate_exactly_and_usage_is_isolated() {
    let mut usage = json!({"id": "upstream-1", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "nested": 9}});
    let frames = [
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "t", "type": "function", "function": {"name": "ec", "arguments": " "}}]}),
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"name": "ho", "arguments": "{} "}}]}),
        ),
        chunk(json!({"content": "c"})),
        chunk(json!({"reasoning_content": "r"})),
    ];
    let mut acc = Accumulator::new(OPENAI, opts());
    let mut progress: Vec<bool> = frames
        .iter()
        .map(|f| acc.push_chunk(f).unwrap().is_progress())
        .collect();
    progress.push(acc.push_chunk(&usage).unwrap().is_progress());
    acc.push_chunk(&chunk_fin(json!({}), "length")).unwrap();
    usage["usage"]["nested"] = json!(0); // the caller mutates its value afterwards
    let acc = acc.finish();
    assert_eq!(progress, [true, true, true, true, false]);
    let tool = &tools(&acc)[0];
    assert_eq!(tool["function"]["name"], "echo");
    assert_eq!(tool["function"]["arguments"], " {} ");
    assert_eq!(acc.usage_raw.as_ref().unwrap()["nested"], 9);
    assert_eq!(acc.finish_reason.as_ref().unwrap().as_str(), "length");
}

#[test]
fn cf_133_refusal_null_kept_as_null() {
    let acc = run(
        OPENAI,
        &[chunk(
            json!({"role": "assistant", "refusal": null, "content": "hi"}),
        )],
    )
    .unwrap();
    let msg = message(&acc);
    assert_eq!(msg["refusal"], Value::Null);
    assert_eq!(msg["content"], "hi");
    assert_eq!(msg["role"], "assistant");
}

// covers: S-54, S-76
#[test]
fn cf_134_role_only_null_fails_at_finish() {
    let acc = run(OPENAI, &[chunk(json!({"role": null, "content": "hi"}))]).unwrap();
    assert_eq!(message(&acc)["role"], Value::Null);
    assert_eq!(
        acc.completion().unwrap().unwrap_err(),
        protocol(ProtocolViolation::Snapshot(CompletionShapeError::Role))
    );
}

#[test]
fn cf_135_arguments_null_then_string_and_null_elements_skipped() {
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "tool_calls": [null, {"index": 0, "id": "x", "type": "function", "function": {"name": "f", "arguments": null}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}, null]})),
        ],
    )
    .unwrap();
    let tools = tools(&acc);
    assert_eq!(tools.len(), 1);
    assert_eq!(
        tools[0]["function"],
        json!({"name": "f", "arguments": "{}"})
    );
}

// covers: S-44, S-53
#[test]
fn cf_136_choices_null_and_delta_null_are_absent() {
    for mode in [OPENAI, TEXT] {
        let frames = [
            json!({"id": "upstream-1", "choices": null}),
            json!({"id": "upstream-1", "choices": [{"index": 0, "delta": null}]}),
        ];
        assert_eq!(progress_of(mode, &frames), [false, false]);
    }
}

// covers: S-56, S-70
#[test]
fn cf_137_reasoning_alias_in_both_modes() {
    for mode in [OPENAI, TEXT] {
        let mut acc = Accumulator::new(mode, opts());
        let facts = acc
            .push_chunk(&chunk(json!({"reasoning": "think"})))
            .unwrap();
        assert!(facts.is_progress());
        assert_eq!(facts.delta.reasoning, "think");
        assert_eq!(facts.delta.reasoning_content, "");
    }
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "reasoning": "a"})),
            chunk(json!({"reasoning": "b"})),
        ],
    )
    .unwrap();
    assert_eq!(message(&acc)["reasoning"], "ab");
    assert_eq!(acc.thinking, "ab");
}

// covers: S-67, S-69, S-70
#[test]
fn cf_138_reasoning_details_merge_by_index() {
    let part = |text: &str| {
        chunk(
            json!({"reasoning_details": [{"type": "reasoning.text", "index": 0, "format": "x-v1", "text": text, "id": "r1"}]}),
        )
    };
    let acc = run(OPENAI, &[part("he"), part("llo")]).unwrap();
    assert_eq!(
        message(&acc)["reasoning_details"],
        json!([{"type": "reasoning.text", "index": 0, "format": "x-v1", "text": "hello", "id": "r1"}])
    );
    assert!(acc.conflicts.is_empty());
}

// covers: S-41, S-64, S-70
#[test]
fn cf_139_tool_extension_fields_kept() {
    let acc = run(
        OPENAI,
        &[chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "t", "type": "function",
            "function": {"name": "f", "arguments": "{}", "strict": true},
            "extra_content": {"google": {"thought_signature": "sig"}}}]}),
        )],
    )
    .unwrap();
    let tool = &tools(&acc)[0];
    assert_eq!(
        tool["extra_content"],
        json!({"google": {"thought_signature": "sig"}})
    );
    assert_eq!(tool["function"]["strict"], true);
}

// covers: S-67, S-68, S-71
#[test]
fn cf_140_conflict_pairs_delete_the_key() {
    let pairs = [
        (json!(1), json!(2)),
        (json!(true), json!(false)),
        (json!("s"), json!({"o": 1})),
        (json!([{"index": 0, "t": "a"}]), json!(["plain"])),
        (json!(1), json!(1.0)),
        (json!(true), json!(1)),
    ];
    for (first, second) in pairs {
        let acc = run(
            OPENAI,
            &[
                chunk(json!({"role": "assistant", "content": "x", "ext": first.clone()})),
                chunk(json!({"ext": second})),
                chunk(json!({"ext": first})), // dropped even if equal to the first
            ],
        )
        .unwrap();
        assert!(message(&acc).get("ext").is_none());
        assert_eq!(acc.conflicts.iter().collect::<Vec<_>>(), ["delta.ext"]);
        assert_eq!(
            acc.warnings,
            vec![DialectWarning::FieldConflict {
                path: "delta.ext".into()
            }]
        );
        assert!(acc.completion().unwrap().is_ok(), "the call succeeds");
    }
}

// covers: S-68, S-69, S-70
#[test]
fn cf_141_plain_arrays_append_and_equal_scalars_are_idempotent() {
    let frames = [
        chunk(json!({"role": "assistant", "notes": ["a"], "n": 1})),
        chunk(json!({"notes": ["b", null], "n": 1})),
    ];
    let acc = run(OPENAI, &frames).unwrap();
    assert_eq!(message(&acc)["notes"], json!(["a", "b"]));
    assert_eq!(message(&acc)["n"], 1);
    assert_eq!(progress_of(OPENAI, &frames), [true, true]);
}

// covers: S-77
#[test]
fn cf_142_many_fragments_in_one_frame_are_one_progress_event() {
    let frame = chunk(json!({"content": "a", "reasoning_content": "b", "x": "c", "y": {"z": "d"}}));
    for mode in [OPENAI, TEXT] {
        let mut acc = Accumulator::new(mode, opts());
        let facts = acc.push_chunk(&frame).unwrap();
        assert!(facts.is_progress());
        assert_eq!(
            (
                facts.delta.content.as_str(),
                facts.delta.reasoning_content.as_str()
            ),
            ("a", "b")
        );
    }
}

// covers: S-78
#[test]
fn cf_143_label_only_unknown_object_is_not_progress() {
    for mode in [OPENAI, TEXT] {
        assert_eq!(
            progress_of(
                mode,
                &[chunk(json!({"meta": {"type": "x", "format": "y"}}))]
            ),
            [false]
        );
    }
}

// covers: S-41
#[test]
fn cf_144_unknown_and_null_fields_are_accepted() {
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "audio": {}, "content": null, "reasoning_content": null, "tool_calls": null})),
            chunk(json!({"tool_calls": [{"index": 0, "extra": 1}]})),
        ],
    )
    .unwrap();
    assert_eq!(message(&acc)["audio"], json!({}));
    assert_eq!(tools(&acc)[0]["extra"], 1);
}

// covers: S-51, S-74, V-10
#[test]
fn cf_145_usage_after_finish_orderings_in_both_modes() {
    let u = json!({"prompt_tokens": 3, "completion_tokens": 4});
    let with_usage = |mut c: Value| {
        c["usage"] = u.clone();
        c
    };
    let rows: Vec<(Vec<Value>, bool)> = vec![
        (
            vec![
                with_usage(chunk(json!({"content": "a"}))),
                chunk_fin(json!({}), "stop"),
            ],
            false,
        ),
        (
            vec![with_usage(chunk_fin(json!({"content": "a"}), "stop"))],
            true,
        ),
        (
            vec![
                chunk_fin(json!({"content": "a"}), "stop"),
                json!({"choices": [], "usage": u.clone()}),
            ],
            true,
        ),
        (vec![chunk_fin(json!({"content": "a"}), "stop")], false),
    ];
    for mode in [OPENAI, TEXT] {
        for (frames, expected) in &rows {
            let mut acc = Accumulator::new(mode, opts());
            for f in frames {
                acc.push_chunk(f).unwrap();
            }
            assert_eq!(acc.usage_after_finish(), *expected);
            assert!(acc.finish_seen());
            assert_eq!(acc.finish_reason(), Some("stop"));
        }
    }
}

// covers: S-47
#[test]
fn cf_146_text_mode_ignores_a_non_zero_choice() {
    let frames = [json!({"choices": [
        {"index": 0, "delta": {"content": "A"}},
        {"index": 1, "delta": {"content": "B"}, "finish_reason": "stop"}
    ]})];
    let acc = run(TEXT, &frames).unwrap();
    assert_eq!(acc.content, "A");
    assert_eq!(acc.finish_reason, None);
}

// covers: S-50, V-3
#[test]
fn cf_147_text_mode_non_string_finish_is_ignored() {
    let mut acc = Accumulator::new(TEXT, opts());
    let facts = acc
        .push_chunk(
            &json!({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": 5}]}),
        )
        .unwrap();
    assert!(!facts.finish_seen);
    assert!(!acc.finish_seen());
    assert_eq!(acc.finish().finish_reason, None);
}

#[test]
fn cf_148_non_stream_null_tool_elements_are_stripped() {
    let tool =
        json!({"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}});
    for (calls, expected) in [
        (json!([null, tool.clone()]), json!([tool.clone()])),
        (json!([null]), Value::Null),
        (Value::Null, Value::Null),
    ] {
        let b = body(json!({"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]}));
        let acc = parse_non_stream_body(&b, OPENAI, &opts()).unwrap();
        assert_eq!(message(&acc)["tool_calls"], expected);
    }
}

// covers: S-47, CF-250
#[test]
fn cf_149_text_mode_choice_index_selection() {
    for (index, taken) in [
        (Value::Null, true),
        (json!(0), true),
        (json!(false), false),
        (json!(1), false),
    ] {
        let acc = run(
            TEXT,
            &[json!({"choices": [{"index": index, "delta": {"content": "x"}}]})],
        )
        .unwrap();
        assert_eq!(acc.content == "x", taken, "index {index}");
    }
    // An absent index is taken too; a non-object element fails (S-47).
    assert_eq!(
        run(TEXT, &[json!({"choices": [{"delta": {"content": "x"}}]})])
            .unwrap()
            .content,
        "x"
    );
    assert_eq!(
        push_err(TEXT, &[json!({"choices": [3]})]),
        protocol(ProtocolViolation::ChoiceNotObject)
    );
}

// covers: S-58, S-60
#[test]
fn cf_150_tool_calls_null_then_only_null_elements_stays_null() {
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "tool_calls": null})),
            chunk(json!({"tool_calls": [null]})),
        ],
    )
    .unwrap();
    assert_eq!(message(&acc)["tool_calls"], Value::Null);
    let b = body(json!({"choices": [{"message": {"role": "assistant", "tool_calls": [null]}}]}));
    assert_eq!(
        message(&parse_non_stream_body(&b, OPENAI, &opts()).unwrap())["tool_calls"],
        Value::Null
    );
}

// covers: S-58, S-60
#[test]
fn cf_151_tool_calls_null_then_a_list_merges() {
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "tool_calls": null})),
            chunk(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})),
        ],
    )
    .unwrap();
    assert_eq!(tools(&acc)[0]["id"], "a");
}

#[test]
fn cf_152_non_stream_without_role_fails_before_the_verdict() {
    let b = body(json!({"choices": [{"message": {"content": "a"}, "finish_reason": "length"}]}));
    assert_eq!(
        parse_non_stream_body(&b, OPENAI, &opts()).unwrap_err(),
        protocol(ProtocolViolation::RoleNotAssistant)
    );
}

// covers: S-40, S-55
#[test]
fn cf_153_content_and_reasoning_content_in_one_frame() {
    for mode in [OPENAI, TEXT] {
        let mut acc = Accumulator::new(mode, opts());
        let facts = acc
            .push_chunk(&chunk(
                json!({"role": "assistant", "content": "text", "reasoning_content": "reason"}),
            ))
            .unwrap();
        assert_eq!(facts.delta.content, "text");
        assert_eq!(facts.delta.reasoning_content, "reason");
        assert!(facts.is_progress());
        let acc = acc.finish();
        assert_eq!(
            (acc.content.as_str(), acc.thinking.as_str()),
            ("text", "reason")
        );
    }
}

#[test]
fn cf_154_sparse_and_out_of_order_indexes() {
    let t = |i: u64, id: &str| json!({"index": i, "id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let acc = run(
        OPENAI,
        &[chunk(
            json!({"role": "assistant", "tool_calls": [t(3, "c")]}),
        )],
    )
    .unwrap();
    assert_eq!(tools(&acc).len(), 1);
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "tool_calls": [t(2, "z"), t(0, "x")]})),
            chunk(json!({"tool_calls": [t(1, "y")]})),
        ],
    )
    .unwrap();
    let ids: Vec<_> = tools(&acc)
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["x", "y", "z"]);
}

// covers: S-55
#[test]
fn cf_155_absent_null_and_empty_content_stay_distinct() {
    let absent = run(OPENAI, &[chunk(json!({"role": "assistant"}))]).unwrap();
    let null = run(
        OPENAI,
        &[chunk(json!({"role": "assistant", "content": null}))],
    )
    .unwrap();
    let empty = run(
        OPENAI,
        &[chunk(json!({"role": "assistant", "content": ""}))],
    )
    .unwrap();
    assert!(message(&absent).get("content").is_none());
    assert_eq!(message(&null)["content"], Value::Null);
    assert_eq!(message(&empty)["content"], "");
    for acc in [&absent, &null, &empty] {
        assert_eq!(acc.content, "", "all project to \"\" (S-101)");
    }
}

// covers: S-101
#[test]
fn cf_156_think_tags_kept_in_the_message_stripped_in_the_projection() {
    let mut o = opts();
    o.inline_think_tags = true;
    let mut acc = Accumulator::new(OPENAI, o);
    acc.push_chunk(&chunk(
        json!({"role": "assistant", "content": "<think>x</think>"}),
    ))
    .unwrap();
    let acc = acc.finish();
    assert_eq!(message(&acc)["content"], "<think>x</think>");
    assert_eq!((acc.content.as_str(), acc.thinking.as_str()), ("", "x"));
}

// covers: S-34, S-45, V-46
#[test]
fn cf_157_chunk_not_object_and_choices_not_array() {
    for mode in [OPENAI, TEXT] {
        for c in [json!([1]), json!("s"), json!(3), Value::Null] {
            assert_eq!(push_err(mode, &[c]), protocol(ProtocolViolation::NotObject));
        }
        assert_eq!(
            push_err(mode, &[json!({"choices": {}})]),
            protocol(ProtocolViolation::ChoicesNotArray)
        );
    }
    let c = AccumulateError::Protocol(ProtocolViolation::NotObject).classify(&ctx());
    assert_eq!(c.category, Category::Transient);
    assert_eq!(c.reason_code(), Some(ReasonCode::ProtocolError));
    assert_eq!(c.failure.http_status, None);
    assert!(
        c.failure
            .message
            .contains("chat response must be a JSON object")
    );
}

// ---- 95 §9 fidelity rows ----------------------------------------------------------------

// covers: S-39
#[test]
fn cf_238_error_null_fails_the_frame_whatever_follows() {
    let mut acc = Accumulator::new(TEXT, opts());
    acc.push_chunk(&chunk(json!({"content": "partial"})))
        .unwrap();
    let err = acc.push_chunk(&json!({"error": null})).unwrap_err();
    assert_eq!(err, AccumulateError::ErrorFrame(Box::new(Value::Null)));
    let c = err.classify(&ctx());
    assert_eq!(
        (c.category, c.reason_code()),
        (Category::Transient, Some(ReasonCode::UpstreamErrorFrame))
    );
    // Nothing later rescues the attempt.
    assert_eq!(acc.push_chunk(&usage_frame()).unwrap_err(), err);
}

#[test]
fn cf_239_error_frames_fail_immediately_in_both_modes() {
    let frames = [
        json!({"error": {}}),
        json!({"error": {"code": "upstream_stream_read_error"}, "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
        json!({"error": null, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}),
    ];
    for mode in [OPENAI, TEXT] {
        for f in &frames {
            let err = push_err(
                mode,
                &[
                    chunk(json!({"role": "assistant", "content": "a"})),
                    f.clone(),
                ],
            );
            assert!(matches!(err, AccumulateError::ErrorFrame(_)));
            assert_eq!(
                err.classify(&ctx()).reason_code(),
                Some(ReasonCode::UpstreamErrorFrame)
            );
            // Non-stream bodies too (S-111 step 3).
            let e = parse_non_stream_body(&body(f.clone()), mode, &opts()).unwrap_err();
            assert!(matches!(e, AccumulateError::ErrorFrame(_)));
        }
    }
}

// covers: S-36
#[test]
fn cf_240_usage_that_is_not_an_object_fails() {
    for mode in [OPENAI, TEXT] {
        assert_eq!(
            push_err(mode, &[json!({"choices": [], "usage": [1]})]),
            protocol(ProtocolViolation::UsageNotObject)
        );
        let b = body(
            json!({"choices": [{"message": {"role": "assistant", "content": "x"}}], "usage": [1]}),
        );
        assert_eq!(
            parse_non_stream_body(&b, mode, &opts()).unwrap_err(),
            protocol(ProtocolViolation::UsageNotObject)
        );
    }
}

// ---- S-rules ----------------------------------------------------------------------------

#[test]
fn s_35_error_frames_are_classified_by_the_d15_classifier() {
    let rows = [
        (
            json!({"code": 429, "message": "slow down"}),
            Category::Transient,
            Some(ReasonCode::RateLimited),
        ),
        (
            json!({"code": 400, "type": "exceed_context_size_error"}),
            Category::RequestRejected,
            Some(ReasonCode::ContextLengthExceeded),
        ),
        (json!({"code": 401}), Category::SourceDead, None),
        (
            json!({"code": "server_error"}),
            Category::Transient,
            Some(ReasonCode::UpstreamErrorFrame),
        ),
    ];
    for (error, category, code) in rows {
        let err = push_err(OPENAI, &[json!({"error": error})]);
        let c = err.classify(&ctx());
        assert_eq!((c.category, c.reason_code()), (category, code));
        assert_eq!(c.failure.http_status, None, "the response status was 200");
    }
}

#[test]
fn s_38_model_sink_keeps_the_first_non_blank_string() {
    let acc = run(
        TEXT,
        &[
            json!({"model": "", "choices": []}),
            json!({"model": "  ", "choices": []}),
            json!({"model": 5, "choices": []}),
            json!({"model": "gpt-4o", "choices": []}),
            json!({"model": "other", "choices": []}),
        ],
    )
    .unwrap();
    assert_eq!(acc.model_reported.as_deref(), Some("gpt-4o"));
}

// covers: S-72
#[test]
fn s_42_chunk_id_identity_rule_with_empty_absent_d12() {
    let with_id = |id: Value| json!({"id": id, "choices": []});
    let acc = run(
        OPENAI,
        &[
            with_id(json!("")),
            with_id(json!("r1")),
            with_id(json!("")),
            with_id(Value::Null),
            with_id(json!("r1")),
        ],
    )
    .unwrap();
    assert_eq!(acc.response_id.as_deref(), Some("r1"));
    // README D35: a second id is accepted; the first is kept, with one dialect warning.
    let acc = run(OPENAI, &[with_id(json!("r1")), with_id(json!("r2"))]).unwrap();
    assert_eq!(acc.response_id.as_deref(), Some("r1"));
    assert_eq!(acc.warnings, [DialectWarning::ChunkIdChanges]);
    assert_eq!(
        push_err(OPENAI, &[with_id(json!(5))]),
        protocol(ProtocolViolation::IdNotString)
    );
    // Text mode never fails on the id.
    assert!(
        run(
            TEXT,
            &[
                with_id(json!("r1")),
                with_id(json!("r2")),
                with_id(json!(5))
            ]
        )
        .is_ok()
    );
}

#[test]
fn s_46_openai_stream_choice_rules() {
    let rows = [
        (
            json!([{"index": 0, "delta": {}}, {"index": 1, "delta": {}}]),
            ProtocolViolation::SingleChoiceOnly,
        ),
        (
            json!([{"index": null, "delta": {}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (
            json!([{"delta": {}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (
            json!([{"index": false, "delta": {}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (
            json!([{"index": 1, "delta": {}}]),
            ProtocolViolation::ChoiceIndexNotZero,
        ),
        (json!(["x"]), ProtocolViolation::ChoiceNotObject),
        (
            json!([{"index": 0, "delta": "x"}]),
            ProtocolViolation::DeltaNotObject,
        ),
    ];
    for (choices, violation) in rows {
        assert_eq!(
            push_err(OPENAI, &[json!({"choices": choices})]),
            protocol(violation)
        );
    }
}

// covers: S-72, V-3
#[test]
fn s_49_openai_finish_identity_rule_with_empty_absent_d12() {
    let acc = run(
        OPENAI,
        &[
            chunk_fin(json!({"role": "assistant", "content": "a"}), ""),
            chunk_fin(json!({}), "stop"),
            chunk_fin(json!({}), "stop"),
        ],
    )
    .unwrap();
    assert_eq!(acc.finish_reason.as_ref().unwrap().as_str(), "stop");
    assert_eq!(
        push_err(
            OPENAI,
            &[chunk_fin(json!({}), "stop"), chunk_fin(json!({}), "length")]
        ),
        protocol(ProtocolViolation::FinishReasonConflict)
    );
    assert_eq!(
        push_err(
            OPENAI,
            &[json!({"choices": [{"index": 0, "delta": {}, "finish_reason": 5}]})]
        ),
        protocol(ProtocolViolation::FinishReasonNotString)
    );
    // Text mode: first non-empty wins, never fails (S-50).
    let acc = run(
        TEXT,
        &[
            chunk_fin(json!({}), ""),
            chunk_fin(json!({}), "stop"),
            chunk_fin(json!({}), "length"),
        ],
    )
    .unwrap();
    assert_eq!(acc.finish_reason.as_ref().unwrap().as_str(), "stop");
}

#[test]
fn s_61_d13_parallel_calls_reusing_one_index() {
    let acc = run(
        OPENAI,
        &[
            chunk(json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_A", "type": "function", "function": {"name": "a", "arguments": "{\"x\":"}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "id": "call_B", "type": "function", "function": {"name": "b", "arguments": "{\"y\":"}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "2}"}}]})),
            chunk(json!({"tool_calls": [{"id": "call_A", "function": {"arguments": ""}}]})),
        ],
    )
    .unwrap();
    let tools = tools(&acc);
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["function"]["arguments"], "{\"x\":1}");
    assert_eq!(tools[1]["id"], "call_B");
    assert_eq!(
        tools[1]["function"]["arguments"], "{\"y\":2}",
        "route[0] → slot 1"
    );
    assert!(!acc.tool_arguments_unparsable());
}

#[test]
fn s_65_synthesized_ids_are_deterministic_and_keyed_d17() {
    let expected = |key: &str, slot: usize| {
        let hex = hex::encode(Sha256::digest(format!("{key}:{slot}").as_bytes()));
        format!("call_{}", &hex[..24])
    };
    assert_eq!(synthesized_tool_id("r1", 3), expected("r1", 3));
    let no_id =
        json!({"index": 1, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    // Keyed by the response id when there is one …
    let mut acc = Accumulator::new(OPENAI, opts());
    acc.push_chunk(&chunk(
        json!({"role": "assistant", "tool_calls": [no_id.clone()]}),
    ))
    .unwrap();
    assert_eq!(
        acc.raw_message().unwrap()["tool_calls"][0]["id"],
        expected("upstream-1", 1)
    );
    assert_eq!(acc.raw_message(), acc.raw_message(), "deterministic");
    // … else by the attempt's call_id (D17).
    let acc = run(OPENAI, &[json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [no_id]}}]})]).unwrap();
    assert_eq!(tools(&acc)[0]["id"], expected(CALL_ID, 1));
    assert_eq!(
        tools(&acc)[0].as_object().unwrap().keys().next().unwrap(),
        "id"
    );
}

#[test]
fn s_66_text_mode_tools_are_liveness_only() {
    let frames = [
        chunk(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function"}]})),
        chunk(json!({"tool_calls": [{"index": 0, "id": "a", "type": "function"}]})),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
        chunk(json!({"tool_calls": {"index": 0}})),
        chunk(json!({"tool_calls": [{"index": true, "id": "z"}, 3, {"id": 5}]})),
        chunk(json!({"tool_calls": [{"index": null, "id": "b"}]})),
    ];
    assert_eq!(
        progress_of(TEXT, &frames),
        [true, false, true, false, false, true]
    );
    let acc = run(TEXT, &frames).unwrap();
    assert_eq!(acc.content, "");
    assert!(
        acc.tool_calls.is_empty() && acc.message.is_none(),
        "V-26: no tool output in text mode"
    );
}

#[test]
fn s_73_text_mode_unknown_fields_progress() {
    let frames = [
        chunk(json!({"x": "s"})),
        chunk(json!({"id": "s"})),
        chunk(json!({"x": ["", {"y": "z"}]})),
        chunk(json!({"x": 5, "y": true})),
        chunk(json!({"type": ["a"]})),
    ];
    assert_eq!(
        progress_of(TEXT, &frames),
        [true, false, true, false, false]
    );
}

#[test]
fn s_98_thinking_projection_is_all_or_nothing() {
    let rows = [
        (vec![json!({"reasoning": "r1"})], "r1"),
        (
            vec![
                json!({"reasoning": "r1"}),
                json!({"reasoning_content": "rc"}),
            ],
            "rc",
        ),
        (
            vec![json!({"reasoning": "r1", "reasoning_content": ""})],
            "r1",
        ),
    ];
    for mode in [OPENAI, TEXT] {
        for (deltas, thinking) in &rows {
            let frames: Vec<Value> = deltas.iter().cloned().map(chunk).collect();
            assert_eq!(run(mode, &frames).unwrap().thinking, *thinking);
        }
    }
}

#[test]
fn s_99_non_stream_thinking_projection() {
    for (msg, thinking) in [
        (
            json!({"role": "assistant", "content": "a", "reasoning": "nr"}),
            "nr",
        ),
        (
            json!({"role": "assistant", "content": "a", "reasoning": "nr", "reasoning_content": "rc"}),
            "rc",
        ),
        (
            json!({"role": "assistant", "content": "a", "reasoning": "nr", "reasoning_content": ""}),
            "nr",
        ),
    ] {
        let b = body(json!({"choices": [{"message": msg}]}));
        for mode in [OPENAI, TEXT] {
            assert_eq!(
                parse_non_stream_body(&b, mode, &opts()).unwrap().thinking,
                thinking
            );
        }
    }
}

#[test]
fn s_100_think_tags_stripped_from_the_concatenated_text_projection() {
    let mut o = opts();
    o.inline_think_tags = true;
    // Tags split across chunks: stripping runs on the concatenation (S-100).
    let parts = ["<thi", "nk>a\nb</think>\n  hi <think>", "c</think>!"];
    for mode in [OPENAI, TEXT] {
        let mut acc = Accumulator::new(mode, o.clone());
        acc.push_chunk(&chunk(
            json!({"role": "assistant", "reasoning_content": "t:"}),
        ))
        .unwrap();
        for p in parts {
            acc.push_chunk(&chunk(json!({"content": p}))).unwrap();
        }
        let acc = acc.finish();
        assert_eq!(
            (acc.content.as_str(), acc.thinking.as_str()),
            ("hi !", "t:a\nbc")
        );
        // Without the profile flag nothing is stripped.
        let plain = run(mode, &[chunk(json!({"content": "<think>x</think>"}))]).unwrap();
        assert_eq!(
            (plain.content.as_str(), plain.thinking.as_str()),
            ("<think>x</think>", "")
        );
        // An unclosed tag stays.
        let mut acc = Accumulator::new(mode, o.clone());
        acc.push_chunk(&chunk(json!({"content": "  <think>unclosed"})))
            .unwrap();
        assert_eq!(acc.finish().content, "  <think>unclosed");
    }
    let b = body(
        json!({"choices": [{"message": {"role": "assistant", "content": "<think>x</think> y"}}]}),
    );
    let acc = parse_non_stream_body(&b, OPENAI, &o).unwrap();
    assert_eq!((acc.content.as_str(), acc.thinking.as_str()), ("y", "x"));
    assert_eq!(message(&acc)["content"], "<think>x</think> y", "S-101");
}

// covers: V-9
#[test]
fn s_104_s_105_s_107_usage_measured_and_resolved() {
    let m = |v: Value| measured_usage(v.as_object().unwrap());
    assert!(m(json!({"prompt_tokens": 11, "completion_tokens": 7})).is_some());
    for not_measured in [
        json!({}),
        json!({"total_tokens": 3}),
        json!({"prompt_tokens": 1, "completion_tokens": true}),
        json!({"prompt_tokens": -1, "completion_tokens": 1}),
        json!({"prompt_tokens": 1.5, "completion_tokens": 1}),
    ] {
        assert!(m(not_measured.clone()).is_none(), "{not_measured}");
    }
    let usage = json!({"prompt_tokens": 65, "completion_tokens": 251, "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 9}});
    let acc = run(TEXT, &[json!({"choices": [], "usage": usage})]).unwrap();
    let (u, source) = acc.usage(false);
    assert_eq!(
        (
            u.prompt_tokens,
            u.completion_tokens,
            u.cached_prompt_tokens,
            u.reasoning_tokens,
            source
        ),
        (65, 251, Some(64), Some(9), UsageSource::Measured)
    );
    assert_eq!(acc.usage(true).1, UsageSource::Estimated);
    let acc = run(
        TEXT,
        &[json!({"choices": [], "usage": {"prompt_cache_hit_tokens": 5}})],
    )
    .unwrap();
    let (u, source) = acc.usage(false);
    assert_eq!(
        (u.prompt_tokens, u.cached_prompt_tokens, source),
        (0, Some(5), UsageSource::Unavailable)
    );
    assert_eq!(
        run(TEXT, &[]).unwrap().usage(false).1,
        UsageSource::Unavailable
    );
}

// covers: S-106, V-9
#[test]
fn s_37_usage_last_wins_never_summed() {
    let acc = run(
        TEXT,
        &[
            json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
            json!({"choices": [], "usage": null}),
            json!({"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3}}),
        ],
    )
    .unwrap();
    assert_eq!(acc.usage(false).0.completion_tokens, 3);
}

#[test]
fn s_111_non_stream_body_errors_and_bom() {
    let o = opts();
    assert_eq!(
        parse_non_stream_body(b"", TEXT, &o).unwrap_err(),
        AccumulateError::EmptyResponse
    );
    assert_eq!(
        parse_non_stream_body(b" \n\r\t ", TEXT, &o).unwrap_err(),
        AccumulateError::EmptyResponse
    );
    assert_eq!(
        parse_non_stream_body(b"{not json", TEXT, &o).unwrap_err(),
        AccumulateError::InvalidJson
    );
    assert_eq!(
        parse_non_stream_body(b"[1]", TEXT, &o).unwrap_err(),
        protocol(ProtocolViolation::NotObject)
    );
    let mut bom = b"\xEF\xBB\xBF\n\n".to_vec();
    bom.extend(body(json!({"choices": [{"message": {"content": "42"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})));
    let acc = parse_non_stream_body(&bom, TEXT, &o).unwrap();
    assert_eq!(acc.content, "42");
    assert!(acc.usage_measured());
    for (b, v) in [
        (json!({}), ProtocolViolation::NoChoices),
        (json!({"choices": []}), ProtocolViolation::NoChoices),
        (json!({"choices": {}}), ProtocolViolation::ChoicesMalformed),
        (json!({"choices": [1]}), ProtocolViolation::ChoicesMalformed),
        (
            json!({"choices": [{"message": 1}]}),
            ProtocolViolation::MessageMalformed,
        ),
        (
            json!({"choices": [{"message": {"content": 1}}]}),
            ProtocolViolation::MessageMalformed,
        ),
    ] {
        assert_eq!(
            parse_non_stream_body(&body(b), TEXT, &o).unwrap_err(),
            protocol(v)
        );
    }
    // Text mode: message null → {}, content "" (only choices[0], index unchecked).
    let acc = parse_non_stream_body(
        &body(json!({"choices": [{"index": 4, "message": null, "finish_reason": ""}]})),
        TEXT,
        &o,
    )
    .unwrap();
    assert_eq!(
        (acc.content.as_str(), acc.finish_reason.is_none()),
        ("", true)
    );
    let c = AccumulateError::InvalidJson.classify(&ctx());
    assert_eq!(
        (c.category, c.reason_code()),
        (Category::Transient, Some(ReasonCode::InvalidJson))
    );
    let c = AccumulateError::EmptyResponse.classify(&ctx());
    assert_eq!(c.reason_code(), Some(ReasonCode::EmptyResponse));
}

#[test]
fn s_111_d16_non_stream_tool_calls_without_id_get_synthesized_ids() {
    let tool = |id: Value| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let b = body(
        json!({"id": "resp-9", "choices": [{"message": {"role": "assistant", "tool_calls": [null, tool(Value::Null), tool(json!("keep")), tool(json!(""))]}}]}),
    );
    let acc = parse_non_stream_body(&b, OPENAI, &opts()).unwrap();
    let calls = tools(&acc);
    assert_eq!(
        calls[0]["id"],
        synthesized_tool_id("resp-9", 0),
        "slot counted after stripping"
    );
    assert_eq!(calls[1]["id"], "keep");
    assert_eq!(calls[2]["id"], synthesized_tool_id("resp-9", 2));
    assert_eq!(acc.warnings, vec![DialectWarning::SynthesizedToolId]);
    assert!(acc.completion().unwrap().is_ok());
    // D17: no body id → the call_id is hashed.
    let b = body(
        json!({"id": "", "choices": [{"message": {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}),
    );
    let acc = parse_non_stream_body(&b, OPENAI, &opts()).unwrap();
    assert_eq!(tools(&acc)[0]["id"], synthesized_tool_id(CALL_ID, 0));
    assert_eq!(acc.response_id, None, "S-113: \"\" is absent");
}

#[test]
fn s_115_warnings_in_s_95_order() {
    let mut acc = Accumulator::new(OPENAI, opts());
    acc.push_notice(WireNotice::SplitDataLines);
    acc.push_notice(WireNotice::SplitDataLines);
    for f in [
        chunk(
            json!({"role": "assistant", "b": 1, "a": 1, "tool_calls": [{"index": 0, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
        ),
        chunk_fin(json!({"b": 2, "a": "x"}), "eos_token"),
    ] {
        acc.push_chunk(&f).unwrap();
    }
    let acc = acc.finish();
    assert_eq!(
        acc.warnings,
        vec![
            DialectWarning::SplitDataLines,
            DialectWarning::FieldConflict {
                path: "delta.a".into()
            },
            DialectWarning::FieldConflict {
                path: "delta.b".into()
            },
            DialectWarning::SynthesizedToolId,
            DialectWarning::UnregisteredFinish {
                value: "eos_token".into()
            },
        ]
    );
    let keys: Vec<String> = acc.warnings.iter().map(DialectWarning::key).collect();
    assert_eq!(
        keys,
        [
            "sse:split_data_lines",
            "field:delta.a",
            "field:delta.b",
            "tool:synthesized_id",
            "finish:eos_token"
        ]
    );
    let long = DialectWarning::UnregisteredFinish {
        value: "é".repeat(100),
    };
    assert_eq!(long.key().chars().count(), "finish:".len() + 64);
}

// covers: CF-122
#[test]
fn s_116_throttle_warns_once_per_source_and_saturates_once() {
    let throttle = WarningThrottle::new();
    let w = DialectWarning::SynthesizedToolId;
    assert_eq!(throttle.emit("a", &w), Admission::Emit);
    assert_eq!(throttle.emit("a", &w), Admission::Suppressed);
    assert_eq!(throttle.emit("b", &w), Admission::Emit);
    for i in 0..WARNING_CAPACITY - 2 {
        throttle.admit(
            "c",
            &DialectWarning::FieldConflict {
                path: format!("delta.k{i}"),
            },
        );
    }
    assert_eq!(throttle.len(), WARNING_CAPACITY);
    assert_eq!(throttle.admit("z", &w), Admission::Saturated);
    assert_eq!(throttle.admit("y", &w), Admission::Suppressed);
    assert_eq!(throttle.len(), WARNING_CAPACITY, "the set never grows");
    assert!(SATURATION_MESSAGE.contains("1024"));
}

// covers: V-4
#[test]
fn s_117_warning_texts_name_source_and_path_only() {
    let w = DialectWarning::UnregisteredFinish {
        value: "end".into(),
    };
    let text = w.message("qwen_1");
    assert!(text.contains("qwen_1") && text.contains("\"end\"") && text.contains("not cached"));
    let w = DialectWarning::FieldConflict {
        path: "delta.ext".into(),
    };
    assert_eq!(
        w.message("s"),
        "source s: field delta.ext was deleted after a merge conflict; the fidelity result lacks this field"
    );
    assert_eq!(w.code(), "dialect.field_conflict");
}

#[test]
fn r_29_retained_bytes_and_tool_slots_are_bounded() {
    let mut o = opts();
    o.max_response_bytes = 10;
    let mut acc = Accumulator::new(TEXT, o.clone());
    acc.push_chunk(&chunk(json!({"content": "12345"}))).unwrap();
    let err = acc
        .push_chunk(&chunk(json!({"content": "678901"})))
        .unwrap_err();
    assert_eq!(err, AccumulateError::ResponseTooLarge { limit_bytes: 10 });
    let c = err.classify(&ctx());
    assert_eq!(
        (c.category, c.reason_code()),
        (Category::ResultInvalid, Some(ReasonCode::ResponseTooLarge))
    );
    assert_eq!(
        parse_non_stream_body(&[b' '; 11], TEXT, &o).unwrap_err(),
        AccumulateError::ResponseTooLarge { limit_bytes: 10 }
    );
    // Slots 0..1024: the last slot is fine, the next one fails with protocol_error.
    for mode in [OPENAI, TEXT] {
        let last = MAX_TOOL_SLOTS as u64 - 1;
        assert!(
            run(
                mode,
                &[chunk(json!({"tool_calls": [{"index": last, "id": "a"}]}))]
            )
            .is_ok()
        );
        for index in [json!(MAX_TOOL_SLOTS), json!(u64::MAX)] {
            assert_eq!(
                push_err(
                    mode,
                    &[chunk(json!({"tool_calls": [{"index": index, "id": "a"}]}))]
                ),
                protocol(ProtocolViolation::TooManyToolCalls)
            );
        }
        // A new id at a taken index needs slot max + 1.
        let frames = [
            chunk(json!({"tool_calls": [{"index": last, "id": "a"}]})),
            chunk(json!({"tool_calls": [{"index": last, "id": "b"}]})),
        ];
        assert_eq!(
            push_err(mode, &frames),
            protocol(ProtocolViolation::TooManyToolCalls)
        );
    }
}

#[test]
fn r_42_tool_arguments_that_do_not_parse_are_reported() {
    let t = |args: Value| {
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": args}}]}),
        )
    };
    for (args, shape, unparsable) in [
        (json!("{\"a\": 1}"), ToolArguments::Json, false),
        (json!("{\"a\":"), ToolArguments::NotJson, true),
        (json!(""), ToolArguments::Empty, false),
        (Value::Null, ToolArguments::Null, false),
    ] {
        let acc = run(OPENAI, &[t(args)]).unwrap();
        assert_eq!(acc.tool_calls[0].arguments, shape);
        assert_eq!(acc.tool_arguments_unparsable(), unparsable);
    }
    let acc = run(OPENAI, &[chunk(json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "a", "function": {"arguments": "{}"}}]}))]).unwrap();
    assert!(
        acc.any_tool_without_name(),
        "D13: synthesis never invents a name"
    );
}
