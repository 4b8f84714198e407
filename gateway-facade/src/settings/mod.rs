//! Settings: every configuration value of one scope, the stage C/E validation shared by the
//! environment and settings-struct assembly paths, and the environment parser (stage A).
//!
//! Owns `GatewaySettings`, `EmbeddingSettings`, `OcrSettings` and their validated forms
//! (`types`), their validation (`validate`), and the process-wide backend choices and checks
//! (`backends`). The scope policy is the core's [`ScopePolicy`], shared with the builders,
//! `ClientPlan` and the governor builder. The three assembly paths all end in the same guard
//! functions: stage B is `gateway_core::config::validate_source`, stage C is
//! [`GatewaySettings::validate`] (the policy rules are [`ScopePolicy::validate`]), stage D is
//! [`ScopePolicy::check_hedge`], stage E is [`EmbeddingSettings::validate`] /
//! [`OcrSettings::validate`]; stage F is in `crate::assembly`. Validation logs nothing:
//! warnings are returned as data; client assembly logs them once.

mod backends;
mod env;
pub mod pricing;
mod types;
mod validate;
mod values;

pub use gateway_core::policy::ScopePolicy;

pub use backends::{CacheBackend, SchemaMode, StateBackend, TelemetryBackend};
pub use env::{EnvMap, NON_UTF8_VALUE, SOURCE_FIELDS, process_env};
pub use types::{
    EmbeddingSettings, GatewaySettings, OcrSettings, ValidatedEmbeddingSettings, ValidatedSettings,
};
pub use validate::is_scope_name;
pub(crate) use validate::{check_embedding, check_scope_name, normalize_source};

/// Default `max_waiters` (the core's [`ScopePolicy`] default).
pub use gateway_core::policy::DEFAULT_MAX_WAITERS;
/// Default `cache_ttl_s` in seconds (chosen).
pub const DEFAULT_CACHE_TTL_S: f64 = 86_400.0;
/// Default `cache_memory_max_entries` (chosen).
pub const DEFAULT_CACHE_MEMORY_MAX_ENTRIES: u32 = 10_000;
/// Default `redis_breaker_mirror_ms` (chosen): how long a process trusts the closed breaker
/// state it last read from Redis.
pub const DEFAULT_REDIS_BREAKER_MIRROR_MS: u32 = 250;
/// Default `redis_write_behind_ms` (chosen): the latest a buffered breaker success or progress
/// mark reaches Redis.
pub const DEFAULT_REDIS_WRITE_BEHIND_MS: u32 = 100;
/// Largest accepted `redis_breaker_mirror_ms` and `redis_write_behind_ms` (one minute): beyond
/// it other processes would see this one's breaker and progress state too late to matter.
pub const MAX_REDIS_DELAY_MS: u32 = 60_000;
/// Default `telemetry_pg_pool_max`.
pub const DEFAULT_TELEMETRY_PG_POOL_MAX: u32 = 4;
/// Default `telemetry_pg_write_timeout_s` in seconds.
pub const DEFAULT_TELEMETRY_PG_WRITE_TIMEOUT_S: f64 = 5.0;
/// Default `structured_max_retries`.
pub const DEFAULT_STRUCTURED_MAX_RETRIES: u32 = 2;
/// Default embedding `batch_size` (chosen).
pub const DEFAULT_BATCH_SIZE: u32 = 64;
/// Probe lease grace over the largest source `timeout_s`, seconds.
pub const PROBE_GRACE_S: f64 = 5.0;
/// Permit lease grace over the largest source `timeout_s`, seconds.
pub const LEASE_GRACE_S: f64 = 30.0;
/// Default model of an OCR source (chosen).
pub const DEFAULT_OCR_MODEL: &str = "monkeyocr";
/// Default scope names of the facade constructors (chosen).
pub const DEFAULT_CHAT_SCOPE: &str = "LLM";
/// Default embedding scope name (chosen).
pub const DEFAULT_EMBED_SCOPE: &str = "EMBED";
/// Default OCR scope name (chosen).
pub const DEFAULT_OCR_SCOPE: &str = "OCR";
