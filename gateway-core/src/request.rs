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
//!
//! Two forms of each body: [`build_chat_body_with`] / [`build_embed_body`] build a
//! `serde_json::Value` (the reference model, read by tests), and [`serialize_chat_body_with`] /
//! [`serialize_embed_body`] write the same JSON text byte for byte straight from the borrowed
//! source and request — what the attempt sends (one serialisation, no copy of the messages;
//! issue 24). A property test pins the two forms together.

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use gateway_ports::config::SourceConfig;
use gateway_ports::request::{ChatRequest, JsonObject};
use serde::ser::{Serialize, SerializeMap, Serializer};
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
        if skip_protected(key, source, origin) {
            continue;
        }
        body.insert(key.clone(), value.clone());
    }
}

/// `true` when `key` is a library-controlled key (then the once-per-process warning is logged,
/// naming the key and the layer it came from, never a value).
fn skip_protected(key: &str, source: &str, origin: &str) -> bool {
    if !PROTECTED_CHAT_KEYS.contains(&key) {
        return false;
    }
    if !PROTECTED_KEY_WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            code = "request.protected_key_ignored",
            source,
            origin,
            key,
            "a library-controlled key reached the request builder and was ignored"
        );
    }
    true
}

/// [`build_chat_body`] as JSON text: [`serialize_chat_body_with`] without a reasoning fragment.
pub fn serialize_chat_body(source: &SourceConfig, request: &ChatRequest, stream: bool) -> Bytes {
    serialize_chat_body_with(source, request, stream, &JsonObject::new())
}

/// The body of one chat attempt as compact JSON text (UTF-8), ready to send verbatim
/// (05 R-14): byte-identical to `serde_json::to_vec(&build_chat_body_with(..))`, written in one
/// pass straight from the borrowed `source`, `request` and `fragment`.
///
/// Why: building the `Value` first deep-copied every message and hashed every key into a new
/// map, only to serialise it and drop it; on the request path (time to first token) one
/// serialisation is all that is needed.
///
/// Same content, key order and protected-key handling as [`build_chat_body_with`]: `model`,
/// `messages`, the `extra_body` keys, the overlay keys not in `extra_body`, the fragment keys in
/// neither; a key set by several layers sits at its first position and carries the last layer's
/// value (fragment over overlay over `extra_body`); protected keys are skipped with the same
/// once-per-process warning; then `stream` and, when streaming, `stream_options`.
/// Never fails, never panics.
pub fn serialize_chat_body_with(
    source: &SourceConfig,
    request: &ChatRequest,
    stream: bool,
    fragment: &JsonObject,
) -> Bytes {
    let body = ChatBody {
        source,
        request,
        stream,
        fragment,
    };
    let mut out = Vec::with_capacity(chat_body_capacity(source, request));
    match serde_json::to_writer(&mut out, &body) {
        Ok(()) => Bytes::from(out),
        // Unreachable: the writer is a `Vec` and every key is a string. Should it happen, the
        // reference builder's text is sent rather than a partial one.
        Err(_) => Bytes::from(
            serde_json::to_vec(&build_chat_body_with(source, request, stream, fragment))
                .unwrap_or_default(),
        ),
    }
}

/// A first guess of the chat body's length in bytes, so the common text chat is written without
/// growing the buffer: the fixed keys, the model, and each message's top-level string members
/// (role, content, name); nested members (content parts, tool calls) count 64 bytes each and
/// grow the buffer if longer. One walk over the top-level members, no hashing.
fn chat_body_capacity(source: &SourceConfig, request: &ChatRequest) -> usize {
    let messages: usize = request
        .messages
        .iter()
        .map(|message| {
            message
                .iter()
                .map(|(key, value)| {
                    key.len()
                        + 4
                        + match value {
                            Value::String(text) => text.len() + 2,
                            _ => 64,
                        }
                })
                .sum::<usize>()
                + 3
        })
        .sum();
    let layers = 64 * (source.extra_body.len() + request.overlay.len());
    128 + source.model.len() + messages + layers
}

/// A borrowed view of one chat body whose `Serialize` writes the text of
/// [`build_chat_body_with`] without building it.
struct ChatBody<'a> {
    source: &'a SourceConfig,
    request: &'a ChatRequest,
    stream: bool,
    fragment: &'a JsonObject,
}

impl Serialize for ChatBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let name = self.source.name.as_str();
        let extra = &self.source.extra_body;
        let overlay = &self.request.overlay;
        let fragment = self.fragment;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", &self.source.model)?;
        map.serialize_entry("messages", &self.request.messages)?;
        // The builder's insert order: a later layer replaces the value in place.
        for (key, value) in extra {
            if skip_protected(key, name, "extra_body") {
                continue;
            }
            let value = fragment
                .get(key)
                .or_else(|| overlay.get(key))
                .unwrap_or(value);
            map.serialize_entry(key, value)?;
        }
        for (key, value) in overlay {
            if skip_protected(key, name, "overlay") || extra.contains_key(key) {
                continue;
            }
            map.serialize_entry(key, fragment.get(key).unwrap_or(value))?;
        }
        for (key, value) in fragment {
            if skip_protected(key, name, "reasoning")
                || extra.contains_key(key)
                || overlay.contains_key(key)
            {
                continue;
            }
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("stream", &self.stream)?;
        if self.stream {
            map.serialize_entry("stream_options", &IncludeUsage)?;
        }
        map.end()
    }
}

/// `{"include_usage":true}` (40 S-5).
struct IncludeUsage;

impl Serialize for IncludeUsage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("include_usage", &true)?;
        map.end()
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

/// [`build_embed_body`] as compact JSON text, written straight from the borrowed inputs (no copy
/// of the texts): exactly `{"model":…,"input":[…]}`. Never fails, never panics.
pub fn serialize_embed_body(model: &str, inputs: &[String]) -> Bytes {
    let body = EmbedBody { model, inputs };
    let capacity = 32 + model.len() + inputs.iter().map(|text| text.len() + 3).sum::<usize>();
    let mut out = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut out, &body) {
        Ok(()) => Bytes::from(out),
        // Unreachable (a `Vec` writer, string values); the reference builder's text instead.
        Err(_) => {
            Bytes::from(serde_json::to_vec(&build_embed_body(model, inputs)).unwrap_or_default())
        }
    }
}

/// A borrowed view of one embedding body.
struct EmbedBody<'a> {
    model: &'a str,
    inputs: &'a [String],
}

impl Serialize for EmbedBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("input", self.inputs)?;
        map.end()
    }
}
