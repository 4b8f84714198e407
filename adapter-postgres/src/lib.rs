//! PolyGateway `TelemetryRecorder` over PostgreSQL (80 §10.3–§10.4; 10 §8.7; README D6).
//!
//! Many processes writing one `llm_calls` table is how a fleet answers "what did we spend,
//! which source failed, how slow was it". This crate owns the Postgres side:
//!
//! - **Hand-off.** [`PostgresRecorder::enqueue`] puts the row on a bounded queue and returns at
//!   once (never awaits I/O; a full queue drops and counts the row). The port's `record` is this
//!   hand-off.
//! - **Writer.** The recorder's own worker thread (one current-thread tokio runtime, so the
//!   caller's runtime and its paused test clock never matter) takes rows in batches and writes
//!   each batch with one `INSERT … SELECT * FROM unnest($1::text[], …) ON CONFLICT DO NOTHING`
//!   on up to `pool_max` pooled connections at once (`deadpool-postgres`). Every write has a
//!   hard budget covering pool acquisition and execution; past it the batch is
//!   dropped and counted and the state is unchanged.
//! - **Schema**: `auto` creates the table and backfills missing columns;
//!   `manual` (the default on Postgres) sends no DDL, trims the INSERT to the existing columns
//!   and logs one notice with a paste-ready `ALTER TABLE` line per missing column.
//! - **States**: healthy; degraded (cannot connect, authentication or
//!   permission refused, database or table missing: rows dropped and counted, no traffic until
//!   the 60 s cooldown — read through the injected [`Clock`] — ends, then preparation is re-run);
//!   fatal (the DSN cannot be parsed). A row the server rejects drops that row only.
//! - **Connections**: none at construction, none while idle: the worker closes
//!   connections idle for more than 10 s; `close()` ends the worker.
//! - **Secrets**: the DSN never appears in a log line, an error, a status reason or `Debug`.

mod dsn;
pub mod schema;
mod values;
mod worker;

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use gateway_ports::{
    Clock, RecordError, RecordErrorKind, Secret, TelemetryRecorder, TelemetryRow, TelemetryStatus,
    TelemetryStatusProvider,
};
use tokio::sync::{mpsc, oneshot};

pub use dsn::{APPLICATION_NAME, DsnError, ParsedDsn, strip_driver_suffix};

/// Default `PGW_TELEMETRY_PG_POOL_MAX`: 4 connections.
pub const DEFAULT_POOL_MAX: usize = 4;

/// Default `PGW_TELEMETRY_PG_WRITE_TIMEOUT_S`: 5 s per write.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest write budget honoured (a day); longer values are clamped to it.
pub const MAX_WRITE_TIMEOUT: Duration = Duration::from_secs(86_400);

/// Recovery cooldown of a degraded recorder: 60 s.
pub const RECOVERY_COOLDOWN: Duration = Duration::from_secs(60);

/// Connections idle longer than this are closed (chosen): 10 s.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Default queue capacity in rows (as the SQLite recorder).
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;

/// Default most rows per INSERT (chosen; docs/benchmarks.md).
pub const DEFAULT_BATCH_ROWS: usize = 1_000;

/// Default bound of `close()` (chosen): 5 s.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema mode. Unset → [`SchemaMode::Manual`] on Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SchemaMode {
    /// Create the table if missing and add missing columns (`ALTER TABLE … ADD COLUMN`).
    Auto,
    /// Never send DDL: write the columns that exist, warn once naming the missing ones.
    #[default]
    Manual,
}

