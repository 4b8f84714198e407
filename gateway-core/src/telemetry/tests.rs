//! Unit tests of the emitter, row shaping, cost, pricing and schema (80; 95 §14).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use gateway_ports::{
    AttemptError, AttemptFailure, CallOperation, CallStats, CauseKind, ChatRequest, Effort,
    EmbedRequest, ErrorOperation, EventKind, GatewayError, LlmResponse, ModelPrice, OcrRequest,
    PricingTable, RecordError, RecordErrorKind, ResultInvalidDetails, ScopeReason, Secret,
    SourceConfig, SqlValue, StreamEnd, TelemetryRecorder, TelemetryRow, TelemetryStatus,
    TelemetryStatusProvider, ThinkingObservation, Unavailable, Usage, UsageSource,
};
use serde_json::{Value, json};

use super::schema::*;
use super::shape::*;
use super::*;
use crate::attempt::TransportResult;
use crate::rows::{
    AttemptRowFacts, AttemptRowOutcome, CacheHitRowFacts, CancelLabel, RowCall, RowSink,
    TerminalOutcome, TerminalRowFacts,
};

fn obj(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn call_with(op: CallOperation, input: RowInput) -> Arc<RowCall> {
    let mut c = RowCall::new("lcid-1", op, "llm");
    c.input = Some(Arc::new(input));
    Arc::new(c)
}

fn chat_call() -> Arc<RowCall> {
    let mut req = ChatRequest::new(vec![obj(json!({"role": "user", "content": "hi"}))]);
    req.overlay = obj(json!({"temperature": 0.2}));
    req.tenant_id = Some("tenant-a".into());
    req.meta.insert("b".into(), 1i64.into());
    req.meta.insert("a".into(), "x".into());
    req.reasoning_effort = Some(Effort::Medium);
    call_with(CallOperation::Chat, RowInput::chat(&req))
}

fn src(model: &str) -> Arc<SourceConfig> {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, model);
    s.extra_body = obj(json!({"temperature": 0.9, "top_p": 0.5}));
    Arc::new(s)
}

fn ok_result(p: u64, c: u64) -> TransportResult {
    let mut r = TransportResult::default();
    r.content = "answer".into();
    r.thinking = "thought".into();
    r.usage = Usage::new(p, c);
    r.usage_source = UsageSource::Measured;
    r
}

fn attempt(
    call: Arc<RowCall>,
    source: Arc<SourceConfig>,
    outcome: AttemptRowOutcome,
) -> AttemptRowFacts {
    AttemptRowFacts {
        call,
        call_id: "att-1".into(),
        source,
        attempt: 1,
        hedge_leg: false,
        latency_ms: 42,
        outcome,
    }
}

fn success(call: Arc<RowCall>, model: &str, r: TransportResult) -> AttemptRowFacts {
    attempt(call, src(model), AttemptRowOutcome::Success(Box::new(r)))
}

fn terminal(call: Arc<RowCall>, outcome: TerminalOutcome) -> TerminalRowFacts {
    TerminalRowFacts {
        call,
        call_id: "term-1".into(),
        outcome,
        stats: CallStats::new("lcid-mig", 1, 1),
    }
}

fn cache_hit(call: Arc<RowCall>, response: LlmResponse) -> CacheHitRowFacts {
    CacheHitRowFacts {
        call,
        call_id: "hit-1".into(),
        response: Box::new(response),
    }
}

fn transient(msg: &str) -> AttemptError {
    let mut f = AttemptFailure::new(msg, ErrorOperation::Chat);
    f.source_name = Some("openai_1".into());
    AttemptError::transient(f)
}

fn exhausted() -> GatewayError {
    GatewayError::all_sources_exhausted(Unavailable::new("llm", ScopeReason::RetryExhausted, 1.0))
}

fn priced() -> RowShaper {
    let mut t = PricingTable::default();
    t.prices.insert(
        "qwen-max".into(),
        ModelPrice {
            input_per_1m: 1.0,
            output_per_1m: 8.0,
            cached_input_per_1m: None,
        },
    );
    RowShaper::new(Some(t), None, true).unwrap()
}

fn historic() -> LlmResponse {
    let mut r = LlmResponse::default();
    r.content = "cached answer".into();
    r.model = "qwen-max".into();
    r.provider = "openai".into();
    r.source_name = "openai_1".into();
    r.usage = Usage::new(10, 5);
    r.usage_source = UsageSource::Estimated;
    r.thinking_observation = ThinkingObservation::Absent;
    r.stream_end = Some(StreamEnd::Done);
    r
}

// ---- 95 §14 -------------------------------------------------------------------------------

#[test]
fn cf_345_columns_tail() {
    assert_eq!(TelemetryRow::COLUMNS.len(), 39);
    assert_eq!(
        TelemetryRow::COLUMNS[32..],
        [
            "cause_type",
            "error_body",
            "attempts",
            "total_latency_ms",
            "stall_ms",
            "stall_count",
            "stream_end"
        ]
    );
}

