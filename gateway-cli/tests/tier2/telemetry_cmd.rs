//! `pgw demo --telemetry postgres://…` and `pgw telemetry stats|retention` (80 T-60, T-61;
//! 05) against the real Postgres server (127.0.0.1:5432, a throwaway schema per
//! test) and SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::{Duration, SystemTime};

use crate::support::Pgw;

const SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Runs `sql` on the test server (fails loudly when it is not running).
fn sql(statements: &str) {
    let statements = statements.to_owned();
    block(async move {
        let (client, conn) =
            tokio_postgres::connect(&format!("{SERVER}?sslmode=disable"), tokio_postgres::NoTls)
                .await
                .expect("PostgreSQL on 127.0.0.1:5432 (user postgres, db test) must be running");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client.batch_execute(&statements).await.unwrap();
    });
}

struct Schema(String);

impl Schema {
    fn new(tag: &str) -> Self {
        let name = format!("pgw_cli_{tag}_{}", std::process::id());
        sql(&format!(
            "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
        ));
        Self(name)
    }

    /// A DSN for this schema carrying a password the output must never show.
    fn dsn(&self) -> String {
        format!(
            "postgresql+asyncpg://postgres:pw-secret-42@127.0.0.1:5432/test?sslmode=disable&options=-c%20search_path%3D{}",
            self.0
        )
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        sql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.0));
    }
}

