//! Core overhead per governed call (05 R-56): pick (selector order + health), breaker gate,
//! pacer, limiter acquire, a scripted attempt that returns at once, settle/release, the
//! breaker/health/pacer write-backs, `mark_progress`, and the `CallStats` snapshot — rows
//! excluded (`NoopRowSink`, the governor's default), no OS randomness per call (ids come from
//! a keyed hash of a counter, jitter from a seeded `SmallRng`).
//!
//! Two shapes: one task issuing calls back to back on a `current_thread` runtime, and 64 tasks
//! issuing calls concurrently on a 2-worker runtime (the figure is wall time / calls).
//! Target ≤ 5 µs per call. Run: `cargo bench -p gateway-core --bench
//! core_overhead -- --warm-up-time 1 --measurement-time 3`.
#![allow(
    clippy::disallowed_methods,
    reason = "the bench owns the runtime and spawns the cleanup worker and concurrent calls"
)]
#![allow(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_core::attempt::TransportResult;
use gateway_core::governor::{CallOptions, Governor};
use tokio::time::Instant;

#[path = "support/governed_call.rs"]
#[allow(dead_code, reason = "the shared fixture also serves the cache benches")]
mod governed_call;

use governed_call::InstantRunner;

/// The shared bench governor over one unlimited source (`max_concurrency = 128`, no RPM/TPM
/// cap) with the production defaults and `TokioClock`. Must be called inside a runtime (it
/// spawns the cleanup worker).
fn governor() -> Governor {
    governed_call::governor(Arc::new(gateway_core::clock::TokioClock::new()))
}

fn runner() -> Arc<InstantRunner> {
    Arc::new(InstantRunner {
        result: TransportResult::ok(10, 5),
    })
}

async fn one_call(gov: &Governor, runner: &InstantRunner) {
    let g = gov
        .run_chat(runner, CallOptions::default())
        .await
        .unwrap_or_else(|e| panic!("bench call failed: {e}"));
    black_box(g);
}

fn core_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("core_overhead");

    let rt1 = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let gov1 = rt1.block_on(async { governor() });
    let r1 = runner();
    // `PGW_BENCH_CALLS=N`: run N calls on the one-task runtime and exit, for instruction counts
    // (`valgrind --tool=callgrind`, R-56: this machine is noisy). Compare two values of N.
    if let Some(n) = std::env::var("PGW_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        rt1.block_on(async {
            for _ in 0..n {
                one_call(&gov1, &r1).await;
            }
        });
        std::process::exit(0);
    }
    group.bench_function("one_task", |b| {
        b.iter_custom(|iters| {
            rt1.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    one_call(&gov1, &r1).await;
                }
                start.elapsed()
            })
        });
    });

    const TASKS: u64 = 64;
    let rt64 = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let gov64 = rt64.block_on(async { governor() });
    let r64 = runner();
    group.bench_function("64_tasks", |b| {
        b.iter_custom(|iters| {
            let per_task = iters.div_ceil(TASKS).max(1);
            let elapsed = rt64.block_on(async {
                let start = Instant::now();
                let handles: Vec<_> = (0..TASKS)
                    .map(|_| {
                        let gov = gov64.clone();
                        let r = Arc::clone(&r64);
                        tokio::spawn(async move {
                            for _ in 0..per_task {
                                one_call(&gov, &r).await;
                            }
                        })
                    })
                    .collect();
                for h in handles {
                    h.await.unwrap_or_else(|e| panic!("task: {e}"));
                }
                start.elapsed()
            });
            // Scale to the requested iteration count (per-call time is what is reported).
            elapsed.mul_f64(iters as f64 / (per_task * TASKS) as f64)
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = core_overhead
}
criterion_main!(benches);
