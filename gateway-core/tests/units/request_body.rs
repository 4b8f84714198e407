//! Request-body builders (05 R-14; 40 S-5; 10 §2.1, §3.1; 90 E-18): table tests over the exact
//! JSON text the transport will send verbatim.

use gateway_core::request::{
    PROTECTED_CHAT_KEYS, build_chat_body, build_embed_body, serialize_chat_body,
    serialize_chat_body_with, serialize_embed_body,
};
use gateway_ports::config::SourceConfig;
use gateway_ports::request::{ChatRequest, JsonObject};
use proptest::prelude::*;
use serde_json::{Value, json};

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn source(extra_body: Value) -> SourceConfig {
    SourceConfig {
        extra_body: obj(extra_body),
        ..SourceConfig::new("qwen_1", "qwen", "http://127.0.0.1:1/v1", None, "m-1")
    }
}

fn request(overlay: Value) -> ChatRequest {
    ChatRequest {
        overlay: obj(overlay),
        ..ChatRequest::new(vec![obj(json!({"role": "user", "content": "hi"}))])
    }
}

/// One row: extra_body, overlay, stream flag → the exact serialised body.
struct Row {
    name: &'static str,
    extra_body: Value,
    overlay: Value,
    stream: bool,
    expected: &'static str,
}

#[test]
fn r_14_s_5_chat_body_table() {
    let rows = [
        Row {
            name: "S-5 streaming body carries stream and include_usage",
            extra_body: json!({}),
            overlay: json!({}),
            stream: true,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}"#,
        },
        Row {
            name: "non-stream body says stream false and has no stream_options",
            extra_body: json!({}),
            overlay: json!({}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"stream":false}"#,
        },
        Row {
            name: "10 §2.1 extra_body merged into the body",
            extra_body: json!({"temperature": 0, "top_p": 0.9}),
            overlay: json!({}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"temperature":0,"top_p":0.9,"stream":false}"#,
        },
        Row {
            name: "10 §3.1 overlay above extra_body, key keeps its position",
            extra_body: json!({"temperature": 0, "top_p": 0.9}),
            overlay: json!({"temperature": 0.7, "seed": 7}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":0.9,"seed":7,"stream":false}"#,
        },
        Row {
            name: "merge is shallow: an overlay object replaces the extra_body object",
            extra_body: json!({"response_format": {"type": "json_object", "x": 1}}),
            overlay: json!({"response_format": {"type": "text"}}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"},"stream":false}"#,
        },
        Row {
            name: "an overlay null is sent as null (None is not absent)",
            extra_body: json!({"max_tokens": 10}),
            overlay: json!({"max_tokens": null}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"max_tokens":null,"stream":false}"#,
        },
        Row {
            name: "70 C-32 raw-only reasoning keys pass through verbatim",
            extra_body: json!({"enable_thinking": false}),
            overlay: json!({"reasoning_effort": "max", "thinking": {"type": "enabled"}}),
            stream: true,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"enable_thinking":false,"reasoning_effort":"max","thinking":{"type":"enabled"},"stream":true,"stream_options":{"include_usage":true}}"#,
        },
        Row {
            name: "S-5 protected keys in extra_body and overlay are ignored",
            extra_body: json!({"model": "other", "stream": false, "temperature": 1}),
            overlay: json!({"messages": [], "stream_options": {"include_usage": false}, "stream": false}),
            stream: true,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"temperature":1,"stream":true,"stream_options":{"include_usage":true}}"#,
        },
        Row {
            name: "tools and tool_choice are overlay keys like any other",
            extra_body: json!({}),
            overlay: json!({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "auto"}),
            stream: false,
            expected: r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto","stream":false}"#,
        },
    ];
    for row in rows {
        let (src, req) = (source(row.extra_body), request(row.overlay));
        let body = build_chat_body(&src, &req, row.stream);
        let text = serde_json::to_string(&body).unwrap_or_default();
        assert_eq!(text, row.expected, "{}", row.name);
        // Issue 24: the direct serialiser writes the same text, byte for byte.
        let sent = serialize_chat_body(&src, &req, row.stream);
        assert_eq!(
            std::str::from_utf8(&sent).unwrap_or_default(),
            row.expected,
            "serialised: {}",
            row.name
        );
    }
}

