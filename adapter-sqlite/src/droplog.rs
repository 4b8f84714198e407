//! The dropped-row log (issue 21): every dropped row is counted at once in
//! `dropped_rows`, and the log shows them at most once per interval (default 10 s) as one line
//! with the count, instead of one line per row or per power of two.
//!
//! The first drop after a quiet interval is logged at once (count 1, or the batch it came in);
//! later drops inside the interval are summed and logged by the first drop or writer pass after
//! the interval ends, and by the writer's exit. The clock is a parameter, so the window logic is
//! tested with made-up instants and never sleeps.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

/// What one log line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Report {
    /// Rows dropped since the previous line.
    pub(crate) rows: u64,
    /// The reason of the latest of them.
    pub(crate) why: &'static str,
}

#[derive(Debug, Default)]
struct State {
    /// When the last line was logged (`None`: never).
    logged_at: Option<Instant>,
    /// Rows dropped since then.
    pending: u64,
    why: &'static str,
}

/// One per recorder, shared by the call path (`record` refusals) and the writer.
#[derive(Debug)]
pub(crate) struct DropLog {
    interval: Duration,
    state: Mutex<State>,
}

impl DropLog {
    /// A log that writes at most one line per `interval`.
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(st: &mut State, now: Instant) -> Report {
        let report = Report {
            rows: st.pending,
            why: st.why,
        };
        st.pending = 0;
        st.logged_at = Some(now);
        report
    }

    fn due(&self, st: &State, now: Instant) -> bool {
        st.logged_at
            .is_none_or(|at| now.saturating_duration_since(at) >= self.interval)
    }

    /// Counts `rows` dropped at `now` for `why`; returns the line to log now, if one is due.
    pub(crate) fn on_drop(&self, now: Instant, rows: u64, why: &'static str) -> Option<Report> {
        if rows == 0 {
            return None;
        }
        let mut st = self.lock();
        st.pending += rows;
        st.why = why;
        self.due(&st, now).then(|| Self::take(&mut st, now))
    }

    /// The writer's periodic check: the line for rows still unreported once the interval since
    /// the last line has passed.
    pub(crate) fn tick(&self, now: Instant) -> Option<Report> {
        let mut st = self.lock();
        (st.pending > 0 && self.due(&st, now)).then(|| Self::take(&mut st, now))
    }

    /// Rows not reported yet exist (the writer then wakes by the end of the interval).
    pub(crate) fn pending(&self) -> bool {
        self.lock().pending > 0
    }

    /// The interval.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// The writer exits: whatever is unreported, regardless of the interval.
    pub(crate) fn finish(&self, now: Instant) -> Option<Report> {
        let mut st = self.lock();
        (st.pending > 0).then(|| Self::take(&mut st, now))
    }
}

/// Logs one report (`total`: `dropped_rows` so far).
pub(crate) fn log(report: Report, total: u64) {
    tracing::warn!(
        code = "telemetry.row_dropped",
        rows = report.rows,
        dropped_rows = total,
        "SQLite telemetry: {} row(s) dropped since the last report, latest because: {}; \
         {total} in all (degraded, not propagated)",
        report.rows,
        report.why
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN: Duration = Duration::from_secs(10);

    /// Issue 21: drops inside one interval make one line; the first drop is logged at
    /// once; the sum of the lines is every dropped row. Made-up instants, no sleep.
    #[test]
    fn t_50_drops_logged_once_per_interval_with_the_count() {
        let log = DropLog::new(TEN);
        let t0 = Instant::now();
        let mut lines = Vec::new();
        lines.extend(log.on_drop(t0, 1, "queue full"));
        for ms in 1..=9_999 {
            lines.extend(log.on_drop(t0 + Duration::from_millis(ms), 1, "queue full"));
        }
        assert_eq!(
            lines,
            vec![Report {
                rows: 1,
                why: "queue full"
            }]
        );
        assert!(log.tick(t0 + Duration::from_millis(9_999)).is_none());
        // the interval ends: the writer's pass reports the 9 999 summed rows
        let at = t0 + TEN;
        assert_eq!(
            log.tick(at),
            Some(Report {
                rows: 9_999,
                why: "queue full"
            })
        );
        assert!(log.tick(at + TEN).is_none(), "nothing pending");
        // a drop after a quiet interval is logged at once
        assert_eq!(
            log.on_drop(at + TEN + TEN, 3, "writer stopped"),
            Some(Report {
                rows: 3,
                why: "writer stopped"
            })
        );
        assert!(log.on_drop(at + TEN + TEN, 2, "queue full").is_none());
        assert!(log.pending());
        assert_eq!(
            log.finish(at + TEN + TEN),
            Some(Report {
                rows: 2,
                why: "queue full"
            })
        );
        assert!(log.finish(at + TEN + TEN).is_none());
    }

    /// A later drop, not only the writer, ends the window.
    #[test]
    fn t_50_a_drop_after_the_interval_reports_the_window() {
        let log = DropLog::new(TEN);
        let t0 = Instant::now();
        assert!(log.on_drop(t0, 1, "queue full").is_some());
        assert!(
            log.on_drop(t0 + Duration::from_secs(5), 4, "queue full")
                .is_none()
        );
        assert_eq!(
            log.on_drop(t0 + Duration::from_secs(11), 1, "queue full"),
            Some(Report {
                rows: 5,
                why: "queue full"
            })
        );
    }
}
