//! `MemoryRateLimiter`: the in-process implementation of the `RateLimiter` port (10 §8.4;
//! 30 §6.6 G-73).
//!
//! Owns the six gates (source and global concurrency, RPM, TPM; `0` = unlimited) over exact
//! per-permit entries in a sliding 60 s window, the reserve-then-settle TPM arithmetic,
//! and the permit leases that reclaim concurrency slots of holders that never released, whether
//! or not they settled. A scope (a source, or the global one) with no RPM and no TPM limit
//! counts its RPM/TPM usage in 100 ms buckets instead of per-permit entries, so its memory does
//! not grow with the call rate (`buckets`; the counts may trail the exact ones by at most one
//! bucket at the 60 s edge).
//!
//! All state sits behind one `std::sync::Mutex` that is never held across an await, so
//! `settle_and_release_now` does the work synchronously and returns `true`. Releases,
//! reclaims and refunding settles signal a `tokio::sync::Notify` (`notify_waiters`) so waiting
//! picks wake instead of polling; capacity freed by entries ageing out of the window is
//! not signalled (the caller's `poll_interval_s` bound, or the `wait_hint_s` of a denial, covers
//! it). Limits are per process: multi-process deployments use the Redis limiter.
//!
//! Files: this one (the limiter, its permits and the port), `state` (the scopes and gates
//! behind the mutex), `buckets` (the time buckets of unlimited scopes).

mod buckets;
mod state;

pub use state::WINDOW;

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{
    Acquire, BackendError, Clock, GlobalLimits, Permit, RateLimiter, SourceConfig, SourceStats,
};
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

use state::{Grant, Limits, SourceScope, State, Usage};

/// `MemoryPermit::flags`: `settle` ran.
const SETTLED: u8 = 1;
/// `MemoryPermit::flags`: `release` ran.
const RELEASED: u8 = 2;

struct Inner {
    scope: String,
    index: FxHashMap<String, usize>,
    lease_ttl: Duration,
    clock: Arc<dyn Clock>,
    notify: Arc<Notify>,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks, ages the window and reclaims expired leases; wakes waiters if a slot was reclaimed.
    fn locked_now(&self) -> (MutexGuard<'_, State>, Duration) {
        let now = self.clock.monotonic();
        let mut st = self.lock();
        if st.maintain(now, self.lease_ttl) {
            self.notify.notify_waiters();
        }
        (st, now)
    }

    /// Settles (at most once, never after release) and/or releases (once) the permit of
    /// `grant`; `flags` are the permit's own, read and written only under the state lock.
    fn settle_release(&self, grant: Grant, flags: &AtomicU8, settle: Option<u64>, release: bool) {
        let (mut st, now) = self.locked_now();
        let mut freed = false;
        let f = flags.load(Ordering::Relaxed);
        if let Some(actual) = settle
            && f & (SETTLED | RELEASED) == 0
        {
            flags.store(f | SETTLED, Ordering::Relaxed);
            freed |= st.settle(grant, actual, now);
        }
        let f = flags.load(Ordering::Relaxed);
        if release && f & RELEASED == 0 {
            flags.store(f | RELEASED, Ordering::Relaxed);
            freed |= st.release(grant.id);
        }
        drop(st);
        if freed {
            self.notify.notify_waiters();
        }
    }
}

/// The in-memory rate limiter.
///
/// Built from `(scope, &[SourceConfig], GlobalLimits, lease_ttl_s, Arc<dyn Clock>)`; only the
/// sources it was built with are known (others → `SourceNotConfigured`). After
/// [`RateLimiter::close`] every entry point (`try_acquire`, `source_stats`, progress) answers
/// `Unavailable` (fail closed) while permit `settle`/`release` keep working so
/// cleanup never fails.
#[derive(Clone)]
pub struct MemoryRateLimiter {
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRateLimiter")
            .field("scope", &self.inner.scope)
            .field("sources", &self.inner.index.len())
            .field("lease_ttl", &self.inner.lease_ttl)
            .finish_non_exhaustive()
    }
}

