//! PolyGateway `TelemetryRecorder` over SQLite.
//!
//! Owns the SQLite side of telemetry: one writer thread per recorder, fed by a bounded queue,
//! so [`TelemetryRecorder::record`] (synchronous) never waits for disk. The writer opens the file
//! (created with mode 0600, WAL, `busy_timeout` 5000 ms), prepares `llm_calls` lazily before
//! its first write (`auto` backfills missing columns, `manual` trims the INSERT and
//! names the missing ones), and writes rows in enqueue order in transactions of up to 256 rows
//! (up to 4 096 while more than 256 are queued, i.e. while the writer is behind) or one linger window (default 2 ms: after its first row the writer waits that long for more
//! rows unless the batch fills or a `flush`/`close` arrives, so a trickle of rows shares one
//! transaction and one wake; issue 9 follow-up).
//!
//! Failures never propagate: an open, preparation or availability failure makes
//! the recorder *degraded* — rows are dropped and counted with no disk traffic until the cooldown
//! (60 s) ends; the first row after it re-runs preparation, and success heals the recorder.
//! A full queue drops the row and counts it; `record` never waits. Dropped rows are
//! logged at most once per interval (default 10 s), one line with the count. The writer binds
//! `created_at` itself (UTC, `YYYY-MM-DD HH:MM:SS.SSS`, the text the column default writes)
//! through one cached INSERT statement. Everything shows in
//! [`TelemetryStatusProvider::status`] (`degraded`, `reason`, `dropped_rows`, `written_rows`,
//! `degraded_since`, `retry_at`, `missing_columns`).
//!
//! The DDL and INSERT texts come from `gateway_ports::schema`, the single source shared
//! with Postgres and the CLI.

