//! Stage A — parsing a scope out of an environment map.
//!
//! Owns the key grammar (two-segment scope keys, three-segment group keys under the reserved
//! segments, four-segment source fields `{SCOPE}__{PROVIDER}__{N}__{FIELD}`), the legacy flat keys,
//! the process-wide keys, unknown-key warnings, the `${NAME}` references of
//! `HEADERS` and the one-time read of `API_KEY_FILE`. Only [`process_env`] reads the process
//! environment, and only when `from_env` is called; nothing here reads a `.env` file.
//!
//! Errors name the key that matched. Stages B–E run afterwards on the struct;
//! [`Parsed::rewrite`] turns the struct origins of their errors back into environment keys so
//! that every error of this path names a key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gateway_core::config::{has_scheme_and_authority, split_source_field_origin};
use gateway_core::config::{is_header_name, is_http_url, is_reserved_header};
use gateway_ports::config::{DEFAULT_TIMEOUT_S, Secret, SourceConfig};
use gateway_ports::vocab::{
    AuthStyle, Effort, EffortFallback, MissingDone, ScopeKind, SelectorKind, WaitPolicy,
};
use gateway_ports::{ConfigError, ConfigWarning};
use serde_json::Value;

use super::values::{
    boolean, choice, domain_error, float, int, json_object, parse_error, positive_float,
};
use super::{
    CacheBackend, DEFAULT_OCR_MODEL, GatewaySettings, SchemaMode, StateBackend, TelemetryBackend,
    check_scope_name,
};

/// An environment: key → raw value. Values are trimmed of ASCII whitespace; an empty
/// result is unset.
pub type EnvMap = BTreeMap<String, String>;

/// The value an [`EnvMap`] holds for a variable whose value is not valid UTF-8. It contains NUL
/// bytes, which no environment value can, so it never collides with a real value. Parsing a
/// scope refuses it for every key of the scope and every `PGW_` key with a `config.parse` error
/// naming the key (a known key is never silently dropped); other variables are ignored.
pub const NON_UTF8_VALUE: &str = "\u{0}(value is not valid UTF-8)\u{0}";

/// The process environment as a map: entries whose key is not UTF-8 are skipped; a non-UTF-8
/// value becomes [`NON_UTF8_VALUE`]. The single reader of the environment.
pub fn process_env() -> EnvMap {
    std::env::vars_os()
        .filter_map(|(k, v)| {
            let key = k.into_string().ok()?;
            let value = v
                .into_string()
                .unwrap_or_else(|_| NON_UTF8_VALUE.to_owned());
            Some((key, value))
        })
        .collect()
}

/// Refuses a non-UTF-8 value ([`NON_UTF8_VALUE`]) of any key that belongs to `scope_up`
/// (`{SCOPE}__…`, legacy `{SCOPE}_…`) or is process-wide (`PGW_…`).
fn refuse_non_utf8(scope_up: &str, map: &EnvMap) -> Result<(), ConfigError> {
    let scoped = format!("{scope_up}_");
    for (key, value) in map {
        if value == NON_UTF8_VALUE && (key.starts_with(&scoped) || key.starts_with("PGW_")) {
            return Err(parse_error(key, "valid UTF-8 text"));
        }
    }
    Ok(())
}

/// Reserved second segments.
const RESERVED: [&str; 6] = [
    "GLOBAL",
    "RETRY",
    "BREAKER",
    "BACKPRESSURE",
    "HEDGE",
    "STREAM",
];

/// Per-source FIELD segments of `{SCOPE}__{PROVIDER}__{N}__{FIELD}` in documented order
/// (request-shaping keys included). Public so tools and tests enumerate the same list.
pub const SOURCE_FIELDS: [&str; 23] = [
    "BASE_URL",
    "API_KEY",
    "MODEL",
    "TIMEOUT_S",
    "TTFT_TIMEOUT_S",
    "INTER_TOKEN_TIMEOUT_S",
    "MAX_CONCURRENCY",
    "RPM",
    "TPM",
    "EST_TOKENS",
    "REASONING_EFFORT",
    "ENABLE_THINKING",
    "EFFORT_FALLBACK",
    "MISSING_DONE",
    "TRUST_ENV",
    "EXTRA_BODY",
    "HEADERS",
    "QUERY",
    "AUTH_STYLE",
    "CA_FILE",
    "API_KEY_FILE",
    "MAX_RESPONSE_BYTES",
    "POOL_IDLE_TIMEOUT_S",
];