#[test]
fn cf_346_each_row_kind_sets_exactly_39_fields() {
    let s = priced();
    let rows = [
        s.attempt_row(&success(chat_call(), "qwen-max", ok_result(1, 1))),
        s.cache_hit_row(&cache_hit(chat_call(), historic())),
        s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted()))),
    ];
    let kinds: Vec<EventKind> = rows.iter().map(|r| r.event_kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Attempt,
            EventKind::CacheHit,
            EventKind::TerminalFailure
        ]
    );
    for row in &rows {
        let names: Vec<&str> = row.columns().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, TelemetryRow::COLUMNS);
        assert_eq!(row.logical_call_id.as_deref(), Some("lcid-1"));
        assert_eq!(row.scope, "llm");
    }
}

#[test]
fn cf_347_t_4_text_cap_zero_is_config_error() {
    let e = RowShaper::new(None, Some(0), true).unwrap_err();
    assert_eq!(e.code, "telemetry.text_cap");
    assert_eq!(e.origin, "PGW_TELEMETRY_TEXT_CAP");
    assert!(RowShaper::new(None, Some(1), true).is_ok());
}

#[test]
fn cf_348_t_31_cost_qwen_max() {
    let row = priced().attempt_row(&success(
        chat_call(),
        "qwen-max",
        ok_result(800_000, 800_000),
    ));
    assert!((row.cost.unwrap() - 7.2).abs() < 1e-9);
}

#[test]
fn cf_349_t_30_cache_hit_cost_zero_with_and_without_table() {
    let hit = cache_hit(chat_call(), historic());
    assert_eq!(priced().cache_hit_row(&hit).cost, Some(0.0));
    assert_eq!(RowShaper::default().cache_hit_row(&hit).cost, Some(0.0));
}

#[test]
fn cf_350_failed_attempt_cost_null() {
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("qwen-max"),
        AttemptRowOutcome::Failed(transient("TransientError: boom")),
    ));
    assert_eq!(row.cost, None);
    assert_eq!(row.error.as_deref(), Some("TransientError: boom"));
}

#[test]
fn cf_351_unknown_model_cost_null() {
    let row = priced().attempt_row(&success(chat_call(), "mystery", ok_result(10, 5)));
    assert_eq!(row.cost, None);
    assert_eq!(row.error, None);
}

#[test]
fn cf_352_no_price_table_cost_null() {
    let row = RowShaper::default().attempt_row(&success(chat_call(), "qwen-max", ok_result(10, 5)));
    assert_eq!(row.cost, None);
}

#[test]
fn cf_353_unavailable_usage_cost_null() {
    let mut r = ok_result(0, 0);
    r.usage_source = UsageSource::Unavailable;
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", r));
    assert_eq!(
        (row.usage_source, row.cost),
        (UsageSource::Unavailable, None)
    );
}

#[test]
fn cf_354_t_31_cached_prompt_pricing() {
    let usage = Usage {
        prompt_tokens: 1000,
        completion_tokens: 0,
        cached_prompt_tokens: Some(400),
        reasoning_tokens: None,
    };
    let price = |cached| {
        let mut t = PricingTable::default();
        t.prices.insert(
            "m".into(),
            ModelPrice {
                input_per_1m: 1.0,
                output_per_1m: 8.0,
                cached_input_per_1m: cached,
            },
        );
        RowShaper::new(Some(t), None, true).unwrap()
    };
    let c = price(Some(0.1)).cost(CallOperation::Chat, "m", &usage, UsageSource::Measured);
    assert!((c.unwrap() - (600.0 * 1.0 + 400.0 * 0.1) / 1e6).abs() < 1e-15);
    let c = price(None).cost(CallOperation::Chat, "m", &usage, UsageSource::Estimated);
    assert!((c.unwrap() - 1000.0 / 1e6).abs() < 1e-15);
    assert_eq!(
        price(None).cost(
            CallOperation::RecognizeText,
            "m",
            &usage,
            UsageSource::Measured
        ),
        None
    );
}

#[test]
fn cf_355_terminal_cost_null() {
    let row = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(row.cost, None);
}

#[test]
fn cf_356_usage_source_kept_on_success() {
    for us in [
        UsageSource::Measured,
        UsageSource::Estimated,
        UsageSource::Unavailable,
    ] {
        let mut r = ok_result(10, 5);
        r.usage_source = us;
        let row = priced().attempt_row(&success(chat_call(), "qwen-max", r));
        assert_eq!(row.usage_source, us);
    }
    let mut salvaged = ok_result(10, 5);
    salvaged.usage_source = UsageSource::Estimated;
    salvaged.stream_end = Some(StreamEnd::Salvaged);
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", salvaged));
    assert_eq!(row.usage_source, UsageSource::Estimated);
}

#[test]
fn cf_357_usage_source_failed_cache_terminal() {
    let s = priced();
    let failed = s.attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    let hit = s.cache_hit_row(&cache_hit(chat_call(), historic()));
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(
        [failed.usage_source, hit.usage_source, term.usage_source],
        [
            UsageSource::Unavailable,
            UsageSource::Estimated,
            UsageSource::Unavailable
        ]
    );
    assert_eq!(
        (term.attempts, term.total_latency_ms, term.latency_ms),
        (Some(1), Some(1), 1)
    );
}