/// R-55 with Postgres: the demo writes its rows to Postgres, the check "rows = attempts +
/// failed calls" holds, `stats` agrees, and `retention` deletes them in batches; no output
/// shows the DSN's password.
#[test]
fn t_61_demo_into_postgres_then_stats_and_retention() {
    let schema = Schema::new("demo");
    let pgw = Pgw::new();
    let dsn = schema.dsn();
    let (code, value, stderr) = pgw.run_json(
        &[
            "demo",
            "--calls",
            "20",
            "--concurrency",
            "4",
            "--json",
            "--telemetry",
            &dsn,
        ],
        &[],
    );
    assert_eq!(code, 0, "{value} {stderr}");
    let t = &value["telemetry"];
    assert_eq!(t["check_holds"], true, "{value}");
    let rows = t["rows"].as_u64().unwrap();
    assert_eq!(
        rows,
        t["attempts"].as_u64().unwrap()
            + t["failed_calls"].as_u64().unwrap()
            + t["cache_hits"].as_u64().unwrap()
    );
    assert!(!value.to_string().contains("pw-secret") && !stderr.contains("pw-secret"));

    let (code, stats, _) = pgw.run_json(&["telemetry", "stats", "--db", &dsn, "--json"], &[]);
    assert_eq!(code, 0, "{stats}");
    assert_eq!(stats["backend"], "postgres");
    assert_eq!(stats["calls"], 20);
    assert_eq!(stats["rows"].as_u64(), Some(rows));
    assert!(stats["latency_ms"]["p50"].as_i64().unwrap() > 0, "{stats}");
    assert!(
        stats["cost_by_source"]["healthy_1"].as_f64().unwrap() > 0.0,
        "{stats}"
    );
    assert!(!stats.to_string().contains("pw-secret"));

    let (code, dry, _) = pgw.run_json(
        &[
            "telemetry",
            "retention",
            "--db",
            &dsn,
            "--older-than",
            "0s",
            "--dry-run",
            "--json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{dry}");
    assert_eq!(dry["rows"].as_u64(), Some(rows));
    let (code, done, _) = pgw.run_json(
        &[
            "telemetry",
            "retention",
            "--db",
            &dsn,
            "--older-than",
            "0s",
            "--batch",
            "7",
            "--json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["rows_deleted"].as_u64(), Some(rows));
    let (_, after, _) = pgw.run_json(&["telemetry", "stats", "--db", &dsn, "--json"], &[]);
    assert_eq!(after["rows"], 0);
}

// covers: T-60
/// T-60, T-61: on the production layout (partitioned by created_at, primary key
/// (call_id, created_at)) `--drop-partitions` detaches and drops only partitions entirely older
/// than the cutoff; `--dry-run` only lists them.
#[test]
fn t_61_drop_partitions_on_the_partitioned_layout() {
    let schema = Schema::new("part");
    let s = &schema.0;
    sql(&format!(
        "CREATE TABLE {s}.llm_calls (call_id TEXT NOT NULL, model TEXT NOT NULL, \
         created_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (call_id, created_at)) \
         PARTITION BY RANGE (created_at); \
         CREATE TABLE {s}.llm_calls_2020_01 PARTITION OF {s}.llm_calls \
           FOR VALUES FROM ('2020-01-01') TO ('2020-02-01'); \
         CREATE TABLE {s}.llm_calls_now PARTITION OF {s}.llm_calls \
           FOR VALUES FROM ('2021-01-01') TO (MAXVALUE); \
         INSERT INTO {s}.llm_calls (call_id, model, created_at) VALUES \
           ('old', 'm', '2020-01-15'), ('new', 'm', now())"
    ));
    let pgw = Pgw::new();
    let dsn = schema.dsn();
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "telemetry",
            "retention",
            "--db",
            dsn.as_str(),
            "--older-than",
            "30d",
        ];
        v.extend_from_slice(&["--drop-partitions", "--json"]);
        v.extend_from_slice(extra);
        v.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let dry: Vec<String> = args(&["--dry-run"]);
    let dry: Vec<&str> = dry.iter().map(String::as_str).collect();
    let (code, value, stderr) = pgw.run_json(&dry, &[]);
    assert_eq!(code, 0, "{value} {stderr}");
    assert_eq!(
        value["partitions"],
        serde_json::json!([format!("{s}.llm_calls_2020_01")])
    );
    let real: Vec<String> = args(&[]);
    let real: Vec<&str> = real.iter().map(String::as_str).collect();
    let (code, value, _) = pgw.run_json(&real, &[]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(
        value["partitions_dropped"],
        serde_json::json!([format!("{s}.llm_calls_2020_01")])
    );
    let (_, again, _) = pgw.run_json(&real, &[]);
    assert_eq!(again["partitions"], serde_json::json!([]));
}

/// T-61 SQLite: `--rotate-dir DIR --keep-days N` deletes whole files older than N days (with
/// their -wal/-shm); row deletion from one file needs `--force`.
#[test]
fn t_61_sqlite_rotation_and_forced_row_deletion() {
    let pgw = Pgw::new();
    let dir = pgw.dir.path().join("runs");
    std::fs::create_dir(&dir).unwrap();
    let old = dir.join("2020-01-01.db");
    let fresh = dir.join("today.db");
    for path in [&old, &fresh] {
        std::fs::write(path, b"").unwrap();
    }
    std::fs::write(dir.join("2020-01-01.db-wal"), b"").unwrap();
    let month_ago = SystemTime::now() - Duration::from_secs(40 * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(month_ago)
        .unwrap();
    let rotate = |extra: &[&str]| {
        let mut v = vec![
            "telemetry",
            "retention",
            "--rotate-dir",
            dir.to_str().unwrap(),
            "--keep-days",
            "30",
            "--json",
        ];
        v.extend_from_slice(extra);
        pgw.run_json(&v, &[])
    };
    let (code, value, _) = rotate(&["--dry-run"]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["files"].as_array().unwrap().len(), 1);
    assert!(old.exists());
    let (code, _, _) = rotate(&[]);
    assert_eq!(code, 0);
    assert!(!old.exists() && !dir.join("2020-01-01.db-wal").exists() && fresh.exists());

    // A demo file, then stats and a refused (no --force) then forced deletion.
    let db = pgw.dir.path().join("demo.db");
    let db = db.to_str().unwrap();
    let (code, demo, _) = pgw.run_json(
        &[
            "demo",
            "--calls",
            "10",
            "--concurrency",
            "4",
            "--json",
            "--telemetry",
            db,
        ],
        &[],
    );
    assert_eq!(code, 0, "{demo}");
    let rows = demo["telemetry"]["rows"].as_u64().unwrap();
    let (code, stats, _) = pgw.run_json(&["telemetry", "stats", "--db", db, "--json"], &[]);
    assert_eq!(code, 0, "{stats}");
    assert_eq!(stats["backend"], "sqlite");
    assert_eq!(
        (stats["calls"].as_u64(), stats["rows"].as_u64()),
        (Some(10), Some(rows))
    );
    assert!(stats["latency_ms"]["p99"].as_i64().is_some());
    let (code, _, stderr) = pgw.run(
        &["telemetry", "retention", "--db", db, "--older-than", "0s"],
        &[],
    );
    assert_eq!(code, 3);
    assert!(
        stderr.contains("--force") && stderr.contains("VACUUM"),
        "{stderr}"
    );
    let (code, done, _) = pgw.run_json(
        &[
            "telemetry",
            "retention",
            "--db",
            db,
            "--older-than",
            "0s",
            "--force",
            "--json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["rows_deleted"].as_u64(), Some(rows));
}
