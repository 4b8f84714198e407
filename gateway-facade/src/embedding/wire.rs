//! Parsing of an embeddings response body: vectors by index, the token count, and the
//! `ResultInvalid` a malformed body becomes.
//!
//! Separate so the wire format is read in one place, apart from the governed call.

use gateway_ports::{AttemptError, AttemptFailure, ErrorOperation, ResultInvalidDetails};
use serde_json::Value;

/// One parsed embeddings response.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Parsed {
    pub(super) vectors: Vec<Vec<f32>>,
    pub(super) dim: usize,
}

/// Why a 200 body is not a usable embeddings response.
pub(super) enum BodyFault {
    /// Not JSON (an empty body included): `Transient(invalid_json)`.
    NotJson,
    /// A shape anomaly: `ResultInvalid`.
    Shape(String),
    /// Items whose vector holds something other than finite numbers (`null`, `"NaN"`, a value
    /// beyond f32): `ResultInvalid(malformed_item)` naming these item indexes.
    MalformedItems(Vec<u64>),
}

/// Maps a 200 body: `data[]` items with an `embedding` array of finite numbers, ordered
/// by `index` when every item has one (else array order); `usage.prompt_tokens` an integer →
/// measured. `expected` is the batch length.
pub(super) fn parse_embeddings(
    bytes: &[u8],
    expected: usize,
) -> Result<(Parsed, Option<u64>), BodyFault> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| BodyFault::NotJson)?;
    let shape = |m: &str| BodyFault::Shape(m.to_owned());
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("the body lacks a `data` array"))?;
    let mut items: Vec<(Option<u64>, Vec<f32>)> = Vec::with_capacity(data.len());
    let mut malformed: Vec<u64> = Vec::new();
    for (position, item) in data.iter().enumerate() {
        let embedding = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("a `data` item lacks an `embedding` array"))?;
        let index = item.get("index").and_then(Value::as_u64);
        let mut vector = Vec::with_capacity(embedding.len());
        let mut bad = false;
        for x in embedding {
            // README D30: `null`, strings such as "NaN", and numbers beyond f32 are not finite
            // numbers.
            #[allow(clippy::cast_possible_truncation)]
            match x.as_f64().map(|v| v as f32).filter(|v| v.is_finite()) {
                Some(v) => vector.push(v),
                None => bad = true,
            }
        }
        if bad {
            malformed.push(index.unwrap_or_else(|| u64::try_from(position).unwrap_or(u64::MAX)));
        }
        items.push((index, vector));
    }
    if !malformed.is_empty() {
        malformed.sort_unstable();
        return Err(BodyFault::MalformedItems(malformed));
    }
    if items.iter().all(|(i, _)| i.is_some()) {
        items.sort_by_key(|(i, _)| *i);
        let in_order = items
            .iter()
            .enumerate()
            .all(|(k, (i, _))| *i == u64::try_from(k).ok());
        if !in_order {
            return Err(shape("the `index` values are not 0..n"));
        }
    }
    if items.len() != expected {
        return Err(BodyFault::Shape(format!(
            "{} vectors for {expected} inputs",
            items.len()
        )));
    }
    let dim = items.first().map_or(0, |(_, v)| v.len());
    if items.iter().any(|(_, v)| v.len() != dim) {
        return Err(shape("the vectors differ in length"));
    }
    let prompt_tokens = value
        .get("usage")
        .and_then(|u| u.get("prompt_tokens"))
        .and_then(Value::as_u64);
    Ok((
        Parsed {
            vectors: items.into_iter().map(|(_, v)| v).collect(),
            dim,
        },
        prompt_tokens,
    ))
}

pub(super) fn result_invalid(source: &str, message: String) -> AttemptError {
    let mut failure = AttemptFailure::new(message, ErrorOperation::Embedding);
    failure.source_name = Some(source.to_owned());
    AttemptError::result_invalid(ResultInvalidDetails::new(failure))
}