mod droplog;
mod prepare;
mod queue;
mod writer;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use gateway_ports::schema::{RECOVERY_COOLDOWN, SchemaMode, SqlBackend};
use gateway_ports::{
    RecordError, RecordErrorKind, TelemetryRecorder, TelemetryRow, TelemetryStatus,
    TelemetryStatusProvider,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

pub use prepare::{Preparation, existing_columns, prepare_schema};

use crate::droplog::DropLog;
use crate::queue::{Msg, Queue, Refused};

/// Default queue capacity in rows (chosen).
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;

/// Default rows per transaction (chosen).
pub const DEFAULT_BATCH_ROWS: usize = 256;

/// Default rows per transaction while the writer is behind (chosen, issue 21 fifth session):
/// when more than [`DEFAULT_BATCH_ROWS`] rows are queued as the writer takes a batch, it takes
/// up to this many. Random UUIDv4 `call_id`s put nearly every row on a different page of the
/// primary-key index, and a transaction writes each page it touched once, so a larger
/// transaction writes fewer pages per row exactly when the writer needs it
/// (docs/benchmarks.md, "telemetry, fifth session").
pub const DEFAULT_BACKLOG_BATCH_ROWS: usize = 4096;

/// Default bound of [`TelemetryRecorder::close`] (chosen): 5 s.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Default linger of the writer (80 T-50 "256 rows or 50 ms"; chosen 2 ms, issue 9
/// follow-up): how long the writer waits, after its first row, for more rows to share the
/// transaction. A full batch, `flush()` or `close()` ends the wait at once. Longer lingers save
/// a little more writer CPU per row but make the writer's bursts longer, which showed up as a
/// higher end-to-end p99 on a 2-core machine (docs/benchmarks.md).
pub const DEFAULT_LINGER: Duration = Duration::from_millis(2);

/// Default WAL auto-checkpoint threshold of the writer's connection, in pages (chosen, issue 21
/// fifth session: 4 000 pages ≈ 16 MB of WAL instead of SQLite's 1 000; a checkpoint copies each
/// page once however often it was rewritten since the last one, and random `call_id` index
/// pages are rewritten often).
pub const DEFAULT_WAL_AUTOCHECKPOINT_PAGES: u32 = 4000;

/// Default page cache of the writer's connection, in KiB (`PRAGMA cache_size = -N`; chosen,
/// issue 21 fifth session: 16 000 KiB instead of SQLite's 2 000, so a backlog transaction's
/// dirty index pages stay in memory until its commit instead of spilling, and fewer index pages
/// are read back; it fills once the file holds about this much, then stays at this size).
pub const DEFAULT_CACHE_KIB: u32 = 16_000;

/// Default interval of the dropped-row log line (chosen, issue 21): 10 s. Every dropped row is
/// counted in `dropped_rows` at once; the log shows them at most once per interval.
pub const DEFAULT_DROP_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Settings of one SQLite recorder.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteRecorderConfig {
    /// The database file (`PGW_TELEMETRY_SQLITE_PATH`, default `telemetry.db`). Created with
    /// mode 0600 if missing; an unusable path degrades the recorder, never fails assembly.
    pub path: PathBuf,
    /// `PGW_TELEMETRY_SCHEMA_MODE` (unset → `auto` on SQLite).
    pub schema_mode: SchemaMode,
    /// Rows the queue holds before `record` drops (≥ 1). Rows waiting out the
    /// linger are still queued and count.
    pub queue_capacity: usize,
    /// Rows per transaction (≥ 1).
    pub batch_rows: usize,
    /// Rows per transaction when more than `batch_rows` rows are queued as the writer takes a
    /// batch (default [`DEFAULT_BACKLOG_BATCH_ROWS`]; values below `batch_rows` mean
    /// `batch_rows`, i.e. no larger backlog transactions).
    pub backlog_batch_rows: usize,
    /// How long the writer waits after its first row for more rows to share the transaction
    /// (default [`DEFAULT_LINGER`], 2 ms; at most 50 ms per 80 T-50; zero = write at once).
    /// A full batch, `flush()` or `close()` ends the wait at once.
    pub linger: Duration,
    /// Degraded cooldown before preparation is retried (60 s).
    pub cooldown: Duration,
    /// Bound of `close()`.
    pub close_timeout: Duration,
    /// At most one dropped-row log line per this interval (default
    /// [`DEFAULT_DROP_LOG_INTERVAL`], 10 s); the line carries the count since the previous one.
    pub drop_log_interval: Duration,
    /// The writer connection's `PRAGMA wal_autocheckpoint` in pages (default
    /// [`DEFAULT_WAL_AUTOCHECKPOINT_PAGES`]; 0 turns automatic checkpoints off, leaving them to
    /// other connections and to the close). Larger values mean fewer, larger checkpoints (each
    /// one syncs the file) and a larger WAL file.
    pub wal_autocheckpoint_pages: u32,
    /// The writer connection's page cache in KiB (`PRAGMA cache_size = -N`; default
    /// [`DEFAULT_CACHE_KIB`]; at least 1). The cache fills once the file holds about this much
    /// and then stays at this size, so it bounds the writer's share of the resident set;
    /// a larger cache keeps more of the `call_id` index in memory (random UUIDv4 keys touch
    /// a different index page per row).
    pub cache_kib: u32,
}

impl SqliteRecorderConfig {
    /// Defaults for `path`: `auto`, 10 000 queued rows, 256 rows per transaction, 2 ms
    /// linger, 60 s cooldown, 5 s close bound.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            schema_mode: SchemaMode::resolve(None, SqlBackend::Sqlite),
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            batch_rows: DEFAULT_BATCH_ROWS,
            backlog_batch_rows: DEFAULT_BACKLOG_BATCH_ROWS,
            linger: DEFAULT_LINGER,
            cooldown: RECOVERY_COOLDOWN,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            drop_log_interval: DEFAULT_DROP_LOG_INTERVAL,
            wal_autocheckpoint_pages: DEFAULT_WAL_AUTOCHECKPOINT_PAGES,
            cache_kib: DEFAULT_CACHE_KIB,
        }
    }

    /// With this schema mode.
    pub fn with_schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = mode;
        self
    }

    /// With this queue capacity (rows).
    pub fn with_queue_capacity(mut self, rows: usize) -> Self {
        self.queue_capacity = rows;
        self
    }

    /// With this many rows per transaction (raised to 1).
    pub fn with_batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows.max(1);
        self
    }

    /// With this many rows per transaction while the writer is behind (see
    /// [`SqliteRecorderConfig::backlog_batch_rows`]).
    pub fn with_backlog_batch_rows(mut self, rows: usize) -> Self {
        self.backlog_batch_rows = rows;
        self
    }

    /// With this writer linger (zero = write at once; longer than 50 ms is allowed but leaves
    /// 80 T-50's batching bound).
    pub fn with_linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// With this degraded cooldown.
    pub fn with_cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// With this close bound.
    pub fn with_close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// With this WAL auto-checkpoint threshold (pages).
    pub fn with_wal_autocheckpoint_pages(mut self, pages: u32) -> Self {
        self.wal_autocheckpoint_pages = pages;
        self
    }

    /// With this writer page cache in KiB (raised to 1).
    pub fn with_cache_kib(mut self, kib: u32) -> Self {
        self.cache_kib = kib.max(1);
        self
    }

    /// With this dropped-row log interval.
    pub fn with_drop_log_interval(mut self, interval: Duration) -> Self {
        self.drop_log_interval = interval;
        self
    }
}