/// Settings field path → key suffix after `{SCOPE}__` (scope and group keys).
const SCOPE_KEYS: [(&str, &str); 29] = [
    ("retry.max_attempts", "RETRY__MAX_ATTEMPTS"),
    ("retry.backoff_base_s", "RETRY__BACKOFF_BASE_S"),
    ("retry.backoff_max_s", "RETRY__BACKOFF_MAX_S"),
    ("retry.max_hint_s", "RETRY__MAX_HINT_S"),
    ("retry.budget_ratio", "RETRY__BUDGET_RATIO"),
    ("breaker.fail_threshold", "BREAKER__FAIL_THRESHOLD"),
    ("breaker.cooldown_s", "BREAKER__COOLDOWN_S"),
    ("breaker.cooldown_max_s", "BREAKER__COOLDOWN_MAX_S"),
    ("breaker.fail_rate", "BREAKER__FAIL_RATE"),
    ("breaker.min_calls", "BREAKER__MIN_CALLS"),
    ("breaker.window_s", "BREAKER__WINDOW_S"),
    ("breaker.probe_ttl_s", "BREAKER__PROBE_TTL_S"),
    (
        "backpressure.stall_window_s",
        "BACKPRESSURE__STALL_WINDOW_S",
    ),
    (
        "backpressure.poll_interval_s",
        "BACKPRESSURE__POLL_INTERVAL_S",
    ),
    ("global_limits.max_concurrency", "GLOBAL__MAX_CONCURRENCY"),
    ("global_limits.rpm", "GLOBAL__RPM"),
    ("global_limits.tpm", "GLOBAL__TPM"),
    ("batch_size", "BATCH_SIZE"),
    ("normalize", "NORMALIZE"),
    ("expected_dim", "EXPECTED_DIM"),
    ("selector", "SELECTOR"),
    ("quota_full", "QUOTA_FULL"),
    ("circuit_open", "CIRCUIT_OPEN"),
    ("max_waiters", "MAX_WAITERS"),
    ("call_deadline_s", "CALL_DEADLINE_S"),
    ("hedge_after_s", "HEDGE__AFTER_S"),
    ("hedge_max_extra", "HEDGE__MAX_EXTRA"),
    ("hedge_stall_after_s", "HEDGE__STALL_AFTER_S"),
    ("stall_threshold_ms", "STREAM__STALL_THRESHOLD_MS"),
];

/// The three keys only an embedding scope recognizes.
const EMBEDDING_ONLY: [&str; 3] = ["BATCH_SIZE", "NORMALIZE", "EXPECTED_DIM"];

/// Settings field → process-wide key, in table order.
const PROCESS_KEYS: [(&str, &str); 21] = [
    ("limiter_backend", "PGW_LIMITER_BACKEND"),
    ("breaker_backend", "PGW_BREAKER_BACKEND"),
    ("cache_backend", "PGW_CACHE_BACKEND"),
    ("redis_url", "REDIS_URL"),
    ("redis_breaker_mirror_ms", "PGW_REDIS_BREAKER_MIRROR_MS"),
    ("redis_write_behind_ms", "PGW_REDIS_WRITE_BEHIND_MS"),
    ("cache_namespace", "PGW_CACHE_NAMESPACE"),
    ("cache_salt", "PGW_CACHE_SALT"),
    ("cache_ttl_s", "PGW_CACHE_TTL_S"),
    ("cache_memory_max_entries", "PGW_CACHE_MEMORY_MAX_ENTRIES"),
    ("telemetry_backend", "PGW_TELEMETRY_BACKEND"),
    ("telemetry_sqlite_path", "PGW_TELEMETRY_SQLITE_PATH"),
    ("telemetry_pg_dsn", "PGW_TELEMETRY_PG_DSN"),
    ("telemetry_pg_pool_max", "PGW_TELEMETRY_PG_POOL_MAX"),
    (
        "telemetry_pg_write_timeout_s",
        "PGW_TELEMETRY_PG_WRITE_TIMEOUT_S",
    ),
    ("telemetry_schema_mode", "PGW_TELEMETRY_SCHEMA_MODE"),
    ("telemetry_text_cap", "PGW_TELEMETRY_TEXT_CAP"),
    ("pricing_path", "PGW_PRICING_PATH"),
    ("structured_max_retries", "PGW_STRUCTURED_MAX_RETRIES"),
    ("lease_ttl_s", "PGW_LEASE_TTL_S"),
    ("redact_ips", "PGW_REDACT_IPS"),
];

