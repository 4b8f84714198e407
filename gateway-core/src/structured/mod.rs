//! Structured output: the two built-in strategies, the request injection, entry
//! validation of a [`StructuredSpec`], and the re-ask ladder ([`ladder`]).
//!
//! - [`JsonRepairStrategy`] (the default) and [`JsonSchemaStrategy`] implement the
//!   `StructuredOutputStrategy` port of `gateway-ports`.
//! - [`repair`] holds the four deleting repair steps of C-6.
//! - [`validate`] renders each `jsonschema` error as `"<instance path or '/'>: <message>"`.
//! - [`check_spec`] is the entry check of C-2 step 3 (a compilable schema, a valid name).
//! - [`inject`] builds the round request: the strategy overlay merged **over** the caller overlay
//!   (`extra_body < overlay < injection`); the caller's `sampling` is the request *before*
//!   injection, so the injected keys never reach the telemetry column or the cache key.
//!
//! Behind the cargo feature `structured` (on by default; README D34), which gates `jsonschema`.

pub mod ladder;
pub mod repair;

use std::sync::Arc;

use gateway_ports::request::{ChatRequest, StructuredSpec};
use gateway_ports::{GatewayError, StructuredFailure, StructuredOutputStrategy};
use serde_json::{Map, Value};

pub use ladder::{
    FEEDBACK_PREFIX, FEEDBACK_SUFFIX, LADDER_EXHAUSTED, Ladder, LadderOptions, LadderStep,
    feedback_message,
};

/// Origin named by an invalid structured spec at call entry.
pub const STRUCTURED_ORIGIN: &str = "ChatRequest::structured";

/// The `response_format` overlay both built-in strategies send: `Json` →
/// `{"type":"json_object"}`; `Schema` → `{"type":"json_schema","json_schema":{name, schema,
/// strict}}`.
pub fn response_format_overlay(spec: &StructuredSpec) -> Map<String, Value> {
    let format = match spec {
        StructuredSpec::Json => serde_json::json!({"type": "json_object"}),
        StructuredSpec::Schema {
            name,
            schema,
            strict,
        } => serde_json::json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": strict},
        }),
    };
    let mut overlay = Map::with_capacity(1);
    overlay.insert("response_format".to_owned(), format);
    overlay
}

/// `true` when the spec's schema root `type` is `array` (C-6 step 3 then looks for `[`).
pub fn array_root(spec: &StructuredSpec) -> bool {
    match spec {
        StructuredSpec::Json => false,
        StructuredSpec::Schema { schema, .. } => {
            schema.get("type").and_then(Value::as_str) == Some("array")
        }
    }
}

