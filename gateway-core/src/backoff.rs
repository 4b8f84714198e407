//! Backoff between failed rounds of the retry loop (spec README D3; 30 §4).
//!
//! Owns the one formula
//!
//! ```text
//! delay = max( min(base · 2^(n−1), max) · (0.5 + rng()), hint )
//! ```
//!
//! where `n ≥ 1` counts the failed rounds of the loop so far (budget-exempt 429 rounds
//! included) and `hint` is the server's Retry-After in seconds (`crate::retry_after`). The
//! server hint is never clamped by `max`: only the call deadline, or the optional hint
//! cap of 05 R-35 (`crate::retry_after::hint_exceeds_cap`), bounds it. The jitter source is
//! injected so that tests are exact; `0.5 + rng()` is applied literally, even for test values
//! outside `[0, 1)`.
//!
//! The loop decides *whether* to sleep (never after a `SourceDead` round or after the round that
//! exhausts the budget); this module only says *how long*. It never panics: the exponent is
//! capped and the seconds become a [`Duration`] through `Duration::try_from_secs_f64`, saturating
//! at [`Duration::MAX`].

use std::time::Duration;

/// The retry policy of a scope (spec 10 §2.2; README D3; 30 G-39), defined in `gateway-ports`
/// and re-exported here: `max_attempts = 3`, `backoff_base_s = 1.0`, `backoff_max_s = 10.0` by
/// default; `max_hint_s` is consulted through
/// [`hint_exceeds_cap`](crate::retry_after::hint_exceeds_cap).
pub use gateway_ports::RetryPolicy;

/// Largest exponent used for `2^(n−1)`: beyond it `2^e` would overflow `f64`; any base
/// `> 0` has long saturated at `backoff_max_s` by then.
const MAX_EXPONENT: u32 = 1023;

/// The exponential part before jitter, seconds: `min(base · 2^(n−1), max)`.
///
/// `failed_rounds` is `n`; `0` is treated as `1`. The exponent is capped at 1023 so a huge `n`
/// saturates at `backoff_max_s` instead of overflowing.
pub fn exponential_s(policy: &RetryPolicy, failed_rounds: u32) -> f64 {
    let exponent = failed_rounds.saturating_sub(1).min(MAX_EXPONENT);
    // `exponent <= 1023` fits an i32.
    let factor = 2f64.powi(i32::try_from(exponent).unwrap_or(1023));
    (policy.backoff_base_s * factor).min(policy.backoff_max_s)
}

/// The backoff delay in seconds, literally as G-38 writes it:
/// `max(min(base · 2^(n−1), max) · (0.5 + rng()), hint_s.unwrap_or(0.0))`.
///
/// `failed_rounds` (`n ≥ 1`) counts the failed rounds of this loop so far, budget-exempt 429
/// rounds included. `retry_after_s` is the server hint from
/// [`parse_retry_after`](crate::retry_after::parse_retry_after): never clamped by
/// `backoff_max_s`. `rng` is called exactly once; nominally it returns a value in
/// `[0, 1)` (so the jitter factor is `U(0.5, 1.5)`), but any value is applied literally (tests
/// inject `2.0` → factor `2.5`).
///
/// A NaN from any input is ignored by `f64::max`/`f64::min` semantics; the result may be
/// `+inf` only if an input is infinite. Use [`backoff_delay`] for the sleep itself.
pub fn backoff_delay_s(
    policy: &RetryPolicy,
    failed_rounds: u32,
    retry_after_s: Option<f64>,
    rng: impl FnOnce() -> f64,
) -> f64 {
    let jittered = exponential_s(policy, failed_rounds) * (0.5 + rng());
    jittered.max(retry_after_s.unwrap_or(0.0))
}

/// The backoff sleep as a [`Duration`].
///
/// Same inputs as [`backoff_delay_s`]; the seconds are converted with
/// [`seconds_to_duration_saturating`], so a huge finite hint (`Retry-After: 1e300`) or an
/// `attempt` of 1000 never panics: it becomes "practically forever" ([`Duration::MAX`]),
/// bounded only by the call deadline.
pub fn backoff_delay(
    policy: &RetryPolicy,
    failed_rounds: u32,
    retry_after_s: Option<f64>,
    rng: impl FnOnce() -> f64,
) -> Duration {
    seconds_to_duration_saturating(backoff_delay_s(policy, failed_rounds, retry_after_s, rng))
}

/// Converts seconds to a [`Duration`] without panicking: NaN, zero and
/// negative values → [`Duration::ZERO`]; values too large for a `Duration` (including `+inf`)
/// → [`Duration::MAX`]; everything else through `Duration::try_from_secs_f64`.
///
/// `tokio::time::sleep(Duration::MAX)` is accepted by tokio (its deadline saturates to "far
/// future"), so the result can be slept directly.
pub fn seconds_to_duration_saturating(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}
