//! The settings types: [`GatewaySettings`] (one scope's sources, [`ScopePolicy`] and
//! process-wide keys), its validated form, and the embedding and OCR scope settings. Their
//! `from_env*` constructors run stage A (`super::env`), their `validate*` methods stages B–E
//! (`super::validate`).

use std::ops::Deref;
use std::path::PathBuf;

use gateway_core::policy::ScopePolicy;
use gateway_ports::config::{DEFAULT_STALL_THRESHOLD_MS, PricingTable, Secret, SourceConfig};
use gateway_ports::vocab::ScopeKind;
use gateway_ports::{ConfigError, ConfigWarning};

use super::env::{self, EnvMap};
use super::validate::{check_embedding, max_timeout_s, non_chat_hedge_warning, validate_gateway};
use super::{
    CacheBackend, DEFAULT_BATCH_SIZE, DEFAULT_CACHE_MEMORY_MAX_ENTRIES, DEFAULT_CACHE_TTL_S,
    DEFAULT_CHAT_SCOPE, DEFAULT_EMBED_SCOPE, DEFAULT_OCR_SCOPE, DEFAULT_REDIS_BREAKER_MIRROR_MS,
    DEFAULT_REDIS_WRITE_BEHIND_MS, DEFAULT_STRUCTURED_MAX_RETRIES, DEFAULT_TELEMETRY_PG_POOL_MAX,
    DEFAULT_TELEMETRY_PG_WRITE_TIMEOUT_S, LEASE_GRACE_S, PROBE_GRACE_S, SchemaMode, StateBackend,
    TelemetryBackend,
};

/// Every setting of one scope: sources, the [`ScopePolicy`] and the process-wide keys.
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
    /// The scope policy: `{SCOPE}__SELECTOR`, `__QUOTA_FULL`, `__CIRCUIT_OPEN`,
    /// `__MAX_WAITERS`, `__CALL_DEADLINE_S`, `__RETRY__*`, `__BREAKER__*` (`probe_ttl_s` is
    /// resolved by validation), `__BACKPRESSURE__*`, `__GLOBAL__*`, `__HEDGE__*`,
    /// `__STREAM__STALL_THRESHOLD_MS` (default here `Some(1000)`, written into every source)
    /// and `PGW_TELEMETRY_TEXT_CAP`. Error origins name its fields without the `policy.`
    /// segment (`GatewaySettings.retry.max_attempts`).
    pub policy: ScopePolicy,
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
            policy: ScopePolicy {
                stall_threshold_ms: Some(DEFAULT_STALL_THRESHOLD_MS),
                ..ScopePolicy::default()
            },
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
    pub(super) settings: GatewaySettings,
    pub(super) kind: ScopeKind,
    pub(super) warnings: Vec<ConfigWarning>,
    pub(super) pricing: Option<PricingTable>,
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
            .policy
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
