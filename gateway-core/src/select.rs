//! Source ordering: the core-internal synchronous [`Selector`] trait and its four strategies
//! (30 §6.2 G-61; 05 R-5).
//!
//! Owns the order in which `pick` tries candidates (before in-call demotion) and the
//! process-local health score of the `health_aware` strategy, fed by the health feed and
//! decaying toward healthy with a 60 s half-life on the injected clock. Selectors are
//! synchronous: their state is process-local and each `std::sync::Mutex` is held only for a few
//! operations, never across an await.

use std::borrow::Borrow;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use gateway_ports::{Clock, SelectorKind};
use rustc_hash::FxHashMap;

/// The name of one configured source, cheap to clone (an `Arc<str>`). Borrows as `str`, so maps
/// keyed by it can be looked up with `&str`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(Arc<str>);

impl SourceId {
    /// Wraps a source name.
    pub fn new(name: &str) -> Self {
        Self(Arc::from(name))
    }

    /// The source name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for SourceId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SourceId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SourceId {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<SourceId> for Arc<str> {
    fn from(id: SourceId) -> Self {
        id.0
    }
}

impl From<String> for SourceId {
    fn from(name: String) -> Self {
        Self(Arc::from(name))
    }
}

/// The load of one source as a selector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SourceLoad {
    /// Permits in flight (`SourceStats::inflight`).
    pub inflight: u32,
    /// The source's configured `max_concurrency` (`0` = unlimited).
    pub max_concurrency: u32,
}

impl SourceLoad {
    /// `inflight / max_concurrency`, `0.0` when unlimited.
    pub fn utilisation(&self) -> f64 {
        if self.max_concurrency == 0 {
            0.0
        } else {
            f64::from(self.inflight) / f64::from(self.max_concurrency)
        }
    }
}

/// Per-source load read for one pick (`stats_if_needed`). Admission fills it from
/// `RateLimiter::source_stats` only when [`Selector::needs_stats`] is `true`; a source missing
/// from the view counts as idle (`SourceLoad::default()`).
#[derive(Debug, Clone, Default)]
pub struct StatsView {
    loads: FxHashMap<SourceId, SourceLoad>,
}

impl StatsView {
    /// An empty view (every source idle).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the load of `source`.
    pub fn insert(&mut self, source: SourceId, load: SourceLoad) {
        self.loads.insert(source, load);
    }

    /// Builder form of [`StatsView::insert`].
    pub fn with(mut self, source: impl Into<SourceId>, load: SourceLoad) -> Self {
        self.insert(source.into(), load);
        self
    }

    /// The load of `source` (idle if absent).
    pub fn get(&self, source: &str) -> SourceLoad {
        self.loads.get(source).copied().unwrap_or_default()
    }
}

/// Core-internal synchronous source ordering.
pub trait Selector: Send + Sync + fmt::Debug + 'static {
    /// The order in which `pick` tries `sources` (called once per pick). Returns a permutation of
    /// `sources`.
    fn order(&self, sources: &[SourceId], stats: &StatsView) -> Vec<SourceId>;
    /// Whether `order` reads `stats` (only then does admission call `source_stats`).
    fn needs_stats(&self) -> bool {
        false
    }
    /// Health feed: `ok = true` on success, `false` on `SourceDead` and `Transient`
    /// (429 included); never called for `RequestRejected`, `ResultInvalid`, cancellation or hedge
    /// losers.
    fn feed_outcome(&self, source: &str, ok: bool) {
        let _ = (source, ok);
    }
    /// The health score of `source` in `[0, 1]` for introspection; `None` if the
    /// selector keeps none.
    fn health(&self, source: &str) -> Option<f64> {
        let _ = source;
        None
    }
}

/// `sources` rotated left by `k mod n`.
fn rotated(sources: &[SourceId], k: usize) -> Vec<SourceId> {
    let mut v = sources.to_vec();
    if !v.is_empty() {
        let n = v.len();
        v.rotate_left(k % n);
    }
    v
}

/// The selector of a configured [`SelectorKind`] (`{SCOPE}__SELECTOR`): round robin, least
/// in-flight, or health-aware on `clock` (the default, also for kinds added later).
pub fn selector_for(kind: SelectorKind, clock: Arc<dyn Clock>) -> Arc<dyn Selector> {
    match kind {
        SelectorKind::RoundRobin => Arc::new(RoundRobinSelector::new()),
        SelectorKind::LeastInflight => Arc::new(LeastInflightSelector::new()),
        _ => Arc::new(HealthAwareSelector::new(clock)),
    }
}

/// The configured order, always (30 G-61 `StaticSelector`; test support, not configurable).
#[derive(Debug, Clone, Copy, Default)]
pub struct StaticSelector;

impl Selector for StaticSelector {
    fn order(&self, sources: &[SourceId], _stats: &StatsView) -> Vec<SourceId> {
        sources.to_vec()
    }
}

/// `round_robin`: a per-client counter `k`, incremented once per pick; order = the
/// configured list rotated left by `k mod n` (the first pick uses `k = 0`).
#[derive(Debug, Default)]
pub struct RoundRobinSelector {
    counter: AtomicUsize,
}

impl RoundRobinSelector {
    /// A selector whose first pick starts at the first configured source.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Selector for RoundRobinSelector {
    fn order(&self, sources: &[SourceId], _stats: &StatsView) -> Vec<SourceId> {
        let k = self.counter.fetch_add(1, Ordering::Relaxed);
        rotated(sources, k)
    }
}