#[test]
fn cf_358_t_24_http_status_as_received() {
    for status in [503u16, 529] {
        let mut f = AttemptFailure::new(format!("HTTP {status}"), ErrorOperation::Chat);
        f.http_status = Some(status);
        let row = priced().attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(AttemptError::transient(f)),
        ));
        assert_eq!(row.http_status_code, Some(i32::from(status)));
    }
}

// covers: T-22
#[test]
fn cf_359_t_21_t_23_empty_message_falls_back_to_type_name() {
    for cause in [
        CauseKind::ConnectTimeout,
        CauseKind::ReadTimeout,
        CauseKind::WriteTimeout,
        CauseKind::PoolTimeout,
    ] {
        let mut f = AttemptFailure::new("", ErrorOperation::Chat);
        f.cause = Some(cause);
        let row = priced().attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(AttemptError::transient(f)),
        ));
        assert_eq!(row.error.as_deref(), Some("TransientError"));
        assert_eq!(row.error_type, Some("TransientError"));
        assert_eq!(row.cause_type, Some(cause));
    }
}

#[test]
fn cf_360_t_25_error_body_is_scrubbed_summary() {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "m");
    s.api_key = Some(Secret::new("key-12345".to_owned()));
    let long = format!(
        "{}  Authorization: Bearer abc.def key-12345 from 10.0.0.1 {}",
        "x".repeat(3000),
        "tail"
    );
    let mut f = AttemptFailure::new("HTTP 500", ErrorOperation::Chat);
    f.body_text = Some(long);
    let row = priced().attempt_row(&attempt(
        chat_call(),
        Arc::new(s),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    let body = row.error_body.unwrap();
    assert!(body.chars().count() <= 2048);
    assert!(body.ends_with("tail"));
    for secret in ["abc.def", "key-12345", "10.0.0.1"] {
        assert!(!body.contains(secret), "{secret} leaked");
    }
    assert_eq!(row.error.as_deref(), Some("HTTP 500"), "never raw_text");
    // Empty body → NULL.
    let mut f = AttemptFailure::new("HTTP 500", ErrorOperation::Chat);
    f.body_text = Some("   ".into());
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    assert_eq!(row.error_body, None);
}

#[test]
fn cf_361_t_20_success_row_error_fields_null() {
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", ok_result(1, 1)));
    assert_eq!(
        (
            row.http_status_code,
            row.error_type,
            row.cause_type,
            row.error_body,
            row.error
        ),
        (None, None, None, None, None)
    );
}

#[test]
fn cf_362_t_27_ocr_operation_from_call_site() {
    let mut f = AttemptFailure::new("result archive missing", ErrorOperation::DownloadResult);
    f.http_status = Some(200);
    let call = call_with(
        CallOperation::ParseLayout,
        RowInput::ocr(&OcrRequest::new(vec![0u8; 7])),
    );
    let row = priced().attempt_row(&attempt(
        call.clone(),
        src("ocr"),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    assert_eq!(row.operation, CallOperation::ParseLayout);
    assert_eq!(
        row.error.as_deref(),
        Some("TransientError: result archive missing")
    );
    assert_eq!(row.http_status_code, Some(200));
    assert_eq!(
        row.messages,
        r#"[{"role":"user","content":"<ocr:layout image_bytes=7>"}]"#
    );
    let term = priced().terminal_row(&terminal(call, TerminalOutcome::Error(exhausted())));
    assert!(term.error.unwrap().starts_with("AllSourcesExhausted: "));
}

#[test]
fn cf_365_t_29_stream_end_from_response() {
    let mut r = ok_result(1, 1);
    r.stream_end = Some(StreamEnd::EofAfterFinish);
    let row = priced().attempt_row(&success(chat_call(), "m", r));
    assert_eq!(row.stream_end, Some(StreamEnd::EofAfterFinish));
}

#[test]
fn cf_366_t_29_stream_end_null_on_failed_cache_terminal() {
    let s = priced();
    let rows = [
        s.attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(transient("x")),
        )),
        s.cache_hit_row(&cache_hit(chat_call(), historic())),
        s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted()))),
    ];
    assert_eq!(rows.map(|r| r.stream_end), [None, None, None]);
}

#[test]
fn cf_367_t_28_non_stream_and_cancelled_have_no_stall_or_stream_end() {
    let s = priced();
    let ok = s.attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    let mut streamed = ok_result(1, 1);
    streamed.stall_ms = Some(3200.9);
    streamed.stall_count = Some(2);
    let cancelled = s.attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Cancelled(CancelLabel::Cancelled),
    ));
    for row in [&ok, &cancelled] {
        assert_eq!(
            (row.stream_end, row.stall_ms, row.stall_count),
            (None, None, None)
        );
    }
    assert_eq!(cancelled.error.as_deref(), Some("cancelled"));
    assert_eq!(cancelled.error_type, None);
    let stalled = s.attempt_row(&success(chat_call(), "m", streamed));
    assert_eq!(
        (stalled.stall_ms, stalled.stall_count),
        (Some(3200), Some(2))
    );
}

