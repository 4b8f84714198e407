//! SQLite recorder behaviour (80 §10.2, §10.4; 05; 95 §15) and governed calls whose
//! rows are read back from the file after `flush` (issue "telemetry").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::{Debug, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_sqlite::{SqliteRecorder, SqliteRecorderConfig, existing_columns, prepare_schema};
use gateway_core::attempt::TransportResult;
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::TokioClock;
use gateway_core::governor::{CallOptions, Governor, GovernorBuilder};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::NoopPacer;
use gateway_core::rows::{
    AttemptRowFacts, AttemptRowOutcome, CacheHitRowFacts, CancelLabel, RowCall, RowSink,
};
use gateway_core::select::StaticSelector;
use gateway_core::telemetry::{EmitterConfig, RowInput, TelemetryEmitter};
use gateway_ports::schema::{BACKFILL_COLUMNS, BASE_COLUMNS, SchemaMode, SqlBackend};
use gateway_ports::{
    AttemptError, AttemptFailure, BreakerConfig, CallOperation, ChatRequest, CircuitBreaker, Clock,
    ErrorOperation, GlobalLimits, LlmResponse, ModelPrice, PricingTable, RetryPolicy, SourceConfig,
    TelemetryRecorder, TelemetryRow, TelemetryStatusProvider, Usage,
};
use gateway_testkit::{Script, ScriptedRunner};
use rusqlite::Connection;
use rusqlite::types::Value as SqlV;
use serde_json::json;

// ---- helpers -------------------------------------------------------------------------------

/// Captures `tracing` events (level + fields) of the thread that installs it and of the
/// recorders built while it is installed.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Visitor(String);

impl tracing::field::Visit for Visitor {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        let _ = write!(self.0, "{}={} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut v = Visitor(format!("{} ", event.metadata().level()));
        event.record(&mut v);
        self.0.lock().unwrap().push(v.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

impl Capture {
    fn warnings_containing(&self, needle: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("WARN") && l.contains(needle))
            .cloned()
            .collect()
    }
    fn count_containing(&self, needle: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }
}

fn row(call_id: &str) -> TelemetryRow {
    contract_tests::telemetry::full_row(call_id)
}

/// A table with the first `physical` columns of the T-8 order (older library versions).
fn legacy_table(path: &Path, physical: usize) {
    let conn = Connection::open(path).unwrap();
    let cols: Vec<String> = BASE_COLUMNS
        .iter()
        .chain(BACKFILL_COLUMNS.iter())
        .take(physical)
        .map(|c| c.declaration(SqlBackend::Sqlite))
        .collect();
    conn.execute_batch(&format!("CREATE TABLE llm_calls ({});", cols.join(", ")))
        .unwrap();
}

fn columns(path: &Path) -> Vec<String> {
    existing_columns(&Connection::open(path).unwrap()).unwrap()
}

fn expected_40() -> Vec<String> {
    gateway_ports::schema::physical_columns()
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn query(path: &Path, sql: &str) -> Vec<Vec<SqlV>> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, SqlV>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn text(v: &SqlV) -> &str {
    match v {
        SqlV::Text(s) => s,
        other => panic!("not text: {other:?}"),
    }
}

struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self) -> PathBuf {
        self.dir.path().join("t.db")
    }
    fn recorder(&self, mode: SchemaMode) -> SqliteRecorder {
        SqliteRecorder::new(SqliteRecorderConfig::new(self.path()).with_schema_mode(mode))
    }
}

// ---- schema (95 §15) -----------------------------------------------------------------------

// covers: T-7, T-8
#[tokio::test]
async fn cf_372_fresh_file_has_40_columns_in_both_modes() {
    for mode in [SchemaMode::Auto, SchemaMode::Manual] {
        let db = Db::new();
        let rec = db.recorder(mode);
        rec.record(row("c-1")).unwrap();
        rec.flush().await;
        let cols = columns(&db.path());
        assert_eq!(cols.len(), 40);
        assert_eq!(cols[18], "created_at");
        assert_eq!(cols, expected_40());
        assert_eq!(rec.status().written_rows, 1);
    }
}

#[tokio::test]
async fn cf_376_t_28_stall_round_trip() {
    let db = Db::new();
    let rec = db.recorder(SchemaMode::Auto);
    rec.record(TelemetryRow {
        stall_ms: Some(3200),
        stall_count: Some(2),
        ..row("c-stall")
    })
    .unwrap();
    rec.record(TelemetryRow {
        stall_ms: None,
        stall_count: None,
        ..row("c-none")
    })
    .unwrap();
    rec.flush().await;
    let got = query(
        &db.path(),
        "SELECT stall_ms, stall_count FROM llm_calls ORDER BY rowid",
    );
    assert_eq!(
        got,
        vec![
            vec![SqlV::Integer(3200), SqlV::Integer(2)],
            vec![SqlV::Null, SqlV::Null]
        ]
    );
}

#[test]
fn cf_377_t_47_auto_backfills_1_3_7_table_once() {
    let db = Db::new();
    legacy_table(&db.path(), 37);
    let conn = Connection::open(db.path()).unwrap();
    let first = prepare_schema(&conn, SchemaMode::Auto).unwrap();
    assert_eq!(
        first.executed,
        [
            "ALTER TABLE llm_calls ADD COLUMN stall_ms INTEGER",
            "ALTER TABLE llm_calls ADD COLUMN stall_count INTEGER",
            "ALTER TABLE llm_calls ADD COLUMN stream_end TEXT",
        ]
    );
    let second = prepare_schema(&conn, SchemaMode::Auto).unwrap();
    assert!(second.executed.is_empty(), "second init issues no ALTER");
    assert_eq!(columns(&db.path()), expected_40());
}

#[tokio::test]
async fn cf_377_auto_recorder_writes_stall_after_backfill() {
    let db = Db::new();
    legacy_table(&db.path(), 37);
    let rec = db.recorder(SchemaMode::Auto);
    rec.record(TelemetryRow {
        stall_ms: Some(7),
        stall_count: Some(1),
        ..row("c-1")
    })
    .unwrap();
    rec.flush().await;
    let got = query(&db.path(), "SELECT stall_ms, stall_count FROM llm_calls");
    assert_eq!(got, vec![vec![SqlV::Integer(7), SqlV::Integer(1)]]);
}

#[tokio::test]
async fn cf_378_t_47_manual_1_3_7_table_one_warning() {
    let db = Db::new();
    legacy_table(&db.path(), 37);
    let cap = Capture::default();
    let rec = {
        let _guard = tracing::subscriber::set_default(cap.clone());
        db.recorder(SchemaMode::Manual)
    };
    for i in 0..3 {
        rec.record(row(&format!("c-{i}"))).unwrap();
    }
    rec.flush().await;
    assert_eq!(columns(&db.path()).len(), 37, "manual sends no ALTER");
    let warnings = cap.warnings_containing("schema_mode=manual");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("ALTER TABLE llm_calls ADD COLUMN stall_ms INTEGER;"));
    assert!(warnings[0].contains("ALTER TABLE llm_calls ADD COLUMN stall_count INTEGER;"));
    assert!(warnings[0].contains(
        "the following dimensions will not be recorded: stall_ms, stall_count, stream_end."
    ));
    let status = rec.status();
    assert_eq!(
        status.missing_columns,
        ["stall_ms", "stall_count", "stream_end"]
    );
    assert!(!status.degraded);
    assert_eq!(status.written_rows, 3);
}

