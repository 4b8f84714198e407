//! Telemetry hot path (issue 9 follow-up; docs/benchmarks.md "Telemetry hot path"): what one
//! governed call pays for its attempt row, on the calling thread and on the SQLite writer thread.
//!
//! `cargo bench -p adapter-sqlite --bench telemetry_hot_path` prints one table. Modes
//! (`TH_MODE`, default `all`):
//!
//! - `trickle`: the emitter over a `SqliteRecorder` (defaults) on a 2-worker runtime; the load
//!   side emits one attempt row (fresh call each time, so the `messages` JSON is built per row,
//!   as in a real call) every `TH_INTERVAL_US` µs (default 250, about the end-to-end rate at
//!   concurrency 1), flushing every `TH_FLUSH_EVERY` rows (default 100). Reports the
//!   `RowSink::attempt` wall time on the calling thread, CPU time per row of the calling thread,
//!   the runtime workers and the writer thread (from `/proc/self/task/*/schedstat`), and rows per
//!   transaction. The calling-thread figure has the loop's own cost (the sleep) subtracted and
//!   includes the periodic `flush()`.
//! - `lockstep`: `TH_BATCH` rows (default 1) recorded back to back, then `flush()`, repeated
//!   for `TH_ROWS` rows: a deterministic number of rows per transaction, for callgrind
//!   (`valgrind --tool=callgrind --separate-threads=yes`, writer thread `pgw-telemetry-s`).
//! - `shape`: facts → row only, `TH_ROWS` times (callgrind: calling thread).
//!
//! Knobs: `TH_ROWS` (default 4 000), `TH_LINGER_MS` (writer linger; unset = the default).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use adapter_sqlite::{SqliteRecorder, SqliteRecorderConfig};
use gateway_core::rows::RowSink;
use gateway_core::telemetry::{EmitterConfig, TelemetryEmitter};
use gateway_ports::{TelemetryRecorder, TelemetryStatusProvider};
use tokio::time::Instant;

#[path = "support/mod.rs"]
mod support;
use support::{facts, pricing};

fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time in ns of every thread whose name starts with `prefix` (`/proc/self/task/*/stat`
/// names, `schedstat` first field = ns on CPU).
fn thread_cpu_ns(prefix: &str) -> u64 {
    let mut total = 0;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let sched = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += sched
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

/// CPU ns of the calling thread.
fn own_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn recorder_config(path: std::path::PathBuf) -> SqliteRecorderConfig {
    #[allow(unused_mut)]
    let mut config = SqliteRecorderConfig::new(path);
    if let Ok(ms) = std::env::var("TH_LINGER_MS")
        && let Ok(ms) = ms.parse::<u64>()
    {
        config = config.with_linger(Duration::from_millis(ms));
    }
    config
}

fn trickle(rows: u64) {
    let interval = Duration::from_micros(env_u64("TH_INTERVAL_US", 250));
    let flush_every = env_u64("TH_FLUSH_EVERY", 100).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(SqliteRecorder::new(recorder_config(
        dir.path().join("t.db"),
    )));
    let config = EmitterConfig::default().with_pricing(Some(pricing()));
    let dyn_recorder: Arc<dyn TelemetryRecorder> = recorder.clone();
    let emitter = TelemetryEmitter::new(dyn_recorder, config).unwrap();
    // Warm-up: open and prepare the file, grow the allocators.
    rt.block_on(async {
        for i in 0..200 {
            emitter.attempt(facts(1_000_000_000 + i)).await;
        }
        emitter.flush().await;
    });
    // The loop's own cost (sleep, bookkeeping) without rows, subtracted below.
    let idle = {
        let c0 = own_cpu_ns();
        for _ in 0..rows.min(1000) {
            std::thread::sleep(interval);
        }
        (own_cpu_ns() - c0) as f64 / rows.min(1000) as f64
    };
    let all: Vec<_> = (0..rows).map(facts).collect();
    let tx0 = recorder.committed_transactions();
    let (w0, r0) = (thread_cpu_ns("pgw-telemetry"), thread_cpu_ns("tokio-rt"));
    let c0 = own_cpu_ns();
    let wall = rt.block_on(async {
        let mut wall = Vec::with_capacity(rows as usize);
        for (i, f) in all.into_iter().enumerate() {
            let t0 = Instant::now();
            emitter.attempt(f).await;
            wall.push(t0.elapsed().as_nanos() as u64);
            if (i as u64 + 1).is_multiple_of(flush_every) {
                emitter.flush().await;
            }
            std::thread::sleep(interval);
        }
        emitter.flush().await;
        wall
    });
    let own = ((own_cpu_ns() - c0) as f64 - idle * rows as f64).max(0.0) as u64;
    let writer = thread_cpu_ns("pgw-telemetry") - w0;
    let workers = thread_cpu_ns("tokio-rt") - r0;
    let tx = recorder.committed_transactions() - tx0;
    let status = emitter.status();
    assert_eq!(status.dropped_rows, 0, "{status:?}");
    rt.block_on(emitter.close());
    let mut sorted = wall.clone();
    sorted.sort_unstable();
    let mean = wall.iter().sum::<u64>() as f64 / rows as f64;
    let per = |ns: u64| ns as f64 / rows as f64 / 1000.0;
    println!(
        "| trickle {} µs, {} rows | attempt() p50 {:.1} µs, p99 {:.1} µs, mean {:.1} µs | calling thread CPU {:.1} µs/row | runtime workers CPU {:.1} µs/row | writer CPU {:.1} µs/row | {:.1} rows/transaction |",
        interval.as_micros(),
        rows,
        sorted[sorted.len() / 2] as f64 / 1000.0,
        sorted[sorted.len() * 99 / 100] as f64 / 1000.0,
        mean / 1000.0,
        per(own),
        per(workers),
        per(writer),
        rows as f64 / tx.max(1) as f64,
    );
}

fn lockstep(rows: u64) {
    let batch = env_u64("TH_BATCH", 1).max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recorder = SqliteRecorder::new(recorder_config(dir.path().join("t.db")));
    let shaper = gateway_core::telemetry::RowShaper::new(Some(pricing()), None, true).unwrap();
    let all: Vec<_> = (0..rows).map(|i| shaper.attempt_row(&facts(i))).collect();
    let w0 = thread_cpu_ns("pgw-telemetry");
    let t0 = Instant::now();
    rt.block_on(async {
        let mut it = all.into_iter().peekable();
        while it.peek().is_some() {
            for row in it.by_ref().take(batch as usize) {
                recorder.record(row).unwrap();
            }
            recorder.flush().await;
        }
    });
    let wall = t0.elapsed();
    let writer = thread_cpu_ns("pgw-telemetry") - w0;
    let status = recorder.status();
    assert_eq!(status.written_rows, rows, "{status:?}");
    println!(
        "| lockstep {batch} rows/flush, {rows} rows | wall {:.1} µs/row | writer CPU {:.1} µs/row | {} transactions |",
        wall.as_nanos() as f64 / rows as f64 / 1000.0,
        writer as f64 / rows as f64 / 1000.0,
        recorder.committed_transactions(),
    );
}

fn shape(rows: u64) {
    let shaper = gateway_core::telemetry::RowShaper::new(Some(pricing()), None, true).unwrap();
    let all: Vec<_> = (0..rows).map(facts).collect();
    let c0 = own_cpu_ns();
    let mut bytes = 0;
    for f in &all {
        bytes += std::hint::black_box(shaper.attempt_row(f)).messages.len();
    }
    println!(
        "| shape {rows} rows | {:.2} µs/row CPU | {} messages bytes/row |",
        (own_cpu_ns() - c0) as f64 / rows as f64 / 1000.0,
        bytes / rows as usize
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is expected.
    let rows = env_u64("TH_ROWS", 4_000).max(1);
    let mode = std::env::var("TH_MODE").unwrap_or_else(|_| "all".into());
    if mode == "shape" || mode == "all" {
        shape(rows);
    }
    if mode == "lockstep" || mode == "all" {
        lockstep(rows);
    }
    if mode == "trickle" || mode == "all" {
        trickle(rows);
    }
}
