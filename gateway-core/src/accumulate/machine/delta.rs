//! What one selected choice's `delta` adds to the [`Accumulator`]: content, reasoning and
//! refusal fragments for the text projection, tool calls (openai slots or text-mode
//! observation), the lossless merge of unknown fields, and content given as an array of parts
//! (read by `accumulate::parts`, shared with the non-stream body). A child of the machine so it
//! shares its private state; the machine calls its methods and imports nothing from it.

use serde_json::{Map, Value};

use super::Accumulator;
use crate::accumulate::error::ProtocolViolation;
use crate::accumulate::merge::fragment_progress;
use crate::accumulate::options::ChatDelta;
use crate::accumulate::parts::read_content_parts;
use crate::accumulate::tools::append_string;
use crate::accumulate::warnings::DialectWarning;

impl Accumulator {
    /// `content` as an array of parts. `text` parts append to the content,
    /// `thinking` / `reasoning` parts to the reasoning projection; other types are skipped with
    /// one dialect warning each. `Err` when the array is not one of parts (→ `protocol_error`).
    fn content_parts(
        &mut self,
        parts: &[Value],
        out: &mut ChatDelta,
    ) -> Result<bool, ProtocolViolation> {
        let read = read_content_parts(parts).ok_or(ProtocolViolation::ContentType)?;
        for kind in read.skipped {
            let warning = DialectWarning::UnknownContentPart { kind };
            if !self.notices.contains(&warning) {
                self.notices.push(warning);
            }
        }
        if !read.text.is_empty() {
            self.take_fragment("content", &read.text, out);
        }
        if !read.thinking.is_empty() {
            self.take_fragment("reasoning", &read.thinking, out);
        }
        Ok(!read.text.is_empty() || !read.thinking.is_empty())
    }

    /// Records a content / reasoning_content / reasoning fragment for the text projection.
    pub(super) fn take_fragment(&mut self, key: &str, fragment: &str, delta: &mut ChatDelta) {
        self.charge_text(fragment.len());
        match key {
            "content" => {
                self.content.push_str(fragment);
                delta.content.push_str(fragment);
            }
            "reasoning_content" => {
                self.reasoning_content.push_str(fragment);
                delta.reasoning_content.push_str(fragment);
                self.reasoning_content_seen |= !fragment.is_empty();
            }
            _ => {
                self.reasoning.push_str(fragment);
                delta.reasoning.push_str(fragment);
            }
        }
    }

    /// openai-mode delta.
    pub(super) fn delta_openai(
        &mut self,
        delta: &Map<String, Value>,
        out: &mut ChatDelta,
    ) -> Result<(), ProtocolViolation> {
        let mut progress = false;
        for (key, value) in delta {
            match key.as_str() {
                "role" => match value {
                    Value::Null => {
                        self.message.entry("role").or_insert(Value::Null);
                    }
                    Value::String(role) if role == "assistant" => {
                        self.message
                            .insert("role".to_owned(), Value::String(role.clone()));
                    }
                    _ => return Err(ProtocolViolation::RoleNotAssistant),
                },
                "content" | "reasoning_content" => match value {
                    Value::Null => {
                        self.message.entry(key.as_str()).or_insert(Value::Null);
                    }
                    Value::String(fragment) => {
                        append_string(&mut self.message, key, fragment);
                        self.charge_text(fragment.len());
                        self.take_fragment(key, fragment, out);
                        progress |= !fragment.is_empty();
                    }
                    // README D21: fidelity mode keeps the raw parts in the completion.
                    Value::Array(parts) if key == "content" => {
                        progress |= self.content_parts(parts, out)?;
                        match self.message.get_mut("content") {
                            Some(Value::Array(kept)) => kept.extend(parts.iter().cloned()),
                            None | Some(Value::Null) => {
                                self.message
                                    .insert("content".to_owned(), Value::Array(parts.clone()));
                            }
                            Some(_) => return Err(ProtocolViolation::ContentType),
                        }
                    }
                    _ if key == "content" => return Err(ProtocolViolation::ContentType),
                    _ => return Err(ProtocolViolation::ReasoningContentType),
                },
                "tool_calls" => match value {
                    Value::Null => {
                        self.message.entry("tool_calls").or_insert(Value::Null);
                    }
                    Value::Array(elements) => {
                        let unset =
                            matches!(self.message.get("tool_calls"), None | Some(Value::Null));
                        if unset && (elements.is_empty() || elements.iter().any(|e| !e.is_null())) {
                            self.message
                                .insert("tool_calls".to_owned(), Value::Array(Vec::new()));
                        }
                        progress |= self.tools.merge_openai(elements, &mut self.merger)?;
                    }
                    _ => return Err(ProtocolViolation::ToolCallsNotArray),
                },
                other => {
                    if other == "reasoning"
                        && let Value::String(fragment) = value
                    {
                        self.take_fragment("reasoning", fragment, out);
                    }
                    if other == "refusal"
                        && let Value::String(fragment) = value
                    {
                        self.refusal.push_str(fragment);
                    }
                    let path = format!("delta.{other}");
                    progress |= self
                        .merger
                        .merge_key(&mut self.message, other, value, &path);
                }
            }
        }
        out.progress = progress;
        Ok(())
    }

    /// text-mode delta (S-54 role ignored).
    pub(super) fn delta_text(
        &mut self,
        delta: &Map<String, Value>,
        out: &mut ChatDelta,
    ) -> Result<(), ProtocolViolation> {
        let mut progress = false;
        for (key, value) in delta {
            match key.as_str() {
                "role" => {}
                "content" | "reasoning_content" => match value {
                    Value::Null => {}
                    Value::String(fragment) => {
                        self.take_fragment(key, fragment, out);
                        progress |= !fragment.is_empty();
                    }
                    Value::Array(parts) if key == "content" => {
                        progress |= self.content_parts(parts, out)?;
                    }
                    _ if key == "content" => return Err(ProtocolViolation::ContentType),
                    _ => return Err(ProtocolViolation::ReasoningContentType),
                },
                "tool_calls" => {
                    if let Value::Array(elements) = value {
                        self.text_tool_calls |= elements.iter().any(|e| !e.is_null());
                        progress |= self.tools.observe_text(elements)?;
                    }
                }
                other => {
                    if other == "reasoning"
                        && let Value::String(fragment) = value
                    {
                        self.take_fragment("reasoning", fragment, out);
                    }
                    if other == "refusal"
                        && let Value::String(fragment) = value
                    {
                        self.charge_text(fragment.len());
                        self.refusal.push_str(fragment);
                    }
                    progress |= fragment_progress(other, value);
                }
            }
        }
        out.progress = progress;
        Ok(())
    }
}
