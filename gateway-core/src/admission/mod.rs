//! Admission: `pick` a runnable source (05 R-11,
//!
//!
//! Owns the per-candidate pipeline — exclusion → cooldown memo → **breaker gate** → pacer →
//! **quota gate** — and its bookkeeping (`reasons`, rejection counts, hints), the cooldown memo
//! ([`CooldownMemo`]), the dispatch of "nothing runnable" to the `QUOTA_FULL` / `CIRCUIT_OPEN`
//! policies with the G-12 hints, the bounded set of waiting callers (`MAX_WAITERS`) and
//! the nap that ends early on a release/leave `Notify` (`poll_interval_s` is only its
//! upper bound).
//!
//! No leak on any path: every acquisition lives in an [`AttemptGuard`] from the
//! moment it is granted; a later rejection releases it in G-59 order (probe → pacer → settle 0)
//! and a drop (cancellation, panic) does the same through the guard.
//!
//! Files: this one (the policy, the waiters and the pipeline of [`Admission`]), `memo` (the
//! cooldown memo), `outcome` (what a pass yields).

mod memo;
mod outcome;

pub use memo::CooldownMemo;
pub use outcome::{
    Admitted, GOVERNANCE_BACKEND_RETRY_AFTER_S, NoRunnable, Pick, Rejections, backend_error,
};

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gateway_ports::{
    Acquire, CircuitBreaker, Clock, FailureReason, GatewayError, RateLimiter, ScopeReason,
    SourceConfig, Unavailable, WaitPolicy,
};
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use crate::backoff::seconds_to_duration_saturating;
use crate::call_context::new_uuid_v4;
use crate::cleanup::{AttemptGuard, CleanupQueue};
use crate::pacer::Pacer;
use crate::select::{Selector, SourceId, SourceLoad, StatsView};

/// Default bound on callers waiting under a `wait` policy.
pub const DEFAULT_MAX_WAITERS: usize = 10_000;

/// The nothing-runnable policies and their knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AdmissionPolicy {
    /// `{SCOPE}__QUOTA_FULL` (default `wait`).
    pub quota_full: WaitPolicy,
    /// `{SCOPE}__CIRCUIT_OPEN` (default `fail_fast`).
    pub circuit_open: WaitPolicy,
    /// Upper bound of one nap in seconds (default 0.25).
    pub poll_interval_s: f64,
    /// The breaker's first-open cooldown in seconds: `CircuitOpen.retry_after_s` when no
    /// rejected source reported a remaining cooldown.
    pub breaker_cooldown_s: f64,
    /// `{SCOPE}__MAX_WAITERS` (default 10 000).
    pub max_waiters: usize,
    /// `{SCOPE}__GLOBAL__TPM` (0 = no global token gate): a source whose token estimate is
    /// above it can never be admitted (issue 22).
    pub global_tpm: u64,
}

impl Default for AdmissionPolicy {
    fn default() -> Self {
        Self {
            quota_full: WaitPolicy::Wait,
            circuit_open: WaitPolicy::FailFast,
            poll_interval_s: 0.25,
            breaker_cooldown_s: 60.0,
            max_waiters: DEFAULT_MAX_WAITERS,
            global_tpm: 0,
        }
    }
}

/// A held place among the waiting callers; released on drop.
#[derive(Debug)]
pub struct WaiterSlot {
    waiters: Arc<AtomicUsize>,
}