/// A clock reading the system time; the default when none is injected.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: tokio::time::Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// Settings of one Postgres recorder. `Debug` never shows the DSN.
#[derive(Clone)]
#[non_exhaustive]
pub struct PostgresRecorderConfig {
    /// `PGW_TELEMETRY_PG_DSN` (`postgres://…`, `postgresql://…`, a `+driver` variant, or
    /// libpq `key=value`). A DSN that cannot be parsed makes the recorder `fatal`.
    pub dsn: Secret<String>,
    /// `PGW_TELEMETRY_PG_POOL_MAX`: connections and concurrent writes (≥ 1, default 4).
    pub pool_max: usize,
    /// `PGW_TELEMETRY_PG_WRITE_TIMEOUT_S`: hard budget of one write, pool acquisition included
    /// (default 5 s). Also the server `statement_timeout` and the connect timeout.
    pub write_timeout: Duration,
    /// `PGW_TELEMETRY_SCHEMA_MODE` (unset → `manual`).
    pub schema_mode: SchemaMode,
    /// Rows the queue holds before `record` drops (≥ 1).
    pub queue_capacity: usize,
    /// Most rows per INSERT (≥ 1).
    pub batch_rows: usize,
    /// Degraded cooldown before preparation is retried (60 s).
    pub cooldown: Duration,
    /// Idle connections older than this are closed (10 s).
    pub idle_timeout: Duration,
    /// Bound of `close()` (5 s).
    pub close_timeout: Duration,
    /// Where the cooldown is read (10 §8.0 rule 4); [`SystemClock`] by default.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for PostgresRecorderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRecorderConfig")
            .field("dsn", &"<redacted>")
            .field("pool_max", &self.pool_max)
            .field("write_timeout", &self.write_timeout)
            .field("schema_mode", &self.schema_mode)
            .field("queue_capacity", &self.queue_capacity)
            .field("batch_rows", &self.batch_rows)
            .field("cooldown", &self.cooldown)
            .field("idle_timeout", &self.idle_timeout)
            .field("close_timeout", &self.close_timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresRecorderConfig {
    /// Defaults for `dsn`: pool 4, 5 s budget, `manual`, 10 000 queued rows, 1 000 rows per
    /// INSERT, 60 s cooldown, 10 s idle limit, 5 s close bound, system clock.
    pub fn new(dsn: impl Into<Secret<String>>) -> Self {
        Self {
            dsn: dsn.into(),
            pool_max: DEFAULT_POOL_MAX,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            schema_mode: SchemaMode::Manual,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            batch_rows: DEFAULT_BATCH_ROWS,
            cooldown: RECOVERY_COOLDOWN,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            clock: Arc::new(SystemClock::default()),
        }
    }

    /// With this pool size (raised to 1).
    pub fn with_pool_max(mut self, n: usize) -> Self {
        self.pool_max = n.max(1);
        self
    }

    /// With this write budget (kept within 1 ms ..= [`MAX_WRITE_TIMEOUT`]).
    pub fn with_write_timeout(mut self, budget: Duration) -> Self {
        self.write_timeout = budget.clamp(Duration::from_millis(1), MAX_WRITE_TIMEOUT);
        self
    }

    /// With this schema mode.
    pub fn with_schema_mode(mut self, mode: SchemaMode) -> Self {
        self.schema_mode = mode;
        self
    }

    /// With this queue capacity (raised to 1).
    pub fn with_queue_capacity(mut self, rows: usize) -> Self {
        self.queue_capacity = rows.max(1);
        self
    }

    /// With this many rows per INSERT at most (raised to 1).
    pub fn with_batch_rows(mut self, rows: usize) -> Self {
        self.batch_rows = rows.max(1);
        self
    }

    /// With this degraded cooldown.
    pub fn with_cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// With this idle-connection limit.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// With this close bound.
    pub fn with_close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// With this clock (the cooldown and the status times are read through it).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
}

pub(crate) enum Control {
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
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

#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) dropped: AtomicU64,
    pub(crate) written: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) open_connections: AtomicU64,
    /// Set when `close()` timed out: the worker drops what is left.
    pub(crate) abort: AtomicBool,
    health: Mutex<Health>,
}

impl Shared {
    pub(crate) fn health(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn count_dropped(&self, n: u64, why: &str) {
        if n == 0 {
            return;
        }
        let before = self.dropped.fetch_add(n, Ordering::Relaxed);
        let after = before + n;
        // One line per power of two crossed: an outage does not flood the log.
        if (before + 1).next_power_of_two() <= after {
            tracing::warn!(
                code = "telemetry.row_dropped",
                dropped_rows = after,
                "Postgres telemetry row(s) dropped ({why}); the call was not affected"
            );
        }
    }
}

/// The Postgres telemetry recorder. `record` is a push onto a bounded queue; the
/// recorder's worker thread writes; nothing here fails or slows the caller.
pub struct PostgresRecorder {
    rows: Option<mpsc::Sender<TelemetryRow>>,
    control: Option<mpsc::UnboundedSender<Control>>,
    shared: Arc<Shared>,
    closed: AtomicBool,
    close_timeout: Duration,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl fmt::Debug for PostgresRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresRecorder")
            .field("shared", &self.shared)
            .field("closed", &self.closed)
            .field("close_timeout", &self.close_timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresRecorder {
    /// Starts the recorder for `config`. Never fails and opens no connection: a DSN that
    /// cannot be parsed makes the recorder `fatal` (every row dropped and counted, the reason in
    /// `status()`); the first connection is opened by the first write.
    pub fn new(config: PostgresRecorderConfig) -> Self {
        let shared = Arc::new(Shared::default());
        let close_timeout = config.close_timeout;
        let fatal = |shared: &Arc<Shared>, reason: String| {
            tracing::error!(
                code = "telemetry.fatal",
                "Postgres telemetry disabled: {reason}"
            );
            let mut h = shared.health();
            h.fatal = true;
            h.reason = Some(reason);
        };
        let dsn = match ParsedDsn::parse(config.dsn.expose_secret()) {
            Ok(dsn) => dsn,
            Err(e) => {
                fatal(&shared, e.0);
                return Self::inert(shared, close_timeout);
            }
        };
        let (rows_tx, rows_rx) = mpsc::channel(config.queue_capacity.max(1));
        let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let thread_shared = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("pgw-telemetry-pg".to_owned())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    worker::run(config, dsn, thread_shared, rows_rx, ctl_rx);
                });
            });
        match spawned {
            Ok(handle) => Self {
                rows: Some(rows_tx),
                control: Some(ctl_tx),
                shared,
                closed: AtomicBool::new(false),
                close_timeout,
                worker: Mutex::new(Some(handle)),
            },
            Err(e) => {
                fatal(
                    &shared,
                    format!("cannot start the Postgres telemetry worker thread: {e}"),
                );
                Self::inert(shared, close_timeout)
            }
        }
    }

