//! Row fixtures shared by the telemetry benches (`telemetry.rs`, `telemetry_hot_path.rs`).

#![allow(
    clippy::unwrap_used,
    dead_code,
    reason = "bench fixtures on fixed input"
)]

use std::sync::Arc;

use gateway_core::attempt::TransportResult;
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome, RowCall};
use gateway_core::telemetry::RowInput;
use gateway_ports::{CallOperation, ChatRequest, ModelPrice, PricingTable, SourceConfig};
use serde_json::json;

/// Prices for `qwen-max`: 1.0 in, 8.0 out per 1 M tokens.
pub fn pricing() -> PricingTable {
    let mut pricing = PricingTable::default();
    pricing.prices.insert(
        "qwen-max".into(),
        ModelPrice {
            input_per_1m: 1.0,
            output_per_1m: 8.0,
            cached_input_per_1m: None,
        },
    );
    pricing
}

/// One call's attempt facts: a 4-message chat (≈ 560 characters each), overlay, tenant, a
/// 700-character answer. `i` makes the ids unique; each call gets a fresh `RowInput`.
pub fn facts(i: u64) -> AttemptRowFacts {
    let messages = (0..4)
        .map(|m| {
            json!({"role": if m % 2 == 0 { "user" } else { "assistant" },
                   "content": "lorem ipsum dolor sit amet ".repeat(20)})
            .as_object()
            .cloned()
            .unwrap()
        })
        .collect();
    let mut req = ChatRequest::new(messages);
    req.overlay = json!({"temperature": 0.2, "max_tokens": 512})
        .as_object()
        .cloned()
        .unwrap();
    req.tenant_id = Some("tenant-a".into());
    // Shared like the facade's request (`RowInput::chat(&Arc<ChatRequest>)`).
    let req = Arc::new(req);
    let mut call = RowCall::new(format!("lcid-{i}"), CallOperation::Chat, "llm");
    call.input = Some(Arc::new(RowInput::chat(&req)));
    let source = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "qwen-max");
    let mut result = TransportResult::ok(1200, 300);
    result.content = "answer ".repeat(100);
    AttemptRowFacts::new(
        Arc::new(call),
        format!("att-{i}"),
        Arc::new(source),
        250,
        AttemptRowOutcome::Success(Box::new(result)),
    )
}

/// `key` parsed as a number, or `default`.
pub fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
