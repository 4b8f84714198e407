//! The builder options every builder shares ([`CoreOptions`]: scope, sources, [`ScopePolicy`])
//! and their stage F, the injected components, and the setters macro of the three builders.

use std::fmt;
use std::sync::Arc;

use gateway_core::config::validate_source;
use gateway_core::policy::ScopePolicy;
use gateway_ports::config::{PricingTable, SourceConfig};
use gateway_ports::vocab::ScopeKind;
use gateway_ports::{
    CircuitBreaker, Clock, ConfigError, ConfigWarning, RateLimiter, ResponseCache,
    TelemetryRecorder,
};

use super::{ClientPlan, pacer_ceiling};
use crate::settings::{check_scope_name, normalize_source};

/// Components injected into a builder. They are not owned by the client:
/// `close()` does not close them.
#[derive(Clone, Default)]
pub struct InjectedComponents {
    /// Rate limiter (`None` = the in-memory limiter built from the sources, F5).
    pub limiter: Option<Arc<dyn RateLimiter>>,
    /// Circuit breaker (`None` = the in-memory breaker).
    pub breaker: Option<Arc<dyn CircuitBreaker>>,
    /// Response cache (`None` = no cache).
    pub cache: Option<Arc<dyn ResponseCache>>,
    /// Telemetry recorder (`None` = no telemetry).
    pub telemetry: Option<Arc<dyn TelemetryRecorder>>,
    /// Price table (`None` = no cost).
    pub pricing: Option<PricingTable>,
    /// Clock (`None` = the tokio clock).
    pub clock: Option<Arc<dyn Clock>>,
    /// The response cache's default namespace, salt and TTL (builder options).
    pub(crate) cache_options: crate::wiring::CacheOptions,
}

impl fmt::Debug for InjectedComponents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InjectedComponents")
            .field("limiter", &self.limiter.is_some())
            .field("breaker", &self.breaker.is_some())
            .field("cache", &self.cache.is_some())
            .field("telemetry", &self.telemetry.is_some())
            .field("pricing", &self.pricing)
            .field("clock", &self.clock.is_some())
            .field("cache_options", &self.cache_options)
            .finish()
    }
}

/// The values every builder shares: the scope, its sources and its [`ScopePolicy`].
#[derive(Debug, Clone)]
pub(super) struct CoreOptions {
    pub(super) scope: String,
    pub(super) sources: Vec<SourceConfig>,
    pub(super) policy: ScopePolicy,
}

impl CoreOptions {
    pub(super) fn new(scope: &str) -> Self {
        Self {
            scope: scope.to_owned(),
            sources: Vec::new(),
            policy: ScopePolicy::default(),
        }
    }

