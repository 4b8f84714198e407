//! The limiter's state behind its one mutex ([`State`]): the per-source and global scopes, the
//! six gates, the reserve-then-settle TPM arithmetic and the permit leases.
//!
//! A scope with an RPM or TPM limit keeps exact per-permit entries in the sliding window (its
//! gates and wait hints read them). A scope with neither counts its usage in time buckets
//! ([`Ring`]) instead, so the per-permit record ([`Rec`]) of a permit whose source and global
//! scope are both of that kind lives only while the permit holds its concurrency slots.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use gateway_ports::LimitGate;
use rustc_hash::FxHashMap;

use super::buckets::{Ring, tick_of};

/// Length of the RPM/TPM sliding window.
pub const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    pub(super) max_concurrency: u32,
    pub(super) rpm: u32,
    pub(super) tpm: u64,
}

impl Limits {
    /// The window mode these limits call for: exact entries if a gate reads the window,
    /// buckets otherwise.
    pub(super) fn ring(self) -> Option<Ring> {
        (self.rpm == 0 && self.tpm == 0).then(Ring::default)
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Usage {
    pub(super) inflight: u32,
    pub(super) rpm_used: u32,
    pub(super) tpm_used: u64,
}

/// One source's limits, usage and window.
#[derive(Debug)]
pub(super) struct SourceScope {
    pub(super) name: Arc<str>,
    pub(super) limits: Limits,
    pub(super) usage: Usage,
    /// Exact mode: permit ids in grant order whose entry is still in the window.
    pub(super) window: VecDeque<u64>,
    /// Bucket mode (no RPM and no TPM limit): `usage.rpm_used`/`tpm_used` come from here and
    /// `window` stays empty.
    pub(super) ring: Option<Ring>,
}

/// What a permit knows of its grant, so settle and release work after its record is gone.
#[derive(Debug, Clone, Copy)]
pub(super) struct Grant {
    pub(super) id: u64,
    pub(super) source: usize,
    pub(super) est: u64,
    /// The bucket tick the grant was counted in by the bucket-mode scopes.
    pub(super) tick: u64,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Rec {
    pub(super) source: usize,
    /// Tokens the entry currently charges (est until settled).
    pub(super) tokens: u64,
    pub(super) granted_at: Duration,
    /// In the exact window of its source or of the global scope.
    pub(super) in_window: bool,
    pub(super) holds_slot: bool,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) sources: Vec<SourceScope>,
    pub(super) global_limits: Limits,
    pub(super) global: Usage,
    /// Bucket mode of the global scope (see [`SourceScope::ring`]).
    pub(super) global_ring: Option<Ring>,
    /// Permit ids in grant order whose entry is in an exact window (every permit when the
    /// global scope is exact): drives the age-out.
    pub(super) window: VecDeque<u64>,
    /// Permit ids in grant order that may still hold a slot (lazily cleaned).
    pub(super) leases: VecDeque<u64>,
    pub(super) recs: FxHashMap<u64, Rec>,
    pub(super) next_id: u64,
    pub(super) last_progress: Duration,
    pub(super) closed: bool,
}

impl State {
    pub(super) fn forget_if_done(&mut self, id: u64) {
        if self
            .recs
            .get(&id)
            .is_some_and(|r| !r.in_window && !r.holds_slot)
        {
            self.recs.remove(&id);
        }
    }

    /// Ages entries out of the window and reclaims expired leases.
    pub(super) fn maintain(&mut self, now: Duration, lease_ttl: Duration) -> bool {
        while let Some(&id) = self.window.front() {
            let Some(r) = self.recs.get(&id).copied() else {
                self.window.pop_front();
                continue;
            };
            if now.saturating_sub(r.granted_at) < WINDOW {
                break;
            }
            self.window.pop_front();
            let age_out = |u: &mut Usage| {
                u.rpm_used = u.rpm_used.saturating_sub(1);
                u.tpm_used = u.tpm_used.saturating_sub(r.tokens);
            };
            if let Some(b) = self.sources.get_mut(r.source)
                && b.ring.is_none()
            {
                if b.window.front() == Some(&id) {
                    b.window.pop_front();
                } else {
                    b.window.retain(|x| *x != id);
                }
                age_out(&mut b.usage);
            }
            if self.global_ring.is_none() {
                age_out(&mut self.global);
            }
            if let Some(rm) = self.recs.get_mut(&id) {
                rm.in_window = false;
            }
            self.forget_if_done(id);
        }
        if let Some(ring) = &mut self.global_ring {
            ring.advance(tick_of(now), &mut self.global);
        }
        let mut reclaimed = false;
        while let Some(&id) = self.leases.front() {
            let Some(r) = self.recs.get(&id).copied() else {
                self.leases.pop_front();
                continue;
            };
            if !r.holds_slot {
                self.leases.pop_front();
                continue;
            }
            if now.saturating_sub(r.granted_at) < lease_ttl {
                break;
            }
            self.leases.pop_front();
            self.free_slot(id);
            reclaimed = true;
        }
        reclaimed
    }

    pub(super) fn free_slot(&mut self, id: u64) -> bool {
        let Some(r) = self.recs.get_mut(&id) else {
            return false;
        };
        if !r.holds_slot {
            return false;
        }
        r.holds_slot = false;
        let source = r.source;
        if let Some(b) = self.sources.get_mut(source) {
            b.usage.inflight = b.usage.inflight.saturating_sub(1);
        }
        self.global.inflight = self.global.inflight.saturating_sub(1);
        self.forget_if_done(id);
        true
    }

    /// Applies `actual − est` to the grant's entry in every scope where it still counts (the
    /// caller ensures once per permit, never after release); `true` if tokens were refunded
    /// (capacity freed).
    pub(super) fn settle(&mut self, g: Grant, actual: u64, now: Duration) -> bool {
        // The entry holds est until settled, so est + (actual − est) is `actual` (never below
        // zero, 30 G-74).
        let new_tokens = actual;
        let old_tokens = g.est;
        let mut in_window = false;
        if let Some(r) = self.recs.get_mut(&g.id) {
            r.tokens = new_tokens;
            in_window = r.in_window;
        }
        let tick = tick_of(now);
        let apply = |u: &mut Usage, ring: Option<&mut Ring>| match ring {
            Some(ring) => ring.adjust(g.tick, old_tokens, new_tokens, tick, u),
            None if in_window => {
                u.tpm_used = u
                    .tpm_used
                    .saturating_sub(old_tokens)
                    .saturating_add(new_tokens);
                true
            }
            None => false,
        };
        let mut applied = false;
        if let Some(b) = self.sources.get_mut(g.source) {
            applied |= apply(&mut b.usage, b.ring.as_mut());
        }
        applied |= apply(&mut self.global, self.global_ring.as_mut());
        applied && new_tokens < old_tokens
    }

    /// Frees the permit's slots if it still holds them (the caller ensures once per permit).
    pub(super) fn release(&mut self, id: u64) -> bool {
        let freed = self.free_slot(id);
        self.compact_leases();
        freed
    }

    /// Drops released ids from the lease queue once they outnumber the holders, so one
    /// long-held permit does not keep the ids of every later grant: amortised O(1) per release,
    /// and the queue stays within twice the permits in flight (plus a small floor).
    fn compact_leases(&mut self) {
        const FLOOR: usize = 64;
        let holders = usize::try_from(self.global.inflight).unwrap_or(usize::MAX);
        if self.leases.len() > FLOOR && self.leases.len() / 2 > holders {
            let recs = &self.recs;
            self.leases
                .retain(|id| recs.get(id).is_some_and(|r| r.holds_slot));
        }
    }

    /// Usage of source `idx` at `now` (bucket-mode counts advanced first).
    pub(super) fn source_usage(&mut self, idx: usize, now: Duration) -> Usage {
        let Some(b) = self.sources.get_mut(idx) else {
            return Usage::default();
        };
        if let Some(ring) = &mut b.ring {
            ring.advance(tick_of(now), &mut b.usage);
        }
        b.usage
    }

    /// Seconds until enough of `window` ages out for one more request (`rpm`) or for `need`
    /// more tokens to fit under `limit` (`tpm`).
    pub(super) fn hint_rpm(
        &self,
        window: &VecDeque<u64>,
        used: u32,
        limit: u32,
        now: Duration,
    ) -> Option<f64> {
        let must_free = (used + 1).saturating_sub(limit) as usize;
        let id = window.get(must_free.checked_sub(1)?)?;
        self.age_out_s(*id, now)
    }

    pub(super) fn hint_tpm(
        &self,
        window: &VecDeque<u64>,
        used: u64,
        limit: u64,
        est: u64,
        now: Duration,
    ) -> Option<f64> {
        if est > limit {
            return None;
        }
        let mut remaining = used.saturating_add(est);
        for id in window {
            let r = self.recs.get(id)?;
            remaining = remaining.saturating_sub(r.tokens);
            if remaining <= limit {
                return self.age_out_s(*id, now);
            }
        }
        None
    }

    pub(super) fn age_out_s(&self, id: u64, now: Duration) -> Option<f64> {
        let r = self.recs.get(&id)?;
        Some((r.granted_at + WINDOW).saturating_sub(now).as_secs_f64())
    }

    pub(super) fn check(
        &self,
        idx: usize,
        est: u64,
        now: Duration,
    ) -> Option<(LimitGate, Option<f64>)> {
        let b = self.sources.get(idx)?;
        let (l, u) = (b.limits, b.usage);
        if l.max_concurrency > 0 && u.inflight >= l.max_concurrency {
            return Some((LimitGate::SourceConcurrency, None));
        }
        if l.rpm > 0 && u.rpm_used >= l.rpm {
            return Some((
                LimitGate::SourceRpm,
                self.hint_rpm(&b.window, u.rpm_used, l.rpm, now),
            ));
        }
        if l.tpm > 0 && u.tpm_used.saturating_add(est) > l.tpm {
            return Some((
                LimitGate::SourceTpm,
                self.hint_tpm(&b.window, u.tpm_used, l.tpm, est, now),
            ));
        }
        let (l, u) = (self.global_limits, self.global);
        if l.max_concurrency > 0 && u.inflight >= l.max_concurrency {
            return Some((LimitGate::GlobalConcurrency, None));
        }
        if l.rpm > 0 && u.rpm_used >= l.rpm {
            return Some((
                LimitGate::GlobalRpm,
                self.hint_rpm(&self.window, u.rpm_used, l.rpm, now),
            ));
        }
        if l.tpm > 0 && u.tpm_used.saturating_add(est) > l.tpm {
            return Some((
                LimitGate::GlobalTpm,
                self.hint_tpm(&self.window, u.tpm_used, l.tpm, est, now),
            ));
        }
        None
    }

    /// Takes the six gates' shares for a permit of `est` tokens on source `idx` at `now`.
    pub(super) fn grant(&mut self, idx: usize, est: u64, now: Duration) -> Grant {
        let id = self.next_id;
        self.next_id += 1;
        let tick = tick_of(now);
        let mut g = Grant {
            id,
            source: idx,
            est,
            tick,
        };
        // One scope's share; an exact scope also queues the id in its window (`None`).
        let take = |u: &mut Usage, ring: Option<&mut Ring>| {
            u.inflight = u.inflight.saturating_add(1);
            match ring {
                Some(ring) => Some(ring.add(tick, est, u)),
                None => {
                    u.rpm_used = u.rpm_used.saturating_add(1);
                    u.tpm_used = u.tpm_used.saturating_add(est);
                    None
                }
            }
        };
        let mut in_window = false;
        if let Some(b) = self.sources.get_mut(idx) {
            match take(&mut b.usage, b.ring.as_mut()) {
                Some(t) => g.tick = t,
                None => {
                    b.window.push_back(id);
                    in_window = true;
                }
            }
        }
        match take(&mut self.global, self.global_ring.as_mut()) {
            Some(t) => g.tick = t,
            None => in_window = true,
        }
        self.recs.insert(
            id,
            Rec {
                source: idx,
                tokens: est,
                granted_at: now,
                in_window,
                holds_slot: true,
            },
        );
        if in_window {
            self.window.push_back(id);
        }
        self.leases.push_back(id);
        g
    }
}