/// The keys one source was given with. `Debug` shows the keys only: the values include
/// `API_KEY` and `HEADERS`, which are never printed.
#[derive(Default)]
struct SourceKeys<'m> {
    /// Provider segment as first spelt (for keys of fields that were not set).
    provider_spelling: String,
    /// `N` verbatim.
    n: String,
    /// FIELD → (key, trimmed value).
    fields: BTreeMap<&'static str, (&'m str, &'m str)>,
}

/// The result of stage A: the unvalidated settings, the embedding keys, the A7 warnings, and
/// what is needed to name the environment key of a later error.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The parsed settings (not yet validated).
    pub(crate) settings: GatewaySettings,
    /// `{SCOPE}__BATCH_SIZE` (embedding scopes only).
    pub(crate) batch_size: Option<u32>,
    /// `{SCOPE}__NORMALIZE` (embedding scopes only).
    pub(crate) normalize: Option<bool>,
    /// `{SCOPE}__EXPECTED_DIM` (embedding scopes only).
    pub(crate) expected_dim: Option<u32>,
    /// A7 `config.unknown_key` warnings.
    pub(crate) warnings: Vec<ConfigWarning>,
    scope_up: String,
    /// Source name → (provider spelling, N, FIELD → key).
    source_keys: BTreeMap<String, (String, String, BTreeMap<&'static str, String>)>,
    /// Settings field path → the key that actually matched (canonical or legacy).
    matched: BTreeMap<&'static str, String>,
}

impl Parsed {
    /// Rewrites the struct origin of a stage B–E error (`GatewaySettings.<field>`,
    /// `EmbeddingSettings.<field>`) into the environment key of that value.
    pub(crate) fn rewrite(&self, mut e: ConfigError) -> ConfigError {
        let field = e
            .origin
            .strip_prefix("GatewaySettings.")
            .or_else(|| e.origin.strip_prefix("EmbeddingSettings."))
            .unwrap_or(&e.origin);
        if let Some(key) = self.key_for(field) {
            e.origin = key;
        }
        e
    }

    fn key_for(&self, field: &str) -> Option<String> {
        if let Some((name, source_field)) = split_source_field_origin(field) {
            if source_field == "stall_threshold_ms" {
                return Some(format!("{}__STREAM__STALL_THRESHOLD_MS", self.scope_up));
            }
            let (provider, n, keys) = self.source_keys.get(name)?;
            let upper = source_field.to_ascii_uppercase();
            if let Some(key) = keys.get(upper.as_str()) {
                return Some(key.clone());
            }
            if upper == "API_KEY"
                && let Some(key) = keys.get("API_KEY_FILE")
            {
                return Some(key.clone());
            }
            return Some(format!("{}__{provider}__{n}__{upper}", self.scope_up));
        }
        if let Some(key) = self.matched.get(field) {
            return Some(key.clone());
        }
        if let Some((_, suffix)) = SCOPE_KEYS.iter().find(|(f, _)| *f == field) {
            return Some(format!("{}__{suffix}", self.scope_up));
        }
        PROCESS_KEYS
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, key)| (*key).to_owned())
    }
}

impl std::fmt::Debug for SourceKeys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.fields.values().map(|(key, _)| *key).collect();
        f.debug_struct("SourceKeys")
            .field("provider_spelling", &self.provider_spelling)
            .field("n", &self.n)
            .field("keys", &keys)
            .finish()
    }
}

/// Largest `API_KEY_FILE` read, in bytes (64 KiB): a larger or endless file (`/dev/zero`) is a
/// `source.api_key_file` error instead of an unbounded read.
const MAX_API_KEY_FILE_BYTES: u64 = 64 * 1024;

