//! Postgres-specific rows against the real server (80 T-42..T-58; 10 §8.7 CT-TEL-05; 95
//! CF-386..CF-392, CF-394), one throwaway schema per test.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use adapter_postgres::schema::{PHYSICAL, telemetry_schema_sql};
use adapter_postgres::{PostgresRecorder, PostgresRecorderConfig, SchemaMode};
use common::{LogCapture, ManualClock, TestSchema, sessions};
use contract_tests::telemetry::{Stored, assert_row_equals, full_row};
use gateway_ports::{TelemetryRecorder, TelemetryRow, TelemetryStatusProvider};

/// An "old" table: the first `physical` columns of the current one (e.g. 27 = the 1.3.4
/// table: INSERT columns 1–26 plus `created_at`).
async fn old_table(schema: &TestSchema, physical: usize) {
    let cols: Vec<String> = PHYSICAL[..physical]
        .iter()
        .map(|c| format!("{} {}", c.name, c.decl))
        .collect();
    schema
        .client()
        .await
        .batch_execute(&format!("CREATE TABLE llm_calls ({})", cols.join(", ")))
        .await
        .unwrap();
}

fn recorder(schema: &TestSchema, mode: SchemaMode) -> PostgresRecorder {
    PostgresRecorder::new(
        PostgresRecorderConfig::new(schema.dsn("pgw_test")).with_schema_mode(mode),
    )
}

fn physical_names() -> Vec<String> {
    PHYSICAL.iter().map(|c| c.name.to_owned()).collect()
}

fn text(s: &str) -> Stored {
    Stored::Text(s.to_owned())
}

// covers: T-44
/// CF-386, T-44, T-47 step 4: a 27-column (1.3.4) table in `auto` gains the 13 missing
/// columns in T-44 order (40 physical columns, the current order); old rows read NULL in them;
/// new rows round-trip all 39 columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_386_old_27_column_table_auto_backfills_to_40_in_order() {
    let schema = TestSchema::new("cf386").await;
    old_table(&schema, 27).await;
    schema
        .client()
        .await
        .batch_execute(
            "INSERT INTO llm_calls (call_id, model, provider, source_name, messages, response, \
             prompt_tokens, completion_tokens, usage_source, latency_ms) \
             VALUES ('a-old', 'm', 'p', 's', '[]', '', 1, 1, 'measured', 5)",
        )
        .await
        .unwrap();
    let rec = recorder(&schema, SchemaMode::Auto);
    let row = full_row("b-new");
    rec.record(row.clone()).unwrap();
    rec.flush().await;
    assert_eq!(schema.columns().await, physical_names());
    let rows = schema.rows().await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["scope"], Stored::Null);
    assert_eq!(rows[0]["stream_end"], Stored::Null);
    assert_eq!(rows[0]["tenant_id"], text(""));
    assert_row_equals(&rows[1], &row);
    let s = rec.status();
    assert!(!s.degraded && s.missing_columns.is_empty(), "{s:?}");
    // A second preparation against the complete table issues no ALTER (idempotent).
    let again = recorder(&schema, SchemaMode::Auto);
    again.record(full_row("c-again")).unwrap();
    again.flush().await;
    assert_eq!(again.status().written_rows, 1);
    assert_eq!(schema.columns().await.len(), 40);
}

/// CF-387, T-47 step 5, README D6: the same table in `manual` keeps its 27 columns, the 26
/// existing ones round-trip, and exactly one notice names the 13 missing dimensions with one
/// paste-ready ALTER line each; `degraded` stays false.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_387_old_27_column_table_manual_trims_and_warns_once() {
    let schema = TestSchema::new("cf387").await;
    old_table(&schema, 27).await;
    let logs = LogCapture::default();
    let guard = logs.install();
    let rec = recorder(&schema, SchemaMode::Manual);
    drop(guard);
    let row = full_row("c-1");
    for i in 0..3 {
        rec.record(full_row(&format!("c-{i}"))).unwrap();
    }
    rec.flush().await;
    let s = rec.status();
    let missing: Vec<&str> = TelemetryRow::COLUMNS[26..].to_vec();
    assert_eq!(s.missing_columns, missing);
    assert!(!s.degraded, "{s:?}");
    assert_eq!(s.written_rows, 3);
    assert_eq!(schema.columns().await.len(), 27);
    let rows = schema.rows().await;
    for (name, value) in row.columns().iter().take(26) {
        assert_eq!(rows[1][*name], Stored::expected(*value), "{name}");
    }
    let log = logs.text();
    assert_eq!(log.matches("schema_mode=manual").count(), 1, "{log}");
    assert!(
        log.contains(&format!(
            "the following dimensions will not be recorded: {}.",
            missing.join(", ")
        )),
        "{log}"
    );
    assert_eq!(log.matches("ALTER TABLE llm_calls ADD COLUMN").count(), 13);
    assert!(
        log.contains("ALTER TABLE llm_calls ADD COLUMN scope TEXT;"),
        "{log}"
    );
}