    /// A recorder for `dsn` with the default settings.
    pub fn open(dsn: impl Into<Secret<String>>) -> Self {
        Self::new(PostgresRecorderConfig::new(dsn))
    }

    fn inert(shared: Arc<Shared>, close_timeout: Duration) -> Self {
        Self {
            rows: None,
            control: None,
            shared,
            closed: AtomicBool::new(false),
            close_timeout,
            worker: Mutex::new(None),
        }
    }

    /// The one hand-off: queues the row and returns at once, never awaiting I/O.
    /// `Err` means the row was not accepted (recorder closed or fatal, queue full, worker
    /// stopped); it is already counted in `dropped_rows`.
    pub fn enqueue(&self, row: TelemetryRow) -> Result<(), RecordError> {
        let refused = |why: &'static str, kind| {
            self.shared.count_dropped(1, why);
            Err(RecordError::new(
                kind,
                format!("Postgres telemetry row dropped: {why}"),
            ))
        };
        if self.closed.load(Ordering::Relaxed) {
            return refused("recorder closed", RecordErrorKind::Dropped);
        }
        let Some(tx) = &self.rows else {
            return refused("recorder disabled", RecordErrorKind::Unavailable);
        };
        match tx.try_send(row) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                refused("queue full", RecordErrorKind::Dropped)
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                refused("worker stopped", RecordErrorKind::Unavailable)
            }
        }
    }

    /// INSERT statements executed so far (diagnostics: rows per INSERT =
    /// `written_rows / executed_batches`).
    pub fn executed_batches(&self) -> u64 {
        self.shared.batches.load(Ordering::Relaxed)
    }

    /// Rows waiting in the queue now (diagnostics; 0 for a fatal recorder).
    pub fn queued_rows(&self) -> usize {
        self.rows
            .as_ref()
            .map_or(0, |tx| tx.max_capacity() - tx.capacity())
    }

    /// Connections the pool holds now (diagnostics, 80 T-53: 0 while idle).
    pub fn open_connections(&self) -> u64 {
        self.shared.open_connections.load(Ordering::Relaxed)
    }

    /// Resolves when every row queued before it has been written or dropped. Also
    /// runs the lazy preparation on a fresh recorder; it never ends a cooldown.
    pub async fn flush_rows(&self) {
        let Some(ctl) = &self.control else { return };
        let (ack, done) = oneshot::channel();
        if ctl.send(Control::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }

    /// Flushes within `close_timeout` and stops the worker (closing every connection); rows
    /// left over, and rows recorded later, are dropped and counted. Idempotent.
    pub async fn close_recorder(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(ctl) = &self.control else { return };
        let (ack, done) = oneshot::channel();
        if ctl.send(Control::Close(ack)).is_err() {
            return;
        }
        if tokio::time::timeout(self.close_timeout, done)
            .await
            .is_err()
        {
            self.shared.abort.store(true, Ordering::Relaxed);
            tracing::warn!(
                code = "telemetry.close_timeout",
                "Postgres telemetry close(): not flushed within {:?}; the remaining rows are dropped",
                self.close_timeout
            );
            return;
        }
        let handle = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            // The worker has acknowledged and is returning; joining takes microseconds.
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}

#[async_trait]
impl TelemetryRecorder for PostgresRecorder {
    /// [`PostgresRecorder::enqueue`]: returns at once, never awaits. A refused
    /// row (queue full, recorder closed) is already counted in `dropped_rows` by the recorder.
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        self.enqueue(row)
    }

    async fn flush(&self) {
        self.flush_rows().await;
    }

    async fn close(&self) {
        self.close_recorder().await;
    }
}

impl TelemetryStatusProvider for PostgresRecorder {
    /// Snapshot: never blocks on the worker, never fails.
    fn status(&self) -> TelemetryStatus {
        let health = self.shared.health().clone();
        let mut status = TelemetryStatus::for_backend("postgres");
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
