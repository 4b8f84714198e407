//! Tool-call accumulation.
//!
//! Streamed tool-call elements are gathered into *calls*, each held in a *slot* that orders the
//! snapshot. A call is resolved before any field is merged: by its non-empty `id` when a
//! call with that id exists, else by `index` (through the `route` map), else — for a missing or
//! `null` index — the last call, else slot 0; an element whose id differs from the id already in
//! its candidate slot opens a new call in the next free slot. A call that never got an id
//! receives `call_` + 24 hex digits of SHA-256(`{key}:{slot}`) at assembly.
//! At most [`MAX_TOOL_SLOTS`] slots exist per attempt, numbered `0..1024`.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::ProtocolViolation;
use super::merge::MergeState;

/// Tool-call slots per attempt: slots are numbered `0..MAX_TOOL_SLOTS`; a call that would need
/// a slot beyond is `Transient(protocol_error)`.
pub const MAX_TOOL_SLOTS: usize = 1024;

/// The synthesized id of a call without one: `"call_"` + the first 24
/// lower-case hex digits of SHA-256(`"{key}:{slot}"`), `key` = the response id, else the
/// attempt's `call_id`.
pub fn synthesized_tool_id(key: &str, slot: usize) -> String {
    let digest = Sha256::digest(format!("{key}:{slot}").as_bytes());
    let hex = hex::encode(digest);
    format!("call_{}", hex.get(..24).unwrap_or(&hex))
}

/// One call.
#[derive(Debug, Default)]
struct Call {
    slot: usize,
    /// The fixed non-empty id.
    id: Option<String>,
    /// The fixed type (text mode: the first non-empty type).
    kind: Option<String>,
    /// The tool object being assembled (openai mode): `id`, `type`, `function` and unknown
    /// keys; never `index`.
    object: Map<String, Value>,
}

/// The calls of one attempt, in creation order, and the index route.
#[derive(Debug, Default)]
pub(crate) struct ToolCalls {
    calls: Vec<Call>,
    route: HashMap<u64, usize>,
}

/// The resolved target of one element.
enum Index {
    Missing,
    At(u64),
}

impl ToolCalls {
    /// `true` when at least one call exists.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Resolves the call of an element (S-61 steps 2–3); returns its position in `calls`.
    fn resolve(&mut self, id: Option<&str>, index: &Index) -> Result<usize, ProtocolViolation> {
        let by_id = id.and_then(|id| {
            self.calls
                .iter()
                .rposition(|c| c.id.as_deref() == Some(id))
                .map(|pos| self.calls.get(pos).map_or(0, |c| c.slot))
        });
        let candidate = match (by_id, index) {
            (Some(slot), _) => slot,
            (None, Index::At(i)) => match self.route.get(i) {
                Some(slot) => *slot,
                None => usize::try_from(*i).map_err(|_| ProtocolViolation::TooManyToolCalls)?,
            },
            (None, Index::Missing) => self.calls.last().map_or(0, |c| c.slot),
        };
        let existing = self.calls.iter().position(|c| c.slot == candidate);
        let needs_new = match (id, existing.and_then(|p| self.calls.get(p))) {
            (Some(id), Some(call)) => call.id.as_deref().is_some_and(|fixed| fixed != id),
            _ => false,
        };
        if needs_new {
            let next = self
                .calls
                .iter()
                .map(|c| c.slot)
                .max()
                .and_then(|m| m.checked_add(1))
                .ok_or(ProtocolViolation::TooManyToolCalls)?;
            let position = self.create(next)?;
            if let Index::At(i) = index {
                self.route.insert(*i, next);
            }
            return Ok(position);
        }
        match existing {
            Some(position) => Ok(position),
            None => self.create(candidate),
        }
    }

    fn create(&mut self, slot: usize) -> Result<usize, ProtocolViolation> {
        if slot >= MAX_TOOL_SLOTS {
            return Err(ProtocolViolation::TooManyToolCalls);
        }
        self.calls.push(Call {
            slot,
            ..Call::default()
        });
        Ok(self.calls.len() - 1)
    }