/// CF-388: mixed writers — a `manual` recorder (trimmed INSERT) keeps writing after an
/// `auto` recorder upgraded the same table under it; no row is lost or doubled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_388_mixed_old_and_new_writers_share_the_table() {
    let schema = TestSchema::new("cf388").await;
    old_table(&schema, 27).await;
    let old = recorder(&schema, SchemaMode::Manual);
    old.record(full_row("a-0")).unwrap();
    old.flush().await;
    let new = recorder(&schema, SchemaMode::Auto);
    for i in 1..20 {
        old.record(full_row(&format!("a-{i}"))).unwrap();
        new.record(full_row(&format!("b-{i}"))).unwrap();
    }
    old.flush().await;
    new.flush().await;
    let rows = schema.rows().await;
    assert_eq!(rows.len(), 39);
    assert_eq!(old.status().written_rows, 20);
    assert_eq!(new.status().written_rows, 19);
    let b = rows.iter().find(|r| r["call_id"] == text("b-5")).unwrap();
    assert_row_equals(b, &full_row("b-5"));
    let a = rows.iter().find(|r| r["call_id"] == text("a-5")).unwrap();
    assert_eq!(a["scope"], Stored::Null);
}

/// CF-389: a 22-field table (INSERT columns 1–22) in `manual` names the 17 missing dimensions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_389_old_22_field_table_manual_names_17_dimensions() {
    let schema = TestSchema::new("cf389").await;
    old_table(&schema, 23).await;
    let rec = recorder(&schema, SchemaMode::Manual);
    rec.record(full_row("c-1")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert_eq!(s.missing_columns.len(), 17, "{s:?}");
    assert_eq!(s.missing_columns[0], "tenant_id");
    assert_eq!(s.written_rows, 1);
    assert!(!s.degraded);
}

// covers: T-49
/// CF-390, T-49: the shipped script on an empty schema yields exactly COLUMNS ∪ {created_at}
/// in order, and is re-runnable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_390_schema_sql_on_empty_schema_is_complete_and_rerunnable() {
    let schema = TestSchema::new("cf390").await;
    let client = schema.client().await;
    client.batch_execute(&telemetry_schema_sql()).await.unwrap();
    client.batch_execute(&telemetry_schema_sql()).await.unwrap();
    assert_eq!(schema.columns().await, physical_names());
    let mut expected: Vec<String> = TelemetryRow::COLUMNS
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    expected.push("created_at".into());
    let mut got = schema.columns().await;
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

/// CF-391: caller dimensions (parent/session/tenant/meta) land on a table upgraded by `auto`
/// from the 22-field shape; `meta` is JSONB, `cache_hit` boolean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_391_caller_dimensions_on_an_upgraded_table() {
    let schema = TestSchema::new("cf391").await;
    old_table(&schema, 23).await;
    let rec = recorder(&schema, SchemaMode::Auto);
    let row = TelemetryRow {
        tenant_id: "acme".into(),
        meta: r#"{"team":"search","run":7}"#.into(),
        ..full_row("c-1")
    };
    rec.record(row.clone()).unwrap();
    rec.flush().await;
    let got = schema
        .client()
        .await
        .query_one(
            "SELECT tenant_id, meta->>'team', (meta->>'run')::int, cache_hit, parent_call_id, \
             session_id, pg_typeof(meta)::text FROM llm_calls",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(got.get::<_, String>(0), "acme");
    assert_eq!(got.get::<_, String>(1), "search");
    assert_eq!(got.get::<_, i32>(2), 7);
    assert!(got.get::<_, bool>(3));
    assert_eq!(got.get::<_, String>(4), "parent");
    assert_eq!(got.get::<_, String>(5), "session");
    assert_eq!(got.get::<_, String>(6), "jsonb");
}

