//! Wiring: turns a [`ClientPlan`] plus components (built from settings or injected by the
//! builder) into a running governed scope — the [`Runtime`] both client types wrap.
//!
//! Owns:
//! - the default components: `MemoryRateLimiter` (its `notify()` handed to the governor as a
//!   wakeup), `MemoryCircuitBreaker`, `AimdPacer` with the plan's ceiling, the selector of
//!   the plan's `SelectorKind`, `TokioClock`;
//! - telemetry: a `TelemetryEmitter` over the recorder (`PGW_TELEMETRY_BACKEND=sqlite` →
//!   `SqliteRecorder`, feature `sqlite`; `none` → no rows; an injected recorder on the builder
//!   path), whose worker is spawned here;
//! - the `Governor` and the cleanup worker it needs (`run_cleanup_worker`, spawned here);
//! - ownership: what the client built it closes; what was injected it never closes;
//! - `quiesce` (drain cleanup, then flush), `close` (idempotent; drains the worker it
//!   spawned), `telemetry_status`, `sources_status`.
//!
//! Assembly needs a tokio runtime (the workers are tasks): outside one it is a `ConfigError`
//! with code `runtime.missing`, never a panic.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gateway_core::governor::Jitter;
use gateway_core::pacer::Pacer;
use gateway_core::select::Selector;
use gateway_ports::{
    CircuitBreaker, Clock, ConfigError, PricingTable, RateLimiter, ResponseCache, ScopeKind,
    TelemetryRecorder,
};

use crate::assembly::{ClientPlan, InjectedComponents};
use crate::settings::{CacheBackend, TelemetryBackend, ValidatedSettings};

mod backends;
mod runtime;

use backends::builder_lease_ttl_s;
#[cfg(feature = "postgres")]
use backends::postgres_recorder;
use backends::{redis_cache, shared_state, sqlite_recorder};
pub(crate) use runtime::{Runtime, named_constructor};

/// How long `close()` waits for the cleanup worker task to return after the governor shut its
/// queue (the governor already waited up to 30 s for the queue to drain).
const WORKER_JOIN_BOUND: Duration = Duration::from_secs(5);

/// Governance components the builder path may inject besides those of
/// [`InjectedComponents`]: the pacer, the selector and the
/// jitter source. `None` = the default (`AimdPacer` with the plan's ceiling, the selector of the
/// plan's `SelectorKind`, a seeded per-client jitter).
#[derive(Clone, Default)]
pub struct GovernanceComponents {
    /// Pacer (default `AimdPacer::new(plan.pacer_ceiling)`).
    pub pacer: Option<Arc<dyn Pacer>>,
    /// Selector (default: the plan's `SelectorKind`).
    pub selector: Option<Arc<dyn Selector>>,
    /// Jitter source, nominally uniform in `[0, 1)` (default: seeded once per client).
    pub jitter: Option<Jitter>,
}

impl fmt::Debug for GovernanceComponents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GovernanceComponents")
            .field("pacer", &self.pacer)
            .field("selector", &self.selector)
            .field("jitter", &self.jitter.is_some())
            .finish()
    }
}

impl GovernanceComponents {
    /// With this pacer.
    pub fn pacer(mut self, pacer: Arc<dyn Pacer>) -> Self {
        self.pacer = Some(pacer);
        self
    }

    /// With this selector.
    pub fn selector(mut self, selector: Arc<dyn Selector>) -> Self {
        self.selector = Some(selector);
        self
    }

    /// With this jitter source.
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = Some(jitter);
        self
    }
}

/// Where the telemetry recorder comes from.
pub(crate) enum RecorderSource {
    /// No telemetry rows (`PGW_TELEMETRY_BACKEND=none`, or no recorder injected).
    None,
    /// Built by the client from settings: closed by `close()`.
    Owned(Arc<dyn TelemetryRecorder>),
    /// Injected into the builder: flushed, never closed by the client.
    Injected(Arc<dyn TelemetryRecorder>),
}

/// Where the response cache comes from. Chat scopes only.
pub(crate) enum CacheSource {
    /// No response cache (`PGW_CACHE_BACKEND=none`, or nothing injected).
    None,
    /// `PGW_CACHE_BACKEND=memory`: a `MemoryCache` of this capacity on the runtime's clock,
    /// built and closed by the client.
    Memory(usize),
    /// Built by the client from settings (e.g. Redis): closed by `close()`.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Owned(Arc<dyn ResponseCache>),
    /// Injected into the builder: used, never closed by the client.
    Injected(Arc<dyn ResponseCache>),
}

/// The response cache's key and lifetime options.
#[derive(Clone, Default)]
pub(crate) struct CacheOptions {
    /// Default namespace (`None` = the scope name).
    pub(crate) namespace: Option<String>,
    /// Default salt (`None` = no salt in the key).
    pub(crate) salt: Option<String>,
    /// Entry TTL (`None` = 86 400 s).
    pub(crate) ttl: Option<Duration>,
}

