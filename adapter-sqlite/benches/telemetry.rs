//! Telemetry benchmarks (issue "telemetry"): rows per second through the SQLite recorder
//! (record + flush, WAL, batched transactions) and the call-path cost of emitting one row
//! (shape the row from facts + hand it to the emitter's queue).
//!
//! Sustained mode (issue 21), run first: one producer thread offers `TEL_RATE` rows/s (default
//! 100 000) for `TEL_SECS` seconds (default 5), paced against the clock (it sends what is due,
//! never more, so the figure is what the writer keeps up with, not what the 10 000-row queue
//! buffers), then flushes; prints rows offered, written and dropped, the achieved written rate
//! and the writer thread's CPU per row (`/proc/self/task/*/schedstat`; rows per writer CPU
//! second = what one core sustains). Rows: the fully populated 39-column contract row with a
//! random UUID-like `call_id` (random primary-key inserts, as in production).
//! `TEL_WAL_CHECKPOINT=<pages>` sets the writer's WAL auto-checkpoint threshold;
//! `TEL_MODE=sustained` runs only this mode; `TEL_IDS=seq` uses ascending ids instead; `TEL_SQLITE_PATH=<file>` writes to that file
//! instead of a temp dir (e.g. to compare file systems).
//! Fixed mode (issue 21, fifth session): `TEL_MODE=fixed TEL_ROWS=<n>` (default 500 000) records
//! exactly `n` rows as fast as the writer takes them (the producer waits while the queue is
//! full, so nothing is dropped and every variant writes the same rows into the same-sized
//! index), then prints the writer's CPU per row and the process's resident set; deterministic
//! enough for `valgrind --tool=callgrind` and `strace -c`. Writer settings for both modes:
//! `TEL_WAL_CHECKPOINT=<pages>`, `TEL_CACHE_KIB=<KiB>`, `TEL_BATCH=<rows>`, `TEL_BACKLOG_BATCH=<rows>`.
//! Run: `cargo bench -p adapter-sqlite --bench telemetry`.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use adapter_sqlite::SqliteRecorder;
use async_trait::async_trait;
use std::time::Duration;

use tokio::time::Instant;

use criterion::{Criterion, Throughput, criterion_group};
use gateway_core::telemetry::{EmitterConfig, TelemetryEmitter};
use gateway_ports::{
    RecordError, TelemetryRecorder, TelemetryRow, TelemetryStatus, TelemetryStatusProvider,
};

#[path = "support/mod.rs"]
mod support;
use support::{facts, pricing};

const ROWS_PER_ITER: u64 = 5_000;

fn rows_per_second(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rec = SqliteRecorder::open(dir.path().join("bench.db"));
    let next = AtomicU64::new(0);
    let mut group = c.benchmark_group("sqlite_recorder");
    group.throughput(Throughput::Elements(ROWS_PER_ITER));
    group.sample_size(20);
    group.bench_function("record_5000_then_flush", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..ROWS_PER_ITER {
                    let id = next.fetch_add(1, Ordering::Relaxed);
                    rec.record(contract_tests::telemetry::full_row(&format!("c-{id}")))
                        .unwrap();
                }
                rec.flush().await;
            });
        });
    });
    group.finish();
    let s = rec.status();
    assert_eq!(
        s.dropped_rows, 0,
        "bench must not overflow the queue: {s:?}"
    );
}

#[derive(Debug, Default)]
struct Discard;

impl TelemetryStatusProvider for Discard {
    fn status(&self) -> TelemetryStatus {
        TelemetryStatus::for_backend("none")
    }
}

#[async_trait]
impl TelemetryRecorder for Discard {
    fn record(&self, _row: TelemetryRow) -> Result<(), RecordError> {
        Ok(())
    }
}

fn emit_cost(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pricing = pricing();
    let config = EmitterConfig::default().with_pricing(Some(pricing));
    let emitter = TelemetryEmitter::new(Arc::new(Discard), config).unwrap();
    let facts = facts(0);
    let mut group = c.benchmark_group("emitter_call_path");
    group.bench_function("shape_attempt_row", |b| {
        b.iter(|| emitter.shaper().attempt_row(&facts));
    });
    group.bench_function("shape_and_enqueue_attempt_row", |b| {
        b.iter(|| emitter.emit(emitter.shaper().attempt_row(&facts)));
    });
    group.finish();
    rt.block_on(emitter.flush());
    assert_eq!(emitter.dropped_rows(), 0);
}