/// Reads the key file: a regular file (a FIFO or device is refused before it is opened), at
/// most [`MAX_API_KEY_FILE_BYTES`], UTF-8.
fn read_key_file(path: &str) -> Result<String, String> {
    let bytes = gateway_ports::files::read_regular_file_capped(
        std::path::Path::new(path),
        MAX_API_KEY_FILE_BYTES,
    )
    .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not valid UTF-8".to_owned())
}

fn is_provider(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .split('_')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()))
}

struct Reader<'m> {
    vals: BTreeMap<&'m str, &'m str>,
    scope_up: String,
    matched: BTreeMap<&'static str, String>,
}

impl<'m> Reader<'m> {
    /// The trimmed value of a scope key `{SCOPE}__{suffix}` for settings field `field`.
    fn scope(&mut self, field: &'static str) -> Option<(String, &'m str)> {
        let suffix = SCOPE_KEYS.iter().find(|(f, _)| *f == field)?.1;
        let key = format!("{}__{suffix}", self.scope_up);
        let value = self.vals.get(key.as_str()).copied()?;
        self.matched.insert(field, key.clone());
        Some((key, value))
    }

    /// The trimmed value of a process-wide key for settings field `field`.
    fn process(&mut self, field: &'static str) -> Option<(String, &'m str)> {
        let key = PROCESS_KEYS.iter().find(|(f, _)| *f == field)?.1;
        let value = self.vals.get(key).copied()?;
        self.matched.insert(field, key.to_owned());
        Some((key.to_owned(), value))
    }

    fn legacy(&self, suffix: &str) -> Option<(String, &'m str)> {
        let key = format!("{}_{suffix}", self.scope_up);
        let value = self.vals.get(key.as_str()).copied()?;
        Some((key, value))
    }
}

macro_rules! set {
    ($reader:expr, $field:literal, |$k:ident, $v:ident| $parse:expr => $target:expr) => {
        if let Some(($k, $v)) = $reader.scope($field) {
            let $k = $k.as_str();
            $target = $parse;
        }
    };
}

macro_rules! set_pgw {
    ($reader:expr, $field:literal, |$k:ident, $v:ident| $parse:expr => $target:expr) => {
        if let Some(($k, $v)) = $reader.process($field) {
            let $k = $k.as_str();
            $target = $parse;
        }
    };
}

