//! The shared state of `pgw serve`: the served clients, caller keys and their per-key limiter,
//! metrics and pricing, built once from the configuration; authentication, `model` → scope,
//! admission under the per-key limit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64};

use axum::http::{HeaderMap, header};
use axum::response::Response;
use gateway_core::clock::TokioClock;
use gateway_core::memory::limiter::MemoryRateLimiter;
use gateway_core::telemetry::pricing::PRICING_PATH_KEY;
use gateway_core::telemetry::{RowShaper, load_pricing_with_warnings};
use gateway_ports::vocab::ScopeKind;
use gateway_ports::{
    Acquire, CallOperation, GlobalLimits, LimitGate, Permit, RateLimiter, Usage, UsageSource,
};
use polygateway::{EmbeddingClient, GatewayClient, SourceConfig};
use serde_json::{Value, json};

use super::config::{CallerKey, ServeConfig};
use super::failure_log::FailureLog;
use super::metrics::Metrics;
use super::openai::ApiError;

/// A served scope's client.
pub(super) enum Client {
    Chat(GatewayClient),
    Embed(EmbeddingClient),
}

/// Shared server state.
pub(super) struct AppState {
    /// Lower-case scope → client.
    pub(super) clients: BTreeMap<String, Client>,
    /// Lower-case alias → lower-case scope.
    pub(super) aliases: BTreeMap<String, String>,
    pub(super) keys: Vec<CallerKey>,
    /// Per-key limiter (the library's in-memory rate limiter, one bucket per key); `None`
    /// when no per-key limit is set.
    pub(super) limiter: Option<Arc<dyn RateLimiter>>,
    pub(super) metrics: Metrics,
    /// Failed calls, written to stderr at most once per scope, error type and interval.
    pub(super) failures: FailureLog,
    pub(super) draining: AtomicBool,
    /// Prices of `PGW_PRICING_PATH` (the same shaper telemetry rows use); `None` without one.
    pub(super) pricing: Option<RowShaper>,
    /// Streamed answers whose body is still open.
    pub(super) streams_open: AtomicI64,
    /// `PGW_SERVE_UPSTREAM_STREAM` is `always` (the default).
    pub(super) upstream_always_streams: bool,
}

/// Releases a per-key permit when the request ends, however it ends (a dropped connection
/// included): never a leaked slot.
pub(super) struct PermitGuard(Option<Box<dyn Permit>>);

impl Drop for PermitGuard {
    fn drop(&mut self) {
        if let Some(permit) = self.0.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                let _ = permit.settle(0).await;
                let _ = permit.release().await;
            });
        }
    }
}

/// Constant-time byte comparison (no early exit on the first differing byte).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The authenticated caller of a request: its key's position in [`AppState::keys`]. The POST
/// routes' layer authenticates once, before the body is read, and hands this to the handler in
/// the request's extensions, so the key is looked up once per request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caller(usize);

impl AppState {
    /// The caller key of `Caller`.
    ///
    /// # Errors
    /// A 401 when the position names no key (not expected: `Caller` only comes from
    /// [`AppState::authenticate`] on this state).
    pub(super) fn caller_key(&self, caller: Caller) -> Result<&CallerKey, ApiError> {
        self.keys.get(caller.0).ok_or_else(|| {
            ApiError::plain(
                401,
                "invalid_request_error",
                "invalid_api_key",
                None,
                "incorrect API key provided",
            )
        })
    }

