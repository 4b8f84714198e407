//! The stall window of one retry loop and the dual-condition death rule (30 §5.4,
//! G-52..G-55).
//!
//! Owns [`StallClock`]: one per loop, reading the injected clock. It accounts **non-productive
//! waiting only** — backoff sleeps, quota/breaker/pacer naps, and the durations of rate-limited
//! rounds refunded by G-53: `local_wait = (now − loop_start) − Σ durations of non-refunded
//! rounds`. A round that was not refunded is productive and never counts, so one attempt that
//! uses its whole `timeout_s` cannot eat the stall budget (issue #8). The death rule needs both
//! conditions: this loop waited longer than the window **and** nobody in the scope made
//! progress for longer than the window.

use std::sync::Arc;
use std::time::Duration;

use gateway_ports::Clock;

/// The stall account of one loop.
#[derive(Clone)]
pub struct StallClock {
    clock: Arc<dyn Clock>,
    loop_start: Duration,
    productive: Duration,
}

impl std::fmt::Debug for StallClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StallClock")
            .field("loop_start", &self.loop_start)
            .field("productive", &self.productive)
            .finish_non_exhaustive()
    }
}

/// A round in progress, from [`StallClock::round_started`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundMark {
    started: Duration,
}

impl StallClock {
    /// Starts the account now.
    pub fn start(clock: Arc<dyn Clock>) -> Self {
        let loop_start = clock.monotonic();
        Self {
            clock,
            loop_start,
            productive: Duration::ZERO,
        }
    }

    /// Marks the start of a round.
    pub fn round_started(&self) -> RoundMark {
        RoundMark {
            started: self.clock.monotonic(),
        }
    }

    /// Ends a round: a round that is not refunded is productive and is
    /// subtracted from the waiting account; a refunded (rate-limited, chat) round stays in it.
    /// Returns the round's duration.
    pub fn round_ended(&mut self, mark: RoundMark, refund: bool) -> Duration {
        let d = self.clock.monotonic().saturating_sub(mark.started);
        if !refund {
            self.productive = self.productive.saturating_add(d);
        }
        d
    }

    /// Non-productive waiting of this loop so far.
    pub fn local_wait(&self) -> Duration {
        self.clock
            .monotonic()
            .saturating_sub(self.loop_start)
            .saturating_sub(self.productive)
    }

    /// The death rule: `local_wait > window` **and** `progress_age > window`.
    pub fn is_dead(&self, stall_window_s: f64, progress_age_s: f64) -> bool {
        is_stalled(
            self.local_wait().as_secs_f64(),
            progress_age_s,
            stall_window_s,
        )
    }
}

/// The dual condition of 30 G-55 on plain seconds: both strictly greater than the window.
pub fn is_stalled(local_wait_s: f64, progress_age_s: f64, stall_window_s: f64) -> bool {
    local_wait_s > stall_window_s && progress_age_s > stall_window_s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn g_52_productive_round_is_not_waiting() {
        let clock = Arc::new(FakeClock::new());
        let mut stall = StallClock::start(clock.clone());
        let mark = stall.round_started();
        clock.advance(Duration::from_secs(120));
        stall.round_ended(mark, false);
        assert_eq!(stall.local_wait(), Duration::ZERO);
        clock.advance(Duration::from_secs(2));
        assert_eq!(stall.local_wait(), Duration::from_secs(2));
    }

    #[test]
    fn g_53_refunded_round_counts_as_waiting() {
        let clock = Arc::new(FakeClock::new());
        let mut stall = StallClock::start(clock.clone());
        let mark = stall.round_started();
        clock.advance(Duration::from_secs(5));
        stall.round_ended(mark, true);
        assert_eq!(stall.local_wait(), Duration::from_secs(5));
    }

    #[test]
    fn g_55_death_needs_both_conditions() {
        assert!(!is_stalled(301.0, 10.0, 300.0));
        assert!(!is_stalled(10.0, 301.0, 300.0));
        assert!(!is_stalled(300.0, 301.0, 300.0));
        assert!(is_stalled(300.5, 300.5, 300.0));
    }
}