// covers: T-54, T-55
/// CT-TEL-05, CF-392, T-54: the write budget covers pool acquisition and execution. With one
/// connection and the table locked by another session, every write exceeds its budget: the
/// rows are dropped and counted, `degraded` stays false, the flush is bounded, and writes
/// resume once the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_tel_05_cf_392_saturated_pool_drops_within_budget_and_stays_healthy() {
    let schema = TestSchema::new("cf392").await;
    let rec = PostgresRecorder::new(
        PostgresRecorderConfig::new(schema.dsn("pgw_cf392"))
            .with_schema_mode(SchemaMode::Auto)
            .with_pool_max(1)
            .with_write_timeout(Duration::from_millis(400)),
    );
    rec.record(full_row("c-0")).unwrap();
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 1);
    let locker = schema.client().await;
    locker
        .batch_execute("BEGIN; LOCK TABLE llm_calls IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    for i in 1..=5 {
        rec.record(full_row(&format!("c-{i}"))).unwrap();
    }
    let handed_off = started.elapsed();
    rec.flush().await;
    let flushed = started.elapsed();
    let s = rec.status();
    assert_eq!(s.dropped_rows, 5, "{s:?}");
    assert_eq!(s.written_rows, 1);
    assert!(!s.degraded, "{s:?}");
    assert!(
        handed_off < Duration::from_millis(100),
        "record waited {handed_off:?}"
    );
    assert!(flushed < Duration::from_secs(5), "flush took {flushed:?}");
    locker.batch_execute("COMMIT").await.unwrap();
    rec.record(full_row("c-9")).unwrap();
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 2);
    assert_eq!(schema.rows().await.len(), 2);
}

// covers: T-46, T-58
/// T-47 step 1, T-56: `manual` sends no DDL; a missing table degrades with the exact reason
/// and creates nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_47_manual_missing_table_degrades_without_ddl() {
    let schema = TestSchema::new("t47miss").await;
    let rec = recorder(&schema, SchemaMode::Manual);
    rec.record(full_row("c-1")).unwrap();
    rec.record(full_row("c-2")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded && !s.fatal, "{s:?}");
    assert_eq!(
        s.reason.as_deref(),
        Some("table llm_calls missing; see telemetry_schema_sql")
    );
    assert_eq!(s.dropped_rows, 2);
    assert!(s.degraded_since.is_some() && s.retry_at.is_some());
    assert!(
        schema.columns().await.is_empty(),
        "manual mode created the table"
    );
}

/// T-47 step 3: a table lacking any of columns 1–18 is incompatible: degraded, no writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_47_table_without_core_columns_is_incompatible() {
    let schema = TestSchema::new("t47core").await;
    old_table(&schema, 10).await;
    let rec = recorder(&schema, SchemaMode::Auto);
    rec.record(full_row("c-1")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded, "{s:?}");
    let reason = s.reason.unwrap();
    assert!(
        reason.contains("incompatible") && reason.contains("completion_tokens"),
        "{reason}"
    );
    assert_eq!(s.dropped_rows, 1);
}

/// T-56: a row the server rejects (invalid JSON in `meta`) drops that row only; the rest of
/// its batch is written and the state is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_56_rejected_row_drops_only_that_row() {
    let schema = TestSchema::new("t56row").await;
    let rec = recorder(&schema, SchemaMode::Auto);
    rec.record(full_row("c-0")).unwrap();
    rec.flush().await;
    for i in 1..=4 {
        let mut row = full_row(&format!("c-{i}"));
        if i == 2 {
            row.meta = "not json".into();
        }
        rec.record(row).unwrap();
    }
    rec.flush().await;
    let s = rec.status();
    assert_eq!((s.written_rows, s.dropped_rows), (4, 1), "{s:?}");
    assert!(!s.degraded);
    let ids: Vec<Stored> = schema
        .rows()
        .await
        .iter()
        .map(|r| r["call_id"].clone())
        .collect();
    assert!(!ids.contains(&text("c-2")));
    assert_eq!(ids.len(), 4);
}

/// CF-394, T-56: a DSN that passes the scheme check but cannot be parsed makes the recorder
/// fatal (forever), with a secret-free reason; recording never fails and counts the drops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_394_malformed_dsn_is_fatal_and_secret_free() {
    let dsn = "postgresql+asyncpg://app:hunter2-secret@127.0.0.1:notaport/test";
    let rec = PostgresRecorder::open(dsn);
    for i in 0..3 {
        // A fatal recorder refuses the hand-off (README D31) and counts the row as dropped.
        let _ = rec.record(full_row(&format!("c-{i}")));
    }
    rec.flush().await;
    let s = rec.status();
    assert!(s.fatal && !s.degraded, "{s:?}");
    assert_eq!(s.dropped_rows, 3);
    let reason = s.reason.unwrap();
    assert!(reason.contains("PGW_TELEMETRY_PG_DSN"), "{reason}");
    assert!(!reason.contains("hunter2"), "{reason}");
    assert!(!format!("{rec:?}").contains("hunter2"));
    rec.close().await;
    rec.close().await;
}

