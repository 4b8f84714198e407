//! Telemetry recorder contract rows CT-TEL-01..04, 06..08, plus
//! the README D31 hand-off row (`record` is synchronous, never blocks, and `flush` covers it),
//! generic over a [`RecorderHarness`]. CT-TEL-05 (Postgres write budget and pool) lives with the
//! Postgres adapter. None sleeps: every read-back follows `flush()`.
//!
//! ```text
//! contract_tests::telemetry_contract!(my_crate::SqliteHarness::new());
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{
    CallOperation, CauseKind, Effort, EventKind, SqlValue, StreamEnd, TelemetryRecorder,
    TelemetryRow, TelemetryStatusProvider, ThinkingObservation, UsageSource,
};

/// A value read back from the store, normalised across backends (booleans as `Int(0|1)`).
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// SQL NULL.
    Null,
    /// INTEGER / BOOLEAN.
    Int(i64),
    /// REAL / DOUBLE PRECISION.
    Real(f64),
    /// TEXT / JSONB (as text).
    Text(String),
}

impl Stored {
    /// What `value` must read back as.
    pub fn expected(value: SqlValue<'_>) -> Self {
        match value {
            SqlValue::Text(s) => Self::Text(s.to_owned()),
            SqlValue::Int(i) => Self::Int(i),
            SqlValue::Real(f) => Self::Real(f),
            SqlValue::Bool(b) => Self::Int(i64::from(b)),
            _ => Self::Null,
        }
    }
}

/// One stored row: column name → value (every physical column the store has).
pub type StoredRow = BTreeMap<String, Stored>;

/// A recorder backend under test.
#[async_trait]
pub trait RecorderHarness: Send + Sync + 'static {
    /// The recorder type.
    type Recorder: TelemetryRecorder;
    /// A fresh recorder over an empty, isolated store (same store on every call).
    async fn recorder(&self) -> Arc<Self::Recorder>;
    /// A recorder whose backend is unavailable.
    async fn unavailable_recorder(&self) -> Arc<Self::Recorder>;
    /// Every row of the store, in write order.
    async fn rows(&self) -> Vec<StoredRow>;
}

