//! The operator's view of failed calls on stderr: without it, a dead upstream shows only as
//! 503s to the clients and a counter in `/metrics`. One warning per scope and error type at
//! most every [`INTERVAL`], saying how many calls failed that way since the last line, so a
//! failing upstream at thousands of requests per second prints a line every few seconds, not
//! one per request.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use gateway_ports::GatewayError;
use tokio::time::Instant;

/// The shortest time between two lines of one scope and error type.
pub(super) const INTERVAL: Duration = Duration::from_secs(10);

/// A scope and an error type.
type Key = (String, &'static str);

/// When the last line of a key was written, and the failures since.
type Seen = (Option<Instant>, u64);

/// Per (scope, error type): when the last line was written and the failures since.
#[derive(Debug, Default)]
pub(super) struct FailureLog {
    seen: Mutex<HashMap<Key, Seen>>,
}

impl FailureLog {
    /// Counts one failed call of `scope`; writes a warning when this scope and error type had
    /// none in the last [`INTERVAL`]. The line carries the error's type, reason and message
    /// (the same text the client got; no key or token is ever in it).
    pub(super) fn failed(&self, scope: &str, error: &GatewayError) {
        self.failed_at(scope, error, Instant::now());
    }

    /// [`FailureLog::failed`] at `now`.
    fn failed_at(&self, scope: &str, error: &GatewayError, now: Instant) {
        let kind = error.type_name();
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = seen.entry((scope.to_owned(), kind)).or_insert((None, 0));
        entry.1 += 1;
        if entry.0.is_some_and(|at| now.duration_since(at) < INTERVAL) {
            return;
        }
        let count = std::mem::take(&mut entry.1);
        entry.0 = Some(now);
        drop(seen);
        tracing::warn!(
            code = "serve.call_failed",
            scope,
            error_type = kind,
            failed_calls = count,
            "scope {scope}: {count} call(s) failed with {kind} since the last such line: {error}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_counting_the_calls_between() {
        let log = FailureLog::default();
        let e = GatewayError::ClientClosed;
        let t0 = Instant::now();
        log.failed_at("llm", &e, t0);
        let key = ("llm".to_owned(), e.type_name());
        let count = |log: &FailureLog| {
            log.seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .map(|v| v.1)
        };
        assert_eq!(count(&log), Some(0), "the first failure is written at once");
        log.failed_at("llm", &e, t0 + Duration::from_secs(1));
        log.failed_at("llm", &e, t0 + Duration::from_secs(9));
        assert_eq!(count(&log), Some(2), "held back within the interval");
        log.failed_at("llm", &e, t0 + INTERVAL);
        assert_eq!(
            count(&log),
            Some(0),
            "written with the three since the last line"
        );
    }
}
