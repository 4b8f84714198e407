//! Fixture of the hedge tests (60 §14 harness, 95 §10–§11): two sources `s1`, `s2` in a static
//! order (so `s1` is always the primary and `s2` the hedge), thresholds of 0.05 s on the paused
//! runtime clock, `RetryPolicy(max_attempts, 0.01, 0.05)`, stall window 300 s, poll 0.01 s,
//! `QUOTA_FULL = wait`, sources with `tpm = 1000`, `est_tokens = 400`.
//!
//! Beyond `support`: a runner wrapper that records which attempts got a progress signal
//! (H-79, H-105), a selector that records the health feed (H-88), and a limiter wrapper whose
//! acquisition for one source is parked until the test opens it (H-83).
#![allow(
    clippy::disallowed_methods,
    reason = "the fixture owns the runtime and spawns the cleanup worker; the library never spawns"
)]
#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    reason = "test fixture helpers panic on backend errors by design"
)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::{FakeClock, TokioClock};
use gateway_core::governor::{CallOptions, Governed, Governor, GovernorBuilder};
use gateway_core::hedge::HedgeConfig;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::NoopPacer;
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome, CancelLabel};
use gateway_core::select::{Selector, SourceId, StatsView};
use gateway_core::testing::{Latch, RecordingRowSink, ScriptedRunner};
use gateway_ports::{
    Acquire, BackendError, BackpressurePolicy, BreakerConfig, CircuitBreaker, Clock, GatewayError,
    GlobalLimits, RateLimiter, RetryPolicy, SourceConfig, SourceStats, WaitPolicy,
};

use crate::support::{retry, source};

/// The harness threshold (60 §14): 0.05 s.
pub const T: Duration = Duration::from_millis(50);

/// `ms` milliseconds.
pub const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A measured success `10 + 5` with this content (60 §14: "a successful script returns 10 + 5
/// tokens").
pub fn ok_result(content: &str) -> TransportResult {
    let mut r = TransportResult::ok(10, 5);
    r.content = content.to_owned();
    r
}

/// Records `(source, signals present)` per attempt, then plays the scripted attempt.
#[derive(Debug, Clone, Default)]
pub struct SignalRunner {
    pub scripted: ScriptedRunner,
    seen: Arc<Mutex<Vec<(String, bool)>>>,
}

impl SignalRunner {
    /// `(source, got a progress signal)` per attempt, in start order.
    pub fn seen(&self) -> Vec<(String, bool)> {
        self.seen.lock().unwrap().clone()
    }

    /// Just the "got a signal" flags (the `[true, false]` pattern of H-79 / H-105).
    pub fn signal_pattern(&self) -> Vec<bool> {
        self.seen().into_iter().map(|(_, s)| s).collect()
    }
}

impl AttemptRunner for SignalRunner {
    fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        self.seen
            .lock()
            .unwrap()
            .push((ctx.source.name.clone(), signals.is_some()));
        self.scripted.run(ctx, signals, control)
    }
}

/// The static order plus a record of the health feed (30 G-90).
#[derive(Debug, Default)]
pub struct RecordingSelector {
    feed: Mutex<Vec<(String, bool)>>,
}

impl RecordingSelector {
    pub fn feed(&self) -> Vec<(String, bool)> {
        self.feed.lock().unwrap().clone()
    }
}

impl Selector for RecordingSelector {
    fn order(&self, sources: &[SourceId], _stats: &StatsView) -> Vec<SourceId> {
        sources.to_vec()
    }
    fn feed_outcome(&self, source: &str, ok: bool) {
        self.feed.lock().unwrap().push((source.to_owned(), ok));
    }
}

/// A limiter whose `try_acquire` for `gated` parks until [`GatedLimiter::open`] (H-83).
#[derive(Debug)]
pub struct GatedLimiter {
    inner: Arc<MemoryRateLimiter>,
    gated: String,
    entered: Latch,
    opened: Latch,
}