#[test]
fn cf_384_t_16_hedge_cancelled_loser_row() {
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled),
    ));
    assert_eq!(row.error.as_deref(), Some("hedge_cancelled"));
    assert_eq!(
        (
            row.stall_ms,
            row.stall_count,
            row.http_status_code,
            row.cost
        ),
        (None, None, None, None)
    );
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Unknown));
}

#[test]
fn cf_368_embed_and_ocr_rows_have_no_effort_or_sampling() {
    let mut s = SourceConfig::new("e_1", "openai", "http://127.0.0.1:9", None, "emb");
    s.enable_thinking = Some(true);
    s.reasoning_effort = Some(Effort::High);
    s.extra_body = obj(json!({"dimensions": 8}));
    let s = Arc::new(s);
    let embed = call_with(
        CallOperation::Embed,
        RowInput::embed(&EmbedRequest::new(vec!["a".into(), "b".into()]), 1),
    );
    let ocr = call_with(
        CallOperation::RecognizeText,
        RowInput::ocr(&OcrRequest::new(vec![1u8; 3])),
    );
    for call in [embed, ocr] {
        let ok = priced().attempt_row(&attempt(
            call.clone(),
            s.clone(),
            AttemptRowOutcome::Success(Box::new(ok_result(3, 0))),
        ));
        let failed = priced().attempt_row(&attempt(
            call.clone(),
            s.clone(),
            AttemptRowOutcome::Failed(transient("x")),
        ));
        let term = priced().terminal_row(&terminal(call, TerminalOutcome::Error(exhausted())));
        for row in [&ok, &failed, &term] {
            assert_eq!(
                (row.reasoning_effort, row.sampling.as_deref()),
                (None, None)
            );
            assert_eq!((row.stall_ms, row.stall_count), (None, None));
        }
        assert!(failed.error.is_some() && term.error.is_some());
    }
}

#[test]
fn cf_369_effort_applied_on_attempt_request_level_elsewhere() {
    let mut r = ok_result(1, 1);
    r.applied_effort = Some(Effort::Low);
    let s = priced();
    assert_eq!(
        s.attempt_row(&success(chat_call(), "m", r))
            .reasoning_effort,
        Some(Effort::Low)
    );
    assert_eq!(
        s.cache_hit_row(&cache_hit(chat_call(), historic()))
            .reasoning_effort,
        Some(Effort::Medium)
    );
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(term.reasoning_effort, Some(Effort::Medium));
}

#[test]
fn cf_370_c_47_image_part_is_digested() {
    let msg = obj(json!({"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAABBBB"}}
    ]}));
    let call = call_with(
        CallOperation::Chat,
        RowInput::chat(&ChatRequest::new(vec![msg])),
    );
    let row = priced().attempt_row(&success(call, "m", ok_result(1, 1)));
    assert!(!row.messages.contains("AAAABBBB"));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    assert_eq!(v[0]["content"][0], json!({"type": "text", "text": "look"}));
    assert_eq!(v[0]["content"][1]["type"], "image_url");
    assert_eq!(v[0]["content"][1]["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn cf_371_t_35_t_36_text_cap_10_on_25_chars() {
    let content = "abcdefghijklmnopqrstuvwxy";
    let req = ChatRequest::new(vec![obj(json!({"role": "user", "content": content}))]);
    let input = RowInput::chat(&req);
    let call = call_with(CallOperation::Chat, input);
    let s = RowShaper::new(None, Some(10), true).unwrap();
    let mut r = ok_result(1, 1);
    r.content = content.into();
    let row = s.attempt_row(&success(call.clone(), "m", r));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    assert_eq!(v[0]["content"], "abcdefghij…(+15 chars)");
    assert_eq!(row.response, "abcdefghij…(+15 chars)");
    assert_eq!(row.thinking, "thought");
    assert_eq!(
        req.messages[0]["content"], content,
        "caller's message unchanged"
    );
}

// ---- 80 rules ------------------------------------------------------------------------------

#[test]
fn t_12_terminal_row_values() {
    let mut stats = CallStats::new("lcid-1", 3, 1234);
    stats.stall_ms = Some(5);
    let facts = TerminalRowFacts {
        stats,
        ..terminal(chat_call(), TerminalOutcome::Error(exhausted()))
    };
    let row = priced().terminal_row(&facts);
    assert_eq!(
        (
            row.model.as_str(),
            row.provider.as_str(),
            row.source_name.as_str()
        ),
        ("", "", "")
    );
    assert_eq!((row.response.as_str(), row.thinking.as_str()), ("", ""));
    assert_eq!((row.prompt_tokens, row.completion_tokens), (0, 0));
    assert_eq!(
        (row.latency_ms, row.total_latency_ms, row.attempts),
        (1234, Some(1234), Some(3))
    );
    assert_eq!(row.error_type, Some("AllSourcesExhausted"));
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Unknown));
    assert_eq!((row.stall_ms, row.stall_count), (None, None));
    assert_eq!(row.call_id, "term-1");
    let cancelled = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Cancelled));
    assert_eq!(
        (cancelled.error.as_deref(), cancelled.error_type),
        (Some("cancelled"), None)
    );
}

