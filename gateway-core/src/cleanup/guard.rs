//! The attempt guard ([`AttemptGuard`]): one admission's acquisitions from the pick through
//! the attempt, and on drop its cell of the settlement matrix S1–S8 (fast paths at once, the
//! rest and the row as one cleanup job).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gateway_ports::{AttemptError, CircuitBreaker, Clock, GateDecision, Permit, SourceConfig};

use crate::pacer::Pacer;
use crate::rows::{AttemptRowFacts, AttemptRowOutcome, CancelLabel, RowCall, RowSink};

use super::queue::{CleanupQueue, JobKind};

/// What a registered attempt needs to write its row from `Drop`.
#[derive(Clone)]
pub struct AttemptRowInfo {
    /// Where rows go.
    pub sink: Arc<dyn RowSink>,
    /// Call-level row facts.
    pub call: Arc<RowCall>,
    /// The attempt's id.
    pub call_id: String,
    /// The attempt's source.
    pub source: Arc<SourceConfig>,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Hedge leg?
    pub hedge_leg: bool,
    /// Attempt start on the injected clock.
    pub started: Duration,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for AttemptRowInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptRowInfo")
            .field("call_id", &self.call_id)
            .field("source", &self.source.name)
            .field("attempt", &self.attempt)
            .field("hedge_leg", &self.hedge_leg)
            .finish_non_exhaustive()
    }
}

impl AttemptRowInfo {
    /// Attempt-row facts with `latency_ms` read now.
    pub fn facts(&self, outcome: AttemptRowOutcome) -> AttemptRowFacts {
        let latency = self.clock.monotonic().saturating_sub(self.started);
        AttemptRowFacts {
            call: Arc::clone(&self.call),
            call_id: self.call_id.clone(),
            source: Arc::clone(&self.source),
            attempt: self.attempt,
            hedge_leg: self.hedge_leg,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            outcome,
        }
    }
}

/// The acquisitions of one admission and, once registered, one attempt (the
/// `AdmissionGuard` and the `AttemptGuard` are one type in two phases).
///
/// Settlement value on drop: admission phase (S1) or panic (S8) → 0; otherwise the
/// value stored by [`AttemptGuard::set_settlement`] (S4, S5), else `est` (S3).
pub struct AttemptGuard {
    logical_call_id: Arc<str>,
    source: Arc<str>,
    est: u64,
    queue: Arc<CleanupQueue>,
    breaker: Arc<dyn CircuitBreaker>,
    decision: GateDecision,
    probe_open: bool,
    pacer: Option<Arc<dyn Pacer>>,
    permit: Option<Box<dyn Permit>>,
    settlement: Option<u64>,
    row: Option<AttemptRowInfo>,
    pending_row: Option<AttemptRowOutcome>,
    row_written: bool,
    loser: Option<Arc<AtomicBool>>,
}

impl fmt::Debug for AttemptGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptGuard")
            .field("source", &self.source)
            .field("est", &self.est)
            .field("probe_open", &self.probe_open)
            .field("pacer_held", &self.pacer.is_some())
            .field("permit_held", &self.permit.is_some())
            .field("settlement", &self.settlement)
            .field("registered", &self.row.is_some())
            .field("row_written", &self.row_written)
            .finish_non_exhaustive()
    }
}

fn warn_writeback(source: &str, what: &'static str, err: &dyn fmt::Display) {
    tracing::warn!(
        code = "governance.writeback_failed",
        source = source,
        op = what,
        "governance write-back degraded (not propagated): {err}"
    );
}

impl AttemptGuard {
    /// Arms a guard holding the breaker `decision` of `source` (probe included) in the admission
    /// phase (S1). `est` is the source's admission estimate. `source` is a `&str` or a shared
    /// name (`Arc<str>`, no copy: 05 R-56).
    pub fn new(
        logical_call_id: &str,
        source: impl Into<Arc<str>>,
        est: u64,
        queue: Arc<CleanupQueue>,
        breaker: Arc<dyn CircuitBreaker>,
        decision: GateDecision,
    ) -> Self {
        Self {
            logical_call_id: Arc::from(logical_call_id),
            source: source.into(),
            est,
            queue,
            breaker,
            probe_open: decision.is_probe,
            decision,
            pacer: None,
            permit: None,
            settlement: None,
            row: None,
            pending_row: None,
            row_written: false,
            loser: None,
        }
    }

    /// Records that the guard holds one pacer slot of its source (released by `leave`).
    pub fn hold_pacer(&mut self, pacer: Arc<dyn Pacer>) {
        self.pacer = Some(pacer);
    }

    /// Records the granted permit.
    pub fn hold_permit(&mut self, permit: Box<dyn Permit>) {
        self.permit = Some(permit);
    }

    /// The breaker decision (the write-back entry).
    pub fn decision(&self) -> &GateDecision {
        &self.decision
    }

    /// Enters the attempt phase: from now on a drop settles `est` unless a
    /// value is stored, and writes a row unless one was written. `loser` is the leg's flag.
    pub fn register(&mut self, row: AttemptRowInfo, loser: Arc<AtomicBool>) {
        self.row = Some(row);
        self.loser = Some(loser);
    }