/// Converts a settings-edge lease TTL in seconds: NaN or ≤ 0 → zero (reclaim at once), too large
/// or +∞ → effectively never. Assembly validates the value before it gets here (20).
fn lease_duration(lease_ttl_s: f64) -> Duration {
    if lease_ttl_s.is_nan() || lease_ttl_s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(lease_ttl_s).unwrap_or(Duration::MAX)
}

impl MemoryRateLimiter {
    /// Builds a limiter for `sources` (their `max_concurrency`, `rpm`, `tpm`; `0` = unlimited)
    /// and the scope-wide `global` limits. `lease_ttl_s` (seconds; default at assembly
    /// `max timeout_s + 30`) bounds how long a permit may hold its concurrency slots without
    /// `release`. A duplicate source name keeps the first configuration.
    pub fn new(
        scope: &str,
        sources: &[SourceConfig],
        global: GlobalLimits,
        lease_ttl_s: f64,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let mut index = FxHashMap::default();
        let mut scopes = Vec::new();
        for s in sources {
            if index.contains_key(&s.name) {
                continue;
            }
            index.insert(s.name.clone(), scopes.len());
            let limits = Limits {
                max_concurrency: s.max_concurrency,
                rpm: s.rpm,
                tpm: s.tpm,
            };
            scopes.push(SourceScope {
                name: Arc::from(s.name.as_str()),
                limits,
                usage: Usage::default(),
                window: VecDeque::new(),
                ring: limits.ring(),
            });
        }
        let now = clock.monotonic();
        let global_limits = Limits {
            max_concurrency: global.max_concurrency,
            rpm: global.rpm,
            tpm: global.tpm,
        };
        Self {
            inner: Arc::new(Inner {
                scope: scope.to_owned(),
                index,
                lease_ttl: lease_duration(lease_ttl_s),
                clock,
                notify: Arc::new(Notify::new()),
                state: Mutex::new(State {
                    sources: scopes,
                    global_limits,
                    global: Usage::default(),
                    global_ring: global_limits.ring(),
                    window: VecDeque::new(),
                    leases: VecDeque::new(),
                    recs: FxHashMap::default(),
                    next_id: 1,
                    last_progress: now,
                    closed: false,
                }),
            }),
        }
    }

    /// Uses `notify` as the wakeup handle (e.g. shared with the pacer). Call it right
    /// after `new`: on a limiter that was already cloned it changes nothing.
    pub fn with_notify(mut self, notify: Arc<Notify>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.notify = notify;
        }
        self
    }

    /// The wakeup handle signalled (`notify_waiters`) on every release, lease reclaim and
    /// refunding settle. A waiter creates and `enable`s its `notified()` future before
    /// it calls `try_acquire`, then awaits it bounded by `poll_interval_s`.
    pub fn notify(&self) -> Arc<Notify> {
        Arc::clone(&self.inner.notify)
    }

    /// The scope this limiter was built for.
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// Scope-wide usage (all sources), after ageing the window and reclaiming expired leases.
    pub fn global_stats(&self) -> SourceStats {
        let (st, _) = self.inner.locked_now();
        SourceStats::new(st.global.tpm_used, st.global.rpm_used, st.global.inflight)
    }

    /// Number of permits the limiter still keeps a record of (in an exact window, or holding a
    /// slot): a leak check for tests. It returns to 0 once every permit was released or
    /// reclaimed and 60 s passed; a permit whose source and global scope have no RPM and no TPM
    /// limit is forgotten as soon as its slots are free.
    pub fn tracked_permits(&self) -> usize {
        let (st, _) = self.inner.locked_now();
        st.recs.len()
    }

    /// Number of per-permit entries held in all the limiter's tables (records, window queues,
    /// lease queue), after ageing the window and reclaiming expired leases: a memory-bound check
    /// for tests. For scopes without RPM and TPM limits it stays within a small multiple of the
    /// permits in flight, whatever the call rate; the fixed bucket arrays are not counted.
    pub fn retained_entries(&self) -> usize {
        let (st, _) = self.inner.locked_now();
        st.recs.len()
            + st.window.len()
            + st.leases.len()
            + st.sources.iter().map(|b| b.window.len()).sum::<usize>()
    }

    fn source_index(&self, source: &str) -> Result<usize, BackendError> {
        self.inner
            .index
            .get(source)
            .copied()
            .ok_or_else(|| BackendError::source_not_configured(source))
    }
}

