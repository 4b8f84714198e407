//! `pgw telemetry stats|retention`: what an operator asks first of the
//! `llm_calls` table, and keeping it small, on either backend.
//!
//! The database is `--db PATH|DSN` (a `postgres://` or `postgresql://` DSN, a `+driver` variant
//! included, is Postgres; anything else a SQLite file), or the environment's
//! `PGW_TELEMETRY_BACKEND` with `PGW_TELEMETRY_PG_DSN` / `PGW_TELEMETRY_SQLITE_PATH`. The DSN's
//! password is never printed.
//!
//! - `stats [--since 24h]`: calls (distinct logical calls), failed calls by error type, failed
//!   attempts by error type, p50/p99 `latency_ms` of successful attempts, cost per source.
//! - `retention --older-than 30d [--batch 10000] [--drop-partitions] [--dry-run]` on Postgres:
//!   deletes rows older than the cutoff in batches until none remain, or detaches and drops
//!   whole partitions entirely older than it; `--dry-run` only counts.
//! - `retention --rotate-dir DIR --keep-days N [--dry-run]` on SQLite: deletes whole database
//!   files older than N days. Deleting rows from one SQLite file needs `--db FILE --older-than
//!   D --force` and prints the VACUUM cost warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_postgres::ParsedDsn;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::config::SCHEMA_VERSION;
use crate::exit;
use crate::out;

/// `pgw telemetry …`.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// The action.
    #[command(subcommand)]
    pub action: TelemetryAction,
}

/// Where the table lives.
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// `postgres://user@host:port/db` (Postgres) or a SQLite file path; default: the
    /// environment's PGW_TELEMETRY_BACKEND with PGW_TELEMETRY_PG_DSN or PGW_TELEMETRY_SQLITE_PATH.
    #[arg(long, value_name = "PATH|DSN")]
    pub db: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `pgw telemetry` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum TelemetryAction {
    /// Calls, errors by type, p50/p99 latency and cost per source over a window.
    Stats {
        /// The database.
        #[command(flatten)]
        db: DbArg,
        /// The window, ending now (e.g. 90m, 24h, 7d).
        #[arg(long, default_value = "24h", value_parser = parse_duration)]
        since: Duration,
    },
    /// Delete old telemetry: rows or partitions (Postgres), whole files (SQLite).
    Retention(RetentionArgs),
}

/// `pgw telemetry retention`.
#[derive(Debug, Clone, Args)]
pub struct RetentionArgs {
    /// The database.
    #[command(flatten)]
    pub db: DbArg,
    /// Delete rows whose created_at is older than this (e.g. 30d).
    #[arg(long, value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Rows per DELETE (Postgres and forced SQLite).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
    /// Postgres: detach and drop whole partitions entirely older than the cutoff instead of
    /// deleting rows.
    #[arg(long)]
    pub drop_partitions: bool,
    /// Only count what would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    /// SQLite: the directory of rotated database files (`*.db`).
    #[arg(long, value_name = "DIR")]
    pub rotate_dir: Option<PathBuf>,
    /// SQLite: keep files modified within this many days.
    #[arg(long, value_name = "N")]
    pub keep_days: Option<u32>,
    /// SQLite: allow deleting rows from one database file (slow; the file does not shrink
    /// until VACUUM).
    #[arg(long)]
    pub force: bool,
}

/// Parses `45s`, `90m`, `24h`, `7d`, `2w` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("expected a duration such as 30d, 24h or 90m, got {text:?}"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        "w" => 604_800,
        _ => {
            return Err(format!(
                "unknown duration unit {unit:?} (use s, m, h, d or w)"
            ));
        }
    };
    n.checked_mul(scale)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("duration {text:?} is too large"))
}

/// The resolved database.
enum Db {
    Postgres(Box<ParsedDsn>),
    Sqlite(PathBuf),
}

fn is_pg_dsn(value: &str) -> bool {
    let scheme = value.split("://").next().unwrap_or_default();
    value.contains("://") && matches!(scheme.split('+').next(), Some("postgres" | "postgresql"))
}

