//! Telemetry: the emitter, row shaping, cost, the pricing file and the `llm_calls` schema
//! (80; 05 ).
//!
//! Owns the one exit of telemetry (80 T-1): [`TelemetryEmitter`] implements the core's
//! [`RowSink`] — the retry loop, the hedge orchestrator and the cleanup worker hand it row
//! *facts*, it shapes them into the 39-field `TelemetryRow` ([`shape`]) and hands each row to
//! the configured `TelemetryRecorder`: straight through the recorder's synchronous
//! `record_now` when it offers one (the SQLite recorder does: its `record` is only a push onto
//! its writer's queue anyway), otherwise through a bounded queue drained by an [`EmitterWorker`].
//!
//! Why a queue: telemetry never changes a call's outcome or latency beyond shaping the row
//! (80 T-39; issue "telemetry": "never blocks the call path"). Building a row is synchronous
//! and infallible; handing it off is a `try_send` (or the recorder's `record_now`, which never
//! waits either; issue 9 follow-up: it saves the wake of the worker task on every row). Which
//! path an emitter uses is decided once, at construction, so emit order is one order. A full
//! queue drops the row and counts it in `dropped_rows`; a recorder error is logged once per row
//! as a warning and counted; neither is ever returned to the caller. The recorder's own degradation (open, preparation, availability
//! failures, cooldown and recovery, 80 T-56/T-57) shows through [`TelemetryEmitter::status`],
//! which adds the emitter's own drops to the recorder's snapshot.
//!
//! The core has no runtime of its own (no `tokio::spawn`): the facade spawns
//! [`EmitterWorker::run`], exactly like the cleanup worker.

#[cfg(feature = "testing")]
mod facts;
mod json;
pub mod pricing;
pub mod schema;
pub mod shape;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use gateway_ports::{
    ConfigError, PricingTable, RecordError, TelemetryRecorder, TelemetryRow, TelemetryStatus,
    TelemetryStatusProvider,
};
use tokio::sync::{mpsc, oneshot};

pub use pricing::{load_pricing, load_pricing_with_warnings, parse_pricing};
pub use schema::{
    SchemaMode, SqlBackend, create_table_sql, insert_sql, manual_mode_warning, telemetry_schema_sql,
};
pub use shape::{RowInput, RowShaper, RowSubject};

use crate::rows::{AttemptRowFacts, CacheHitRowFacts, RowSink, TerminalRowFacts};

/// Default capacity of the emitter's hand-off queue, in rows (chosen, as the SQLite recorder's
/// 10 000 of 80 T-50).
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;

/// Emitter settings (20 §8.3–§8.4).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmitterConfig {
    /// The price table (`PGW_PRICING_PATH`, see [`load_pricing`]); `None` → every cost NULL
    /// except cache-hit rows (`0.0`).
    pub pricing: Option<PricingTable>,
    /// `PGW_TELEMETRY_TEXT_CAP` in characters; `None` = no truncation; `Some(0)` is refused.
    pub text_cap: Option<usize>,
    /// `PGW_REDACT_IPS` (default `true`): scrub IP addresses from `error_body`.
    pub redact_ips: bool,
    /// Rows the hand-off queue holds before it drops (≥ 1; default 10 000).
    pub queue_capacity: usize,
    /// Hand rows straight to the recorder's `record_now` when it offers one (default `true`,
    /// chosen; issue 9 follow-up). `false` always uses the queue and the worker.
    pub direct_handoff: bool,
}

impl Default for EmitterConfig {
    fn default() -> Self {
        Self {
            pricing: None,
            text_cap: None,
            redact_ips: true,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            direct_handoff: true,
        }
    }
}

impl EmitterConfig {
    /// The config with this price table.
    pub fn with_pricing(mut self, pricing: Option<PricingTable>) -> Self {
        self.pricing = pricing;
        self
    }

    /// The config with this text cap (characters).
    pub fn with_text_cap(mut self, text_cap: Option<usize>) -> Self {
        self.text_cap = text_cap;
        self
    }

    /// The config with this queue capacity (rows).
    pub fn with_queue_capacity(mut self, queue_capacity: usize) -> Self {
        self.queue_capacity = queue_capacity;
        self
    }