#[test]
fn cf_380_auto_1_3_8_table_twice() {
    let db = Db::new();
    legacy_table(&db.path(), 39);
    let conn = Connection::open(db.path()).unwrap();
    assert_eq!(
        prepare_schema(&conn, SchemaMode::Auto)
            .unwrap()
            .executed
            .len(),
        1
    );
    assert!(
        prepare_schema(&conn, SchemaMode::Auto)
            .unwrap()
            .executed
            .is_empty()
    );
    assert_eq!(columns(&db.path()), expected_40());
}

#[tokio::test]
async fn cf_381_manual_1_3_8_table_inserts_and_warns() {
    let db = Db::new();
    legacy_table(&db.path(), 39);
    let cap = Capture::default();
    let rec = {
        let _guard = tracing::subscriber::set_default(cap.clone());
        db.recorder(SchemaMode::Manual)
    };
    rec.record(row("c-1")).unwrap();
    rec.flush().await;
    assert_eq!(columns(&db.path()).len(), 39);
    assert_eq!(query(&db.path(), "SELECT call_id FROM llm_calls").len(), 1);
    let w = cap.warnings_containing("schema_mode=manual");
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("ALTER TABLE llm_calls ADD COLUMN stream_end TEXT"));
}

// covers: T-9
#[tokio::test]
async fn cf_382_t_34_legacy_22_field_table_auto() {
    let db = Db::new();
    legacy_table(&db.path(), 23);
    {
        let conn = Connection::open(db.path()).unwrap();
        conn.execute(
            "INSERT INTO llm_calls (call_id, model, provider, source_name, messages, response, \
             prompt_tokens, completion_tokens, usage_source, latency_ms) \
             VALUES ('old', 'm', 'p', 's', '[]', '', 0, 0, 'measured', 1)",
            [],
        )
        .unwrap();
    }
    let rec = db.recorder(SchemaMode::Auto);
    rec.record(row("new")).unwrap();
    rec.flush().await;
    assert_eq!(columns(&db.path()), expected_40());
    let got = query(
        &db.path(),
        "SELECT call_id, tenant_id, meta, event_kind FROM llm_calls ORDER BY rowid",
    );
    assert_eq!(
        got[0],
        vec![
            SqlV::Text("old".into()),
            SqlV::Text(String::new()),
            SqlV::Text("{}".into()),
            SqlV::Null
        ]
    );
    assert_eq!(text(&got[1][1]), "tenant-a");
}

