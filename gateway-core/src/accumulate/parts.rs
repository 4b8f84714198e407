//! Content given as an array of parts (Mistral's `thinking` / `text` parts): one pure reader
//! shared by the streamed delta (`machine::delta`) and the non-stream body (`body`), so both
//! readings project parts alike. Depends on nothing else in the module.

use serde_json::Value;

/// What an array of content parts says.
#[derive(Debug, Default)]
pub(super) struct ContentParts {
    /// The `text` parts' text, concatenated.
    pub(super) text: String,
    /// The `thinking` / `reasoning` parts' nested text, concatenated.
    pub(super) thinking: String,
    /// The types of the skipped parts.
    pub(super) skipped: Vec<String>,
}

/// Reads `content` given as an array of parts (Mistral's
/// `[{"type":"thinking","thinking":[{"type":"text","text":…}]},{"type":"text","text":…}]`).
/// `None` when the array is empty or an element is not an object with a string `type`.
pub(super) fn read_content_parts(parts: &[Value]) -> Option<ContentParts> {
    if parts.is_empty() {
        return None; // an empty array is not "an array of parts"
    }
    let mut read = ContentParts::default();
    for part in parts {
        let part = part.as_object()?;
        let kind = part.get("type")?.as_str()?;
        match kind {
            "text" => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    read.text.push_str(text);
                }
            }
            "thinking" | "reasoning" => {
                for key in ["thinking", "reasoning", "text", "content", "summary"] {
                    if let Some(value) = part.get(key) {
                        nested_text(value, &mut read.thinking);
                        break;
                    }
                }
            }
            other => {
                if !read.skipped.iter().any(|k| k == other) {
                    read.skipped.push(other.to_owned());
                }
            }
        }
    }
    Some(read)
}

/// Appends the text of a nested thinking value: a string, or an array of strings and objects
/// with a string `text`.
fn nested_text(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => out.push_str(text),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(text) => out.push_str(text),
                    Value::Object(obj) => {
                        if let Some(text) = obj.get("text").and_then(Value::as_str) {
                            out.push_str(text);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}
