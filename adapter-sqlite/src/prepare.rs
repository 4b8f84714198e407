//! Table preparation: `CREATE TABLE IF NOT EXISTS` in both modes, probe the columns,
//! refuse an incompatible table, then `auto` backfills and `manual` trims.

use std::collections::HashSet;

use gateway_ports::TelemetryRow;
use gateway_ports::schema::{
    BACKFILL_COLUMNS, SchemaMode, SqlBackend, TABLE, backfill_statement, create_table_sql,
    manual_mode_warning, required_columns,
};
use rusqlite::Connection;

/// The outcome of one preparation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preparation {
    /// The INSERT columns, in `COLUMNS` order (all 39 in `auto`; the existing ones in `manual`).
    pub columns: Vec<&'static str>,
    /// `manual` only: the INSERT columns the table lacks, in `COLUMNS` order.
    pub missing_columns: Vec<&'static str>,
    /// The `ALTER` statements executed (empty against a complete table).
    pub executed: Vec<String>,
    /// The one `manual` warning (also logged), if columns are missing.
    pub warning: Option<String>,
}

/// The physical column names of `llm_calls`, in table order (empty if there is no table).
pub fn existing_columns(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({TABLE})"))?;
    let names = stmt.query_map([], |row| row.get::<_, String>(1))?;
    names.collect()
}

/// Prepares `llm_calls` on `conn`.
///
/// 1. `CREATE TABLE IF NOT EXISTS` (both modes); 2. probe with `PRAGMA table_info`;
/// 3. a table lacking any of columns 1–18 is incompatible → `Err(reason)`;
/// 4. `auto`: `ALTER TABLE llm_calls ADD COLUMN` every missing backfill column in T-44 order
///    (a "duplicate column" failure counts as success; any other failure is logged as
///    `SQLite telemetry backfill failed (writes will degrade row by row)` and the INSERT is not
///    trimmed); 5. `manual`: no ALTER, the INSERT is trimmed, one warning
///    ([`manual_mode_warning`]) names the missing columns with paste-ready ALTER lines.
///
/// A second preparation against a complete table executes no ALTER.
///
/// Errors: a secret-free reason (the SQLite error text) if the table cannot be created or
/// probed, or is incompatible.
pub fn prepare_schema(conn: &Connection, mode: SchemaMode) -> Result<Preparation, String> {
    conn.execute_batch(&create_table_sql(SqlBackend::Sqlite))
        .map_err(|e| format!("cannot create table {TABLE}: {e}"))?;
    let existing: HashSet<String> = existing_columns(conn)
        .map_err(|e| format!("cannot probe table {TABLE}: {e}"))?
        .into_iter()
        .collect();
    let lacking: Vec<&str> = required_columns()
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    if !lacking.is_empty() {
        return Err(format!(
            "table {TABLE} is incompatible: it lacks required columns {}",
            lacking.join(", ")
        ));
    }
    let missing: Vec<&'static str> = TelemetryRow::COLUMNS
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    let mut prep = Preparation {
        columns: TelemetryRow::COLUMNS.to_vec(),
        missing_columns: Vec::new(),
        executed: Vec::new(),
        warning: None,
    };
    match mode {
        SchemaMode::Manual => {
            if !missing.is_empty() {
                prep.columns.retain(|c| existing.contains(*c));
                let warning = manual_mode_warning(SqlBackend::Sqlite, &missing);
                tracing::warn!(code = "telemetry.schema_manual_missing", "{warning}");
                prep.warning = Some(warning);
                prep.missing_columns = missing;
            }
        }
        _ => {
            for col in BACKFILL_COLUMNS
                .iter()
                .filter(|c| missing.contains(&c.name))
            {
                let sql = backfill_statement(SqlBackend::Sqlite, col);
                match conn.execute(&sql, []) {
                    Ok(_) => {
                        tracing::info!(code = "telemetry.backfill", statement = %sql, "telemetry schema backfill");
                        prep.executed.push(sql);
                    }
                    Err(e) if e.to_string().contains("duplicate column") => {}
                    Err(e) => {
                        tracing::warn!(
                            code = "telemetry.backfill_failed",
                            column = col.name,
                            "SQLite telemetry backfill failed (writes will degrade row by row): {e}"
                        );
                    }
                }
            }
        }
    }
    Ok(prep)
}
