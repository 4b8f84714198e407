//! The Postgres `llm_calls` table: DDL, backfill statements, the INSERT and the manual-mode
//! notice, generated from the ports' column list ([`TelemetryRow::COLUMNS`]).
//!
//! The column *names* and their INSERT order come from `gateway-ports`; this module adds only
//! the Postgres declaration of each (`DOUBLE PRECISION`, `BOOLEAN`, `TIMESTAMPTZ`,
//! `JSONB`). Pure functions, no I/O. A unit test pins the order against the ports so the two
//! cannot drift.

use std::fmt::Write as _;

use gateway_ports::TelemetryRow;

/// The table name (20 §8.3 fixed constant).
pub const TABLE: &str = "llm_calls";

/// How a column's values are bound (the array element type of the INSERT's `unnest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PgKind {
    /// `text`.
    Text,
    /// `int8` (assignment-cast to the table's `INTEGER`).
    Int,
    /// `float8`.
    Real,
    /// `bool`.
    Bool,
    /// `jsonb` (the row carries canonical JSON text; sent as JSONB without re-parsing).
    Json,
}

impl PgKind {
    /// The SQL array type the INSERT casts the parameter to.
    pub const fn array_type(self) -> &'static str {
        match self {
            Self::Text => "text[]",
            Self::Int => "int8[]",
            Self::Real => "float8[]",
            Self::Bool => "bool[]",
            Self::Json => "jsonb[]",
        }
    }
}

/// One physical column: name, Postgres declaration and bind kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgColumn {
    /// Column name.
    pub name: &'static str,
    /// Type and constraints as written in DDL.
    pub decl: &'static str,
    /// How values are bound.
    pub kind: PgKind,
}

const fn col(name: &'static str, decl: &'static str, kind: PgKind) -> PgColumn {
    PgColumn { name, decl, kind }
}

/// The physical table in order: INSERT columns 1–18, `created_at`, then the
/// backfill columns 19–39.
pub const PHYSICAL: [PgColumn; 40] = [
    col("call_id", "TEXT PRIMARY KEY", PgKind::Text),
    col("parent_call_id", "TEXT", PgKind::Text),
    col("session_id", "TEXT", PgKind::Text),
    col("model", "TEXT NOT NULL", PgKind::Text),
    col("provider", "TEXT NOT NULL", PgKind::Text),
    col("source_name", "TEXT NOT NULL", PgKind::Text),
    col("messages", "TEXT NOT NULL", PgKind::Text),
    col("response", "TEXT NOT NULL", PgKind::Text),
    col("thinking", "TEXT NOT NULL DEFAULT ''", PgKind::Text),
    col("prompt_tokens", "INTEGER NOT NULL", PgKind::Int),
    col("completion_tokens", "INTEGER NOT NULL", PgKind::Int),
    col("usage_source", "TEXT NOT NULL", PgKind::Text),
    col("latency_ms", "INTEGER NOT NULL", PgKind::Int),
    col("ttft_ms", "DOUBLE PRECISION", PgKind::Real),
    col("max_inter_token_ms", "DOUBLE PRECISION", PgKind::Real),
    col("cache_hit", "BOOLEAN NOT NULL DEFAULT FALSE", PgKind::Bool),
    col("error", "TEXT", PgKind::Text),
    col("cost", "DOUBLE PRECISION", PgKind::Real),
    col(
        "created_at",
        "TIMESTAMPTZ NOT NULL DEFAULT now()",
        PgKind::Text,
    ),
    col("cached_prompt_tokens", "INTEGER", PgKind::Int),
    col("model_reported", "TEXT", PgKind::Text),
    col("sampling", "TEXT", PgKind::Text),
    col("reasoning_tokens", "INTEGER", PgKind::Int),
    col("tenant_id", "TEXT NOT NULL DEFAULT ''", PgKind::Text),
    col("meta", "JSONB NOT NULL DEFAULT '{}'::jsonb", PgKind::Json),
    col("thinking_observation", "TEXT", PgKind::Text),
    col("reasoning_effort", "TEXT", PgKind::Text),
    col("scope", "TEXT", PgKind::Text),
    col("operation", "TEXT", PgKind::Text),
    col("logical_call_id", "TEXT", PgKind::Text),
    col("event_kind", "TEXT", PgKind::Text),
    col("http_status_code", "INTEGER", PgKind::Int),
    col("error_type", "TEXT", PgKind::Text),
    col("cause_type", "TEXT", PgKind::Text),
    col("error_body", "TEXT", PgKind::Text),
    col("attempts", "INTEGER", PgKind::Int),
    col("total_latency_ms", "INTEGER", PgKind::Int),
    col("stall_ms", "INTEGER", PgKind::Int),
    col("stall_count", "INTEGER", PgKind::Int),
    col("stream_end", "TEXT", PgKind::Text),
];