    /// Stage F for the builder path: F1, F2, F2w, F3 (+ stage B for every source),
    /// the scope policies (C5, chosen), F4. F5 is checked by the caller, which owns the
    /// transport.
    pub(super) fn plan(self, kind: ScopeKind, builder: &str) -> Result<ClientPlan, ConfigError> {
        let prefix = format!("{builder}::");
        let at = |f: &str| format!("{prefix}{f}");
        check_scope_name(&self.scope, &at("scope"))?;
        let mut policy = self.policy;
        let mut sources = self.sources;
        for source in &mut sources {
            normalize_source(source);
        }
        // F1.
        if policy.call_deadline_s == Some(0.0) {
            return Err(ConfigError::new(
                "deadline.domain",
                at("call_deadline"),
                "call deadline must be > 0 (leave it unset for none)",
            ));
        }
        let call_deadline = policy.call_deadline(&at("call_deadline"))?;
        // F2 (stage D on the builder's sources, which may be empty).
        let mut warnings = Vec::new();
        let hedge = policy.check_hedge(&self.scope, &sources, &prefix)?;
        policy.hedge_after_s = hedge.after_s;
        policy.hedge_stall_after_s = hedge.stall_after_s;
        let hedge_config = hedge.config();
        let found = hedge.warnings;
        // F2w (05 R-44).
        if sources.is_empty() {
            warnings.push(ConfigWarning::new(
                "builder.no_sources",
                "the builder has no sources: every call fails with AllSourcesExhausted(no_sources)",
            ));
        }
        // F3: distribute an explicit threshold (the plan keeps `None`: it lives in the sources
        // from here on), then stage B (B4 included) for every source.
        if let Some(ms) = policy.stall_threshold_ms.take() {
            if ms == 0 {
                return Err(ConfigError::new(
                    "source.stall_threshold",
                    at("stall_threshold_ms"),
                    "SourceConfig.stall_threshold_ms must be a positive integer",
                ));
            }
            for source in &mut sources {
                source.stall_threshold_ms = ms;
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for source in &sources {
            if !names.insert(source.name.clone()) {
                return Err(ConfigError::new(
                    "settings.duplicate_source",
                    at(&format!("sources[{}]", source.name)),
                    format!("two sources are named `{}`", source.name),
                ));
            }
            let found = validate_source(source, kind).map_err(|mut e| {
                e.origin = at(&e.origin);
                e
            })?;
            warnings.extend(found);
        }
        warnings.extend(found);
        // Issue 22: a global TPM below a source's token estimate admits no call to it.
        warnings.extend(gateway_core::config::global_tpm_warnings(
            &sources,
            policy.global_limits.tpm,
        ));
        // Scope policies: the same C5 rules as the settings path (chosen).
        policy.validate(&prefix)?;
        // F4.
        policy.check_text_cap(&prefix)?;
        Ok(ClientPlan {
            scope: self.scope.to_ascii_lowercase(),
            kind,
            pacer_ceiling: pacer_ceiling(&sources),
            sources,
            policy,
            call_deadline,
            hedge: hedge_config,
            warnings,
        })
    }
}

macro_rules! core_setters {
    () => {
        /// Scope name.
        pub fn scope(mut self, scope: impl Into<String>) -> Self {
            self.core.scope = scope.into();
            self
        }
        /// The sources (may be empty: warning `builder.no_sources`).
        pub fn sources(mut self, sources: Vec<SourceConfig>) -> Self {
            self.core.sources = sources;
            self
        }
        /// Every policy knob at once (selector, wait policies, waiters, deadline, retry,
        /// breaker, backpressure, limits, hedge, stall threshold, text cap); the single-knob
        /// setters below change one field of it. Checked at `plan()` like the single setters.
        pub fn policy(mut self, policy: ScopePolicy) -> Self {
            self.core.policy = policy;
            self
        }
        /// Source ordering strategy.
        pub fn selector(mut self, selector: SelectorKind) -> Self {
            self.core.policy.selector = selector;
            self
        }
        /// All sources quota-full: wait or fail fast.
        pub fn quota_full(mut self, policy: WaitPolicy) -> Self {
            self.core.policy.quota_full = policy;
            self
        }
        /// All sources breaker-rejected: wait or fail fast.
        pub fn circuit_open(mut self, policy: WaitPolicy) -> Self {
            self.core.policy.circuit_open = policy;
            self
        }
        /// Most callers waiting at once (`0` → `settings.policy`).
        pub fn max_waiters(mut self, max_waiters: u32) -> Self {
            self.core.policy.max_waiters = max_waiters;
            self
        }
        /// Call deadline; a zero `Duration` → `deadline.domain` at `plan()` (F1).
        pub fn call_deadline(mut self, deadline: Duration) -> Self {
            self.core.policy.call_deadline_s = Some(deadline.as_secs_f64());
            self
        }
        /// Retry policy.
        pub fn retry(mut self, retry: RetryPolicy) -> Self {
            self.core.policy.retry = retry;
            self
        }
        /// Breaker configuration.
        pub fn breaker_config(mut self, breaker: BreakerConfig) -> Self {
            self.core.policy.breaker = breaker;
            self
        }
        /// Backpressure policy.
        pub fn backpressure(mut self, backpressure: BackpressurePolicy) -> Self {
            self.core.policy.backpressure = backpressure;
            self
        }
        /// Scope-wide limits.
        pub fn global_limits(mut self, limits: GlobalLimits) -> Self {
            self.core.policy.global_limits = limits;
            self
        }
        /// First-token hedge threshold in seconds (stage D, origin `…::hedge_after_s`).
        pub fn hedge_after_s(mut self, after_s: f64) -> Self {
            self.core.policy.hedge_after_s = Some(after_s);
            self
        }
        /// Hedge legs per round, [1, 3].
        pub fn hedge_max_extra(mut self, max_extra: u32) -> Self {
            self.core.policy.hedge_max_extra = max_extra;
            self
        }
        /// Mid-stream stall hedge threshold in seconds (stage D).
        pub fn hedge_stall_after_s(mut self, stall_after_s: f64) -> Self {
            self.core.policy.hedge_stall_after_s = Some(stall_after_s);
            self
        }
        /// Stall metering threshold in ms written into every source (F3); `None` (the
        /// default) keeps each source's own value.
        pub fn stall_threshold_ms(mut self, threshold_ms: Option<u32>) -> Self {
            self.core.policy.stall_threshold_ms = threshold_ms;
            self
        }
        /// Telemetry text cap in characters (`Some(0)` → `telemetry.text_cap`, F4).
        pub fn telemetry_text_cap(mut self, cap: Option<u32>) -> Self {
            self.core.policy.telemetry_text_cap = cap;
            self
        }
        /// Injected rate limiter (not owned by the client).
        pub fn limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
            self.components.limiter = Some(limiter);
            self
        }
        /// Injected circuit breaker (not owned by the client).
        pub fn breaker(mut self, breaker: Arc<dyn CircuitBreaker>) -> Self {
            self.components.breaker = Some(breaker);
            self
        }
        /// Injected response cache (not owned by the client).
        pub fn cache(mut self, cache: Arc<dyn ResponseCache>) -> Self {
            self.components.cache = Some(cache);
            self
        }
        /// Injected telemetry recorder (not owned by the client).
        pub fn telemetry(mut self, recorder: Arc<dyn TelemetryRecorder>) -> Self {
            self.components.telemetry = Some(recorder);
            self
        }
        /// Price table.
        pub fn pricing(mut self, pricing: PricingTable) -> Self {
            self.components.pricing = Some(pricing);
            self
        }
        /// Injected clock.
        pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
            self.components.clock = Some(clock);
            self
        }
    };
}
pub(super) use core_setters;

pub(super) fn missing_transport(builder: &str) -> ConfigError {
    ConfigError::new(
        "builder.missing_transport",
        format!("{builder}::transport"),
        "the builder needs a transport",
    )
}