impl GatedLimiter {
    pub fn new(inner: Arc<MemoryRateLimiter>, gated: &str) -> Self {
        Self {
            inner,
            gated: gated.to_owned(),
            entered: Latch::new(),
            opened: Latch::new(),
        }
    }

    /// Waits until an acquisition for the gated source is parked.
    pub async fn entered(&self) {
        self.entered.wait().await;
    }

    /// Lets parked and later acquisitions through.
    pub fn open(&self) {
        self.opened.open();
    }
}

#[async_trait]
impl RateLimiter for GatedLimiter {
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError> {
        if source == self.gated {
            self.entered.open();
            self.opened.wait().await;
        }
        self.inner.try_acquire(source, est_tokens).await
    }
    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError> {
        self.inner.source_stats(source).await
    }
    async fn mark_progress(&self) -> Result<(), BackendError> {
        self.inner.mark_progress().await
    }
    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        self.inner.progress_age_s().await
    }
}

pub struct HFx {
    pub gov: Governor,
    pub runner: SignalRunner,
    pub sink: Arc<RecordingRowSink>,
    pub limiter: Arc<MemoryRateLimiter>,
    pub gated: Option<Arc<GatedLimiter>>,
    pub breaker: Arc<dyn CircuitBreaker>,
    pub selector: Arc<RecordingSelector>,
    pub clock: Arc<dyn Clock>,
    pub fake: Option<Arc<FakeClock>>,
    pub worker: tokio::task::JoinHandle<()>,
}

impl HFx {
    /// Queues a script for the next attempt on `source`.
    pub fn push_for(
        &self,
        source: &str,
        script: gateway_core::testing::Script,
    ) -> gateway_core::testing::StepHandle {
        self.runner.scripted.push_for(source, script)
    }

    /// Upstream calls so far (sources in start order).
    pub fn calls(&self) -> Vec<String> {
        self.runner.scripted.calls()
    }

    /// A streaming chat call (the stall tests' default).
    pub async fn chat(&self) -> Result<Governed, GatewayError> {
        self.chat_with(CallOptions::default().with_stream(true))
            .await
    }

    /// A non-stream chat call.
    pub async fn chat_non_stream(&self) -> Result<Governed, GatewayError> {
        self.chat_with(CallOptions::default().with_stream(false))
            .await
    }

    pub async fn chat_with(&self, options: CallOptions) -> Result<Governed, GatewayError> {
        self.gov.run_chat(&self.runner, options).await
    }

    pub async fn stats(&self, source: &str) -> SourceStats {
        self.limiter.source_stats(source).await.unwrap()
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

    /// Asserts both harness sources hold no permit.
    pub async fn assert_idle(&self) {
        for s in ["s1", "s2"] {
            assert_eq!(self.stats(s).await.inflight, 0, "inflight of {s}");
        }
    }

    /// The attempt rows sorted by attempt number.
    pub fn rows(&self) -> Vec<AttemptRowFacts> {
        let mut rows = self.sink.attempts();
        rows.sort_by_key(|r| r.attempt);
        rows
    }

    /// `(source, label)` of every attempt row in attempt order, where the label is `"ok"`, the
    /// error type, `"cancelled"` or `"hedge_cancelled"`.
    pub fn row_labels(&self) -> Vec<(String, String)> {
        self.rows()
            .iter()
            .map(|r| (r.source.name.clone(), label(r)))
            .collect()
    }
}

/// `"ok"`, the error type, `"cancelled"` or `"hedge_cancelled"`.
pub fn label(r: &AttemptRowFacts) -> String {
    match &r.outcome {
        AttemptRowOutcome::Success(_) => "ok".to_owned(),
        AttemptRowOutcome::Failed(e) => e.type_name().to_owned(),
        AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled) => "hedge_cancelled".to_owned(),
        AttemptRowOutcome::Cancelled(_) => "cancelled".to_owned(),
        _ => "other".to_owned(),
    }
}

