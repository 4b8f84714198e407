//! Configuration value types: one upstream source (`SourceConfig`), the scope policies, pricing,
//! and the `Secret` wrapper that keeps credentials out of every output.
//!
//! Owns the *shape* of these values; parsing from the environment,
//! defaults resolution and validation live in `gateway-core::config` and the facade.
//! Durations here are `f64` seconds because these are settings-edge structs.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::ConfigError;
use crate::response::Usage;
use crate::vocab::{AuthStyle, Effort, EffortFallback, MissingDone};

/// The text every secret renders as in `Debug`, `Display` and serde output.
pub const REDACTED: &str = "<redacted>";

/// Default per-attempt budget `timeout_s` in seconds.
pub const DEFAULT_TIMEOUT_S: f64 = 120.0;
/// Default stall metering threshold in milliseconds.
pub const DEFAULT_STALL_THRESHOLD_MS: u32 = 1000;
/// Default admission estimate when `est_tokens` is unset (chosen).
pub const DEFAULT_EST_TOKENS: u64 = 1000;
/// Default idle timeout of a source's pooled connections, in seconds: below the
/// 5 s keep-alive of Node and llama.cpp servers, so the client closes an idle connection before
/// the server does.
pub const DEFAULT_POOL_IDLE_TIMEOUT_S: f64 = 4.0;

/// Default per-attempt read cap `max_response_bytes`: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 64 * 1024 * 1024;

/// A secret value (API key, Redis URL, DSN, configured header value).
///
/// `Debug`, `Display` and `Serialize` all print `<redacted>`; the value is reachable only through
/// [`Secret::expose_secret`]. `Deserialize` reads the plain value (input only).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a secret value.
    pub const fn new(value: T) -> Self {
        Self(value)
    }

    /// The secret value. Call it only where the value is sent (e.g. the auth header).
    pub fn expose_secret(&self) -> &T {
        &self.0
    }

    /// Unwraps the secret value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Secret<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret<String> {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl<T> Serialize for Secret<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(REDACTED)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Secret<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Self)
    }
}

/// One upstream endpoint of one scope.
///
/// Immutable after validation (`gateway_core::config::validate_source`). `Serialize`
/// writes the key and every header value as `"<redacted>"`; the type is deliberately not
/// `Deserialize`. `Default` gives the documented defaults with empty identity fields,
/// for struct-update syntax in tests and builders.
#[derive(Clone, PartialEq, Serialize)]
pub struct SourceConfig {
    /// Unique name within the scope, `{provider}_{N}`.
    pub name: String,
    /// Lower-cased provider segment; selects the provider profile (70).
    pub provider: String,
    /// OpenAI-compatible (or MonkeyOCR) base URL, stored without trailing `/`. A password in
    /// its userinfo (`https://user:pass@host`) is a secret: `Debug` and `Serialize` show it as
    /// `<redacted>` ([`redact_url_password`]).
    #[serde(serialize_with = "serialize_url_redacted")]
    pub base_url: String,
    /// Credential; required for chat/embedding sources unless `auth_style` is `None`, optional
    /// for OCR. Redacted everywhere.
    pub api_key: Option<Secret<String>>,
    /// Configured model name sent upstream and reported as `LlmResponse::model`.
    pub model: String,
    /// Per-attempt total budget in seconds (default 120).
    pub timeout_s: f64,
    /// Time-to-first-progress watchdog in seconds; `None` → `timeout_s`.
    pub ttft_timeout_s: Option<f64>,
    /// Gap-between-progress watchdog in seconds; `None` → `timeout_s`.
    pub inter_token_timeout_s: Option<f64>,
    /// Per-source in-flight gate; `0` = unlimited.
    pub max_concurrency: u32,
    /// Requests per minute; `0` = unlimited.
    pub rpm: u32,
    /// Tokens per minute; `0` = unlimited.
    pub tpm: u64,
    /// Admission pre-deduction estimate; see [`SourceConfig::effective_est_tokens`].
    pub est_tokens: Option<u64>,
    /// Constant sampling parameters merged below the call overlay.
    pub extra_body: Map<String, Value>,
    /// `false` = ignore proxy environment variables.
    pub trust_env: bool,
    /// Legacy reasoning switch (sugar over `reasoning_effort`, 70).
    pub enable_thinking: Option<bool>,
    /// Source-level default effort.
    pub reasoning_effort: Option<Effort>,
    /// What to do when the model cannot hit the requested effort (70).
    pub effort_fallback: EffortFallback,
    /// Text-mode handling of a truly truncated stream (50).
    pub missing_done: MissingDone,
    /// Stall metering threshold in milliseconds (measurement only).
    pub stall_threshold_ms: u32,
    /// Most bytes one attempt may read from the upstream (default 64 MiB).
    pub max_response_bytes: u64,
    /// Extra request headers (`HEADERS`); values redacted in every output.
    pub headers: BTreeMap<String, Secret<String>>,
    /// Query parameters added to every request URL (`QUERY`).
    #[serde(serialize_with = "serialize_query_redacted")]
    pub query: BTreeMap<String, String>,
    /// How the key is sent (`AUTH_STYLE`).
    pub auth_style: AuthStyle,
    /// Extra PEM root certificate for this source's HTTP client (`CA_FILE`).
    pub ca_file: Option<PathBuf>,
    /// Seconds an idle pooled connection is kept before the client closes it (
    /// `POOL_IDLE_TIMEOUT_S`; default [`DEFAULT_POOL_IDLE_TIMEOUT_S`]).
    pub pool_idle_timeout_s: f64,
}

