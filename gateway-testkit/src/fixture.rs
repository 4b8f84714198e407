//! [`Fx`]: the governance fixture shared by the core's tier-1 tests, the hedge harness and the
//! property tests — a `Governor` over the memory backends behind [`HookedLimiter`] and
//! [`HookedBreaker`], a [`ScriptedRunner`], a [`RecordingRowSink`], a [`RecordingSelector`] and
//! the spawned cleanup worker (05 R-10: the test owns the runtime and spawns the worker).
//!
//! Common values per 95: sources with `tpm = 1000`, `est_tokens = 400`, `max_concurrency = 1`
//! ([`source`]); [`FxBuilder::default`] is one source `s1`, `RetryPolicy(3, 0.001, 0.01)`,
//! `QUOTA_FULL = wait`, `CIRCUIT_OPEN = fail_fast`, jitter 0.5, stall window 300 s, poll
//! 0.01 s, breaker threshold 3 with a 60 s cooldown, no hedging. The hedge harness of 60 §14
//! ([`FxBuilder::hedge_after`], [`hedge_stall`](FxBuilder::hedge_stall),
//! [`hedge_off`](FxBuilder::hedge_off)) is two sources `s1`, `s2` in a static order (so `s1` is
//! always the primary and `s2` the hedge), thresholds of [`HEDGE_T`] = 0.05 s and
//! `RetryPolicy(3, 0.01, 0.05)`.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::{FakeClock, TokioClock};
use gateway_core::governor::{CallOptions, Governed, Governor, GovernorBuilder};
use gateway_core::hedge::HedgeConfig;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{NoopPacer, Pacer};
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome, CancelLabel};
use gateway_core::select::{Selector, SourceId, StatsView};
use gateway_ports::{
    BackpressurePolicy, BreakerConfig, CircuitBreaker, Clock, GatewayError, GlobalLimits,
    RateLimiter, RetryPolicy, SourceConfig, SourceStats, WaitPolicy,
};

use crate::hooked::{Effect, HookedBreaker, HookedLimiter, LimiterCall};
use crate::{HangOn, HangingBreaker, Latch, RecordingRowSink, Script, ScriptedRunner, StepHandle};

/// The hedge harness threshold (60 §14): 0.05 s.
pub const HEDGE_T: Duration = Duration::from_millis(50);

/// `RetryPolicy(max_attempts, base, max)` as the original's tests write it (05 R-21).
pub fn retry(max_attempts: u32, backoff_base_s: f64, backoff_max_s: f64) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff_base_s,
        backoff_max_s,
        ..RetryPolicy::default()
    }
}

/// A source with the 95 common fixture values (`tpm = 1000`, `est_tokens = 400`,
/// `max_concurrency = 1`, model `m`, an unroutable base URL).
pub fn source(name: &str) -> SourceConfig {
    let mut s = SourceConfig::new(name, "test", "http://127.0.0.1:9", None, "m");
    s.tpm = 1000;
    s.est_tokens = Some(400);
    s.max_concurrency = 1;
    s
}

/// The static order plus a record of the health feed (30 G-90): `(source, ok)` per outcome.
#[derive(Debug, Default)]
pub struct RecordingSelector {
    feed: Mutex<Vec<(String, bool)>>,
}

