//! The `llm_calls` table: DDL, backfill list, INSERT text and schema modes for both backends.
//!
//! One source for SQLite and Postgres: the recorders execute these strings and
//! [`telemetry_schema_sql`] prints them, so the shipped script and the executed DDL cannot drift.
//! Pure functions; no I/O. Lives beside [`TelemetryRow`] in the ports crate, so the
//! recorder adapters (which depend on ports only) and the CLI share it without linking the core
//! or a database driver.

use std::fmt::Write as _;
use std::time::Duration;

use crate::{ConfigError, TelemetryRow};

/// The table name (fixed).
pub const TABLE: &str = "llm_calls";

/// Recovery cooldown of a degraded recorder: 60 s.
pub const RECOVERY_COOLDOWN: Duration = Duration::from_secs(60);

/// The environment key of the schema mode.
pub const SCHEMA_MODE_KEY: &str = "PGW_TELEMETRY_SCHEMA_MODE";

/// Which SQL dialect a statement is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SqlBackend {
    /// SQLite (`adapter-sqlite`).
    Sqlite,
    /// Postgres (`adapter-postgres`).
    Postgres,
}

impl SqlBackend {
    /// `"sqlite"` / `"postgres"` (the `TelemetryStatus::backend` value).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    /// Human name used in log lines (`SQLite`, `Postgres`).
    pub const fn display_name(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres => "Postgres",
        }
    }
}

/// Schema mode: `auto` creates and `ALTER`-backfills, `manual` sends no
/// `ALTER` and trims the INSERT to the columns that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SchemaMode {
    /// Create the table and add missing columns.
    Auto,
    /// No `ALTER`; write only the existing columns, warn once naming the missing ones.
    Manual,
}

impl SchemaMode {
    /// The mode in effect: an explicit value wins; unset → SQLite `auto`, Postgres
    /// `manual`.
    pub const fn resolve(explicit: Option<Self>, backend: SqlBackend) -> Self {
        match (explicit, backend) {
            (Some(mode), _) => mode,
            (None, SqlBackend::Sqlite) => Self::Auto,
            (None, SqlBackend::Postgres) => Self::Manual,
        }
    }

    /// Parses `auto` / `manual`. Anything else is `ConfigError telemetry.schema_mode`
    /// naming `PGW_TELEMETRY_SCHEMA_MODE`.
    pub fn parse(value: &str) -> Result<Self, ConfigError> {
        match value {
            "auto" => Ok(Self::Auto),
            "manual" => Ok(Self::Manual),
            other => Err(ConfigError::new(
                "telemetry.schema_mode",
                SCHEMA_MODE_KEY,
                format!("expected `auto` or `manual`, got {other:?}"),
            )),
        }
    }

    /// `"auto"` / `"manual"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Manual => "manual",
        }
    }
}

/// One physical column: its name and its declaration (type and constraints) per dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDef {
    /// Column name.
    pub name: &'static str,
    /// SQLite type and constraints, e.g. `TEXT NOT NULL`.
    pub sqlite: &'static str,
    /// Postgres type and constraints.
    pub postgres: &'static str,
}

impl ColumnDef {
    const fn same(name: &'static str, decl: &'static str) -> Self {
        Self {
            name,
            sqlite: decl,
            postgres: decl,
        }
    }

    /// The type and constraints for `backend`.
    pub const fn decl(&self, backend: SqlBackend) -> &'static str {
        match backend {
            SqlBackend::Sqlite => self.sqlite,
            SqlBackend::Postgres => self.postgres,
        }
    }

    /// `"<name> <type and constraints>"` as written in DDL.
    pub fn declaration(&self, backend: SqlBackend) -> String {
        format!("{} {}", self.name, self.decl(backend))
    }
}