impl fmt::Debug for CacheOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheOptions")
            .field("namespace", &self.namespace)
            .field("salt", &self.salt.as_ref().map(|_| "<redacted>"))
            .field("ttl", &self.ttl)
            .finish()
    }
}

/// Everything [`Runtime::start`] needs, from either assembly path.
pub(crate) struct Assembly {
    pub(crate) plan: ClientPlan,
    pub(crate) limiter: Option<Arc<dyn RateLimiter>>,
    pub(crate) breaker: Option<Arc<dyn CircuitBreaker>>,
    /// Built from settings (e.g. `PGW_LIMITER_BACKEND=redis`): closed by `close()`.
    pub(crate) owned_limiter: Option<Arc<dyn RateLimiter>>,
    /// Built from settings (e.g. `PGW_BREAKER_BACKEND=redis`): closed by `close()`.
    pub(crate) owned_breaker: Option<Arc<dyn CircuitBreaker>>,
    pub(crate) recorder: RecorderSource,
    pub(crate) cache: CacheSource,
    pub(crate) cache_options: CacheOptions,
    pub(crate) pricing: Option<PricingTable>,
    pub(crate) clock: Option<Arc<dyn Clock>>,
    pub(crate) governance: GovernanceComponents,
    /// Permit lease in seconds (settings: resolved C7; builder: max `timeout_s` + 30).
    pub(crate) lease_ttl_s: f64,
    /// `PGW_REDACT_IPS`.
    pub(crate) redact_ips: bool,
    /// Chat scopes hedge per the plan; embedding and OCR never do.
    pub(crate) hedging: bool,
    /// Origin named by assembly errors of this step (e.g. `GatewayClient::from_settings`).
    pub(crate) origin: &'static str,
}

impl Assembly {
    /// The assembly of a settings path (1 or 2): every component is built, hence owned.
    pub(crate) fn from_validated(
        plan: ClientPlan,
        settings: &ValidatedSettings,
        hedging: bool,
        origin: &'static str,
    ) -> Result<Self, ConfigError> {
        let recorder = match settings.telemetry_backend {
            TelemetryBackend::None => RecorderSource::None,
            TelemetryBackend::Sqlite => RecorderSource::Owned(sqlite_recorder(settings, origin)?),
            #[cfg(feature = "postgres")]
            TelemetryBackend::Postgres => RecorderSource::Owned(postgres_recorder(settings)?),
            #[allow(unreachable_patterns)]
            other => {
                // Validation (C6b, 05 R-43) refuses it first; kept as a guard.
                return Err(ConfigError::new(
                    "backend.unavailable",
                    "PGW_TELEMETRY_BACKEND",
                    format!("PGW_TELEMETRY_BACKEND={other}: the backend is not in this build"),
                ));
            }
        };
        let cache = if plan.kind == ScopeKind::Chat {
            match settings.cache_backend {
                CacheBackend::None => CacheSource::None,
                CacheBackend::Memory => CacheSource::Memory(
                    usize::try_from(settings.cache_memory_max_entries).unwrap_or(usize::MAX),
                ),
                CacheBackend::Redis => redis_cache(&plan, settings)?,
            }
        } else {
            CacheSource::None
        };
        let cache_options = CacheOptions {
            namespace: settings.cache_namespace.clone(),
            salt: settings
                .cache_salt
                .as_ref()
                .map(|s| s.expose_secret().clone()),
            ttl: Duration::try_from_secs_f64(settings.cache_ttl_s).ok(),
        };
        let (owned_limiter, owned_breaker) = shared_state(&plan, settings)?;
        Ok(Self {
            plan,
            limiter: None,
            breaker: None,
            owned_limiter,
            owned_breaker,
            recorder,
            cache,
            cache_options,
            pricing: settings.pricing().cloned(),
            clock: None,
            governance: GovernanceComponents::default(),
            lease_ttl_s: settings.lease_ttl_s(),
            redact_ips: settings.redact_ips,
            hedging,
            origin,
        })
    }
}

impl Assembly {
    /// The assembly of the builder path (3): the injected components are used and never
    /// closed; the lease is max `timeout_s` + 30 s; IPs are redacted.
    pub(crate) fn from_injected(
        plan: ClientPlan,
        components: InjectedComponents,
        governance: GovernanceComponents,
        hedging: bool,
        origin: &'static str,
    ) -> Self {
        let lease_ttl_s = builder_lease_ttl_s(&plan);
        let cache = match components.cache {
            Some(cache) if plan.kind == ScopeKind::Chat => CacheSource::Injected(cache),
            _ => CacheSource::None,
        };
        Self {
            cache,
            cache_options: components.cache_options,
            plan,
            limiter: components.limiter,
            breaker: components.breaker,
            owned_limiter: None,
            owned_breaker: None,
            recorder: components
                .telemetry
                .map_or(RecorderSource::None, RecorderSource::Injected),
            pricing: components.pricing,
            clock: components.clock,
            governance,
            lease_ttl_s,
            redact_ips: true,
            hedging,
            origin,
        }
    }
}

#[cfg(all(test, feature = "redis"))]
mod tests;
