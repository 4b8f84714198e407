//! The recorder's worker: one thread, one current-thread tokio runtime,
//! the pool, the preparation, the batch writes and the state machine. Nothing here is visible
//! to the caller except through `Shared` (counters and health).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use gateway_ports::{Clock, TelemetryRow};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::dsn::{ParsedDsn, tls_connector};
use crate::schema::{
    REQUIRED_COLUMNS, TABLE, backfill_statement, batch_insert_sql, column, create_table_sql,
    manual_mode_warning,
};
use crate::values::bind;
use crate::{Control, PostgresRecorderConfig, SchemaMode, Shared};

/// The exact reason of a missing table in `manual` mode.
pub(crate) const TABLE_MISSING: &str = "table llm_calls missing; see telemetry_schema_sql";

/// What a failed statement means for the recorder.
#[derive(Debug)]
enum Failure {
    /// Cannot connect, authentication or permission refused, database or table missing:
    /// degrade.
    Availability(String),
    /// The server cancelled the statement (`statement_timeout`): drop the batch, state kept.
    Timeout(String),
    /// The server rejected a value: retry row by row, drop only the rejected rows.
    Row(String),
}

fn classify(e: &tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let text = format!("{} (SQLSTATE {code})", db.message());
        let availability = ["08", "28", "3D", "3F", "53", "57P", "0A"]
            .iter()
            .any(|class| code.starts_with(class))
            || code == "42P01"
            || code == "42501";
        return if code == "57014" {
            Failure::Timeout(text)
        } else if availability {
            Failure::Availability(text)
        } else {
            Failure::Row(text)
        };
    }
    let text = e.to_string();
    if text.starts_with("error serializing") {
        Failure::Row(text)
    } else {
        Failure::Availability(format!("cannot reach the Postgres server: {text}"))
    }
}

fn pool_failure(e: &PoolError) -> Failure {
    match e {
        PoolError::Backend(e) => classify(e),
        PoolError::Timeout(_) => Failure::Timeout("timed out waiting for a connection".into()),
        other => Failure::Availability(format!("connection pool unavailable: {other}")),
    }
}

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

struct Prepared {
    plan: Plan,
    missing_columns: Vec<String>,
}

/// steps 1–5. `Err` = a secret-free degradation reason.
async fn prepare(pool: &Pool, mode: SchemaMode) -> Result<Prepared, String> {
    let client = pool.get().await.map_err(|e| match pool_failure(&e) {
        Failure::Availability(r) | Failure::Timeout(r) | Failure::Row(r) => r,
    })?;
    let reason = |what: &str, e: &tokio_postgres::Error| match classify(e) {
        Failure::Availability(r) | Failure::Timeout(r) | Failure::Row(r) => format!("{what}: {r}"),
    };
    if mode == SchemaMode::Auto
        && let Err(e) = client.batch_execute(&create_table_sql()).await
    {
        // Two processes creating the table at once: the loser sees 42P07 or 23505.
        let raced = e
            .code()
            .is_some_and(|c| c.code() == "42P07" || c.code() == "23505");
        if !raced {
            return Err(reason("cannot create table llm_calls", &e));
        }
    }
    let existing: HashSet<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&TABLE],
        )
        .await
        .map_err(|e| reason("cannot read the columns of llm_calls", &e))?
        .iter()
        .filter_map(|row| row.try_get::<_, String>(0).ok())
        .collect();
    if existing.is_empty() {
        return Err(TABLE_MISSING.to_owned());
    }
    let columns = &gateway_ports::TelemetryRow::COLUMNS;
    let lacking: Vec<&str> = columns[..REQUIRED_COLUMNS]
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    if !lacking.is_empty() {
        return Err(format!(
            "table llm_calls is incompatible: it lacks the required column(s) {}; see \
             telemetry_schema_sql",
            lacking.join(", ")
        ));
    }
    let missing: Vec<&str> = columns[REQUIRED_COLUMNS..]
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    let mut indexes: Vec<usize> = (0..columns.len()).collect();
    let mut missing_columns = Vec::new();
    match mode {
        SchemaMode::Auto => {
            let mut warned = false;
            for def in missing.iter().filter_map(|m| column(m)) {
                if let Err(e) = client.batch_execute(&backfill_statement(def)).await {
                    let exists = e.code().is_some_and(|c| c.code() == "42701");
                    if !exists && !warned {
                        warned = true;
                        tracing::warn!(
                            code = "telemetry.backfill_failed",
                            column = def.name,
                            error = %reason("ALTER TABLE failed", &e),
                            "Postgres telemetry backfill failed (writes will degrade row by row)"
                        );
                    }
                }
            }
        }
        SchemaMode::Manual => {
            if !missing.is_empty() {
                tracing::warn!(
                    code = "telemetry.schema_manual",
                    "{}",
                    manual_mode_warning(&missing)
                );
                indexes.retain(|&i| existing.contains(columns[i]));
                missing_columns = missing.iter().map(|s| (*s).to_owned()).collect();
            }
        }
    }
    Ok(Prepared {
        plan: Plan {
            sql: batch_insert_sql(&indexes),
            indexes,
        },
        missing_columns,
    })
}

