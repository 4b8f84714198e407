//! The call deadline.
//!
//! Owns the value domain (unset, or a finite number of seconds `> 0`; per call a non-zero
//! `Duration`), the per-call override (`None` inherits the assembled value; there is no per-call
//! "off"), and the boundary itself: one `tokio::time::timeout` per call created when the
//! call future is first polled, on the runtime timer — a jump of the injected clock fires
//! nothing. Unset means no timer at all. What happens after expiry (await this call's
//! cleanup jobs, then the terminal row) is done by the governor, which owns the queue.

use std::future::Future;
use std::time::Duration;

use gateway_ports::{ConfigError, GatewayError};

/// Validates an assembled deadline given in seconds at the settings edge: `None`
/// stays unset; `0`, negatives, NaN, `±inf` and values too large for a `Duration` are a
/// `ConfigError` (code `deadline.domain`) naming `origin`.
pub fn ensure_call_deadline_s(
    deadline_s: Option<f64>,
    origin: &str,
) -> Result<Option<Duration>, ConfigError> {
    let Some(s) = deadline_s else {
        return Ok(None);
    };
    if !(s.is_finite() && s > 0.0) {
        return Err(ConfigError::new(
            "deadline.domain",
            origin,
            "call deadline must be a finite number of seconds > 0 (leave it unset for none)",
        ));
    }
    Duration::try_from_secs_f64(s).map(Some).map_err(|_| {
        ConfigError::new(
            "deadline.domain",
            origin,
            "call deadline is too large to represent",
        )
    })
}

/// Resolves the deadline of one call: a per-call value overrides the assembled
/// one; `None` inherits it. A zero per-call `Duration` is `InvalidArgument` naming `origin`
/// (e.g. `ChatOptions::call_deadline`), found before the call context exists.
pub fn resolve_call_deadline(
    assembled: Option<Duration>,
    per_call: Option<Duration>,
    origin: &str,
) -> Result<Option<Duration>, GatewayError> {
    match per_call {
        Some(d) if d.is_zero() => Err(GatewayError::invalid_argument(
            origin,
            "call deadline must be > 0 (omit it to inherit the client's deadline)",
        )),
        Some(d) => Ok(Some(d)),
        None => Ok(assembled),
    }
}

/// The instant `deadline` after `now`, or `None` when that instant cannot be represented (e.g.
/// `Duration::MAX`, or 1e19 s from the settings). Unrepresentable means "no end instant": the
/// call then has no deadline within the life of the process (the boundary timer of
/// [`with_deadline`] saturates the same way), and never panics (issue 22; docs/decisions.md).
pub fn deadline_instant(
    now: tokio::time::Instant,
    deadline: Duration,
) -> Option<tokio::time::Instant> {
    now.checked_add(deadline)
}

/// The boundary timer fired while the governed future was pending. The
/// governed future has been dropped (its guards handed their cleanup to the queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDeadlineExceeded {
    /// The deadline that expired.
    pub deadline: Duration,
}

impl CallDeadlineExceeded {
    /// The caller-facing error: `CallDeadlineExceeded { scope, deadline_s }`.
    pub fn into_error(self, scope: &str) -> GatewayError {
        GatewayError::call_deadline_exceeded(scope, self.deadline.as_secs_f64())
    }
}

/// Runs `governed` under `deadline`: `None` awaits it plainly (no timer);
/// `Some(d)` races it against a runtime timer started at the first poll. The governed future
/// is polled before the timer, so a result ready in the poll where the timer elapses wins.
/// On expiry the governed future is dropped before this returns.
pub async fn with_deadline<F: Future>(
    deadline: Option<Duration>,
    governed: F,
) -> Result<F::Output, CallDeadlineExceeded> {
    match deadline {
        None => Ok(governed.await),
        Some(d) => tokio::time::timeout(d, governed)
            .await
            .map_err(|_| CallDeadlineExceeded { deadline: d }),
    }
}