fn resolve_db(arg: Option<&str>) -> Result<Db, String> {
    let from = |value: &str| -> Result<Db, String> {
        if is_pg_dsn(value) {
            ParsedDsn::parse(value)
                .map(|d| Db::Postgres(Box::new(d)))
                .map_err(|e| e.0)
        } else {
            Ok(Db::Sqlite(PathBuf::from(value)))
        }
    };
    if let Some(value) = arg {
        return from(value);
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    match env("PGW_TELEMETRY_BACKEND").as_deref() {
        Some("postgres") => env("PGW_TELEMETRY_PG_DSN")
            .ok_or_else(|| "PGW_TELEMETRY_BACKEND=postgres needs PGW_TELEMETRY_PG_DSN".to_owned())
            .and_then(|d| from(&d)),
        Some("sqlite") => Ok(Db::Sqlite(PathBuf::from(
            env("PGW_TELEMETRY_SQLITE_PATH").unwrap_or_else(|| "telemetry.db".into()),
        ))),
        _ => Err(
            "no telemetry database: pass --db PATH|DSN or set PGW_TELEMETRY_BACKEND \
                  (sqlite or postgres) with PGW_TELEMETRY_SQLITE_PATH or PGW_TELEMETRY_PG_DSN"
                .to_owned(),
        ),
    }
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `pgw telemetry`; returns the exit code.
pub async fn run(args: TelemetryArgs) -> u8 {
    let result = match args.action {
        TelemetryAction::Stats { db, since } => stats(&db, since).await.map(|v| (v, db.json)),
        TelemetryAction::Retention(r) => retention(&r).await.map(|v| (v, r.db.json)),
    };
    match result {
        Ok((value, true)) => {
            let mut object = serde_json::Map::new();
            object.insert("schema_version".into(), json!(SCHEMA_VERSION));
            if let Value::Object(mut map) = value {
                object.append(&mut map);
            }
            out::stdout_json(&Value::Object(object));
            exit::OK
        }
        Ok((value, false)) => {
            print_plain(&value, "");
            exit::OK
        }
        Err(e) => {
            out::stderr_line(&format!("pgw telemetry: {e}"));
            exit::CONFIG
        }
    }
}

fn print_plain(value: &Value, indent: &str) {
    if let Value::Object(map) = value {
        for (k, v) in map {
            match v {
                Value::Object(_) => {
                    out::stdout_line(&format!("{indent}{k}:"));
                    print_plain(v, &format!("{indent}  "));
                }
                other => {
                    out::stdout_line(&format!("{indent}{k}: {other}"));
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------ stats

/// The stats of one window as JSON.
async fn stats(db: &DbArg, since: Duration) -> Result<Value, String> {
    match resolve_db(db.db.as_deref())? {
        Db::Postgres(dsn) => pg_stats(&dsn, since).await,
        Db::Sqlite(path) => sqlite_stats(&path, since),
    }
}

async fn pg_stats(dsn: &ParsedDsn, since: Duration) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let secs = since.as_secs_f64();
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    let window = "created_at >= now() - make_interval(secs => $1)";
    let head = client
        .query_one(
            &format!(
                "SELECT count(DISTINCT COALESCE(logical_call_id, call_id))::int8, \
                 count(*) FILTER (WHERE event_kind = 'terminal_failure')::int8, count(*)::int8, \
                 percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER \
                   (WHERE event_kind = 'attempt' AND error IS NULL)::int8, \
                 percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) FILTER \
                   (WHERE event_kind = 'attempt' AND error IS NULL)::int8 \
                 FROM llm_calls WHERE {window}"
            ),
            &[&secs],
        )
        .await
        .map_err(pg)?;
    let grouped = |sql: String| {
        let client = &client;
        async move {
            client.query(&sql, &[&secs]).await.map_err(pg).map(|rows| {
                rows.iter()
                    .map(|r| {
                        (
                            r.get::<_, Option<String>>(0).unwrap_or_else(|| "-".into()),
                            serde_json::from_str(&r.get::<_, String>(1)).unwrap_or(Value::Null),
                        )
                    })
                    .collect::<BTreeMap<String, Value>>()
            })
        }
    };
    let failed_by_type = grouped(format!(
        "SELECT COALESCE(error_type, error), to_jsonb(count(*))::text FROM llm_calls WHERE {window} AND \
         event_kind = 'terminal_failure' GROUP BY 1"
    ))
    .await?;
    let attempt_errors = grouped(format!(
        "SELECT COALESCE(error_type, error), to_jsonb(count(*))::text FROM llm_calls WHERE {window} AND \
         event_kind = 'attempt' AND error IS NOT NULL GROUP BY 1"
    ))
    .await?;
    let cost = grouped(format!(
        "SELECT source_name, to_jsonb(sum(cost))::text FROM llm_calls WHERE {window} AND \
         cost IS NOT NULL GROUP BY 1"
    ))
    .await?;
    Ok(json!({
        "backend": "postgres",
        "database": dsn.redacted(),
        "window_s": since.as_secs(),
        "rows": head.get::<_, i64>(2),
        "calls": head.get::<_, i64>(0),
        "failed_calls": head.get::<_, i64>(1),
        "failed_calls_by_error_type": failed_by_type,
        "failed_attempts_by_error_type": attempt_errors,
        "latency_ms": {
            "p50": head.get::<_, Option<i64>>(3),
            "p99": head.get::<_, Option<i64>>(4),
        },
        "cost_by_source": cost,
    }))
}

fn open_sqlite(path: &Path, write: bool) -> Result<rusqlite::Connection, String> {
    if !path.exists() {
        return Err(format!("no SQLite telemetry file at {}", path.display()));
    }
    let flags = if write {
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
    } else {
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
    };
    rusqlite::Connection::open_with_flags(path, flags)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))
}

/// The SQLite `created_at` of `age` ago (`YYYY-MM-DD HH:MM:SS.fff`, UTC).
const SQLITE_CUTOFF: &str = "strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ?1 || ' seconds')";

fn sqlite_stats(path: &Path, since: Duration) -> Result<Value, String> {
    let conn = open_sqlite(path, false)?;
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let q = |e: rusqlite::Error| format!("query failed: {e}");
    let window = format!("created_at >= {SQLITE_CUTOFF}");
    let (calls, failed, rows): (i64, i64, i64) = conn
        .query_row(
            &format!(
                "SELECT count(DISTINCT COALESCE(logical_call_id, call_id)), \
                 count(*) FILTER (WHERE event_kind = 'terminal_failure'), count(*) \
                 FROM llm_calls WHERE {window}"
            ),
            [secs],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(q)?;
    let grouped = |sql: String| -> Result<BTreeMap<String, Value>, String> {
        let mut stmt = conn.prepare(&sql).map_err(q)?;
        let rows = stmt
            .query_map([secs], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_else(|| "-".into()),
                    r.get::<_, f64>(1)?,
                ))
            })
            .map_err(q)?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (k, v) = row.map_err(q)?;
            let value = if v.fract() == 0.0 && v.abs() < 9e15 {
                json!(v as i64)
            } else {
                json!(v)
            };
            out.insert(k, value);
        }
        Ok(out)
    };
    let failed_by_type = grouped(format!(
        "SELECT COALESCE(error_type, error), count(*) FROM llm_calls WHERE {window} AND \
         event_kind = 'terminal_failure' GROUP BY 1"
    ))?;
    let attempt_errors = grouped(format!(
        "SELECT COALESCE(error_type, error), count(*) FROM llm_calls WHERE {window} AND \
         event_kind = 'attempt' AND error IS NOT NULL GROUP BY 1"
    ))?;
    let cost = grouped(format!(
        "SELECT source_name, sum(cost) FROM llm_calls WHERE {window} AND cost IS NOT NULL \
         GROUP BY 1"
    ))?;
    // Nearest-rank percentiles, as Postgres's percentile_disc.
    let ok = format!("{window} AND event_kind = 'attempt' AND error IS NULL");
    let n: i64 = conn
        .query_row(
            &format!("SELECT count(*) FROM llm_calls WHERE {ok}"),
            [secs],
            |r| r.get(0),
        )
        .map_err(q)?;
    let at = |p: f64| -> Result<Option<i64>, String> {
        if n == 0 {
            return Ok(None);
        }
        let rank = ((p * n as f64).ceil() as i64).clamp(1, n);
        conn.query_row(
            &format!(
                "SELECT latency_ms FROM llm_calls WHERE {ok} ORDER BY latency_ms LIMIT 1 OFFSET ?2"
            ),
            rusqlite::params![secs, rank - 1],
            |r| r.get(0),
        )
        .map(Some)
        .map_err(q)
    };
    Ok(json!({
        "backend": "sqlite",
        "database": path.display().to_string(),
        "window_s": since.as_secs(),
        "rows": rows,
        "calls": calls,
        "failed_calls": failed,
        "failed_calls_by_error_type": failed_by_type,
        "failed_attempts_by_error_type": attempt_errors,
        "latency_ms": { "p50": at(0.5)?, "p99": at(0.99)? },
        "cost_by_source": cost,
    }))
}

// -------------------------------------------------------------------------------- retention

async fn retention(r: &RetentionArgs) -> Result<Value, String> {
    if let Some(dir) = &r.rotate_dir {
        let days = r
            .keep_days
            .ok_or("--rotate-dir needs --keep-days N (files older than N days are deleted)")?;
        return rotate_dir(dir, days, r.dry_run);
    }
    let older_than = r.older_than.ok_or(
        "retention needs --older-than DURATION (or, for SQLite, --rotate-dir DIR --keep-days N)",
    )?;
    match resolve_db(r.db.db.as_deref())? {
        Db::Postgres(dsn) if r.drop_partitions => pg_drop_partitions(&dsn, older_than, r.dry_run).await,
        Db::Postgres(dsn) => pg_delete_rows(&dsn, older_than, r.batch, r.dry_run).await,
        Db::Sqlite(_) if r.drop_partitions => {
            Err("--drop-partitions is for Postgres; SQLite rotates files: --rotate-dir DIR --keep-days N".into())
        }
        Db::Sqlite(path) => sqlite_delete_rows(&path, older_than, r.batch, r.dry_run, r.force),
    }
}

async fn pg_delete_rows(
    dsn: &ParsedDsn,
    older_than: Duration,
    batch: u32,
    dry_run: bool,
) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    let cutoff: std::time::SystemTime = client
        .query_one(
            "SELECT now() - make_interval(secs => $1)",
            &[&older_than.as_secs_f64()],
        )
        .await
        .map_err(pg)?
        .get(0);
    if dry_run {
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM llm_calls WHERE created_at < $1",
                &[&cutoff],
            )
            .await
            .map_err(pg)?
            .get(0);
        return Ok(
            json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": true,
            "older_than_s": older_than.as_secs(), "rows": n}),
        );
    }
    let mut deleted: u64 = 0;
    let limit = i64::from(batch);
    loop {
        // (tableoid, ctid) is unique across partitions; one short transaction per batch.
        let n = client
            .execute(
                "DELETE FROM llm_calls WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM \
                 llm_calls WHERE created_at < $1 LIMIT $2)",
                &[&cutoff, &limit],
            )
            .await
            .map_err(pg)?;
        deleted += n;
        if n == 0 {
            break;
        }
    }
    Ok(
        json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": false,
        "older_than_s": older_than.as_secs(), "rows_deleted": deleted}),
    )
}

