//! Introspection of a client's sources: [`SourceStatus`] per source, and the
//! [`OpenCounter`] breaker decorator that counts how often each source's breaker opened.
//!
//! Why a decorator: the breaker port's `BreakerSnapshot` carries the state and the epoch but not
//! how many times the breaker opened, and the status reports `open_count`. Wrapping the breaker (memory
//! or injected) at assembly keeps the port unchanged: after every recorded failure the decorator
//! reads the snapshot once and counts a transition into `open` (a new epoch in state `open`).
//! The synchronous fast path and `close` are forwarded unchanged.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use gateway_ports::{
    BackendError, BreakerSnapshot, BreakerState, CircuitBreaker, FailureReason, GateDecision,
    ProbeLease,
};
use serde::Serialize;

/// The state of one source of a client, as `sources_status()` reports it.
///
/// Backend values are `None` when the backend could not answer (see `backend_error`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SourceStatus {
    /// Source name (e.g. `qwen_1`).
    pub name: String,
    /// Provider label.
    pub provider: String,
    /// Configured model.
    pub model: String,
    /// Breaker state (`closed`, `open`, `half_open`).
    pub breaker_state: Option<BreakerState>,
    /// Breaker epoch (bumped by every open and close).
    pub epoch: Option<u64>,
    /// Consecutive counted failures.
    pub consecutive_failures: Option<u32>,
    /// How many times this client saw the breaker open for this source (since assembly).
    pub open_count: u32,
    /// Permits in flight.
    pub inflight: Option<u32>,
    /// Requests in the current minute window (RPM used).
    pub rpm_used: Option<u32>,
    /// Tokens charged in the current minute window (TPM used).
    pub tpm_used: Option<u64>,
    /// Current AIMD pacer limit (concurrent attempts), if the pacer keeps one.
    pub pacer_limit: Option<f64>,
    /// Health score in `[0, 1]` of the `health_aware` selector, if the selector keeps one.
    pub health_score: Option<f64>,
    /// The backend diagnostic when the limiter or the breaker could not answer.
    pub backend_error: Option<String>,
}

/// Breaker decorator counting opens per source. Every port method is forwarded.
pub(crate) struct OpenCounter {
    inner: Arc<dyn CircuitBreaker>,
    /// source → (opens seen, epoch of the last open seen).
    opens: Mutex<HashMap<String, (u32, u64)>>,
}

impl fmt::Debug for OpenCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenCounter")
            .field("opens", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl OpenCounter {
    pub(crate) fn new(inner: Arc<dyn CircuitBreaker>) -> Self {
        Self {
            inner,
            opens: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u32, u64)>> {
        self.opens.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens seen for `source`.
    pub(crate) fn open_count(&self, source: &str) -> u32 {
        self.lock().get(source).map_or(0, |(n, _)| *n)
    }

    fn observe(&self, source: &str, snapshot: &BreakerSnapshot) {
        if snapshot.state != BreakerState::Open {
            return;
        }
        let mut opens = self.lock();
        let entry = opens.entry(source.to_owned()).or_insert((0, u64::MAX));
        if entry.1 != snapshot.epoch {
            entry.0 = entry.0.saturating_add(1);
            entry.1 = snapshot.epoch;
        }
    }
}

#[async_trait]
impl CircuitBreaker for OpenCounter {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        self.inner.try_enter(source, owner).await
    }

    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        self.inner.record_success(entry, count_attempt).await
    }

    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        self.inner.record_failure(entry, reason, force_open).await?;
        if let Ok(snapshot) = self.inner.snapshot(&entry.source).await {
            self.observe(&entry.source, &snapshot);
        }
        Ok(())
    }

    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        self.inner.release_probe(entry).await
    }

    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        self.inner.snapshot(source).await
    }

    async fn close(&self) {
        self.inner.close().await;
    }

    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        self.inner.release_probe_now(probe)
    }
}