    /// Merges one `tool_calls` array of an openai-mode delta into the calls.
    /// `message_tool_calls` is the message's `tool_calls` entry handling of S-60, done by the
    /// caller. Returns progress (S-77 items 3–5) and charges retained bytes to `merger`.
    pub(crate) fn merge_openai(
        &mut self,
        elements: &[Value],
        merger: &mut MergeState,
    ) -> Result<bool, ProtocolViolation> {
        let mut progress = false;
        for element in elements {
            let tool = match element {
                Value::Null => continue,
                Value::Object(tool) => tool,
                _ => return Err(ProtocolViolation::ToolNotObject),
            };
            let index = match tool.get("index") {
                None | Some(Value::Null) => Index::Missing,
                Some(value) => match value.as_u64() {
                    Some(i) => Index::At(i),
                    None => return Err(ProtocolViolation::ToolIndex),
                },
            };
            let id = match tool.get("id") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) if id.is_empty() => None,
                Some(Value::String(id)) => Some(id.as_str()),
                Some(_) => return Err(ProtocolViolation::ToolIdNotString),
            };
            let position = self.resolve(id, &index)?;
            let Some(call) = self.calls.get_mut(position) else {
                continue;
            };
            for (key, value) in tool {
                match key.as_str() {
                    "index" => {}
                    "id" => {
                        if let Some(id) = id
                            && call.id.is_none()
                        {
                            call.id = Some(id.to_owned());
                            call.object
                                .insert("id".to_owned(), Value::String(id.to_owned()));
                            merger.retained_bytes = merger.retained_bytes.saturating_add(id.len());
                            progress = true;
                        }
                    }
                    "type" => match value {
                        Value::Null => {}
                        Value::String(kind) => match &call.kind {
                            Some(fixed) if fixed == kind => {}
                            Some(_) => return Err(ProtocolViolation::ToolTypeConflict),
                            None => {
                                call.kind = Some(kind.clone());
                                call.object.insert("type".to_owned(), value.clone());
                                merger.retained_bytes =
                                    merger.retained_bytes.saturating_add(kind.len());
                                progress |= !kind.is_empty();
                            }
                        },
                        _ => return Err(ProtocolViolation::ToolTypeNotString),
                    },
                    "function" => match value {
                        Value::Null => {}
                        Value::Object(function) => {
                            let target = call
                                .object
                                .entry("function")
                                .or_insert_with(|| Value::Object(Map::new()));
                            if !target.is_object() {
                                *target = Value::Object(Map::new());
                            }
                            if let Value::Object(target) = target {
                                progress |= merge_function(target, function, merger)?;
                            }
                        }
                        _ => return Err(ProtocolViolation::FunctionNotObject),
                    },
                    other => {
                        let path = format!("tool_calls[].{other}");
                        progress |= merger.merge_key(&mut call.object, other, value, &path);
                    }
                }
            }
        }
        Ok(progress)
    }

    /// Text mode: resolves calls for liveness only; never fails except on the slot
    /// bound. Returns progress.
    pub(crate) fn observe_text(&mut self, elements: &[Value]) -> Result<bool, ProtocolViolation> {
        let mut progress = false;
        for element in elements {
            let Some(tool) = element.as_object() else {
                continue;
            };
            let index = match tool.get("index") {
                None | Some(Value::Null) => Index::Missing,
                Some(value) => match value.as_u64() {
                    Some(i) => Index::At(i),
                    None => continue,
                },
            };
            let id = match tool.get("id") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) if id.is_empty() => None,
                Some(Value::String(id)) => Some(id.as_str()),
                Some(_) => continue,
            };
            let position = self.resolve(id, &index)?;
            let Some(call) = self.calls.get_mut(position) else {
                continue;
            };
            if let Some(id) = id
                && call.id.is_none()
            {
                call.id = Some(id.to_owned());
                progress = true;
            }
            if let Some(Value::String(kind)) = tool.get("type")
                && !kind.is_empty()
                && call.kind.is_none()
            {
                call.kind = Some(kind.clone());
                progress = true;
            }
            if let Some(Value::Object(function)) = tool.get("function") {
                let non_empty = |key: &str| {
                    function
                        .get(key)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty())
                };
                progress |= non_empty("name") || non_empty("arguments");
            }
        }
        Ok(progress)
    }

    /// The calls in ascending slot order as tool objects, with synthesized ids for calls
    /// that never got one (`key` = response id, else call_id). Returns the array and, per
    /// element, whether its id was synthesized.
    pub(crate) fn snapshot(&self, key: &str) -> (Vec<Value>, Vec<bool>) {
        let mut order: Vec<&Call> = self.calls.iter().collect();
        order.sort_by_key(|c| c.slot);
        let flags = order.iter().map(|call| call.id.is_none()).collect();
        let tools = order
            .into_iter()
            .map(|call| {
                if call.id.is_some() {
                    Value::Object(call.object.clone())
                } else {
                    Value::Object(with_id_first(
                        &call.object,
                        synthesized_tool_id(key, call.slot),
                    ))
                }
            })
            .collect();
        (tools, flags)
    }
}

/// A copy of `object` with `id` as its first key.
pub(crate) fn with_id_first(object: &Map<String, Value>, id: String) -> Map<String, Value> {
    let mut out = Map::with_capacity(object.len() + 1);
    out.insert("id".to_owned(), Value::String(id));
    for (k, v) in object {
        if k != "id" {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Merges a `function` object: `name` and `arguments` follow S-55's string rules,
/// other keys the unknown-field merge at `tool_calls[].function.<key>`.
fn merge_function(
    target: &mut Map<String, Value>,
    function: &Map<String, Value>,
    merger: &mut MergeState,
) -> Result<bool, ProtocolViolation> {
    let mut progress = false;
    for (key, value) in function {
        match key.as_str() {
            "name" | "arguments" => {
                let violation = if key == "name" {
                    ProtocolViolation::FunctionNameType
                } else {
                    ProtocolViolation::FunctionArgumentsType
                };
                match value {
                    Value::Null => {
                        target.entry(key.as_str()).or_insert(Value::Null);
                    }
                    Value::String(fragment) => {
                        append_string(target, key, fragment);
                        merger.retained_bytes =
                            merger.retained_bytes.saturating_add(fragment.len());
                        progress |= !fragment.is_empty();
                    }
                    _ => return Err(violation),
                }
            }
            other => {
                let path = format!("tool_calls[].function.{other}");
                progress |= merger.merge_key(target, other, value, &path);
            }
        }
    }
    Ok(progress)
}

/// Appends `fragment` to `target[key]` (absent or `null` count as `""`), S-55.
pub(crate) fn append_string(target: &mut Map<String, Value>, key: &str, fragment: &str) {
    match target.get_mut(key) {
        Some(Value::String(text)) => text.push_str(fragment),
        Some(slot) => *slot = Value::String(fragment.to_owned()),
        None => {
            target.insert(key.to_owned(), Value::String(fragment.to_owned()));
        }
    }
}