async fn pg_drop_partitions(
    dsn: &ParsedDsn,
    older_than: Duration,
    dry_run: bool,
) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    // Partitions of llm_calls (in the current schema) whose upper bound is at or before the
    // cutoff: every row in them is older. DEFAULT and MAXVALUE partitions never qualify.
    let rows = client
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_inherits i \
             JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE i.inhparent = to_regclass('llm_calls') \
             AND substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \\(''([^'']+)''\\)') \
                 IS NOT NULL \
             AND substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \\(''([^'']+)''\\)')::timestamptz \
                 <= now() - make_interval(secs => $1) ORDER BY 1",
            &[&older_than.as_secs_f64()],
        )
        .await
        .map_err(pg)?;
    let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    if !dry_run {
        for name in &names {
            client
                .batch_execute(&format!(
                    "ALTER TABLE llm_calls DETACH PARTITION {name}; DROP TABLE {name}"
                ))
                .await
                .map_err(pg)?;
        }
    }
    Ok(
        json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": dry_run,
        "older_than_s": older_than.as_secs(),
        "partitions_dropped": if dry_run { Value::Null } else { json!(names) },
        "partitions": names}),
    )
}

fn sqlite_delete_rows(
    path: &Path,
    older_than: Duration,
    batch: u32,
    dry_run: bool,
    force: bool,
) -> Result<Value, String> {
    let secs = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
    let q = |e: rusqlite::Error| format!("query failed: {e}");
    if dry_run {
        let conn = open_sqlite(path, false)?;
        let n: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM llm_calls WHERE created_at < {SQLITE_CUTOFF}"),
                [secs],
                |r| r.get(0),
            )
            .map_err(q)?;
        return Ok(
            json!({"backend": "sqlite", "database": path.display().to_string(),
            "dry_run": true, "older_than_s": older_than.as_secs(), "rows": n}),
        );
    }
    if !force {
        return Err(
            "deleting rows from one SQLite file is slow and does not shrink it until \
                    VACUUM (which rewrites the whole file); rotate files per day instead \
                    (--rotate-dir DIR --keep-days N), or pass --force"
                .into(),
        );
    }
    out::stderr_line(
        "pgw telemetry: warning: the file keeps its size until VACUUM, which rewrites the whole \
         database and needs as much free disk space again; prefer rotating files per day",
    );
    let conn = open_sqlite(path, true)?;
    let _ = conn.busy_timeout(Duration::from_secs(5));
    let mut deleted: u64 = 0;
    loop {
        let n = conn
            .execute(
                &format!(
                    "DELETE FROM llm_calls WHERE rowid IN (SELECT rowid FROM llm_calls WHERE \
                     created_at < {SQLITE_CUTOFF} LIMIT ?2)"
                ),
                rusqlite::params![secs, i64::from(batch)],
            )
            .map_err(q)?;
        deleted += n as u64;
        if n == 0 {
            break;
        }
    }
    Ok(
        json!({"backend": "sqlite", "database": path.display().to_string(), "dry_run": false,
        "older_than_s": older_than.as_secs(), "rows_deleted": deleted}),
    )
}

