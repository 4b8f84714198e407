//! Error reports: the JSON shape of a failed call and of a configuration error.
//!
//! Owns [`ErrorReport`] (`From<&GatewayError>`) and [`ConfigErrorReport`]
//! (`From<&ConfigError>`), so library users render errors exactly as `pgw chat --json` does:
//!
//! ```json
//! {"type":"AllSourcesExhausted","category":null,"message":"llm gateway temporarily unavailable: retry_exhausted",
//!  "reason_code":null,"http_status":null,"retry_after_s":0.5,"scope":"llm","scope_reason":"retry_exhausted",
//!  "per_source_reasons":{"qwen_1":"network_error"},"attempts":3,
//!  "last_failure":{"type":"TransientError","category":"transient", …, "attempts":null}}
//! ```
//!
//! Why a separate type: `GatewayError` boxes its payloads and is not `Serialize` (its variants
//! grow); the report is a flat, stable, versionable projection. Messages never contain a secret
//! (the core scrubs them).

use std::collections::BTreeMap;

use gateway_ports::{AttemptError, ConfigError, GatewayError};
use serde::Serialize;

/// One error in the `pgw --json` shape without `last_failure` (the nested object of
/// [`ErrorReport::last_failure`] has exactly these keys).
///
/// Every key is always present; absent values serialise as `null`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// Stable type name (`GatewayError::type_name`, e.g. `"AllSourcesExhausted"`).
    #[serde(rename = "type")]
    pub error_type: &'static str,
    /// `"transient"`, `"source_dead"`, `"request_rejected"`, `"result_invalid"`; `null` for the
    /// other types.
    pub category: Option<&'static str>,
    /// The error's display text (secret-free).
    pub message: String,
    /// Stable reason token, if any.
    pub reason_code: Option<&'static str>,
    /// HTTP status of the failed response, if any.
    pub http_status: Option<u16>,
    /// Seconds to wait: the unavailable family's hint, or a `Transient`'s server hint.
    pub retry_after_s: Option<f64>,
    /// Scope label, for the variants that carry one.
    pub scope: Option<String>,
    /// The unavailable family's reason (`"retry_exhausted"`, `"circuit_open"`, …); else `null`.
    pub scope_reason: Option<&'static str>,
    /// Per-source reasons of the unavailable family; `null` for other types.
    pub per_source_reasons: Option<BTreeMap<String, &'static str>>,
    /// Upstream requests the call made (0 for errors raised before any request); `null` in the
    /// nested `last_failure` object.
    pub attempts: Option<u32>,
}

impl From<&GatewayError> for ErrorSummary {
    fn from(error: &GatewayError) -> Self {
        let unavailable = error.unavailable();
        let failure = error.attempt_failure();
        Self {
            error_type: error.type_name(),
            category: error.category().map(|c| c.as_str()),
            message: error.to_string(),
            reason_code: error.reason_code().map(|r| r.as_str()),
            http_status: error.http_status(),
            // Millisecond precision: a hint of 59.999959308 s reads as 60.0.
            retry_after_s: error
                .retry_after_s()
                .or_else(|| failure.and_then(|f| f.retry_after_s))
                .map(round_ms),
            scope: error.scope().map(str::to_owned),
            scope_reason: unavailable.map(|u| u.reason.as_str()),
            per_source_reasons: error.per_source_reasons().map(|reasons| {
                reasons
                    .iter()
                    .map(|(source, reason)| (source.clone(), reason.as_str()))
                    .collect()
            }),
            attempts: Some(error.attempts()),
        }
    }
}

impl From<&AttemptError> for ErrorSummary {
    /// One attempt's failure (the nested `last_failure` object): no scope, per-source reasons
    /// or attempt count of its own.
    fn from(error: &AttemptError) -> Self {
        Self {
            error_type: error.type_name(),
            category: Some(error.category().as_str()),
            message: error.to_string(),
            reason_code: error.reason_code().map(|r| r.as_str()),
            http_status: error.http_status(),
            retry_after_s: error.retry_after_s().map(round_ms),
            scope: None,
            scope_reason: None,
            per_source_reasons: None,
            attempts: None,
        }
    }
}

/// Seconds rounded to the millisecond (hints are reported at millisecond precision).
fn round_ms(seconds: f64) -> f64 {
    if seconds.is_finite() && seconds.abs() < 1e12 {
        (seconds * 1000.0).round() / 1000.0
    } else {
        seconds
    }
}

/// The error object of `pgw chat --json`: an [`ErrorSummary`] plus `last_failure`
/// (the last absorbed attempt failure of the unavailable family, as an
/// [`ErrorSummary`]; `null` when there is none).
///
/// Build it with `ErrorReport::from(&error)`; serialise it with serde.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorReport {
    /// The error itself.
    #[serde(flatten)]
    pub error: ErrorSummary,
    /// The last absorbed attempt failure, or `null`.
    pub last_failure: Option<ErrorSummary>,
}

impl From<&GatewayError> for ErrorReport {
    fn from(error: &GatewayError) -> Self {
        let last_failure = error.last_failure().map(ErrorSummary::from);
        Self {
            error: ErrorSummary::from(error),
            last_failure,
        }
    }
}

impl ErrorReport {
    /// The report with `attempts` set (the number of upstream requests the call made).
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.error.attempts = Some(attempts);
        self
    }

    /// The report as a JSON value.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// A configuration error as JSON: `{"type":"ConfigError","code","key","message"}`,
/// where `key` is 20's `origin` (the environment key, settings field or builder method).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigErrorReport {
    /// Always `"ConfigError"`.
    #[serde(rename = "type")]
    pub error_type: &'static str,
    /// Stable code, e.g. `"hedge.after_ge_min_timeout"`.
    pub code: &'static str,
    /// The origin: environment key, settings field or builder method.
    pub key: String,
    /// English message; never contains a secret.
    pub message: String,
}

impl From<&ConfigError> for ConfigErrorReport {
    fn from(error: &ConfigError) -> Self {
        Self {
            error_type: "ConfigError",
            code: error.code,
            key: error.origin.clone(),
            message: error.message.clone(),
        }
    }
}

impl ConfigErrorReport {
    /// The report as a JSON value.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
