//! The process-wide backends: the backend words (`PGW_*_BACKEND`, the schema mode), which
//! adapters this build contains, and stage C6 over the process-wide keys of
//! [`GatewaySettings`].

use std::fmt;

use gateway_core::config::has_scheme_and_authority;
use gateway_ports::config::PricingTable;
use gateway_ports::{ConfigError, ConfigWarning};

use super::{GatewaySettings, MAX_REDIS_DELAY_MS, pricing};

macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];
            /// The configuration word of this value.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $wire),+ }
            }
            /// Parses the exact (lower-case) configuration word.
            pub fn from_wire(s: &str) -> Option<Self> {
                match s { $($wire => Some(Self::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum! {
    /// Backend of the rate limiter or the circuit breaker.
    pub enum StateBackend {
        /// `memory` (default): per process.
        Memory => "memory",
        /// `redis`: shared by every process (cargo feature `redis`).
        Redis => "redis",
    }
}

word_enum! {
    /// Backend of the response cache.
    pub enum CacheBackend {
        /// `none` (default): no response cache.
        None => "none",
        /// `memory`: in-process LRU.
        Memory => "memory",
        /// `redis` (cargo feature `redis`).
        Redis => "redis",
    }
}

word_enum! {
    /// Backend of the telemetry recorder.
    pub enum TelemetryBackend {
        /// `sqlite` (cargo feature `sqlite`, default on).
        Sqlite => "sqlite",
        /// `postgres` (cargo feature `postgres`).
        Postgres => "postgres",
        /// `none`: no telemetry rows.
        None => "none",
    }
}

word_enum! {
    /// Telemetry schema mode: unset → SQLite `auto`, Postgres `manual`.
    pub enum SchemaMode {
        /// `auto`: ALTER-append missing columns.
        Auto => "auto",
        /// `manual`: no DDL, trimmed INSERT.
        Manual => "manual",
    }
}

/// Whether a backend's adapter is in this build: `Err(feature)` names the cargo
/// feature (or states that the adapter is not implemented yet).
fn availability(backend: &str) -> Result<(), &'static str> {
    match backend {
        "memory-state" | "memory-cache" | "none" => Ok(()),
        "sqlite" if cfg!(feature = "sqlite") => Ok(()),
        "sqlite" => Err("cargo feature `sqlite` (off in this build)"),
        "redis" if cfg!(feature = "redis") => Ok(()),
        "redis" => Err("cargo feature `redis` (off in this build)"),
        "redis-cache" if cfg!(feature = "redis") => Ok(()),
        "redis-cache" => Err("cargo feature `redis` (off in this build)"),
        "postgres" if cfg!(feature = "postgres") => Ok(()),
        _ => Err("cargo feature `postgres` (off in this build)"),
    }
}

/// Refuses a backend this build does not contain, naming its key and the cargo feature — before
/// any of that backend's own settings (`REDIS_URL`, the Postgres DSN) are asked for.
fn check_backends_available(
    s: &GatewaySettings,
    at: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let backends: [(&str, &str, &str); 4] = [
        (
            "limiter_backend",
            "PGW_LIMITER_BACKEND",
            state_id(s.limiter_backend),
        ),
        (
            "breaker_backend",
            "PGW_BREAKER_BACKEND",
            state_id(s.breaker_backend),
        ),
        (
            "cache_backend",
            "PGW_CACHE_BACKEND",
            cache_id(s.cache_backend),
        ),
        (
            "telemetry_backend",
            "PGW_TELEMETRY_BACKEND",
            s.telemetry_backend.as_str(),
        ),
    ];
    for (field, key, id) in backends {
        if let Err(feature) = availability(id) {
            let value = id.trim_end_matches("-state").trim_end_matches("-cache");
            return Err(ConfigError::new(
                "backend.unavailable",
                at(field),
                format!("{key}={value}: the backend is not in this build: {feature}"),
            ));
        }
    }
    Ok(())
}

/// C6, C6w, C6b: the process-wide keys (backends, Redis URL, telemetry, cache, pricing); origins
/// `{prefix}<field>`. Resolves `cache_namespace` and loads the price table (its warnings are
/// appended to `warnings`).
pub(super) fn check_process_wide(
    s: &mut GatewaySettings,
    prefix: &str,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Option<PricingTable>, ConfigError> {
    let at = |field: &str| format!("{prefix}{field}");
    let at = &at;
    // C6b first (05 R-43): a missing backend is the news, not its missing URL.
    check_backends_available(s, at)?;
    let uses_redis = s.limiter_backend == StateBackend::Redis
        || s.breaker_backend == StateBackend::Redis
        || s.cache_backend == CacheBackend::Redis;
    match &s.redis_url {
        Some(url) if !has_scheme_and_authority(url.expose_secret(), &["redis://", "rediss://"]) => {
            return Err(ConfigError::new(
                "settings.backend",
                at("redis_url"),
                "redis_url (REDIS_URL) must be a redis:// or rediss:// URL",
            ));
        }
        None if uses_redis => {
            return Err(ConfigError::new(
                "settings.backend",
                at("redis_url"),
                "a backend is redis but redis_url (REDIS_URL) is unset",
            ));
        }
        _ => {}
    }
    for (field, v) in [
        ("redis_breaker_mirror_ms", s.redis_breaker_mirror_ms),
        ("redis_write_behind_ms", s.redis_write_behind_ms),
    ] {
        if v > MAX_REDIS_DELAY_MS {
            return Err(ConfigError::new(
                "settings.backend",
                at(field),
                format!("{field} must be an integer of milliseconds in [0, {MAX_REDIS_DELAY_MS}]"),
            ));
        }
    }
    if s.telemetry_backend == TelemetryBackend::Postgres
        && s.telemetry_pg_dsn
            .as_ref()
            .is_none_or(|d| d.expose_secret().trim().is_empty())
    {
        return Err(ConfigError::new(
            "telemetry.pg_dsn",
            at("telemetry_pg_dsn"),
            "telemetry_backend = postgres needs telemetry_pg_dsn (PGW_TELEMETRY_PG_DSN)",
        ));
    }
    if s.telemetry_pg_pool_max == 0 {
        return Err(ConfigError::new(
            "telemetry.pg_pool_max",
            at("telemetry_pg_pool_max"),
            "telemetry_pg_pool_max must be >= 1",
        ));
    }
    if !positive_finite(s.telemetry_pg_write_timeout_s) {
        return Err(ConfigError::new(
            "telemetry.pg_write_timeout",
            at("telemetry_pg_write_timeout_s"),
            "telemetry_pg_write_timeout_s must be a finite number of seconds > 0",
        ));
    }
    s.policy.check_text_cap(prefix)?;
    if !positive_finite(s.cache_ttl_s) {
        return Err(ConfigError::new(
            "settings.backend",
            at("cache_ttl_s"),
            "cache_ttl_s must be a finite number of seconds > 0",
        ));
    }
    if s.cache_memory_max_entries == 0 {
        return Err(ConfigError::new(
            "settings.backend",
            at("cache_memory_max_entries"),
            "cache_memory_max_entries must be >= 1",
        ));
    }
    match &s.cache_namespace {
        Some(ns)
            if ns.is_empty() || ns.chars().count() > 256 || ns.chars().any(char::is_control) =>
        {
            return Err(ConfigError::new(
                "settings.backend",
                at("cache_namespace"),
                "cache_namespace must be non-empty, at most 256 characters, without control characters",
            ));
        }
        Some(_) => {}
        None => s.cache_namespace = Some(s.scope.clone()),
    }
    if s.cache_salt
        .as_ref()
        .is_some_and(|salt| salt.expose_secret().is_empty())
    {
        return Err(ConfigError::new(
            "settings.backend",
            at("cache_salt"),
            "cache_salt must be non-empty (leave it unset for no salt)",
        ));
    }
    let pricing = match &s.pricing_path {
        Some(path) => {
            let (table, found) = pricing::load_pricing(path, &at("pricing_path"))?;
            warnings.extend(found);
            Some(table)
        }
        None => None,
    };
    Ok(pricing)
}

fn state_id(b: StateBackend) -> &'static str {
    match b {
        StateBackend::Memory => "memory-state",
        StateBackend::Redis => "redis",
    }
}

fn cache_id(b: CacheBackend) -> &'static str {
    match b {
        CacheBackend::None => "none",
        CacheBackend::Memory => "memory-cache",
        CacheBackend::Redis => "redis-cache",
    }
}

/// `v` is a finite number above zero (durations and TTLs in seconds).
pub(super) fn positive_finite(v: f64) -> bool {
    v.is_finite() && v > 0.0
}
