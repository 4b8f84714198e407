//! The AIMD pacer: per-source self-imposed concurrency that halves on backpressure and climbs by
//! `1/limit` on success (30 §6.5 G-72; 05 R-5).
//!
//! Owns the core-internal synchronous [`Pacer`] trait (admission calls it between the breaker gate
//! and the quota gate), the default [`AimdPacer`] and [`NoopPacer`] (which disables pacing).
//! It is synchronous because its state is process-local and tiny; a `std::sync::Mutex` is held
//! only for a few arithmetic operations and never across an await. `leave` (and a success that
//! raises the admitted limit) wakes waiting picks through a `tokio::sync::Notify`.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gateway_ports::SourceConfig;
use rustc_hash::FxHashMap;
use tokio::sync::Notify;

/// Initial per-source pacer limit.
pub const AIMD_INITIAL_LIMIT: f64 = 8.0;
/// Pacer floor.
pub const AIMD_FLOOR: f64 = 1.0;
/// Lowest pacer ceiling: `ceiling = max(64, max over sources of max_concurrency)`.
pub const AIMD_MIN_CEILING: f64 = 64.0;
/// Multiplicative decrease factor applied by `on_backpressure`.
pub const AIMD_DECREASE: f64 = 0.5;

/// Core-internal synchronous pacer.
///
/// Contract for callers (admission, the attempt guard):
/// - `try_enter(source)` admits or refuses; on `true` the caller holds one paced slot and must call
///   `leave(source)` exactly once when the attempt ends, on every path;
/// - `on_success` / `on_backpressure` feed the outcome of an attempt: backpressure is a
///   `rate_limited` failure;
/// - `wakeup()` is the handle a waiting pick may await instead of polling. It is
///   signalled with `notify_waiters`, so a waiter must create (and `enable`) its `notified()`
///   future *before* it picks, then await it bounded by `poll_interval_s`.
pub trait Pacer: Send + Sync + fmt::Debug + 'static {
    /// Takes one paced slot of `source` if its current limit allows; `true` = taken.
    fn try_enter(&self, source: &str) -> bool;
    /// Returns one paced slot of `source` (saturating: a stray `leave` never underflows) and wakes
    /// waiters.
    fn leave(&self, source: &str);
    /// Returns a slot whose candidate admitted nothing — a later gate rejected it inside `pick`
    /// or a hedge admission was abandoned — **without** waking waiters. Waking them
    /// would make every waiting caller re-pick, borrow and return the slot, and wake the others
    /// again: a busy loop while quota is exhausted. A caller paced out by this momentary hold
    /// waits at most `poll_interval_s`. Default: [`Pacer::leave`].
    fn leave_unused(&self, source: &str) {
        self.leave(source);
    }
    /// Additive increase after a successful attempt of `source`.
    fn on_success(&self, source: &str);
    /// Multiplicative decrease after a `rate_limited` failure of `source`.
    fn on_backpressure(&self, source: &str);
    /// Current limit of `source` for introspection; `None` if the pacer keeps none.
    fn limit(&self, source: &str) -> Option<f64> {
        let _ = source;
        None
    }
    /// Paced slots `source` currently holds (introspection and tests); `0` if not tracked.
    fn inflight(&self, source: &str) -> u32 {
        let _ = source;
        0
    }
    /// The wakeup handle signalled on `leave`; `None` = this pacer never refuses, so
    /// there is nothing to wait for.
    fn wakeup(&self) -> Option<Arc<Notify>> {
        None
    }
}

/// A pacer that admits everything and keeps no state: injecting it disables pacing (30 G-72,
/// 05 R-5).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopPacer;

impl Pacer for NoopPacer {
    fn try_enter(&self, _source: &str) -> bool {
        true
    }
    fn leave(&self, _source: &str) {}
    fn on_success(&self, _source: &str) {}
    fn on_backpressure(&self, _source: &str) {}
}

#[derive(Debug, Clone, Copy)]
struct PaceState {
    limit: f64,
    inflight: u32,
}

/// The default AIMD pacer: per source, process-local, initial limit 8, floor 1,
/// `on_backpressure`: `limit := max(1, limit × 0.5)`, `on_success`:
/// `limit := min(ceiling, limit + 1/limit)`, `try_enter` admits iff
/// `inflight < max(1, floor(limit))`.
///
/// Sources are tracked lazily on first use, so any source name is accepted.
pub struct AimdPacer {
    ceiling: f64,
    initial: f64,
    state: Mutex<FxHashMap<String, PaceState>>,
    notify: Arc<Notify>,
}

