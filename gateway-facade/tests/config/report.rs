//! `ErrorReport` / `ConfigErrorReport` JSON (05 R-50): exact key sets and values for several
//! error types.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeSet;

use gateway_ports::{
    AttemptError, AttemptFailure, ConfigError, ErrorOperation, FailureReason, GatewayError,
    ReasonCode, ResultInvalidDetails, ScopeReason, Unavailable,
};
use polygateway::{ConfigErrorReport, ErrorReport};
use serde_json::{Value, json};

const KEYS: [&str; 11] = [
    "type",
    "category",
    "message",
    "reason_code",
    "http_status",
    "retry_after_s",
    "scope",
    "scope_reason",
    "per_source_reasons",
    "attempts",
    "last_failure",
];

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn transient_503() -> AttemptError {
    let mut f = AttemptFailure::new("qwen_1: HTTP 503: unavailable", ErrorOperation::Chat);
    f.source_name = Some("qwen_1".into());
    f.http_status = Some(503);
    f.retry_after_s = Some(2.0);
    AttemptError::transient(f)
}

#[test]
fn r_50_all_sources_exhausted_with_last_failure() {
    let mut u = Unavailable::new("llm", ScopeReason::RetryExhausted, 0.5);
    u.per_source_reasons
        .insert("qwen_1".into(), FailureReason::RateLimited);
    u.last_failure = Some(Box::new(transient_503()));
    let error = GatewayError::all_sources_exhausted(u);
    let json = ErrorReport::from(&error).with_attempts(3).to_json();
    assert_eq!(keys(&json), KEYS.into_iter().collect());
    assert_eq!(json["type"], json!("AllSourcesExhausted"));
    assert_eq!(json["category"], Value::Null);
    assert_eq!(
        json["message"],
        json!("llm gateway temporarily unavailable: retry_exhausted")
    );
    assert_eq!(json["retry_after_s"], json!(0.5));
    assert_eq!(json["scope"], json!("llm"));
    assert_eq!(json["scope_reason"], json!("retry_exhausted"));
    assert_eq!(
        json["per_source_reasons"],
        json!({"qwen_1": "rate_limited"})
    );
    assert_eq!(json["attempts"], json!(3));
    let last = &json["last_failure"];
    let mut nested: BTreeSet<&str> = KEYS.into_iter().collect();
    nested.remove("last_failure");
    assert_eq!(keys(last), nested, "same shape minus last_failure");
    assert_eq!(last["type"], json!("TransientError"));
    assert_eq!(last["category"], json!("transient"));
    assert_eq!(last["http_status"], json!(503));
    assert_eq!(last["retry_after_s"], json!(2.0));
    assert_eq!(last["scope"], Value::Null);
    assert_eq!(last["per_source_reasons"], Value::Null);
    assert_eq!(last["attempts"], Value::Null);
}

#[test]
fn r_50_request_rejected_has_category_status_and_null_last_failure() {
    let mut f = AttemptFailure::new("qwen_1: HTTP 400: context too long", ErrorOperation::Chat);
    f.http_status = Some(400);
    f.reason_code = Some(ReasonCode::ContextLengthExceeded);
    let json = ErrorReport::from(&GatewayError::request_rejected(f)).to_json();
    assert_eq!(keys(&json), KEYS.into_iter().collect());
    assert_eq!(json["type"], json!("RequestRejectedError"));
    assert_eq!(json["category"], json!("request_rejected"));
    assert_eq!(json["reason_code"], json!("context_length_exceeded"));
    assert_eq!(json["http_status"], json!(400));
    assert_eq!(json["retry_after_s"], Value::Null);
    assert_eq!(json["scope_reason"], Value::Null);
    assert_eq!(
        json["attempts"],
        json!(0),
        "carried by the error: 0 until a call sets it"
    );
    assert_eq!(json["last_failure"], Value::Null);
}

#[test]
fn r_50_result_invalid_deadline_invalid_argument_closed() {
    let ri = GatewayError::result_invalid(ResultInvalidDetails::new(AttemptFailure::new(
        "bad",
        ErrorOperation::Embedding,
    )));
    assert_eq!(
        ErrorReport::from(&ri).to_json()["category"],
        json!("result_invalid")
    );
    let cde = GatewayError::call_deadline_exceeded("llm", 0.05);
    let j = ErrorReport::from(&cde).to_json();
    assert_eq!(j["type"], json!("CallDeadlineExceeded"));
    assert_eq!(j["scope"], json!("llm"));
    assert_eq!(
        j["retry_after_s"],
        Value::Null,
        "no retry_after_s by design"
    );
    let ia = GatewayError::invalid_argument("ChatOptions::meta", "meta key `BAD-KEY`");
    let j = ErrorReport::from(&ia).to_json();
    assert_eq!(j["type"], json!("InvalidArgument"));
    assert_eq!(j["message"], json!("ChatOptions::meta: meta key `BAD-KEY`"));
    let closed = ErrorReport::from(&GatewayError::ClientClosed).to_json();
    assert_eq!(closed["type"], json!("ClientClosed"));
    assert_eq!(closed["message"], json!("client is closed"));
}

#[test]
fn r_50_circuit_open_reports_scope_reason() {
    let error = GatewayError::circuit_open(Unavailable::new("llm", ScopeReason::CircuitOpen, 1.5));
    let j = ErrorReport::from(&error).to_json();
    assert_eq!(j["type"], json!("CircuitOpenError"));
    assert_eq!(j["scope_reason"], json!("circuit_open"));
    assert_eq!(j["retry_after_s"], json!(1.5));
    assert_eq!(j["per_source_reasons"], json!({}));
}

#[test]
fn r_50_config_error_report() {
    let e = ConfigError::new("settings.no_sources", "LLM", "scope LLM has no sources");
    let j = ConfigErrorReport::from(&e).to_json();
    assert_eq!(
        j,
        json!({"type": "ConfigError", "code": "settings.no_sources", "key": "LLM",
               "message": "scope LLM has no sources"})
    );
}

/// CF-023: the promised public names resolve from `polygateway` (`OcrClient` waits for the OCR
/// issue; `CallDeadlineExceeded` is the `GatewayError` variant).
#[test]
fn cf_023_facade_exports() {
    fn named<T>() -> &'static str {
        std::any::type_name::<T>()
    }
    let _ = (
        named::<polygateway::GatewayClient>(),
        named::<polygateway::EmbeddingClient>(),
        named::<polygateway::CallStats>(),
        named::<polygateway::StreamEnd>(),
        named::<polygateway::ResponseMode>(),
        named::<polygateway::OpenAiChatCompletion>(),
        named::<polygateway::Effort>(),
        named::<polygateway::GatewaySettings>(),
        named::<polygateway::EmbeddingSettings>(),
        named::<polygateway::ConfigError>(),
    );
    assert_eq!(polygateway::EFFORT_ORDER.len(), 8);
    let deadline = polygateway::GatewayError::call_deadline_exceeded("llm", 1.0);
    assert!(matches!(
        deadline,
        polygateway::GatewayError::CallDeadlineExceeded(_)
    ));
    assert!(
        polygateway::telemetry_schema_sql(gateway_core::telemetry::SqlBackend::Sqlite)
            .contains("llm_calls")
    );
}
