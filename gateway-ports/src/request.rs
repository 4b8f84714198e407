//! Request types of the three clients: `ChatRequest`, `EmbedRequest`, `OcrRequest`, plus the
//! caller dimension value `MetaValue` and the structured-output request `StructuredSpec`.
//!
//! Owns the request shape: types replace the original's runtime checks —
//! messages are JSON objects by construction, meta values are scalars, deadlines are `Duration`.
//! Combinations that types cannot rule out are `GatewayError::InvalidArgument`, checked by the
//! core before the statistics boundary.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::vocab::{CachePolicy, Effort, ResponseMode};

/// A JSON object: one chat message, an overlay, an `extra_body`.
pub type JsonObject = Map<String, Value>;

/// A caller `meta` value: a JSON scalar. Key pattern, entry count and string
/// length stay runtime checks in the core. Serialises untagged (as the plain JSON scalar).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetaValue {
    /// A string (at most 1024 characters, checked at run time).
    Str(String),
    /// A number (`serde_json::Number` cannot hold NaN or infinity).
    Num(Number),
    /// A boolean.
    Bool(bool),
    /// JSON `null`.
    Null,
}

impl MetaValue {
    /// A number from an `f64`; `None` for NaN or infinity.
    pub fn from_f64(value: f64) -> Option<Self> {
        Number::from_f64(value).map(Self::Num)
    }

    /// The value as a `serde_json::Value`.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Str(s) => Value::String(s.clone()),
            Self::Num(n) => Value::Number(n.clone()),
            Self::Bool(b) => Value::Bool(*b),
            Self::Null => Value::Null,
        }
    }
}

impl From<&str> for MetaValue {
    fn from(value: &str) -> Self {
        Self::Str(value.to_owned())
    }
}

impl From<String> for MetaValue {
    fn from(value: String) -> Self {
        Self::Str(value)
    }
}

impl From<bool> for MetaValue {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}

impl From<i64> for MetaValue {
    fn from(value: i64) -> Self {
        Self::Num(value.into())
    }
}

impl From<u64> for MetaValue {
    fn from(value: u64) -> Self {
        Self::Num(value.into())
    }
}

/// Caller `meta` map: telemetry only, never in the cache key.
pub type Meta = BTreeMap<String, MetaValue>;

/// Structured output request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StructuredSpec {
    /// Any JSON object; no schema.
    Json,
    /// A JSON Schema the parsed object must satisfy.
    Schema {
        /// `^[A-Za-z0-9_-]{1,64}$` (the OpenAI `json_schema` name rule; checked by the core).
        name: String,
        /// The JSON Schema (draft 2020-12; draft-07 accepted).
        schema: Value,
        /// Strict mode (default `true`).
        strict: bool,
    },
}

/// One chat call. Build with [`ChatRequest::new`] and struct-update syntax.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// OpenAI chat messages, each a JSON object.
    pub messages: Vec<JsonObject>,
    /// Upstream wire mode only (default `true`); the caller always gets one aggregated response.
    pub stream: bool,
    /// `Text` (default) or `OpenAi` fidelity mode.
    pub response_mode: ResponseMode,
    /// Sampling overrides; `model`, `messages`, `stream`, `stream_options` are refused.
    pub overlay: JsonObject,
    /// Structured output request (70).
    pub structured: Option<StructuredSpec>,
    /// Request-level effort; `None` inherits the source intent.
    pub reasoning_effort: Option<Effort>,
    /// Caller session correlation; telemetry only.
    pub session_id: Option<String>,
    /// Caller business correlation; telemetry only.
    pub parent_call_id: Option<String>,
    /// Caller tenant; telemetry only, never in the cache key.
    pub tenant_id: Option<String>,
    /// Caller dimensions; telemetry only, never in the cache key.
    pub meta: Meta,
    /// Overrides the assembled cache namespace for this call.
    pub cache_namespace: Option<String>,
    /// Overrides the assembled cache salt for this call.
    pub cache_salt: Option<String>,
    /// Per-call cache control.
    pub cache: CachePolicy,
    /// Per-call deadline; `None` inherits the assembled value; zero is `InvalidArgument`.
    pub call_deadline: Option<Duration>,
}

impl Default for ChatRequest {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            stream: true,
            response_mode: ResponseMode::Text,
            overlay: JsonObject::new(),
            structured: None,
            reasoning_effort: None,
            session_id: None,
            parent_call_id: None,
            tenant_id: None,
            meta: Meta::new(),
            cache_namespace: None,
            cache_salt: None,
            cache: CachePolicy::Use,
            call_deadline: None,
        }
    }
}

impl ChatRequest {
    /// A request with these messages and every other field at its default.
    pub fn new(messages: Vec<JsonObject>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

/// One embedding call. An empty `texts` returns an empty response, no attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmbedRequest {
    /// Inputs, split into batches by the core.
    pub texts: Vec<String>,
    /// Caller session correlation; telemetry only.
    pub session_id: Option<String>,
    /// Caller business correlation; telemetry only.
    pub parent_call_id: Option<String>,
    /// Caller tenant; telemetry only.
    pub tenant_id: Option<String>,
    /// Caller dimensions; telemetry only.
    pub meta: Meta,
    /// Per-call deadline covering all batches; zero is `InvalidArgument`.
    pub call_deadline: Option<Duration>,
}

impl EmbedRequest {
    /// A request for these texts with every other field at its default.
    pub fn new(texts: Vec<String>) -> Self {
        Self {
            texts,
            ..Self::default()
        }
    }
}

/// One OCR call. An empty image is `InvalidArgument`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OcrRequest {
    /// Image bytes.
    pub image: Bytes,
    /// Caller session correlation; telemetry only.
    pub session_id: Option<String>,
    /// Caller business correlation; telemetry only.
    pub parent_call_id: Option<String>,
    /// Caller tenant; telemetry only.
    pub tenant_id: Option<String>,
    /// Caller dimensions; telemetry only.
    pub meta: Meta,
    /// Per-call deadline; zero is `InvalidArgument`.
    pub call_deadline: Option<Duration>,
}

impl OcrRequest {
    /// A request for this image with every other field at its default.
    pub fn new(image: impl Into<Bytes>) -> Self {
        Self {
            image: image.into(),
            ..Self::default()
        }
    }
}
