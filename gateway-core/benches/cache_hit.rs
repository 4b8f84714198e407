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
//! Run: `cargo bench -p gateway-core --bench cache_hit -- --warm-up-time 1
//! --measurement-time 3`.
#![allow(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_core::cache::{ChatCache, MemoryCache, decode_entry};
use gateway_core::governor::CallOptions;
use gateway_ports::{ChatRequest, Clock, ResponseMode};
use tokio::time::Instant;

#[path = "support/governed_call.rs"]
mod governed_call;

use governed_call::{InstantRunner, answer, governor, request, sources};

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
