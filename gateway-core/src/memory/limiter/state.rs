//! The limiter's state behind its one mutex ([`State`]): the per-source and global buckets of
//! exact per-permit entries in the sliding window, the six gates, the reserve-then-settle TPM
//! arithmetic and the permit leases.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use gateway_ports::LimitGate;
use rustc_hash::FxHashMap;

/// Length of the RPM/TPM sliding window.
pub const WINDOW: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Limits {
    pub(super) max_concurrency: u32,
    pub(super) rpm: u32,
    pub(super) tpm: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Usage {
    pub(super) inflight: u32,
    pub(super) rpm_used: u32,
    pub(super) tpm_used: u64,
}

#[derive(Debug)]
pub(super) struct Bucket {
    pub(super) name: Arc<str>,
    pub(super) limits: Limits,
    pub(super) usage: Usage,
    /// Permit ids in grant order whose entry is still in the window.
    pub(super) window: VecDeque<u64>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Rec {
    pub(super) source: usize,
    pub(super) est: u64,
    /// Tokens the entry currently charges (est until settled).
    pub(super) tokens: u64,
    pub(super) granted_at: Duration,
    pub(super) in_window: bool,
    pub(super) holds_slot: bool,
    pub(super) settled: bool,
    pub(super) released: bool,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) sources: Vec<Bucket>,
    pub(super) global_limits: Limits,
    pub(super) global: Usage,
    /// All permit ids in grant order whose entry is still in the window.
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
            if let Some(b) = self.sources.get_mut(r.source) {
                if b.window.front() == Some(&id) {
                    b.window.pop_front();
                } else {
                    b.window.retain(|x| *x != id);
                }
                b.usage.rpm_used = b.usage.rpm_used.saturating_sub(1);
                b.usage.tpm_used = b.usage.tpm_used.saturating_sub(r.tokens);
            }
            self.global.rpm_used = self.global.rpm_used.saturating_sub(1);
            self.global.tpm_used = self.global.tpm_used.saturating_sub(r.tokens);
            if let Some(rm) = self.recs.get_mut(&id) {
                rm.in_window = false;
            }
            self.forget_if_done(id);
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

    /// Applies `actual − est` once; `true` if tokens were refunded (capacity freed).
    pub(super) fn settle(&mut self, id: u64, actual: u64) -> bool {
        let Some(r) = self.recs.get_mut(&id) else {
            return false;
        };
        if r.settled || r.released {
            return false;
        }
        r.settled = true;
        // tokens + (actual − est), never below zero (30 G-74).
        let new_tokens = (r.tokens.saturating_add(actual)).saturating_sub(r.est);
        let old_tokens = r.tokens;
        r.tokens = new_tokens;
        if !r.in_window {
            return false;
        }
        let source = r.source;
        let apply = |u: &mut Usage| {
            u.tpm_used = u
                .tpm_used
                .saturating_sub(old_tokens)
                .saturating_add(new_tokens);
        };
        if let Some(b) = self.sources.get_mut(source) {
            apply(&mut b.usage);
        }
        apply(&mut self.global);
        new_tokens < old_tokens
    }

    pub(super) fn release(&mut self, id: u64) -> bool {
        let Some(r) = self.recs.get_mut(&id) else {
            return false;
        };
        if r.released {
            return false;
        }
        r.released = true;
        self.free_slot(id)
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

    pub(super) fn grant(&mut self, idx: usize, est: u64, now: Duration) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.recs.insert(
            id,
            Rec {
                source: idx,
                est,
                tokens: est,
                granted_at: now,
                in_window: true,
                holds_slot: true,
                settled: false,
                released: false,
            },
        );
        let take = |u: &mut Usage| {
            u.inflight = u.inflight.saturating_add(1);
            u.rpm_used = u.rpm_used.saturating_add(1);
            u.tpm_used = u.tpm_used.saturating_add(est);
        };
        if let Some(b) = self.sources.get_mut(idx) {
            take(&mut b.usage);
            b.window.push_back(id);
        }
        take(&mut self.global);
        self.window.push_back(id);
        self.leases.push_back(id);
        id
    }
}
