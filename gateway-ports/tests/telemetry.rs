//! `TelemetryRow::columns()` (05 R-22, 80 T-3, T-7, CT-TEL-02).

use gateway_ports::*;

/// The 80 T-7 INSERT order, written out independently of the crate's constant.
const SPEC_ORDER: [&str; 39] = [
    "call_id",
    "parent_call_id",
    "session_id",
    "model",
    "provider",
    "source_name",
    "messages",
    "response",
    "thinking",
    "prompt_tokens",
    "completion_tokens",
    "usage_source",
    "latency_ms",
    "ttft_ms",
    "max_inter_token_ms",
    "cache_hit",
    "error",
    "cost",
    "cached_prompt_tokens",
    "model_reported",
    "sampling",
    "reasoning_tokens",
    "tenant_id",
    "meta",
    "thinking_observation",
    "reasoning_effort",
    "scope",
    "operation",
    "logical_call_id",
    "event_kind",
    "http_status_code",
    "error_type",
    "cause_type",
    "error_body",
    "attempts",
    "total_latency_ms",
    "stall_ms",
    "stall_count",
    "stream_end",
];

fn sparse_row() -> TelemetryRow {
    TelemetryRow {
        call_id: "c-1".into(),
        parent_call_id: None,
        session_id: None,
        model: "".into(),
        provider: "".into(),
        source_name: "".into(),
        messages: "[]".into(),
        response: "".into(),
        thinking: "".into(),
        prompt_tokens: 0,
        completion_tokens: 0,
        usage_source: UsageSource::Unavailable,
        latency_ms: 0,
        ttft_ms: None,
        max_inter_token_ms: None,
        cache_hit: false,
        error: None,
        cost: None,
        cached_prompt_tokens: None,
        model_reported: None,
        sampling: None,
        reasoning_tokens: None,
        tenant_id: "".into(),
        meta: "{}".into(),
        thinking_observation: None,
        reasoning_effort: None,
        scope: "LLM".into(),
        operation: CallOperation::Chat,
        logical_call_id: None,
        event_kind: EventKind::TerminalFailure,
        http_status_code: None,
        error_type: None,
        cause_type: None,
        error_body: None,
        attempts: None,
        total_latency_ms: None,
        stall_ms: None,
        stall_count: None,
        stream_end: None,
    }
}

fn full_row() -> TelemetryRow {
    TelemetryRow {
        parent_call_id: Some("p".into()),
        session_id: Some("s".into()),
        model: "m".into(),
        provider: "openai".into(),
        source_name: "openai_1".into(),
        response: "hi".into(),
        thinking: "t".into(),
        prompt_tokens: 10,
        completion_tokens: 20,
        usage_source: UsageSource::Measured,
        latency_ms: 250,
        ttft_ms: Some(0.0),
        max_inter_token_ms: Some(12.5),
        cache_hit: true,
        error: Some("cancelled".into()),
        cost: Some(0.0),
        cached_prompt_tokens: Some(0),
        model_reported: Some("m-2024".into()),
        sampling: Some("{\"seed\":1}".into()),
        reasoning_tokens: Some(0),
        tenant_id: "t1".into(),
        meta: "{\"k\":1}".into(),
        thinking_observation: Some(ThinkingObservation::Observed),
        reasoning_effort: Some(Effort::Off),
        operation: CallOperation::ParseLayout,
        logical_call_id: Some("l".into()),
        event_kind: EventKind::Attempt,
        http_status_code: Some(200),
        error_type: Some("TransientError"),
        cause_type: Some(CauseKind::ReadTimeout),
        error_body: Some("body".into()),
        attempts: Some(0),
        total_latency_ms: Some(0),
        stall_ms: Some(0),
        stall_count: Some(0),
        stream_end: Some(StreamEnd::EofAfterFinish),
        ..sparse_row()
    }
}

#[test]
fn t_3_columns_are_39_in_spec_order() {
    assert_eq!(TelemetryRow::COLUMNS.len(), 39);
    assert_eq!(TelemetryRow::COLUMN_COUNT, 39);
    assert_eq!(TelemetryRow::COLUMNS, SPEC_ORDER);
    let row = sparse_row();
    let names: Vec<&str> = row.columns().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, SPEC_ORDER);
}

#[test]
fn t_3_serialised_field_order_equals_columns() {
    // serde_json's preserve_order keeps the struct's field order.
    let value = serde_json::to_value(full_row()).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, SPEC_ORDER);
    assert_eq!(value["usage_source"], "measured");
    assert_eq!(value["reasoning_effort"], "none");
    assert_eq!(value["cause_type"], "ReadTimeout");
}

#[test]
fn ct_tel_02_none_is_null_and_zero_is_zero() {
    let sparse = sparse_row();
    let optional = [
        "parent_call_id",
        "session_id",
        "ttft_ms",
        "max_inter_token_ms",
        "error",
        "cost",
        "cached_prompt_tokens",
        "model_reported",
        "sampling",
        "reasoning_tokens",
        "thinking_observation",
        "reasoning_effort",
        "logical_call_id",
        "http_status_code",
        "error_type",
        "cause_type",
        "error_body",
        "attempts",
        "total_latency_ms",
        "stall_ms",
        "stall_count",
        "stream_end",
    ];
    for (name, value) in sparse.columns() {
        assert_eq!(value.is_null(), optional.contains(&name), "{name}");
    }
    let full = full_row();
    for (name, value) in full.columns() {
        assert!(!value.is_null(), "{name} must not be NULL when Some");
    }
    let cols = full.columns();
    let get = |name: &str| cols.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(get("ttft_ms"), SqlValue::Real(0.0));
    assert_eq!(get("cost"), SqlValue::Real(0.0));
    assert_eq!(get("cached_prompt_tokens"), SqlValue::Int(0));
    assert_eq!(get("stall_ms"), SqlValue::Int(0));
    assert_eq!(get("cache_hit"), SqlValue::Bool(true));
    assert_eq!(get("http_status_code"), SqlValue::Int(200));
    assert_eq!(get("prompt_tokens"), SqlValue::Int(10));
}

#[test]
fn r_15_enum_columns_bind_as_wire_strings() {
    let row = full_row();
    let cols = row.columns();
    let get = |name: &str| cols.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(get("usage_source"), SqlValue::Text("measured"));
    assert_eq!(get("operation"), SqlValue::Text("parse_layout"));
    assert_eq!(get("event_kind"), SqlValue::Text("attempt"));
    assert_eq!(get("thinking_observation"), SqlValue::Text("observed"));
    assert_eq!(get("reasoning_effort"), SqlValue::Text("none"));
    assert_eq!(get("cause_type"), SqlValue::Text("ReadTimeout"));
    assert_eq!(get("stream_end"), SqlValue::Text("eof_after_finish"));
    assert_eq!(get("error_type"), SqlValue::Text("TransientError"));
    assert_eq!(get("tenant_id"), SqlValue::Text("t1"));
    assert_eq!(get("meta"), SqlValue::Text("{\"k\":1}"));
}

#[test]
fn t_58_telemetry_status_default_is_none_backend() {
    let status = TelemetryStatus::default();
    assert_eq!(status.backend, "none");
    assert!(!status.degraded && !status.fatal);
    assert_eq!((status.dropped_rows, status.written_rows), (0, 0));
    assert_eq!(TelemetryStatus::for_backend("sqlite").backend, "sqlite");
}
