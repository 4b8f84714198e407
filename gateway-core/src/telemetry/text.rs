//! Column texts: the text cap, message digests and canonical JSON (80 T-34..T-36, C-47).
//!
//! Everything a row writes as text goes through here: the cap (`PGW_TELEMETRY_TEXT_CAP`) and
//! character cuts, the `messages` column (digested images, capped texts, written in one pass),
//! embedding and OCR markers and placeholders, bounded validation errors, and canonical JSON of
//! `meta` and `sampling`. Pure functions of borrowed values; they never fail or panic, so the
//! shaper can call them on the call path. The cache key (`crate::cache::key`) shares the
//! digest and canonical JSON so equal requests hash alike.

use std::borrow::Cow;

use gateway_ports::{CallOperation, ConfigError, JsonObject, Meta, MetaValue};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::json;

/// The environment key of the text cap.
pub const TEXT_CAP_KEY: &str = "PGW_TELEMETRY_TEXT_CAP";

/// Characters kept of each embedding text in `messages`.
pub const EMBED_TEXT_CHARS: usize = 200;

/// Validation errors kept by [`format_bounded_errors`].
pub const MAX_FEEDBACK_ERRORS: usize = 3;

/// Characters kept of each validation error and of the repair error.
pub const MAX_ERROR_CHARS: usize = 200;

/// Validates the text cap (20 §11.3 C6, §11.6 F4): `Some(0)` is
/// `ConfigError telemetry.text_cap` "text_cap must be > 0 (leave it unset for no truncation)";
/// `None` = no truncation.
pub fn validate_text_cap(cap: Option<usize>) -> Result<Option<usize>, ConfigError> {
    match cap {
        Some(0) => Err(ConfigError::new(
            "telemetry.text_cap",
            TEXT_CAP_KEY,
            "text_cap must be > 0 (leave it unset for no truncation)",
        )),
        other => Ok(other),
    }
}

/// The first `n` characters (Unicode scalar values) of `text`, never splitting a character.
pub fn cut_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => text.get(..at).unwrap_or(text),
        None => text,
    }
}

/// The text cap: a text longer than `cap` characters keeps its first `cap`
/// characters followed by `…(+N chars)`, N = characters removed; `None` or a short text is
/// returned unchanged (borrowed).
pub fn cap_text(text: &str, cap: Option<usize>) -> Cow<'_, str> {
    let Some(cap) = cap else {
        return Cow::Borrowed(text);
    };
    match text.char_indices().nth(cap) {
        None => Cow::Borrowed(text),
        Some((at, _)) => {
            let (head, rest) = text.split_at(at);
            Cow::Owned(format!("{head}…(+{} chars)", rest.chars().count()))
        }
    }
}

/// Canonical JSON: object keys sorted by code point at every depth, no whitespace,
/// numbers as `serde_json` prints them. Equal values give byte-identical text. Written straight
/// from the borrowed value (no sorted copy is built).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    json::write_canonical(&mut out, value);
    out
}

/// `digest_messages`: a new value, the input untouched. Every message keeps all
/// fields; an array `content` keeps its `text` parts and replaces every other part with
/// `{"type": <type>, "sha256": <hex of canonical_json(part)>}`. No raw image is ever stored.
pub fn digest_messages(messages: &[JsonObject]) -> Vec<JsonObject> {
    messages
        .iter()
        .map(|message| {
            let mut out = message.clone();
            if let Some(Value::Array(parts)) = out.get_mut("content") {
                for part in parts.iter_mut() {
                    if part.get("type").and_then(Value::as_str) == Some("text") {
                        continue;
                    }
                    let hash = hex::encode(Sha256::digest(canonical_json(part).as_bytes()));
                    let kind = part.get("type").cloned().unwrap_or(Value::Null);
                    let mut digest = Map::new();
                    digest.insert("type".to_owned(), kind);
                    digest.insert("sha256".to_owned(), Value::String(hash));
                    *part = Value::Object(digest);
                }
            }
            out
        })
        .collect()
}

/// Applies the text cap to messages: each string `content` and the `text` of
/// each `type == "text"` part; other fields (tool arguments, names) are untouched. Builds new
/// values; `None` returns a plain copy.
pub fn cap_messages(messages: &[JsonObject], cap: Option<usize>) -> Vec<JsonObject> {
    let mut out = messages.to_vec();
    if cap.is_none() {
        return out;
    }
    let cap_value = |v: &mut Value| {
        if let Value::String(s) = v
            && let Cow::Owned(capped) = cap_text(s, cap)
        {
            *s = capped;
        }
    };
    for message in &mut out {
        match message.get_mut("content") {
            Some(Value::Array(parts)) => {
                for part in parts.iter_mut() {
                    if part.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(text) = part.get_mut("text")
                    {
                        cap_value(text);
                    }
                }
            }
            Some(content) => cap_value(content),
            None => {}
        }
    }
    out
}

