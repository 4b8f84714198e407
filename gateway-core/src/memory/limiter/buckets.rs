//! Fixed time buckets ([`Ring`]) for the RPM/TPM usage of a scope that has no RPM and no TPM
//! limit.
//!
//! Such a scope only reports its usage (stats, snapshots); no gate ever reads it. Keeping one
//! exact entry per permit for 60 s would make the limiter's memory grow with the call rate, so
//! the scope counts grants and tokens in `SLOTS` buckets of `TICK` (100 ms) each, a ring covering
//! the 60 s window: memory is one fixed array per scope, whatever the rate. A bucket leaves the
//! window when the tick `SLOTS` after its own begins, so a grant stops counting between
//! 59.9 s and 60 s after it was made (exactly at 60 s when granted on a tick boundary): the
//! counts can be lower than the exact ones by the grants of at most one bucket, never higher.
//!
//! Settle adjusts the bucket its grant was counted in (the permit keeps the tick); a settle
//! after that bucket left the window changes nothing, like a settle of an exact entry that aged
//! out.

use std::time::Duration;

use super::state::{Usage, WINDOW};

/// Width of one bucket.
pub(super) const TICK: Duration = Duration::from_millis(100);

/// Number of buckets: `WINDOW / TICK` (600).
pub(super) const SLOTS: u64 = (WINDOW.as_millis() / TICK.as_millis()) as u64;

/// The bucket index of `now` (time since the clock's origin, in `TICK`s).
pub(super) fn tick_of(now: Duration) -> u64 {
    u64::try_from(now.as_nanos() / TICK.as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    rpm: u32,
    tpm: u64,
}

/// The buckets of one scope; the scope's running totals stay in its [`Usage`], which every
/// method here keeps equal to the sum of the live buckets.
#[derive(Debug, Default)]
pub(super) struct Ring {
    /// `SLOTS` buckets once the scope saw its first grant (empty before: an idle source costs
    /// nothing). Tick `t` lives at `t % SLOTS`.
    slots: Vec<Slot>,
    /// The newest tick the ring was advanced to; the live ticks are `(head − SLOTS, head]`.
    head: u64,
}

impl Ring {
    /// Moves the ring to `tick`, subtracting from `usage` every bucket that left the window.
    /// At most `SLOTS` buckets are visited, however long the ring was idle; a tick older than
    /// the head changes nothing.
    pub(super) fn advance(&mut self, tick: u64, usage: &mut Usage) {
        if tick <= self.head {
            return;
        }
        if !self.slots.is_empty() {
            let steps = (tick - self.head).min(SLOTS);
            for t in (tick - steps + 1)..=tick {
                if let Some(s) = self.slots.get_mut(slot_index(t)) {
                    usage.rpm_used = usage.rpm_used.saturating_sub(s.rpm);
                    usage.tpm_used = usage.tpm_used.saturating_sub(s.tpm);
                    *s = Slot::default();
                }
            }
        }
        self.head = tick;
    }

    /// Counts one grant of `tokens` at `tick` (in `usage` too) and returns the tick it was
    /// counted in: `tick`, or the head if `tick` is older (a clock never goes back; this keeps
    /// the count in a live bucket anyway).
    pub(super) fn add(&mut self, tick: u64, tokens: u64, usage: &mut Usage) -> u64 {
        self.advance(tick, usage);
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); SLOTS as usize];
        }
        let at = self.head;
        if let Some(s) = self.slots.get_mut(slot_index(at)) {
            s.rpm = s.rpm.saturating_add(1);
            s.tpm = s.tpm.saturating_add(tokens);
        }
        usage.rpm_used = usage.rpm_used.saturating_add(1);
        usage.tpm_used = usage.tpm_used.saturating_add(tokens);
        at
    }

    /// Replaces `old` tokens counted at `granted` by `new`, after advancing to `now`. Returns
    /// `false` (nothing changed) when that bucket already left the window; counts never go below
    /// zero.
    pub(super) fn adjust(
        &mut self,
        granted: u64,
        old: u64,
        new: u64,
        now: u64,
        usage: &mut Usage,
    ) -> bool {
        self.advance(now, usage);
        if granted > self.head || self.head - granted >= SLOTS {
            return false;
        }
        let Some(s) = self.slots.get_mut(slot_index(granted)) else {
            return false;
        };
        s.tpm = s.tpm.saturating_sub(old).saturating_add(new);
        usage.tpm_used = usage.tpm_used.saturating_sub(old).saturating_add(new);
        true
    }

    /// Number of buckets allocated: 0 before the first grant, `SLOTS` after (for tests).
    #[cfg(test)]
    pub(super) fn allocated(&self) -> usize {
        self.slots.len()
    }
}

