//! `MemoryCircuitBreaker`: the in-process implementation of the `CircuitBreaker` port
//! (30 §6.4 G-65..G-71, §6.7 G-75).
//!
//! Owns, per source (tracked lazily: the breaker is built without a source list), the state
//! machine `Closed → Open{until} → HalfOpen{probe lease?}`, the epoch, the consecutive-failure
//! counter, the failure-rate window in 1-second buckets over `window_s` and the open-count
//! exponent of the doubling cooldown.
//!
//! Decisions where the port leaves room (recorded in docs/decisions.md):
//! - only decisions with `allowed = true` write back; denied decisions change nothing;
//! - in `HalfOpen` only the attempt that currently holds the probe lease writes back (a probe
//!   whose lease expired and was taken over is fenced like an old epoch);
//! - `rate_limited` (and the admission-only reasons) count in neither channel, do not reset the
//!   consecutive counter, and a probe failing that way is released without a transition (G-69,
//!   G-76); `timeout`, `network_error` and `source_dead` count;
//! - `force_open` adds the failure sample, then opens from any state; if already open the later
//!   `until` wins;
//! - opening keeps the window (it is only read while closed); closing clears it;
//! - `probe_ttl_s = None` (normally resolved at assembly) falls back to 125 s (120 + 5);
//! - after `close()` `try_enter` and `snapshot` answer `Unavailable` (fail closed);
//!   write-backs keep working so cleanup never fails.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{
    BackendError, BreakerConfig, BreakerSnapshot, BreakerState, CircuitBreaker, Clock,
    FailureReason, GateDecision, ProbeLease,
};
use rustc_hash::FxHashMap;

/// Probe lease in seconds used when `BreakerConfig::probe_ttl_s` is `None`: the default source
/// `timeout_s` (120) + 5.
pub const DEFAULT_PROBE_TTL_S: f64 = 125.0;

#[derive(Debug, Clone)]
struct Probe {
    owner: String,
    expires: Duration,
}

#[derive(Debug, Clone)]
enum Phase {
    Closed,
    Open { until: Duration },
    HalfOpen { probe: Option<Probe> },
}

#[derive(Debug, Clone, Copy)]
struct SecondBucket {
    second: u64,
    calls: u32,
    failures: u32,
}

#[derive(Debug, Clone)]
struct SourceBreaker {
    phase: Phase,
    epoch: u64,
    consecutive: u32,
    buckets: VecDeque<SecondBucket>,
    /// Open-count exponent `k` (reset when the circuit closes).
    opens: u32,
    /// Opens since this source was first seen; never reset (`BreakerSnapshot::open_count`).
    open_count: u32,
    /// Duration of the current (or last) open, seconds.
    last_cooldown_s: f64,
}

impl SourceBreaker {
    fn new() -> Self {
        Self {
            phase: Phase::Closed,
            epoch: 0,
            consecutive: 0,
            buckets: VecDeque::new(),
            opens: 0,
            open_count: 0,
            last_cooldown_s: 0.0,
        }
    }
}

/// Normalised configuration (all durations validated).
#[derive(Debug, Clone, Copy)]
struct Cfg {
    fail_threshold: u32,
    fail_rate: f64,
    min_calls: u32,
    window_secs: u64,
    cooldown_s: f64,
    cooldown_max_s: f64,
    probe_ttl: Duration,
}

fn secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
    }
}

impl Cfg {
    fn from(c: &BreakerConfig) -> Self {
        let finite_pos = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        let window = finite_pos(c.window_s).ceil();
        Self {
            fail_threshold: c.fail_threshold.max(1),
            fail_rate: c.fail_rate,
            min_calls: c.min_calls.max(1),
            window_secs: if window >= 1.0 { window as u64 } else { 1 },
            cooldown_s: finite_pos(c.cooldown_s),
            cooldown_max_s: finite_pos(c.cooldown_max_s).max(finite_pos(c.cooldown_s)),
            probe_ttl: secs(c.probe_ttl_s.unwrap_or(DEFAULT_PROBE_TTL_S)),
        }
    }

    /// `min(cooldown_s · 2^k, cooldown_max_s)`.
    fn cooldown_for(&self, k: u32) -> f64 {
        let factor = 2f64.powi(i32::try_from(k.min(1024)).unwrap_or(1024));
        (self.cooldown_s * factor).min(self.cooldown_max_s)
    }
}

struct Inner {
    scope: String,
    cfg: Cfg,
    clock: Arc<dyn Clock>,
    state: Mutex<(FxHashMap<String, SourceBreaker>, bool)>,
}

/// The in-memory circuit breaker.
///
/// Built from `(scope, BreakerConfig, Arc<dyn Clock>)`; any source name is accepted.
/// `release_probe_now` frees the probe synchronously and returns `true`.
#[derive(Clone)]
pub struct MemoryCircuitBreaker {
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryCircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCircuitBreaker")
            .field("scope", &self.inner.scope)
            .field("config", &self.inner.cfg)
            .finish_non_exhaustive()
    }
}