#[derive(Debug, Default, Clone)]
pub(crate) struct Health {
    pub(crate) degraded: bool,
    pub(crate) fatal: bool,
    pub(crate) reason: Option<String>,
    pub(crate) degraded_since: Option<SystemTime>,
    pub(crate) retry_at: Option<SystemTime>,
    pub(crate) missing_columns: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) dropped: AtomicU64,
    pub(crate) written: AtomicU64,
    /// Transactions committed (diagnostics, [`SqliteRecorder::committed_transactions`]).
    pub(crate) transactions: AtomicU64,
    /// Set when `close()` timed out: the writer drops what is left instead of writing it.
    pub(crate) abort: AtomicBool,
    health: Mutex<Health>,
    drop_log: DropLog,
}

impl Shared {
    fn new(drop_log_interval: Duration) -> Self {
        Self {
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            transactions: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            health: Mutex::default(),
            drop_log: DropLog::new(drop_log_interval),
        }
    }

    /// Counts `rows` dropped rows and logs them per the drop-log interval.
    pub(crate) fn count_dropped(&self, rows: u64, why: &'static str) {
        if rows == 0 {
            return;
        }
        let total = self.dropped.fetch_add(rows, Ordering::Relaxed) + rows;
        if let Some(report) = self.drop_log.on_drop(Instant::now(), rows, why) {
            droplog::log(report, total);
        }
    }

    /// The writer's pass: logs the rows of an ended interval (`finish`: all that is left).
    pub(crate) fn report_drops(&self, finish: bool) {
        let now = Instant::now();
        let report = if finish {
            self.drop_log.finish(now)
        } else {
            self.drop_log.tick(now)
        };
        if let Some(report) = report {
            droplog::log(report, self.dropped.load(Ordering::Relaxed));
        }
    }

    /// How long the idle writer may sleep before it must log pending drops (`None`: forever).
    pub(crate) fn drop_log_wake(&self) -> Option<Duration> {
        self.drop_log.pending().then(|| self.drop_log.interval())
    }