    /// The registered row info, if any.
    pub fn row_info(&self) -> Option<&AttemptRowInfo> {
        self.row.as_ref()
    }

    /// Stores the settlement value the moment it is known (before the next await).
    pub fn set_settlement(&mut self, actual_tokens: u64) {
        self.settlement = Some(actual_tokens);
    }

    /// Stores the known failure row a drop must still write (S5).
    pub fn set_failure_row(&mut self, error: AttemptError) {
        self.pending_row = Some(AttemptRowOutcome::Failed(error));
    }

    /// The probe was resolved by a completed write-back (no release needed any more).
    pub fn probe_resolved(&mut self) {
        self.probe_open = false;
    }

    /// The attempt row was written inline.
    pub fn row_written(&mut self) {
        self.row_written = true;
        self.pending_row = None;
    }

    /// Releases the probe now if one is held: the fast path first, else the async path
    /// (quietly).
    pub async fn release_probe(&mut self) {
        if !self.probe_open {
            return;
        }
        let done = self
            .decision
            .probe_lease()
            .is_some_and(|lease| self.breaker.release_probe_now(&lease));
        if !done && let Err(e) = self.breaker.release_probe(&self.decision).await {
            warn_writeback(&self.source, "release_probe", &e);
        }
        self.probe_open = false;
    }

    /// Returns the pacer slot now (sync, 30 G-72: always runs when the attempt ends).
    pub fn leave_pacer(&mut self) {
        if let Some(p) = self.pacer.take() {
            p.leave(&self.source);
        }
    }

    /// Settles and releases the permit now with `value` (fast path first, else the async
    /// `settle` then `release`, quietly). Idempotent.
    async fn settle_and_release(&mut self, value: u64) {
        let Some(permit) = self.permit.as_ref() else {
            return;
        };
        if !permit.settle_and_release_now(value)
            && let Err(e) = permit.settle_then_release(value).await
        {
            warn_writeback(&self.source, "settle_then_release", &e);
        }
        self.permit = None;
    }

    /// Releases everything of a rejected or aborted admission (30 G-59 order: probe release →
    /// pacer leave → settle 0 and release), then disarms. The pacer slot admitted nothing, so it
    /// is returned with [`Pacer::leave_unused`] (no wakeup: waiting callers would otherwise
    /// wake each other in a loop while quota is exhausted).
    pub async fn release_admission(mut self) {
        self.release_probe().await;
        if let Some(p) = self.pacer.take() {
            p.leave_unused(&self.source);
        }
        self.settle_and_release(0).await;
    }

    /// Step 8 of 30 G-85: pacer leave, then settle-and-release with the stored value (else
    /// `est`), and any probe still held; the guard is disarmed only after all completed.
    pub async fn finish(mut self) {
        self.leave_pacer();
        let value = self.settlement.unwrap_or(self.est);
        self.settle_and_release(value).await;
        self.release_probe().await;
        self.row_written = true;
    }
}

impl Drop for AttemptGuard {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        // Pacer leave is synchronous and always runs (G-106).
        self.leave_pacer();
        let value = if panicking || self.row.is_none() {
            0 // S8 / S1
        } else {
            self.settlement.unwrap_or(self.est) // S4/S5 known value, else S3 `est`
        };
        let permit = self
            .permit
            .take()
            .filter(|p| !p.settle_and_release_now(value));
        let probe = if self.probe_open {
            self.probe_open = false;
            let fast = self
                .decision
                .probe_lease()
                .is_some_and(|lease| self.breaker.release_probe_now(&lease));
            (!fast).then(|| (Arc::clone(&self.breaker), self.decision.clone()))
        } else {
            None
        };
        let row = match (&self.row, self.row_written || panicking) {
            (Some(info), false) => {
                let outcome = self.pending_row.take().unwrap_or_else(|| {
                    let loser = self
                        .loser
                        .as_ref()
                        .is_some_and(|l| l.load(Ordering::SeqCst));
                    AttemptRowOutcome::Cancelled(if loser {
                        CancelLabel::HedgeCancelled
                    } else {
                        CancelLabel::Cancelled
                    })
                });
                Some((Arc::clone(&info.sink), info.facts(outcome)))
            }
            _ => None,
        };
        if permit.is_none() && probe.is_none() && row.is_none() {
            return;
        }
        let source = Arc::clone(&self.source);
        let job = async move {
            // Governance before telemetry (30 G-110).
            if let Some(permit) = permit
                && let Err(e) = permit.settle_then_release(value).await
            {
                warn_writeback(&source, "settle_then_release", &e);
            }
            if let Some((breaker, decision)) = probe
                && let Err(e) = breaker.release_probe(&decision).await
            {
                warn_writeback(&source, "release_probe", &e);
            }
            if let Some((sink, facts)) = row {
                sink.attempt(facts).await;
            }
        };
        self.queue
            .enqueue(&self.logical_call_id, JobKind::Attempt, Box::pin(job));
    }
}