/// Number of INSERT columns a table must have to be writable at all.
pub const REQUIRED_COLUMNS: usize = 18;

/// The physical definition of `name`.
pub fn column(name: &str) -> Option<&'static PgColumn> {
    PHYSICAL.iter().find(|c| c.name == name)
}

/// The backfill columns 19–39 in T-44 order.
pub fn backfill_columns() -> &'static [PgColumn] {
    &PHYSICAL[19..]
}

/// The definition of INSERT column `index` (0-based in [`TelemetryRow::COLUMNS`]).
pub fn insert_column(index: usize) -> &'static PgColumn {
    // INSERT columns 0..18 are physical 0..18; 18..39 are physical 19..40.
    let physical = if index < REQUIRED_COLUMNS {
        index
    } else {
        index + 1
    };
    &PHYSICAL[physical.min(PHYSICAL.len() - 1)]
}

/// `CREATE TABLE IF NOT EXISTS llm_calls (…)` with the 40 columns in physical order.
pub fn create_table_sql() -> String {
    let mut sql = format!("CREATE TABLE IF NOT EXISTS {TABLE} (\n");
    for (i, c) in PHYSICAL.iter().enumerate() {
        let sep = if i + 1 == PHYSICAL.len() { "" } else { "," };
        let _ = writeln!(sql, "    {} {}{sep}", c.name, c.decl);
    }
    sql.push_str(");");
    sql
}

/// The executed backfill statement: `ALTER TABLE llm_calls ADD COLUMN <decl>`, never
/// `IF NOT EXISTS` (that form takes an ACCESS EXCLUSIVE lock even when the column exists; the
/// recorder probes first).
pub fn backfill_statement(c: &PgColumn) -> String {
    format!("ALTER TABLE {TABLE} ADD COLUMN {} {}", c.name, c.decl)
}

/// The paste-ready, re-runnable script: the CREATE TABLE plus one
/// `ALTER TABLE llm_calls ADD COLUMN IF NOT EXISTS <decl>;` per backfill column.
pub fn telemetry_schema_sql() -> String {
    let mut sql = format!(
        "-- PolyGateway telemetry table (Postgres; {} columns, {} written by the library)\n",
        PHYSICAL.len(),
        TelemetryRow::COLUMN_COUNT
    );
    sql.push_str(&create_table_sql());
    sql.push_str("\n\n-- Upgrading a table created by an older version:\n");
    for c in backfill_columns() {
        let _ = writeln!(
            sql,
            "ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {} {};",
            c.name, c.decl
        );
    }
    sql
}

/// The batch INSERT for the INSERT columns `indexes` (0-based in [`TelemetryRow::COLUMNS`], in
/// that order): one array parameter per column, unnested into rows, so one prepared statement
/// serves every batch size. `ON CONFLICT DO NOTHING` without a target: idempotent on
/// `call_id`, and valid on a table partitioned with primary key `(call_id, created_at)`.
pub fn batch_insert_sql(indexes: &[usize]) -> String {
    let names: Vec<&str> = indexes.iter().map(|&i| insert_column(i).name).collect();
    let arrays: Vec<String> = indexes
        .iter()
        .enumerate()
        .map(|(n, &i)| format!("${}::{}", n + 1, insert_column(i).kind.array_type()))
        .collect();
    format!(
        "INSERT INTO {TABLE} ({}) SELECT * FROM unnest({}) ON CONFLICT DO NOTHING",
        names.join(", "),
        arrays.join(", ")
    )
}

