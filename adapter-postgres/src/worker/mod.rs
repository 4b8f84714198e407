//! The recorder's worker: one thread, one current-thread tokio runtime,
//! the pool, the preparation, the batch writes and the state machine. Nothing here is visible
//! to the caller except through `Shared` (counters and health).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use gateway_ports::{Clock, TelemetryRow};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::dsn::{ParsedDsn, tls_connector};
use crate::schema::TABLE;
use crate::{Control, PostgresRecorderConfig, SchemaMode, Shared};

mod failure;
mod sql;

use sql::{prepare, write_batch};

/// The exact reason of a missing table in `manual` mode.
pub(crate) const TABLE_MISSING: &str = "table llm_calls missing; see telemetry_schema_sql";

/// The INSERT in use: its text and the INSERT column positions it binds, in order.
#[derive(Debug)]
struct Plan {
    sql: String,
    indexes: Vec<usize>,
}

enum State {
    /// Not prepared yet (fresh recorder).
    Unprepared,
    Healthy(Arc<Plan>),
    /// Until this monotonic reading of the injected clock no traffic is sent.
    Degraded {
        until: Duration,
    },
}

struct Worker {
    pool: Pool,
    state: State,
    mode: SchemaMode,
    budget: Duration,
    pool_max: usize,
    batch_rows: usize,
    cooldown: Duration,
    idle_timeout: Duration,
    clock: Arc<dyn Clock>,
    shared: Arc<Shared>,
    inflight: JoinSet<Option<String>>,
}

/// Runs the worker until `close()` or until the recorder is dropped. Never panics on a
/// database failure; a runtime that cannot be built makes the recorder fatal.
pub(crate) fn run(
    config: PostgresRecorderConfig,
    dsn: ParsedDsn,
    shared: Arc<Shared>,
    mut rows: mpsc::Receiver<TelemetryRow>,
    control: mpsc::UnboundedReceiver<Control>,
) {
    let fail = |shared: &Arc<Shared>, rows: &mut mpsc::Receiver<TelemetryRow>, reason: String| {
        tracing::error!(
            code = "telemetry.fatal",
            "Postgres telemetry disabled: {reason}"
        );
        {
            let mut h = shared.health();
            h.fatal = true;
            h.reason = Some(reason);
        }
        drain_dropped(shared, rows);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return fail(
                &shared,
                &mut rows,
                format!("cannot start the Postgres telemetry runtime: {e}"),
            );
        }
    };
    let pool = match tls_connector().map_err(|e| e.0).and_then(|tls| {
        let manager = Manager::from_config(
            dsn.driver_config(config.write_timeout),
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(config.pool_max.max(1))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| format!("cannot build the Postgres connection pool: {e}"))
    }) {
        Ok(pool) => pool,
        Err(reason) => return fail(&shared, &mut rows, reason),
    };
    let worker = Worker {
        pool,
        state: State::Unprepared,
        mode: config.schema_mode,
        budget: config.write_timeout,
        pool_max: config.pool_max.max(1),
        batch_rows: config.batch_rows.max(1),
        cooldown: config.cooldown,
        idle_timeout: config.idle_timeout,
        clock: config.clock,
        shared,
        inflight: JoinSet::new(),
    };
    runtime.block_on(worker.run(rows, control));
}

/// Counts every row still queued as dropped and closes the queue.
fn drain_dropped(shared: &Shared, rows: &mut mpsc::Receiver<TelemetryRow>) {
    rows.close();
    let mut n = 0;
    while rows.try_recv().is_ok() {
        n += 1;
    }
    shared.count_dropped(n, "recorder closed");
}