fn closed_error() -> BackendError {
    BackendError::unavailable("memory limiter is closed")
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError> {
        let idx = self.source_index(source)?;
        let (mut st, now) = self.inner.locked_now();
        if st.closed {
            return Err(closed_error());
        }
        if let Some((gate, wait_hint_s)) = st.check(idx, est_tokens, now) {
            return Ok(Acquire::Denied { gate, wait_hint_s });
        }
        let grant = st.grant(idx, est_tokens, now);
        let name = st
            .sources
            .get(idx)
            .map_or_else(|| Arc::from(source), |b| Arc::clone(&b.name));
        drop(st);
        Ok(Acquire::Granted(Box::new(MemoryPermit {
            grant,
            flags: AtomicU8::new(0),
            id_text: OnceLock::new(),
            source: name,
            inner: Arc::clone(&self.inner),
        })))
    }

    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError> {
        let idx = self.source_index(source)?;
        let (mut st, now) = self.inner.locked_now();
        if st.closed {
            return Err(closed_error());
        }
        let u = st.source_usage(idx, now);
        Ok(SourceStats::new(u.tpm_used, u.rpm_used, u.inflight))
    }

    async fn mark_progress(&self) -> Result<(), BackendError> {
        let (mut st, now) = self.inner.locked_now();
        if st.closed {
            return Err(closed_error());
        }
        st.last_progress = now;
        Ok(())
    }

    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        let (st, now) = self.inner.locked_now();
        if st.closed {
            return Err(closed_error());
        }
        Ok(now.saturating_sub(st.last_progress).as_secs_f64())
    }

    async fn close(&self) {
        self.inner.lock().closed = true;
        self.inner.notify.notify_waiters();
    }
}

/// A permit of [`MemoryRateLimiter`]. Dropping it without `release` is a cancellation:
/// its slots stay held until its lease expires. `Debug` prints ids only.
pub struct MemoryPermit {
    grant: Grant,
    /// `SETTLED` | `RELEASED`, kept here because a bucket-mode permit's record is gone once its
    /// slots are free (a late settle after a lease reclaim must still apply once).
    flags: AtomicU8,
    /// `"{scope}:{id}"`, formatted on first use (the hot path never reads it).
    id_text: OnceLock<String>,
    source: Arc<str>,
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPermit")
            .field("id", &self.id_text())
            .field("source", &self.source)
            .field("est_tokens", &self.grant.est)
            .finish()
    }
}

impl MemoryPermit {
    fn id_text(&self) -> &str {
        self.id_text
            .get_or_init(|| format!("{}:{}", self.inner.scope, self.grant.id))
    }
}

#[async_trait]
impl Permit for MemoryPermit {
    fn id(&self) -> &str {
        self.id_text()
    }

    fn source(&self) -> &str {
        &self.source
    }

    fn est_tokens(&self) -> u64 {
        self.grant.est
    }

    async fn settle(&self, actual_tokens: u64) -> Result<(), BackendError> {
        self.inner
            .settle_release(self.grant, &self.flags, Some(actual_tokens), false);
        Ok(())
    }

    async fn release(&self) -> Result<(), BackendError> {
        self.inner
            .settle_release(self.grant, &self.flags, None, true);
        Ok(())
    }

    fn settle_and_release_now(&self, actual_tokens: u64) -> bool {
        self.inner
            .settle_release(self.grant, &self.flags, Some(actual_tokens), true);
        true
    }
}
