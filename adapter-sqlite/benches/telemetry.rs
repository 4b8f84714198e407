//! Telemetry benchmarks (issue "telemetry"): rows per second through the SQLite recorder
//! (record + flush, WAL, batched transactions) and the call-path cost of emitting one row
//! (shape the row from facts + hand it to the emitter's queue).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use adapter_sqlite::SqliteRecorder;
use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gateway_core::attempt::TransportResult;
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome, RowCall};
use gateway_core::telemetry::{EmitterConfig, RowInput, TelemetryEmitter};
use gateway_ports::{
    CallOperation, ChatRequest, ModelPrice, PricingTable, RecordError, SourceConfig,
    TelemetryRecorder, TelemetryRow, TelemetryStatus, TelemetryStatusProvider,
};
use serde_json::json;

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
                        .await
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
    async fn record(&self, _row: TelemetryRow) -> Result<(), RecordError> {
        Ok(())
    }
}

fn facts() -> AttemptRowFacts {
    let messages = (0..4)
        .map(|i| {
            json!({"role": if i % 2 == 0 { "user" } else { "assistant" },
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
    let mut call = RowCall::new("lcid", CallOperation::Chat, "llm");
    call.input = Some(Arc::new(RowInput::chat(&req)));
    let source = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "qwen-max");
    let mut result = TransportResult::ok(1200, 300);
    result.content = "answer ".repeat(100);
    AttemptRowFacts::new(
        Arc::new(call),
        "att-1",
        Arc::new(source),
        250,
        AttemptRowOutcome::Success(Box::new(result)),
    )
}

fn emit_cost(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut pricing = PricingTable::default();
    pricing.prices.insert(
        "qwen-max".into(),
        ModelPrice {
            input_per_1m: 1.0,
            output_per_1m: 8.0,
            cached_input_per_1m: None,
        },
    );
    let config = EmitterConfig::default()
        .with_pricing(Some(pricing))
        .with_queue_capacity(1 << 20);
    let (emitter, worker) = TelemetryEmitter::new(Arc::new(Discard), config).unwrap();
    rt.spawn(worker.run());
    let facts = facts();
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