fn closed_error() -> BackendError {
    BackendError::unavailable("memory breaker is closed")
}

/// Does `reason` count as a failure in the breaker's channels?
fn counts(reason: FailureReason) -> bool {
    matches!(
        reason,
        FailureReason::Timeout
            | FailureReason::NetworkError
            | FailureReason::BadResponse
            | FailureReason::SourceDead
    )
}

impl MemoryCircuitBreaker {
    /// Builds a breaker for `scope` with `config` (D7 defaults in `BreakerConfig::default()`),
    /// reading time from `clock`. Out-of-domain values (validated at assembly, 20) are clamped:
    /// `fail_threshold` and `min_calls` at least 1, `window_s` at least 1 s (rounded up to whole
    /// seconds), negative or NaN durations as 0.
    pub fn new(scope: &str, config: BreakerConfig, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                scope: scope.to_owned(),
                cfg: Cfg::from(&config),
                clock,
                state: Mutex::new((FxHashMap::default(), false)),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (FxHashMap<String, SourceBreaker>, bool)> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn now(&self) -> Duration {
        self.inner.clock.monotonic()
    }

    fn trim(&self, b: &mut SourceBreaker, now: Duration) {
        let cur = now.as_secs();
        let w = self.inner.cfg.window_secs;
        while b
            .buckets
            .front()
            .is_some_and(|x| x.second.saturating_add(w) <= cur)
        {
            b.buckets.pop_front();
        }
    }

    fn window(&self, b: &mut SourceBreaker, now: Duration) -> (u32, u32) {
        self.trim(b, now);
        b.buckets.iter().fold((0u32, 0u32), |(c, f), x| {
            (c.saturating_add(x.calls), f.saturating_add(x.failures))
        })
    }

    fn sample(&self, b: &mut SourceBreaker, now: Duration, failed: bool) {
        self.trim(b, now);
        let cur = now.as_secs();
        let fails = u32::from(failed);
        match b.buckets.back_mut() {
            Some(last) if last.second == cur => {
                last.calls = last.calls.saturating_add(1);
                last.failures = last.failures.saturating_add(fails);
            }
            _ => b.buckets.push_back(SecondBucket {
                second: cur,
                calls: 1,
                failures: fails,
            }),
        }
    }

    fn open(&self, b: &mut SourceBreaker, now: Duration) {
        let dur_s = self.inner.cfg.cooldown_for(b.opens);
        b.opens = b.opens.saturating_add(1);
        b.open_count = b.open_count.saturating_add(1);
        let mut until = now.saturating_add(secs(dur_s));
        if let Phase::Open { until: old } = b.phase {
            until = until.max(old);
        }
        b.phase = Phase::Open { until };
        b.epoch = b.epoch.saturating_add(1);
        b.last_cooldown_s = dur_s;
    }

    fn close_circuit(b: &mut SourceBreaker) {
        b.phase = Phase::Closed;
        b.epoch = b.epoch.saturating_add(1);
        b.consecutive = 0;
        b.buckets.clear();
        b.opens = 0;
    }

    /// Moves an elapsed `Open` to `HalfOpen` and reclaims an expired probe lease.
    fn refresh(b: &mut SourceBreaker, now: Duration) {
        match &b.phase {
            Phase::Open { until } if now >= *until => {
                b.phase = Phase::HalfOpen { probe: None };
            }
            Phase::HalfOpen { probe: Some(p) } if now >= p.expires => {
                b.phase = Phase::HalfOpen { probe: None };
            }
            _ => {}
        }
    }

    /// Whether `entry` may write back to `b` (epoch fencing G-70, allowed only, current probe).
    fn may_write(
        b: &SourceBreaker,
        entry_epoch: u64,
        allowed: bool,
        is_probe: bool,
        owner: &str,
    ) -> bool {
        if !allowed || entry_epoch != b.epoch {
            return false;
        }
        match &b.phase {
            Phase::Closed => !is_probe,
            Phase::HalfOpen { probe: Some(p) } => is_probe && p.owner == owner,
            _ => false,
        }
    }

    /// The gate decision of `b` for `owner` at `now`; takes the probe in an empty half-open.
    fn gate(
        b: &mut SourceBreaker,
        source: &str,
        owner: &str,
        now: Duration,
        ttl: Duration,
    ) -> GateDecision {
        Self::refresh(b, now);
        let mut d = GateDecision {
            source: source.to_owned(),
            owner: owner.to_owned(),
            allowed: false,
            is_probe: false,
            epoch: b.epoch,
            retry_after_s: None,
        };
        match &b.phase {
            Phase::Closed => d.allowed = true,
            Phase::Open { until } => {
                d.retry_after_s = Some(until.saturating_sub(now).as_secs_f64());
            }
            Phase::HalfOpen { probe: Some(_) } => d.retry_after_s = Some(0.0),
            Phase::HalfOpen { probe: None } => {
                b.phase = Phase::HalfOpen {
                    probe: Some(Probe {
                        owner: owner.to_owned(),
                        expires: now.saturating_add(ttl),
                    }),
                };
                d.allowed = true;
                d.is_probe = true;
            }
        }
        d
    }

    fn release_probe_sync(&self, source: &str, owner: &str, epoch: u64) {
        let now = self.now();
        let mut guard = self.lock();
        let Some(b) = guard.0.get_mut(source) else {
            return;
        };
        Self::refresh(b, now);
        if b.epoch != epoch {
            return;
        }
        if matches!(&b.phase, Phase::HalfOpen { probe: Some(p) } if p.owner == owner) {
            b.phase = Phase::HalfOpen { probe: None };
        }
    }
}

#[async_trait]
impl CircuitBreaker for MemoryCircuitBreaker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        let now = self.now();
        let ttl = self.inner.cfg.probe_ttl;
        let mut guard = self.lock();
        if guard.1 {
            return Err(closed_error());
        }
        // Look up first: the source's name is only copied the first time it is seen (05 R-56).
        let d = match guard.0.get_mut(source) {
            Some(b) => Self::gate(b, source, owner, now, ttl),
            None => {
                let b = guard
                    .0
                    .entry(source.to_owned())
                    .or_insert_with(SourceBreaker::new);
                Self::gate(b, source, owner, now, ttl)
            }
        };
        Ok(d)
    }

    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        let now = self.now();
        let mut guard = self.lock();
        let Some(b) = guard.0.get_mut(&entry.source) else {
            return Ok(());
        };
        Self::refresh(b, now);
        if !Self::may_write(b, entry.epoch, entry.allowed, entry.is_probe, &entry.owner) {
            return Ok(());
        }
        if matches!(b.phase, Phase::HalfOpen { .. }) {
            Self::close_circuit(b);
            return Ok(());
        }
        b.consecutive = 0;
        if count_attempt {
            self.sample(b, now, false);
        }
        Ok(())
    }

    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        let now = self.now();
        let cfg = self.inner.cfg;
        let mut guard = self.lock();
        let Some(b) = guard.0.get_mut(&entry.source) else {
            return Ok(());
        };
        Self::refresh(b, now);
        if !Self::may_write(b, entry.epoch, entry.allowed, entry.is_probe, &entry.owner) {
            return Ok(());
        }
        let half_open = matches!(b.phase, Phase::HalfOpen { .. });
        if !force_open && !counts(reason) {
            // G-69, G-76: recorded for the reason only; a probe is released without transition.
            if half_open {
                b.phase = Phase::HalfOpen { probe: None };
            }
            return Ok(());
        }
        if half_open {
            self.open(b, now);
            return Ok(());
        }
        b.consecutive = b.consecutive.saturating_add(1);
        self.sample(b, now, true);
        if force_open {
            self.open(b, now);
            return Ok(());
        }
        let (calls, failures) = self.window(b, now);
        let evidence = calls >= cfg.min_calls;
        let rate = if calls == 0 {
            0.0
        } else {
            f64::from(failures) / f64::from(calls)
        };
        let rate_trip = evidence && rate >= cfg.fail_rate;
        let healthy = evidence && rate < cfg.fail_rate;
        let consecutive_trip = b.consecutive >= cfg.fail_threshold && !healthy;
        if rate_trip || consecutive_trip {
            self.open(b, now);
        }
        Ok(())
    }

    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        if entry.is_probe {
            self.release_probe_sync(&entry.source, &entry.owner, entry.epoch);
        }
        Ok(())
    }

    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        let now = self.now();
        let cfg = self.inner.cfg;
        let mut guard = self.lock();
        if guard.1 {
            return Err(closed_error());
        }
        let Some(b) = guard.0.get_mut(source) else {
            let mut s = BreakerSnapshot::default();
            s.current_cooldown_s = cfg.cooldown_for(0);
            return Ok(s);
        };
        Self::refresh(b, now);
        let (window_calls, window_failures) = self.window(b, now);
        let mut s = BreakerSnapshot::default();
        s.epoch = b.epoch;
        s.consecutive_failures = b.consecutive;
        s.open_count = b.open_count;
        s.window_calls = window_calls;
        s.window_failures = window_failures;
        match &b.phase {
            Phase::Closed => {
                s.state = BreakerState::Closed;
                s.current_cooldown_s = cfg.cooldown_for(b.opens);
            }
            Phase::Open { until } => {
                s.state = BreakerState::Open;
                s.open_until_s = Some(until.as_secs_f64());
                s.current_cooldown_s = b.last_cooldown_s;
            }
            Phase::HalfOpen { .. } => {
                // The cooldown a failing probe would start next.
                s.state = BreakerState::HalfOpen;
                s.current_cooldown_s = cfg.cooldown_for(b.opens);
            }
        }
        Ok(s)
    }

    async fn close(&self) {
        self.lock().1 = true;
    }

    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        self.release_probe_sync(&probe.source, &probe.owner, probe.epoch);
        true
    }
}