impl Worker {
    async fn run(
        mut self,
        mut rows: mpsc::Receiver<TelemetryRow>,
        mut control: mpsc::UnboundedReceiver<Control>,
    ) {
        let mut rows_open = true;
        // One persistent timer: a steady trickle of rows must not keep postponing the reap of
        // the connections it does not use.
        let mut reap = tokio::time::interval(
            (self.idle_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)),
        );
        reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let connections = self.pool.status().size;
            self.shared
                .open_connections
                .store(connections as u64, Ordering::Relaxed);
            let can_take = rows_open && self.inflight.len() < self.pool_max;
            tokio::select! {
                biased;
                ctl = control.recv() => match ctl {
                    Some(Control::Flush(ack)) => {
                        self.write_queued(&mut rows).await;
                        let _ = ack.send(());
                    }
                    Some(Control::Close(ack)) => {
                        self.write_queued(&mut rows).await;
                        self.shutdown(&mut rows);
                        let _ = ack.send(());
                        return;
                    }
                    None => {
                        // The recorder was dropped without close(): write what is queued.
                        self.write_queued(&mut rows).await;
                        self.shutdown(&mut rows);
                        return;
                    }
                },
                Some(done) = self.inflight.join_next(), if !self.inflight.is_empty() => {
                    self.finished(done);
                }
                row = rows.recv(), if can_take => match row {
                    Some(row) => {
                        let mut batch = Vec::with_capacity(self.batch_rows.min(64));
                        batch.push(row);
                        while batch.len() < self.batch_rows {
                            match rows.try_recv() {
                                Ok(row) => batch.push(row),
                                Err(_) => break,
                            }
                        }
                        self.dispatch(batch).await;
                    }
                    None => rows_open = false,
                },
                _ = reap.tick(), if connections > 0 => self.reap(),
            }
        }
    }

    /// Writes (or drops) every row queued now and waits for every write in flight (the
    /// `flush()` barrier).
    async fn write_queued(&mut self, rows: &mut mpsc::Receiver<TelemetryRow>) {
        let mut left = rows.len();
        loop {
            while left > 0 && self.inflight.len() < self.pool_max {
                let take = left.min(self.batch_rows);
                let mut batch = Vec::with_capacity(take);
                while batch.len() < take {
                    match rows.try_recv() {
                        Ok(row) => batch.push(row),
                        Err(_) => break,
                    }
                }
                if batch.is_empty() {
                    left = 0;
                    break;
                }
                left -= batch.len();
                self.dispatch(batch).await;
            }
            match self.inflight.join_next().await {
                Some(done) => self.finished(done),
                None if left == 0 => return,
                None => {}
            }
        }
    }

    fn shutdown(&mut self, rows: &mut mpsc::Receiver<TelemetryRow>) {
        drain_dropped(&self.shared, rows);
        self.pool.close();
        self.shared.open_connections.store(0, Ordering::Relaxed);
    }

    /// Closes connections idle for longer than the idle limit.
    fn reap(&self) {
        let idle = self.idle_timeout;
        let _ = self.pool.retain(|_, metrics| metrics.last_used() < idle);
    }

    fn finished(&mut self, done: Result<Option<String>, tokio::task::JoinError>) {
        match done {
            Ok(Some(reason)) => {
                if matches!(self.state, State::Healthy(_)) {
                    self.degrade(reason);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!(
                code = "telemetry.write_panicked",
                "Postgres telemetry write task ended abnormally: {e}"
            ),
        }
    }

    /// Writes `batch` on a pool connection (spawned; at most `pool_max` at once), or drops
    /// and counts it while degraded or closing.
    async fn dispatch(&mut self, batch: Vec<TelemetryRow>) {
        let n = batch.len() as u64;
        if self.shared.abort.load(Ordering::Relaxed) {
            self.shared.count_dropped(n, "recorder closing");
            return;
        }
        let plan = match &self.state {
            State::Healthy(plan) => Arc::clone(plan),
            State::Degraded { until } if self.clock.monotonic() < *until => {
                self.shared.count_dropped(n, "recorder degraded");
                return;
            }
            State::Degraded { .. } | State::Unprepared => match self.prepare().await {
                Some(plan) => plan,
                None => {
                    self.shared.count_dropped(n, "recorder degraded");
                    return;
                }
            },
        };
        let task = write_batch(
            self.pool.clone(),
            plan,
            batch,
            self.budget,
            Arc::clone(&self.shared),
        );
        self.inflight.spawn(task);
    }

    /// Enters `degraded`: no traffic until the cooldown ends; connections closed.
    fn degrade(&mut self, reason: String) {
        let until = self.clock.monotonic() + self.cooldown;
        let now = self.clock.wall();
        self.state = State::Degraded { until };
        tracing::warn!(
            code = "telemetry.degraded",
            "Postgres telemetry degraded: {reason}; rows are dropped and counted, retrying in {:?}",
            self.cooldown
        );
        {
            let mut h = self.shared.health();
            h.degraded = true;
            h.reason = Some(reason);
            h.degraded_since = Some(now);
            h.retry_at = Some(now + self.cooldown);
        }
        let _ = self.pool.retain(|_, _| false);
    }

    /// Preparation, bounded by the write budget. `None` = degraded now.
    async fn prepare(&mut self) -> Option<Arc<Plan>> {
        let was_degraded = matches!(self.state, State::Degraded { .. });
        let outcome = tokio::time::timeout(self.budget, prepare(&self.pool, self.mode)).await;
        let prepared = match outcome {
            Ok(Ok(prepared)) => prepared,
            Ok(Err(reason)) => {
                self.degrade(reason);
                return None;
            }
            Err(_) => {
                self.degrade(format!(
                    "preparing table {TABLE} did not finish within {:?}",
                    self.budget
                ));
                return None;
            }
        };
        if was_degraded {
            tracing::info!(
                code = "telemetry.recovered",
                "Postgres telemetry recovered; writing rows again"
            );
        }
        {
            let mut h = self.shared.health();
            h.degraded = false;
            h.reason = None;
            h.degraded_since = None;
            h.retry_at = None;
            h.missing_columns = prepared.missing_columns;
        }
        let plan = Arc::new(prepared.plan);
        self.state = State::Healthy(Arc::clone(&plan));
        Some(plan)
    }
}