/// T-56 secrets: an unreachable server degrades with a reason that carries no password, and
/// neither the recorder's nor the config's `Debug` shows the DSN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_56_unreachable_server_reason_and_debug_are_secret_free() {
    let dsn = "postgres://app:hunter2-secret@127.0.0.1:1/test?sslmode=prefer";
    let config = PostgresRecorderConfig::new(dsn);
    assert!(!format!("{config:?}").contains("hunter2"));
    let logs = LogCapture::default();
    let guard = logs.install();
    let rec = PostgresRecorder::new(config);
    drop(guard);
    rec.record(full_row("c-1")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded, "{s:?}");
    assert!(!s.reason.unwrap().contains("hunter2"));
    assert!(!format!("{rec:?}").contains("hunter2"));
    assert!(!logs.text().contains("hunter2"), "{}", logs.text());
}

/// T-42: a SQLAlchemy `+driver` DSN is stripped and works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_42_driver_suffix_dsn_writes() {
    let schema = TestSchema::new("t42").await;
    let dsn = schema
        .dsn("pgw_t42")
        .replacen("postgres://", "postgresql+asyncpg://", 1);
    let rec =
        PostgresRecorder::new(PostgresRecorderConfig::new(dsn).with_schema_mode(SchemaMode::Auto));
    rec.record(full_row("c-1")).unwrap();
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 1, "{:?}", rec.status());
}

/// T-53: no connection at construction; connections idle past the limit are closed by the
/// recorder's worker (0 while idle); `close()` leaves none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_53_no_connection_at_construction_none_while_idle() {
    let schema = TestSchema::new("t53").await;
    let app = format!("pgw_t53_{}", std::process::id());
    let rec = Arc::new(PostgresRecorder::new(
        PostgresRecorderConfig::new(schema.dsn(&app))
            .with_schema_mode(SchemaMode::Auto)
            .with_idle_timeout(Duration::from_millis(300)),
    ));
    assert_eq!(sessions(&app).await, 0, "connected at construction");
    assert_eq!(rec.open_connections(), 0);
    for i in 0..50 {
        rec.record(full_row(&format!("c-{i}"))).unwrap();
    }
    rec.flush().await;
    assert!(sessions(&app).await >= 1);
    // Bounded wait for the reaper (idle limit 300 ms): never more than 10 s.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sessions(&app).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "idle connections not closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rec.open_connections(), 0);
    // Writes after idling reconnect lazily.
    rec.record(full_row("c-late")).unwrap();
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 51);
    rec.close().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sessions(&app).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "close() left connections"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// covers: T-58
/// T-57 with the injected clock: degraded until the cooldown ends (read through the clock,
/// not the wall), then the next row re-prepares — a table created by a DBA meanwhile heals
/// the recorder without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_57_cooldown_read_through_injected_clock_then_heals() {
    let schema = TestSchema::new("t57").await;
    let clock = Arc::new(ManualClock::default());
    let rec = PostgresRecorder::new(
        PostgresRecorderConfig::new(schema.dsn("pgw_t57"))
            .with_schema_mode(SchemaMode::Manual)
            .with_clock(clock.clone()),
    );
    rec.record(full_row("c-1")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded);
    assert_eq!(
        s.retry_at
            .unwrap()
            .duration_since(s.degraded_since.unwrap())
            .unwrap(),
        Duration::from_secs(60)
    );
    schema
        .client()
        .await
        .batch_execute(&telemetry_schema_sql())
        .await
        .unwrap();
    clock.advance(Duration::from_secs(59));
    rec.record(full_row("c-2")).unwrap();
    rec.flush().await;
    assert!(rec.status().degraded, "healed before the cooldown ended");
    clock.advance(Duration::from_secs(1));
    rec.record(full_row("c-3")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(!s.degraded && s.reason.is_none(), "{s:?}");
    assert_eq!((s.written_rows, s.dropped_rows), (1, 2));
    assert_eq!(schema.rows().await.len(), 1);
}
