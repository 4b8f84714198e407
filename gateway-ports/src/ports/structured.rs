//! Structured-output strategy port: how to ask for JSON and how to parse it. `parse` is
//! synchronous and pure; the re-ask ladder in the core drives it.

use serde_json::{Map, Value};

use crate::request::StructuredSpec;

/// Why a text did not yield the requested structured value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StructuredFailure {
    /// Validation errors, each `"<instance path or '/'>: <message>"`.
    pub validation_errors: Vec<String>,
    /// The first parse error when no repair step yielded JSON.
    pub repair_error: Option<String>,
}

/// A structured-output strategy.
pub trait StructuredOutputStrategy: Send + Sync + 'static {
    /// Stable name; enters the cache key.
    fn name(&self) -> &'static str;
    /// Keys merged into the request overlay (above the caller overlay).
    fn request_overlay(&self, spec: &StructuredSpec) -> Map<String, Value>;
    /// Parses and validates `text` against `spec`.
    fn parse(&self, text: &str, spec: &StructuredSpec) -> Result<Value, StructuredFailure>;
}