/// `format_bounded_errors`: the first 3 errors, each cut to 200 characters, joined
/// with `"; "`; an empty list renders `output could not be parsed`. Shared with the terminal-row
/// detail.
pub fn format_bounded_errors(errors: &[String]) -> String {
    if errors.is_empty() {
        return "output could not be parsed".to_owned();
    }
    errors
        .iter()
        .take(MAX_FEEDBACK_ERRORS)
        .map(|e| cut_chars(e, MAX_ERROR_CHARS))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The `response` placeholder of a successful embedding attempt (chosen).
pub fn embed_response_placeholder(vectors: usize, dim: usize) -> String {
    format!("<embed vectors={vectors} dim={dim}>")
}

/// The `response` placeholder of a successful `parse_layout` attempt (chosen).
pub fn ocr_layout_placeholder(elements: usize, pages: usize) -> String {
    format!("<ocr:layout elements={elements} pages={pages}>")
}

pub(super) fn user_message(content: String) -> Value {
    let mut m = Map::new();
    m.insert("role".to_owned(), Value::String("user".to_owned()));
    m.insert("content".to_owned(), Value::String(content));
    Value::Object(m)
}

pub(super) fn ocr_marker(operation: CallOperation, image_bytes: usize) -> String {
    let kind = if operation == CallOperation::ParseLayout {
        "layout"
    } else {
        "text"
    };
    format!("<ocr:{kind} image_bytes={image_bytes}>")
}

pub(super) fn embed_text(text: &str, cap: Option<usize>) -> String {
    cap_text(cut_chars(text, EMBED_TEXT_CHARS), cap).into_owned()
}

pub(super) fn messages_json(items: Vec<Value>) -> String {
    let mut out = String::new();
    json::write_value(&mut out, &Value::Array(items));
    out
}

/// The `messages` JSON of a chat call: byte for byte
/// `cap_messages(&digest_messages(messages), cap)` printed compactly, written in one pass over
/// the borrowed messages (no copy of the messages is built).
pub(super) fn chat_messages_json(messages: &[JsonObject], cap: Option<usize>) -> String {
    let estimate: usize = messages
        .iter()
        .map(|m| match m.get("content") {
            Some(Value::String(s)) => s.len() + 32,
            _ => 64,
        })
        .sum();
    let mut out = String::with_capacity(estimate + 2);
    out.push('[');
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        for (j, (key, value)) in message.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            json::write_str(&mut out, key);
            out.push(':');
            if key == "content" {
                write_chat_content(&mut out, value, cap);
            } else {
                json::write_value(&mut out, value);
            }
        }
        out.push('}');
    }
    out.push(']');
    out
}

/// One message's `content`: a string is capped; in an array, `text` parts keep their
/// (capped) text and every other part becomes its C-47 digest.
fn write_chat_content(out: &mut String, content: &Value, cap: Option<usize>) {
    match content {
        Value::String(text) => json::write_str(out, &cap_text(text, cap)),
        Value::Array(parts) => {
            out.push('[');
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let is_text = part.get("type").and_then(Value::as_str) == Some("text");
                match part {
                    Value::Object(fields) if is_text && cap.is_some() => {
                        out.push('{');
                        for (j, (key, value)) in fields.iter().enumerate() {
                            if j > 0 {
                                out.push(',');
                            }
                            json::write_str(out, key);
                            out.push(':');
                            match value {
                                Value::String(text) if key == "text" => {
                                    json::write_str(out, &cap_text(text, cap));
                                }
                                other => json::write_value(out, other),
                            }
                        }
                        out.push('}');
                    }
                    _ if is_text => json::write_value(out, part),
                    _ => {
                        let hash = hex::encode(Sha256::digest(canonical_json(part).as_bytes()));
                        out.push_str("{\"type\":");
                        json::write_value(out, part.get("type").unwrap_or(&Value::Null));
                        out.push_str(",\"sha256\":");
                        json::write_str(out, &hash);
                        out.push('}');
                    }
                }
            }
            out.push(']');
        }
        other => json::write_value(out, other),
    }
}

/// The `meta` column: canonical JSON of the caller's meta, `'{}'` when empty. `Meta`
/// is a `BTreeMap`, so its keys are already in canonical order.
pub(super) fn canonical_meta(meta: &Meta) -> String {
    if meta.is_empty() {
        return "{}".to_owned();
    }
    let mut out = String::with_capacity(16 * meta.len() + 2);
    out.push('{');
    for (i, (key, value)) in meta.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::write_str(&mut out, key);
        out.push(':');
        match value {
            MetaValue::Str(text) => json::write_str(&mut out, text),
            other => json::write_canonical(&mut out, &other.to_json()),
        }
    }
    out.push('}');
    out
}

