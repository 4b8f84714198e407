//! Reading a run's telemetry back after `close()`: the SQLite file or the Postgres rows of the
//! run, totalled into [`TelemetryTotals`].
//!
//! Separate so the demo's only database reads sit in one place.

use serde::Serialize;

/// What the telemetry file holds after `close()`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TelemetryTotals {
    /// Rows in `llm_calls`.
    pub rows: u64,
    /// Σ `prompt_tokens`.
    pub prompt_tokens: u64,
    /// Σ `completion_tokens`.
    pub completion_tokens: u64,
    /// Σ `cost` over priced rows (`None` when no row was priced).
    pub cost: Option<f64>,
}

/// The Postgres DSN of `--telemetry`, when it is one.
pub(super) fn postgres_target(telemetry: &std::path::Path) -> Option<String> {
    let text = telemetry.to_str()?;
    let scheme = text.split("://").next()?;
    (text.contains("://") && matches!(scheme.split('+').next(), Some("postgres" | "postgresql")))
        .then(|| text.to_owned())
}

/// The server's clock before the workload: this run's rows are those created at or after it.
pub(super) async fn postgres_run_start(
    dsn: &adapter_postgres::ParsedDsn,
) -> Result<std::time::SystemTime, String> {
    let client = dsn
        .connect(std::time::Duration::from_secs(10))
        .await
        .map_err(|e| e.0)?;
    client
        .query_one("SELECT now()", &[])
        .await
        .map(|row| row.get(0))
        .map_err(|e| format!("cannot read the server clock: {e}"))
}

/// This run's totals from Postgres (rows created since `start`).
pub(super) async fn read_postgres_telemetry(
    dsn: &adapter_postgres::ParsedDsn,
    start: std::time::SystemTime,
) -> Result<TelemetryTotals, String> {
    let client = dsn
        .connect(std::time::Duration::from_secs(10))
        .await
        .map_err(|e| e.0)?;
    let row = client
        .query_one(
            "SELECT count(*)::int8, COALESCE(sum(prompt_tokens), 0)::int8, \
             COALESCE(sum(completion_tokens), 0)::int8, sum(cost)::float8 FROM llm_calls \
             WHERE created_at >= $1",
            &[&start],
        )
        .await
        .map_err(|e| format!("cannot read llm_calls: {e}"))?;
    Ok(TelemetryTotals {
        rows: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
        prompt_tokens: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
        completion_tokens: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
        cost: row.get::<_, Option<f64>>(3),
    })
}

pub(super) fn read_telemetry(path: &std::path::Path) -> Result<TelemetryTotals, rusqlite::Error> {
    // Read-write (never create): a read-only connection to a WAL database cannot remove the
    // `-wal` / `-shm` files when it closes, and the demo must leave only the files it names.
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let totals = conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), \
         SUM(cost) FROM llm_calls",
        [],
        |row| {
            Ok(TelemetryTotals {
                rows: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                prompt_tokens: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                completion_tokens: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                cost: row.get::<_, Option<f64>>(3)?,
            })
        },
    )?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(totals)
}
/// Where a run's telemetry is read back from.
pub(super) enum Reader<'a> {
    /// A SQLite file.
    Sqlite(&'a std::path::Path),
    /// Postgres rows created at or after the instant (the server's clock).
    Postgres(&'a adapter_postgres::ParsedDsn, std::time::SystemTime),
    /// Nothing was recorded (the naive run when the target is Postgres).
    Nothing,
}
