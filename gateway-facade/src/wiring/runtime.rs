//! A running governed scope ([`Runtime`]): the governor, its components and telemetry, the tasks
//! it spawned, and their quiesce / close.
//!
//! Separate from the assembly that produces it: this is the client's life after construction.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use gateway_core::cache::{ChatCache, DEFAULT_CACHE_TTL, MemoryCache};
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::TokioClock;
use gateway_core::governor::{Governor, GovernorBuilder};
use gateway_core::hedge::HedgeConfig;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_core::select::{Selector, selector_for};
use gateway_core::telemetry::{EmitterConfig, TelemetryEmitter};
use gateway_ports::{
    CircuitBreaker, Clock, ConfigError, RateLimiter, ResponseCache, TelemetryStatus,
    TelemetryStatusProvider,
};
use tokio::task::JoinHandle;

use crate::assembly::ClientPlan;
use crate::status::SourceStatus;

use super::{Assembly, CacheSource, RecorderSource, WORKER_JOIN_BOUND};

/// The telemetry side of a runtime.
struct Telemetry {
    emitter: TelemetryEmitter,
    owned: bool,
}

/// A running governed scope: the governor, its components and the tasks it spawned.
pub(crate) struct Runtime {
    pub(crate) governor: Governor,
    pub(crate) plan: ClientPlan,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) redact_ips: bool,
    limiter: Arc<dyn RateLimiter>,
    breaker: Arc<dyn CircuitBreaker>,
    pacer: Arc<dyn Pacer>,
    selector: Arc<dyn Selector>,
    telemetry: Option<Telemetry>,
    /// The chat response cache (`None` = off) and whether the client owns its backend.
    pub(crate) cache: Option<ChatCache>,
    owns_cache: bool,
    owns_limiter: bool,
    owns_breaker: bool,
    cleanup_worker: Mutex<Option<JoinHandle<()>>>,
    closed: tokio::sync::Mutex<bool>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("governor", &self.governor)
            .field("telemetry", &self.telemetry.as_ref().map(|t| &t.emitter))
            .field("owns_limiter", &self.owns_limiter)
            .field("owns_breaker", &self.owns_breaker)
            .finish_non_exhaustive()
    }
}

/// Names the constructor the caller used in a `runtime.missing` error: the environment paths
/// assemble through the settings path, whose origin would otherwise name `from_settings`.
pub(crate) fn named_constructor(mut error: ConfigError, constructor: &str) -> ConfigError {
    if error.code == "runtime.missing" {
        constructor.clone_into(&mut error.origin);
    }
    error
}

