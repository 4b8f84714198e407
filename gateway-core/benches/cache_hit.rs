//! Response cache latency (70 Part C; issue 18 target: a memory hit ≤ 10 µs): one governed chat
//! call on one task, `current_thread` runtime, production defaults (memory limiter and breaker,
//! AIMD pacer, health-aware selector, `TokioClock`, `NoopRowSink`), an attempt that returns at
//! once.
//!
//! - `memory_hit`: the whole cached path of a hit — key (digest + canonical JSON + SHA-256),
//!   `MemoryCache::get`, entry restore and hit rewrite, statistics snapshot;
//! - `miss_then_write`: a fresh prompt per call — key, `get` (miss), the governed loop, the
//!   cacheability check, encode and `set` (the memory cache is bounded, so it stays small);
//! - `no_cache`: the same governed call without a cache (the baseline of a miss);
//! - `key_only` and `restore_only`: the two pure steps of a hit.
//!
//! Run: `cargo bench -p gateway-core --features testing --bench cache_hit -- --warm-up-time 1
//! --measurement-time 3`.
#![allow(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::cache::{ChatCache, MemoryCache, decode_entry};
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::governor::{CallOptions, Governor, GovernorBuilder};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    BreakerConfig, ChatRequest, Clock, FinishReason, GlobalLimits, JsonObject, ResponseMode,
    SourceConfig, StreamEnd,
};
use serde_json::Value;
use tokio::time::Instant;

#[derive(Debug)]
struct InstantRunner {
    result: TransportResult,
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

fn sources() -> Vec<SourceConfig> {
    let mut s = SourceConfig::new("s1", "bench", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = 128;
    s.est_tokens = Some(400);
    vec![s]
}

fn governor(clock: Arc<dyn Clock>) -> Governor {
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
fn request(user: &str) -> ChatRequest {
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

fn answer() -> TransportResult {
    let mut r = TransportResult::ok(60, 40);
    r.content = "A short cached answer of about eighty characters, as a typical reply.".into();
    r.finish_reason = FinishReason::new("stop");
    r.stream_end = Some(StreamEnd::Done);
    r
}

fn cache_bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let clock: Arc<dyn Clock> = Arc::new(gateway_core::clock::TokioClock::new());
    let gov = rt.block_on(async { governor(clock.clone()) });
    let runner = InstantRunner { result: answer() };
    let cache = ChatCache::new(
        Arc::new(MemoryCache::new(10_000, clock)),
        &sources(),
        "llm",
        Duration::from_secs(86_400),
    );
    let hit_request = request("the repeated question");
    // Prime the entry.
    rt.block_on(async {
        let call = cache.prepare(&hit_request, None);
        let r = gov
            .run_chat_cached(&runner, CallOptions::default(), call.as_ref())
            .await
            .unwrap_or_else(|e| panic!("prime: {e}"));
        assert!(!r.cache_hit);
    });

    group.bench_function("memory_hit", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let call = cache.prepare(&hit_request, None);
                    let r = gov
                        .run_chat_cached(&runner, CallOptions::default(), call.as_ref())
                        .await
                        .unwrap_or_else(|e| panic!("hit: {e}"));
                    debug_assert!(r.cache_hit);
                    black_box(r);
                }
                start.elapsed()
            })
        });
    });

    let small = ChatCache::new(
        Arc::new(MemoryCache::new(
            1_000,
            Arc::new(gateway_core::clock::TokioClock::new()),
        )),
        &sources(),
        "llm",
        Duration::from_secs(86_400),
    );
    let mut n = 0u64;
    group.bench_function("miss_then_write", |b| {
        b.iter_custom(|iters| {
            let requests: Vec<ChatRequest> = (0..iters)
                .map(|i| request(&format!("question {}", n + i)))
                .collect();
            n += iters;
            rt.block_on(async {
                let start = Instant::now();
                for r in &requests {
                    let call = small.prepare(r, None);
                    let out = gov
                        .run_chat_cached(&runner, CallOptions::default(), call.as_ref())
                        .await
                        .unwrap_or_else(|e| panic!("miss: {e}"));
                    debug_assert!(!out.cache_hit);
                    black_box(out);
                }
                start.elapsed()
            })
        });
    });

    group.bench_function("no_cache", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = gov
                        .run_chat_cached(&runner, CallOptions::default(), None)
                        .await
                        .unwrap_or_else(|e| panic!("call: {e}"));
                    black_box(r);
                }
                start.elapsed()
            })
        });
    });

    group.bench_function("key_only", |b| {
        b.iter(|| black_box(cache.key_for(black_box(&hit_request), None)));
    });

    let key = cache.key_for(&hit_request, None);
    let stored = rt
        .block_on(cache.backend().get(&key))
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("entry primed"));
    group.bench_function("restore_only", |b| {
        b.iter(|| black_box(decode_entry(black_box(&stored), ResponseMode::Text, None)));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = cache_bench
}
criterion_main!(benches);
