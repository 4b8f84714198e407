//! Settings: every configuration value of one scope, the stage C/E validation shared by the
//! environment and settings-struct assembly paths, and the environment parser (stage A).
//!
//! Owns `GatewaySettings`, `EmbeddingSettings`, `OcrSettings`, their validated forms,
//! and the process-wide backend choices. The three assembly paths all end in
//! the same guard functions: stage B is `gateway_core::config::validate_source`, stage C is
//! [`GatewaySettings::validate`], stage D is `gateway_core::hedge::check_hedge_assembly`, stage E is
//! [`EmbeddingSettings::validate`] / [`OcrSettings::validate`]; stage F is in `crate::assembly`.
//! Validation logs nothing: warnings are returned as data; client assembly logs them once.

mod env;
pub mod pricing;
mod values;

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Deref;
use std::path::PathBuf;

use gateway_core::config::{has_scheme_and_authority, validate_source};
use gateway_ports::config::{
    BackpressurePolicy, BreakerConfig, DEFAULT_STALL_THRESHOLD_MS, GlobalLimits, PricingTable,
    RetryPolicy, Secret, SourceConfig,
};
use gateway_ports::vocab::{ScopeKind, SelectorKind, WaitPolicy};
use gateway_ports::{ConfigError, ConfigWarning};

pub use env::{EnvMap, NON_UTF8_VALUE, SOURCE_FIELDS, process_env};

use gateway_core::hedge::{HedgeAssembly, HedgeAssemblyInput, check_hedge_assembly};

/// Default `max_waiters`.
pub const DEFAULT_MAX_WAITERS: u32 = 10_000;
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