/// Canonical JSON of `object`, `None` when empty (the `sampling` column).
pub(super) fn canonical_object(object: &JsonObject) -> Option<String> {
    canonical_merged(&JsonObject::new(), object)
}

/// Canonical JSON of `base` overlaid by `over` (a key of `over` replaces the same key of
/// `base`), `None` when both are empty: the attempt row's `sampling`, without building
/// the merged map.
pub(super) fn canonical_merged(base: &JsonObject, over: &JsonObject) -> Option<String> {
    if base.is_empty() && over.is_empty() {
        return None;
    }
    let mut entries: Vec<(&str, &Value)> = Vec::with_capacity(base.len() + over.len());
    entries.extend(base.iter().map(|(k, v)| (k.as_str(), v)));
    entries.extend(over.iter().map(|(k, v)| (k.as_str(), v)));
    // Stable: for a key in both maps the overlay entry sorts after the base entry.
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut unique: Vec<(&str, &Value)> = Vec::with_capacity(entries.len());
    for entry in entries {
        match unique.last_mut() {
            Some(last) if last.0 == entry.0 => *last = entry,
            _ => unique.push(entry),
        }
    }
    let mut out = String::with_capacity(16 * unique.len() + 2);
    json::write_canonical_entries(&mut out, &unique);
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    /// The one-pass writer gives exactly the bytes of the composed form (digest, cap, print)
    /// for strings, text parts, image parts, odd parts, escapes and every cap.
    // covers: T-35, T-36, C-47
    #[test]
    fn t_35_c_47_one_pass_messages_equal_composed_form() {
        let messages = vec![
            obj(json!({"role": "system", "content": "short"})),
            obj(
                json!({"role": "user", "name": "n\"q", "content": "a longer text with \"quotes\", a \\ and a\nnewline 漢字 🚀"}),
            ),
            obj(json!({"role": "user", "content": [
                {"type": "text", "text": "first part of the text", "extra": 1},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
                {"type": "text", "text": 7},
                {"type": "text"},
                {"kind": "untyped"},
                "bare string part",
                42,
                {"type": 3, "x": null}
            ]})),
            obj(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{\"a\": \"a very long argument string\"}"}}]}),
            ),
            obj(
                json!({"role": "tool", "tool_call_id": "t1", "content": {"odd": "object content"}}),
            ),
            obj(json!({"role": "user"})),
        ];
        for cap in [None, Some(1), Some(4), Some(10), Some(1000)] {
            let composed = messages_json(
                cap_messages(&digest_messages(&messages), cap)
                    .into_iter()
                    .map(Value::Object)
                    .collect(),
            );
            assert_eq!(chat_messages_json(&messages, cap), composed, "cap {cap:?}");
        }
        assert_eq!(chat_messages_json(&[], None), "[]");
    }

    /// `sampling`: caller keys override `extra_body` keys, keys sorted, `None` when
    /// both are empty; equal to canonical JSON of the merged map.
    // covers: T-13
    #[test]
    fn t_13_merged_sampling_equals_canonical_of_merged_map() {
        let base = obj(json!({"top_p": 0.5, "temperature": 0.9, "z": {"b": 1, "a": [2]}}));
        let over = obj(json!({"temperature": 0.2, "max_tokens": 512, "a": "x"}));
        let mut merged = base.clone();
        for (k, v) in &over {
            merged.insert(k.clone(), v.clone());
        }
        assert_eq!(
            canonical_merged(&base, &over),
            Some(canonical_json(&Value::Object(merged)))
        );
        assert_eq!(
            canonical_merged(&JsonObject::new(), &JsonObject::new()),
            None
        );
        assert_eq!(
            canonical_object(&over).as_deref(),
            Some(r#"{"a":"x","max_tokens":512,"temperature":0.2}"#)
        );
    }

    /// `meta`: canonical JSON of every value kind, `'{}'` when empty.
    // covers: T-34
    #[test]
    fn t_34_meta_written_canonically() {
        let mut meta = Meta::new();
        assert_eq!(canonical_meta(&meta), "{}");
        meta.insert("b".into(), 1i64.into());
        meta.insert("a".into(), "x\"y".into());
        meta.insert("c".into(), MetaValue::Bool(true));
        meta.insert("d".into(), MetaValue::Null);
        let object: Map<String, Value> =
            meta.iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
        assert_eq!(
            canonical_meta(&meta),
            canonical_json(&Value::Object(object))
        );
    }
}
