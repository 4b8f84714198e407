//! Telemetry: the emitter, row shaping, cost, the pricing file and the `llm_calls` schema
//! (80; 05 R-3).
//!
//! Owns the one exit of telemetry: [`TelemetryEmitter`] implements the core's
//! [`RowSink`] — the retry loop, the hedge orchestrator and the cleanup worker hand it row
//! *facts*, it shapes them into the 39-field `TelemetryRow` ([`shape`]) and hands each row to
//! the configured `TelemetryRecorder` through its one synchronous, non-blocking `record`:
//! the recorder owns the bounded queue between the call path and its I/O.
//!
//! Why no queue of its own: telemetry never changes a call's outcome or latency beyond shaping
//! the row (issue "telemetry": "never blocks the call path"). Building a row is
//! synchronous and infallible; handing it off never waits (the port promises it). A recorder
//! `Err` (its queue full or closed) is logged as a warning (the 1st, 2nd, 4th, 8th…) and counted
//! in `dropped_rows`; it is never returned to the caller. The recorder's own degradation (open,
//! preparation, availability failures, cooldown and recovery) shows through
//! [`TelemetryEmitter::status`], which adds the emitter's own drops to the recorder's snapshot.
//!
//! The core has no runtime of its own (no `tokio::spawn`) and the emitter needs none: rows are
//! handed over inline, `flush` and `close` await the recorder's.

mod error_columns;
mod facts;
pub(crate) mod input;
mod json;
pub mod pricing;
pub mod shape;
mod text;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use gateway_ports::{
    ConfigError, PricingTable, RecordError, TelemetryRecorder, TelemetryRow, TelemetryStatus,
    TelemetryStatusProvider,
};

/// The `llm_calls` schema, now in `gateway-ports` (re-exported here for the core's users).
pub use gateway_ports::schema;
pub use gateway_ports::schema::{
    SchemaMode, SqlBackend, create_table_sql, insert_sql, manual_mode_warning, telemetry_schema_sql,
};
pub use pricing::{load_pricing, load_pricing_with_warnings, parse_pricing};
pub use shape::{RowInput, RowShaper, RowSubject};

use crate::rows::{AttemptRowFacts, CacheHitRowFacts, RowSink, TerminalRowFacts};

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
}

impl Default for EmitterConfig {
    fn default() -> Self {
        Self {
            pricing: None,
            text_cap: None,
            redact_ips: true,
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

    /// The config with this `PGW_REDACT_IPS` value.
    pub fn with_redact_ips(mut self, redact_ips: bool) -> Self {
        self.redact_ips = redact_ips;
        self
    }
}

#[derive(Debug, Default)]
struct Counters {
    /// Rows the emitter shaped but never handed over (emitted after `close`).
    dropped: AtomicU64,
    /// Rows the recorder refused (`record` returned `Err`); the recorder counts them in its
    /// own `dropped_rows`, this count only paces the warnings.
    refused: AtomicU64,
    /// Set by [`TelemetryEmitter::close`]: later rows are dropped and counted.
    closed: AtomicBool,
}

/// The telemetry emitter: the core's [`RowSink`] that shapes row facts
/// into `TelemetryRow`s and hands them to a recorder without blocking the call path.
///
/// Also a [`TelemetryStatusProvider`]: the recorder's snapshot with the emitter's own drops
/// added to `dropped_rows`.
#[derive(Clone)]
pub struct TelemetryEmitter {
    shaper: RowShaper,
    recorder: Arc<dyn TelemetryRecorder>,
    counters: Arc<Counters>,
}

impl fmt::Debug for TelemetryEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryEmitter")
            .field("shaper", &self.shaper)
            .field("dropped", &self.counters.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl TelemetryEmitter {
    /// An emitter over `recorder`. Rows go to the recorder's synchronous `record` as they are
    /// emitted; no task needs spawning.
    ///
    /// Errors: `ConfigError telemetry.text_cap` when `config.text_cap == Some(0)`.
    pub fn new(
        recorder: Arc<dyn TelemetryRecorder>,
        config: EmitterConfig,
    ) -> Result<Self, ConfigError> {
        let shaper = RowShaper::new(config.pricing, config.text_cap, config.redact_ips)?;
        Ok(Self {
            shaper,
            recorder,
            counters: Arc::new(Counters::default()),
        })
    }

    /// The row shaper (pure; tests and benches build rows with it).
    pub fn shaper(&self) -> &RowShaper {
        &self.shaper
    }

    /// The recorder rows are handed to.
    pub fn recorder(&self) -> &Arc<dyn TelemetryRecorder> {
        &self.recorder
    }

    /// Hands one row to the recorder without waiting. A closed
    /// emitter drops the row and counts it; a recorder `Err` (the recorder counted the row)
    /// is logged. Either logs a warning for the 1st, 2nd, 4th, 8th… such row.
    pub fn emit(&self, row: TelemetryRow) {
        if self.counters.closed.load(Ordering::Acquire) {
            self.count_drop("emitter closed");
            return;
        }
        if let Err(e) = self.recorder.record(row) {
            record_failed(&self.counters, &e);
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

    /// Resolves when every row emitted before it has been written or dropped by the recorder
    /// (its `flush`; 05 R-24).
    pub async fn flush(&self) {
        self.recorder.flush().await;
    }

    /// Closes the recorder (bounded by the recorder). Idempotent; rows emitted
    /// afterwards are dropped and counted.
    pub async fn close(&self) {
        self.counters.closed.store(true, Ordering::Release);
        self.recorder.close().await;
    }

    /// Rows the emitter itself dropped (emitted after `close`; rows the recorder refused are in
    /// the recorder's count).
    pub fn dropped_rows(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }
}

impl TelemetryStatusProvider for TelemetryEmitter {
    /// The recorder's snapshot plus the emitter's own drops in `dropped_rows`.
    ///
    /// A recorder counts the rows it refuses in its own `dropped_rows` too; the
    /// emitter only adds the rows it never handed over (emitted after `close`).
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

/// A recorder `Err`: a warning for the 1st, 2nd, 4th, 8th… refused row. The row is
/// counted by the recorder, not here, so `status().dropped_rows` counts it once.
fn record_failed(counters: &Counters, e: &RecordError) {
    let n = counters.refused.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_power_of_two() {
        tracing::warn!(
            code = "telemetry.record_failed",
            kind = %e.kind,
            refused_rows = n,
            "telemetry record failed (degraded, not propagated): {e}"
        );
    }
}

#[cfg(test)]
mod tests;
