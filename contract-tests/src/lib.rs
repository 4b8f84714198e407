//! Contract suites for the governance ports, generic over the backend and its time (05 R-31;
//! 10 §8.4).
//!
//! Owns one async function per contract row (`limiter::ct_lim_03_settle_arithmetic`,
//! `breaker::ct_brk_08_epoch_fencing`, …), generic over a [`Backend`] that builds the port under
//! test and a [`TimeControl`] that moves the time those ports read. The suites never sleep: time
//! moves only through [`TimeControl::advance`] (memory: `FakeClock::advance`; Redis: a test-only
//! per-prefix offset key). A failure names its row because each row is its own function and, via
//! [`limiter_contract!`] / [`breaker_contract!`], its own `#[tokio::test]`.
//!
//! Running the suites against a new backend:
//!
//! ```text
//! contract_tests::limiter_contract!(my_crate::RedisBackend::new().await);
//! contract_tests::breaker_contract!(my_crate::RedisBackend::new().await);
//! contract_tests::cache_contract!(my_crate::RedisBackend::new().await);
//! ```
//!
//! The transport suites take a builder of the transport instead: [`ocr_contract!`] (CT-OCR) and
//! [`transport_contract!`] (CT-CHAT, CT-EMB; see [`transport`]).
//!
//! Rows that only a networked backend can show (two instances share
//! state) live with that backend. Panics in this crate are test assertions.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{
    Acquire, BreakerConfig, CircuitBreaker, GlobalLimits, LimitGate, Permit, RateLimiter,
    SourceConfig,
};

pub mod breaker;
pub mod cache;
pub mod clock;
pub mod limiter;
pub mod memory;
pub mod ocr;
pub mod telemetry;
pub mod transport;

pub use memory::MemoryBackend;

/// Moves the time the backend's ports read. Never sleeps.
#[async_trait]
pub trait TimeControl: Send + Sync {
    /// Advances the backend's clock by exactly `d`.
    async fn advance(&self, d: Duration);
}

/// A governance backend under test: builds fresh, isolated ports (each call a new
/// scope) that all read the time moved by [`Backend::time`].
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// A rate limiter for `sources` and `global`, with permit lease `lease_ttl_s` (seconds).
    async fn limiter(
        &self,
        sources: &[SourceConfig],
        global: GlobalLimits,
        lease_ttl_s: f64,
    ) -> Arc<dyn RateLimiter>;
    /// A rate limiter whose backend is unavailable: every entry point must fail.
    async fn unavailable_limiter(&self, sources: &[SourceConfig]) -> Arc<dyn RateLimiter>;
    /// A circuit breaker with `config`.
    async fn breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker>;
    /// A circuit breaker whose backend is unavailable.
    async fn unavailable_breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker>;
    /// The time control shared by every port this backend built.
    fn time(&self) -> &dyn TimeControl;
}

/// A source named `name` with these limits (`0` = unlimited) and every other field default.
pub fn source(name: &str, max_concurrency: u32, rpm: u32, tpm: u64) -> SourceConfig {
    let mut s = SourceConfig::new(name, "test", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = max_concurrency;
    s.rpm = rpm;
    s.tpm = tpm;
    s
}

/// Scope-wide limits (`0` = unlimited).
pub fn global(max_concurrency: u32, rpm: u32, tpm: u64) -> GlobalLimits {
    GlobalLimits {
        max_concurrency,
        rpm,
        tpm,
    }
}

/// Seconds as a `Duration` (test constants only).
pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Acquires or panics naming the gate.
pub async fn must_grant(l: &dyn RateLimiter, source: &str, est: u64) -> Box<dyn Permit> {
    match l.try_acquire(source, est).await.expect("try_acquire") {
        Acquire::Granted(p) => p,
        Acquire::Denied { gate, wait_hint_s } => {
            panic!("expected a grant for {source}, denied at {gate} (hint {wait_hint_s:?})")
        }
    }
}

/// Expects a denial and returns its gate and hint.
pub async fn must_deny(l: &dyn RateLimiter, source: &str, est: u64) -> (LimitGate, Option<f64>) {
    match l.try_acquire(source, est).await.expect("try_acquire") {
        Acquire::Granted(p) => panic!("expected a denial for {source}, granted {p:?}"),
        Acquire::Denied { gate, wait_hint_s } => (gate, wait_hint_s),
    }
}

/// `(tpm_used, rpm_used, inflight)` of `source`.
pub async fn usage(l: &dyn RateLimiter, source: &str) -> (u64, u32, u32) {
    let s = l.source_stats(source).await.expect("source_stats");
    (s.tpm_used, s.rpm_used, s.inflight)
}

/// Generates one `#[tokio::test]` per rate-limiter contract row for the backend built by
/// `$make` (an expression, may use `.await`). The calling crate needs `tokio` with the
/// `macros` and `rt-multi-thread` features.
#[macro_export]
macro_rules! limiter_contract {
    ($make:expr) => {
        $crate::limiter_contract!(@rows $make;
            ct_lim_01_six_gates_taken,
            ct_lim_01_zero_is_unlimited,
            ct_lim_02_denial_names_gate_and_changes_nothing,
            ct_lim_02_global_denial_leaves_source_untouched,
            ct_lim_03_settle_arithmetic,
            ct_lim_04_settle_at_most_once,
            ct_lim_05_release_idempotent_inflight_zero,
            ct_lim_06_lease_reclaims_abandoned_permit,
            ct_lim_06_lease_reclaims_settled_permit,
            ct_lim_06_late_release_and_settle_after_reclaim,
            ct_lim_06_lease_ttl_100_frees_slot,
            ct_lim_07_est_above_tpm_never_granted,
            ct_lim_08_unknown_source,
            ct_lim_09_unavailable_fails_closed,
            ct_lim_10_concurrent_acquires_respect_limits,
            ct_lim_11_stats_reflect_operations,
            ct_lim_12_progress_age,
            ct_lim_14_sliding_window,
            ct_lim_15_fast_path,
        );
    };
    (@rows $make:expr; $($row:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $row() {
                let backend = $make;
                $crate::limiter::$row(&backend).await;
            }
        )+
    };
}

/// Generates one `#[tokio::test]` per circuit-breaker contract row for the backend built by
/// `$make` (an expression, may use `.await`).
#[macro_export]
macro_rules! breaker_contract {
    ($make:expr) => {
        $crate::breaker_contract!(@rows $make;
            ct_brk_01_closed_allows,
            ct_brk_02_consecutive_failures_open,
            ct_brk_02_health_evidence_suppresses_consecutive,
            ct_brk_02_rate_channel_opens,
            ct_brk_02_rate_window_slides,
            ct_brk_02_force_open_one_strike,
            ct_brk_03_cooldown_remaining_and_doubling,
            ct_brk_04_single_half_open_probe,
            ct_brk_05_probe_success_closes_and_resets,
            ct_brk_06_expired_probe_lease_reclaimed,
            ct_brk_07_release_probe,
            ct_brk_08_epoch_fencing,
            ct_brk_08_stale_probe_release_fenced,
            ct_brk_09_count_attempt_false,
            ct_brk_10_unavailable_fails_closed,
            ct_brk_12_fast_path,
            g_76_rate_limited_counts_in_neither_channel,
            r_39_open_count_counts_every_open,
        );
    };
    (@rows $make:expr; $($row:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $row() {
                let backend = $make;
                $crate::breaker::$row(&backend).await;
            }
        )+
    };
}