/// The one preparation warning of `manual` mode: `schema_mode=manual`, the
/// exact sentence `the following dimensions will not be recorded: <missing, ", "-joined>.` and
/// one paste-ready `ALTER TABLE llm_calls ADD COLUMN <decl>;` line per missing column.
pub fn manual_mode_warning(missing: &[&str]) -> String {
    let mut text = format!(
        "Postgres telemetry table {TABLE} lacks {} column(s) (schema_mode=manual, no DDL sent): \
         the following dimensions will not be recorded: {}.",
        missing.len(),
        missing.join(", ")
    );
    text.push_str(" To record them, run:");
    for c in missing.iter().filter_map(|m| column(m)) {
        let _ = write!(text, "\n{};", backfill_statement(c));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 80 T-8/T-43: the Postgres declarations follow the ports' INSERT order exactly.
    #[test]
    fn t_43_physical_order_matches_ports_columns() {
        for (i, name) in TelemetryRow::COLUMNS.iter().enumerate() {
            assert_eq!(insert_column(i).name, *name, "INSERT column {i}");
        }
        assert_eq!(PHYSICAL[18].name, "created_at");
        assert_eq!(backfill_columns().len(), 21);
        assert_eq!(backfill_columns()[0].name, "cached_prompt_tokens");
    }

    /// every placeholder numbered without gaps; no conflict target.
    #[test]
    fn t_45_batch_insert_numbers_placeholders_without_gaps() {
        let sql = batch_insert_sql(&[0, 3, 23]);
        assert_eq!(
            sql,
            "INSERT INTO llm_calls (call_id, model, meta) SELECT * FROM unnest($1::text[], \
             $2::text[], $3::jsonb[]) ON CONFLICT DO NOTHING"
        );
        let all: Vec<usize> = (0..39).collect();
        assert!(batch_insert_sql(&all).contains("$39::text[])"));
    }

    /// step 5: the exact sentence and one ALTER line per missing column.
    #[test]
    fn t_47_manual_warning_names_columns_and_alter_lines() {
        let w = manual_mode_warning(&["scope", "meta"]);
        assert!(w.contains("schema_mode=manual"));
        assert!(w.contains("the following dimensions will not be recorded: scope, meta."));
        assert!(w.contains("\nALTER TABLE llm_calls ADD COLUMN scope TEXT;"));
        assert!(w.contains(
            "\nALTER TABLE llm_calls ADD COLUMN meta JSONB NOT NULL DEFAULT '{}'::jsonb;"
        ));
    }

    /// the bind kind agrees with the value variant the ports produce.
    #[test]
    fn t_48_bind_kinds_agree_with_row_values() {
        let row = contract_row();
        for (i, (name, value)) in row.columns().into_iter().enumerate() {
            let kind = insert_column(i).kind;
            let ok = matches!(
                (kind, value),
                (
                    PgKind::Text | PgKind::Json,
                    gateway_ports::SqlValue::Text(_)
                ) | (PgKind::Int, gateway_ports::SqlValue::Int(_))
                    | (PgKind::Real, gateway_ports::SqlValue::Real(_))
                    | (PgKind::Bool, gateway_ports::SqlValue::Bool(_))
            );
            assert!(ok, "{name}: {kind:?} vs {value:?}");
        }
    }

    fn contract_row() -> TelemetryRow {
        use gateway_ports::*;
        TelemetryRow {
            call_id: "c".into(),
            parent_call_id: Some("p".into()),
            session_id: Some("s".into()),
            model: "m".into(),
            provider: "p".into(),
            source_name: "s".into(),
            messages: "[]".into(),
            response: "r".into(),
            thinking: "t".into(),
            prompt_tokens: 1,
            completion_tokens: 2,
            usage_source: UsageSource::Measured,
            latency_ms: 3,
            ttft_ms: Some(1.0),
            max_inter_token_ms: Some(1.0),
            cache_hit: true,
            error: Some("e".into()),
            cost: Some(0.1),
            cached_prompt_tokens: Some(1),
            model_reported: Some("m".into()),
            sampling: Some("{}".into()),
            reasoning_tokens: Some(1),
            tenant_id: String::new(),
            meta: "{}".into(),
            thinking_observation: Some(ThinkingObservation::Observed),
            reasoning_effort: Some(Effort::Low),
            scope: "llm".into(),
            operation: CallOperation::Chat,
            logical_call_id: Some("l".into()),
            event_kind: EventKind::Attempt,
            http_status_code: Some(200),
            error_type: Some("X"),
            cause_type: Some(CauseKind::ReadTimeout),
            error_body: Some("b".into()),
            attempts: Some(1),
            total_latency_ms: Some(1),
            stall_ms: Some(1),
            stall_count: Some(1),
            stream_end: Some(StreamEnd::EofAfterFinish),
        }
    }
}