impl Default for SourceConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            provider: String::new(),
            base_url: String::new(),
            api_key: None,
            model: String::new(),
            timeout_s: DEFAULT_TIMEOUT_S,
            ttft_timeout_s: None,
            inter_token_timeout_s: None,
            max_concurrency: 0,
            rpm: 0,
            tpm: 0,
            est_tokens: None,
            extra_body: Map::new(),
            trust_env: true,
            enable_thinking: None,
            reasoning_effort: None,
            effort_fallback: EffortFallback::Error,
            missing_done: MissingDone::Retry,
            stall_threshold_ms: DEFAULT_STALL_THRESHOLD_MS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            auth_style: AuthStyle::Bearer,
            ca_file: None,
            pool_idle_timeout_s: DEFAULT_POOL_IDLE_TIMEOUT_S,
        }
    }
}

impl SourceConfig {
    /// A source with the required identity fields and every other field at its default.
    pub fn new(
        name: impl Into<String>,
        provider: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<Secret<String>>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            provider: provider.into(),
            base_url: base_url.into(),
            api_key,
            model: model.into(),
            ..Self::default()
        }
    }

    /// `est_tokens` if set, else 1000 (chosen): the `est` of the settlement matrix.
    pub fn effective_est_tokens(&self) -> u64 {
        self.est_tokens.unwrap_or(DEFAULT_EST_TOKENS)
    }
}

/// Retry policy of a scope. Seconds at the settings edge.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetryPolicy {
    /// Attempts per loop (default 3).
    pub max_attempts: u32,
    /// Backoff base in seconds (default 1.0).
    pub backoff_base_s: f64,
    /// Backoff cap in seconds (default 10.0); never clamps a server hint.
    pub backoff_max_s: f64,
    /// `RETRY__MAX_HINT_S`: a Retry-After above it fails the call at once; `None` = off.
    pub max_hint_s: Option<f64>,
    /// `RETRY__BUDGET_RATIO`: retries+hedges per first attempt over 10 s; `None` = off.
    pub budget_ratio: Option<f64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            backoff_base_s: 1.0,
            backoff_max_s: 10.0,
            max_hint_s: None,
            budget_ratio: None,
        }
    }
}

impl RetryPolicy {
    /// A checked retry policy: `max_attempts >= 1`, both backoff bounds finite seconds `> 0`
    /// with `backoff_max_s >= backoff_base_s`, and `max_hint_s` / `budget_ratio` unset or finite
    /// `> 0`.
    ///
    /// Errors: a [`ConfigError`] with code `settings.policy` whose origin names the offending
    /// field (`retry.max_attempts`, `retry.backoff_base_s`, …); callers prefix the origin with
    /// their path. The same rules run on every assembly path ([`RetryPolicy::validate`]).
    pub fn new(
        max_attempts: u32,
        backoff_base_s: f64,
        backoff_max_s: f64,
        max_hint_s: Option<f64>,
        budget_ratio: Option<f64>,
    ) -> Result<Self, ConfigError> {
        let policy = Self {
            max_attempts,
            backoff_base_s,
            backoff_max_s,
            max_hint_s,
            budget_ratio,
        };
        policy.validate()?;
        Ok(policy)
    }