/// Every setting of one scope: sources, scope policies and the process-wide keys.
///
/// The settings path: build it with a struct literal or struct-update syntax from
/// [`GatewaySettings::default`]; every consumer validates it ([`GatewaySettings::validate`]).
/// Durations are `f64` seconds at this edge. `Debug` never shows a secret (keys, header
/// values, `redis_url`, `telemetry_pg_dsn` and `cache_salt` are [`Secret`]s).
#[derive(Debug, Clone, PartialEq)]
pub struct GatewaySettings {
    /// Scope name; validation normalizes it to the lower-case runtime label.
    pub scope: String,
    /// The scope's sources, ordered by provider then `N` on the environment path.
    pub sources: Vec<SourceConfig>,
    /// `{SCOPE}__SELECTOR` (default `health_aware`).
    pub selector: SelectorKind,
    /// `{SCOPE}__QUOTA_FULL` (default `wait`).
    pub quota_full: WaitPolicy,
    /// `{SCOPE}__CIRCUIT_OPEN` (default `fail_fast`).
    pub circuit_open: WaitPolicy,
    /// `{SCOPE}__CALL_DEADLINE_S` in seconds; `None` = no deadline.
    pub call_deadline_s: Option<f64>,
    /// `{SCOPE}__MAX_WAITERS` (default 10 000).
    pub max_waiters: u32,
    /// `{SCOPE}__RETRY__*` (defaults).
    pub retry: RetryPolicy,
    /// `{SCOPE}__BREAKER__*` (defaults); `probe_ttl_s` is resolved by validation.
    pub breaker: BreakerConfig,
    /// `{SCOPE}__BACKPRESSURE__*` (defaults).
    pub backpressure: BackpressurePolicy,
    /// `{SCOPE}__GLOBAL__*` (`0` = no global limit).
    pub global_limits: GlobalLimits,
    /// `{SCOPE}__HEDGE__AFTER_S` in seconds; `None` = first-token hedging off.
    pub hedge_after_s: Option<f64>,
    /// `{SCOPE}__HEDGE__MAX_EXTRA` (default 1; domain [1, 3]; > 1 acts as 1).
    pub hedge_max_extra: u32,
    /// `{SCOPE}__HEDGE__STALL_AFTER_S` in seconds; `None` = stall hedging off.
    pub hedge_stall_after_s: Option<f64>,
    /// `{SCOPE}__STREAM__STALL_THRESHOLD_MS` (default 1000), written into every source.
    pub stall_threshold_ms: u32,
    /// `PGW_LIMITER_BACKEND` (default `memory`).
    pub limiter_backend: StateBackend,
    /// `PGW_BREAKER_BACKEND` (env default: the limiter backend; struct default `memory`).
    pub breaker_backend: StateBackend,
    /// `PGW_CACHE_BACKEND` (default `none`).
    pub cache_backend: CacheBackend,
    /// `REDIS_URL` (`redis://` or `rediss://`); required iff a backend is `redis`.
    pub redis_url: Option<Secret<String>>,
    /// `PGW_REDIS_BREAKER_MIRROR_MS` in milliseconds (default 250, at most 60 000): how long a
    /// process answers `try_enter` on a closed source from the breaker state it last read from
    /// Redis, so an open made by another process is seen at most this late. `0` = every
    /// `try_enter` asks Redis (one more round trip per call).
    pub redis_breaker_mirror_ms: u32,
    /// `PGW_REDIS_WRITE_BEHIND_MS` in milliseconds (default 100, at most 60 000): the latest a
    /// buffered breaker success or progress mark is written to Redis (normally the permit's
    /// settle/release carries it sooner). `0` = every success and mark is written at once (one
    /// round trip each).
    pub redis_write_behind_ms: u32,
    /// `PGW_CACHE_NAMESPACE`; `None` = the scope label (resolved by validation).
    pub cache_namespace: Option<String>,
    /// `PGW_CACHE_SALT`; `None` = no salt. A [`Secret`]: a salt known to others lets them
    /// predict cache keys, so `Debug` never prints it.
    pub cache_salt: Option<Secret<String>>,
    /// `PGW_CACHE_TTL_S` in seconds (default 86 400).
    pub cache_ttl_s: f64,
    /// `PGW_CACHE_MEMORY_MAX_ENTRIES` (default 10 000).
    pub cache_memory_max_entries: u32,
    /// `PGW_TELEMETRY_BACKEND` (required on the environment path; struct default `none`, chosen).
    pub telemetry_backend: TelemetryBackend,
    /// `PGW_TELEMETRY_SQLITE_PATH` (default `telemetry.db`).
    pub telemetry_sqlite_path: PathBuf,
    /// `PGW_TELEMETRY_PG_DSN`; required iff the backend is `postgres`.
    pub telemetry_pg_dsn: Option<Secret<String>>,
    /// `PGW_TELEMETRY_PG_POOL_MAX` (default 4).
    pub telemetry_pg_pool_max: u32,
    /// `PGW_TELEMETRY_PG_WRITE_TIMEOUT_S` in seconds (default 5).
    pub telemetry_pg_write_timeout_s: f64,
    /// `PGW_TELEMETRY_SCHEMA_MODE`; `None` = derived from the backend.
    pub telemetry_schema_mode: Option<SchemaMode>,
    /// `PGW_TELEMETRY_TEXT_CAP` in characters; `None` = no truncation.
    pub telemetry_text_cap: Option<u32>,
    /// `PGW_PRICING_PATH`; `None` = no cost.
    pub pricing_path: Option<PathBuf>,
    /// `PGW_STRUCTURED_MAX_RETRIES` (default 2).
    pub structured_max_retries: u32,
    /// `PGW_LEASE_TTL_S` in seconds; `None` resolves to max `timeout_s` + 30.
    pub lease_ttl_s: Option<f64>,
    /// `PGW_REDACT_IPS` (default `true`).
    pub redact_ips: bool,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            scope: DEFAULT_CHAT_SCOPE.to_owned(),
            sources: Vec::new(),
            selector: SelectorKind::HealthAware,
            quota_full: WaitPolicy::Wait,
            circuit_open: WaitPolicy::FailFast,
            call_deadline_s: None,
            max_waiters: DEFAULT_MAX_WAITERS,
            retry: RetryPolicy::default(),
            breaker: BreakerConfig::default(),
            backpressure: BackpressurePolicy::default(),
            global_limits: GlobalLimits::default(),
            hedge_after_s: None,
            hedge_max_extra: 1,
            hedge_stall_after_s: None,
            stall_threshold_ms: DEFAULT_STALL_THRESHOLD_MS,
            limiter_backend: StateBackend::Memory,
            breaker_backend: StateBackend::Memory,
            cache_backend: CacheBackend::None,
            redis_url: None,
            redis_breaker_mirror_ms: DEFAULT_REDIS_BREAKER_MIRROR_MS,
            redis_write_behind_ms: DEFAULT_REDIS_WRITE_BEHIND_MS,
            cache_namespace: None,
            cache_salt: None,
            cache_ttl_s: DEFAULT_CACHE_TTL_S,
            cache_memory_max_entries: DEFAULT_CACHE_MEMORY_MAX_ENTRIES,
            telemetry_backend: TelemetryBackend::None,
            telemetry_sqlite_path: PathBuf::from("telemetry.db"),
            telemetry_pg_dsn: None,
            telemetry_pg_pool_max: DEFAULT_TELEMETRY_PG_POOL_MAX,
            telemetry_pg_write_timeout_s: DEFAULT_TELEMETRY_PG_WRITE_TIMEOUT_S,
            telemetry_schema_mode: None,
            telemetry_text_cap: None,
            pricing_path: None,
            structured_max_retries: DEFAULT_STRUCTURED_MAX_RETRIES,
            lease_ttl_s: None,
            redact_ips: true,
        }
    }
}

