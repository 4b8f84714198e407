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

use gateway_core::config::split_source_field_origin;
use gateway_ports::vocab::{ScopeKind, SelectorKind, WaitPolicy};
use gateway_ports::{ConfigError, ConfigWarning};

use super::values::{boolean, choice, domain_error, float, int, parse_error, positive_float};
use super::{GatewaySettings, check_scope_name};

#[macro_use]
mod macros;
mod keys;
mod process;
mod source;

pub use keys::SOURCE_FIELDS;
use keys::{EMBEDDING_ONLY, PROCESS_KEYS, RESERVED, SCOPE_KEYS};
use process::parse_process_wide;
use source::{is_provider, parse_source};

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

#[cfg(test)]
mod tests;