impl Drop for WaiterSlot {
    fn drop(&mut self) {
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Armed wakeup futures created before a pick, so a release between the pick and the nap is
/// not missed.
pub struct Wakeups {
    futs: Vec<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl fmt::Debug for Wakeups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wakeups")
            .field("armed", &self.futs.len())
            .finish()
    }
}

/// The admission of one scope (shared by all calls of a client).
pub struct Admission {
    scope: String,
    sources: Vec<Arc<SourceConfig>>,
    ids: Vec<SourceId>,
    by_name: FxHashMap<SourceId, usize>,
    limiter: Arc<dyn RateLimiter>,
    breaker: Arc<dyn CircuitBreaker>,
    pacer: Arc<dyn Pacer>,
    selector: Arc<dyn Selector>,
    memo: CooldownMemo,
    queue: Arc<CleanupQueue>,
    policy: AdmissionPolicy,
    waiters: Arc<AtomicUsize>,
    wakeups: Vec<Arc<Notify>>,
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("scope", &self.scope)
            .field("sources", &self.ids)
            .field("policy", &self.policy)
            .field("waiters", &self.waiters.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The parts an [`Admission`] is built from.
#[non_exhaustive]
pub struct AdmissionParts {
    /// Scope label.
    pub scope: String,
    /// Sources in configured order.
    pub sources: Vec<Arc<SourceConfig>>,
    /// Rate limiter.
    pub limiter: Arc<dyn RateLimiter>,
    /// Circuit breaker.
    pub breaker: Arc<dyn CircuitBreaker>,
    /// Pacer.
    pub pacer: Arc<dyn Pacer>,
    /// Selector.
    pub selector: Arc<dyn Selector>,
    /// Injected clock (memo).
    pub clock: Arc<dyn Clock>,
    /// Cleanup queue (guards).
    pub queue: Arc<CleanupQueue>,
    /// Policies.
    pub policy: AdmissionPolicy,
    /// Extra wakeup handles, e.g. the memory limiter's release `Notify`.
    pub wakeups: Vec<Arc<Notify>>,
}

impl fmt::Debug for AdmissionParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdmissionParts")
            .field("scope", &self.scope)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl AdmissionParts {
    /// Parts with default policy and no extra wakeups.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        scope: impl Into<String>,
        sources: Vec<Arc<SourceConfig>>,
        limiter: Arc<dyn RateLimiter>,
        breaker: Arc<dyn CircuitBreaker>,
        pacer: Arc<dyn Pacer>,
        selector: Arc<dyn Selector>,
        clock: Arc<dyn Clock>,
        queue: Arc<CleanupQueue>,
    ) -> Self {
        Self {
            scope: scope.into(),
            sources,
            limiter,
            breaker,
            pacer,
            selector,
            clock,
            queue,
            policy: AdmissionPolicy::default(),
            wakeups: Vec::new(),
        }
    }
}

impl Admission {
    /// Builds the admission of one scope.
    pub fn new(parts: AdmissionParts) -> Self {
        let ids: Vec<SourceId> = parts
            .sources
            .iter()
            .map(|s| SourceId::new(&s.name))
            .collect();
        let by_name = ids
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, s)| (s, i))
            .collect();
        let mut wakeups = parts.wakeups;
        if let Some(n) = parts.pacer.wakeup()
            && !wakeups.iter().any(|w| Arc::ptr_eq(w, &n))
        {
            wakeups.push(n);
        }
        Self {
            scope: parts.scope,
            sources: parts.sources,
            ids,
            by_name,
            limiter: parts.limiter,
            breaker: parts.breaker,
            pacer: parts.pacer,
            selector: parts.selector,
            memo: CooldownMemo::new(parts.clock),
            queue: parts.queue,
            policy: parts.policy,
            waiters: Arc::new(AtomicUsize::new(0)),
            wakeups,
        }
    }

    /// The sources in configured order.
    pub fn sources(&self) -> &[Arc<SourceConfig>] {
        &self.sources
    }

    /// The policies.
    pub fn policy(&self) -> &AdmissionPolicy {
        &self.policy
    }

    /// The cooldown memo.
    pub fn memo(&self) -> &CooldownMemo {
        &self.memo
    }

    /// Callers currently holding a waiter slot.
    pub fn waiters(&self) -> usize {
        self.waiters.load(Ordering::SeqCst)
    }

