//! Issue 24 / 05 R-14: the direct body serialisers write exactly the text of the `Value`
//! builders, for random sources, messages, overlays and reasoning fragments — protected keys,
//! keys shared by several layers, nested values, unicode and escapes included.

use gateway_core::request::{
    build_chat_body_with, build_embed_body, serialize_chat_body_with, serialize_embed_body,
};
use gateway_ports::config::SourceConfig;
use gateway_ports::request::{ChatRequest, JsonObject};
use proptest::prelude::*;
use serde_json::{Number, Value};

/// Text with ASCII, escapes (quote, backslash, control characters), multi-byte UTF-8 and
/// astral-plane characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,8}",
        "[\"\\\\\n\t\u{0}-\u{1f}é✓😀\u{2028}a-z ]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(16).collect()),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ]
}

/// Nested JSON: arrays and objects up to depth 3.
fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// A layer key: often a protected key or one of a few shared names (so layers overlap), else
/// free text.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec!["model", "messages", "stream", "stream_options"])
            .prop_map(str::to_owned),
        4 => prop::sample::select(vec![
            "temperature", "top_p", "seed", "reasoning_effort", "thinking", "enable_thinking",
        ])
        .prop_map(str::to_owned),
        2 => text(),
    ]
}

/// A layer in random (not sorted) key order; a repeated key keeps its first position.
fn layer() -> impl Strategy<Value = JsonObject> {
    proptest::collection::vec((key(), json()), 0..7).prop_map(|pairs| pairs.into_iter().collect())
}

fn message() -> impl Strategy<Value = JsonObject> {
    (
        prop::sample::select(vec!["system", "user", "assistant", "tool"]),
        json(),
        proptest::collection::vec((text(), json()), 0..3),
    )
        .prop_map(|(role, content, rest)| {
            let mut m = JsonObject::new();
            m.insert("role".to_owned(), Value::from(role));
            m.insert("content".to_owned(), content);
            m.extend(rest);
            m
        })
}

fn source() -> impl Strategy<Value = SourceConfig> {
    (text(), text(), layer()).prop_map(|(name, model, extra_body)| SourceConfig {
        extra_body,
        ..SourceConfig::new(&name, "qwen", "http://127.0.0.1:1/v1", None, &model)
    })
}

fn request() -> impl Strategy<Value = ChatRequest> {
    (
        proptest::collection::vec(message(), 0..4),
        layer(),
        any::<bool>(),
    )
        .prop_map(|(messages, overlay, stream)| ChatRequest {
            overlay,
            stream,
            ..ChatRequest::new(messages)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The bytes sent equal `serde_json::to_vec` of the reference body: same keys, same order
    /// (model, messages, extra_body, new overlay keys, new fragment keys, stream,
    /// stream_options), same values (a later layer wins in place), same escaping.
    #[test]
    fn r_14_serialised_chat_body_is_the_reference_text(
        src in source(),
        req in request(),
        fragment in layer(),
        stream in any::<bool>(),
    ) {
        let reference = serde_json::to_vec(&build_chat_body_with(&src, &req, stream, &fragment))
            .unwrap_or_default();
        let sent = serialize_chat_body_with(&src, &req, stream, &fragment);
        prop_assert_eq!(
            String::from_utf8_lossy(&sent),
            String::from_utf8_lossy(&reference)
        );
        prop_assert_eq!(sent.as_ref(), reference.as_slice());
    }

    /// The embedding body, likewise.
    #[test]
    fn e_18_serialised_embed_body_is_the_reference_text(
        model in text(),
        inputs in proptest::collection::vec(text(), 0..6),
    ) {
        let reference = serde_json::to_vec(&build_embed_body(&model, &inputs)).unwrap_or_default();
        let sent = serialize_embed_body(&model, &inputs);
        prop_assert_eq!(sent.as_ref(), reference.as_slice());
    }
}
