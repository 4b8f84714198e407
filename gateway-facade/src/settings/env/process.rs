//! Stage A of the process-wide `PGW_…` keys (state, cache and telemetry backends, Redis
//! buffering).
//!
//! Separate from the scope keys: these apply to every scope of the process.

use std::path::PathBuf;

use gateway_core::config::has_scheme_and_authority;
use gateway_ports::ConfigError;
use gateway_ports::config::Secret;

use crate::settings::values::{boolean, choice, domain_error, int, parse_error, positive_float};
use crate::settings::{CacheBackend, GatewaySettings, SchemaMode, StateBackend, TelemetryBackend};

use super::Reader;

pub(super) fn parse_process_wide(
    r: &mut Reader<'_>,
    s: &mut GatewaySettings,
) -> Result<(), ConfigError> {
    let state_words = ["memory", "redis"];
    set_pgw!(r, "limiter_backend", |k, v| choice(k, v, StateBackend::from_wire, &state_words)? => s.limiter_backend);
    s.breaker_backend = s.limiter_backend;
    set_pgw!(r, "breaker_backend", |k, v| choice(k, v, StateBackend::from_wire, &state_words)? => s.breaker_backend);
    set_pgw!(r, "cache_backend", |k, v| choice(k, v, CacheBackend::from_wire, &["none", "memory", "redis"])? => s.cache_backend);
    set_pgw!(r, "redis_url", |k, v| {
        if !has_scheme_and_authority(v, &["redis://", "rediss://"]) {
            return Err(parse_error(k, "a redis:// or rediss:// URL"));
        }
        Some(Secret::new(v.to_owned()))
    } => s.redis_url);
    set_pgw!(r, "redis_breaker_mirror_ms", |k, v| redis_delay_ms(k, v)? => s.redis_breaker_mirror_ms);
    set_pgw!(r, "redis_write_behind_ms", |k, v| redis_delay_ms(k, v)? => s.redis_write_behind_ms);
    set_pgw!(r, "cache_namespace", |k, v| {
        if v.chars().count() > 256 || v.chars().any(char::is_control) {
            return Err(domain_error(k, "at most 256 characters without control characters"));
        }
        Some(v.to_owned())
    } => s.cache_namespace);
    set_pgw!(r, "cache_salt", |_k, v| Some(Secret::from(v)) => s.cache_salt);
    set_pgw!(r, "cache_ttl_s", |k, v| positive_float(k, v)? => s.cache_ttl_s);
    set_pgw!(r, "cache_memory_max_entries", |k, v| int(k, v, 1)? => s.cache_memory_max_entries);
    match r.process("telemetry_backend") {
        Some((k, v)) => {
            s.telemetry_backend = choice(
                &k,
                v,
                TelemetryBackend::from_wire,
                &["sqlite", "postgres", "none"],
            )?;
        }
        None => {
            return Err(ConfigError::new(
                "telemetry.backend_missing",
                "PGW_TELEMETRY_BACKEND",
                "PGW_TELEMETRY_BACKEND is required: sqlite, postgres or none",
            ));
        }
    }
    set_pgw!(r, "telemetry_sqlite_path", |_k, v| PathBuf::from(v) => s.telemetry_sqlite_path);
    set_pgw!(r, "telemetry_pg_dsn", |k, v| {
        let scheme = v.split("://").next().unwrap_or_default();
        let base = scheme.split('+').next().unwrap_or_default().to_ascii_lowercase();
        if !v.contains("://") || !(base == "postgres" || base == "postgresql") {
            return Err(domain_error(k, "a postgres:// or postgresql:// DSN"));
        }
        Some(Secret::new(v.to_owned()))
    } => s.telemetry_pg_dsn);
    set_pgw!(r, "telemetry_pg_pool_max", |k, v| int(k, v, 1)? => s.telemetry_pg_pool_max);
    set_pgw!(r, "telemetry_pg_write_timeout_s", |k, v| positive_float(k, v)? => s.telemetry_pg_write_timeout_s);
    set_pgw!(r, "telemetry_schema_mode", |k, v| Some(choice(k, v, SchemaMode::from_wire, &["auto", "manual"])?) => s.telemetry_schema_mode);
    set_pgw!(r, "telemetry_text_cap", |k, v| Some(int(k, v, 1)?) => s.policy.telemetry_text_cap);
    set_pgw!(r, "pricing_path", |_k, v| Some(PathBuf::from(v)) => s.pricing_path);
    set_pgw!(r, "structured_max_retries", |k, v| int(k, v, 0)? => s.structured_max_retries);
    set_pgw!(r, "lease_ttl_s", |k, v| Some(positive_float(k, v)?) => s.lease_ttl_s);
    set_pgw!(r, "redact_ips", |k, v| boolean(k, v)? => s.redact_ips);
    Ok(())
}

/// A Redis buffering delay in milliseconds: an integer in [0, 60 000] (0 = off).
fn redis_delay_ms(k: &str, v: &str) -> Result<u32, ConfigError> {
    let ms: u32 = int(k, v, 0)?;
    if ms > crate::settings::MAX_REDIS_DELAY_MS {
        return Err(domain_error(
            k,
            &format!(
                "an integer of milliseconds in [0, {}] (0 = off)",
                crate::settings::MAX_REDIS_DELAY_MS
            ),
        ));
    }
    Ok(ms)
}