    /// `pick`: one pass over the ordered candidates.
    ///
    /// `reasons` receives the admission reasons of rejected candidates; `attempt_fails` demotes
    /// sources that already failed in this loop; `exclude` skips sources silently (hedge
    /// admission only). Backend errors propagate as `GovernanceBackend` /
    /// `SourceNotConfigured` after releasing what this pick acquired.
    pub async fn pick(
        &self,
        logical_call_id: &str,
        reasons: &mut BTreeMap<String, FailureReason>,
        attempt_fails: &HashMap<String, u32>,
        exclude: &[&str],
    ) -> Result<Pick, GatewayError> {
        let stats = if self.selector.needs_stats() {
            self.stats_view().await?
        } else {
            StatsView::new()
        };
        let mut ordered = self.selector.order(&self.ids, &stats);
        // G-62: stable sort by this loop's failures, ascending.
        ordered.sort_by_key(|s| attempt_fails.get(s.as_str()).copied().unwrap_or(0));

        let mut rej = Rejections::default();
        for cand in ordered {
            let name = cand.as_str();
            if exclude.contains(&name) {
                continue; // G-63: not a rejection, writes no reason
            }
            let Some(&index) = self.by_name.get(&cand) else {
                continue;
            };
            let source = &self.sources[index];
            rej.candidates += 1;
            if let Some(remaining) = self.memo.remaining_s(name) {
                rej.gate_rejections += 1;
                rej.breaker_hints_s.push(remaining);
                reasons.insert(name.to_owned(), FailureReason::CircuitOpen);
                continue;
            }
            let est = source.effective_est_tokens();
            if let Some(detail) = self.never_fits(source, est) {
                rej.quota += 1;
                rej.never += 1;
                rej.never_detail.get_or_insert(detail);
                reasons.insert(name.to_owned(), FailureReason::QuotaFull);
                continue;
            }
            let call_id = new_uuid_v4();
            let decision = self
                .breaker
                .try_enter(name, &call_id)
                .await
                .map_err(|e| backend_error(&self.scope, &e))?;
            if !decision.allowed {
                self.memo.note(name, decision.retry_after_s);
                rej.gate_rejections += 1;
                if let Some(h) = decision.retry_after_s.filter(|h| h.is_finite()) {
                    rej.breaker_hints_s.push(h.max(0.0));
                }
                reasons.insert(name.to_owned(), FailureReason::CircuitOpen);
                continue;
            }
            let mut guard = AttemptGuard::new(
                logical_call_id,
                cand.clone(),
                est,
                Arc::clone(&self.queue),
                Arc::clone(&self.breaker),
                decision,
            );
            if !self.pacer.try_enter(name) {
                guard.release_admission().await;
                rej.paced += 1;
                reasons.insert(name.to_owned(), FailureReason::Paced);
                continue;
            }
            guard.hold_pacer(Arc::clone(&self.pacer));
            let acquired = match self.limiter.try_acquire(name, est).await {
                Ok(a) => a,
                Err(e) => {
                    guard.release_admission().await;
                    return Err(backend_error(&self.scope, &e));
                }
            };
            match acquired {
                Acquire::Granted(permit) => {
                    guard.hold_permit(permit);
                    return Ok(Pick::Picked(Box::new(Admitted {
                        source: Arc::clone(source),
                        call_id,
                        guard,
                    })));
                }
                Acquire::Denied { wait_hint_s, .. } => {
                    guard.release_admission().await;
                    rej.quota += 1;
                    if let Some(h) = wait_hint_s.filter(|h| h.is_finite() && *h >= 0.0) {
                        rej.quota_hints_s.push(h);
                    }
                    reasons.insert(name.to_owned(), FailureReason::QuotaFull);
                }
            }
        }
        Ok(Pick::NothingRunnable(rej))
    }

    /// Why `source` can never be admitted with the estimate `est`: a token gate (its own `TPM`,
    /// or the scope's `GLOBAL__TPM`) smaller than the estimate. `None` when it may fit.
    fn never_fits(&self, source: &SourceConfig, est: u64) -> Option<String> {
        if source.tpm > 0 && est > source.tpm {
            return Some(format!(
                "source {}: the token estimate ({est}, EST_TOKENS) exceeds its TPM ({}); raise TPM or lower EST_TOKENS",
                source.name, source.tpm
            ));
        }
        let global = self.policy.global_tpm;
        (global > 0 && est > global).then(|| {
            format!(
                "source {}: the token estimate ({est}, EST_TOKENS) exceeds the scope's GLOBAL__TPM ({global}); raise GLOBAL__TPM or lower EST_TOKENS",
                source.name
            )
        })
    }

