//! Request-body builders: the exact JSON the transport sends for a chat or an embedding attempt.
//!
//! Owns 05 R-14 ("the core builds request bodies"; the adapter serialises `WireRequest.body`
//! verbatim), 40 S-5 (library-controlled keys, `stream_options.include_usage`), 10 §2.1/§3.1
//! (`extra_body` below the call overlay) and 90 E-18 (the embedding body is exactly
//! `{"model", "input"}`). Pure functions over the validated source and request; no I/O.
//!
//! Key order of a chat body (serde_json `preserve_order`): `model`, `messages`, then the source's
//! `extra_body` keys, then the overlay's new keys (an overlay key already set by `extra_body` keeps
//! its position and takes the overlay's value), then `stream` and, when streaming,
//! `stream_options`.
//!
//! Structured-output injection reaches this builder already merged into the request
//! overlay (`crate::structured::inject`); the managed reasoning fragment is merged last
//! by [`build_chat_body_with`].

use std::sync::atomic::{AtomicBool, Ordering};

use gateway_ports::config::SourceConfig;
use gateway_ports::request::{ChatRequest, JsonObject};
use serde_json::{Map, Value};

/// The keys the library owns in a chat body: neither `extra_body` nor the overlay can
/// change them.
pub const PROTECTED_CHAT_KEYS: [&str; 4] = ["model", "messages", "stream", "stream_options"];

/// Set once the "protected key ignored" warning was logged (warned once per process).
static PROTECTED_KEY_WARNED: AtomicBool = AtomicBool::new(false);

/// Builds the body of one chat attempt.
///
/// Shape: `{"model": source.model, "messages": request.messages, ..source.extra_body,
/// ..request.overlay, "stream": stream}` plus `"stream_options": {"include_usage": true}` when
/// `stream` is `true`. The overlay wins over `extra_body` key by key (a shallow merge, as the
/// original's dict update). `stream` is the upstream wire mode of this attempt (normally
/// `request.stream`); a non-stream body carries `"stream": false` explicitly (chosen).
///
/// Protected keys (`model`, `messages`, `stream`, `stream_options`) are refused earlier — in
/// `extra_body` by source validation (20 §11.2 B6, `ConfigError source.extra_body`) and in the
/// overlay at call entry (`InvalidArgument`). Should one reach this function anyway
/// (a path that skipped validation), it is ignored, the library's value is sent, and one
/// warning with code `request.protected_key_ignored` is logged per process (no value is ever
/// logged). Never fails, never panics.
pub fn build_chat_body(source: &SourceConfig, request: &ChatRequest, stream: bool) -> Value {
    build_chat_body_with(source, request, stream, &JsonObject::new())
}

/// [`build_chat_body`] plus the reasoning `fragment` of the attempt's `ThinkingDirective`,
/// merged after the overlay: a managed encoding is never overridden by a raw key
/// (C-31.4 — a raw managed root together with managed intent is refused before this point).
pub fn build_chat_body_with(
    source: &SourceConfig,
    request: &ChatRequest,
    stream: bool,
    fragment: &JsonObject,
) -> Value {
    let mut body = Map::with_capacity(4 + source.extra_body.len() + request.overlay.len());
    body.insert("model".to_owned(), Value::String(source.model.clone()));
    body.insert(
        "messages".to_owned(),
        Value::Array(
            request
                .messages
                .iter()
                .cloned()
                .map(Value::Object)
                .collect(),
        ),
    );
    merge_unprotected(&mut body, &source.extra_body, &source.name, "extra_body");
    merge_unprotected(&mut body, &request.overlay, &source.name, "overlay");
    merge_unprotected(&mut body, fragment, &source.name, "reasoning");
    body.insert("stream".to_owned(), Value::Bool(stream));
    if stream {
        let mut options = Map::with_capacity(1);
        options.insert("include_usage".to_owned(), Value::Bool(true));
        body.insert("stream_options".to_owned(), Value::Object(options));
    }
    Value::Object(body)
}

/// Copies every key of `layer` into `body` except the protected ones.
fn merge_unprotected(body: &mut JsonObject, layer: &JsonObject, source: &str, origin: &str) {
    for (key, value) in layer {
        if PROTECTED_CHAT_KEYS.contains(&key.as_str()) {
            if !PROTECTED_KEY_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    code = "request.protected_key_ignored",
                    source,
                    origin,
                    key = key.as_str(),
                    "a library-controlled key reached the request builder and was ignored"
                );
            }
            continue;
        }
        body.insert(key.clone(), value.clone());
    }
}

/// Builds the body of one embedding batch: exactly
/// `{"model": model, "input": [inputs...]}` — no `extra_body`, no reasoning keys, no `stream`.
pub fn build_embed_body(model: &str, inputs: &[String]) -> Value {
    let mut body = Map::with_capacity(2);
    body.insert("model".to_owned(), Value::String(model.to_owned()));
    body.insert(
        "input".to_owned(),
        Value::Array(inputs.iter().cloned().map(Value::String).collect()),
    );
    Value::Object(body)
}