/// A UUIDv4-shaped id from a counter (splitmix64), so primary-key inserts land at random.
fn uuid_like(n: u64) -> String {
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (a, b) = (mix(n), mix(n ^ 0xDEAD_BEEF));
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// CPU ns of the thread named `name` (as `comm` shows it: at most 15 bytes) in this process
/// (user + system, from schedstat).
fn thread_cpu_ns(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(dir.join("schedstat")).ok()?;
            return stat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// The recorder settings of the sustained and fixed modes (defaults unless `TEL_*` says).
fn bench_config(path: &std::path::Path) -> adapter_sqlite::SqliteRecorderConfig {
    let d = adapter_sqlite::SqliteRecorderConfig::new(path);
    let pages = support::env_u64("TEL_WAL_CHECKPOINT", u64::from(d.wal_autocheckpoint_pages));
    let cache = support::env_u64("TEL_CACHE_KIB", u64::from(d.cache_kib));
    let batch = support::env_u64("TEL_BATCH", d.batch_rows as u64);
    let backlog = support::env_u64("TEL_BACKLOG_BATCH", d.backlog_batch_rows as u64);
    println!(
        "settings: wal_autocheckpoint {pages} pages, cache {cache} KiB, batch {batch} rows, backlog batch {backlog} rows"
    );
    d.with_wal_autocheckpoint_pages(u32::try_from(pages).unwrap())
        .with_cache_kib(u32::try_from(cache).unwrap())
        .with_batch_rows(usize::try_from(batch).unwrap())
        .with_backlog_batch_rows(usize::try_from(backlog).unwrap())
}

/// Resident set size of this process in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// What both row-writing modes start from: a recorder on `TEL_SQLITE_PATH` (default a file in
/// a fresh temporary directory), opened and prepared before the clock starts, the row template,
/// and the id order (`TEL_IDS=seq`: ascending ids, to see what random primary-key inserts cost).
struct Run {
    _dir: tempfile::TempDir,
    rec: SqliteRecorder,
    rt: tokio::runtime::Runtime,
    template: gateway_ports::TelemetryRow,
    sequential: bool,
}

impl Run {
    fn open(file: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::var("TEL_SQLITE_PATH")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| dir.path().join(file));
        let rec = SqliteRecorder::new(bench_config(&path));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(rec.flush());
        Self {
            _dir: dir,
            rec,
            rt,
            template: contract_tests::telemetry::full_row("x"),
            sequential: std::env::var("TEL_IDS").as_deref() == Ok("seq"),
        }
    }
}

/// The `n`-th row's `call_id`: ascending or UUID-shaped random.
fn call_id(n: u64, sequential: bool) -> String {
    if sequential {
        format!("c-{n:012}")
    } else {
        uuid_like(n)
    }
}

/// `TEL_MODE=fixed`: exactly `TEL_ROWS` rows, none dropped (the producer waits for room).
fn fixed() {
    let total = support::env_u64("TEL_ROWS", 500_000);
    let Run {
        _dir,
        rec,
        rt,
        template,
        sequential,
    } = Run::open("fixed.db");
    let room = adapter_sqlite::DEFAULT_QUEUE_CAPACITY - 1;
    let cpu0 = thread_cpu_ns("pgw-telemetry-s").unwrap_or(0);
    let start = Instant::now();
    let mut rss_at_tenth = 0;
    for sent in 0..total {
        while rec.queued_rows() >= room {
            std::thread::sleep(Duration::from_micros(200));
        }
        let mut row = template.clone();
        row.call_id = call_id(sent, sequential);
        rec.record(row).unwrap();
        if sent + 1 == total / 10 {
            rss_at_tenth = rss_kib();
        }
    }
    rt.block_on(rec.flush());
    let elapsed = start.elapsed();
    let cpu = thread_cpu_ns("pgw-telemetry-s").unwrap_or(0) - cpu0;
    let s = rec.status();
    let tx = rec.committed_transactions();
    println!(
        "fixed: {} rows written, {} dropped, in {:.2} s = {:.0} rows/s; {} transactions ({:.0} rows each); writer CPU {:.2} µs per row = {:.0} rows per writer CPU second; RSS {} KiB after {} rows, {} KiB after {}",
        s.written_rows,
        s.dropped_rows,
        elapsed.as_secs_f64(),
        s.written_rows as f64 / elapsed.as_secs_f64(),
        tx,
        s.written_rows as f64 / tx.max(1) as f64,
        cpu as f64 / 1000.0 / s.written_rows.max(1) as f64,
        s.written_rows as f64 / (cpu.max(1) as f64 / 1e9),
        rss_at_tenth,
        total / 10,
        rss_kib(),
        total
    );
    rt.block_on(rec.close());
}

fn sustained() {
    let rate = support::env_u64("TEL_RATE", 100_000);
    let secs = support::env_u64("TEL_SECS", 5);
    let Run {
        _dir,
        rec,
        rt,
        template,
        sequential,
    } = Run::open("sustained.db");
    let total = rate * secs;
    let cpu0 = thread_cpu_ns("pgw-telemetry-s").unwrap_or(0);
    let start = Instant::now();
    let mut sent = 0u64;
    let mut refused = 0u64;
    while sent < total {
        let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
        if due <= sent {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        while sent < due {
            let mut row = template.clone();
            row.call_id = call_id(sent, sequential);
            if rec.record(row).is_err() {
                refused += 1;
            }
            sent += 1;
        }
    }
    let offered_for = start.elapsed();
    rt.block_on(rec.flush());
    let elapsed = start.elapsed();
    let cpu = thread_cpu_ns("pgw-telemetry-s").unwrap_or(0) - cpu0;
    let s = rec.status();
    let tx = rec.committed_transactions();
    println!(
        "sustained: offered {sent} rows at {rate}/s over {:.2} s; written {} rows in {:.2} s = {:.0} rows/s; dropped {} (refused {refused}); {} transactions ({:.0} rows each)",
        offered_for.as_secs_f64(),
        s.written_rows,
        elapsed.as_secs_f64(),
        s.written_rows as f64 / elapsed.as_secs_f64(),
        s.dropped_rows,
        tx,
        s.written_rows as f64 / tx.max(1) as f64
    );
    println!(
        "sustained: writer thread CPU {:.2} µs per row = {:.0} rows per writer CPU second",
        cpu as f64 / 1000.0 / s.written_rows.max(1) as f64,
        s.written_rows as f64 / (cpu.max(1) as f64 / 1e9)
    );
    rt.block_on(rec.close());
}

criterion_group!(benches, rows_per_second, emit_cost);

fn main() {
    if std::env::var("TEL_MODE").as_deref() == Ok("fixed") {
        fixed();
        return;
    }
    sustained();
    if std::env::var("TEL_MODE").as_deref() == Ok("sustained") {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
