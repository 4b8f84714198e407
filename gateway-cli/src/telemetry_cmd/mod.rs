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

use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_postgres::ParsedDsn;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::config::SCHEMA_VERSION;
use crate::exit;
use crate::out;

mod retention;
mod stats;

use retention::retention;
use stats::stats;

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

#[cfg(test)]
mod tests;
