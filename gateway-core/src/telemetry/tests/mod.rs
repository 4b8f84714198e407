//! Unit tests of the emitter, row shaping, cost, pricing and schema (80; 95 §14).
//!
//! This file holds the shared fixtures (calls, sources, results, a priced shaper); each group
//! of tests is a child module.

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

mod cf_cost;
mod cf_fields;
mod ddl;
mod emitter;
mod rules;

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