    async fn stats_view(&self) -> Result<StatsView, GatewayError> {
        let mut view = StatsView::new();
        for (id, src) in self.ids.iter().zip(&self.sources) {
            let s = self
                .limiter
                .source_stats(id.as_str())
                .await
                .map_err(|e| backend_error(&self.scope, &e))?;
            view.insert(
                id.clone(),
                SourceLoad {
                    inflight: s.inflight,
                    max_concurrency: src.max_concurrency,
                },
            );
        }
        Ok(view)
    }

    /// Dispatches a `NothingRunnable` pick (30 G-80 steps 1–3): all candidates breaker-class
    /// rejected → the `CIRCUIT_OPEN` policy; any pacer rejection → nap; else the
    /// `QUOTA_FULL` policy. The errors carry the G-12 hints and `reasons`.
    pub fn on_no_runnable(
        &self,
        rej: &Rejections,
        reasons: &BTreeMap<String, FailureReason>,
    ) -> NoRunnable {
        let poll = self.policy.poll_interval_s;
        if rej.candidates >= 1 && rej.never == rej.candidates {
            // Issue 22: waiting would spend the whole stall window on a call that can never run.
            return NoRunnable::Fail(self.quota_full_error(rej, reasons));
        }
        if rej.candidates >= 1 && rej.gate_rejections == rej.candidates {
            if self.policy.circuit_open == WaitPolicy::Wait {
                return NoRunnable::Nap;
            }
            let hint = rej
                .breaker_hints_s
                .iter()
                .copied()
                .reduce(f64::min)
                .map_or(self.policy.breaker_cooldown_s, |h| h.max(poll));
            let mut u = Unavailable::new(&self.scope, ScopeReason::CircuitOpen, hint);
            u.per_source_reasons = reasons.clone();
            return NoRunnable::Fail(GatewayError::circuit_open(u));
        }
        if rej.paced > 0 || self.policy.quota_full == WaitPolicy::Wait {
            return NoRunnable::Nap;
        }
        NoRunnable::Fail(self.quota_full_error(rej, reasons))
    }

    /// `AllSourcesExhausted { quota_full }` with the G-12 hint (also the R-37 shedding error).
    pub fn quota_full_error(
        &self,
        rej: &Rejections,
        reasons: &BTreeMap<String, FailureReason>,
    ) -> GatewayError {
        let poll = self.policy.poll_interval_s;
        let hint = rej
            .quota_hints_s
            .iter()
            .copied()
            .reduce(f64::min)
            .map_or(poll, |h| h.max(poll));
        let mut u = Unavailable::new(&self.scope, ScopeReason::QuotaFull, hint);
        u.per_source_reasons = reasons.clone();
        if rej.candidates >= 1 && rej.never == rej.candidates {
            u.detail.clone_from(&rej.never_detail);
        }
        GatewayError::all_sources_exhausted(u)
    }

    /// Takes a waiter slot; `None` when `max_waiters` callers already wait.
    pub fn try_wait_slot(&self) -> Option<WaiterSlot> {
        let max = self.policy.max_waiters;
        self.waiters
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| WaiterSlot {
                waiters: Arc::clone(&self.waiters),
            })
    }

    /// Arms the wakeup futures (call before a pick).
    pub fn arm_wakeups(&self) -> Wakeups {
        let futs = self
            .wakeups
            .iter()
            .map(|n| {
                // Created now (not at first poll), so a `notify_waiters` between this arm and the
                // nap still completes it.
                let fut: Pin<Box<dyn Future<Output = ()> + Send>> =
                    Box::pin(Arc::clone(n).notified_owned());
                fut
            })
            .collect();
        Wakeups { futs }
    }

    /// The nap of 30 G-80 step 4: at most `poll_interval_s` on the runtime timer, ended early by
    /// any armed wakeup.
    pub async fn nap(&self, wakeups: Wakeups) {
        let poll = seconds_to_duration_saturating(self.policy.poll_interval_s);
        if wakeups.futs.is_empty() {
            tokio::time::sleep(poll).await;
            return;
        }
        let any = futures_util::future::select_all(wakeups.futs);
        let _ = tokio::time::timeout(poll, any).await;
    }
}
