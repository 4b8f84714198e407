//! Rate limiter port: `RateLimiter`, `Permit` and their values.
//!
//! A grant takes the "six gates" atomically (source and global concurrency, RPM, TPM); a denial
//! changes nothing. The core's single exit is `settle` then `release`, once per permit on every
//! path; a lease reclaims permits whose holder died. `settle_and_release_now` is the synchronous
//! fast path guards try first.

use std::fmt;

use async_trait::async_trait;

use crate::error::BackendError;
use crate::vocab::wire_enum;

wire_enum! {
    /// The first gate that refused a grant.
    pub enum LimitGate {
        /// `"source_concurrency"`.
        SourceConcurrency => "source_concurrency",
        /// `"source_rpm"`.
        SourceRpm => "source_rpm",
        /// `"source_tpm"`.
        SourceTpm => "source_tpm",
        /// `"global_concurrency"`.
        GlobalConcurrency => "global_concurrency",
        /// `"global_rpm"`.
        GlobalRpm => "global_rpm",
        /// `"global_tpm"`.
        GlobalTpm => "global_tpm",
    }
}

/// The outcome of `RateLimiter::try_acquire`.
#[derive(Debug)]
pub enum Acquire {
    /// Granted: the holder must `settle` then `release` exactly once (or use the fast path).
    Granted(Box<dyn Permit>),
    /// Denied; nothing was reserved.
    Denied {
        /// The first gate that refused.
        gate: LimitGate,
        /// Seconds until capacity may free up, if known.
        wait_hint_s: Option<f64>,
    },
}

/// Usage of one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SourceStats {
    /// Tokens charged in the current minute window.
    pub tpm_used: u64,
    /// Requests in the current minute window.
    pub rpm_used: u32,
    /// Permits currently in flight.
    pub inflight: u32,
}

impl SourceStats {
    /// Builds a stats value.
    pub const fn new(tpm_used: u64, rpm_used: u32, inflight: u32) -> Self {
        Self {
            tpm_used,
            rpm_used,
            inflight,
        }
    }
}

/// The rate limiter port. Constructible from
/// `(scope, &[SourceConfig], GlobalLimits, lease_ttl_s, Arc<dyn Clock>)`.
#[async_trait]
pub trait RateLimiter: Send + Sync + 'static {
    /// Tries to take the six gates for `source` with `est_tokens` pre-deducted. Unknown source →
    /// `BackendError` `SourceNotConfigured`; backend down → `Unavailable` (never a grant).
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError>;
    /// Current usage of `source`.
    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError>;
    /// Records scope-wide progress.
    async fn mark_progress(&self) -> Result<(), BackendError>;
    /// Seconds since the last progress mark (since construction if none).
    async fn progress_age_s(&self) -> Result<f64, BackendError>;
    /// Releases backend resources; idempotent.
    async fn close(&self) {}
    /// Sends what this backend buffered on its way to a shared store (a finished call's settle and release, a progress mark) so every
    /// other process sees it; returns when it is there or failed (a failure is the backend's
    /// to log, as for any write-back). Default: nothing is buffered.
    async fn flush(&self) {}
}

/// One granted reservation. `Debug` must not print secrets.
#[async_trait]
pub trait Permit: Send + Sync + fmt::Debug {
    /// Permit id (lease key).
    fn id(&self) -> &str;
    /// The source it was granted for.
    fn source(&self) -> &str;
    /// Tokens pre-deducted at grant time.
    fn est_tokens(&self) -> u64;
    /// Applies `actual_tokens − est_tokens` to the reservation; at most once; no-op after
    /// `release` (-04).
    async fn settle(&self, actual_tokens: u64) -> Result<(), BackendError>;
    /// Frees the concurrency slots; idempotent.
    async fn release(&self) -> Result<(), BackendError>;
    /// `settle(actual_tokens)` then `release()` as one operation: the core's single exit when
    /// the fast path declined. Networked backends override it to do both in one round trip;
    /// the default runs `settle` then `release` (release runs even if settle failed) and
    /// returns the first error.
    async fn settle_then_release(&self, actual_tokens: u64) -> Result<(), BackendError> {
        let settled = self.settle(actual_tokens).await;
        let released = self.release().await;
        settled.and(released)
    }
    /// Synchronous fast path: `settle(actual_tokens)` then `release()` without the caller
    /// waiting for I/O. `true` = taken care of before returning: applied (memory
    /// backend), or sent ahead of every later operation of this limiter with only the reply
    /// awaited in the background (Redis with write-behind on). Either way every later
    /// operation of this limiter sees the effect. `false` (default) = nothing done, use the
    /// async path.
    fn settle_and_release_now(&self, actual_tokens: u64) -> bool {
        let _ = actual_tokens;
        false
    }
}