impl fmt::Debug for AimdPacer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AimdPacer")
            .field("ceiling", &self.ceiling)
            .field("initial", &self.initial)
            .finish_non_exhaustive()
    }
}

impl AimdPacer {
    /// A pacer with this `ceiling` (a non-finite or < 1 ceiling is treated as 1). The initial
    /// limit is `min(8, ceiling)`.
    pub fn new(ceiling: f64) -> Self {
        let ceiling = if ceiling.is_finite() && ceiling >= AIMD_FLOOR {
            ceiling
        } else {
            AIMD_FLOOR
        };
        Self {
            ceiling,
            initial: AIMD_INITIAL_LIMIT.min(ceiling),
            state: Mutex::new(FxHashMap::default()),
            notify: Arc::new(Notify::new()),
        }
    }

    /// A pacer for a client's sources: `ceiling = max(64, max over sources of max_concurrency)`
    /// (one value for the client).
    pub fn for_sources(sources: &[SourceConfig]) -> Self {
        let max_conc = sources
            .iter()
            .map(|s| f64::from(s.max_concurrency))
            .fold(AIMD_MIN_CEILING, f64::max);
        Self::new(max_conc)
    }

    /// Uses `notify` as the wakeup handle (e.g. one shared with the memory limiter, so a waiting
    /// pick awaits a single `Notify`).
    pub fn with_notify(mut self, notify: Arc<Notify>) -> Self {
        self.notify = notify;
        self
    }

    /// The client-wide ceiling.
    pub fn ceiling(&self) -> f64 {
        self.ceiling
    }

    fn lock(&self) -> MutexGuard<'_, FxHashMap<String, PaceState>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_state<R>(&self, source: &str, f: impl FnOnce(&mut PaceState) -> R) -> R {
        let mut map = self.lock();
        if let Some(st) = map.get_mut(source) {
            return f(st);
        }
        let st = map.entry(source.to_owned()).or_insert(PaceState {
            limit: self.initial,
            inflight: 0,
        });
        f(st)
    }
}

impl AimdPacer {
    /// Returns one slot (saturating); `true` if one was held.
    fn release_slot(&self, source: &str) -> bool {
        let mut map = self.lock();
        match map.get_mut(source) {
            Some(st) if st.inflight > 0 => {
                st.inflight -= 1;
                true
            }
            _ => false,
        }
    }
}

/// Admitted concurrency for a limit: `max(1, floor(limit))`.
fn admitted(limit: f64) -> u32 {
    // limit is always within [1, ceiling] and finite, so the cast is exact after floor().
    let l = limit.floor().max(AIMD_FLOOR);
    if l >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        l as u32
    }
}

impl Pacer for AimdPacer {
    fn try_enter(&self, source: &str) -> bool {
        self.with_state(source, |st| {
            if st.inflight < admitted(st.limit) {
                st.inflight += 1;
                true
            } else {
                false
            }
        })
    }

    fn leave(&self, source: &str) {
        if self.release_slot(source) {
            self.notify.notify_waiters();
        }
    }

    fn leave_unused(&self, source: &str) {
        self.release_slot(source);
    }

    fn on_success(&self, source: &str) {
        let raised = self.with_state(source, |st| {
            let before = admitted(st.limit);
            st.limit = (st.limit + 1.0 / st.limit).min(self.ceiling);
            admitted(st.limit) > before
        });
        if raised {
            self.notify.notify_waiters();
        }
    }

    fn on_backpressure(&self, source: &str) {
        self.with_state(source, |st| {
            st.limit = (st.limit * AIMD_DECREASE).max(AIMD_FLOOR);
        });
    }

    fn limit(&self, source: &str) -> Option<f64> {
        Some(self.lock().get(source).map_or(self.initial, |st| st.limit))
    }

    fn inflight(&self, source: &str) -> u32 {
        self.lock().get(source).map_or(0, |st| st.inflight)
    }

    fn wakeup(&self) -> Option<Arc<Notify>> {
        Some(Arc::clone(&self.notify))
    }
}
