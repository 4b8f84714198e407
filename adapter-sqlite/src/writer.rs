//! The writer thread: owns the connection, prepares the
//! table lazily, writes rows in enqueue order in batched transactions (up to `batch_rows` rows
//! or one linger window, see `queue`), and runs the healthy → degraded → (cooldown) → healthy
//! state machine.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_ports::schema::{SqlBackend, insert_sql};
use gateway_ports::{SqlValue, TelemetryRow};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ErrorCode};

use crate::prepare::{existing_columns, prepare_schema};
use crate::queue::Queue;
use crate::{Msg, Shared, SqliteRecorderConfig};

/// SQLite `busy_timeout` in ms.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

struct Ready {
    conn: Connection,
    /// The one INSERT (prepared once per connection and taken from the statement cache per
    /// transaction): the row's columns, then `created_at` when the table has it.
    sql: String,
    /// Positions of the INSERT columns in `TelemetryRow::columns()`.
    indices: Vec<usize>,
    /// The INSERT ends with `created_at`, bound by the writer.
    created_at: bool,
    stamp: Stamp,
}

/// `created_at` as the column default writes it (`strftime('%Y-%m-%d %H:%M:%f','now')`: UTC,
/// `YYYY-MM-DD HH:MM:SS.SSS`), formatted by the writer; the date and time up to the second are
/// formatted once per second.
#[derive(Debug, Default)]
pub(crate) struct Stamp {
    secs: Option<u64>,
    text: String,
}

/// Length of `YYYY-MM-DD HH:MM:SS.`.
const STAMP_PREFIX: usize = 20;

impl Stamp {
    /// The text of `now` (a time before 1970 is written as 1970-01-01 00:00:00.000).
    pub(crate) fn at(&mut self, now: SystemTime) -> &str {
        let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        if self.secs == Some(secs) && self.text.len() >= STAMP_PREFIX {
            self.text.truncate(STAMP_PREFIX);
        } else {
            self.text.clear();
            let days = i64::try_from(secs / 86_400).unwrap_or(0);
            let (y, m, d) = civil_from_days(days);
            let rem = secs % 86_400;
            let _ = write!(
                self.text,
                "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            );
            self.secs = Some(secs);
        }
        let ms = since.subsec_millis();
        for digit in [ms / 100, ms / 10 % 10, ms % 10] {
            self.text.push(char::from(b'0' + (digit as u8)));
        }
        &self.text
    }
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub(crate) struct Writer {
    config: SqliteRecorderConfig,
    shared: Arc<Shared>,
    ready: Option<Ready>,
}

/// Drops what is left in the queue when the writer exits for any reason (a `Close`, the
/// recorder dropped, or a panic): later pushes are refused, queued rows are counted as dropped,
/// and queued `Flush`/`Close` acknowledgements are released.
struct StopOnExit<'a> {
    queue: &'a Queue,
    shared: &'a Shared,
}

impl Drop for StopOnExit<'_> {
    fn drop(&mut self) {
        for msg in self.queue.stop() {
            match msg {
                Msg::Row(_) => self.shared.count_dropped(1, "recorder closed"),
                Msg::Flush(ack) | Msg::Close(ack) => {
                    let _ = ack.send(());
                }
            }
        }
        self.shared.report_drops(true);
    }
}

/// The writer loop: takes batches (lingering per `config.linger`), writes their rows in one
/// transaction each, then acknowledges the batch's flushes; a `Close` ends it.
pub(crate) fn run(config: SqliteRecorderConfig, shared: Arc<Shared>, queue: &Queue) {
    let batch_rows = config.batch_rows.max(config.backlog_batch_rows).max(1);
    let linger = config.linger;
    let _stop = StopOnExit {
        queue,
        shared: &shared,
    };
    let mut writer = Writer {
        config,
        shared: Arc::clone(&shared),
        ready: None,
    };
    let mut msgs = Vec::with_capacity(batch_rows + 1);
    let mut rows = Vec::with_capacity(batch_rows);
    let mut acks = Vec::new();
    while queue.next_batch(linger, shared.drop_log_wake(), &mut msgs) {
        if msgs.is_empty() {
            // the idle wait ended for the drop log
            shared.report_drops(false);
            continue;
        }
        let mut close = None;
        for msg in msgs.drain(..) {
            match msg {
                Msg::Row(row) => rows.push(row),
                Msg::Flush(ack) => acks.push(ack),
                Msg::Close(ack) => close = Some(ack),
            }
        }
        writer.write(&rows);
        rows.clear();
        shared.report_drops(false);
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
        if let Some(ack) = close {
            for msg in queue.stop() {
                match msg {
                    Msg::Row(_) => writer.drop_rows(1, "recorder closed"),
                    Msg::Flush(a) | Msg::Close(a) => {
                        let _ = a.send(());
                    }
                }
            }
            writer.ready = None; // closes the connection (checkpoints the WAL)
            shared.report_drops(true);
            let _ = ack.send(());
            return;
        }
    }
}

