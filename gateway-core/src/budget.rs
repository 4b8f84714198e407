//! The scope's retry budget (05 R-35 `{SCOPE}__RETRY__BUDGET_RATIO`; 30 G-46 and G-48 as
//! superseded by it).
//!
//! Owns [`RetryBudget`]: retries plus hedges across **all calls of the scope** may not exceed
//! `ratio` × first attempts over a sliding 10 s window. The idea is tower's retry budget
//! (`tower::retry::budget`): every first attempt deposits, every retry or hedge withdraws one
//! unit; the window forgets old deposits and withdrawals. Unlike tower there is no per-second
//! floor (`min_per_sec`): R-35 states the ratio only, so a lone call with `ratio < 1` gets no
//! retry (reading chosen). Time is the injected [`Clock`] (monotonic), in ten 1-second buckets,
//! so tests drive it with `FakeClock` or tokio's paused clock; no timer, no task.
//!
//! Who charges it: the retry loop deposits at a loop's first round and withdraws before every
//! further round (budget-exempt 429 rounds and `SourceDead` switches included, 30 G-46 note);
//! the hedge orchestrator withdraws before dispatching a hedge leg and skips the hedge when
//! refused. A refused retry ends the call as `AllSourcesExhausted { retry_exhausted }` with the
//! last failure as `last_failure` (30 G-48 note).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_ports::Clock;

/// Length of the budget window (10 s).
pub const RETRY_BUDGET_WINDOW: Duration = Duration::from_secs(10);

const SLOTS: usize = 10;

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    second: u64,
    deposits: u64,
    withdrawals: u64,
}

/// Deposits and withdrawals currently inside the window (introspection, tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RetryBudgetStats {
    /// First attempts deposited in the last 10 s.
    pub first_attempts: u64,
    /// Retries and hedges withdrawn in the last 10 s.
    pub withdrawals: u64,
}

/// The scope-wide retry budget. Shared by every call of a governor (`Arc`); all
/// methods are synchronous and take one short mutex (never held across an await).
pub struct RetryBudget {
    ratio: f64,
    clock: Arc<dyn Clock>,
    slots: Mutex<[Slot; SLOTS]>,
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("ratio", &self.ratio)
            .field("window", &self.stats())
            .finish_non_exhaustive()
    }
}

impl RetryBudget {
    /// A budget allowing `ratio` retries+hedges per first attempt over 10 s on `clock`.
    /// A NaN or negative ratio allows no retry; `+inf` allows every retry (the configuration
    /// layer validates the value; this never panics).
    pub fn new(ratio: f64, clock: Arc<dyn Clock>) -> Self {
        let ratio = if ratio.is_nan() || ratio < 0.0 {
            0.0
        } else {
            ratio
        };
        Self {
            ratio,
            clock,
            slots: Mutex::new([Slot::default(); SLOTS]),
        }
    }

    /// The ratio in force.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    fn with_window<R>(&self, f: impl FnOnce(&mut Slot, RetryBudgetStats) -> R) -> R {
        let now = self.clock.monotonic().as_secs();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sum = RetryBudgetStats::default();
        for s in slots.iter() {
            if s.second <= now && now - s.second < SLOTS as u64 {
                sum.first_attempts += s.deposits;
                sum.withdrawals += s.withdrawals;
            }
        }
        let idx = usize::try_from(now % SLOTS as u64).unwrap_or(0);
        let cur = &mut slots[idx];
        if cur.second != now {
            // The bucket last held second `now - 10k` (k ≥ 1): outside the window, not summed.
            *cur = Slot {
                second: now,
                ..Slot::default()
            };
        }
        f(cur, sum)
    }

    /// Records one first attempt (a loop's first round).
    pub fn deposit_first_attempt(&self) {
        self.with_window(|cur, _| cur.deposits = cur.deposits.saturating_add(1));
    }

    /// Takes one unit for a retry or a hedge leg: `true` (and recorded) when
    /// `withdrawals + 1 ≤ ratio × first_attempts` over the window, else `false` and nothing
    /// recorded.
    pub fn try_withdraw(&self) -> bool {
        let ratio = self.ratio;
        self.with_window(|cur, sum| {
            let allowed = ratio.is_infinite()
                || (sum.withdrawals.saturating_add(1) as f64) <= ratio * sum.first_attempts as f64;
            if allowed {
                cur.withdrawals = cur.withdrawals.saturating_add(1);
            }
            allowed
        })
    }

    /// Deposits and withdrawals inside the window now.
    pub fn stats(&self) -> RetryBudgetStats {
        self.with_window(|_, sum| sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[test]
    fn r_35_ratio_bounds_withdrawals_and_window_forgets() {
        let clock = Arc::new(FakeClock::new());
        let b = RetryBudget::new(0.5, clock.clone());
        assert!(!b.try_withdraw(), "no first attempt yet");
        b.deposit_first_attempt();
        assert!(!b.try_withdraw(), "1 > 0.5 × 1");
        b.deposit_first_attempt();
        assert!(b.try_withdraw(), "1 ≤ 0.5 × 2");
        assert!(!b.try_withdraw(), "2 > 0.5 × 2");
        clock.advance(Duration::from_secs(9));
        b.deposit_first_attempt();
        b.deposit_first_attempt();
        assert!(b.try_withdraw(), "2 ≤ 0.5 × 4");
        assert_eq!(
            b.stats(),
            RetryBudgetStats {
                first_attempts: 4,
                withdrawals: 2
            }
        );
        clock.advance(Duration::from_secs(1));
        // The first second fell out of the window: 2 deposits, 1 withdrawal remain.
        assert_eq!(
            b.stats(),
            RetryBudgetStats {
                first_attempts: 2,
                withdrawals: 1
            }
        );
        assert!(!b.try_withdraw(), "2 > 0.5 × 2");
        clock.advance(Duration::from_secs(30));
        assert_eq!(b.stats(), RetryBudgetStats::default());
    }

    #[test]
    fn r_35_degenerate_ratios_never_panic() {
        let clock: Arc<dyn Clock> = Arc::new(FakeClock::new());
        let nan = RetryBudget::new(f64::NAN, clock.clone());
        nan.deposit_first_attempt();
        assert!(!nan.try_withdraw());
        let inf = RetryBudget::new(f64::INFINITY, clock);
        assert!(inf.try_withdraw());
    }
}
