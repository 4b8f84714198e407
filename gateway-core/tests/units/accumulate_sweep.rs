//! Accumulator rules the table suites exercised without pinning them by id (05 R-32 sweep):
//! the fixed `protocol_error` reasons (50 V-46), the shape checks that fail in both modes
//! (40 S-45, S-53, S-55) and the tool identity rules (S-59, S-62).

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly on purpose")]

use gateway_core::accumulate::{
    AccumulateError, AccumulateOptions, Accumulated, Accumulator, ProtocolViolation,
};
use gateway_ports::ResponseMode;
use serde_json::{Value, json};

const OPENAI: ResponseMode = ResponseMode::OpenAi;
const TEXT: ResponseMode = ResponseMode::Text;

fn opts() -> AccumulateOptions {
    AccumulateOptions::new("0b6f3c1e-8d4a-4f7e-9a51-2c3d4e5f6a7b", "qwen_1")
}

fn chunk(delta: Value) -> Value {
    json!({"id": "upstream-1", "choices": [{"index": 0, "delta": delta}]})
}

/// The first failure of the chunk sequence.
fn first_err(mode: ResponseMode, chunks: &[Value]) -> AccumulateError {
    let mut acc = Accumulator::new(mode, opts());
    for c in chunks {
        if let Err(e) = acc.push_chunk(c) {
            return e;
        }
    }
    panic!("no chunk failed: {chunks:?}")
}

fn run(mode: ResponseMode, chunks: &[Value]) -> Accumulated {
    let mut acc = Accumulator::new(mode, opts());
    for c in chunks {
        acc.push_chunk(c).unwrap();
    }
    acc.finish()
}

fn violation(v: ProtocolViolation) -> AccumulateError {
    AccumulateError::Protocol(v)
}

#[test]
fn v_46_protocol_error_reasons_are_the_fixed_strings() {
    use ProtocolViolation as P;
    let rows = [
        (P::NotObject, "chat response must be a JSON object"),
        (P::UsageNotObject, "usage must be an object or null"),
        (P::IdNotString, "id must be a string"),
        (P::ToolIdNotString, "id must be a string"),
        (P::IdConflict, "id conflict"),
        (P::ChoicesNotArray, "choices must be an array"),
        (P::SingleChoiceOnly, "only a single choice is supported"),
        (P::ChoiceNotObject, "choice must be an object"),
        (P::ChoiceIndexNotZero, "choice index must be 0"),
        (P::FinishReasonNotString, "finish_reason must be a string"),
        (
            P::FinishReasonNotStringOrNull,
            "finish_reason must be a string or null",
        ),
        (P::FinishReasonConflict, "finish_reason conflict"),
        (P::DeltaNotObject, "delta must be an object"),
        (P::RoleNotAssistant, "role must be assistant"),
        (P::ContentType, "content must be a string or null"),
        (
            P::ReasoningContentType,
            "reasoning_content must be a string or null",
        ),
        (P::ToolCallsNotArray, "tool_calls must be an array"),
        (P::ToolNotObject, "tool must be an object"),
        (P::ToolIndex, "tool index must be a non-negative integer"),
        (P::ToolTypeNotString, "type must be a string"),
        (P::ToolTypeConflict, "type conflict"),
        (P::FunctionNotObject, "function must be an object"),
        (P::FunctionNameType, "name must be a string or null"),
        (
            P::FunctionArgumentsType,
            "arguments must be a string or null",
        ),
        (P::NoChoices, "response has no choices"),
        (P::ChoicesMalformed, "choices malformed"),
        (P::MessageMalformed, "message malformed"),
        // The snapshot reasons of V-46 carry the `completion` prefix.
        (
            P::Snapshot(gateway_ports::CompletionShapeError::Role),
            "completion message must have role assistant",
        ),
        (
            P::Snapshot(gateway_ports::CompletionShapeError::ContentType),
            "completion content/reasoning_content must be a string or null",
        ),
        (
            P::Snapshot(gateway_ports::CompletionShapeError::ToolCallsType),
            "completion tool_calls must be an array or null",
        ),
        (
            P::Snapshot(gateway_ports::CompletionShapeError::ToolShape),
            "completion tool identity or function fields missing, conflicting or invalid",
        ),
    ];
    for (v, reason) in rows {
        assert_eq!(v.reason(), reason);
        assert_eq!(
            violation(v).to_string(),
            format!("protocol_error: {reason}")
        );
    }
}