/// Settings that passed stages B, C and D: the normalized values, the warnings as data
/// and the loaded price table. Derefs to [`GatewaySettings`].
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedSettings {
    settings: GatewaySettings,
    kind: ScopeKind,
    warnings: Vec<ConfigWarning>,
    pricing: Option<PricingTable>,
}

impl Deref for ValidatedSettings {
    type Target = GatewaySettings;
    fn deref(&self) -> &GatewaySettings {
        &self.settings
    }
}

impl ValidatedSettings {
    fn prepend_warnings(&mut self, mut first: Vec<ConfigWarning>) {
        first.append(&mut self.warnings);
        self.warnings = first;
    }
    /// The assembly warnings, in stage order .
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }
    /// The scope kind these settings were validated for.
    pub fn scope_kind(&self) -> ScopeKind {
        self.kind
    }
    /// The price table loaded from `pricing_path`, if set.
    pub fn pricing(&self) -> Option<&PricingTable> {
        self.pricing.as_ref()
    }
    /// The normalized settings.
    pub fn into_inner(self) -> GatewaySettings {
        self.settings
    }
    /// The normalized settings and the warnings.
    pub fn into_parts(self) -> (GatewaySettings, Vec<ConfigWarning>) {
        (self.settings, self.warnings)
    }
    /// The probe lease in seconds after resolution (C9).
    pub fn probe_ttl_s(&self) -> f64 {
        self.settings
            .breaker
            .probe_ttl_s
            .unwrap_or_else(|| max_timeout_s(&self.settings.sources) + PROBE_GRACE_S)
    }
    /// The permit lease in seconds after resolution (C7).
    pub fn lease_ttl_s(&self) -> f64 {
        self.settings
            .lease_ttl_s
            .unwrap_or_else(|| max_timeout_s(&self.settings.sources) + LEASE_GRACE_S)
    }
}

fn max_timeout_s(sources: &[SourceConfig]) -> f64 {
    sources.iter().map(|s| s.timeout_s).fold(0.0, f64::max)
}