/// Validation of a parsed value: `Json` requires a JSON object; `Schema` validates with
/// `jsonschema` (draft from `$schema`, 2020-12 by default; draft-07 accepted). Errors are
/// `"<instance path or '/'>: <message>"` in the validator's order. A schema that does not compile
/// (the entry check normally refuses it first) is reported as one error at `/`.
pub fn validate(value: &Value, spec: &StructuredSpec) -> Result<(), Vec<String>> {
    match spec {
        StructuredSpec::Json => {
            if value.is_object() {
                Ok(())
            } else {
                Err(vec![format!(
                    "/: expected a JSON object, got {}",
                    kind_of(value)
                )])
            }
        }
        StructuredSpec::Schema { schema, .. } => {
            let validator = jsonschema::validator_for(schema)
                .map_err(|e| vec![format!("/: the schema does not compile: {e}")])?;
            let errors: Vec<String> = validator
                .iter_errors(value)
                .map(|e| {
                    let path = e.instance_path().as_str();
                    let path = if path.is_empty() { "/" } else { path };
                    format!("{path}: {e}")
                })
                .collect();
            if errors.is_empty() {
                Ok(())
            } else {
                Err(errors)
            }
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses `text` as JSON: strict (`text.trim()`), then — when `repair` — each repair candidate of
/// in order; the first that parses wins. `Err` is the strict parse's error (C-5:
/// `repair_error = <first parse error>`).
pub fn parse_json(text: &str, spec: &StructuredSpec, repair: bool) -> Result<Value, String> {
    let first = match serde_json::from_str::<Value>(text.trim()) {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    if repair {
        for candidate in repair::repair_candidates(text, array_root(spec)) {
            if let Ok(value) = serde_json::from_str::<Value>(candidate.trim()) {
                return Ok(value);
            }
        }
    }
    Err(first)
}

fn parse_and_validate(
    text: &str,
    spec: &StructuredSpec,
    repair: bool,
) -> Result<Value, StructuredFailure> {
    let value = parse_json(text, spec, repair).map_err(|e| StructuredFailure {
        validation_errors: Vec::new(),
        repair_error: Some(e),
    })?;
    validate(&value, spec).map_err(|validation_errors| StructuredFailure {
        validation_errors,
        repair_error: None,
    })?;
    Ok(value)
}

/// The default strategy: `response_format` overlay; strict parse, then one repair pass,
/// then validation.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonRepairStrategy;

impl StructuredOutputStrategy for JsonRepairStrategy {
    fn name(&self) -> &'static str {
        "json_repair"
    }

    fn request_overlay(&self, spec: &StructuredSpec) -> Map<String, Value> {
        response_format_overlay(spec)
    }

    fn parse(&self, text: &str, spec: &StructuredSpec) -> Result<Value, StructuredFailure> {
        parse_and_validate(text, spec, true)
    }
}

/// The strict strategy: `response_format` overlay; `serde_json::from_str(text.trim())`
/// without repair, then validation. Useful as the escalation strategy of a provider that
/// honours `json_schema` natively.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonSchemaStrategy;

impl StructuredOutputStrategy for JsonSchemaStrategy {
    fn name(&self) -> &'static str {
        "json_schema"
    }

    fn request_overlay(&self, spec: &StructuredSpec) -> Map<String, Value> {
        response_format_overlay(spec)
    }

    fn parse(&self, text: &str, spec: &StructuredSpec) -> Result<Value, StructuredFailure> {
        parse_and_validate(text, spec, false)
    }
}

/// The default strategy as a shareable port object.
pub fn default_strategy() -> Arc<dyn StructuredOutputStrategy> {
    Arc::new(JsonRepairStrategy)
}

/// `^[A-Za-z0-9_-]{1,64}$` (the OpenAI `json_schema` name rule).
pub fn is_schema_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The entry check of C-2 step 3: `Schema.name` matches `^[A-Za-z0-9_-]{1,64}$` and
/// `Schema.schema` compiles as a JSON Schema (no remote `$ref` is fetched). `InvalidArgument`
/// naming the field.
pub fn check_spec(spec: &StructuredSpec) -> Result<(), GatewayError> {
    let StructuredSpec::Schema { name, schema, .. } = spec else {
        return Ok(());
    };
    if !is_schema_name(name) {
        return Err(GatewayError::invalid_argument(
            format!("{STRUCTURED_ORIGIN}.name"),
            "the schema name must be 1–64 characters of A–Z, a–z, 0–9, `_` or `-`",
        ));
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return Err(GatewayError::invalid_argument(
            format!("{STRUCTURED_ORIGIN}.schema"),
            format!("the schema is not a valid JSON Schema: {e}"),
        ));
    }
    Ok(())
}

/// The request one ladder round sends: `request` with `strategy.request_overlay(spec)`
/// merged over its overlay (injection wins over the caller overlay, which wins over the source
/// `extra_body` in the body builder). The caller's `sampling` intent is `request.overlay` as it
/// was *before* this call.
pub fn inject(
    request: &ChatRequest,
    strategy: &dyn StructuredOutputStrategy,
    spec: &StructuredSpec,
) -> ChatRequest {
    let mut out = request.clone();
    out.overlay.extend(strategy.request_overlay(spec));
    out
}