    /// The config with this `PGW_REDACT_IPS` value.
    pub fn with_redact_ips(mut self, redact_ips: bool) -> Self {
        self.redact_ips = redact_ips;
        self
    }

    /// The config with the direct hand-off to `record_now` allowed (`true`, the default) or
    /// not.
    pub fn with_direct_handoff(mut self, direct_handoff: bool) -> Self {
        self.direct_handoff = direct_handoff;
        self
    }
}

enum Job {
    Row(Box<TelemetryRow>),
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

#[derive(Debug, Default)]
struct Counters {
    /// Rows the emitter accepted but never got written: queue full, worker gone, recorder `Err`.
    dropped: AtomicU64,
    /// Set by [`TelemetryEmitter::close`]: direct hand-offs stop (the queue path stops when
    /// the worker closes its queue).
    closed: AtomicBool,
}

/// The telemetry emitter (80 T-1..T-6; 05 R-3): the core's [`RowSink`] that shapes row facts
/// into `TelemetryRow`s and hands them to a recorder without blocking the call path.
///
/// Also a [`TelemetryStatusProvider`]: the recorder's snapshot with the emitter's own drops
/// added to `dropped_rows` (80 T-58).
#[derive(Clone)]
pub struct TelemetryEmitter {
    shaper: RowShaper,
    tx: mpsc::Sender<Job>,
    recorder: Arc<dyn TelemetryRecorder>,
    counters: Arc<Counters>,
    /// Rows go to `recorder.record_now` (decided once, in `new`).
    direct: bool,
}

impl fmt::Debug for TelemetryEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryEmitter")
            .field("shaper", &self.shaper)
            .field("direct", &self.direct)
            .field("queued", &(self.tx.max_capacity() - self.tx.capacity()))
            .field("dropped", &self.counters.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Drains the emitter's queue into the recorder (spawn [`EmitterWorker::run`] once).
pub struct EmitterWorker {
    rx: mpsc::Receiver<Job>,
    recorder: Arc<dyn TelemetryRecorder>,
    counters: Arc<Counters>,
}

impl fmt::Debug for EmitterWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmitterWorker")
            .field("queued", &self.rx.len())
            .finish_non_exhaustive()
    }
}

impl TelemetryEmitter {
    /// An emitter over `recorder` and the worker that feeds it (spawn `worker.run()`; it is
    /// needed for `flush`/`close` even when rows go straight to the recorder). Rows use the
    /// recorder's `record_now` when `config.direct_handoff` and
    /// `recorder.supports_record_now()` (asked once, here), the queue otherwise.
    ///
    /// Errors: `ConfigError telemetry.text_cap` when `config.text_cap == Some(0)` (80 T-4).
    /// A `queue_capacity` of 0 is raised to 1.
    pub fn new(
        recorder: Arc<dyn TelemetryRecorder>,
        config: EmitterConfig,
    ) -> Result<(Self, EmitterWorker), ConfigError> {
        let shaper = RowShaper::new(config.pricing, config.text_cap, config.redact_ips)?;
        let (tx, rx) = mpsc::channel(config.queue_capacity.max(1));
        let counters = Arc::new(Counters::default());
        let direct = config.direct_handoff && recorder.supports_record_now();
        Ok((
            Self {
                shaper,
                tx,
                recorder: Arc::clone(&recorder),
                counters: Arc::clone(&counters),
                direct,
            },
            EmitterWorker {
                rx,
                recorder,
                counters,
            },
        ))
    }

    /// The row shaper (pure; tests and benches build rows with it).
    pub fn shaper(&self) -> &RowShaper {
        &self.shaper
    }

    /// The recorder rows are handed to.
    pub fn recorder(&self) -> &Arc<dyn TelemetryRecorder> {
        &self.recorder
    }

    /// Whether rows go straight to the recorder's `record_now` (fixed at construction).
    pub fn direct_handoff(&self) -> bool {
        self.direct
    }

