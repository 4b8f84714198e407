//! Structured-output strategy port (70 C-4): how to ask for JSON and how to parse it. `parse` is
//! synchronous and pure; the re-ask ladder in the core drives it.

use serde_json::{Map, Value};

use crate::request::StructuredSpec;

/// Why a text did not yield the requested structured value (70 C-4, C-7).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StructuredFailure {
    /// Validation errors, each `"<instance path or '/'>: <message>"`.
    pub validation_errors: Vec<String>,
    /// The first parse error when no repair step yielded JSON.
    pub repair_error: Option<String>,
}

/// A structured-output strategy (70 C-4).
pub trait StructuredOutputStrategy: Send + Sync + 'static {
    /// Stable name; enters the cache key (70 C-44).
    fn name(&self) -> &'static str;
    /// Keys merged into the request overlay (above the caller overlay, 70 C-8).
    fn request_overlay(&self, spec: &StructuredSpec) -> Map<String, Value>;
    /// Parses and validates `text` against `spec`.
    fn parse(&self, text: &str, spec: &StructuredSpec) -> Result<Value, StructuredFailure>;
}