/// Physical columns 1–19 of a fresh table: INSERT columns 1–18 then `created_at` (a
/// millisecond UTC text default on SQLite). The SQLite writer binds `created_at` itself, in the
/// default's text; Postgres keeps its `now()` default.
pub const BASE_COLUMNS: [ColumnDef; 19] = [
    ColumnDef::same("call_id", "TEXT PRIMARY KEY"),
    ColumnDef::same("parent_call_id", "TEXT"),
    ColumnDef::same("session_id", "TEXT"),
    ColumnDef::same("model", "TEXT NOT NULL"),
    ColumnDef::same("provider", "TEXT NOT NULL"),
    ColumnDef::same("source_name", "TEXT NOT NULL"),
    ColumnDef::same("messages", "TEXT NOT NULL"),
    ColumnDef::same("response", "TEXT NOT NULL"),
    ColumnDef::same("thinking", "TEXT NOT NULL DEFAULT ''"),
    ColumnDef::same("prompt_tokens", "INTEGER NOT NULL"),
    ColumnDef::same("completion_tokens", "INTEGER NOT NULL"),
    ColumnDef::same("usage_source", "TEXT NOT NULL"),
    ColumnDef::same("latency_ms", "INTEGER NOT NULL"),
    ColumnDef {
        name: "ttft_ms",
        sqlite: "REAL",
        postgres: "DOUBLE PRECISION",
    },
    ColumnDef {
        name: "max_inter_token_ms",
        sqlite: "REAL",
        postgres: "DOUBLE PRECISION",
    },
    ColumnDef {
        name: "cache_hit",
        sqlite: "INTEGER NOT NULL DEFAULT 0",
        postgres: "BOOLEAN NOT NULL DEFAULT FALSE",
    },
    ColumnDef::same("error", "TEXT"),
    ColumnDef {
        name: "cost",
        sqlite: "REAL",
        postgres: "DOUBLE PRECISION",
    },
    ColumnDef {
        name: "created_at",
        sqlite: "TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now'))",
        postgres: "TIMESTAMPTZ NOT NULL DEFAULT now()",
    },
];

/// The backfill list: INSERT columns 19–39 in the order they are `ALTER`-appended,
/// identical on both backends.
pub const BACKFILL_COLUMNS: [ColumnDef; 21] = [
    ColumnDef::same("cached_prompt_tokens", "INTEGER"),
    ColumnDef::same("model_reported", "TEXT"),
    ColumnDef::same("sampling", "TEXT"),
    ColumnDef::same("reasoning_tokens", "INTEGER"),
    ColumnDef::same("tenant_id", "TEXT NOT NULL DEFAULT ''"),
    ColumnDef {
        name: "meta",
        sqlite: "TEXT NOT NULL DEFAULT '{}'",
        postgres: "JSONB NOT NULL DEFAULT '{}'::jsonb",
    },
    ColumnDef::same("thinking_observation", "TEXT"),
    ColumnDef::same("reasoning_effort", "TEXT"),
    ColumnDef::same("scope", "TEXT"),
    ColumnDef::same("operation", "TEXT"),
    ColumnDef::same("logical_call_id", "TEXT"),
    ColumnDef::same("event_kind", "TEXT"),
    ColumnDef::same("http_status_code", "INTEGER"),
    ColumnDef::same("error_type", "TEXT"),
    ColumnDef::same("cause_type", "TEXT"),
    ColumnDef::same("error_body", "TEXT"),
    ColumnDef::same("attempts", "INTEGER"),
    ColumnDef::same("total_latency_ms", "INTEGER"),
    ColumnDef::same("stall_ms", "INTEGER"),
    ColumnDef::same("stall_count", "INTEGER"),
    ColumnDef::same("stream_end", "TEXT"),
];

/// INSERT columns 1–18: a table lacking any of them is incompatible.
pub fn required_columns() -> &'static [&'static str] {
    &TelemetryRow::COLUMNS[..18]
}

/// The 40 physical columns in table order: `call_id … cost, created_at,
/// cached_prompt_tokens … stream_end`.
pub fn physical_columns() -> Vec<&'static str> {
    BASE_COLUMNS
        .iter()
        .chain(BACKFILL_COLUMNS.iter())
        .map(|c| c.name)
        .collect()
}

/// The backfill definition of `name`, if it is one of columns 19–39.
pub fn backfill_column(name: &str) -> Option<&'static ColumnDef> {
    BACKFILL_COLUMNS.iter().find(|c| c.name == name)
}