/// The reasoning fragment is the last layer: its value wins in place for a key `extra_body` or
/// the overlay already set, its new keys follow theirs, its protected keys are ignored.
#[test]
fn r_14_c_31_fragment_merged_last_in_both_forms() {
    let src = source(json!({"reasoning_effort": "low", "top_p": 1}));
    let req = request(json!({"seed": 3, "enable_thinking": true}));
    let fragment = obj(json!({"enable_thinking": false, "reasoning_effort": "high",
        "thinking": {"type": "enabled", "budget_tokens": 512}, "stream": false}));
    let expected = r#"{"model":"m-1","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high","top_p":1,"seed":3,"enable_thinking":false,"thinking":{"type":"enabled","budget_tokens":512},"stream":true,"stream_options":{"include_usage":true}}"#;
    let value = gateway_core::request::build_chat_body_with(&src, &req, true, &fragment);
    assert_eq!(serde_json::to_string(&value).unwrap_or_default(), expected);
    let sent = serialize_chat_body_with(&src, &req, true, &fragment);
    assert_eq!(std::str::from_utf8(&sent).unwrap_or_default(), expected);
}

// covers: CF-242
#[test]
fn r_14_messages_sent_unchanged_in_order() {
    let messages = vec![
        obj(json!({"role": "system", "content": "s"})),
        obj(json!({"role": "user", "content": [{"type": "text", "text": "a"}], "name": "u"})),
        obj(json!({"role": "assistant", "content": null, "tool_calls": []})),
    ];
    let req = ChatRequest::new(messages.clone());
    let body = build_chat_body(&source(json!({})), &req, true);
    let sent: Vec<Value> = messages.into_iter().map(Value::Object).collect();
    assert_eq!(body["messages"], Value::Array(sent));
}

#[test]
fn e_18_embed_body_is_exactly_model_and_input() {
    let body = build_embed_body("emb-1", &["a".to_owned(), "b c".to_owned()]);
    assert_eq!(
        serde_json::to_string(&body).unwrap_or_default(),
        r#"{"model":"emb-1","input":["a","b c"]}"#
    );
    let empty = build_embed_body("emb-1", &[]);
    assert_eq!(
        serde_json::to_string(&empty).unwrap_or_default(),
        r#"{"model":"emb-1","input":[]}"#
    );
    // Issue 24: the direct serialiser, byte for byte.
    let sent = serialize_embed_body("emb-1", &["a".to_owned(), "b c".to_owned()]);
    assert_eq!(sent.as_ref(), br#"{"model":"emb-1","input":["a","b c"]}"#);
    assert_eq!(
        serialize_embed_body("emb-1", &[]).as_ref(),
        br#"{"model":"emb-1","input":[]}"#
    );
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ]
}

fn layer() -> impl Strategy<Value = JsonObject> {
    let key = prop_oneof![
        Just("model".to_owned()),
        Just("messages".to_owned()),
        Just("stream".to_owned()),
        Just("stream_options".to_owned()),
        "[a-z_]{1,8}",
    ];
    proptest::collection::btree_map(key, json_leaf(), 0..6)
        .prop_map(|m| m.into_iter().collect::<JsonObject>())
}

proptest! {
    /// S-5: whatever extra_body and overlay hold, the library's keys are the library's values;
    /// every other overlay key wins, every other extra_body key not in the overlay survives.
    #[test]
    fn s_5_protected_keys_never_overridden(extra in layer(), overlay in layer(), stream in any::<bool>()) {
        let src = SourceConfig { extra_body: extra.clone(), ..source(json!({})) };
        let req = ChatRequest { overlay: overlay.clone(), ..request(json!({})) };
        let body = build_chat_body(&src, &req, stream);
        prop_assert_eq!(&body["model"], &json!("m-1"));
        prop_assert_eq!(&body["messages"], &json!([{"role": "user", "content": "hi"}]));
        prop_assert_eq!(&body["stream"], &json!(stream));
        if stream {
            prop_assert_eq!(&body["stream_options"], &json!({"include_usage": true}));
        } else {
            prop_assert!(body.get("stream_options").is_none());
        }
        for (k, v) in &overlay {
            if !PROTECTED_CHAT_KEYS.contains(&k.as_str()) {
                prop_assert_eq!(&body[k], v);
            }
        }
        for (k, v) in &extra {
            if !PROTECTED_CHAT_KEYS.contains(&k.as_str()) && !overlay.contains_key(k) {
                prop_assert_eq!(&body[k], v);
            }
        }
        let expected_len = 3 + usize::from(stream) + extra.keys().chain(overlay.keys())
            .filter(|k| !PROTECTED_CHAT_KEYS.contains(&k.as_str()))
            .collect::<std::collections::BTreeSet<_>>().len();
        prop_assert_eq!(body.as_object().map(|m| m.len()), Some(expected_len));
    }
}