#[tokio::test]
async fn cf_383_legacy_table_manual_warns_and_writes() {
    let db = Db::new();
    legacy_table(&db.path(), 23);
    let cap = Capture::default();
    let rec = {
        let _guard = tracing::subscriber::set_default(cap.clone());
        db.recorder(SchemaMode::Manual)
    };
    rec.record(row("c-1")).unwrap();
    rec.flush().await;
    let w = cap.warnings_containing("schema_mode=manual");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].matches("ALTER TABLE llm_calls ADD COLUMN").count(), 17);
    assert_eq!(rec.status().missing_columns.len(), 17);
    assert_eq!(query(&db.path(), "SELECT call_id FROM llm_calls").len(), 1);
    assert_eq!(columns(&db.path()).len(), 23);
}

#[tokio::test]
async fn cf_385_complete_table_first_write_issues_no_alter() {
    let db = Db::new();
    legacy_table(&db.path(), 40);
    let cap = Capture::default();
    let rec = {
        let _guard = tracing::subscriber::set_default(cap.clone());
        db.recorder(SchemaMode::Auto)
    };
    rec.record(row("c-1")).unwrap();
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 1);
    assert_eq!(cap.count_containing("telemetry.backfill"), 0);
    let conn = Connection::open(db.path()).unwrap();
    assert!(
        prepare_schema(&conn, SchemaMode::Auto)
            .unwrap()
            .executed
            .is_empty()
    );
}

#[tokio::test]
async fn cf_379_t_29_stream_end_round_trip() {
    let db = Db::new();
    let rec = db.recorder(SchemaMode::Auto);
    rec.record(TelemetryRow {
        stream_end: Some(gateway_ports::StreamEnd::EofAfterFinish),
        ..row("c-eof")
    })
    .unwrap();
    rec.record(TelemetryRow {
        stream_end: None,
        ..row("c-none")
    })
    .unwrap();
    rec.flush().await;
    let got = query(
        &db.path(),
        "SELECT call_id, stream_end FROM llm_calls ORDER BY call_id",
    );
    assert_eq!(
        got,
        vec![
            vec![
                SqlV::Text("c-eof".into()),
                SqlV::Text("eof_after_finish".into())
            ],
            vec![SqlV::Text("c-none".into()), SqlV::Null],
        ]
    );
}

#[test]
fn t_47_incompatible_table_is_refused() {
    let db = Db::new();
    let conn = Connection::open(db.path()).unwrap();
    conn.execute_batch("CREATE TABLE llm_calls (call_id TEXT PRIMARY KEY, other TEXT);")
        .unwrap();
    let reason = prepare_schema(&conn, SchemaMode::Auto).unwrap_err();
    assert!(
        reason.contains("incompatible") && reason.contains("model"),
        "{reason}"
    );
}

// ---- recorder behaviour (80 §10.2, §10.4; 05 R-47) ----------------------------------------

