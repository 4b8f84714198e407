//! Response-cache latency per governed chat call, memory vs Redis, in one run (issue 18
//! benchmark; docs/benchmarks.md "Response cache"). The call shape is the one of
//! `gateway-core/benches/cache_hit.rs`: one governed chat call at a time on a `current_thread`
//! runtime, production defaults (memory limiter and breaker, AIMD pacer, health-aware selector,
//! `TokioClock`, no telemetry), an attempt that returns at once, a two-message prompt of ~330
//! characters and an ~80-character answer. Variants, interleaved round by round so machine
//! load hits all of them alike:
//!
//! - `memory hit` / `redis hit`: key, `get`, restore + hit rewrite, statistics;
//! - `no cache`: the same governed call without a cache (a miss minus the cache work);
//! - `memory miss+write` / `redis miss+write`: a fresh prompt per call — key, `get` (miss), the
//!   governed call, cacheability, encode, `set`.
//!
//! Uses the Redis at `REDIS_URL` (default `redis://127.0.0.1:6379`) under a fresh scope; every
//! entry is written with a 60 s TTL, so nothing stays behind.
//!
//! `cargo run --release -p adapter-redis --example bench_cache [calls_per_round] [rounds]`
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapter_redis::{RedisCache, RedisConnection, RedisOptions};
use gateway_core::cache::{ChatCache, MemoryCache};
use gateway_core::clock::TokioClock;
use gateway_core::governor::{CallOptions, Governor};
use gateway_ports::{ChatRequest, Clock, ResponseCache};
use tokio::time::Instant;

#[path = "../../gateway-core/benches/support/governed_call.rs"]
mod governed_call;

use governed_call::{InstantRunner, answer, governor, request, sources};

/// One governed call through `cache` (or none); returns whether it was a hit.
async fn call(
    gov: &Governor,
    runner: &InstantRunner,
    cache: Option<&ChatCache>,
    r: &ChatRequest,
) -> bool {
    let prepared = cache.and_then(|c| c.prepare(r, None));
    gov.run_chat_cached(runner, CallOptions::default(), prepared.as_ref())
        .await
        .expect("call")
        .cache_hit
}

fn pct(v: &[Duration], p: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e6
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let per_round: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let scope = format!("bench-cache-{}-{nanos}", std::process::id());
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    let gov = governor(clock.clone());
    let runner = InstantRunner { result: answer() };
    let ttl = Duration::from_secs(60);
    let conn = RedisConnection::new(&url, RedisOptions::default()).expect("REDIS_URL");
    let redis: Arc<dyn ResponseCache> = Arc::new(RedisCache::new(&scope, conn.clone()));
    let memory: Arc<dyn ResponseCache> = Arc::new(MemoryCache::new(10_000, clock.clone()));
    let memory_cache = ChatCache::new(memory, &sources(), "llm", ttl);
    let redis_cache = ChatCache::new(redis, &sources(), "llm", ttl);
    let hit = request("the repeated question");
    assert!(
        !call(&gov, &runner, Some(&memory_cache), &hit).await,
        "prime memory"
    );
    assert!(
        !call(&gov, &runner, Some(&redis_cache), &hit).await,
        "prime redis"
    );
    assert!(
        call(&gov, &runner, Some(&redis_cache), &hit).await,
        "redis hit works"
    );

    let names = [
        "memory hit",
        "redis hit",
        "no cache",
        "memory miss+write",
        "redis miss+write",
    ];
    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mut n = 0usize;
    // Round 0 is a warm-up and is not recorded.
    for round in 0..=rounds {
        for (i, lat_i) in lat.iter_mut().enumerate() {
            for _ in 0..per_round {
                let fresh;
                let (cache, r, want_hit) = match i {
                    0 => (Some(&memory_cache), &hit, Some(true)),
                    1 => (Some(&redis_cache), &hit, Some(true)),
                    2 => (None, &hit, None),
                    _ => {
                        n += 1;
                        fresh = request(&format!("question {n}"));
                        let c = if i == 3 { &memory_cache } else { &redis_cache };
                        (Some(c), &fresh, Some(false))
                    }
                };
                let t = Instant::now();
                let was_hit = call(&gov, &runner, cache, r).await;
                let d = t.elapsed();
                if let Some(want) = want_hit {
                    assert_eq!(was_hit, want, "{}", names[i]);
                }
                if round > 0 {
                    lat_i.push(d);
                }
            }
        }
    }
    println!("| variant | calls | p50 µs/call | p99 µs/call | mean µs/call |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, v) in names.iter().zip(lat.iter_mut()) {
        v.sort();
        let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64 * 1e6;
        println!(
            "| {name} | {} | {:.1} | {:.1} | {:.1} |",
            v.len(),
            pct(v, 0.50),
            pct(v, 0.99),
            mean
        );
    }
    conn.quit().await;
}