impl Runtime {
    /// Builds the components, the governor and the workers (stage F's "build owned components").
    /// Errors: `runtime.missing` outside a tokio runtime; `telemetry.text_cap` from
    /// the emitter (already refused by F4).
    pub(crate) fn start(a: Assembly) -> Result<Self, ConfigError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            ConfigError::new(
                "runtime.missing",
                a.origin,
                "client assembly needs a tokio runtime (it spawns the cleanup and telemetry workers): \
                 build the client inside `#[tokio::main]` or `Runtime::block_on`",
            )
        })?;
        let plan = a.plan;
        let clock: Arc<dyn Clock> = a.clock.unwrap_or_else(|| Arc::new(TokioClock::new()));
        let mut wakeups = Vec::new();
        let (limiter, owns_limiter): (Arc<dyn RateLimiter>, bool) =
            match (a.limiter, a.owned_limiter) {
                (Some(limiter), _) => (limiter, false),
                (None, Some(limiter)) => (limiter, true),
                (None, None) => {
                    let memory = MemoryRateLimiter::new(
                        &plan.scope,
                        &plan.sources,
                        plan.policy.global_limits,
                        a.lease_ttl_s,
                        Arc::clone(&clock),
                    );
                    wakeups.push(memory.notify());
                    (Arc::new(memory), true)
                }
            };
        let (breaker, owns_breaker): (Arc<dyn CircuitBreaker>, bool) =
            match (a.breaker, a.owned_breaker) {
                (Some(breaker), _) => (breaker, false),
                (None, Some(breaker)) => (breaker, true),
                (None, None) => (
                    Arc::new(MemoryCircuitBreaker::new(
                        &plan.scope,
                        plan.policy.breaker,
                        Arc::clone(&clock),
                    )),
                    true,
                ),
            };
        let pacer = a
            .governance
            .pacer
            .unwrap_or_else(|| Arc::new(AimdPacer::new(f64::from(plan.pacer_ceiling))));
        let selector = a
            .governance
            .selector
            .unwrap_or_else(|| selector_for(plan.policy.selector, Arc::clone(&clock)));
        let telemetry = match a.recorder {
            RecorderSource::None => None,
            RecorderSource::Owned(recorder) => Some((recorder, true)),
            RecorderSource::Injected(recorder) => Some((recorder, false)),
        };
        let telemetry = match telemetry {
            None => None,
            Some((recorder, owned)) => {
                let config = EmitterConfig::default()
                    .with_pricing(a.pricing)
                    .with_text_cap(
                        plan.policy
                            .telemetry_text_cap
                            .map(|c| usize::try_from(c).unwrap_or(usize::MAX)),
                    )
                    .with_redact_ips(a.redact_ips);
                let emitter = TelemetryEmitter::new(recorder, config)?;
                Some(Telemetry { emitter, owned })
            }
        };
        let (cache, owns_cache): (Option<Arc<dyn ResponseCache>>, bool) = match a.cache {
            CacheSource::None => (None, false),
            CacheSource::Memory(max) => (
                Some(Arc::new(MemoryCache::new(max, Arc::clone(&clock)))),
                true,
            ),
            CacheSource::Owned(cache) => (Some(cache), true),
            CacheSource::Injected(cache) => (Some(cache), false),
        };
        let cache = cache.map(|backend| {
            ChatCache::new(
                backend,
                &plan.sources,
                a.cache_options
                    .namespace
                    .clone()
                    .unwrap_or_else(|| plan.scope.clone()),
                a.cache_options.ttl.unwrap_or(DEFAULT_CACHE_TTL),
            )
            .with_salt(a.cache_options.salt.clone())
        });
        let hedge = if a.hedging {
            plan.hedge
        } else {
            HedgeConfig::off()
        };
        let breaker_port = Arc::clone(&breaker);
        let mut builder = GovernorBuilder::new(
            plan.scope.clone(),
            plan.sources.clone(),
            Arc::clone(&limiter),
            breaker_port,
        )
        .pacer(Arc::clone(&pacer))
        .selector(Arc::clone(&selector))
        .clock(Arc::clone(&clock))
        .policy(&plan.policy)?
        .hedge(hedge)
        .call_deadline(plan.call_deadline);
        if let Some(jitter) = a.governance.jitter {
            builder = builder.jitter(jitter);
        }
        if let Some(t) = &telemetry {
            builder = builder.row_sink(Arc::new(t.emitter.clone()));
        }
        for notify in wakeups {
            builder = builder.wakeup(notify);
        }
        let (governor, rx) = builder.build();
        let cleanup_worker = handle.spawn(run_cleanup_worker(rx));
        Ok(Self {
            governor,
            plan,
            clock,
            redact_ips: a.redact_ips,
            limiter,
            breaker,
            pacer,
            selector,
            telemetry,
            cache,
            owns_cache,
            owns_limiter,
            owns_breaker,
            cleanup_worker: Mutex::new(Some(cleanup_worker)),
            closed: tokio::sync::Mutex::new(false),
        })
    }

    /// Drains the cleanup queue, flushes the recorder, then sends what the limiter and the
    /// breaker buffered (with Redis: finished calls' exits, success samples), so every other
    /// process sees this client's calls as done.
    pub(crate) async fn quiesce(&self) {
        self.governor.quiesce().await;
        self.limiter.flush().await;
        self.breaker.flush().await;
    }

    /// Idempotent close (ownership): the governor refuses
    /// new calls, drains its queue (bounded), flushes the sink and shuts the queue; the cleanup
    /// worker this runtime spawned is awaited (bounded); then the owned components are closed,
    /// each exactly once, and the limiter and breaker it does not own are flushed. A concurrent
    /// second `close()` waits for the first.
    pub(crate) async fn close(&self) {
        let mut closed = self.closed.lock().await;
        if *closed {
            return;
        }
        self.governor.close().await;
        let worker = self
            .cleanup_worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(worker) = worker
            && tokio::time::timeout(WORKER_JOIN_BOUND, worker)
                .await
                .is_err()
        {
            tracing::warn!(
                code = "cleanup.worker_join_timeout",
                "close(): the cleanup worker did not return within {} s",
                WORKER_JOIN_BOUND.as_secs()
            );
        }
        if let Some(t) = &self.telemetry {
            if t.owned {
                t.emitter.close().await;
            } else {
                t.emitter.flush().await;
            }
        }
        if self.owns_cache
            && let Some(cache) = &self.cache
        {
            cache.backend().close().await;
        }
        // Ports passed in by the caller stay open, but what they buffered for this client's
        // calls (with Redis: finished calls' exits, success samples) is sent first, so
        // closing a client leaves exact counts whichever owns the ports.
        if self.owns_limiter {
            self.limiter.close().await;
        } else {
            self.limiter.flush().await;
        }
        if self.owns_breaker {
            self.breaker.close().await;
        } else {
            self.breaker.flush().await;
        }
        *closed = true;
    }

    /// The recorder's status plus the emitter's drops; `backend "none"` without telemetry.
    pub(crate) fn telemetry_status(&self) -> TelemetryStatus {
        match &self.telemetry {
            Some(t) => t.emitter.status(),
            None => TelemetryStatus::for_backend("none"),
        }
    }

    /// Per source, in configuration order.
    pub(crate) async fn sources_status(&self) -> Vec<SourceStatus> {
        let mut out = Vec::with_capacity(self.plan.sources.len());
        for source in &self.plan.sources {
            let mut errors = Vec::new();
            let snapshot = self
                .breaker
                .snapshot(&source.name)
                .await
                .map_err(|e| errors.push(e.to_string()))
                .ok();
            let stats = self
                .limiter
                .source_stats(&source.name)
                .await
                .map_err(|e| errors.push(e.to_string()))
                .ok();
            out.push(SourceStatus {
                name: source.name.clone(),
                provider: source.provider.clone(),
                model: source.model.clone(),
                breaker_state: snapshot.as_ref().map(|s| s.state),
                epoch: snapshot.as_ref().map(|s| s.epoch),
                consecutive_failures: snapshot.as_ref().map(|s| s.consecutive_failures),
                open_count: snapshot.as_ref().map_or(0, |s| s.open_count),
                inflight: stats.map(|s| s.inflight),
                rpm_used: stats.map(|s| s.rpm_used),
                tpm_used: stats.map(|s| s.tpm_used),
                pacer_limit: self.pacer.limit(&source.name),
                health_score: self.selector.health(&source.name),
                backend_error: (!errors.is_empty()).then(|| errors.join("; ")),
            });
        }
        out
    }
}
