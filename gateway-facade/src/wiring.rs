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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_core::cache::{ChatCache, DEFAULT_CACHE_TTL, MemoryCache};
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::TokioClock;
use gateway_core::governor::{Governor, GovernorBuilder, Jitter};
use gateway_core::hedge::HedgeConfig;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_core::select::{Selector, selector_for};
use gateway_core::telemetry::{EmitterConfig, TelemetryEmitter};
use gateway_ports::{
    CircuitBreaker, Clock, ConfigError, PricingTable, RateLimiter, ResponseCache, ScopeKind,
    TelemetryRecorder, TelemetryStatus, TelemetryStatusProvider,
};
use tokio::task::JoinHandle;

use crate::assembly::{ClientPlan, InjectedComponents};
use crate::settings::{CacheBackend, LEASE_GRACE_S, TelemetryBackend, ValidatedSettings};
use crate::status::SourceStatus;

/// How long `close()` waits for the cleanup worker task to return after the governor shut its
/// queue (the governor already waited up to 30 s for the queue to drain).
const WORKER_JOIN_BOUND: Duration = Duration::from_secs(5);

/// Governance components the builder path may inject besides those of
/// [`InjectedComponents`](crate::InjectedComponents): the pacer, the selector and the
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

/// Limiter and breaker built from settings (`None` = the memory default).
type SharedState = (
    Option<Arc<dyn RateLimiter>>,
    Option<Arc<dyn CircuitBreaker>>,
);

/// The limiter and breaker of `PGW_LIMITER_BACKEND` / `PGW_BREAKER_BACKEND` = `redis`
/// (cargo feature `redis`), sharing one lazily opened connection to `REDIS_URL`; `None` = the
/// memory default. Unreachable Redis is not an assembly error: the ports fail closed at use.
#[cfg(feature = "redis")]
fn shared_state(
    plan: &ClientPlan,
    settings: &ValidatedSettings,
) -> Result<SharedState, ConfigError> {
    use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisRateLimiter};

    use crate::settings::StateBackend;

    let limiter_redis = settings.limiter_backend == StateBackend::Redis;
    let breaker_redis = settings.breaker_backend == StateBackend::Redis;
    if !limiter_redis && !breaker_redis {
        return Ok((None, None));
    }
    // Validation (C6) already required a redis:// or rediss:// REDIS_URL.
    let url = settings.redis_url.as_ref().ok_or_else(|| {
        ConfigError::new(
            "settings.backend",
            "REDIS_URL",
            "a backend is redis but REDIS_URL is unset",
        )
    })?;
    let conn = RedisConnection::new(url.expose_secret(), redis_options(settings))
        .map_err(|e| ConfigError::new("settings.backend", "REDIS_URL", e.to_string()))?;
    let limiter: Option<Arc<dyn RateLimiter>> = limiter_redis.then(|| {
        Arc::new(
            RedisRateLimiter::new(
                &plan.scope,
                &plan.sources,
                plan.policy.global_limits,
                settings.lease_ttl_s(),
                conn.clone(),
            )
            .owning_connection(),
        ) as Arc<dyn RateLimiter>
    });
    let breaker: Option<Arc<dyn CircuitBreaker>> = breaker_redis.then(|| {
        Arc::new(
            RedisCircuitBreaker::new(&plan.scope, plan.policy.breaker, conn.clone())
                .owning_connection(),
        ) as Arc<dyn CircuitBreaker>
    });
    Ok((limiter, breaker))
}

/// The Redis connection options of these settings: the adapter's defaults with the breaker
/// mirror (`PGW_REDIS_BREAKER_MIRROR_MS`) and the write-behind bound
/// (`PGW_REDIS_WRITE_BEHIND_MS`) taken from the settings (`0` turns either off).
#[cfg(feature = "redis")]
pub(crate) fn redis_options(
    settings: &crate::settings::GatewaySettings,
) -> adapter_redis::RedisOptions {
    adapter_redis::RedisOptions {
        breaker_mirror: Duration::from_millis(u64::from(settings.redis_breaker_mirror_ms)),
        write_behind: Duration::from_millis(u64::from(settings.redis_write_behind_ms)),
        ..adapter_redis::RedisOptions::default()
    }
}

/// `PGW_CACHE_BACKEND=redis`: a `RedisCache` under the scope's hash-tagged prefix, on its own
/// connection to `REDIS_URL`, closed by the client's `close()`.
#[cfg(feature = "redis")]
fn redis_cache(
    plan: &ClientPlan,
    settings: &ValidatedSettings,
) -> Result<CacheSource, ConfigError> {
    use adapter_redis::{RedisCache, RedisConnection};

    let url = settings.redis_url.as_ref().ok_or_else(|| {
        ConfigError::new(
            "settings.backend",
            "REDIS_URL",
            "PGW_CACHE_BACKEND is redis but REDIS_URL is unset",
        )
    })?;
    let conn = RedisConnection::new(url.expose_secret(), redis_options(settings))
        .map_err(|e| ConfigError::new("settings.backend", "REDIS_URL", e.to_string()))?;
    Ok(CacheSource::Owned(Arc::new(
        RedisCache::new(&plan.scope, conn).owning_connection(),
    )))
}

