//! Introspection of a client's sources: [`SourceStatus`] per source.
//!
//! Every breaker value, `open_count` included, comes from the breaker's own snapshot (one
//! `snapshot` per source per call), so a shared breaker reports what every process sharing it
//! did, and nothing wraps the breaker on the call path.

use gateway_ports::BreakerState;
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
    /// How many times the breaker opened for this source, as its snapshot reports it: the memory
    /// breaker counts since it was built, a shared (Redis) breaker counts every process sharing
    /// it. 0 when the breaker could not answer (see `backend_error`).
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