#[test]
fn t_12_cache_hit_row_values() {
    let row = priced().cache_hit_row(&cache_hit(chat_call(), historic()));
    assert!(row.cache_hit);
    assert_eq!((row.latency_ms, row.ttft_ms), (0, None));
    assert_eq!(
        (row.model.as_str(), row.source_name.as_str()),
        ("qwen-max", "openai_1")
    );
    assert_eq!((row.prompt_tokens, row.completion_tokens), (10, 5));
    assert_eq!(row.response, "cached answer");
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Absent));
    assert_eq!(row.operation, CallOperation::Chat);
    assert_eq!(row.call_id, "hit-1");
}

#[test]
fn t_13_sampling_caller_over_extra_body_call_level_elsewhere() {
    let s = priced();
    let att = s.attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    assert_eq!(
        att.sampling.as_deref(),
        Some(r#"{"temperature":0.2,"top_p":0.5}"#)
    );
    let hit = s.cache_hit_row(&cache_hit(chat_call(), historic()));
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(hit.sampling.as_deref(), Some(r#"{"temperature":0.2}"#));
    assert_eq!(term.sampling, hit.sampling);
    // Nothing on either side → NULL.
    let bare = call_with(
        CallOperation::Chat,
        RowInput::chat(&ChatRequest::new(vec![])),
    );
    let plain = Arc::new(SourceConfig::new(
        "s_1",
        "p",
        "http://127.0.0.1:9",
        None,
        "m",
    ));
    let row = s.attempt_row(&attempt(
        bare,
        plain,
        AttemptRowOutcome::Success(Box::new(ok_result(1, 1))),
    ));
    assert_eq!(row.sampling, None);
}

// covers: T-15
#[test]
fn t_19_embed_terminal_summary() {
    let texts: Vec<String> = (0..5).map(|i| format!("{i}{}", "x".repeat(300))).collect();
    let call = call_with(
        CallOperation::Embed,
        RowInput::embed(&EmbedRequest::new(texts), 2),
    );
    let row = priced().terminal_row(&terminal(call.clone(), TerminalOutcome::Error(exhausted())));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["content"], "<embed texts=5 batches=3>");
    assert_eq!(items[1]["content"].as_str().unwrap().chars().count(), 200);
    let att = priced().attempt_row(&attempt(
        call,
        src("e"),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(
        serde_json::from_str::<Value>(&att.messages)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[test]
fn t_20_terminal_never_carries_status_cause_or_body() {
    let mut f = AttemptFailure::new("HTTP 400", ErrorOperation::Chat);
    f.http_status = Some(400);
    f.cause = Some(CauseKind::ReadError);
    f.body_text = Some("bad".into());
    let e = GatewayError::request_rejected(f);
    let row = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Error(e)));
    assert_eq!(
        (row.http_status_code, row.cause_type, row.error_body),
        (None, None, None)
    );
    assert_eq!(row.error_type, Some("RequestRejectedError"));
    assert_eq!(
        error_fields(ErrorInput::Label("cancelled"), CallOperation::Chat),
        ErrorFields {
            error: Some("cancelled".into()),
            ..ErrorFields::default()
        }
    );
    assert_eq!(
        error_fields(ErrorInput::None, CallOperation::Chat),
        ErrorFields::default()
    );
}

#[test]
fn t_26_result_invalid_terminal_detail() {
    let mut d = ResultInvalidDetails::new(AttemptFailure::new(
        "structured output invalid",
        ErrorOperation::Chat,
    ));
    d.repair_error = Some("r".repeat(250));
    d.validation_errors = vec!["e1".into(), "e2".into(), "e3".into(), "e4".into()];
    d.raw_text = "RAW".into();
    let row = priced().terminal_row(&terminal(
        chat_call(),
        TerminalOutcome::Error(GatewayError::result_invalid(d)),
    ));
    let error = row.error.unwrap();
    assert_eq!(
        error,
        format!(
            "structured output invalid | repair={} | validation=e1; e2; e3",
            "r".repeat(200)
        )
    );
    assert!(!error.contains("RAW"));
    assert_eq!(format_bounded_errors(&[]), "output could not be parsed");
}

#[test]
fn t_32_pricing_file_validation() {
    let (t, w) = parse_pricing(
        r#"{"qwen-max": {"input_per_1m": 1.0, "output_per_1m": 8.0},
            "deepseek-chat": {"input_per_1m": 2, "output_per_1m": 8, "cached_input_per_1m": 0.5, "note": "x"}}"#,
        "p.json",
    )
    .unwrap();
    assert_eq!(t.prices["deepseek-chat"].cached_input_per_1m, Some(0.5));
    assert_eq!(t.prices["qwen-max"].cached_input_per_1m, None);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].code, "pricing.unknown_member");
    assert!(parse_pricing("{}", "p.json").unwrap().0.prices.is_empty());
    for bad in [
        "not json",
        "[]",
        r#"{"m": 1}"#,
        r#"{"m": {"input_per_1m": 1}}"#,
        r#"{"m": {"input_per_1m": -1, "output_per_1m": 1}}"#,
        r#"{"m": {"input_per_1m": "1", "output_per_1m": 1}}"#,
    ] {
        let e = parse_pricing(bad, "p.json").unwrap_err();
        assert_eq!(
            (e.code, e.origin.as_str()),
            ("pricing.invalid", "PGW_PRICING_PATH"),
            "{bad}"
        );
        assert!(e.message.contains("p.json"));
    }
    let e = parse_pricing(r#"{"m": {"input_per_1m": 1}}"#, "p.json").unwrap_err();
    assert!(e.message.contains("\"m\""));
    let e = load_pricing("/nonexistent/pricing.json").unwrap_err();
    assert_eq!(e.code, "pricing.invalid");
}

#[test]
fn t_34_tenant_sentinel_and_canonical_meta() {
    let row = priced().attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    assert_eq!(
        (row.tenant_id.as_str(), row.meta.as_str()),
        ("tenant-a", r#"{"a":"x","b":1}"#)
    );
    let bare = call_with(CallOperation::Chat, RowInput::default());
    let row = priced().attempt_row(&success(bare, "m", ok_result(1, 1)));
    assert_eq!(
        (
            row.tenant_id.as_str(),
            row.meta.as_str(),
            row.messages.as_str()
        ),
        ("", "{}", "[]")
    );
    let none = Arc::new(RowCall::new("l", CallOperation::Chat, "llm"));
    let row = priced().terminal_row(&terminal(none, TerminalOutcome::Cancelled));
    assert_eq!((row.tenant_id.as_str(), row.meta.as_str()), ("", "{}"));
}

#[test]
fn t_35_cap_applies_to_text_parts_not_tool_arguments() {
    let msgs = vec![obj(
        json!({"role": "assistant", "content": [{"type": "text", "text": "0123456789abc"}],
        "tool_calls": [{"function": {"arguments": "0123456789abc"}}]}),
    )];
    let capped = cap_messages(&msgs, Some(4));
    assert_eq!(capped[0]["content"][0]["text"], "0123…(+9 chars)");
    assert_eq!(
        capped[0]["tool_calls"][0]["function"]["arguments"],
        "0123456789abc"
    );
    assert_eq!(cap_text("日本語テキスト", Some(3)), "日本語…(+4 chars)");
    assert_eq!(cap_text("short", Some(10)), "short");
    assert_eq!(cap_text("anything", None), "anything");
}

// ---- schema (95 §15, 80 §10.1) -------------------------------------------------------------

fn ddl_column_order(sql: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for line in sql.lines() {
        let line = line.trim();
        let name = if let Some(rest) = line.strip_prefix("ALTER TABLE llm_calls ADD COLUMN ") {
            rest.trim_start_matches("IF NOT EXISTS ")
                .split_whitespace()
                .next()
        } else if line.starts_with("CREATE")
            || line.starts_with("--")
            || line.starts_with(')')
            || line.is_empty()
        {
            None
        } else {
            line.split_whitespace().next()
        };
        if let Some(n) = name
            && !seen.iter().any(|s| s == n)
        {
            seen.push(n.to_owned());
        }
    }
    seen
}

#[test]
fn cf_373_t_43_t_49_ddl_first_appearance_is_physical_order() {
    let physical = physical_columns();
    assert_eq!(physical.len(), 40);
    assert_eq!(physical[18], "created_at");
    assert_eq!(&physical[..18], &TelemetryRow::COLUMNS[..18]);
    assert_eq!(&physical[19..], &TelemetryRow::COLUMNS[18..]);
    for backend in [SqlBackend::Sqlite, SqlBackend::Postgres] {
        assert_eq!(ddl_column_order(&telemetry_schema_sql(backend)), physical);
        assert_eq!(ddl_column_order(&create_table_sql(backend)), physical);
    }
    let pg = telemetry_schema_sql(SqlBackend::Postgres);
    assert!(pg.contains("meta JSONB NOT NULL DEFAULT '{}'::jsonb"));
    assert!(pg.contains("created_at TIMESTAMPTZ NOT NULL DEFAULT now()"));
    assert!(pg.contains("ALTER TABLE llm_calls ADD COLUMN IF NOT EXISTS stream_end TEXT;"));
    let lite = telemetry_schema_sql(SqlBackend::Sqlite);
    assert!(
        lite.contains("created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now'))")
    );
    assert!(lite.contains("ALTER TABLE llm_calls ADD COLUMN stream_end TEXT;"));
    assert!(!lite.contains("ADD COLUMN IF NOT EXISTS"));
}

#[test]
fn cf_374_t_44_backfill_list() {
    for backend in [SqlBackend::Sqlite, SqlBackend::Postgres] {
        let stmts: Vec<String> = BACKFILL_COLUMNS
            .iter()
            .map(|c| backfill_statement(backend, c))
            .collect();
        assert_eq!(
            stmts[0],
            "ALTER TABLE llm_calls ADD COLUMN cached_prompt_tokens INTEGER"
        );
        assert_eq!(
            stmts[20],
            "ALTER TABLE llm_calls ADD COLUMN stream_end TEXT"
        );
        assert!(stmts.iter().all(|s| !s.contains("IF NOT EXISTS")));
    }
    let names: Vec<&str> = BACKFILL_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names, TelemetryRow::COLUMNS[18..]);
}

#[test]
fn cf_375_t_45_insert_sql() {
    let all = insert_sql(SqlBackend::Sqlite, &TelemetryRow::COLUMNS);
    assert_eq!(all.matches('?').count(), 39);
    assert!(all.starts_with("INSERT OR IGNORE INTO llm_calls (call_id, parent_call_id,"));
    let pg = insert_sql(SqlBackend::Postgres, &TelemetryRow::COLUMNS);
    assert!(pg.ends_with("$39) ON CONFLICT DO NOTHING"));
    assert_eq!(
        insert_sql(SqlBackend::Postgres, &["call_id", "model"]),
        "INSERT INTO llm_calls (call_id, model) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    );
    // The pre-1.3.5 26-column INSERT is unchanged.
    assert_eq!(
        insert_sql(SqlBackend::Sqlite, &TelemetryRow::COLUMNS[..26]),
        "INSERT OR IGNORE INTO llm_calls (call_id, parent_call_id, session_id, model, provider, \
         source_name, messages, response, thinking, prompt_tokens, completion_tokens, usage_source, \
         latency_ms, ttft_ms, max_inter_token_ms, cache_hit, error, cost, cached_prompt_tokens, \
         model_reported, sampling, reasoning_tokens, tenant_id, meta, thinking_observation, \
         reasoning_effort) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    );
}

#[test]
fn t_46_schema_mode() {
    assert_eq!(
        SchemaMode::resolve(None, SqlBackend::Sqlite),
        SchemaMode::Auto
    );
    assert_eq!(
        SchemaMode::resolve(None, SqlBackend::Postgres),
        SchemaMode::Manual
    );
    assert_eq!(
        SchemaMode::resolve(Some(SchemaMode::Manual), SqlBackend::Sqlite),
        SchemaMode::Manual
    );
    assert_eq!(SchemaMode::parse("auto").unwrap(), SchemaMode::Auto);
    let e = SchemaMode::parse("AUTO").unwrap_err();
    assert_eq!(
        (e.code, e.origin.as_str()),
        ("telemetry.schema_mode", "PGW_TELEMETRY_SCHEMA_MODE")
    );
}

#[test]
fn t_47_manual_warning_text() {
    let w = manual_mode_warning(SqlBackend::Sqlite, &["scope", "stall_ms"]);
    assert!(w.contains("schema_mode=manual"));
    assert!(w.contains("the following dimensions will not be recorded: scope, stall_ms."));
    assert!(w.contains("\nALTER TABLE llm_calls ADD COLUMN scope TEXT;"));
    assert!(w.contains("\nALTER TABLE llm_calls ADD COLUMN stall_ms INTEGER;"));
}

// ---- emitter -------------------------------------------------------------------------------

/// A recorder like the SQLite one: `record` only queues (rows become visible in
/// `written` at its `flush`); `fail` refuses every row and counts it, as a full queue would.
#[derive(Debug, Default)]
struct FakeRecorder {
    pending: Mutex<Vec<TelemetryRow>>,
    written: Mutex<Vec<TelemetryRow>>,
    fail: bool,
    refused: Mutex<u64>,
    flushes: Mutex<u32>,
    closes: Mutex<u32>,
}

impl TelemetryStatusProvider for FakeRecorder {
    fn status(&self) -> TelemetryStatus {
        let mut s = TelemetryStatus::for_backend("sqlite");
        s.dropped_rows = 1 + *self.refused.lock().unwrap();
        s
    }
}

#[async_trait]
impl TelemetryRecorder for FakeRecorder {
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        if self.fail {
            *self.refused.lock().unwrap() += 1;
            return Err(RecordError::new(RecordErrorKind::Dropped, "queue full"));
        }
        self.pending.lock().unwrap().push(row);
        Ok(())
    }
    async fn flush(&self) {
        *self.flushes.lock().unwrap() += 1;
        let rows: Vec<_> = self.pending.lock().unwrap().drain(..).collect();
        self.written.lock().unwrap().extend(rows);
    }
    async fn close(&self) {
        *self.closes.lock().unwrap() += 1;
        self.flush().await;
    }
}

fn kinds(rows: &Mutex<Vec<TelemetryRow>>) -> Vec<EventKind> {
    rows.lock().unwrap().iter().map(|r| r.event_kind).collect()
}

// covers: T-1, T-51, R-24, D31
#[tokio::test]
async fn t_1_d31_emitter_hands_rows_over_at_emit_in_order_and_flush_covers_them() {
    let rec = Arc::new(FakeRecorder::default());
    let emitter = TelemetryEmitter::new(rec.clone(), EmitterConfig::default()).unwrap();
    emitter
        .attempt(success(chat_call(), "m", ok_result(1, 1)))
        .await;
    emitter.cache_hit(cache_hit(chat_call(), historic())).await;
    emitter
        .terminal(terminal(chat_call(), TerminalOutcome::Cancelled))
        .await;
    assert_eq!(rec.pending.lock().unwrap().len(), 3, "handed over at emit");
    assert!(rec.written.lock().unwrap().is_empty());
    RowSink::flush(&emitter).await;
    assert_eq!(
        kinds(&rec.written),
        [
            EventKind::Attempt,
            EventKind::CacheHit,
            EventKind::TerminalFailure
        ],
        "flush covers the rows handed over, in emit order"
    );
    assert_eq!(*rec.flushes.lock().unwrap(), 1);
    emitter.close().await;
    emitter.close().await;
    assert_eq!(
        *rec.closes.lock().unwrap(),
        2,
        "close is the recorder's (idempotent)"
    );
    emitter.emit(priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Cancelled)));
    assert_eq!(
        emitter.dropped_rows(),
        1,
        "after close: dropped and counted"
    );
    assert_eq!(rec.written.lock().unwrap().len(), 3);
}

/// T-39 / D31: a refused row is the recorder's to count (once), never the caller's error.
#[tokio::test]
async fn t_39_d31_recorder_refusal_is_counted_once_never_propagated() {
    let rec = Arc::new(FakeRecorder {
        fail: true,
        ..FakeRecorder::default()
    });
    let emitter = TelemetryEmitter::new(rec.clone(), EmitterConfig::default()).unwrap();
    for _ in 0..3 {
        emitter
            .attempt(success(chat_call(), "m", ok_result(1, 1)))
            .await;
    }
    emitter.flush().await;
    assert_eq!(
        emitter.dropped_rows(),
        0,
        "the emitter handed every row over"
    );
    assert_eq!(
        emitter.status().dropped_rows,
        4,
        "recorder's 1 + its 3 refusals, counted once"
    );
}

#[test]
fn ct_tel_02_shaped_none_stays_null_zero_stays_zero() {
    let mut r = ok_result(0, 0);
    r.usage.cached_prompt_tokens = Some(0);
    r.stall_ms = Some(0.0);
    r.stall_count = Some(0);
    let row = RowShaper::default().attempt_row(&success(chat_call(), "m", r));
    let cols = row.columns();
    let get = |n: &str| cols.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(get("cached_prompt_tokens"), SqlValue::Int(0));
    assert_eq!(get("stall_ms"), SqlValue::Int(0));
    assert_eq!(get("reasoning_tokens"), SqlValue::Null);
    assert_eq!(get("cost"), SqlValue::Null);
}

/// The owned path moves the texts but builds exactly the borrowed path's row.
// covers: T-12, T-35
#[test]
fn t_12_owned_attempt_row_equals_borrowed_row() {
    let mut r = ok_result(3, 4);
    r.content = "a fairly long answer".into();
    r.thinking = "some thinking".into();
    r.model_reported = Some("m-0919".into());
    for cap in [None, Some(5)] {
        let shaper = RowShaper::new(None, cap, true).unwrap();
        let facts = success(chat_call(), "qwen-max", r.clone());
        assert_eq!(
            shaper.attempt_row_owned(facts.clone()),
            shaper.attempt_row(&facts)
        );
        let failed = attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(transient("boom from 10.0.0.1")),
        );
        assert_eq!(
            shaper.attempt_row_owned(failed.clone()),
            shaper.attempt_row(&failed)
        );
    }
}

/// 70 C-38 (the row-shaper fix of issue 17): a failed chat attempt records the level that would
/// have been applied on its source — the request level first (it used to be the source level),
/// then the source intent including the `ENABLE_THINKING` sugar.
#[test]
fn c_38_failed_chat_row_request_level_first() {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "o3-mini");
    s.reasoning_effort = Some(Effort::Low);
    let failed = priced().attempt_row(&attempt(
        chat_call(),
        Arc::new(s),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(
        failed.reasoning_effort,
        Some(Effort::Medium),
        "request first"
    );
    let mut sugar = SourceConfig::new("qwen_1", "qwen", "http://127.0.0.1:9", None, "qwen3-8b");
    sugar.enable_thinking = Some(true);
    let call = call_with(CallOperation::Chat, RowInput::chat(&ChatRequest::default()));
    let failed = priced().attempt_row(&attempt(
        call,
        Arc::new(sugar),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(failed.reasoning_effort, Some(Effort::Auto), "sugar counted");
}
