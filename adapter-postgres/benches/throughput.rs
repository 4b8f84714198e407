//! Sustained write throughput of the Postgres recorder (issue 16; docs/benchmarks.md
//! "Postgres recorder"): rows per second into the local server with 0 dropped, and process CPU
//! per row. The producer hands rows over with `enqueue` and only pauses while the queue is more
//! than half full, so the number is what the writer sustains, never what the queue buffers.
//!
//! `cargo bench -p adapter-postgres --bench throughput` (env: `PGW_BENCH_ROWS`, default
//! 200 000; `PGW_BENCH_POOL_MAX`, default 4; `PGW_BENCH_BATCH`, default 1 000; `PGW_BENCH_DSN`,
//! default the test server).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use adapter_postgres::{PostgresRecorder, PostgresRecorderConfig, SchemaMode};
use gateway_ports::{
    CallOperation, Effort, EventKind, StreamEnd, TelemetryRecorder, TelemetryRow,
    TelemetryStatusProvider, ThinkingObservation, UsageSource,
};

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A typical successful attempt row (~600 bytes of text).
fn row(i: u64) -> TelemetryRow {
    TelemetryRow {
        call_id: format!("bench-{i:012}"),
        parent_call_id: None,
        session_id: Some("session-1".into()),
        model: "qwen-max".into(),
        provider: "openai".into(),
        source_name: "openai_1".into(),
        messages: r#"[{"role":"user","content":"Summarise the quarterly report in three sentences, please."}]"#.into(),
        response: "The quarter closed with revenue up 12 percent, margins steady and two new regions opened. Costs rose with hiring. Guidance is unchanged.".into(),
        thinking: String::new(),
        prompt_tokens: 42,
        completion_tokens: 37,
        usage_source: UsageSource::Measured,
        latency_ms: 812,
        ttft_ms: Some(143.5),
        max_inter_token_ms: Some(21.0),
        cache_hit: false,
        error: None,
        cost: Some(0.000_081),
        cached_prompt_tokens: Some(0),
        model_reported: Some("qwen-max-0919".into()),
        sampling: Some(r#"{"temperature":0.2}"#.into()),
        reasoning_tokens: None,
        tenant_id: "tenant-a".into(),
        meta: r#"{"team":"search"}"#.into(),
        thinking_observation: Some(ThinkingObservation::Absent),
        reasoning_effort: Some(Effort::Low),
        scope: "llm".into(),
        operation: CallOperation::Chat,
        logical_call_id: Some(format!("lc-{i:012}")),
        event_kind: EventKind::Attempt,
        http_status_code: None,
        error_type: None,
        cause_type: None,
        error_body: None,
        attempts: None,
        total_latency_ms: None,
        stall_ms: Some(0),
        stall_count: Some(0),
        stream_end: Some(StreamEnd::EofAfterFinish),
    }
}

/// User + system CPU of this process in seconds (Linux `/proc/self/stat`, 100 ticks/s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields after ")": state=0 … utime=11, stime=12.
    (ticks(11) + ticks(12)) / 100.0
}

async fn admin(dsn: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .expect("PostgreSQL must be running");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

fn main() {
    let rows: u64 = env_or("PGW_BENCH_ROWS", 200_000);
    let pool_max: usize = env_or("PGW_BENCH_POOL_MAX", 4);
    let batch: usize = env_or("PGW_BENCH_BATCH", 1_000);
    let server: String = env_or(
        "PGW_BENCH_DSN",
        "postgres://postgres@127.0.0.1:5432/test?sslmode=disable".to_owned(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let schema = format!("pgw_bench_{}", std::process::id());
        let db = admin(&server).await;
        db.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await
        .unwrap();
        let dsn = format!("{server}&options=-c%20search_path%3D{schema}");
        let rec = PostgresRecorder::new(
            PostgresRecorderConfig::new(dsn)
                .with_schema_mode(SchemaMode::Auto)
                .with_pool_max(pool_max)
                .with_batch_rows(batch),
        );
        // Warm-up: preparation and the first connections.
        for i in 0..2_000 {
            let _ = rec.enqueue(row(u64::MAX - i));
        }
        rec.flush().await;

        // Producer cost alone (building rows), to subtract from the CPU per row.
        let cpu0 = cpu_seconds();
        let built: usize = (0..rows).map(|i| row(i).call_id.len()).sum();
        let build_cpu = cpu_seconds() - cpu0;
        assert!(built > 0);

        let cap = adapter_postgres::DEFAULT_QUEUE_CAPACITY;
        let started = tokio::time::Instant::now();
        let cpu1 = cpu_seconds();
        for i in 0..rows {
            while rec.queued_rows() > cap / 2 {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            let _ = rec.enqueue(row(i));
        }
        rec.flush().await;
        let elapsed = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu1;
        let s = rec.status();
        let batches = rec.executed_batches();
        rec.close().await;
        let stored: i64 = db
            .query_one(&format!("SELECT count(*) FROM {schema}.llm_calls"), &[])
            .await
            .unwrap()
            .get(0);
        db.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
        let recorder_cpu = (cpu - build_cpu).max(0.0);
        println!(
            "postgres recorder: {rows} rows in {elapsed:.2} s = {:.0} rows/s sustained; \
             dropped {}; written {} (stored {stored}); {} INSERTs ({:.0} rows each); \
             pool_max {pool_max}, batch {batch}; process CPU {:.2} s = {:.1} µs/row \
             (row building {:.1} µs/row excluded: recorder ≈ {:.1} µs/row)",
            rows as f64 / elapsed,
            s.dropped_rows,
            s.written_rows,
            batches,
            s.written_rows as f64 / batches.max(1) as f64,
            cpu,
            cpu / rows as f64 * 1e6,
            build_cpu / rows as f64 * 1e6,
            recorder_cpu / rows as f64 * 1e6,
        );
    });
}