/// Validation refuses `PGW_CACHE_BACKEND=redis` in a build without the `redis` feature.
#[cfg(not(feature = "redis"))]
fn redis_cache(
    _plan: &ClientPlan,
    _settings: &ValidatedSettings,
) -> Result<CacheSource, ConfigError> {
    Err(ConfigError::new(
        "backend.unavailable",
        "PGW_CACHE_BACKEND",
        "PGW_CACHE_BACKEND=redis: the backend is not in this build: cargo feature `redis` (off in this build)",
    ))
}

#[cfg(not(feature = "redis"))]
fn shared_state(
    _plan: &ClientPlan,
    _settings: &ValidatedSettings,
) -> Result<SharedState, ConfigError> {
    // Validation (C6b) refuses `redis` in a build without the feature.
    Ok((None, None))
}

#[cfg(feature = "sqlite")]
fn sqlite_recorder(
    settings: &ValidatedSettings,
    _origin: &str,
) -> Result<Arc<dyn TelemetryRecorder>, ConfigError> {
    use adapter_sqlite::{SqliteRecorder, SqliteRecorderConfig};
    use gateway_ports::schema::SchemaMode as CoreMode;

    let mut config = SqliteRecorderConfig::new(settings.telemetry_sqlite_path.clone());
    if let Some(mode) = settings.telemetry_schema_mode {
        config = config.with_schema_mode(match mode {
            crate::settings::SchemaMode::Auto => CoreMode::Auto,
            crate::settings::SchemaMode::Manual => CoreMode::Manual,
        });
    }
    Ok(Arc::new(SqliteRecorder::new(config)))
}

#[cfg(not(feature = "sqlite"))]
fn sqlite_recorder(
    _settings: &ValidatedSettings,
    _origin: &str,
) -> Result<Arc<dyn TelemetryRecorder>, ConfigError> {
    Err(ConfigError::new(
        "backend.unavailable",
        "PGW_TELEMETRY_BACKEND",
        "PGW_TELEMETRY_BACKEND=sqlite: the backend is not in this build: cargo feature `sqlite` (off in this build)",
    ))
}

/// The Postgres recorder of `PGW_TELEMETRY_BACKEND=postgres`: no connection
/// at assembly; an unparseable DSN makes the recorder fatal (status), never an assembly error.
/// Schema mode unset → `manual`.
#[cfg(feature = "postgres")]
fn postgres_recorder(
    settings: &ValidatedSettings,
) -> Result<Arc<dyn TelemetryRecorder>, ConfigError> {
    use adapter_postgres::{PostgresRecorder, PostgresRecorderConfig, SchemaMode as PgMode};

    let Some(dsn) = settings.telemetry_pg_dsn.clone() else {
        // Validation refuses it first; kept as a guard.
        return Err(ConfigError::new(
            "telemetry.pg_dsn",
            "PGW_TELEMETRY_PG_DSN",
            "PGW_TELEMETRY_BACKEND=postgres needs PGW_TELEMETRY_PG_DSN",
        ));
    };
    let mode = match settings.telemetry_schema_mode {
        Some(crate::settings::SchemaMode::Auto) => PgMode::Auto,
        _ => PgMode::Manual,
    };
    let config = PostgresRecorderConfig::new(dsn)
        .with_pool_max(usize::try_from(settings.telemetry_pg_pool_max).unwrap_or(usize::MAX))
        .with_write_timeout(
            std::time::Duration::try_from_secs_f64(settings.telemetry_pg_write_timeout_s)
                .unwrap_or(adapter_postgres::MAX_WRITE_TIMEOUT),
        )
        .with_schema_mode(mode);
    Ok(Arc::new(PostgresRecorder::new(config)))
}

/// The permit lease of the builder path (max `timeout_s` + 30 s).
fn builder_lease_ttl_s(plan: &ClientPlan) -> f64 {
    plan.sources.iter().map(|s| s.timeout_s).fold(0.0, f64::max) + LEASE_GRACE_S
}

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

    /// Drains the cleanup queue, then flushes the recorder.
    pub(crate) async fn quiesce(&self) {
        self.governor.quiesce().await;
    }

    /// Idempotent close (ownership): the governor refuses
    /// new calls, drains its queue (bounded), flushes the sink and shuts the queue; the cleanup
    /// worker this runtime spawned is awaited (bounded); then the owned components are closed,
    /// each exactly once. A concurrent second `close()` waits for the first.
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
        if self.owns_limiter {
            self.limiter.close().await;
        }
        if self.owns_breaker {
            self.breaker.close().await;
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

#[cfg(all(test, feature = "redis"))]
mod tests {
    use std::time::Duration;

    use crate::settings::GatewaySettings;

    use super::redis_options;

    /// The two buffering keys reach the Redis connection options; 0 turns either off and the
    /// other options keep the adapter's defaults.
    #[test]
    fn redis_options_follow_the_settings() {
        let defaults = adapter_redis::RedisOptions::default();
        let o = redis_options(&GatewaySettings::default());
        assert_eq!(o, defaults);
        assert_eq!(o.breaker_mirror, Duration::from_millis(250));
        assert_eq!(o.write_behind, Duration::from_millis(100));
        let o = redis_options(&GatewaySettings {
            redis_breaker_mirror_ms: 0,
            redis_write_behind_ms: 1500,
            ..GatewaySettings::default()
        });
        assert_eq!(o.breaker_mirror, Duration::ZERO);
        assert_eq!(o.write_behind, Duration::from_millis(1500));
        assert_eq!(o.op_timeout, defaults.op_timeout);
        assert_eq!(o.reconnect_delay, defaults.reconnect_delay);
        assert_eq!(o.connect_timeout, defaults.connect_timeout);
    }
}