    /// Checks the rules of [`RetryPolicy::new`] on a policy built field by field (a struct
    /// literal, serde, the environment parser). Errors as for [`RetryPolicy::new`], first
    /// failing field in declaration order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let policy = |field: &str, rule: &str| {
            Err(ConfigError::new(
                "settings.policy",
                field,
                format!("{field} must be {rule}"),
            ))
        };
        let positive_finite = |v: f64| v.is_finite() && v > 0.0;
        if self.max_attempts == 0 {
            return policy("retry.max_attempts", ">= 1");
        }
        if !positive_finite(self.backoff_base_s) {
            return policy("retry.backoff_base_s", "a finite number of seconds > 0");
        }
        if !positive_finite(self.backoff_max_s) {
            return policy("retry.backoff_max_s", "a finite number of seconds > 0");
        }
        if self.backoff_max_s < self.backoff_base_s {
            return policy("retry.backoff_max_s", ">= retry.backoff_base_s");
        }
        if self.max_hint_s.is_some_and(|v| !positive_finite(v)) {
            return policy(
                "retry.max_hint_s",
                "unset or a finite number of seconds > 0",
            );
        }
        if self.budget_ratio.is_some_and(|v| !positive_finite(v)) {
            return policy("retry.budget_ratio", "unset or a finite number > 0");
        }
        Ok(())
    }
}

/// Backpressure policy. Seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackpressurePolicy {
    /// Stall window in seconds (default 300).
    pub stall_window_s: f64,
    /// Upper bound between quota polls in seconds (default 0.25).
    pub poll_interval_s: f64,
}

impl Default for BackpressurePolicy {
    fn default() -> Self {
        Self {
            stall_window_s: 300.0,
            poll_interval_s: 0.25,
        }
    }
}

/// Circuit breaker configuration. Seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BreakerConfig {
    /// Consecutive failures that open the breaker (default 5).
    pub fail_threshold: u32,
    /// Failure rate over the window that opens it (default 0.5).
    pub fail_rate: f64,
    /// Minimum window samples for the rate rule (default 20).
    pub min_calls: u32,
    /// Rate window in seconds (default 60).
    pub window_s: f64,
    /// First open duration in seconds (default 60).
    pub cooldown_s: f64,
    /// Cooldown cap in seconds (default 600).
    pub cooldown_max_s: f64,
    /// Probe lease in seconds; `None` is resolved at validation to max `timeout_s` + 5.
    pub probe_ttl_s: Option<f64>,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            fail_threshold: 5,
            fail_rate: 0.5,
            min_calls: 20,
            window_s: 60.0,
            cooldown_s: 60.0,
            cooldown_max_s: 600.0,
            probe_ttl_s: None,
        }
    }
}

/// Scope-wide limits; `0` = no global limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct GlobalLimits {
    /// Global in-flight gate.
    pub max_concurrency: u32,
    /// Global requests per minute.
    pub rpm: u32,
    /// Global tokens per minute.
    pub tpm: u64,
}

/// Price of one model per 1 000 000 tokens in the user's currency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Input (prompt) price.
    pub input_per_1m: f64,
    /// Output (completion) price.
    pub output_per_1m: f64,
    /// Cached prompt price; `None` = billed at `input_per_1m` (no guessed discount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_1m: Option<f64>,
}

/// Price table keyed by configured model name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PricingTable {
    /// Prices by exact, case-sensitive configured model name.
    pub prices: BTreeMap<String, ModelPrice>,
}

impl PricingTable {
    /// Cost of `usage` for `model` from the price table; `None` for an unknown model.
    ///
    /// `(max(p − k, 0)·input + min(k, p)·(cached or input) + c·output) / 1e6`, `k` = cached
    /// prompt tokens (`None` → 0).
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let price = self.prices.get(model)?;
        let p = usage.prompt_tokens;
        let k = usage.cached_prompt_tokens.unwrap_or(0);
        let c = usage.completion_tokens;
        let uncached = p.saturating_sub(k) as f64;
        let cached = k.min(p) as f64;
        let cached_price = price.cached_input_per_1m.unwrap_or(price.input_per_1m);
        Some(
            (uncached * price.input_per_1m
                + cached * cached_price
                + c as f64 * price.output_per_1m)
                / 1_000_000.0,
        )
    }
}

/// `QUERY` values may carry a key (some providers authenticate with `?key=`), so every output
/// form shows the parameter names only.
fn serialize_query_redacted<S: serde::Serializer>(
    query: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(query.len()))?;
    for name in query.keys() {
        map.serialize_entry(name, REDACTED)?;
    }
    map.end()
}

fn serialize_url_redacted<S: serde::Serializer>(
    url: &str,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&redact_url_password(url))
}