/// A row with every nullable field set to a distinct non-default value.
pub fn full_row(call_id: &str) -> TelemetryRow {
    TelemetryRow {
        call_id: call_id.to_owned(),
        parent_call_id: Some("parent".into()),
        session_id: Some("session".into()),
        model: "qwen-max".into(),
        provider: "openai".into(),
        source_name: "openai_1".into(),
        messages: r#"[{"role":"user","content":"hi"}]"#.into(),
        response: "answer".into(),
        thinking: "thought".into(),
        prompt_tokens: 11,
        completion_tokens: 7,
        usage_source: UsageSource::Measured,
        latency_ms: 123,
        ttft_ms: Some(12.5),
        max_inter_token_ms: Some(3.25),
        cache_hit: true,
        error: Some("boom".into()),
        cost: Some(0.000_123),
        cached_prompt_tokens: Some(4),
        model_reported: Some("qwen-max-0919".into()),
        sampling: Some(r#"{"temperature":0.2}"#.into()),
        reasoning_tokens: Some(2),
        tenant_id: "tenant-a".into(),
        meta: r#"{"k":"v"}"#.into(),
        thinking_observation: Some(ThinkingObservation::Observed),
        reasoning_effort: Some(Effort::Low),
        scope: "llm".into(),
        operation: CallOperation::Chat,
        logical_call_id: Some("lcid".into()),
        event_kind: EventKind::Attempt,
        http_status_code: Some(503),
        error_type: Some("TransientError"),
        cause_type: Some(CauseKind::ReadTimeout),
        error_body: Some("body".into()),
        attempts: Some(3),
        total_latency_ms: Some(456),
        stall_ms: Some(3200),
        stall_count: Some(2),
        stream_end: Some(StreamEnd::EofAfterFinish),
    }
}

/// A row with every `Option` `None` and zero counts.
pub fn sparse_row(call_id: &str) -> TelemetryRow {
    TelemetryRow {
        parent_call_id: None,
        session_id: None,
        prompt_tokens: 0,
        completion_tokens: 0,
        latency_ms: 0,
        ttft_ms: None,
        max_inter_token_ms: None,
        cache_hit: false,
        error: None,
        cost: None,
        cached_prompt_tokens: None,
        model_reported: None,
        sampling: None,
        reasoning_tokens: None,
        thinking_observation: None,
        reasoning_effort: None,
        logical_call_id: None,
        http_status_code: None,
        error_type: None,
        cause_type: None,
        error_body: None,
        attempts: None,
        total_latency_ms: None,
        stall_ms: None,
        stall_count: None,
        stream_end: None,
        ..full_row(call_id)
    }
}

/// Asserts that `stored` holds exactly `row`'s 39 columns.
pub fn assert_row_equals(stored: &StoredRow, row: &TelemetryRow) {
    for (name, value) in row.columns() {
        assert_eq!(
            stored.get(name),
            Some(&Stored::expected(value)),
            "column {name} of {}",
            row.call_id
        );
    }
}

// covers: T-2, T-48
/// CT-TEL-01: one `record` writes exactly one row whose 39 columns equal the row's fields.
pub async fn ct_tel_01_one_record_one_row(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    let row = full_row("c-1");
    rec.record(row.clone()).expect("record");
    rec.flush().await;
    let rows = h.rows().await;
    assert_eq!(rows.len(), 1);
    assert_row_equals(&rows[0], &row);
    assert_eq!(rec.status().written_rows, 1);
}

/// CT-TEL-02: `None` is NULL and `Some(0)` / `Some(0.0)` is 0, never conflated.
pub async fn ct_tel_02_none_is_null_zero_is_zero(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    let sparse = sparse_row("c-null");
    let zero = TelemetryRow {
        ttft_ms: Some(0.0),
        cost: Some(0.0),
        cached_prompt_tokens: Some(0),
        reasoning_tokens: Some(0),
        stall_ms: Some(0),
        stall_count: Some(0),
        attempts: Some(0),
        ..sparse_row("c-zero")
    };
    rec.record(sparse.clone()).expect("record");
    rec.record(zero.clone()).expect("record");
    rec.flush().await;
    let rows = h.rows().await;
    assert_eq!(rows.len(), 2);
    assert_row_equals(&rows[0], &sparse);
    assert_row_equals(&rows[1], &zero);
    assert_eq!(rows[0]["stall_ms"], Stored::Null);
    assert_eq!(rows[1]["stall_ms"], Stored::Int(0));
    assert_eq!(rows[1]["cost"], Stored::Real(0.0));
}

/// CT-TEL-03: recording the same `call_id` twice leaves one row (the first).
pub async fn ct_tel_03_idempotent_by_call_id(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    let first = full_row("c-dup");
    rec.record(first.clone()).expect("record");
    rec.record(TelemetryRow {
        response: "second".into(),
        ..full_row("c-dup")
    })
    .expect("record");
    rec.flush().await;
    let rows = h.rows().await;
    assert_eq!(rows.len(), 1);
    assert_row_equals(&rows[0], &first);
}

/// CT-TEL-04: an unavailable backend never panics and never fails the caller; `status()`
/// shows `degraded` with a reason and counts the dropped rows.
pub async fn ct_tel_04_unavailable_degrades(h: &impl RecorderHarness) {
    let rec = h.unavailable_recorder().await;
    for i in 0..3 {
        let _ = rec.record(full_row(&format!("c-{i}")));
    }
    rec.flush().await;
    let status = rec.status();
    assert!(status.degraded, "{status:?}");
    assert!(status.reason.is_some());
    assert_eq!(status.dropped_rows, 3);
    assert_eq!(status.written_rows, 0);
    rec.close().await;
}

/// CT-TEL-06: `status()` answers at once while the writer is busy.
pub async fn ct_tel_06_status_never_blocks(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    for i in 0..500 {
        rec.record(full_row(&format!("c-{i}"))).expect("record");
    }
    let probe = Arc::clone(&rec);
    let status = tokio::time::timeout(
        Duration::from_secs(5),
        tokio::task::spawn_blocking(move || (0..100).map(|_| probe.status()).next_back()),
    )
    .await
    .expect("status() blocked")
    .expect("status() panicked");
    assert!(status.is_some());
    rec.flush().await;
    let s = rec.status();
    assert_eq!(s.written_rows + s.dropped_rows, 500);
}

// covers: T-51
/// CT-TEL-07: `close()` flushes within a bounded time and is idempotent; rows recorded after
/// it are dropped and counted, never panicking.
pub async fn ct_tel_07_close_bounded_and_idempotent(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    for i in 0..100 {
        rec.record(full_row(&format!("c-{i}"))).expect("record");
    }
    tokio::time::timeout(Duration::from_secs(10), rec.close())
        .await
        .expect("close() unbounded");
    tokio::time::timeout(Duration::from_secs(1), rec.close())
        .await
        .expect("second close() not idempotent");
    let _ = rec.record(full_row("late"));
    let s = rec.status();
    assert_eq!(s.written_rows, 100);
    assert_eq!(s.dropped_rows, 1);
    assert_eq!(h.rows().await.len(), 100);
}

/// CT-TEL-08: rows handed over from many tasks at once never corrupt the store: every stored
/// row equals the row recorded under its `call_id`, and the next `flush()` covers them all.
pub async fn ct_tel_08_concurrent_records_never_corrupt(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    let mut tasks = Vec::new();
    for t in 0..4 {
        let rec = Arc::clone(&rec);
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                rec.record(full_row(&format!("c-{t}-{i}"))).expect("record");
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("recording task");
    }
    rec.flush().await;
    let rows = h.rows().await;
    assert_eq!(rows.len(), 100);
    for r in &rows {
        let id = match &r["call_id"] {
            Stored::Text(id) => id.clone(),
            other => panic!("call_id {other:?}"),
        };
        assert_row_equals(r, &full_row(&id));
    }
    rec.close().await;
}

// covers: R-24, T-51, D31
/// `record` is a synchronous hand-off — it has taken the row when it returns, the
/// rows keep the order they were recorded in and the next `flush()` covers them; after
/// `close()` a row is refused with `Err` and counted in `dropped_rows`.
pub async fn ct_tel_d31_record_is_a_handoff_and_flush_covers_it(h: &impl RecorderHarness) {
    let rec = h.recorder().await;
    let rows: Vec<TelemetryRow> = (0..4).map(|i| full_row(&format!("c-{i}"))).collect();
    for row in &rows {
        rec.record(row.clone()).expect("record");
    }
    rec.flush().await;
    let stored = h.rows().await;
    assert_eq!(stored.len(), rows.len());
    for (stored, row) in stored.iter().zip(&rows) {
        assert_row_equals(stored, row);
    }
    assert_eq!(rec.status().written_rows, 4);
    rec.close().await;
    let before = rec.status().dropped_rows;
    assert!(rec.record(full_row("late")).is_err(), "closed: refused");
    assert_eq!(rec.status().dropped_rows, before + 1);
}

/// Generates one `#[tokio::test]` per telemetry recorder contract row for the harness built by
/// `$make` (an expression, may use `.await`).
#[macro_export]
macro_rules! telemetry_contract {
    ($make:expr) => {
        $crate::telemetry_contract!(@rows $make;
            ct_tel_01_one_record_one_row,
            ct_tel_02_none_is_null_zero_is_zero,
            ct_tel_03_idempotent_by_call_id,
            ct_tel_04_unavailable_degrades,
            ct_tel_06_status_never_blocks,
            ct_tel_07_close_bounded_and_idempotent,
            ct_tel_08_concurrent_records_never_corrupt,
            ct_tel_d31_record_is_a_handoff_and_flush_covers_it,
        );
    };
    (@rows $make:expr; $($row:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $row() {
                let harness = $make;
                $crate::telemetry::$row(&harness).await;
            }
        )+
    };
}