fn slot_index(tick: u64) -> usize {
    // `tick % SLOTS` < 600 always fits.
    usize::try_from(tick % SLOTS).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(r: &Ring) -> (u32, u64) {
        r.slots
            .iter()
            .fold((0, 0), |(a, b), s| (a + s.rpm, b + s.tpm))
    }

    fn at(ms: u64) -> u64 {
        tick_of(Duration::from_millis(ms))
    }

    #[test]
    fn geometry() {
        assert_eq!(SLOTS, 600);
        assert_eq!(at(0), 0);
        assert_eq!(at(99), 0);
        assert_eq!(at(100), 1);
        assert_eq!(at(60_000), 600);
        assert_eq!(tick_of(Duration::MAX), u64::MAX, "saturates");
    }

    #[test]
    fn empty_ring_allocates_nothing() {
        let mut r = Ring::default();
        let mut u = Usage::default();
        r.advance(1_000_000, &mut u);
        assert_eq!(r.allocated(), 0);
        assert!(!r.adjust(1_000_000, 5, 1, 1_000_000, &mut u));
        assert_eq!((u.rpm_used, u.tpm_used), (0, 0));
    }

    /// A bucket counts until the tick `SLOTS` after its own begins, then leaves at once.
    #[test]
    fn roll_over_expires_each_bucket_at_its_edge() {
        let mut r = Ring::default();
        let mut u = Usage::default();
        assert_eq!(r.add(at(0), 10, &mut u), 0);
        assert_eq!(r.add(at(50), 20, &mut u), 0);
        assert_eq!(r.add(at(150), 40, &mut u), 1);
        assert_eq!((u.rpm_used, u.tpm_used), (3, 70));
        r.advance(at(59_999), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (3, 70), "all live before 60 s");
        r.advance(at(60_000), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (1, 40), "tick 0 left at 60.0 s");
        r.advance(at(60_099), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (1, 40));
        r.advance(at(60_100), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (0, 0));
        assert_eq!(sum(&r), (0, 0));
    }

    /// A long idle gap clears every bucket in one bounded pass; the slot reused by a later tick
    /// starts from zero.
    #[test]
    fn idle_gap_and_slot_reuse() {
        let mut r = Ring::default();
        let mut u = Usage::default();
        for ms in (0..60_000).step_by(100) {
            r.add(at(ms), 1, &mut u);
        }
        assert_eq!((u.rpm_used, u.tpm_used), (600, 600));
        r.add(at(60_000), 7, &mut u); // reuses slot 0, tick 0 expired
        assert_eq!((u.rpm_used, u.tpm_used), (600, 606));
        r.advance(at(10_000_000_000), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (0, 0));
        assert_eq!(sum(&r), (0, 0));
        assert_eq!(r.allocated(), 600);
    }

    #[test]
    fn adjust_hits_the_grant_bucket_only_while_live() {
        let mut r = Ring::default();
        let mut u = Usage::default();
        let a = r.add(at(0), 400, &mut u);
        let b = r.add(at(30_000), 100, &mut u);
        assert!(r.adjust(a, 400, 50, at(30_000), &mut u));
        assert_eq!(u.tpm_used, 150);
        // After a's bucket left, a late settle changes nothing and b's bucket keeps its count.
        assert!(!r.adjust(a, 50, 9_999, at(60_000), &mut u));
        assert_eq!((u.rpm_used, u.tpm_used), (1, 100));
        assert!(r.adjust(b, 100, 0, at(60_000), &mut u));
        assert_eq!((u.rpm_used, u.tpm_used), (1, 0));
        // More refunded than the bucket holds: clamps at zero, no underflow.
        assert!(r.adjust(b, 1_000, 0, at(60_000), &mut u));
        assert_eq!((u.rpm_used, u.tpm_used, sum(&r).1), (1, 0, 0));
        // A tick from the future (never produced) is refused.
        assert!(!r.adjust(at(90_000), 0, 5, at(60_000), &mut u));
    }

    /// A tick older than the head (a clock going back) is counted in the head's bucket.
    #[test]
    fn stale_tick_counts_in_head() {
        let mut r = Ring::default();
        let mut u = Usage::default();
        r.add(at(5_000), 1, &mut u);
        assert_eq!(r.add(at(1_000), 2, &mut u), at(5_000));
        r.advance(at(65_000), &mut u);
        assert_eq!((u.rpm_used, u.tpm_used), (0, 0));
    }
}
