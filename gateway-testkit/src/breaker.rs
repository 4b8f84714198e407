//! `HangingBreaker`: a breaker wrapper that parks chosen write-backs (30 G-109 S4/S5 rows).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::Latch;
use async_trait::async_trait;
use gateway_ports::{
    BackendError, BreakerSnapshot, CircuitBreaker, FailureReason, GateDecision, ProbeLease,
};

/// Which write-back a [`HangingBreaker`] parks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HangOn {
    /// `record_success` never returns (S4: "a breaker that hangs in `record_success`").
    RecordSuccess,
    /// `record_failure` never returns (S5).
    RecordFailure,
}

/// Wraps a breaker; the chosen write-back signals [`HangingBreaker::entered`] and never returns
/// while hanging is on. Everything else is delegated. Counts `release_probe` calls.
pub struct HangingBreaker {
    inner: Arc<dyn CircuitBreaker>,
    hang_on: HangOn,
    hanging: AtomicBool,
    entered: Latch,
    probe_releases: AtomicU32,
}

impl fmt::Debug for HangingBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HangingBreaker")
            .field("hang_on", &self.hang_on)
            .finish_non_exhaustive()
    }
}

impl HangingBreaker {
    /// Wraps `inner`, hanging in `hang_on`.
    pub fn new(inner: Arc<dyn CircuitBreaker>, hang_on: HangOn) -> Self {
        Self {
            inner,
            hang_on,
            hanging: AtomicBool::new(true),
            entered: Latch::new(),
            probe_releases: AtomicU32::new(0),
        }
    }

    /// Stops hanging (later write-backs are delegated).
    pub fn stop_hanging(&self) {
        self.hanging.store(false, Ordering::SeqCst);
    }

    /// Waits until the parked write-back was entered.
    pub async fn entered(&self) {
        self.entered.wait().await;
    }

    /// `release_probe` / `release_probe_now` calls seen.
    pub fn probe_releases(&self) -> u32 {
        self.probe_releases.load(Ordering::SeqCst)
    }

    async fn maybe_hang(&self, which: HangOn) {
        if which == self.hang_on && self.hanging.load(Ordering::SeqCst) {
            self.entered.open();
            std::future::pending::<()>().await;
        }
    }
}

#[async_trait]
impl CircuitBreaker for HangingBreaker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        self.inner.try_enter(source, owner).await
    }
    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        self.maybe_hang(HangOn::RecordSuccess).await;
        self.inner.record_success(entry, count_attempt).await
    }
    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        self.maybe_hang(HangOn::RecordFailure).await;
        self.inner.record_failure(entry, reason, force_open).await
    }
    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        self.probe_releases.fetch_add(1, Ordering::SeqCst);
        self.inner.release_probe(entry).await
    }
    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        self.inner.snapshot(source).await
    }
    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        self.probe_releases.fetch_add(1, Ordering::SeqCst);
        self.inner.release_probe_now(probe)
    }
}
