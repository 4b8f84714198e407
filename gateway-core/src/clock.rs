//! Clock implementations of the `Clock` port.
//!
//! Owns the two clocks every reading of time goes through: [`TokioClock`] (production; reads
//! `tokio::time::Instant`, so a paused runtime advances it together with every timer) and
//! [`FakeClock`] (test support; `advance` moves only the readings and never fires a
//! `tokio::time` timer). Waiting always goes through `tokio::time`, never through these.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use gateway_ports::Clock;
use tokio::time::Instant;

/// The production clock: `monotonic()` is the time elapsed since construction on
/// `tokio::time::Instant`, so under `tokio::time::pause()` it advances with the runtime's timers;
/// `wall()` is `SystemTime::now()`.
///
/// Implements 10 §8.8, CT-CLK-01.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: Instant,
}

impl TokioClock {
    /// A clock whose monotonic origin is "now" on the tokio clock. Outside a paused runtime this
    /// is the real monotonic clock; it needs no runtime to be constructed or read.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn monotonic(&self) -> Duration {
        // `saturating_duration_since` never panics and never goes below zero (CT-CLK-01).
        Instant::now().saturating_duration_since(self.origin)
    }

    #[allow(
        clippy::disallowed_methods,
        reason = "the production clock is the one place the core reads the wall clock"
    )]
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A manually advanced clock for tests.
///
/// `monotonic()` starts at the given origin (default zero) and changes only through
/// [`FakeClock::advance`] / [`FakeClock::set_monotonic`]; `wall()` is a fixed wall origin plus
/// the same offset. Advancing it affects no `tokio::time` timer.
#[derive(Debug)]
pub struct FakeClock {
    state: Mutex<FakeState>,
}

#[derive(Debug, Clone, Copy)]
struct FakeState {
    monotonic: Duration,
    wall_origin: SystemTime,
}

impl FakeClock {
    /// A fake clock at monotonic zero with wall time `2025-01-01T00:00:00Z`.
    pub fn new() -> Self {
        // 1_735_689_600 s after the epoch is 2025-01-01T00:00:00Z.
        let wall_origin = SystemTime::UNIX_EPOCH + Duration::from_secs(1_735_689_600);
        Self::starting_at(Duration::ZERO, wall_origin)
    }

    /// A fake clock whose readings start at `monotonic` and `wall`.
    pub fn starting_at(monotonic: Duration, wall: SystemTime) -> Self {
        Self {
            state: Mutex::new(FakeState {
                monotonic,
                wall_origin: wall.checked_sub(monotonic).unwrap_or(wall),
            }),
        }
    }

    /// Moves both readings forward by exactly `d`. Saturates instead of overflowing.
    pub fn advance(&self, d: Duration) {
        let mut s = self.lock();
        s.monotonic = s.monotonic.saturating_add(d);
    }

    /// Moves the monotonic reading forward to `t`; an earlier `t` is ignored (never decreases,
    /// CT-CLK-01).
    pub fn set_monotonic(&self, t: Duration) {
        let mut s = self.lock();
        if t > s.monotonic {
            s.monotonic = t;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        // A poisoned lock only means another test thread panicked; the data is still a plain copy.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for FakeClock {
    fn monotonic(&self) -> Duration {
        self.lock().monotonic
    }

    fn wall(&self) -> SystemTime {
        let s = *self.lock();
        s.wall_origin
            .checked_add(s.monotonic)
            .unwrap_or(s.wall_origin)
    }
}