/// `least_inflight`: ascending `inflight`; ties keep the rotated configured order
/// (rotation as in [`RoundRobinSelector`]).
#[derive(Debug, Default)]
pub struct LeastInflightSelector {
    counter: AtomicUsize,
}

impl LeastInflightSelector {
    /// A new selector.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Selector for LeastInflightSelector {
    fn order(&self, sources: &[SourceId], stats: &StatsView) -> Vec<SourceId> {
        let k = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut v = rotated(sources, k);
        // Stable sort: ties keep the rotated order.
        v.sort_by_key(|s| stats.get(s.as_str()).inflight);
        v
    }

    fn needs_stats(&self) -> bool {
        true
    }
}

/// EWMA weight of one health observation.
pub const HEALTH_ALPHA: f64 = 0.2;
/// Half-life in seconds of the decay toward healthy.
pub const HEALTH_HALF_LIFE_S: f64 = 60.0;

#[derive(Debug, Clone, Copy)]
struct Health {
    score: f64,
    at_s: f64,
}

/// `health_aware` (default).
///
/// Each source has a health score `h ∈ [0, 1]`, initially 1.0, updated by
/// [`Selector::feed_outcome`] as an EWMA with α = 0.2 (`ok`: `h += α·(1 − h)`; not ok:
/// `h −= α·h`). Between observations the *deficit* `1 − h` halves every 60 s of the injected
/// clock, so a once-flaky source recovers. Order: health bucket `min(floor(h·10), 9)`
/// descending, then `inflight / max_concurrency` ascending (0 when unlimited), then the rotated
/// configured order.
pub struct HealthAwareSelector {
    clock: Arc<dyn Clock>,
    counter: AtomicUsize,
    health: Mutex<FxHashMap<String, Health>>,
}

impl fmt::Debug for HealthAwareSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthAwareSelector")
            .field("counter", &self.counter)
            .finish_non_exhaustive()
    }
}

impl HealthAwareSelector {
    /// A selector reading time from `clock` (for the R-36 decay).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            counter: AtomicUsize::new(0),
            health: Mutex::new(FxHashMap::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, FxHashMap<String, Health>> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn now_s(&self) -> f64 {
        self.clock.monotonic().as_secs_f64()
    }

    /// The score of `h` decayed toward 1.0 up to `now_s`.
    fn decayed(h: Health, now_s: f64) -> f64 {
        if h.score >= 1.0 {
            return 1.0; // no deficit to decay (skips `powf`, 05 R-56)
        }
        let dt = (now_s - h.at_s).max(0.0);
        let deficit = (1.0 - h.score) * 0.5_f64.powf(dt / HEALTH_HALF_LIFE_S);
        (1.0 - deficit).clamp(0.0, 1.0)
    }

    fn score_at(map: &FxHashMap<String, Health>, source: &str, now_s: f64) -> f64 {
        map.get(source).map_or(1.0, |h| Self::decayed(*h, now_s))
    }
}

/// Health bucket `min(floor(h·10), 9)`, `0..=9`.
///
/// Chosen: `floor(h·10)` alone would make `h = 1.0` a bucket of its own (10) that a source which
/// ever failed re-enters only when its decayed deficit rounds to zero, so it would trail every
/// never-failed source for hours despite R-36; `[0.9, 1.0]` is therefore one bucket.
fn bucket(h: f64) -> u8 {
    // h ∈ [0, 1], so the product is in [0, 10] and the cast is exact after floor().
    (h * 10.0).floor().clamp(0.0, 9.0) as u8
}

impl Selector for HealthAwareSelector {
    fn order(&self, sources: &[SourceId], stats: &StatsView) -> Vec<SourceId> {
        let k = self.counter.fetch_add(1, Ordering::Relaxed);
        if sources.len() <= 1 {
            // One candidate has one order: no clock read, no lock (05 R-56).
            return sources.to_vec();
        }
        let now = self.now_s();
        let n = sources.len();
        let mut keyed: Vec<(u8, f64, &SourceId)> = {
            let map = self.lock();
            // The configured list rotated left by `k mod n` (as `rotated`), without a copy.
            (0..n)
                .map(|i| &sources[(i + k % n) % n])
                .map(|s| {
                    let h = Self::score_at(&map, s.as_str(), now);
                    (bucket(h), stats.get(s.as_str()).utilisation(), s)
                })
                .collect()
        };
        // Stable sort: equal keys keep the rotated configured order.
        keyed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.total_cmp(&b.1)));
        keyed.into_iter().map(|(_, _, s)| s.clone()).collect()
    }

    fn needs_stats(&self) -> bool {
        true
    }

    fn feed_outcome(&self, source: &str, ok: bool) {
        let now = self.now_s();
        let mut map = self.lock();
        let h = Self::score_at(&map, source, now);
        let score = if ok {
            h + HEALTH_ALPHA * (1.0 - h)
        } else {
            h - HEALTH_ALPHA * h
        };
        let health = Health {
            score: score.clamp(0.0, 1.0),
            at_s: now,
        };
        // Update in place: the name is only copied the first time a source is fed (05 R-56).
        match map.get_mut(source) {
            Some(slot) => *slot = health,
            None => {
                map.insert(source.to_owned(), health);
            }
        }
    }

    fn health(&self, source: &str) -> Option<f64> {
        let now = self.now_s();
        Some(Self::score_at(&self.lock(), source, now))
    }
}