    /// Hands one row on without waiting (80 T-39, T-50): to the recorder's `record_now`
    /// (direct hand-off) or to the worker's queue. A full queue, a stopped worker or a closed
    /// emitter drops the row, counts it and logs a warning (the 1st, 2nd, 4th, 8th… drop); a
    /// recorder `Err` is one warning and one dropped row, as on the worker.
    pub fn emit(&self, row: TelemetryRow) {
        let row = Box::new(row);
        if self.direct {
            if self.counters.closed.load(Ordering::Acquire) {
                self.count_drop("emitter closed");
                return;
            }
            match self.recorder.record_now(row) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => record_failed(&self.counters, &e),
                // A recorder breaking its `supports_record_now` promise: keep the row.
                Err(row) => self.enqueue(row),
            }
        } else {
            self.enqueue(row);
        }
    }

    fn enqueue(&self, row: Box<TelemetryRow>) {
        if let Err(e) = self.tx.try_send(Job::Row(row)) {
            self.count_drop(match e {
                mpsc::error::TrySendError::Full(_) => "queue full",
                mpsc::error::TrySendError::Closed(_) => "emitter closed",
            });
        }
    }

    fn count_drop(&self, why: &str) {
        let n = self.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                code = "telemetry.row_dropped",
                dropped_rows = n,
                "telemetry row dropped ({why}; degraded, not propagated)"
            );
        }
    }

    /// Resolves when every row emitted before it has been handed to the recorder and the
    /// recorder's own `flush` has resolved (05 R-24; 80 T-51); rows handed over directly are
    /// already with the recorder, so its `flush` covers them. Returns at once if the worker
    /// has stopped. Requires the worker to be running.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// Drains the queue, closes the recorder (bounded by the recorder, CT-TEL-07) and stops the
    /// worker. Idempotent; rows emitted afterwards are dropped and counted.
    pub async fn close(&self) {
        self.counters.closed.store(true, Ordering::Release);
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Close(ack)).await.is_ok() {
            let _ = done.await;
        }
    }

    /// Rows the emitter itself dropped (queue full, worker stopped, recorder errors).
    pub fn dropped_rows(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }
}

impl TelemetryStatusProvider for TelemetryEmitter {
    /// The recorder's snapshot plus the emitter's own drops in `dropped_rows` (80 T-58).
    fn status(&self) -> TelemetryStatus {
        let mut status = self.recorder.status();
        status.dropped_rows = status.dropped_rows.saturating_add(self.dropped_rows());
        status
    }
}

#[async_trait]
impl RowSink for TelemetryEmitter {
    async fn attempt(&self, facts: AttemptRowFacts) {
        self.emit(self.shaper.attempt_row_owned(facts));
    }

    async fn terminal(&self, facts: TerminalRowFacts) {
        self.emit(self.shaper.terminal_row(&facts));
    }

    async fn cache_hit(&self, facts: CacheHitRowFacts) {
        self.emit(self.shaper.cache_hit_row(&facts));
    }

    async fn flush(&self) {
        TelemetryEmitter::flush(self).await;
    }
}

impl EmitterWorker {
    /// Writes queued rows through the recorder in emit order until the emitter is closed or
    /// every emitter handle is dropped. A recorder `Err` is one warning and one dropped row
    /// (80 T-39: "telemetry record failed (degraded, not propagated): …").
    pub async fn run(mut self) {
        while let Some(job) = self.rx.recv().await {
            match job {
                Job::Row(row) => {
                    if let Err(e) = self.recorder.record(*row).await {
                        record_failed(&self.counters, &e);
                    }
                }
                Job::Flush(ack) => {
                    self.recorder.flush().await;
                    let _ = ack.send(());
                }
                Job::Close(ack) => {
                    self.recorder.close().await;
                    self.rx.close();
                    while let Ok(job) = self.rx.try_recv() {
                        match job {
                            Job::Row(_) => {
                                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                            }
                            Job::Flush(a) | Job::Close(a) => {
                                let _ = a.send(());
                            }
                        }
                    }
                    let _ = ack.send(());
                    return;
                }
            }
        }
    }
}

/// A recorder `Err`: one dropped row and one warning (80 T-39).
fn record_failed(counters: &Counters, e: &RecordError) {
    counters.dropped.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        code = "telemetry.record_failed",
        kind = %e.kind,
        "telemetry record failed (degraded, not propagated): {e}"
    );
}

#[cfg(test)]
mod tests;