impl Writer {
    fn drop_rows(&self, n: usize, why: &'static str) {
        self.shared.count_dropped(n as u64, why);
    }

    /// Writes one batch, or drops it (counted) when the recorder cannot write.
    fn write(&mut self, rows: &[Box<TelemetryRow>]) {
        if self.shared.abort.load(Ordering::Relaxed) {
            self.drop_rows(rows.len(), "close timed out");
            return;
        }
        if rows.is_empty() && self.shared.health().degraded {
            return; // a flush is not a row: only a row ends the cooldown (80 T-57)
        }
        if !self.ensure_ready() {
            self.drop_rows(rows.len(), "recorder degraded");
            return;
        }
        if rows.is_empty() {
            return;
        }
        let Some(ready) = self.ready.as_mut() else {
            self.drop_rows(rows.len(), "recorder degraded");
            return;
        };
        match insert_batch(ready, rows) {
            Ok(Batch { written, rejected }) => {
                self.shared.transactions.fetch_add(1, Ordering::Relaxed);
                self.shared
                    .written
                    .fetch_add(written as u64, Ordering::Relaxed);
                self.drop_rows(rejected, "row rejected by SQLite");
            }
            Err(e) if is_availability(&e) => {
                self.drop_rows(rows.len(), "write failed");
                self.ready = None;
                self.enter_degraded(format!("telemetry write failed: {e}"));
            }
            Err(e) => {
                self.drop_rows(rows.len(), "batch failed");
                tracing::warn!(
                    code = "telemetry.batch_dropped",
                    rows = rows.len(),
                    "SQLite telemetry batch dropped (degraded, not propagated): {e}"
                );
            }
        }
    }

    /// `true` when a prepared connection exists; otherwise, unless fatal or cooling down,
    /// opens and prepares.
    fn ensure_ready(&mut self) -> bool {
        if self.ready.is_some() {
            return true;
        }
        {
            let health = self.shared.health();
            if health.fatal {
                return false;
            }
            if health.degraded && health.retry_at.is_some_and(|at| SystemTime::now() < at) {
                return false;
            }
        }
        match open_and_prepare(&self.config) {
            Ok((ready, missing)) => {
                let mut health = self.shared.health();
                let recovered = health.degraded;
                health.degraded = false;
                health.reason = None;
                health.degraded_since = None;
                health.retry_at = None;
                health.missing_columns = missing;
                drop(health);
                if recovered {
                    tracing::info!(
                        code = "telemetry.recovered",
                        "SQLite telemetry recorder recovered"
                    );
                }
                self.ready = Some(ready);
                true
            }
            Err(reason) => {
                self.enter_degraded(reason);
                false
            }
        }
    }

    fn enter_degraded(&self, reason: String) {
        let now = SystemTime::now();
        let mut health = self.shared.health();
        if !health.degraded {
            health.degraded_since = Some(now);
        }
        health.degraded = true;
        health.retry_at = now.checked_add(self.config.cooldown);
        health.reason = Some(reason.clone());
        drop(health);
        tracing::warn!(
            code = "telemetry.degraded",
            cooldown_s = self.config.cooldown.as_secs_f64(),
            "SQLite telemetry recorder degraded (rows dropped and counted until the cooldown ends): {reason}"
        );
    }
}

fn open_and_prepare(config: &SqliteRecorderConfig) -> Result<(Ready, Vec<String>), String> {
    let path = &config.path;
    let conn = open(path, config.wal_autocheckpoint_pages, config.cache_kib)
        .map_err(|e| format!("cannot open telemetry database {}: {e}", path.display()))?;
    let prep = prepare_schema(&conn, config.schema_mode)?;
    let indices = prep
        .columns
        .iter()
        .filter_map(|c| TelemetryRow::COLUMNS.iter().position(|k| k == c))
        .collect();
    // `created_at` is bound by the writer when the table has it (every table this library
    // creates does; a hand-made one may not, and then its own default or NULL applies).
    let created_at = existing_columns(&conn)
        .map_err(|e| format!("cannot probe table llm_calls: {e}"))?
        .iter()
        .any(|c| c == "created_at");
    let mut names = prep.columns.clone();
    if created_at {
        names.push("created_at");
    }
    let sql = insert_sql(SqlBackend::Sqlite, &names);
    let missing = prep
        .missing_columns
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    Ok((
        Ready {
            conn,
            sql,
            indices,
            created_at,
            stamp: Stamp::default(),
        },
        missing,
    ))
}

