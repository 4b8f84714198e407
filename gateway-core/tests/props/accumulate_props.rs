//! Invariants of chunk accumulation (40 §5; 05 R-29): merging does not depend on how the
//! upstream split content and tool arguments across chunks (S-55, S-63: exact concatenation),
//! and the accumulator and the non-stream parser never panic on arbitrary JSON (S-31 spirit,
//! 05 R-29 checked arithmetic).

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly on purpose")]

use gateway_core::accumulate::{
    AccumulateOptions, Accumulator, parse_non_stream_body, parse_non_stream_value,
};
use gateway_ports::ResponseMode;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn opts() -> AccumulateOptions {
    AccumulateOptions::new("4f1e2d3c-0000-4000-8000-000000000001", "prop")
}

/// Splits `text` at the given char positions (sorted, deduplicated, clamped).
fn split(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut parts = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([chars.len()]) {
        parts.push(chars[start..cut].iter().collect());
        start = cut;
    }
    parts
}

const KEYS: &[&str] = &[
    "id",
    "index",
    "type",
    "format",
    "choices",
    "delta",
    "content",
    "reasoning_content",
    "reasoning",
    "role",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "finish_reason",
    "usage",
    "error",
    "model",
    "message",
    "prompt_tokens",
    "completion_tokens",
    "x",
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (0u64..2048).prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just("assistant".to_owned()),
            Just("stop".to_owned()),
            Just(String::new()),
            "[a-z{}\":]{0,6}",
            any::<String>(),
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|entries| {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.to_owned(), v);
                }
                Value::Object(map)
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// S-55: content fragments concatenate exactly, however they are split.
    #[test]
    fn content_merge_is_split_independent(text in any::<String>(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
            let mut acc = Accumulator::new(mode, opts());
            acc.push_chunk(&json!({"id": "r", "choices": [{"index": 0, "delta": {"role": "assistant"}}]})).unwrap();
            for part in split(&text, &cuts) {
                acc.push_chunk(&json!({"id": "r", "choices": [{"index": 0, "delta": {"content": part}}]})).unwrap();
            }
            let acc = acc.finish();
            prop_assert_eq!(&acc.content, &text);
            if mode == ResponseMode::OpenAi {
                prop_assert_eq!(&acc.message.as_ref().unwrap()["content"], &json!(text));
            }
        }
    }

    /// S-63: tool arguments and names concatenate exactly, whether the continuation fragments
    /// carry the index, the id, or neither (D13 routing).
    #[test]
    fn argument_merge_is_split_independent(
        args in any::<String>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        style in 0u8..3,
    ) {
        let mut acc = Accumulator::new(ResponseMode::OpenAi, opts());
        let parts = split(&args, &cuts);
        acc.push_chunk(&json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
        ]}}]})).unwrap();
        for part in &parts {
            let element = match style {
                0 => json!({"index": 0, "function": {"arguments": part}}),
                1 => json!({"id": "call_1", "function": {"arguments": part}}),
                _ => json!({"function": {"arguments": part}}),
            };
            acc.push_chunk(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [element]}}]})).unwrap();
        }
        let acc = acc.finish();
        let message = acc.message.as_ref().unwrap();
        let tools = message["tool_calls"].as_array().unwrap();
        prop_assert_eq!(tools.len(), 1);
        prop_assert_eq!(&tools[0]["function"]["arguments"], &json!(args));
        prop_assert_eq!(&tools[0]["id"], &json!("call_1"));
    }

    /// S-69: an unknown string field appends exactly too.
    #[test]
    fn unknown_string_merge_is_split_independent(text in any::<String>(), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let mut acc = Accumulator::new(ResponseMode::OpenAi, opts());
        for part in split(&text, &cuts) {
            acc.push_chunk(&json!({"choices": [{"index": 0, "delta": {"ext": {"note": part}}}]})).unwrap();
        }
        let acc = acc.finish();
        prop_assert_eq!(&acc.message.as_ref().unwrap()["ext"]["note"], &json!(text));
    }

    /// Never panics on arbitrary chunks, bare or wrapped in a choice, in either mode; the
    /// result can always be finished and snapshotted.
    #[test]
    fn never_panics_on_arbitrary_json(values in prop::collection::vec(arb_json(), 0..6)) {
        for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
            let mut acc = Accumulator::new(mode, opts());
            for v in &values {
                let _ = acc.push_chunk(v);
                let _ = acc.push_chunk(&json!({"choices": [{"index": 0, "delta": v, "finish_reason": v}]}));
                let _ = acc.push_chunk(&json!({"choices": [{"index": 0, "delta": {"tool_calls": [v], "x": v}}]}));
            }
            let _ = acc.raw_message();
            let done = acc.finish();
            let _ = done.completion();
            let _ = done.usage(false);
            for v in &values {
                let _ = parse_non_stream_value(v, mode, &opts());
                let wrapped = json!({"choices": [{"message": v, "finish_reason": v}], "usage": v});
                let _ = parse_non_stream_value(&wrapped, mode, &opts());
            }
        }
    }

    /// Never panics on arbitrary body bytes.
    #[test]
    fn non_stream_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
            let _ = parse_non_stream_body(&bytes, mode, &opts());
        }
    }
}