// covers: S-45, S-53, S-55
#[test]
fn s_45_s_53_s_55_shape_checks_fail_in_both_modes() {
    for mode in [OPENAI, TEXT] {
        let rows = [
            (
                json!({"choices": {"index": 0}}),
                ProtocolViolation::ChoicesNotArray,
            ),
            (chunk(json!([])), ProtocolViolation::DeltaNotObject),
            (chunk(json!("d")), ProtocolViolation::DeltaNotObject),
            (
                chunk(json!({"content": []})),
                ProtocolViolation::ContentType,
            ),
            (chunk(json!({"content": 1})), ProtocolViolation::ContentType),
            (
                chunk(json!({"reasoning_content": 5})),
                ProtocolViolation::ReasoningContentType,
            ),
        ];
        for (c, v) in rows {
            assert_eq!(
                first_err(mode, std::slice::from_ref(&c)),
                violation(v),
                "{mode:?} {c}"
            );
        }
        // `delta` absent or null is `{}` (S-53); content null or "" is no failure (S-55).
        run(
            mode,
            &[
                json!({"choices": [{"index": 0}]}),
                chunk(Value::Null),
                chunk(json!({"role": "assistant", "content": null, "reasoning_content": ""})),
            ],
        );
    }
}

// covers: S-59, S-62, S-72
#[test]
fn s_62_tool_id_and_type_identity_rules() {
    let tool = |t: Value| chunk(json!({"tool_calls": [t]}));
    let start = chunk(json!({"role": "assistant"}));
    // S-59: not an array.
    assert_eq!(
        first_err(OPENAI, &[start.clone(), chunk(json!({"tool_calls": "x"}))]),
        violation(ProtocolViolation::ToolCallsNotArray)
    );
    // A non-string id or type fails.
    assert_eq!(
        first_err(OPENAI, &[start.clone(), tool(json!({"index": 0, "id": 5}))]),
        violation(ProtocolViolation::ToolIdNotString)
    );
    assert_eq!(
        first_err(
            OPENAI,
            &[
                start.clone(),
                tool(json!({"index": 0, "id": "a", "type": 5}))
            ]
        ),
        violation(ProtocolViolation::ToolTypeNotString)
    );
    // A different type on the same call is a conflict, never a silent deletion (S-72).
    let first = tool(
        json!({"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}),
    );
    assert_eq!(
        first_err(
            OPENAI,
            &[
                start.clone(),
                first.clone(),
                tool(json!({"index": 0, "type": "custom"}))
            ]
        ),
        violation(ProtocolViolation::ToolTypeConflict)
    );
    // Equal repeats are idempotent, never concatenated; null / "" ids are ignored.
    let acc = run(
        OPENAI,
        &[
            start,
            first,
            tool(json!({"index": 0, "id": "a", "type": "function"})),
            tool(json!({"index": 0, "id": null, "type": null})),
            tool(json!({"index": 0, "id": ""})),
        ],
    );
    let tools = acc.message.as_ref().unwrap()["tool_calls"].clone();
    assert_eq!(tools.as_array().unwrap().len(), 1, "{tools}");
    assert_eq!(tools[0]["id"], "a");
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["arguments"], "{}");
}

// covers: S-40, S-120
#[test]
fn cf_098_text_accumulator_yields_content_and_reasoning_deltas() {
    let mut acc = Accumulator::new(TEXT, opts());
    let usage = json!({"prompt_tokens": 11, "completion_tokens": 7});
    let frames = [
        chunk(json!({"content": "he"})),
        chunk(json!({"reasoning_content": "think"})),
        json!({"choices": [], "usage": usage}),
    ];
    let facts: Vec<_> = frames.iter().map(|c| acc.push_chunk(c).unwrap()).collect();
    let deltas: Vec<_> = facts
        .iter()
        .map(|f| {
            (
                f.delta.content.as_str(),
                f.delta.reasoning_content.as_str(),
                f.delta.progress,
            )
        })
        .collect();
    assert_eq!(
        deltas,
        [("he", "", true), ("", "think", true), ("", "", false)]
    );
    assert!(facts[2].usage_recorded);
    let done = acc.finish();
    assert_eq!(Value::Object(done.usage_raw.unwrap()), usage);
    assert_eq!(
        (done.content.as_str(), done.thinking.as_str()),
        ("he", "think")
    );
}

#[test]
fn s_80_a_repeated_unknown_string_is_progress_on_every_frame() {
    // The documented residual: an upstream repeating a non-label string keeps a stream alive.
    let mut acc = Accumulator::new(OPENAI, opts());
    acc.push_chunk(&chunk(json!({"role": "assistant"})))
        .unwrap();
    for _ in 0..3 {
        let f = acc
            .push_chunk(&chunk(json!({"status": "working"})))
            .unwrap();
        assert!(f.is_progress());
    }
    // A label key repeating never is (S-78).
    let f = acc
        .push_chunk(&chunk(json!({"meta": {"type": "x"}})))
        .unwrap();
    assert!(!f.is_progress());
}
