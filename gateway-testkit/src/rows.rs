//! `RecordingRowSink`: a [`RowSink`] that records every fact for assertions (05 R-3).

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use gateway_core::clock::FakeClock;
use gateway_core::rows::{
    AttemptRowFacts, CacheHitRowFacts, CancelLabel, RowSink, TerminalRowFacts,
};

/// One recorded fact.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RecordedRow {
    /// An attempt row.
    Attempt(AttemptRowFacts),
    /// A terminal row.
    Terminal(TerminalRowFacts),
    /// A cache-hit row.
    CacheHit(CacheHitRowFacts),
}

impl RecordedRow {
    /// The row's `logical_call_id`.
    pub fn logical_call_id(&self) -> &str {
        match self {
            Self::Attempt(f) => &f.call.logical_call_id,
            Self::Terminal(f) => &f.call.logical_call_id,
            Self::CacheHit(f) => &f.call.logical_call_id,
        }
    }

    /// `"attempt"`, `"terminal_failure"` or `"cache_hit"` (the `event_kind` column).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Attempt(_) => "attempt",
            Self::Terminal(_) => "terminal_failure",
            Self::CacheHit(_) => "cache_hit",
        }
    }
}

#[derive(Debug, Default, Clone)]
struct Behaviour {
    delay: Option<Duration>,
    tick: Option<(Arc<FakeClock>, Duration)>,
}

/// A recording row sink (05 R-3). Optionally each row waits `delay` on the runtime timer
/// (a slow recorder) and/or advances a `FakeClock` by `tick` (a "ticking recorder", 95 CF-292).
#[derive(Default)]
pub struct RecordingRowSink {
    rows: Mutex<Vec<RecordedRow>>,
    behaviour: Behaviour,
}

impl fmt::Debug for RecordingRowSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordingRowSink")
            .field("rows", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl RecordingRowSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Each row takes `delay` on the runtime timer before it is recorded.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.behaviour.delay = Some(delay);
        self
    }

    /// Each row advances `clock` by `tick` before it is recorded.
    pub fn with_tick(mut self, clock: Arc<FakeClock>, tick: Duration) -> Self {
        self.behaviour.tick = Some((clock, tick));
        self
    }

    fn lock(&self) -> MutexGuard<'_, Vec<RecordedRow>> {
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn record(&self, row: RecordedRow) {
        if let Some(d) = self.behaviour.delay {
            tokio::time::sleep(d).await;
        }
        if let Some((clock, tick)) = &self.behaviour.tick {
            clock.advance(*tick);
        }
        self.lock().push(row);
    }

    /// Every recorded row, in order.
    pub fn rows(&self) -> Vec<RecordedRow> {
        self.lock().clone()
    }

    /// The attempt rows.
    pub fn attempts(&self) -> Vec<AttemptRowFacts> {
        self.lock()
            .iter()
            .filter_map(|r| match r {
                RecordedRow::Attempt(f) => Some(f.clone()),
                _ => None,
            })
            .collect()
    }

    /// The terminal rows.
    pub fn terminals(&self) -> Vec<TerminalRowFacts> {
        self.lock()
            .iter()
            .filter_map(|r| match r {
                RecordedRow::Terminal(f) => Some(f.clone()),
                _ => None,
            })
            .collect()
    }

    /// The cancel labels of the attempt rows (`None` for non-cancelled rows).
    pub fn attempt_labels(&self) -> Vec<Option<CancelLabel>> {
        self.attempts()
            .iter()
            .map(AttemptRowFacts::cancel_label)
            .collect()
    }

    /// The `error_type` of every attempt row.
    pub fn attempt_error_types(&self) -> Vec<Option<&'static str>> {
        self.attempts()
            .iter()
            .map(AttemptRowFacts::error_type)
            .collect()
    }

    /// `(attempt rows, terminal rows)`.
    pub fn counts(&self) -> (usize, usize) {
        (self.attempts().len(), self.terminals().len())
    }

    /// Asserts the row counts (panics with the rows on mismatch; test support).
    pub fn assert_counts(&self, attempts: usize, terminals: usize) {
        let got = self.counts();
        assert_eq!(
            got,
            (attempts, terminals),
            "expected {attempts} attempt rows and {terminals} terminal rows, got {:#?}",
            self.rows()
        );
    }

    /// Asserts that every row carries `logical_call_id`.
    pub fn assert_one_call(&self, logical_call_id: &str) {
        for r in self.rows() {
            assert_eq!(r.logical_call_id(), logical_call_id, "row {r:?}");
        }
    }

    /// Forgets every row.
    pub fn clear(&self) {
        self.lock().clear();
    }
}

#[async_trait]
impl RowSink for RecordingRowSink {
    async fn attempt(&self, facts: AttemptRowFacts) {
        self.record(RecordedRow::Attempt(facts)).await;
    }
    async fn terminal(&self, facts: TerminalRowFacts) {
        self.record(RecordedRow::Terminal(facts)).await;
    }
    async fn cache_hit(&self, facts: CacheHitRowFacts) {
        self.record(RecordedRow::CacheHit(facts)).await;
    }
}