/// The byte range of the userinfo password of `url` (`scheme://user:PASSWORD@host…`), if any.
fn url_password_range(url: &str) -> Option<std::ops::Range<usize>> {
    let start = url.find("://")? + 3;
    let rest = url.get(start..)?;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = rest.get(..authority_len)?;
    let at = authority.rfind('@')?;
    let userinfo = authority.get(..at)?;
    let colon = userinfo.find(':')?;
    let from = start + colon + 1;
    let to = start + at;
    (from < to).then_some(from..to)
}

/// The userinfo password of `url`, if it has a non-empty one (issue 22: a secret).
pub fn url_password(url: &str) -> Option<&str> {
    url_password_range(url).and_then(|r| url.get(r))
}

/// `url` with a userinfo password replaced by `<redacted>` (user name and host kept), for every
/// output that shows a base URL or DSN (`pgw doctor`, `Debug`, errors).
pub fn redact_url_password(url: &str) -> std::borrow::Cow<'_, str> {
    match url_password_range(url) {
        Some(r) => std::borrow::Cow::Owned(format!(
            "{}{REDACTED}{}",
            url.get(..r.start).unwrap_or_default(),
            url.get(r.end..).unwrap_or_default()
        )),
        None => std::borrow::Cow::Borrowed(url),
    }
}

/// Shortest configured value, in bytes, that [`SourceConfig::secret_values`] reports for the
/// header, query and URL-password secrets: shorter ones (`1`, `true`, `v1`) would scrub ordinary
/// words out of every error body. The API key is reported at any length.
pub const MIN_SCRUBBED_SECRET_BYTES: usize = 6;

impl SourceConfig {
    /// Every secret value configured on this source, for scrubbing upstream error bodies and
    /// messages: the API key, every `HEADERS` value, every `QUERY` value and the password of
    /// `BASE_URL`; all but the API key only when at least [`MIN_SCRUBBED_SECRET_BYTES`] long.
    pub fn secret_values(&self) -> Vec<&str> {
        let long = |v: &&str| v.len() >= MIN_SCRUBBED_SECRET_BYTES;
        let mut out: Vec<&str> = Vec::new();
        if let Some(key) = &self.api_key
            && !key.expose_secret().is_empty()
        {
            out.push(key.expose_secret());
        }
        out.extend(
            self.headers
                .values()
                .map(|v| v.expose_secret().as_str())
                .filter(long),
        );
        out.extend(self.query.values().map(String::as_str).filter(long));
        out.extend(url_password(&self.base_url).filter(long));
        out
    }
}

/// `Debug` names every field (exhaustively, so a new field cannot be forgotten) and never prints
/// the key, header values or query values.
impl fmt::Debug for SourceConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SourceConfig {
            name,
            provider,
            base_url,
            api_key,
            model,
            timeout_s,
            ttft_timeout_s,
            inter_token_timeout_s,
            max_concurrency,
            rpm,
            tpm,
            est_tokens,
            extra_body,
            trust_env,
            enable_thinking,
            reasoning_effort,
            effort_fallback,
            missing_done,
            stall_threshold_ms,
            max_response_bytes,
            headers,
            query,
            auth_style,
            ca_file,
            pool_idle_timeout_s,
        } = self;
        let query_names: BTreeMap<&str, &str> =
            query.keys().map(|k| (k.as_str(), REDACTED)).collect();
        f.debug_struct("SourceConfig")
            .field("name", name)
            .field("provider", provider)
            .field("base_url", &redact_url_password(base_url))
            .field("api_key", api_key)
            .field("model", model)
            .field("timeout_s", timeout_s)
            .field("ttft_timeout_s", ttft_timeout_s)
            .field("inter_token_timeout_s", inter_token_timeout_s)
            .field("max_concurrency", max_concurrency)
            .field("rpm", rpm)
            .field("tpm", tpm)
            .field("est_tokens", est_tokens)
            .field("extra_body", extra_body)
            .field("trust_env", trust_env)
            .field("enable_thinking", enable_thinking)
            .field("reasoning_effort", reasoning_effort)
            .field("effort_fallback", effort_fallback)
            .field("missing_done", missing_done)
            .field("stall_threshold_ms", stall_threshold_ms)
            .field("max_response_bytes", max_response_bytes)
            .field("headers", headers)
            .field("query", &query_names)
            .field("auth_style", auth_style)
            .field("ca_file", ca_file)
            .field("pool_idle_timeout_s", pool_idle_timeout_s)
            .finish()
    }
}