    /// The caller of `Authorization: Bearer …`, or the OpenAI-shaped 401.
    pub(super) fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let unauthorized = |message: &str| {
            ApiError::plain(
                401,
                "invalid_request_error",
                "invalid_api_key",
                None,
                message,
            )
        };
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized(
                "missing API key: send `Authorization: Bearer <key>` with a key from PGW_SERVE_KEYS",
            ));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .unwrap_or("");
        // Every key is compared (no early exit): the time does not tell which key matched.
        let mut found = None;
        for (i, key) in self.keys.iter().enumerate() {
            if same(key.token.expose_secret().as_bytes(), token.as_bytes()) {
                found = Some(Caller(i));
            }
        }
        found.ok_or_else(|| unauthorized("incorrect API key provided"))
    }

    /// The lower-case scope a `model` names.
    pub(super) fn scope_of(&self, model: &str) -> Option<String> {
        let m = model.trim().to_ascii_lowercase();
        if self.clients.contains_key(&m) {
            return Some(m);
        }
        self.aliases.get(&m).cloned()
    }

    /// The 404 for a `model` that names no served scope or alias of this route's `kind`
    /// (embedding for `/v1/embeddings`, chat for chat completions). It lists only the names
    /// this route serves, and when there are none it names the key that configures them.
    pub(super) fn model_not_found(&self, model: &str, kind: ScopeKind) -> ApiError {
        let embedding = kind == ScopeKind::Embedding;
        let kind = kind.as_str();
        let of_kind = |scope: &str| {
            matches!(
                (self.clients.get(scope), embedding),
                (Some(Client::Embed(_)), true) | (Some(Client::Chat(_)), false)
            )
        };
        let mut names: Vec<&str> = self
            .clients
            .keys()
            .map(String::as_str)
            .filter(|s| of_kind(s))
            .collect();
        names.extend(
            self.aliases
                .iter()
                .filter(|(_, scope)| of_kind(scope))
                .map(|(alias, _)| alias.as_str()),
        );
        let served = if names.is_empty() {
            let key = if embedding {
                "PGW_SERVE_EMBED_SCOPES"
            } else {
                "PGW_SERVE_CHAT_SCOPES"
            };
            format!("this server serves no {kind} scope (set {key} to serve one)")
        } else {
            format!("served: {}", names.join(", "))
        };
        // A model name is echoed up to 200 characters: a megabyte of `model` is not a
        // megabyte of answer.
        let shown: String = model.chars().take(200).collect();
        let more = if shown.len() < model.len() { "…" } else { "" };
        ApiError::plain(
            404,
            "invalid_request_error",
            "model_not_found",
            Some("model"),
            format!("the model `{shown}{more}` is not a served {kind} scope or alias; {served}"),
        )
    }

    /// Takes the caller key's per-key limit slot (429 with Retry-After when full).
    pub(super) async fn admit(&self, key: &CallerKey) -> Result<PermitGuard, ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(PermitGuard(None));
        };
        match limiter.try_acquire(&key.bucket, 0).await {
            Ok(Acquire::Granted(permit)) => Ok(PermitGuard(Some(permit))),
            Ok(Acquire::Denied { gate, wait_hint_s }) => {
                // Said to the caller, in the caller's terms: which of its key's limits, and when
                // to come back (a full concurrency limit frees when one of its requests ends,
                // which has no forecast: 1 s).
                let (reason, message) = if gate == LimitGate::SourceConcurrency {
                    (
                        "key_concurrency",
                        "too many requests of this API key are in flight; retry when one finishes",
                    )
                } else {
                    (
                        "key_rpm",
                        "this API key has used its requests for this minute",
                    )
                };
                let wait = wait_hint_s.unwrap_or(1.0);
                let mut e = ApiError::plain(
                    429,
                    "rate_limit_error",
                    "rate_limit_exceeded",
                    None,
                    message,
                );
                e.body["error"]["reason_code"] = Value::from(reason);
                e.body["error"]["retry_after_s"] = json!(wait);
                e.retry_after_s = Some(wait);
                Err(e)
            }
            Err(_) => Err(ApiError::plain(
                503,
                "GovernanceBackendError",
                "governance_backend",
                None,
                "the per-key limiter is unavailable",
            )),
        }
    }

    pub(super) fn count(&self, route: &str, response: &Response) {
        self.metrics.add(
            "pgw_http_requests_total",
            &[("route", route), ("status", response.status().as_str())],
            1.0,
        );
    }

    /// The cost of a successful attempt exactly as its telemetry row prices it; `None` without
    /// a price table or for a model not in it.
    pub(super) fn cost(
        &self,
        operation: CallOperation,
        model: &str,
        usage: &Usage,
        usage_source: UsageSource,
    ) -> Option<f64> {
        self.pricing
            .as_ref()?
            .cost(operation, model, usage, usage_source)
    }
}

