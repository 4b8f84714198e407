//! Telemetry benchmarks (issue "telemetry"): rows per second through the SQLite recorder
//! (record + flush, WAL, batched transactions) and the call-path cost of emitting one row
//! (shape the row from facts + hand it to the emitter's queue).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use adapter_sqlite::SqliteRecorder;
use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
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

criterion_group!(benches, rows_per_second, emit_cost);
criterion_main!(benches);