/// Opens the database: creates the file with mode 0600 first, WAL,
/// `busy_timeout = 5000` ms, `synchronous = NORMAL`, the configured auto-checkpoint and page
/// cache.
fn open(path: &Path, wal_autocheckpoint_pages: u32, cache_kib: u32) -> Result<Connection, String> {
    create_private(path).map_err(|e| e.to_string())?;
    let conn = Connection::open(path).map_err(|e| e.to_string())?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .map_err(|e| e.to_string())?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| e.to_string())?;
    conn.query_row(
        &format!("PRAGMA wal_autocheckpoint = {wal_autocheckpoint_pages}"),
        [],
        |r| r.get::<_, i64>(0),
    )
    .map_err(|e| e.to_string())?;
    conn.pragma_update(None, "cache_size", -i64::from(cache_kib.max(1)))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

#[cfg(unix)]
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn create_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

struct Batch {
    written: usize,
    rejected: usize,
}

fn to_sql(value: SqlValue<'_>) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match value {
        SqlValue::Text(s) => ValueRef::Text(s.as_bytes()),
        SqlValue::Int(i) => ValueRef::Integer(i),
        SqlValue::Real(f) => ValueRef::Real(f),
        SqlValue::Bool(b) => ValueRef::Integer(i64::from(b)),
        _ => ValueRef::Null,
    })
}

/// One transaction: rows in enqueue order, bound by column name from
/// `TelemetryRow::columns()` into the one cached INSERT, `created_at` last. A
/// row-level failure drops that row with a warning; an availability failure aborts the batch
/// (the caller degrades).
fn insert_batch(ready: &mut Ready, rows: &[Box<TelemetryRow>]) -> rusqlite::Result<Batch> {
    let tx = ready.conn.transaction()?;
    let mut batch = Batch {
        written: 0,
        rejected: 0,
    };
    {
        let mut stmt = tx.prepare_cached(&ready.sql)?;
        for row in rows {
            let columns = row.columns();
            for (at, &i) in ready.indices.iter().enumerate() {
                stmt.raw_bind_parameter(at + 1, to_sql(columns[i].1))?;
            }
            if ready.created_at {
                let text = ready.stamp.at(SystemTime::now());
                stmt.raw_bind_parameter(ready.indices.len() + 1, text)?;
            }
            match stmt.raw_execute() {
                Ok(_) => batch.written += 1,
                Err(e) if is_availability(&e) => return Err(e),
                Err(e) => {
                    batch.rejected += 1;
                    tracing::warn!(
                        code = "telemetry.row_rejected",
                        call_id = %row.call_id,
                        "SQLite telemetry row dropped (degraded, not propagated): {e}"
                    );
                }
            }
        }
    }
    tx.commit()?;
    Ok(batch)
}

/// Availability failures degrade the recorder: the file cannot be opened, written or
/// read as a database, permission refused, the disk is full, or the table is gone.
fn is_availability(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::SqliteFailure(err, msg) => {
            matches!(
                err.code,
                ErrorCode::CannotOpen
                    | ErrorCode::ReadOnly
                    | ErrorCode::PermissionDenied
                    | ErrorCode::NotADatabase
                    | ErrorCode::DatabaseCorrupt
                    | ErrorCode::SystemIoFailure
                    | ErrorCode::DiskFull
                    | ErrorCode::AuthorizationForStatementDenied
                    | ErrorCode::FileLockingProtocolFailed
                    | ErrorCode::SchemaChanged
            ) || msg.as_deref().is_some_and(|m| m.contains("no such table"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(secs: u64, ms: u64) -> String {
        Stamp::default()
            .at(UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms))
            .to_owned()
    }

    /// 05 R-47, issue 21: the writer's `created_at` is the text of SQLite's
    /// `strftime('%Y-%m-%d %H:%M:%f', …)` for the same instant (leap days, century rules, the
    /// per-second cache).
    #[test]
    fn r_47_created_at_text_equals_sqlite_strftime() {
        let conn = Connection::open_in_memory().unwrap();
        let mut stamp = Stamp::default();
        for (secs, ms) in [
            (0, 0),
            (951_782_400, 1),     // 2000-02-29
            (951_868_799, 999),   // 2000-02-29 23:59:59.999
            (4_107_542_400, 500), // 2100-03-01
            (1_709_251_199, 42),  // 2024-02-29 23:59:59
            (1_764_633_600, 7),   // 2025-12-02
            (1_764_633_600, 8),   // same second, the cached prefix
            (1_764_633_601, 0),
        ] {
            let sqlite: String = conn
                .query_row(
                    "SELECT strftime('%Y-%m-%d %H:%M:%f', ?1, 'unixepoch')",
                    [secs as f64 + ms as f64 / 1000.0 + 0.0001],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(text(secs, ms), sqlite);
            let at = UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms);
            assert_eq!(stamp.at(at), sqlite, "cached stamp");
        }
    }
}
