//! The shared backends an assembly builds from settings: Redis limiter, breaker and cache,
//! and the SQLite / Postgres telemetry recorders, each behind its cargo feature.
//!
//! Separate from the assembly: this is the only place that names a backend adapter.

use std::sync::Arc;
#[cfg(feature = "redis")]
use std::time::Duration;

use gateway_ports::{CircuitBreaker, ConfigError, RateLimiter, TelemetryRecorder};

use crate::assembly::ClientPlan;
use crate::settings::{LEASE_GRACE_S, ValidatedSettings};

use super::CacheSource;

/// Limiter and breaker built from settings (`None` = the memory default).
type SharedState = (
    Option<Arc<dyn RateLimiter>>,
    Option<Arc<dyn CircuitBreaker>>,
);

/// The limiter and breaker of `PGW_LIMITER_BACKEND` / `PGW_BREAKER_BACKEND` = `redis`
/// (cargo feature `redis`), sharing one lazily opened connection to `REDIS_URL`; `None` = the
/// memory default. Unreachable Redis is not an assembly error: the ports fail closed at use.
#[cfg(feature = "redis")]
pub(super) fn shared_state(
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
pub(super) fn redis_cache(
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
pub(super) fn redis_cache(
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
pub(super) fn shared_state(
    _plan: &ClientPlan,
    _settings: &ValidatedSettings,
) -> Result<SharedState, ConfigError> {
    // Validation (C6b) refuses `redis` in a build without the feature.
    Ok((None, None))
}

#[cfg(feature = "sqlite")]
pub(super) fn sqlite_recorder(
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
pub(super) fn sqlite_recorder(
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
pub(super) fn postgres_recorder(
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
pub(super) fn builder_lease_ttl_s(plan: &ClientPlan) -> f64 {
    plan.sources.iter().map(|s| s.timeout_s).fold(0.0, f64::max) + LEASE_GRACE_S
}