impl RecordingSelector {
    /// The outcomes fed so far, in order.
    pub fn feed(&self) -> Vec<(String, bool)> {
        self.feed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Selector for RecordingSelector {
    fn order(&self, sources: &[SourceId], _stats: &StatsView) -> Vec<SourceId> {
        sources.to_vec()
    }
    fn feed_outcome(&self, source: &str, ok: bool) {
        self.feed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((source.to_owned(), ok));
    }
}

/// A gate on one source's `try_acquire` ([`FxBuilder::gate_source`], 60 H-83): acquisitions for
/// the source park until [`open`](Self::open).
#[derive(Debug, Clone)]
pub struct SourceGate {
    entered: Arc<Latch>,
    release: Arc<Latch>,
}

impl SourceGate {
    /// Installs the gate on `limiter` for `source`.
    pub fn install(limiter: &HookedLimiter, source: &str) -> Self {
        let gate = Self {
            entered: Arc::new(Latch::new()),
            release: Arc::new(Latch::new()),
        };
        let (entered, release, gated) = (
            Arc::clone(&gate.entered),
            Arc::clone(&gate.release),
            source.to_owned(),
        );
        limiter.before(move |c| match c {
            LimiterCall::TryAcquire { source, .. } if *source == gated => {
                Effect::park_until(&entered, &release)
            }
            _ => Effect::Forward,
        });
        gate
    }

    /// Waits until an acquisition for the gated source is parked.
    pub async fn entered(&self) {
        self.entered.wait().await;
    }

    /// Lets parked and later acquisitions through.
    pub fn open(&self) {
        self.release.open();
    }
}

/// A built fixture (see the [module docs](self)).
pub struct Fx {
    /// The governor under test.
    pub gov: Governor,
    /// The scripted runner every call of [`chat`](Self::chat) plays.
    pub runner: ScriptedRunner,
    /// The governor's row sink.
    pub sink: Arc<RecordingRowSink>,
    /// The memory limiter (read its stats directly).
    pub limiter: Arc<MemoryRateLimiter>,
    /// The limiter port the governor holds: the memory limiter behind hooks.
    pub limiter_port: Arc<HookedLimiter>,
    /// The gate of [`FxBuilder::gate_source`].
    pub gated: Option<SourceGate>,
    /// The breaker port the governor holds (the memory breaker, behind the hanging wrapper
    /// with [`FxBuilder::hang`], behind hooks).
    pub breaker: Arc<dyn CircuitBreaker>,
    /// The same port, typed: install breaker hooks here.
    pub breaker_port: Arc<HookedBreaker>,
    /// The hanging wrapper of [`FxBuilder::hang`].
    pub hanging: Option<Arc<HangingBreaker>>,
    /// The governor's selector.
    pub selector: Arc<RecordingSelector>,
    /// The governor's clock.
    pub clock: Arc<dyn Clock>,
    /// The fake clock of [`FxBuilder::fake_clock`].
    pub fake: Option<Arc<FakeClock>>,
    /// The spawned cleanup worker.
    pub worker: tokio::task::JoinHandle<()>,
    sources: Vec<String>,
}

impl fmt::Debug for Fx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fx")
            .field("gov", &self.gov)
            .field("runner", &self.runner)
            .field("sink", &self.sink)
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}

impl Fx {
    /// The memory limiter's stats of `source` (panics on a backend error: test support).
    pub async fn stats(&self, source: &str) -> SourceStats {
        match self.limiter.source_stats(source).await {
            Ok(s) => s,
            Err(e) => panic!("source_stats({source}): {e}"),
        }
    }

    /// A chat call with the default options (streamed).
    pub async fn chat(&self) -> Result<Governed, GatewayError> {
        self.chat_with(CallOptions::default()).await
    }

    /// A non-stream chat call.
    pub async fn chat_non_stream(&self) -> Result<Governed, GatewayError> {
        self.chat_with(CallOptions::default().with_stream(false))
            .await
    }

    /// A chat call with `options`.
    pub async fn chat_with(&self, options: CallOptions) -> Result<Governed, GatewayError> {
        self.gov.run_chat(&self.runner, options).await
    }

    /// Queues a script for the next attempt on `source`.
    pub fn push_for(&self, source: &str, script: Script) -> StepHandle {
        self.runner.push_for(source, script)
    }

    /// Upstream calls so far (sources in start order).
    pub fn calls(&self) -> Vec<String> {
        self.runner.calls()
    }

    /// Asserts `(tpm_used, inflight)` of `source`.
    pub async fn assert_usage(&self, source: &str, tpm_used: u64, inflight: u32) {
        let s = self.stats(source).await;
        assert_eq!(
            (s.tpm_used, s.inflight),
            (tpm_used, inflight),
            "usage of {source}"
        );
    }

    /// Asserts no configured source holds a permit.
    pub async fn assert_idle(&self) {
        for s in &self.sources {
            assert_eq!(self.stats(s).await.inflight, 0, "inflight of {s}");
        }
    }

