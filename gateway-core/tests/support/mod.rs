//! Shared fixtures of the governance tests: a `Governor` over the memory backends, a
//! `ScriptedRunner`, a `RecordingRowSink` and the spawned cleanup worker (05 R-10: core tests
//! spawn it with tokio as a dev-dependency). Common values per 95: `tpm = 1000`,
//! `est_tokens = 400`, `max_concurrency = 1`.
#![allow(
    clippy::disallowed_methods,
    reason = "the fixture owns the runtime and spawns the cleanup worker; the library never spawns"
)]
#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    reason = "test fixture helpers panic on backend errors by design"
)]

use std::sync::Arc;
use std::time::Duration;

use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::{FakeClock, TokioClock};
use gateway_core::governor::{CallOptions, Governed, Governor, GovernorBuilder};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{NoopPacer, Pacer};
use gateway_core::select::StaticSelector;
use gateway_core::testing::{HangOn, HangingBreaker, RecordingRowSink, ScriptedRunner};
use gateway_ports::{
    AttemptError, AttemptFailure, BackpressurePolicy, BreakerConfig, CircuitBreaker, Clock,
    ErrorOperation, GatewayError, GlobalLimits, RateLimiter, ResultInvalidDetails, RetryPolicy,
    SourceConfig, SourceStats, WaitPolicy,
};

/// `RetryPolicy(max_attempts, base, max)` as the original's tests write it (05 R-21).
pub fn retry(max_attempts: u32, backoff_base_s: f64, backoff_max_s: f64) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff_base_s,
        backoff_max_s,
        ..RetryPolicy::default()
    }
}

/// A source with the 95 common fixture values.
pub fn source(name: &str) -> SourceConfig {
    let mut s = SourceConfig::new(name, "test", "http://127.0.0.1:9", None, "m");
    s.tpm = 1000;
    s.est_tokens = Some(400);
    s.max_concurrency = 1;
    s
}

pub fn failure(source: &str, msg: &str) -> AttemptFailure {
    let mut f = AttemptFailure::new(format!("{source}: {msg}"), ErrorOperation::Chat);
    f.source_name = Some(source.to_owned());
    f
}

/// `Transient(status)`.
pub fn transient(status: u16) -> AttemptError {
    let mut f = failure("s", &format!("HTTP {status}"));
    f.http_status = Some(status);
    AttemptError::transient(f)
}

/// A 429 `Transient` with an optional hint.
pub fn rate_limited(hint_s: Option<f64>) -> AttemptError {
    let mut f = failure("s", "rate limited: 429");
    f.http_status = Some(429);
    f.retry_after_s = hint_s;
    AttemptError::transient(f)
}

/// `SourceDead("401", status 401)`.
pub fn dead() -> AttemptError {
    let mut f = failure("s", "HTTP 401");
    f.http_status = Some(401);
    AttemptError::source_dead(f)
}

/// `RequestRejected` 400.
pub fn rejected() -> AttemptError {
    let mut f = failure("s", "HTTP 400 | bad");
    f.http_status = Some(400);
    f.body_text = Some("{\"error\":{\"message\":\"bad\"}}".to_owned());
    AttemptError::request_rejected(f)
}

/// `ResultInvalid`.
pub fn invalid() -> AttemptError {
    AttemptError::result_invalid(ResultInvalidDetails::new(failure("s", "empty_completion")))
}

pub struct Fx {
    pub gov: Governor,
    pub runner: ScriptedRunner,
    pub sink: Arc<RecordingRowSink>,
    pub limiter: Arc<MemoryRateLimiter>,
    pub breaker: Arc<dyn CircuitBreaker>,
    pub hanging: Option<Arc<HangingBreaker>>,
    pub clock: Arc<dyn Clock>,
    pub fake: Option<Arc<FakeClock>>,
    pub worker: tokio::task::JoinHandle<()>,
}

impl Fx {
    pub async fn stats(&self, source: &str) -> SourceStats {
        self.limiter.source_stats(source).await.unwrap()
    }

    pub async fn chat(&self) -> Result<Governed, GatewayError> {
        self.gov
            .run_chat(&self.runner, CallOptions::default())
            .await
    }

    pub async fn chat_with(&self, options: CallOptions) -> Result<Governed, GatewayError> {
        self.gov.run_chat(&self.runner, options).await
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
}

pub struct FxBuilder {
    pub sources: Vec<SourceConfig>,
    pub retry: RetryPolicy,
    pub backpressure: BackpressurePolicy,
    pub breaker: BreakerConfig,
    pub quota_full: WaitPolicy,
    pub circuit_open: WaitPolicy,
    pub deadline: Option<Duration>,
    pub max_waiters: Option<usize>,
    pub hang: Option<HangOn>,
    pub jitter: f64,
    pub fake_clock: bool,
    pub pacer: Option<Arc<dyn Pacer>>,
    pub sink: Option<RecordingRowSink>,
    /// With `fake_clock`: every row advances the fake clock by this much.
    pub tick_rows: Option<Duration>,
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
        }
    }
}

impl FxBuilder {
    pub fn sources(mut self, names: &[&str]) -> Self {
        self.sources = names.iter().map(|n| source(n)).collect();
        self
    }

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
        let memory_breaker: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
            "llm",
            self.breaker,
            clock.clone(),
        ));
        let hanging = self
            .hang
            .map(|h| Arc::new(HangingBreaker::new(memory_breaker.clone(), h)));
        let breaker: Arc<dyn CircuitBreaker> = match &hanging {
            Some(h) => h.clone(),
            None => memory_breaker,
        };
        let mut sink = self.sink.unwrap_or_default();
        if let (Some(tick), Some(f)) = (self.tick_rows, &fake) {
            sink = sink.with_tick(f.clone(), tick);
        }
        let sink = Arc::new(sink);
        let jitter = self.jitter;
        let mut b = GovernorBuilder::new("llm", self.sources, limiter.clone(), breaker.clone())
            .selector(Arc::new(StaticSelector))
            .clock(clock.clone())
            .jitter(Arc::new(move || jitter))
            .retry(self.retry)
            .backpressure(self.backpressure)
            .quota_full(self.quota_full)
            .circuit_open(self.circuit_open)
            .breaker_cooldown_s(self.breaker.cooldown_s)
            .call_deadline(self.deadline)
            .row_sink(sink.clone())
            .wakeup(limiter.notify());
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
            breaker,
            hanging,
            clock,
            fake,
            worker,
        }
    }
}

pub fn fx() -> Fx {
    FxBuilder::default().build()
}

/// The unavailable payload of an error (panics otherwise; test support).
pub fn unavailable(e: &GatewayError) -> &gateway_ports::Unavailable {
    e.unavailable()
        .unwrap_or_else(|| panic!("expected the unavailable family, got {e:?}"))
}
