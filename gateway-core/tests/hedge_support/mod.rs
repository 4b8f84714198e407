//! Helpers of the hedge tests (60 §14 harness, 95 §10–§11). The fixture itself is the shared
//! `gateway_testkit::fixture::Fx`: `FxBuilder::hedge_after()` / `hedge_stall()` /
//! `hedge_off()` are two sources `s1`, `s2` in a static order (so `s1` is always the primary and
//! `s2` the hedge), thresholds of 0.05 s on the paused runtime clock,
//! `RetryPolicy(max_attempts, 0.01, 0.05)`, stall window 300 s, poll 0.01 s,
//! `QUOTA_FULL = wait`, sources with `tpm = 1000`, `est_tokens = 400`. The runner records which
//! attempts got a progress signal (H-79, H-105), the selector the health feed (H-88), and
//! `gate_source` parks one source's acquisition until the test opens it (H-83).
#![allow(dead_code)]

use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome};
#[allow(
    unused_imports,
    reason = "each test binary uses a subset of the helpers"
)]
pub use gateway_testkit::fixture::{Fx, FxBuilder};

/// The harness threshold (60 §14): 0.05 s.
pub const T: Duration = gateway_testkit::fixture::HEDGE_T;

/// `ms` milliseconds.
pub const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A measured success `10 + 5` with this content (60 §14: "a successful script returns 10 + 5
/// tokens").
pub fn ok_result(content: &str) -> TransportResult {
    let mut r = TransportResult::ok(10, 5);
    r.content = content.to_owned();
    r
}

/// `"ok"`, the error type, `"cancelled"` or `"hedge_cancelled"`.
pub use gateway_testkit::fixture::row_label as label;

/// The `(stall_ms, stall_count)` a row carries: the success's values, `None` otherwise (80 T-28).
pub fn row_stall(r: &AttemptRowFacts) -> (Option<f64>, Option<u32>) {
    match &r.outcome {
        AttemptRowOutcome::Success(t) => (t.stall_ms, t.stall_count),
        _ => (None, None),
    }
}

/// Live tasks of the current runtime (05 R-7: nothing is spawned in the call path).
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