/// The longest upstream `Retry-After` a served call waits out when its scope sets no
/// `{SCOPE}__RETRY__MAX_HINT_S`, in seconds. The library's own default is no cap (a 429 asking
/// for a day would hold the request for a day); a server answers at once instead, with the
/// hint as its own `Retry-After`, and the client decides.
pub(super) const DEFAULT_MAX_HINT_S: &str = "60";

/// `map` with `{SCOPE}__RETRY__MAX_HINT_S` = [`DEFAULT_MAX_HINT_S`] for every served scope that
/// sets none.
fn with_serve_defaults(map: &polygateway::EnvMap, cfg: &ServeConfig) -> polygateway::EnvMap {
    let mut map = map.clone();
    for scope in cfg.chat_scopes.iter().chain(&cfg.embed_scopes) {
        let key = format!("{}__RETRY__MAX_HINT_S", scope.to_ascii_uppercase());
        // An empty value is unset, as for every key: it gets the default too.
        let value = map.entry(key).or_default();
        if value.trim().is_empty() {
            DEFAULT_MAX_HINT_S.clone_into(value);
        }
    }
    map
}

/// The server state of `cfg` over the environment `map` (one client per served scope).
pub(super) fn build_state(
    map: &polygateway::EnvMap,
    cfg: &ServeConfig,
) -> Result<AppState, polygateway::ConfigError> {
    let map = &with_serve_defaults(map, cfg);
    let mut clients = BTreeMap::new();
    for scope in &cfg.chat_scopes {
        let client = GatewayClient::from_env_map(scope, map)?;
        crate::config::print_warnings(client.assembly_warnings());
        clients.insert(scope.to_ascii_lowercase(), Client::Chat(client));
    }
    for scope in &cfg.embed_scopes {
        let client = EmbeddingClient::from_env_map(scope, map)?;
        crate::config::print_warnings(client.assembly_warnings());
        clients.insert(scope.to_ascii_lowercase(), Client::Embed(client));
    }
    let pricing = match map
        .get(PRICING_PATH_KEY)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(path) => {
            let (table, _warnings) = load_pricing_with_warnings(path)?;
            Some(RowShaper::new(Some(table), None, true)?)
        }
    };
    let limiter: Option<Arc<dyn RateLimiter>> = if cfg.key_rpm > 0 || cfg.key_max_concurrency > 0 {
        let buckets: Vec<SourceConfig> = cfg
            .keys
            .iter()
            .map(|k| {
                let mut s =
                    SourceConfig::new(k.bucket.clone(), "serve", "http://127.0.0.1", None, "-");
                s.rpm = cfg.key_rpm;
                s.max_concurrency = cfg.key_max_concurrency;
                s
            })
            .collect();
        Some(Arc::new(MemoryRateLimiter::new(
            "serve_keys",
            &buckets,
            GlobalLimits::default(),
            600.0,
            Arc::new(TokioClock::new()),
        )))
    } else {
        None
    };
    Ok(AppState {
        clients,
        aliases: cfg
            .aliases
            .iter()
            .map(|(a, s)| (a.clone(), s.to_ascii_lowercase()))
            .collect(),
        keys: cfg.keys.clone(),
        limiter,
        metrics: Metrics::default(),
        failures: FailureLog::default(),
        draining: AtomicBool::new(false),
        pricing,
        streams_open: AtomicI64::new(0),
        upstream_always_streams: cfg.upstream_always_streams,
    })
}