fn positive_finite(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// `true` when `scope` is a valid scope name: `^[A-Za-z][A-Za-z0-9_]*$` without `__`.
pub fn is_scope_name(scope: &str) -> bool {
    let mut chars = scope.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !scope.contains("__")
}

/// Validates a scope name; `origin` names where it came from (code `settings.scope`, chosen).
pub(crate) fn check_scope_name(scope: &str, origin: &str) -> Result<(), ConfigError> {
    if is_scope_name(scope) {
        Ok(())
    } else {
        Err(ConfigError::new(
            "settings.scope",
            origin,
            format!("scope name `{scope}` must match ^[A-Za-z][A-Za-z0-9_]*$ and contain no `__`"),
        ))
    }
}

/// The deadline domain check, with the code `deadline.domain`.
pub(crate) fn check_deadline_s(deadline_s: Option<f64>, origin: &str) -> Result<(), ConfigError> {
    gateway_core::deadline::ensure_call_deadline_s(deadline_s, origin).map(|_| ())
}

/// C1 normalization of one source: lower-case provider, no trailing `/` on `base_url`.
pub(crate) fn normalize_source(source: &mut SourceConfig) {
    source.provider = source.provider.to_ascii_lowercase();
    let trimmed = source.base_url.trim_end_matches('/').len();
    source.base_url.truncate(trimmed);
}

impl GatewaySettings {
    /// Reads the process environment once (never a `.env` file) and parses `scope`
    /// from it (stage A), then validates it (stages B, C, D) as a chat scope.
    ///
    /// Errors: a `ConfigError` whose `origin` is the environment key that matched.
    pub fn from_env(scope: &str) -> Result<ValidatedSettings, ConfigError> {
        Self::from_env_map(scope, &env::process_env())
    }

    /// Parses `scope` from `map` only (tests, embedding applications): stage A, then
    /// validation; errors name the key that matched.
    pub fn from_env_map(scope: &str, map: &EnvMap) -> Result<ValidatedSettings, ConfigError> {
        let parsed = env::parse(scope, ScopeKind::Chat, map)?;
        let mut validated = parsed
            .settings
            .validate_as(ScopeKind::Chat)
            .map_err(|e| parsed.rewrite(e))?;
        validated.prepend_warnings(parsed.warnings);
        Ok(validated)
    }

    /// [`GatewaySettings::from_env_map`] for the default chat scope `LLM`, returning the
    /// settings and the warnings (stage A7 and stages B–D) for `pgw doctor`.
    pub fn from_map(map: &EnvMap) -> Result<(GatewaySettings, Vec<ConfigWarning>), ConfigError> {
        Self::from_env_map(DEFAULT_CHAT_SCOPE, map).map(ValidatedSettings::into_parts)
    }

    /// Stages B, C and D for a chat scope: normalizes, resolves `probe_ttl_s`,
    /// `lease_ttl_s` and `cache_namespace`, loads the price table, and returns the warnings as
    /// data (logs nothing). Errors name `GatewaySettings.<field>`.
    pub fn validate(&self) -> Result<ValidatedSettings, ConfigError> {
        self.validate_as(ScopeKind::Chat)
    }

    /// [`GatewaySettings::validate`] for a given scope kind (the embedded settings of
    /// `EmbeddingSettings` / `OcrSettings`; the kind only changes stage B1 and B5).
    pub fn validate_as(&self, kind: ScopeKind) -> Result<ValidatedSettings, ConfigError> {
        validate_gateway(self, kind, "GatewaySettings.")
    }
}

/// The no-sources message, naming the scope's real keys (e.g. `LLM__OPENAI__1__BASE_URL`).
fn no_sources_message(scope: &str) -> String {
    let upper = scope.to_ascii_uppercase();
    format!(
        "scope `{upper}` has no sources: set {upper}__OPENAI__1__BASE_URL, \
         {upper}__OPENAI__1__API_KEY and {upper}__OPENAI__1__MODEL (any provider word works in \
         place of OPENAI, and 1, 2, … number several sources of one provider)"
    )
}

fn validate_gateway(
    input: &GatewaySettings,
    kind: ScopeKind,
    prefix: &str,
) -> Result<ValidatedSettings, ConfigError> {
    let at = |field: &str| format!("{prefix}{field}");
    let mut s = input.clone();
    let mut warnings = Vec::new();

    // C1 normalize.
    check_scope_name(&s.scope, &at("scope"))?;
    s.scope = s.scope.to_ascii_lowercase();
    for source in &mut s.sources {
        normalize_source(source);
    }
    // C2, C3 sources.
    if s.sources.is_empty() {
        return Err(ConfigError::new(
            "settings.no_sources",
            at("sources"),
            no_sources_message(&s.scope),
        ));
    }
    let mut names = BTreeSet::new();
    for source in &s.sources {
        if !names.insert(source.name.as_str()) {
            return Err(ConfigError::new(
                "settings.duplicate_source",
                at(&format!("sources[{}]", source.name)),
                format!("two sources are named `{}`", source.name),
            ));
        }
    }
    // C4 stage B for each source.
    for source in &s.sources {
        let found = validate_source(source, kind).map_err(|mut e| {
            e.origin = at(&e.origin);
            e
        })?;
        warnings.extend(found);
    }
    // C5 policies.
    check_policies(&s, &at)?;
    // C6, C6w, C6b process-wide.
    let pricing = check_process_wide(&mut s, &at, &mut warnings)?;
    let max_timeout = max_timeout_s(&s.sources);
    // C7 lease.
    match s.lease_ttl_s {
        Some(v) if !(positive_finite(v) && v > max_timeout) => {
            return Err(ConfigError::new(
                "settings.lease_ttl",
                at("lease_ttl_s"),
                format!(
                    "lease_ttl_s (PGW_LEASE_TTL_S={v}) must be a finite number > the largest source timeout_s ({max_timeout})"
                ),
            ));
        }
        Some(_) => {}
        None => s.lease_ttl_s = Some(max_timeout + LEASE_GRACE_S),
    }
    // Issue 22: a global TPM below a source's token estimate admits no call to that source.
    warnings.extend(gateway_core::config::global_tpm_warnings(
        &s.sources,
        s.global_limits.tpm,
    ));
    // C8 stall window vs TTFT (warning).
    let max_ttft = s
        .sources
        .iter()
        .filter_map(|src| src.ttft_timeout_s)
        .fold(f64::NEG_INFINITY, f64::max);
    if s.backpressure.stall_window_s < max_ttft {
        warnings.push(ConfigWarning::new(
            "backpressure.window_below_ttft",
            format!(
                "backpressure.stall_window_s ({}) < max ttft_timeout_s ({max_ttft})",
                s.backpressure.stall_window_s
            ),
        ));
    }
    // C9 probe lease.
    let min_probe = max_timeout + PROBE_GRACE_S;
    match s.breaker.probe_ttl_s {
        Some(v) if !(v.is_finite() && v >= min_probe) => {
            return Err(ConfigError::new(
                "breaker.probe_ttl",
                at("breaker.probe_ttl_s"),
                format!(
                    "breaker.probe_ttl_s ({v}) must be >= the largest source timeout_s + {PROBE_GRACE_S} ({min_probe}): raise probe_ttl_s or lower the sources' timeout_s"
                ),
            ));
        }
        Some(_) => {}
        None => s.breaker.probe_ttl_s = Some(min_probe),
    }
    // C10 call deadline.
    check_deadline_s(s.call_deadline_s, &at("call_deadline_s"))?;
    // C11 stage D.
    let hedge = stage_d(
        &s.scope,
        s.hedge_after_s,
        s.hedge_max_extra,
        s.hedge_stall_after_s,
        s.call_deadline_s,
        &s.sources,
        &at,
    )?;
    s.hedge_after_s = hedge.after_s;
    s.hedge_stall_after_s = hedge.stall_after_s;
    warnings.extend(hedge.warnings);
    Ok(ValidatedSettings {
        settings: s,
        kind,
        warnings,
        pricing,
    })
}

/// Stage D through the core's single definition (`gateway_core::hedge`), with the
/// origins `at("hedge_after_s")`, `at("hedge_stall_after_s")`, `at("hedge_max_extra")`.
pub(crate) fn stage_d(
    scope: &str,
    after_s: Option<f64>,
    max_extra: u32,
    stall_after_s: Option<f64>,
    call_deadline_s: Option<f64>,
    sources: &[SourceConfig],
    at: &dyn Fn(&str) -> String,
) -> Result<HedgeAssembly, ConfigError> {
    let scope_up = scope.to_ascii_uppercase();
    check_hedge_assembly(
        &HedgeAssemblyInput {
            scope: &scope_up,
            hedge_after_s: after_s,
            hedge_max_extra: max_extra,
            stall_after_s,
            call_deadline_s,
            after_origin: &at("hedge_after_s"),
            stall_origin: &at("hedge_stall_after_s"),
            max_extra_origin: &at("hedge_max_extra"),
        },
        sources,
    )
}

pub(crate) fn check_policies(
    s: &GatewaySettings,
    at: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let policy = |field: &str, rule: &str| {
        Err(ConfigError::new(
            "settings.policy",
            at(field),
            format!("{field} must be {rule}"),
        ))
    };
    let r = &s.retry;
    if r.max_attempts == 0 {
        return policy("retry.max_attempts", ">= 1");
    }
    if !positive_finite(r.backoff_base_s) {
        return policy("retry.backoff_base_s", "a finite number of seconds > 0");
    }
    if !positive_finite(r.backoff_max_s) {
        return policy("retry.backoff_max_s", "a finite number of seconds > 0");
    }
    if r.backoff_max_s < r.backoff_base_s {
        return policy("retry.backoff_max_s", ">= retry.backoff_base_s");
    }
    if r.max_hint_s.is_some_and(|v| !positive_finite(v)) {
        return policy(
            "retry.max_hint_s",
            "unset or a finite number of seconds > 0",
        );
    }
    if r.budget_ratio.is_some_and(|v| !positive_finite(v)) {
        return policy("retry.budget_ratio", "unset or a finite number > 0");
    }
    let b = &s.breaker;
    if b.fail_threshold == 0 {
        return policy("breaker.fail_threshold", ">= 1");
    }
    if !(b.fail_rate.is_finite() && b.fail_rate > 0.0 && b.fail_rate <= 1.0) {
        return policy("breaker.fail_rate", "in (0, 1]");
    }
    if b.min_calls == 0 {
        return policy("breaker.min_calls", ">= 1");
    }
    if !positive_finite(b.window_s) {
        return policy("breaker.window_s", "a finite number of seconds > 0");
    }
    if !positive_finite(b.cooldown_s) {
        return policy("breaker.cooldown_s", "a finite number of seconds > 0");
    }
    if !(b.cooldown_max_s.is_finite() && b.cooldown_max_s >= b.cooldown_s) {
        return policy("breaker.cooldown_max_s", "finite and >= breaker.cooldown_s");
    }
    let bp = &s.backpressure;
    if !positive_finite(bp.stall_window_s) {
        return policy(
            "backpressure.stall_window_s",
            "a finite number of seconds > 0",
        );
    }
    if !positive_finite(bp.poll_interval_s) {
        return policy(
            "backpressure.poll_interval_s",
            "a finite number of seconds > 0",
        );
    }
    if bp.poll_interval_s >= bp.stall_window_s {
        return policy(
            "backpressure.poll_interval_s",
            "< backpressure.stall_window_s",
        );
    }
    if s.stall_threshold_ms == 0 {
        return policy("stall_threshold_ms", ">= 1");
    }
    if s.max_waiters == 0 {
        return policy("max_waiters", ">= 1");
    }
    Ok(())
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

fn check_process_wide(
    s: &mut GatewaySettings,
    at: &dyn Fn(&str) -> String,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Option<PricingTable>, ConfigError> {
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
    if s.telemetry_text_cap == Some(0) {
        return Err(ConfigError::new(
            "telemetry.text_cap",
            at("telemetry_text_cap"),
            "text_cap must be > 0 (leave it unset for no truncation)",
        ));
    }
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

/// The E3 warning through the core's definition.
fn non_chat_hedge_warning(gateway: &GatewaySettings, kind: ScopeKind) -> Option<ConfigWarning> {
    gateway_core::hedge::non_chat_hedge_warning(
        kind,
        gateway.hedge_after_s,
        gateway.hedge_stall_after_s,
    )
}

/// An embedding scope: the embedded gateway settings plus batching.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingSettings {
    /// The embedded gateway settings (scope default `EMBED`).
    pub gateway: GatewaySettings,
    /// `{SCOPE}__BATCH_SIZE`: texts per upstream request (default 64, ≥ 1).
    pub batch_size: u32,
    /// `{SCOPE}__NORMALIZE`: L2-normalize vectors (default `false`).
    pub normalize: bool,
    /// `{SCOPE}__EXPECTED_DIM`: required vector dimension (`None` = no check; ≥ 1).
    pub expected_dim: Option<u32>,
}

impl Default for EmbeddingSettings {
    fn default() -> Self {
        Self {
            gateway: GatewaySettings {
                scope: DEFAULT_EMBED_SCOPE.to_owned(),
                ..GatewaySettings::default()
            },
            batch_size: DEFAULT_BATCH_SIZE,
            normalize: false,
            expected_dim: None,
        }
    }
}

/// [`EmbeddingSettings`] that passed stages B–E: `gateway` is validated, warnings included.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedEmbeddingSettings {
    /// The validated embedded gateway settings (its `warnings()` include E3).
    pub gateway: ValidatedSettings,
    /// Texts per upstream request.
    pub batch_size: u32,
    /// L2-normalize vectors.
    pub normalize: bool,
    /// Required vector dimension.
    pub expected_dim: Option<u32>,
}

impl ValidatedEmbeddingSettings {
    /// Every assembly warning of the scope.
    pub fn warnings(&self) -> &[ConfigWarning] {
        self.gateway.warnings()
    }
}

impl EmbeddingSettings {
    /// Reads the process environment once and parses the embedding scope `scope`.
    pub fn from_env(scope: &str) -> Result<ValidatedEmbeddingSettings, ConfigError> {
        Self::from_env_map(scope, &env::process_env())
    }

    /// Parses the embedding scope `scope` from `map` (stage A incl. `BATCH_SIZE`, `NORMALIZE`,
    /// `EXPECTED_DIM`), then validates it (stages B–E); errors name the key that matched.
    pub fn from_env_map(
        scope: &str,
        map: &EnvMap,
    ) -> Result<ValidatedEmbeddingSettings, ConfigError> {
        let parsed = env::parse(scope, ScopeKind::Embedding, map)?;
        let settings = EmbeddingSettings {
            gateway: parsed.settings.clone(),
            batch_size: parsed.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
            normalize: parsed.normalize.unwrap_or(false),
            expected_dim: parsed.expected_dim,
        };
        let mut validated = settings.validate().map_err(|e| parsed.rewrite(e))?;
        validated.gateway.prepend_warnings(parsed.warnings);
        Ok(validated)
    }

    /// Stages C (on the embedded gateway, as an embedding scope), then E1–E3.
    /// Codes: `embed.batch_size`, `embed.expected_dim` (origins `EmbeddingSettings.<field>`);
    /// warning `hedge.non_chat_scope`.
    pub fn validate(&self) -> Result<ValidatedEmbeddingSettings, ConfigError> {
        let mut gateway = self.gateway.validate_as(ScopeKind::Embedding)?;
        check_embedding(self.batch_size, self.expected_dim, "EmbeddingSettings.")?;
        gateway
            .warnings
            .extend(non_chat_hedge_warning(&self.gateway, ScopeKind::Embedding));
        Ok(ValidatedEmbeddingSettings {
            gateway,
            batch_size: self.batch_size,
            normalize: self.normalize,
            expected_dim: self.expected_dim,
        })
    }
}

/// E1, E2 / F7.
pub(crate) fn check_embedding(
    batch_size: u32,
    expected_dim: Option<u32>,
    prefix: &str,
) -> Result<(), ConfigError> {
    if batch_size == 0 {
        return Err(ConfigError::new(
            "embed.batch_size",
            format!("{prefix}batch_size"),
            format!("{prefix}batch_size must be ≥ 1: 0"),
        ));
    }
    if expected_dim == Some(0) {
        return Err(ConfigError::new(
            "embed.expected_dim",
            format!("{prefix}expected_dim"),
            format!("{prefix}expected_dim must be ≥ 1: 0"),
        ));
    }
    Ok(())
}

/// An OCR scope: the embedded gateway settings.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrSettings {
    /// The embedded gateway settings (scope default `OCR`).
    pub gateway: GatewaySettings,
}

impl Default for OcrSettings {
    fn default() -> Self {
        Self {
            gateway: GatewaySettings {
                scope: DEFAULT_OCR_SCOPE.to_owned(),
                ..GatewaySettings::default()
            },
        }
    }
}

impl OcrSettings {
    /// Reads the process environment once and parses the OCR scope `scope`.
    pub fn from_env(scope: &str) -> Result<ValidatedSettings, ConfigError> {
        Self::from_env_map(scope, &env::process_env())
    }

    /// Parses the OCR scope `scope` from `map` (`API_KEY` optional, `MODEL` defaults to
    /// `monkeyocr`), then validates it (stages B–E).
    pub fn from_env_map(scope: &str, map: &EnvMap) -> Result<ValidatedSettings, ConfigError> {
        let parsed = env::parse(scope, ScopeKind::Ocr, map)?;
        let settings = OcrSettings {
            gateway: parsed.settings.clone(),
        };
        let mut validated = settings.validate().map_err(|e| parsed.rewrite(e))?;
        validated.prepend_warnings(parsed.warnings);
        Ok(validated)
    }

    /// Stage C on the embedded gateway as an OCR scope, then E3.
    pub fn validate(&self) -> Result<ValidatedSettings, ConfigError> {
        let mut gateway = self.gateway.validate_as(ScopeKind::Ocr)?;
        gateway
            .warnings
            .extend(non_chat_hedge_warning(&self.gateway, ScopeKind::Ocr));
        Ok(gateway)
    }
}
