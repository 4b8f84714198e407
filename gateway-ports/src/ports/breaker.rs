//! Circuit breaker port: `CircuitBreaker`, `GateDecision`, `BreakerSnapshot`, `ProbeLease`.
//!
//! The breaker gates each attempt per source, opens on consecutive failures or a failure rate,
//! admits one half-open probe at a time under a lease, and fences stale writes by epoch. It fails
//! closed: a backend error is never `allowed`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::BackendError;
use crate::vocab::{BreakerState, FailureReason};

/// The breaker's answer for one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct GateDecision {
    /// The source.
    pub source: String,
    /// The attempt's `call_id`.
    pub owner: String,
    /// May the attempt proceed?
    pub allowed: bool,
    /// This attempt holds the half-open probe.
    pub is_probe: bool,
    /// Epoch the decision was taken in (fencing).
    pub epoch: u64,
    /// Remaining cooldown in seconds when denied (`Some(0.0)` in half-open).
    pub retry_after_s: Option<f64>,
}

impl GateDecision {
    /// The probe this decision holds, if `is_probe`.
    pub fn probe_lease(&self) -> Option<ProbeLease> {
        self.is_probe.then(|| ProbeLease {
            source: self.source.clone(),
            owner: self.owner.clone(),
            epoch: self.epoch,
        })
    }
}

/// The half-open probe a `GateDecision` with `is_probe` holds; released by
/// `release_probe_now` or the async `release_probe`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProbeLease {
    /// The source.
    pub source: String,
    /// The probing attempt's `call_id`.
    pub owner: String,
    /// Epoch of the decision (stale releases change nothing).
    pub epoch: u64,
}

/// Breaker state of one source. Seconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BreakerSnapshot {
    /// Closed, Open or HalfOpen.
    pub state: BreakerState,
    /// Bumped by every open and close.
    pub epoch: u64,
    /// Consecutive counted failures.
    pub consecutive_failures: u32,
    /// Samples in the rate window.
    pub window_calls: u32,
    /// Failures in the rate window.
    pub window_failures: u32,
    /// Monotonic instant (seconds, the breaker's clock) the open state ends, if open.
    pub open_until_s: Option<f64>,
    /// Cooldown of the current/next open in seconds.
    pub current_cooldown_s: f64,
    /// How many times this source's breaker opened since the backend first saw it (closing does
    /// not reset it; saturates at `u32::MAX`). The memory backend counts its own process; a
    /// shared backend counts every process sharing it. Absent in older serialized snapshots
    /// (read as 0).
    #[serde(default)]
    pub open_count: u32,
}

/// The circuit breaker port. Constructible from `(scope, BreakerConfig, Arc<dyn Clock>)`.
#[async_trait]
pub trait CircuitBreaker: Send + Sync + 'static {
    /// Gate one attempt of `source` owned by `owner` (the attempt's `call_id`).
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError>;
    /// Records a success; `count_attempt = false` adds no window sample.
    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError>;
    /// Records a failure; `force_open` opens at once (SourceDead).
    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError>;
    /// Frees the probe slot without an outcome; idempotent; no-op for non-probes.
    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError>;
    /// State of `source`.
    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError>;
    /// Releases backend resources; idempotent.
    async fn close(&self) {}
    /// Sends what this backend buffered on its way to a shared store (success samples) so every
    /// other process sees it; returns when it is there or failed (a failure is the backend's
    /// to log, as for any write-back). Default: nothing is buffered.
    async fn flush(&self) {}
    /// synchronous fast path of `release_probe`: `true` = freed before returning (memory
    /// backend); `false` (default) = nothing done, use the async path.
    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        let _ = probe;
        false
    }
}