    /// The attempt rows sorted by attempt number.
    pub fn rows(&self) -> Vec<AttemptRowFacts> {
        let mut rows = self.sink.attempts();
        rows.sort_by_key(|r| r.attempt);
        rows
    }

    /// `(source, label)` of every attempt row in attempt order ([`row_label`]).
    pub fn row_labels(&self) -> Vec<(String, String)> {
        self.rows()
            .iter()
            .map(|r| (r.source.name.clone(), row_label(r)))
            .collect()
    }
}

/// An attempt row's label: `"ok"`, the error type, `"cancelled"` or `"hedge_cancelled"`.
pub fn row_label(r: &AttemptRowFacts) -> String {
    match &r.outcome {
        AttemptRowOutcome::Success(_) => "ok".to_owned(),
        AttemptRowOutcome::Failed(e) => e.type_name().to_owned(),
        AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled) => "hedge_cancelled".to_owned(),
        AttemptRowOutcome::Cancelled(_) => "cancelled".to_owned(),
        _ => "other".to_owned(),
    }
}

/// Builds an [`Fx`]; every field is public so a test writes
/// `FxBuilder { field: value, ..FxBuilder::default() }.build()`.
#[derive(Debug)]
pub struct FxBuilder {
    /// The scope's sources.
    pub sources: Vec<SourceConfig>,
    /// The retry policy.
    pub retry: RetryPolicy,
    /// Backpressure (stall window, poll interval).
    pub backpressure: BackpressurePolicy,
    /// The memory breaker's configuration (its cooldown is also the governor's).
    pub breaker: BreakerConfig,
    /// `QUOTA_FULL`.
    pub quota_full: WaitPolicy,
    /// `CIRCUIT_OPEN`.
    pub circuit_open: WaitPolicy,
    /// The call deadline.
    pub deadline: Option<Duration>,
    /// The waiter cap.
    pub max_waiters: Option<usize>,
    /// Wraps the breaker in a [`HangingBreaker`] parking this write-back.
    pub hang: Option<HangOn>,
    /// The jitter draw (a constant).
    pub jitter: f64,
    /// Runs the governor (and the runner's `advance_clock` steps) on a [`FakeClock`].
    pub fake_clock: bool,
    /// The pacer (`None`: the governor's default).
    pub pacer: Option<Arc<dyn Pacer>>,
    /// The row sink to use (with its delay or tick); `None`: a plain one.
    pub sink: Option<RecordingRowSink>,
    /// With `fake_clock`: every row advances the fake clock by this much.
    pub tick_rows: Option<Duration>,
    /// The hedge configuration.
    pub hedge: HedgeConfig,
    /// Parks `try_acquire` of this source until [`SourceGate::open`] (60 H-83).
    pub gate_source: Option<&'static str>,
}

impl Default for FxBuilder {
    fn default() -> Self {
        Self {
            sources: vec![source("s1")],
            retry: retry(3, 0.001, 0.01),
            backpressure: BackpressurePolicy {
                stall_window_s: 300.0,
                poll_interval_s: 0.01,
            },
            breaker: BreakerConfig {
                fail_threshold: 3,
                cooldown_s: 60.0,
                probe_ttl_s: Some(120.0),
                ..BreakerConfig::default()
            },
            quota_full: WaitPolicy::Wait,
            circuit_open: WaitPolicy::FailFast,
            deadline: None,
            max_waiters: None,
            hang: None,
            jitter: 0.5,
            fake_clock: false,
            pacer: Some(Arc::new(NoopPacer)),
            sink: None,
            tick_rows: None,
            hedge: HedgeConfig::off(),
            gate_source: None,
        }
    }
}

impl FxBuilder {
    /// The hedge harness with no hedging (60 §14): sources `s1`, `s2`,
    /// `RetryPolicy(3, 0.01, 0.05)`.
    pub fn hedge_off() -> Self {
        Self {
            sources: vec![source("s1"), source("s2")],
            retry: retry(3, 0.01, 0.05),
            ..Self::default()
        }
    }

    /// The hedge harness, first-token hedge only (`hedge_after_s = 0.05`).
    pub fn hedge_after() -> Self {
        Self {
            hedge: hedge_config(Some(HEDGE_T), None),
            ..Self::hedge_off()
        }
    }