/// Stage A for `scope` of `kind`, in the documented order: scope name, the legacy
/// `{SCOPE}_TIMEOUT` (the default the sources need, chosen), key classification (A4, source
/// names), sources (field order, then A3/A8/A9), `RETRY`, `BREAKER` (+ legacy alias, A5),
/// `BACKPRESSURE`, `GLOBAL`, embedding keys, `SELECTOR`, `QUOTA_FULL`, `CIRCUIT_OPEN`,
/// `MAX_WAITERS`, `CALL_DEADLINE_S`, `HEDGE__*`, `STREAM__*`, the process-wide keys (A6), and the
/// unknown-key warnings (A7).
pub(crate) fn parse(scope: &str, kind: ScopeKind, map: &EnvMap) -> Result<Parsed, ConfigError> {
    check_scope_name(scope, "scope")?;
    let scope_up = scope.to_ascii_uppercase();
    refuse_non_utf8(&scope_up, map)?;
    let vals: BTreeMap<&str, &str> = map
        .iter()
        .filter_map(|(k, v)| {
            let t = v.trim_matches(|c: char| c.is_ascii_whitespace());
            (!t.is_empty()).then_some((k.as_str(), t))
        })
        .collect();
    let mut r = Reader {
        vals,
        scope_up: scope_up.clone(),
        matched: BTreeMap::new(),
    };
    let mut s = GatewaySettings {
        scope: scope.to_owned(),
        ..GatewaySettings::default()
    };

    // Legacy `{SCOPE}_TIMEOUT` (§6): default timeout_s of every source without its own.
    let scope_timeout_s = match r.legacy("TIMEOUT") {
        Some((k, v)) => Some(positive_float(&k, v)?),
        None => None,
    };

    // Classification (§3.2, §2.5).
    let prefix = format!("{scope_up}__");
    let mut unknown: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<(String, u64, String), SourceKeys<'_>> = BTreeMap::new();
    for (&key, &value) in &r.vals {
        if !key.starts_with(&prefix) {
            continue;
        }
        let parts: Vec<&str> = key.split("__").collect();
        let known = match parts.len() {
            2 => {
                let k = parts[1];
                if EMBEDDING_ONLY.contains(&k) {
                    kind == ScopeKind::Embedding
                } else {
                    SCOPE_KEYS.iter().any(|(_, suffix)| *suffix == k)
                }
            }
            3 => {
                let suffix = format!("{}__{}", parts[1], parts[2]);
                RESERVED.contains(&parts[1]) && SCOPE_KEYS.iter().any(|(_, sfx)| *sfx == suffix)
            }
            4 => {
                let (provider, n, field) = (parts[1], parts[2], parts[3]);
                let reserved = RESERVED.iter().any(|r| r.eq_ignore_ascii_case(provider));
                match SOURCE_FIELDS.iter().find(|f| **f == field) {
                    Some(field) if !reserved => {
                        if !is_provider(provider)
                            || n.is_empty()
                            || !n.bytes().all(|b| b.is_ascii_digit())
                        {
                            return Err(ConfigError::new(
                                "source.name",
                                key,
                                format!(
                                    "{key}: PROVIDER must match ^[A-Za-z0-9]+(_[A-Za-z0-9]+)*$ and N must be ASCII digits"
                                ),
                            ));
                        }
                        let n_value: u64 = n.parse().map_err(|_| {
                            ConfigError::new("source.name", key, format!("{key}: N is too large"))
                        })?;
                        let entry = groups
                            .entry((provider.to_ascii_lowercase(), n_value, n.to_owned()))
                            .or_insert_with(|| SourceKeys {
                                provider_spelling: provider.to_owned(),
                                n: n.to_owned(),
                                fields: BTreeMap::new(),
                            });
                        if let Some((first, _)) = entry.fields.get(field) {
                            return Err(ConfigError::new(
                                "config.duplicate_field",
                                key,
                                format!("{first} and {key} set the same source field"),
                            ));
                        }
                        entry.fields.insert(field, (key, value));
                        true
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if !known {
            unknown.push(key);
        }
    }

    // Sources, ordered by provider then N as an integer (§3.3).
    let mut source_keys = BTreeMap::new();
    for ((provider, _, n), keys) in &groups {
        let source = parse_source(&r, kind, &scope_up, provider, keys, scope_timeout_s)?;
        source_keys.insert(
            source.name.clone(),
            (
                keys.provider_spelling.clone(),
                n.clone(),
                keys.fields
                    .iter()
                    .map(|(f, (k, _))| (*f, (*k).to_owned()))
                    .collect(),
            ),
        );
        s.sources.push(source);
    }

    // RETRY.
    set!(r, "retry.max_attempts", |k, v| int(k, v, 1)? => s.policy.retry.max_attempts);
    set!(r, "retry.backoff_base_s", |k, v| positive_float(k, v)? => s.policy.retry.backoff_base_s);
    set!(r, "retry.backoff_max_s", |k, v| positive_float(k, v)? => s.policy.retry.backoff_max_s);
    set!(r, "retry.max_hint_s", |k, v| Some(positive_float(k, v)?) => s.policy.retry.max_hint_s);
    set!(r, "retry.budget_ratio", |k, v| Some(positive_float(k, v)?) => s.policy.retry.budget_ratio);
    // BREAKER (with the legacy cooldown alias, §6, A5).
    set!(r, "breaker.fail_threshold", |k, v| int(k, v, 1)? => s.policy.breaker.fail_threshold);
    let canonical = r.scope("breaker.cooldown_s");
    let legacy = r.legacy("CIRCUIT_BREAKER_COOLDOWN");
    let canonical = match canonical {
        Some((k, v)) => Some((positive_float(&k, v)?, k)),
        None => None,
    };
    let legacy = match legacy {
        Some((k, v)) => Some((positive_float(&k, v)?, k)),
        None => None,
    };
    match (canonical, legacy) {
        (Some((a, ka)), Some((b, kb))) if a != b => {
            return Err(ConfigError::new(
                "config.alias_conflict",
                ka.clone(),
                format!("{ka} and {kb} are both set with different values"),
            ));
        }
        (Some((a, _)), _) => s.policy.breaker.cooldown_s = a,
        (None, Some((b, kb))) => {
            r.matched.insert("breaker.cooldown_s", kb);
            s.policy.breaker.cooldown_s = b;
        }
        (None, None) => {}
    }
    set!(r, "breaker.cooldown_max_s", |k, v| positive_float(k, v)? => s.policy.breaker.cooldown_max_s);
    set!(r, "breaker.fail_rate", |k, v| {
        let rate = float(k, v)?;
        if !(rate.is_finite() && rate > 0.0 && rate <= 1.0) {
            return Err(domain_error(k, "a number in (0, 1]"));
        }
        rate
    } => s.policy.breaker.fail_rate);
    set!(r, "breaker.min_calls", |k, v| int(k, v, 1)? => s.policy.breaker.min_calls);
    set!(r, "breaker.window_s", |k, v| positive_float(k, v)? => s.policy.breaker.window_s);
    set!(r, "breaker.probe_ttl_s", |k, v| Some(positive_float(k, v)?) => s.policy.breaker.probe_ttl_s);
    // BACKPRESSURE.
    set!(r, "backpressure.stall_window_s", |k, v| positive_float(k, v)? => s.policy.backpressure.stall_window_s);
    set!(r, "backpressure.poll_interval_s", |k, v| positive_float(k, v)? => s.policy.backpressure.poll_interval_s);
    // GLOBAL.
    set!(r, "global_limits.max_concurrency", |k, v| int(k, v, 0)? => s.policy.global_limits.max_concurrency);
    set!(r, "global_limits.rpm", |k, v| int(k, v, 0)? => s.policy.global_limits.rpm);
    set!(r, "global_limits.tpm", |k, v| int(k, v, 0)? => s.policy.global_limits.tpm);
    // Embedding keys (§7).
    let (mut batch_size, mut normalize, mut expected_dim) = (None, None, None);
    if kind == ScopeKind::Embedding {
        set!(r, "batch_size", |k, v| Some(int(k, v, 1)?) => batch_size);
        set!(r, "normalize", |k, v| Some(boolean(k, v)?) => normalize);
        set!(r, "expected_dim", |k, v| Some(int(k, v, 1)?) => expected_dim);
    }
    // Two-segment keys, then HEDGE and STREAM, in the original's order (L4051-4057).
    set!(r, "selector", |k, v| choice(k, v, SelectorKind::from_wire, &["round_robin", "least_inflight", "health_aware"])? => s.policy.selector);
    let wait_words = ["wait", "fail_fast"];
    set!(r, "quota_full", |k, v| choice(k, v, WaitPolicy::from_wire, &wait_words)? => s.policy.quota_full);
    set!(r, "circuit_open", |k, v| choice(k, v, WaitPolicy::from_wire, &wait_words)? => s.policy.circuit_open);
    set!(r, "max_waiters", |k, v| int(k, v, 1)? => s.policy.max_waiters);
    set!(r, "call_deadline_s", |k, v| Some(positive_float(k, v)?) => s.policy.call_deadline_s);
    set!(r, "hedge_after_s", |k, v| Some(positive_float(k, v)?) => s.policy.hedge_after_s);
    set!(r, "hedge_max_extra", |k, v| {
        let n: u32 = int(k, v, 1)?;
        if n > 3 {
            return Err(domain_error(k, "an integer in [1,3] (hedge_max_extra)"));
        }
        n
    } => s.policy.hedge_max_extra);
    set!(r, "hedge_stall_after_s", |k, v| Some(positive_float(k, v)?) => s.policy.hedge_stall_after_s);
    set!(r, "stall_threshold_ms", |k, v| Some(int(k, v, 1)?) => s.policy.stall_threshold_ms);

    parse_process_wide(&mut r, &mut s)?;

    let warnings = unknown
        .into_iter()
        .map(|key| {
            ConfigWarning::new(
                "config.unknown_key",
                format!("{key} is not a key of scope {scope_up} (typo? it has no effect)"),
            )
            .with_key(key)
        })
        .collect();
    Ok(Parsed {
        settings: s,
        batch_size,
        normalize,
        expected_dim,
        warnings,
        scope_up,
        source_keys,
        matched: r.matched,
    })
}

fn parse_process_wide(r: &mut Reader<'_>, s: &mut GatewaySettings) -> Result<(), ConfigError> {
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
    if ms > super::MAX_REDIS_DELAY_MS {
        return Err(domain_error(
            k,
            &format!(
                "an integer of milliseconds in [0, {}] (0 = off)",
                super::MAX_REDIS_DELAY_MS
            ),
        ));
    }
    Ok(ms)
}

/// One source from its keys (in field order; then A8, A3).
fn parse_source(
    r: &Reader<'_>,
    kind: ScopeKind,
    scope_up: &str,
    provider: &str,
    keys: &SourceKeys<'_>,
    scope_timeout_s: Option<f64>,
) -> Result<SourceConfig, ConfigError> {
    let get = |field: &str| keys.fields.get(field).copied();
    let key_of = |field: &str| {
        format!(
            "{scope_up}__{}__{}__{field}",
            keys.provider_spelling, keys.n
        )
    };
    let mut src = SourceConfig {
        name: format!("{provider}_{}", keys.n),
        provider: provider.to_owned(),
        ..SourceConfig::default()
    };
    if let Some((k, v)) = get("BASE_URL") {
        if !is_http_url(v) {
            return Err(parse_error(k, "an absolute http:// or https:// URL"));
        }
        src.base_url = v.trim_end_matches('/').to_owned();
    }
    if let Some((_, v)) = get("API_KEY") {
        src.api_key = Some(Secret::new(v.to_owned()));
    }
    if let Some((_, v)) = get("MODEL") {
        src.model = v.to_owned();
    }
    src.timeout_s = match get("TIMEOUT_S") {
        Some((k, v)) => positive_float(k, v)?,
        None => scope_timeout_s.unwrap_or(DEFAULT_TIMEOUT_S),
    };
    if let Some((k, v)) = get("TTFT_TIMEOUT_S") {
        src.ttft_timeout_s = Some(positive_float(k, v)?);
    }
    if let Some((k, v)) = get("INTER_TOKEN_TIMEOUT_S") {
        src.inter_token_timeout_s = Some(positive_float(k, v)?);
    }
    if let Some((k, v)) = get("MAX_CONCURRENCY") {
        src.max_concurrency = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("RPM") {
        src.rpm = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("TPM") {
        src.tpm = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("EST_TOKENS") {
        src.est_tokens = Some(int(k, v, 1)?);
    }
    if let Some((k, v)) = get("REASONING_EFFORT") {
        let words: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
        src.reasoning_effort = Some(choice(k, v, Effort::from_wire, &words)?);
    }
    if let Some((k, v)) = get("ENABLE_THINKING") {
        src.enable_thinking = Some(boolean(k, v)?);
    }
    if let Some((k, v)) = get("EFFORT_FALLBACK") {
        src.effort_fallback = choice(k, v, EffortFallback::from_wire, &["error", "nearest"])?;
    }
    if let Some((k, v)) = get("MISSING_DONE") {
        src.missing_done = choice(k, v, MissingDone::from_wire, &["retry", "salvage"])?;
    }
    if let Some((k, v)) = get("TRUST_ENV") {
        src.trust_env = boolean(k, v)?;
    }
    if let Some((k, v)) = get("EXTRA_BODY") {
        src.extra_body = json_object(k, v)?;
    }
    if let Some((k, v)) = get("HEADERS") {
        for (name, value) in json_object(k, v)? {
            let headers_error = |why: String| {
                ConfigError::new("source.headers", k, format!("{k}: header `{name}` {why}"))
            };
            let Value::String(text) = value else {
                return Err(headers_error("must have a string value".into()));
            };
            if !is_header_name(&name) || is_reserved_header(&name) {
                return Err(headers_error(
                    "is not allowed (invalid name, or a header the adapter sets itself)".into(),
                ));
            }
            let resolved = resolve_refs(&text, &r.vals).map_err(headers_error)?;
            src.headers.insert(name, Secret::new(resolved));
        }
    }
    if let Some((k, v)) = get("QUERY") {
        for (name, value) in json_object(k, v)? {
            let Value::String(text) = value else {
                return Err(domain_error(
                    k,
                    &format!("a JSON object of strings (`{name}` is not a string)"),
                ));
            };
            src.query.insert(name, text);
        }
    }
    if let Some((k, v)) = get("AUTH_STYLE") {
        src.auth_style = choice(
            k,
            v,
            AuthStyle::from_wire,
            &["bearer", "api_key_header", "none"],
        )?;
    }
    if let Some((_, v)) = get("CA_FILE") {
        src.ca_file = Some(PathBuf::from(v));
    }
    if let Some((k, v)) = get("API_KEY_FILE") {
        if let Some((api_key, _)) = get("API_KEY") {
            return Err(ConfigError::new(
                "source.api_key_conflict",
                k,
                format!("{k} and {api_key} are exclusive: set one of them"),
            ));
        }
        let content = read_key_file(v).map_err(|reason| {
            ConfigError::new(
                "source.api_key_file",
                k,
                format!("{k}: the key file {reason}"),
            )
        })?;
        let key = content.trim_matches(|c: char| c.is_ascii_whitespace());
        if key.is_empty() {
            return Err(ConfigError::new(
                "source.api_key_file",
                k,
                format!("{k}: the key file is empty"),
            ));
        }
        src.api_key = Some(Secret::new(key.to_owned()));
    }
    if let Some((k, v)) = get("MAX_RESPONSE_BYTES") {
        src.max_response_bytes = int(k, v, 1)?;
    }
    if let Some((k, v)) = get("POOL_IDLE_TIMEOUT_S") {
        src.pool_idle_timeout_s = positive_float(k, v)?;
    }
    // A3 required fields (§3.4; 05 R-33: API_KEY_FILE counts, AUTH_STYLE=none needs no key).
    let missing = |field: &str| {
        let key = key_of(field);
        ConfigError::new(
            "source.missing_field",
            key.clone(),
            format!("{key} is required (source {})", src.name),
        )
    };
    if src.base_url.is_empty() {
        return Err(missing("BASE_URL"));
    }
    if src.api_key.is_none() && kind != ScopeKind::Ocr && src.auth_style != AuthStyle::None {
        return Err(missing("API_KEY"));
    }
    if src.model.is_empty() {
        if kind == ScopeKind::Ocr {
            src.model = DEFAULT_OCR_MODEL.to_owned();
        } else {
            return Err(missing("MODEL"));
        }
    }
    Ok(src)
}

/// Resolves every `${NAME}` in `text` from the same environment (`HEADERS`): `NAME` is
/// `[A-Za-z_][A-Za-z0-9_]*`; an unset or empty `NAME`, or an unterminated `${`, is an error.
/// A `$` not followed by `{` is kept literally.
fn resolve_refs(text: &str, vals: &BTreeMap<&str, &str>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("has an unterminated `${` reference".into());
        };
        let name = &after[..end];
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            // The text between the braces is part of the header value: never echoed.
            return Err(
                "has an invalid `${NAME}` reference (NAME must match [A-Za-z_][A-Za-z0-9_]*)"
                    .into(),
            );
        }
        let Some(value) = vals.get(name) else {
            return Err(format!("references `${{{name}}}`, which is unset"));
        };
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_15_source_keys_debug_never_shows_values() {
        // Adversarial: the raw values of one source include its API key and header values.
        let mut keys = SourceKeys::default();
        keys.fields.insert(
            "API_KEY",
            ("LLM__OPENAI__1__API_KEY", "sk-adversarial-secret"),
        );
        keys.fields.insert(
            "HEADERS",
            ("LLM__OPENAI__1__HEADERS", r#"{"x-token":"hdr-secret"}"#),
        );
        let text = format!("{keys:?}");
        assert!(text.contains("LLM__OPENAI__1__API_KEY"), "{text}");
        assert!(!text.contains("sk-adversarial-secret"), "{text}");
        assert!(!text.contains("hdr-secret"), "{text}");
    }

    #[test]
    fn headers_invalid_reference_is_not_echoed() {
        let vals = BTreeMap::new();
        let err = resolve_refs("x${not a name: hdr-secret}", &vals).unwrap_err();
        assert!(!err.contains("hdr-secret"), "{err}");
    }
}
