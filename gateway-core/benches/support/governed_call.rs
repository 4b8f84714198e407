//! The governed chat call the core benchmarks measure (`core_overhead.rs`, `cache_hit.rs` and
//! `adapter-redis/examples/bench_cache.rs` include this file with `#[path]`): one source, the
//! production memory limiter and breaker, an attempt that answers at once, a small prompt.
#![allow(
    clippy::disallowed_methods,
    reason = "the bench owns the runtime and spawns the cleanup worker"
)]

use std::sync::Arc;

use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::governor::{Governor, GovernorBuilder};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    BreakerConfig, ChatRequest, Clock, FinishReason, GlobalLimits, JsonObject, SourceConfig,
    StreamEnd,
};
use serde_json::Value;

/// An attempt runner that answers at once with a fixed result.
#[derive(Debug)]
pub struct InstantRunner {
    /// What every attempt returns.
    pub result: TransportResult,
}

impl AttemptRunner for InstantRunner {
    async fn run(
        &self,
        _ctx: AttemptCtx,
        _signals: Option<LegSignals>,
        _control: LegControl,
    ) -> AttemptOutcome {
        AttemptOutcome::Success(Box::new(self.result.clone()))
    }
}

/// One source with room for 128 calls in flight and a 400-token estimate.
pub fn sources() -> Vec<SourceConfig> {
    let mut s = SourceConfig::new("s1", "bench", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = 128;
    s.est_tokens = Some(400);
    vec![s]
}

/// A governor with the production memory limiter and breaker; its cleanup worker is spawned
/// on the current runtime.
pub fn governor(clock: Arc<dyn Clock>) -> Governor {
    let sources = sources();
    let limiter = Arc::new(MemoryRateLimiter::new(
        "llm",
        &sources,
        GlobalLimits::default(),
        100.0,
        clock.clone(),
    ));
    let breaker = Arc::new(MemoryCircuitBreaker::new(
        "llm",
        BreakerConfig::default(),
        clock.clone(),
    ));
    let (gov, rx) = GovernorBuilder::new("llm", sources, limiter.clone(), breaker)
        .clock(clock)
        .wakeup(limiter.notify())
        .build();
    tokio::spawn(run_cleanup_worker(rx));
    gov
}

/// A realistic small prompt: a system message and a ~300-character user message.
pub fn request(user: &str) -> ChatRequest {
    let msg = |role: &str, content: String| {
        let mut m = JsonObject::new();
        m.insert("role".into(), Value::from(role));
        m.insert("content".into(), Value::from(content));
        m
    };
    ChatRequest::new(vec![
        msg("system", "You are a terse assistant.".to_owned()),
        msg(
            "user",
            format!("{user} {}", "lorem ipsum dolor sit amet ".repeat(10)),
        ),
    ])
}

/// An ~80-character answer that finished with `stop` and `[DONE]`.
pub fn answer() -> TransportResult {
    let mut r = TransportResult::ok(60, 40);
    r.content = "A short cached answer of about eighty characters, as a typical reply.".into();
    r.finish_reason = FinishReason::new("stop");
    r.stream_end = Some(StreamEnd::Done);
    r
}