/// `CREATE TABLE IF NOT EXISTS llm_calls (…)` with all 40 columns in physical order.
/// One column per line.
pub fn create_table_sql(backend: SqlBackend) -> String {
    let mut sql = format!("CREATE TABLE IF NOT EXISTS {TABLE} (\n");
    let all: Vec<&ColumnDef> = BASE_COLUMNS.iter().chain(BACKFILL_COLUMNS.iter()).collect();
    for (i, col) in all.iter().enumerate() {
        let sep = if i + 1 == all.len() { "" } else { "," };
        let _ = writeln!(sql, "    {}{sep}", col.declaration(backend));
    }
    sql.push_str(");");
    sql
}

/// The executed backfill statement for one column:
/// `ALTER TABLE llm_calls ADD COLUMN <decl>` — never `IF NOT EXISTS` (the recorder probes
/// first; on Postgres that form takes an ACCESS EXCLUSIVE lock even when the column exists).
pub fn backfill_statement(backend: SqlBackend, column: &ColumnDef) -> String {
    format!(
        "ALTER TABLE {TABLE} ADD COLUMN {}",
        column.declaration(backend)
    )
}

/// The INSERT for any column subset, in the given order, placeholders numbered without gaps:
/// SQLite `INSERT OR IGNORE INTO llm_calls (…) VALUES (?, …)`; Postgres
/// `INSERT INTO llm_calls (…) VALUES ($1, …) ON CONFLICT DO NOTHING` (no conflict target, so a
/// table partitioned on `(call_id, created_at)` works). Idempotent on `call_id`.
pub fn insert_sql(backend: SqlBackend, columns: &[&str]) -> String {
    let names = columns.join(", ");
    match backend {
        SqlBackend::Sqlite => {
            let marks = vec!["?"; columns.len()].join(", ");
            format!("INSERT OR IGNORE INTO {TABLE} ({names}) VALUES ({marks})")
        }
        SqlBackend::Postgres => {
            let marks = (1..=columns.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("INSERT INTO {TABLE} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING")
        }
    }
}

/// The paste-ready DDL script (`pgw schema-sql sqlite|postgres`): the
/// `CREATE TABLE IF NOT EXISTS` of [`create_table_sql`], then one backfill line per column 19–39
/// for upgrading an older table. Postgres lines use `ADD COLUMN IF NOT EXISTS` (re-runnable);
/// SQLite has no such form, so its lines are plain and preceded by a comment saying to run each
/// only for a missing column.
pub fn telemetry_schema_sql(backend: SqlBackend) -> String {
    let mut sql = format!(
        "-- PolyGateway telemetry table ({}; {} columns, {} written by the library)\n",
        backend.display_name(),
        BASE_COLUMNS.len() + BACKFILL_COLUMNS.len(),
        TelemetryRow::COLUMN_COUNT
    );
    sql.push_str(&create_table_sql(backend));
    sql.push_str("\n\n-- Upgrading a table created by an older version:\n");
    match backend {
        SqlBackend::Sqlite => {
            // Commented out so that piping the output into `sqlite3` on a new database works:
            // the CREATE TABLE above already has every column.
            sql.push_str(
                "-- SQLite cannot add a column only when it is missing: uncomment and run each \
                 line below only for a column that PRAGMA table_info(llm_calls) does not list.\n",
            );
            for col in &BACKFILL_COLUMNS {
                let _ = writeln!(sql, "-- {};", backfill_statement(backend, col));
            }
        }
        SqlBackend::Postgres => {
            for col in &BACKFILL_COLUMNS {
                let _ = writeln!(
                    sql,
                    "ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {};",
                    col.declaration(backend)
                );
            }
        }
    }
    sql
}

/// The one preparation warning of `manual` mode: contains `schema_mode=manual`,
/// the sentence `the following dimensions will not be recorded: <missing, ", "-joined>.` and one
/// paste-ready `ALTER TABLE llm_calls ADD COLUMN <decl>;` line per missing column. `missing` is
/// in `COLUMNS` order; names outside the backfill list get no ALTER line.
pub fn manual_mode_warning(backend: SqlBackend, missing: &[&str]) -> String {
    let mut text = format!(
        "{} telemetry table {TABLE} lacks {} column(s) (schema_mode=manual, no DDL sent): \
         the following dimensions will not be recorded: {}.",
        backend.display_name(),
        missing.len(),
        missing.join(", ")
    );
    text.push_str(" To record them, run:");
    for col in missing.iter().filter_map(|m| backfill_column(m)) {
        let _ = write!(text, "\n{};", backfill_statement(backend, col));
    }
    text
}