#[tokio::test]
async fn r_47_created_at_milliseconds_mode_0600_enqueue_order() {
    let db = Db::new();
    let rec = db.recorder(SchemaMode::Auto);
    for i in 0..300 {
        rec.record(row(&format!("c-{i:03}"))).unwrap();
    }
    rec.flush().await;
    let got = query(
        &db.path(),
        "SELECT call_id, created_at FROM llm_calls ORDER BY created_at, rowid",
    );
    assert_eq!(got.len(), 300);
    let ids: Vec<&str> = got.iter().map(|r| text(&r[0])).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "written in enqueue order");
    let ts = text(&got[0][1]);
    // YYYY-MM-DD HH:MM:SS.SSS
    assert_eq!(ts.len(), 23, "{ts}");
    assert_eq!(&ts[19..20], ".");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(db.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[tokio::test]
async fn t_50_full_queue_drops_and_counts() {
    let db = Db::new();
    let rec = SqliteRecorder::new(SqliteRecorderConfig::new(db.path()).with_queue_capacity(1));
    let mut refused = 0;
    for i in 0..2000 {
        if rec.record(row(&format!("c-{i}"))).is_err() {
            refused += 1;
        }
    }
    rec.flush().await;
    let s = rec.status();
    assert_eq!(s.written_rows + s.dropped_rows, 2000);
    assert_eq!(s.dropped_rows, refused, "every refusal is an Err (D31)");
    assert!(s.dropped_rows > 0, "a 1-row queue must overflow: {s:?}");
    assert!(!s.degraded);
}

/// Issue 21 (80 T-50, README D31): a full queue never blocks `record`; every dropped row is
/// counted, and the log shows them in one line per interval with the count (the first drop at
/// once, the rest of the interval by the writer's exit), not one line per row: the `rows=`
/// fields of the lines add up to `dropped_rows`.
#[tokio::test]
async fn t_50_dropped_rows_logged_once_per_interval_with_the_count() {
    let db = Db::new();
    let cap = Capture::default();
    let _guard = tracing::subscriber::set_default(cap.clone());
    let rec = SqliteRecorder::new(
        SqliteRecorderConfig::new(db.path())
            .with_queue_capacity(1)
            .with_drop_log_interval(Duration::from_secs(3600)),
    );
    let mut refused = 0u64;
    for i in 0..2000 {
        if rec.record(row(&format!("c-{i}"))).is_err() {
            refused += 1;
        }
    }
    assert!(refused > 1, "a 1-row queue must overflow");
    let before_close = cap.warnings_containing("telemetry.row_dropped");
    assert_eq!(
        before_close.len(),
        1,
        "one line per interval: {before_close:?}"
    );
    rec.close().await;
    let lines = cap.warnings_containing("telemetry.row_dropped");
    assert_eq!(lines.len(), 2, "the rest at the writer's exit: {lines:?}");
    let sum: u64 = lines
        .iter()
        .map(|l| {
            let v = l.split("rows=").nth(1).unwrap();
            v.split_whitespace().next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(sum, rec.status().dropped_rows);
    assert_eq!(rec.status().dropped_rows, refused);
}

/// 05 R-47, issue 21: the writer binds `created_at` itself, in the text the column default
/// writes, at the time of the write (between SQLite's own clock before and after).
#[tokio::test]
async fn r_47_created_at_bound_by_the_writer_in_the_default_text() {
    let db = Db::new();
    let rec = db.recorder(SchemaMode::Auto);
    rec.flush().await;
    let now = "SELECT strftime('%Y-%m-%d %H:%M:%f','now')";
    let before = text(&query(&db.path(), now)[0][0]).to_owned();
    rec.record(row("stamped")).unwrap();
    rec.flush().await;
    let after = text(&query(&db.path(), now)[0][0]).to_owned();
    let got = query(&db.path(), "SELECT created_at FROM llm_calls");
    let ts = text(&got[0][0]);
    assert!(
        before.as_str() <= ts && ts <= after.as_str(),
        "{before} <= {ts} <= {after}"
    );
    assert_eq!(ts.len(), 23, "{ts}");
}

#[tokio::test]
async fn t_56_t_57_degraded_then_recovers_after_cooldown() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("later");
    let path = sub.join("t.db");
    // Zero cooldown: the first row after the failure retries preparation.
    let rec = SqliteRecorder::new(SqliteRecorderConfig::new(&path).with_cooldown(Duration::ZERO));
    rec.record(row("lost")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded && s.degraded_since.is_some() && s.retry_at.is_some());
    assert!(
        s.reason.as_deref().unwrap().contains("cannot open"),
        "{s:?}"
    );
    assert_eq!(s.dropped_rows, 1);
    std::fs::create_dir_all(&sub).unwrap();
    rec.record(row("kept")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(
        !s.degraded && s.reason.is_none() && s.retry_at.is_none(),
        "{s:?}"
    );
    assert_eq!((s.written_rows, s.dropped_rows), (1, 1));
    assert_eq!(query(&path, "SELECT call_id FROM llm_calls").len(), 1);
}

#[tokio::test]
async fn t_57_degraded_skips_writes_until_cooldown_ends() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("later");
    let rec = SqliteRecorder::new(
        SqliteRecorderConfig::new(sub.join("t.db")).with_cooldown(Duration::from_secs(3600)),
    );
    rec.record(row("a")).unwrap();
    rec.flush().await;
    std::fs::create_dir_all(&sub).unwrap();
    rec.record(row("b")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded, "still cooling down");
    assert_eq!((s.written_rows, s.dropped_rows), (0, 2));
    assert!(!sub.join("t.db").exists(), "no disk traffic while degraded");
}

#[tokio::test]
async fn t_56_table_dropped_under_the_writer_degrades() {
    let db = Db::new();
    let rec =
        SqliteRecorder::new(SqliteRecorderConfig::new(db.path()).with_cooldown(Duration::ZERO));
    rec.record(row("a")).unwrap();
    rec.flush().await;
    Connection::open(db.path())
        .unwrap()
        .execute_batch("DROP TABLE llm_calls;")
        .unwrap();
    rec.record(row("b")).unwrap();
    rec.flush().await;
    assert!(rec.status().degraded, "{:?}", rec.status());
    // Cooldown 0: the next row re-prepares (CREATE TABLE) and heals.
    rec.record(row("c")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(!s.degraded, "{s:?}");
    assert_eq!((s.written_rows, s.dropped_rows), (2, 1));
}

// ---- linger and the synchronous hand-off (80 T-50, T-51; 05 R-24; issue 9 follow-up) ------

/// Guards a wait on the writer thread so a regression fails instead of hanging (no window is
/// timed: every wait here ends on a flush, a close, a full batch or the written rows).
const GUARD: Duration = Duration::from_secs(30);

/// A linger no test outlives: only a flush, a close or a full batch ends it.
const FOREVER: Duration = Duration::from_secs(3600);

fn lingering(db: &Db) -> SqliteRecorderConfig {
    SqliteRecorderConfig::new(db.path()).with_linger(FOREVER)
}

/// Waits until `done` holds, polling the recorder's status (guarded).
async fn until(rec: &SqliteRecorder, done: impl Fn(&gateway_ports::TelemetryStatus) -> bool) {
    tokio::time::timeout(GUARD, async {
        while !done(&rec.status()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the writer never got there");
}

// covers: T-50, T-51
#[tokio::test]
async fn t_50_t_51_flush_ends_the_linger_and_rows_share_one_transaction() {
    let db = Db::new();
    let rec = SqliteRecorder::new(lingering(&db));
    for i in 0..3 {
        rec.record(row(&format!("c-{i}"))).unwrap();
    }
    tokio::time::timeout(GUARD, rec.flush())
        .await
        .expect("flush() must end the linger at once");
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (3, 0));
    assert_eq!(
        rec.committed_transactions(),
        1,
        "one transaction for the trickle"
    );
    assert_eq!(query(&db.path(), "SELECT call_id FROM llm_calls").len(), 3);
    // A second trickle: a second transaction.
    rec.record(row("c-3")).unwrap();
    tokio::time::timeout(GUARD, rec.flush()).await.unwrap();
    assert_eq!(rec.committed_transactions(), 2);
}

// covers: T-50
#[tokio::test]
async fn t_50_a_full_batch_ends_the_linger_without_a_flush() {
    let db = Db::new();
    let rec = SqliteRecorder::new(lingering(&db).with_batch_rows(4));
    for i in 0..4 {
        rec.record(row(&format!("c-{i}"))).unwrap();
    }
    until(&rec, |s| s.written_rows == 4).await;
    assert_eq!(rec.committed_transactions(), 1);
    // Fewer rows than a batch wait for the linger (here: for the flush).
    rec.record(row("c-4")).unwrap();
    rec.flush().await;
    assert_eq!(
        (rec.status().written_rows, rec.committed_transactions()),
        (5, 2)
    );
}

// covers: T-50 (issue 21: larger transactions while the writer is behind)
#[tokio::test]
async fn t_50_a_backlog_is_written_in_larger_transactions_and_every_row_is_counted() {
    let db = Db::new();
    let rec = SqliteRecorder::new(
        lingering(&db)
            .with_batch_rows(4)
            .with_backlog_batch_rows(16)
            .with_queue_capacity(1000),
    );
    rec.flush().await; // prepared before the rows arrive
    for i in 0..200 {
        rec.record(row(&format!("c-{i:03}"))).unwrap();
    }
    tokio::time::timeout(GUARD, rec.flush()).await.unwrap();
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (200, 0));
    let tx = rec.committed_transactions();
    assert!(
        (200 / 16..=200 / 4 + 1).contains(&tx),
        "{tx} transactions: between one per 16 rows and one per 4 (plus the flush's tail)"
    );
    let ids: Vec<String> = query(&db.path(), "SELECT call_id FROM llm_calls ORDER BY rowid")
        .iter()
        .map(|r| text(&r[0]).to_owned())
        .collect();
    let want: Vec<String> = (0..200).map(|i| format!("c-{i:03}")).collect();
    assert_eq!(ids, want, "every row once, in enqueue order");
}

// covers: T-51
#[tokio::test]
async fn t_51_close_ends_the_linger_and_writes_what_is_queued() {
    let db = Db::new();
    let rec = SqliteRecorder::new(lingering(&db));
    rec.record(row("a")).unwrap();
    rec.record(row("b")).unwrap();
    tokio::time::timeout(GUARD, rec.close())
        .await
        .expect("close() must end the linger at once");
    let _ = rec.record(row("late"));
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (2, 1));
    assert_eq!(query(&db.path(), "SELECT call_id FROM llm_calls").len(), 2);
}

// covers: T-50
#[tokio::test]
async fn t_50_lingering_rows_count_against_the_queue() {
    let db = Db::new();
    // The writer holds nothing while it lingers: queued rows stay in the queue, so a 2-row
    // queue refuses the third row deterministically.
    let rec = SqliteRecorder::new(lingering(&db).with_queue_capacity(2));
    for i in 0..2 {
        rec.record(row(&format!("c-{i}"))).unwrap();
    }
    assert!(rec.record(row("c-2")).is_err());
    assert_eq!(rec.status().dropped_rows, 1);
    assert_eq!(rec.queued_rows(), 2);
    rec.flush().await;
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (2, 1));
}

// covers: T-50, T-51, R-24, R-47, D31
#[tokio::test]
async fn d31_record_is_a_handoff_full_queue_refuses_and_counts_once() {
    let db = Db::new();
    let rec = SqliteRecorder::new(lingering(&db).with_queue_capacity(3));
    for i in 0..3 {
        rec.record(row(&format!("c-{i}"))).unwrap();
    }
    // Full queue: refused with `Err`, counted once by the recorder.
    assert!(rec.record(row("full")).is_err());
    assert_eq!(rec.status().dropped_rows, 1);
    rec.flush().await;
    let ids: Vec<String> = query(&db.path(), "SELECT call_id FROM llm_calls ORDER BY rowid")
        .iter()
        .map(|r| text(&r[0]).to_owned())
        .collect();
    assert_eq!(ids, ["c-0", "c-1", "c-2"]);
    rec.close().await;
    assert!(rec.record(row("late")).is_err());
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (3, 2));
}

// covers: T-51, CT-TEL-08
#[tokio::test]
async fn t_51_dropping_the_recorder_lets_the_writer_drain_and_exit() {
    let db = Db::new();
    let rec = SqliteRecorder::new(lingering(&db));
    rec.record(row("a")).unwrap();
    rec.record(row("b")).unwrap();
    drop(rec);
    let path = db.path();
    tokio::time::timeout(GUARD, async {
        loop {
            // The table may not exist yet: a failed read counts as no row.
            let written = Connection::open(&path)
                .and_then(|c| c.query_row("SELECT count(*) FROM llm_calls", [], |r| r.get(0)))
                .unwrap_or(0_i64);
            if written == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the writer must drain the queue when the recorder is dropped");
}

// covers: T-1, T-39, T-51, R-24, D31
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_1_emitter_hands_rows_straight_to_the_recorder_in_emit_order() {
    let db = Db::new();
    let recorder = Arc::new(SqliteRecorder::new(lingering(&db)));
    let emitter = TelemetryEmitter::new(recorder.clone(), EmitterConfig::default()).unwrap();
    for i in 0..5 {
        emitter.emit(row(&format!("c-{i}")));
    }
    // The rows already wait in the recorder's queue.
    assert_eq!(recorder.queued_rows(), 5);
    tokio::time::timeout(GUARD, emitter.flush()).await.unwrap();
    let ids: Vec<String> = query(&db.path(), "SELECT call_id FROM llm_calls ORDER BY rowid")
        .iter()
        .map(|r| text(&r[0]).to_owned())
        .collect();
    assert_eq!(ids, ["c-0", "c-1", "c-2", "c-3", "c-4"]);
    assert_eq!(recorder.committed_transactions(), 1);
    emitter.close().await;
    emitter.emit(row("late"));
    assert_eq!(
        emitter.dropped_rows(),
        1,
        "after close: the emitter counts it"
    );
    let s = emitter.status();
    assert_eq!((s.written_rows, s.dropped_rows), (5, 1), "counted once");
}

// ---- governed calls: exactly the rows 80 says, read back after flush -----------------------

struct Governed {
    gov: Governor,
    runner: ScriptedRunner,
    emitter: TelemetryEmitter,
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn pricing() -> PricingTable {
    let mut t = PricingTable::default();
    t.prices.insert(
        "qwen-max".into(),
        ModelPrice {
            input_per_1m: 1.0,
            output_per_1m: 8.0,
            cached_input_per_1m: None,
        },
    );
    t
}

fn source() -> SourceConfig {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "qwen-max");
    s.tpm = 100_000;
    s.est_tokens = Some(400);
    s.max_concurrency = 2;
    s
}

fn governed(max_attempts: u32) -> Governed {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let recorder = Arc::new(SqliteRecorder::open(&path));
    let emitter = TelemetryEmitter::new(
        recorder,
        EmitterConfig::default().with_pricing(Some(pricing())),
    )
    .unwrap();
    let sources = vec![source()];
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    let limiter = Arc::new(MemoryRateLimiter::new(
        "llm",
        &sources,
        GlobalLimits::default(),
        100.0,
        clock.clone(),
    ));
    let breaker: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
        "llm",
        BreakerConfig {
            fail_threshold: 100,
            ..BreakerConfig::default()
        },
        clock.clone(),
    ));
    let (gov, rx) = GovernorBuilder::new("llm", sources, limiter.clone(), breaker)
        .selector(Arc::new(StaticSelector))
        .pacer(Arc::new(NoopPacer))
        .clock(clock)
        .jitter(Arc::new(|| 0.5))
        .retry(RetryPolicy {
            max_attempts,
            backoff_base_s: 0.001,
            backoff_max_s: 0.002,
            ..RetryPolicy::default()
        })
        .row_sink(Arc::new(emitter.clone()))
        .wakeup(limiter.notify())
        .build();
    tokio::spawn(run_cleanup_worker(rx));
    Governed {
        gov,
        runner: ScriptedRunner::new(),
        emitter,
        _dir: dir,
        path,
    }
}

fn options() -> CallOptions {
    let mut req = ChatRequest::new(vec![
        json!({"role": "user", "content": "hi"})
            .as_object()
            .cloned()
            .unwrap(),
    ]);
    req.tenant_id = Some("tenant-a".into());
    CallOptions::default().with_row_input(Arc::new(RowInput::chat(&req)))
}

fn transient_503() -> AttemptError {
    let mut f = AttemptFailure::new("openai_1: HTTP 503 | overloaded", ErrorOperation::Chat);
    f.source_name = Some("openai_1".into());
    f.http_status = Some(503);
    f.body_text = Some("overloaded, retry from 192.168.1.10".into());
    AttemptError::transient(f)
}

const ROW_SQL: &str = "SELECT event_kind, error, error_type, http_status_code, cost, latency_ms, \
    total_latency_ms, attempts, logical_call_id, source_name, tenant_id, error_body, call_id \
    FROM llm_calls ORDER BY created_at, rowid";

// covers: T-5, T-17
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_success_writes_one_priced_attempt_row() {
    let g = governed(3);
    let mut ok = TransportResult::ok(800_000, 800_000);
    ok.stream_end = Some(gateway_ports::StreamEnd::Done);
    g.runner.push(Script::ok(ok));
    let done = g.gov.run_chat(&g.runner, options()).await.unwrap();
    g.gov.quiesce().await;
    let rows = query(&g.path, ROW_SQL);
    assert_eq!(
        rows.len(),
        1,
        "a success writes one attempt row and no terminal row"
    );
    let r = &rows[0];
    assert_eq!(text(&r[0]), "attempt");
    assert_eq!(r[1], SqlV::Null);
    assert!(matches!(r[4], SqlV::Real(c) if (c - 7.2).abs() < 1e-9));
    assert_eq!((r[6].clone(), r[7].clone()), (SqlV::Null, SqlV::Null));
    assert_eq!(text(&r[8]), done.stats.logical_call_id);
    assert_eq!(text(&r[12]), done.call_id);
    assert_eq!(text(&r[10]), "tenant-a");
    let end = query(&g.path, "SELECT stream_end FROM llm_calls");
    assert_eq!(text(&end[0][0]), "done");
    assert_eq!(g.emitter.status().written_rows, 1);
}

// covers: T-5, T-11, T-17, T-18, T-22, T-62
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_364_retried_failure_two_attempts_then_terminal() {
    let g = governed(2);
    g.runner
        .push_all([Script::fail(transient_503()), Script::fail(transient_503())]);
    let e = g.gov.run_chat(&g.runner, options()).await.unwrap_err();
    assert_eq!(e.type_name(), "AllSourcesExhausted");
    g.gov.quiesce().await;
    let rows = query(&g.path, ROW_SQL);
    let kinds: Vec<&str> = rows.iter().map(|r| text(&r[0])).collect();
    assert_eq!(
        kinds,
        ["attempt", "attempt", "terminal_failure"],
        "attribution order"
    );
    let errors = query(
        &g.path,
        "SELECT count(*) FROM llm_calls WHERE error IS NOT NULL",
    );
    assert_eq!(errors[0][0], SqlV::Integer(3));
    let t = &rows[2];
    assert_eq!(t[4], SqlV::Null, "terminal cost NULL");
    assert_eq!(t[5], t[6], "terminal latency_ms == total_latency_ms");
    assert_eq!(t[7], SqlV::Integer(2));
    assert_eq!(
        (t[3].clone(), t[11].clone(), text(&t[9])),
        (SqlV::Null, SqlV::Null, "")
    );
    assert_eq!(text(&t[2]), "AllSourcesExhausted");
    for a in &rows[..2] {
        assert_eq!(text(&a[2]), "TransientError");
        assert_eq!(a[3], SqlV::Integer(503));
        assert_eq!((a[6].clone(), a[7].clone()), (SqlV::Null, SqlV::Null));
        let SqlV::Integer(lat) = a[5] else { panic!() };
        let SqlV::Integer(total) = t[5] else { panic!() };
        assert!(total >= lat);
        assert_eq!(text(&a[11]), "overloaded, retry from <redacted>", "R-34");
        assert_eq!(text(&a[8]), text(&t[8]), "one logical call");
    }
    let failed = query(
        &g.path,
        "SELECT count(*) FROM llm_calls WHERE event_kind = 'terminal_failure'",
    );
    assert_eq!(failed[0][0], SqlV::Integer(1));
}

// covers: T-16, T-18, T-41
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_cancelled_call_writes_cancelled_attempt_and_terminal() {
    let g = governed(3);
    let h = g.runner.push(Script::hang());
    {
        let call = g.gov.run_chat(&g.runner, options());
        tokio::pin!(call);
        tokio::select! {
            _ = &mut call => panic!("a hanging call finished"),
            () = h.entered() => {}
        }
    } // dropped: cancellation (README D8)
    g.gov.quiesce().await;
    let rows = query(&g.path, ROW_SQL);
    let got: Vec<(&str, &str)> = rows.iter().map(|r| (text(&r[0]), text(&r[1]))).collect();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.contains(&("attempt", "cancelled")));
    assert!(got.contains(&("terminal_failure", "cancelled")));
    for r in &rows {
        assert_eq!(
            (r[2].clone(), r[3].clone(), r[4].clone()),
            (SqlV::Null, SqlV::Null, SqlV::Null)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_cache_hit_and_hedged_win_rows() {
    let g = governed(3);
    let call = {
        let mut c = RowCall::new("lcid-h", CallOperation::Chat, "llm");
        c.input = Some(Arc::new(RowInput::chat(&ChatRequest::new(vec![]))));
        Arc::new(c)
    };
    let src = Arc::new(source());
    // Hedged win: the winning leg's success row and the loser's hedge_cancelled row.
    let mut win = AttemptRowFacts::new(
        call.clone(),
        "leg-win",
        src.clone(),
        30,
        AttemptRowOutcome::Success(Box::new(TransportResult::ok(10, 5))),
    );
    win.hedge_leg = true;
    let lose = AttemptRowFacts::new(
        call.clone(),
        "leg-lose",
        src,
        31,
        AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled),
    );
    g.emitter.attempt(win).await;
    g.emitter.attempt(lose).await;
    // Cache hit: a historic response.
    let mut hist = LlmResponse::default();
    hist.model = "qwen-max".into();
    hist.source_name = "openai_1".into();
    hist.content = "cached".into();
    hist.usage = Usage::new(10, 5);
    hist.stream_end = Some(gateway_ports::StreamEnd::Done);
    g.emitter
        .cache_hit(CacheHitRowFacts::new(call, "hit-1", hist))
        .await;
    RowSink::flush(&g.emitter).await;
    let rows = query(
        &g.path,
        "SELECT call_id, event_kind, error, cost, cache_hit, latency_ms, stream_end, stall_ms FROM llm_calls ORDER BY rowid",
    );
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (text(&rows[0][0]), text(&rows[0][1])),
        ("leg-win", "attempt")
    );
    assert_eq!(rows[0][2], SqlV::Null);
    assert!(matches!(rows[0][3], SqlV::Real(c) if c > 0.0));
    assert_eq!(
        (text(&rows[1][0]), text(&rows[1][2])),
        ("leg-lose", "hedge_cancelled")
    );
    assert_eq!(
        (rows[1][3].clone(), rows[1][7].clone()),
        (SqlV::Null, SqlV::Null)
    );
    assert_eq!(
        (text(&rows[2][1]), rows[2][3].clone(), rows[2][4].clone()),
        ("cache_hit", SqlV::Real(0.0), SqlV::Integer(1))
    );
    assert_eq!(
        (rows[2][5].clone(), rows[2][6].clone()),
        (SqlV::Integer(0), SqlV::Null)
    );
}

/// 80 T-49: the printed SQLite DDL runs as a whole on a new database (`pgw schema-sql sqlite |
/// sqlite3 new.db`): the upgrade `ALTER`s are comments, since `CREATE TABLE` has every column.
#[test]
fn t_49_printed_sqlite_ddl_runs_on_a_new_database() {
    let sql = gateway_ports::schema::telemetry_schema_sql(SqlBackend::Sqlite);
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(&sql).unwrap();
    let columns = existing_columns(&conn).unwrap();
    assert_eq!(columns.len(), BASE_COLUMNS.len() + BACKFILL_COLUMNS.len());
}
