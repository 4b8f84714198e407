//! [`RequestBody`]: the serialised JSON payload of one chat or embedding attempt.
//!
//! The core builds the body and the adapter sends it verbatim. The core writes the JSON
//! text once, straight from the borrowed request (no intermediate `serde_json::Value`, no copy of
//! the messages), and the transport hands those bytes to the HTTP client as they are: one
//! serialisation on the request path, where a `Value` body cost a deep clone of every message
//! plus a second pass to serialise it (issue 24, time to first token).
//!
//! Test doubles and assertions still read the body as JSON: [`RequestBody::value`] parses the
//! bytes once, on first use, and keeps the result.

// Spec: 05 R-14 (the core builds request bodies; the adapter sends them verbatim).

use std::fmt;
use std::ops::Index;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use crate::ports::transport::lossy_utf8;

/// The JSON text of one request body plus a lazily parsed, cached `Value` view of it.
///
/// The bytes are what goes on the wire (`Content-Type: application/json`, UTF-8). The `Value`
/// view exists for inspection (scripted transports, tests); the production path never builds it.
///
/// Equality is byte equality between two bodies (the wire text, key order included) and JSON
/// equality against a `Value`. `Debug` prints the JSON text: a body carries the messages and
/// sampling keys, never a credential (keys travel in headers), so `WireRequest`'s `Debug`
/// stays secret-free.
#[derive(Clone)]
pub struct RequestBody {
    /// The serialised JSON text, sent verbatim.
    bytes: Bytes,
    /// `bytes` parsed on first [`RequestBody::value`] call; `Value::Null` when they are not JSON.
    value: OnceLock<Value>,
}

impl RequestBody {
    /// Wraps bytes that already are one JSON text (trusted: the core's serialiser wrote them).
    /// Not checked here; should they not be JSON, [`RequestBody::value`] reads `Value::Null`
    /// and the bytes are still sent as they are.
    pub fn from_json_bytes(bytes: Bytes) -> Self {
        Self {
            bytes,
            value: OnceLock::new(),
        }
    }

    /// Serialises `value` (compact, key order as in the map). For test doubles and cold paths;
    /// the hot path serialises straight from the request and uses
    /// [`RequestBody::from_json_bytes`]. Never fails: serialising a `Value` cannot error (its
    /// keys are strings and its numbers finite); the impossible error yields the text `null`.
    pub fn from_value(value: &Value) -> Self {
        let text = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
        Self::from_json_bytes(Bytes::from(text))
    }

    /// The JSON text, exactly the bytes sent. Cloning the returned `Bytes` is a reference count.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The body parsed as JSON: parsed on the first call, then cached (later calls are a
    /// load). `Value::Null` when the bytes are not one JSON text.
    pub fn value(&self) -> &Value {
        self.value
            .get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or(Value::Null))
    }
}

impl From<Value> for RequestBody {
    /// Serialises `value` like [`RequestBody::from_value`] and keeps `value` itself as the
    /// cached view, so [`RequestBody::value`] never parses.
    fn from(value: Value) -> Self {
        let body = Self::from_value(&value);
        let _ = body.value.set(value);
        body
    }
}

impl From<&Value> for RequestBody {
    /// [`RequestBody::from_value`].
    fn from(value: &Value) -> Self {
        Self::from_value(value)
    }
}

/// `body["model"]`: the top-level member `key` of the parsed view, `Value::Null` when absent or
/// when the body is not an object (the same rule as indexing a `Value`).
impl Index<&str> for RequestBody {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        &self.value()[key]
    }
}

impl PartialEq for RequestBody {
    /// Byte equality: the same wire text.
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl PartialEq<Value> for RequestBody {
    /// JSON equality of the parsed view (whitespace is not compared; object key order is not
    /// either, as for `Value == Value`).
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl PartialEq<RequestBody> for Value {
    /// `body == value`, mirrored.
    fn eq(&self, other: &RequestBody) -> bool {
        other == self
    }
}

impl fmt::Debug for RequestBody {
    /// `RequestBody("{\"model\":…}")`: the JSON text, invalid UTF-8 replaced.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RequestBody")
            .field(&lossy_utf8(&self.bytes))
            .finish()
    }
}