/// The `(stall_ms, stall_count)` a row carries: the success's values, `None` otherwise (80 T-28).
pub fn row_stall(r: &AttemptRowFacts) -> (Option<f64>, Option<u32>) {
    match &r.outcome {
        AttemptRowOutcome::Success(t) => (t.stall_ms, t.stall_count),
        _ => (None, None),
    }
}

pub struct HFxBuilder {
    pub sources: Vec<SourceConfig>,
    pub hedge: HedgeConfig,
    pub retry: RetryPolicy,
    pub backpressure: BackpressurePolicy,
    pub deadline: Option<Duration>,
    pub fake_clock: bool,
    pub gate_source: Option<&'static str>,
    pub breaker: BreakerConfig,
}

impl Default for HFxBuilder {
    fn default() -> Self {
        Self {
            sources: vec![source("s1"), source("s2")],
            hedge: HedgeConfig::new(Some(T), None, 1).unwrap(),
            retry: retry(3, 0.01, 0.05),
            backpressure: BackpressurePolicy {
                stall_window_s: 300.0,
                poll_interval_s: 0.01,
            },
            deadline: None,
            fake_clock: false,
            gate_source: None,
            breaker: BreakerConfig {
                fail_threshold: 3,
                cooldown_s: 60.0,
                probe_ttl_s: Some(120.0),
                ..BreakerConfig::default()
            },
        }
    }
}

impl HFxBuilder {
    /// First-token hedge only (`hedge_after_s = 0.05`).
    pub fn after() -> Self {
        Self::default()
    }

    /// Stall hedge only (`stall_after_s = 0.05`).
    pub fn stall() -> Self {
        Self {
            hedge: HedgeConfig::new(None, Some(T), 1).unwrap(),
            ..Self::default()
        }
    }

    /// No hedging.
    pub fn off() -> Self {
        Self {
            hedge: HedgeConfig::off(),
            ..Self::default()
        }
    }

    pub fn sources(mut self, names: &[&str]) -> Self {
        self.sources = names.iter().map(|n| source(n)).collect();
        self
    }

    pub fn hedge(mut self, hedge: HedgeConfig) -> Self {
        self.hedge = hedge;
        self
    }

    pub fn max_attempts(mut self, n: u32) -> Self {
        self.retry = retry(n, 0.01, 0.05);
        self
    }

    pub fn build(self) -> HFx {
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
        let gated = self
            .gate_source
            .map(|s| Arc::new(GatedLimiter::new(limiter.clone(), s)));
        let as_port: Arc<dyn RateLimiter> = match &gated {
            Some(g) => g.clone(),
            None => limiter.clone(),
        };
        let breaker: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
            "llm",
            self.breaker,
            clock.clone(),
        ));
        let sink = Arc::new(RecordingRowSink::new());
        let selector = Arc::new(RecordingSelector::default());
        let (gov, rx) = GovernorBuilder::new("llm", self.sources, as_port, breaker.clone())
            .selector(selector.clone())
            .pacer(Arc::new(NoopPacer))
            .clock(clock.clone())
            .jitter(Arc::new(|| 0.5))
            .retry(self.retry)
            .backpressure(self.backpressure)
            .quota_full(WaitPolicy::Wait)
            .circuit_open(WaitPolicy::FailFast)
            .breaker_cooldown_s(self.breaker.cooldown_s)
            .call_deadline(self.deadline)
            .row_sink(sink.clone())
            .wakeup(limiter.notify())
            .hedge(self.hedge)
            .build();
        let worker = tokio::spawn(run_cleanup_worker(rx));
        let scripted = match &fake {
            Some(f) => ScriptedRunner::new().with_clock(f.clone()),
            None => ScriptedRunner::new(),
        };
        HFx {
            gov,
            runner: SignalRunner {
                scripted,
                seen: Arc::default(),
            },
            sink,
            limiter,
            gated,
            breaker,
            selector,
            clock,
            fake,
            worker,
        }
    }
}

/// Live tasks of the current runtime (05 R-7: nothing is spawned in the call path).
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}