async fn insert(
    client: &Object,
    plan: &Plan,
    rows: &[TelemetryRow],
) -> Result<(), tokio_postgres::Error> {
    let statement = client.prepare_cached(&plan.sql).await?;
    let columns = bind(rows, &plan.indexes);
    let params: Vec<_> = columns.iter().map(|c| c.as_param()).collect();
    client.execute(&statement, &params).await.map(drop)
}

/// One batch under one budget: pool acquisition and execution. Returns the
/// availability reason that should degrade the recorder, if any. Counts every row as
/// written or dropped.
async fn write_batch(
    pool: Pool,
    plan: Arc<Plan>,
    rows: Vec<TelemetryRow>,
    budget: Duration,
    shared: Arc<Shared>,
) -> Option<String> {
    let deadline = Instant::now() + budget;
    let n = rows.len() as u64;
    let client = match tokio::time::timeout_at(deadline, pool.get()).await {
        Ok(Ok(client)) => client,
        Err(_) => {
            shared.count_dropped(n, "write budget exceeded waiting for a connection");
            return None;
        }
        Ok(Err(e)) => {
            shared.count_dropped(n, "no connection");
            return match pool_failure(&e) {
                Failure::Availability(r) => Some(r),
                Failure::Timeout(_) | Failure::Row(_) => None,
            };
        }
    };
    match tokio::time::timeout_at(deadline, insert(&client, &plan, &rows)).await {
        Ok(Ok(())) => {
            shared.written.fetch_add(n, Ordering::Relaxed);
            shared.batches.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(_) => {
            // The statement may still run: this connection is not reused.
            drop(Object::take(client));
            shared.count_dropped(n, "write budget exceeded");
            None
        }
        Ok(Err(e)) => match classify(&e) {
            Failure::Availability(r) => {
                shared.count_dropped(n, "server unavailable");
                Some(r)
            }
            Failure::Timeout(r) => {
                tracing::warn!(
                    code = "telemetry.write_timeout",
                    "Postgres telemetry write cancelled: {r}"
                );
                shared.count_dropped(n, "statement timeout");
                None
            }
            Failure::Row(r) if rows.len() == 1 => {
                tracing::warn!(
                    code = "telemetry.row_rejected",
                    "Postgres telemetry row rejected: {r}"
                );
                shared.count_dropped(1, "row rejected");
                None
            }
            Failure::Row(_) => rows_one_by_one(client, &plan, &rows, deadline, &shared).await,
        },
    }
}

/// After a batch was rejected for a value: each row alone, so only the rejected rows drop,
/// all within the batch's remaining budget.
async fn rows_one_by_one(
    client: Object,
    plan: &Plan,
    rows: &[TelemetryRow],
    deadline: Instant,
    shared: &Shared,
) -> Option<String> {
    for (i, row) in rows.iter().enumerate() {
        let left = (rows.len() - i) as u64;
        match tokio::time::timeout_at(deadline, insert(&client, plan, std::slice::from_ref(row)))
            .await
        {
            Ok(Ok(())) => {
                shared.written.fetch_add(1, Ordering::Relaxed);
                shared.batches.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(e)) => match classify(&e) {
                Failure::Row(r) => {
                    tracing::warn!(
                        code = "telemetry.row_rejected",
                        "Postgres telemetry row rejected: {r}"
                    );
                    shared.count_dropped(1, "row rejected");
                }
                Failure::Timeout(_) => {
                    shared.count_dropped(left, "statement timeout");
                    return None;
                }
                Failure::Availability(r) => {
                    shared.count_dropped(left, "server unavailable");
                    return Some(r);
                }
            },
            Err(_) => {
                drop(Object::take(client));
                shared.count_dropped(left, "write budget exceeded");
                return None;
            }
        }
    }
    None
}
