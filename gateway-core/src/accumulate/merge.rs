//! Unknown-field lossless merge of openai mode and the text-mode progress
//! test for unknown fields.
//!
//! The rules follow the OpenAI SDK's streaming accumulation with the spec's exceptions: strings
//! append, labels and scalars are set once and must repeat identically, objects merge key by
//! key, arrays are either *indexed* (elements with an integer `index` merge into the element with
//! the same index) or *plain* (elements append). A conflict deletes the key, records its
//! normalized path and drops every later value on that path for the rest of the attempt — lossy
//! by design, never a failure.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

/// Label keys: set once, never concatenated.
pub(crate) const LABEL_KEYS: [&str; 4] = ["index", "type", "id", "format"];

/// Bytes charged for a retained non-string leaf (05 R-29 accounting; chosen).
const LEAF_COST: usize = 8;

/// The shape of an array path, fixed by its first non-empty appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Indexed,
    Plain,
}

/// A conflict found while merging; the owning key is deleted.
#[derive(Debug)]
struct Conflict;

/// Per-attempt merge state: the conflict set, array shapes, retained-byte counter.
#[derive(Debug, Default)]
pub(crate) struct MergeState {
    /// Normalized conflict paths, sorted.
    pub(crate) conflicts: BTreeSet<String>,
    shapes: HashMap<String, Shape>,
    /// Bytes retained by merges (05 R-29 accounting).
    pub(crate) retained_bytes: usize,
}

impl MergeState {
    /// `merge_key(target, key, value, path)` of S-68; returns whether it made progress (S-77
    /// item 5).
    pub(crate) fn merge_key(
        &mut self,
        target: &mut Map<String, Value>,
        key: &str,
        value: &Value,
        path: &str,
    ) -> bool {
        if self.conflicts.contains(path) {
            return false;
        }
        if value.is_null() {
            if !target.contains_key(key) {
                target.insert(key.to_owned(), Value::Null);
                self.charge(key.len());
            }
            return false;
        }
        let old = target.get_mut(key).map(std::mem::take);
        let is_new = old.is_none();
        match self.merge(old.unwrap_or(Value::Null), value, key, path) {
            Ok((merged, progress)) => {
                if is_new {
                    self.charge(key.len());
                }
                target.insert(key.to_owned(), merged);
                progress
            }
            Err(Conflict) => {
                target.shift_remove(key);
                self.charge(path.len());
                self.conflicts.insert(path.to_owned());
                false
            }
        }
    }