/// Deletes `*.db` files (and their `-wal`/`-shm` companions) in `dir` last modified more than
/// `days` days ago.
fn rotate_dir(dir: &Path, days: u32, dry_run: bool) -> Result<Value, String> {
    let keep = Duration::from_secs(u64::from(days) * 86_400);
    let now = std::time::SystemTime::now();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut old = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("db") {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).ok();
        let age = modified.and_then(|m| now.duration_since(m).ok());
        if age.is_some_and(|a| a > keep) {
            old.push(path);
        }
    }
    old.sort();
    if !dry_run {
        for path in &old {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
            for suffix in ["-wal", "-shm"] {
                let mut side = path.clone().into_os_string();
                side.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(side));
            }
        }
    }
    let names: Vec<String> = old.iter().map(|p| p.display().to_string()).collect();
    Ok(
        json!({"backend": "sqlite", "rotate_dir": dir.display().to_string(), "dry_run": dry_run,
        "keep_days": days, "files": names}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_61_durations_parse_with_units() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert!(parse_duration("3y").is_err());
        assert!(parse_duration("d").is_err());
    }

    #[test]
    fn t_61_dsn_or_path() {
        assert!(is_pg_dsn("postgresql+asyncpg://u@h/db"));
        assert!(is_pg_dsn("postgres://h/db"));
        assert!(!is_pg_dsn("./runs/2026-12-01.db"));
    }
}