    /// The hedge harness, stall hedge only (`stall_after_s = 0.05`).
    pub fn hedge_stall() -> Self {
        Self {
            hedge: hedge_config(None, Some(HEDGE_T)),
            ..Self::hedge_off()
        }
    }

    /// Replaces the sources by fixture sources with these names.
    pub fn sources(mut self, names: &[&str]) -> Self {
        self.sources = names.iter().map(|n| source(n)).collect();
        self
    }

    /// Replaces the hedge configuration.
    pub fn hedge(mut self, hedge: HedgeConfig) -> Self {
        self.hedge = hedge;
        self
    }

    /// `RetryPolicy(n, base, max)` keeping the current backoff.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.retry.max_attempts = n;
        self
    }

    /// Builds the fixture and spawns its cleanup worker (inside a tokio runtime).
    pub fn build(self) -> Fx {
        let fake = self.fake_clock.then(|| Arc::new(FakeClock::new()));
        let clock: Arc<dyn Clock> = match &fake {
            Some(f) => f.clone(),
            None => Arc::new(TokioClock::new()),
        };
        let limiter = Arc::new(MemoryRateLimiter::new(
            "llm",
            &self.sources,
            GlobalLimits::default(),
            100.0,
            clock.clone(),
        ));
        let limiter_port = Arc::new(HookedLimiter::new(limiter.clone()));
        let gated = self
            .gate_source
            .map(|s| SourceGate::install(&limiter_port, s));
        let memory_breaker: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
            "llm",
            self.breaker,
            clock.clone(),
        ));
        let hanging = self
            .hang
            .map(|h| Arc::new(HangingBreaker::new(memory_breaker.clone(), h)));
        let inner_breaker: Arc<dyn CircuitBreaker> = match &hanging {
            Some(h) => h.clone(),
            None => memory_breaker,
        };
        let breaker_port = Arc::new(HookedBreaker::new(inner_breaker));
        let breaker: Arc<dyn CircuitBreaker> = breaker_port.clone();
        let mut sink = self.sink.unwrap_or_default();
        if let (Some(tick), Some(f)) = (self.tick_rows, &fake) {
            sink = sink.with_tick(f.clone(), tick);
        }
        let sink = Arc::new(sink);
        let selector = Arc::new(RecordingSelector::default());
        let jitter = self.jitter;
        let sources: Vec<String> = self.sources.iter().map(|s| s.name.clone()).collect();
        let limiter_dyn: Arc<dyn RateLimiter> = limiter_port.clone();
        let mut b = GovernorBuilder::new("llm", self.sources, limiter_dyn, breaker.clone())
            .selector(selector.clone())
            .clock(clock.clone())
            .jitter(Arc::new(move || jitter))
            .retry(self.retry)
            .backpressure(self.backpressure)
            .quota_full(self.quota_full)
            .circuit_open(self.circuit_open)
            .breaker_cooldown_s(self.breaker.cooldown_s)
            .call_deadline(self.deadline)
            .row_sink(sink.clone())
            .wakeup(limiter.notify())
            .hedge(self.hedge);
        if let Some(p) = self.pacer {
            b = b.pacer(p);
        }
        if let Some(m) = self.max_waiters {
            b = b.max_waiters(m);
        }
        let (gov, rx) = b.build();
        let worker = tokio::spawn(run_cleanup_worker(rx));
        let runner = match &fake {
            Some(f) => ScriptedRunner::new().with_clock(f.clone()),
            None => ScriptedRunner::new(),
        };
        Fx {
            gov,
            runner,
            sink,
            limiter,
            limiter_port,
            gated,
            breaker,
            breaker_port,
            hanging,
            selector,
            clock,
            fake,
            worker,
            sources,
        }
    }
}

fn hedge_config(after: Option<Duration>, stall: Option<Duration>) -> HedgeConfig {
    match HedgeConfig::new(after, stall, 1) {
        Ok(h) => h,
        Err(e) => panic!("the harness hedge configuration is valid: {e}"),
    }
}

/// Builds the default fixture.
pub fn fx() -> Fx {
    FxBuilder::default().build()
}