    /// `merge(old, new, key, path)` of S-69 (rows in order).
    fn merge(
        &mut self,
        old: Value,
        new: &Value,
        key: &str,
        path: &str,
    ) -> Result<(Value, bool), Conflict> {
        match new {
            Value::Object(fields) => {
                let mut target = match old {
                    Value::Null => Map::new(),
                    Value::Object(map) => map,
                    _ => return Err(Conflict),
                };
                let mut progress = false;
                for (sub, value) in fields {
                    let sub_path = format!("{path}.{sub}");
                    progress |= self.merge_key(&mut target, sub, value, &sub_path);
                }
                Ok((Value::Object(target), progress))
            }
            Value::Array(items) => {
                let mut target = match old {
                    Value::Null => Vec::new(),
                    Value::Array(items) => items,
                    _ => return Err(Conflict),
                };
                let items: Vec<&Value> = items.iter().filter(|v| !v.is_null()).collect();
                if items.is_empty() {
                    return Ok((Value::Array(target), false));
                }
                let indexed = items.iter().all(|item| {
                    item.as_object()
                        .and_then(|o| o.get("index"))
                        .is_some_and(is_integer)
                });
                let shape = if indexed {
                    Shape::Indexed
                } else {
                    Shape::Plain
                };
                match self.shapes.get(path) {
                    Some(fixed) if *fixed != shape => return Err(Conflict),
                    Some(_) => {}
                    None => {
                        self.charge(path.len());
                        self.shapes.insert(path.to_owned(), shape);
                    }
                }
                let element_path = format!("{path}[]");
                let mut progress = false;
                // Index value → position in `target`, built once per array: a linear search per
                // element would make one hostile chunk with many distinct indexes quadratic.
                let mut positions: HashMap<IndexKey, usize> = HashMap::new();
                if indexed {
                    for (position, element) in target.iter().enumerate() {
                        if let Some(index) = element.get("index").and_then(IndexKey::of) {
                            positions.entry(index).or_insert(position);
                        }
                    }
                }
                for item in items {
                    if indexed {
                        let index = item.get("index").and_then(IndexKey::of);
                        let position = match index.and_then(|i| positions.get(&i).copied()) {
                            Some(position) => position,
                            None => {
                                self.charge(LEAF_COST);
                                target.push(Value::Object(Map::new()));
                                let position = target.len() - 1;
                                if let Some(index) = index {
                                    positions.insert(index, position);
                                }
                                position
                            }
                        };
                        let slot = target.get_mut(position).map(std::mem::take);
                        let (merged, p) =
                            self.merge(slot.unwrap_or(Value::Null), item, key, &element_path)?;
                        if let Some(slot) = target.get_mut(position) {
                            *slot = merged;
                        }
                        progress |= p;
                    } else {
                        let (merged, p) = self.merge(Value::Null, item, key, &element_path)?;
                        self.charge(LEAF_COST);
                        target.push(merged);
                        progress |= p;
                    }
                }
                Ok((Value::Array(target), progress))
            }
            Value::Bool(_) | Value::Number(_) => self.merge_label(old, new),
            Value::String(_) if LABEL_KEYS.contains(&key) => self.merge_label(old, new),
            Value::String(fragment) => match old {
                Value::Null => {
                    self.charge(fragment.len());
                    Ok((new.clone(), !fragment.is_empty()))
                }
                Value::String(mut text) => {
                    self.charge(fragment.len());
                    text.push_str(fragment);
                    Ok((Value::String(text), !fragment.is_empty()))
                }
                _ => Err(Conflict),
            },
            Value::Null => Ok((old, false)),
        }
    }

    /// The label / scalar row of S-69: set once; an equal value of the same JSON type is
    /// idempotent; anything else conflicts (`1` vs `1.0`, `true` vs `1`).
    fn merge_label(&mut self, old: Value, new: &Value) -> Result<(Value, bool), Conflict> {
        match old {
            Value::Null => {
                self.charge(new.as_str().map_or(LEAF_COST, str::len));
                Ok((new.clone(), false))
            }
            old if same_type(&old, new) && old == *new => Ok((old, false)),
            _ => Err(Conflict),
        }
    }

    fn charge(&mut self, bytes: usize) {
        self.retained_bytes = self.retained_bytes.saturating_add(bytes);
    }
}

/// The integer `index` of an element of an indexed array, as a hash key (`-1` and `u64::MAX`
/// are distinct; two JSON integers are the same index exactly when `Value` equality says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct IndexKey(i128);

impl IndexKey {
    fn of(value: &Value) -> Option<Self> {
        value
            .as_i64()
            .map(i128::from)
            .or_else(|| value.as_u64().map(i128::from))
            .map(Self)
    }
}

/// `true` for a JSON integer (booleans are not numbers in serde_json).
pub(crate) fn is_integer(value: &Value) -> bool {
    value.as_i64().is_some() || value.as_u64().is_some()
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// `fragment_progress(key, value)` of S-73 (text mode unknown fields): a string counts when
/// `key` is not a label key and the string is non-empty; an object when any of its entries
/// counts; an array when any element counts under the array's key.
pub(crate) fn fragment_progress(key: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => !s.is_empty() && !LABEL_KEYS.contains(&key),
        Value::Object(map) => map.iter().any(|(k, v)| fragment_progress(k, v)),
        Value::Array(items) => items.iter().any(|v| fragment_progress(key, v)),
        _ => false,
    }
}