    pub(crate) fn health(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The SQLite telemetry recorder. Cheap `record` (a push onto the
/// writer's queue), background writer thread, never fails the caller.
pub struct SqliteRecorder {
    queue: Arc<Queue>,
    shared: Arc<Shared>,
    closed: AtomicBool,
    close_timeout: Duration,
}

impl fmt::Debug for SqliteRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteRecorder")
            .field("queued", &self.queue.len())
            .field("shared", &self.shared)
            .field("closed", &self.closed)
            .field("close_timeout", &self.close_timeout)
            .finish()
    }
}

impl SqliteRecorder {
    /// Starts the writer thread for `config`. Never fails: the file is opened lazily by the
    /// writer, and a thread that cannot be started makes the recorder `fatal` (every row
    /// dropped and counted). Log lines of the writer go to the `tracing` dispatcher current
    /// here.
    pub fn new(config: SqliteRecorderConfig) -> Self {
        let queue = Arc::new(Queue::new(
            config.queue_capacity,
            config.batch_rows,
            config.backlog_batch_rows,
        ));
        let shared = Arc::new(Shared::new(config.drop_log_interval));
        let close_timeout = config.close_timeout;
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let thread_shared = Arc::clone(&shared);
        let thread_queue = Arc::clone(&queue);
        let spawned = std::thread::Builder::new()
            .name("pgw-telemetry-sqlite".to_owned())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    writer::run(config, thread_shared, &thread_queue);
                });
            });
        if let Err(e) = spawned {
            queue.stop();
            let mut health = shared.health();
            health.fatal = true;
            health.reason = Some(format!("cannot start the SQLite writer thread: {e}"));
        }
        Self {
            queue,
            shared,
            closed: AtomicBool::new(false),
            close_timeout,
        }
    }

    /// A recorder for `path` with the default settings.
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self::new(SqliteRecorderConfig::new(path))
    }

    /// Transactions the writer has committed so far (diagnostics: rows per transaction =
    /// `written_rows / committed_transactions`).
    pub fn committed_transactions(&self) -> u64 {
        self.shared.transactions.load(Ordering::Relaxed)
    }

    /// Rows queued for the writer now (diagnostics).
    pub fn queued_rows(&self) -> usize {
        self.queue.len()
    }

    /// The one hand-off of `record`: queue the row, or drop and count it (closed recorder,
    /// full queue, stopped writer) and say so.
    fn enqueue(&self, row: Box<TelemetryRow>) -> Result<(), RecordError> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(self.count_drop("recorder closed"));
        }
        match self.queue.push_row(row) {
            Ok(()) => Ok(()),
            Err(Refused::Full) => Err(self.count_drop("queue full")),
            Err(Refused::Stopped) => Err(self.count_drop("writer stopped")),
        }
    }

    fn count_drop(&self, why: &'static str) -> RecordError {
        self.shared.count_dropped(1, why);
        RecordError::new(RecordErrorKind::Dropped, why)
    }
}

#[async_trait]
impl TelemetryRecorder for SqliteRecorder {
    /// Enqueues the row and returns at once. A full queue, a closed
    /// recorder or a stopped writer drops the row, counts it in `dropped_rows` and returns
    /// `Err(RecordError dropped)`.
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        self.enqueue(Box::new(row))
    }

    /// Resolves when every row enqueued before it has been written or dropped (05 R-24,
    /// 80 T-51); it ends the writer's linger at once and never waits for queue room. Also runs
    /// the lazy preparation on a fresh recorder; it never ends a cooldown.
    async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.queue.push_control(Msg::Flush(ack)) {
            let _ = done.await;
        }
    }

    /// Flushes within `close_timeout` (default 5 s) and stops the writer; rows left over are
    /// counted as dropped; later rows are dropped and counted. Idempotent.
    async fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let (ack, done) = oneshot::channel();
        let closing = async {
            if self.queue.push_control(Msg::Close(ack)) {
                let _ = done.await;
            }
        };
        if tokio::time::timeout(self.close_timeout, closing)
            .await
            .is_err()
        {
            self.shared.abort.store(true, Ordering::Relaxed);
            tracing::warn!(
                code = "telemetry.close_timeout",
                "SQLite telemetry close(): not flushed within {:?}; the remaining rows are dropped",
                self.close_timeout
            );
        }
    }
}

impl TelemetryStatusProvider for SqliteRecorder {
    /// Snapshot: never blocks on the writer, never fails.
    fn status(&self) -> TelemetryStatus {
        let health = self.shared.health().clone();
        let mut status = TelemetryStatus::for_backend("sqlite");
        status.degraded = health.degraded;
        status.fatal = health.fatal;
        status.reason = health.reason;
        status.degraded_since = health.degraded_since;
        status.retry_at = health.retry_at;
        status.missing_columns = health.missing_columns;
        status.dropped_rows = self.shared.dropped.load(Ordering::Relaxed);
        status.written_rows = self.shared.written.load(Ordering::Relaxed);
        status
    }
}

impl Drop for SqliteRecorder {
    /// Lets the writer drain what is queued and exit (what dropping the last sender of a
    /// channel did).
    fn drop(&mut self) {
        self.queue.disconnect();
    }
}
