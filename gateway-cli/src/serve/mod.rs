//! `pgw serve`: an OpenAI-compatible HTTP server in front of the library.
//!
//! Routes: `POST /v1/chat/completions` (non-stream: one `chat.completion` built from the
//! fidelity-mode response; `stream: true`: SSE `chat.completion.chunk` frames as the deltas
//! arrive and `data: [DONE]`),
//! `POST /v1/embeddings`, `GET /v1/models` (one entry per scope and alias), `GET /healthz`,
//! `GET /metrics` (Prometheus text). The request's `model` names a served scope (lower case) or
//! an alias; bearer tokens from configuration map callers to tenants (telemetry `tenant_id` and
//! the cache namespace); upstream keys never leave the server.
//!
//! Streaming goes through `GatewayClient::chat_stream` (module `sse`): deltas are forwarded as
//! they pass the commit point; a failure before it is a plain JSON error with its status, a
//! failure after it ends the SSE body with an error frame.
//!
//! Shutdown: SIGINT or SIGTERM stops accepting, lets in-flight requests finish for at most
//! `PGW_SERVE_DRAIN_S`, then closes every client (telemetry flushed).

mod config;
mod metrics;
mod openai;
mod sse;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use gateway_core::clock::TokioClock;
use gateway_core::memory::limiter::MemoryRateLimiter;
use gateway_core::telemetry::pricing::PRICING_PATH_KEY;
use gateway_core::telemetry::{RowShaper, load_pricing_with_warnings};
use gateway_ports::{
    Acquire, CallOperation, GatewayError, GlobalLimits, LlmResponse, Permit, RateLimiter, Usage,
    UsageSource,
};
use polygateway::{
    BreakerState, ChatOptions, ChatRequest, EmbedRequest, EmbeddingClient, GatewayClient,
    ResponseMode, SourceConfig,
};
use serde_json::{Value, json};

use crate::envmap::{self, EnvFileChoice};
use crate::exit;
use crate::out;
use config::{CallerKey, ServeConfig};
use metrics::{Metrics, gauge_labels};
use openai::ApiError;

/// How long closing the clients (telemetry flush) may take at shutdown.
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Arguments of `pgw serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Listen address `host:port` (default `PGW_SERVE_LISTEN`, else 127.0.0.1:8080; port 0
    /// picks a free port). The bound address is printed on stdout first.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Read this file instead of `./.env` (it must exist).
    #[arg(long, value_name = "PATH", conflicts_with = "no_env_file")]
    pub env_file: Option<std::path::PathBuf>,
    /// Read no `.env` file.
    #[arg(long)]
    pub no_env_file: bool,
    /// Extra environment entry KEY=VALUE (repeatable); overrides the environment.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// A served scope's client.
enum Client {
    Chat(GatewayClient),
    Embed(EmbeddingClient),
}

/// Shared server state.
struct AppState {
    /// Lower-case scope → client.
    clients: BTreeMap<String, Client>,
    /// Lower-case alias → lower-case scope.
    aliases: BTreeMap<String, String>,
    keys: Vec<CallerKey>,
    /// Per-key limiter (the library's in-memory rate limiter, one bucket per key); `None`
    /// when no per-key limit is set.
    limiter: Option<Arc<dyn RateLimiter>>,
    metrics: Metrics,
    draining: AtomicBool,
    /// Prices of `PGW_PRICING_PATH` (the same shaper telemetry rows use); `None` without one.
    pricing: Option<RowShaper>,
    /// Streamed answers whose body is still open.
    streams_open: AtomicI64,
    /// `PGW_SERVE_UPSTREAM_STREAM` is `always` (the default).
    upstream_always_streams: bool,
}

/// Releases a per-key permit when the request ends, however it ends (a dropped connection
/// included): never a leaked slot.
pub(crate) struct PermitGuard(Option<Box<dyn Permit>>);

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

pub(crate) fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.status, &self.body);
        if let Some(s) = self.retry_after_s {
            // Retry-After takes whole seconds: round up so a client never retries too early.
            let secs = s.ceil().max(0.0) as u64;
            if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        response
    }
}

/// Constant-time byte comparison (no early exit on the first differing byte).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl AppState {
    /// The caller key of `Authorization: Bearer …`, or the OpenAI-shaped 401.
    fn authenticate(&self, headers: &HeaderMap) -> Result<&CallerKey, ApiError> {
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
        let mut found = None;
        for key in &self.keys {
            if same(key.token.expose_secret().as_bytes(), token.as_bytes()) {
                found = Some(key);
            }
        }
        found.ok_or_else(|| unauthorized("incorrect API key provided"))
    }

    /// The lower-case scope a `model` names.
    fn scope_of(&self, model: &str) -> Option<String> {
        let m = model.trim().to_ascii_lowercase();
        if self.clients.contains_key(&m) {
            return Some(m);
        }
        self.aliases.get(&m).cloned()
    }

    fn model_not_found(&self, model: &str, kind: &str) -> ApiError {
        let mut names: Vec<&str> = self.clients.keys().map(String::as_str).collect();
        names.extend(self.aliases.keys().map(String::as_str));
        ApiError::plain(
            404,
            "invalid_request_error",
            "model_not_found",
            Some("model"),
            format!(
                "the model `{model}` is not a served {kind} scope or alias; served: {}",
                names.join(", ")
            ),
        )
    }

    /// Takes the caller key's per-key limit slot (429 with Retry-After when full).
    async fn admit(&self, key: &CallerKey) -> Result<PermitGuard, ApiError> {
        let Some(limiter) = &self.limiter else {
            return Ok(PermitGuard(None));
        };
        match limiter.try_acquire(&key.bucket, 0).await {
            Ok(Acquire::Granted(permit)) => Ok(PermitGuard(Some(permit))),
            Ok(Acquire::Denied { gate, wait_hint_s }) => {
                let mut e = ApiError::plain(
                    429,
                    "rate_limit_error",
                    "rate_limit_exceeded",
                    None,
                    format!(
                        "this API key's limit is reached ({}); raise PGW_SERVE_KEY_RPM or PGW_SERVE_KEY_MAX_CONCURRENCY",
                        gate.as_str()
                    ),
                );
                e.body["error"]["reason_code"] = Value::from(gate.as_str());
                if let Some(w) = wait_hint_s {
                    e.body["error"]["retry_after_s"] = json!(w);
                    e.retry_after_s = Some(w);
                }
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

    fn count(&self, route: &str, response: &Response) {
        self.metrics.add(
            "pgw_http_requests_total",
            &[("route", route), ("status", response.status().as_str())],
            1.0,
        );
    }
}

fn body_error(rejection: &BytesRejection, limit_hint: bool) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE || limit_hint {
        ApiError::plain(
            413,
            "invalid_request_error",
            "request_too_large",
            None,
            "the request body is larger than PGW_SERVE_MAX_BODY_BYTES",
        )
    } else {
        ApiError::invalid(None, "the request body could not be read")
    }
}

async fn chat_route(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match chat(&state, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state.count("/v1/chat/completions", &response);
    response
}

async fn chat(
    state: &Arc<AppState>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = state.authenticate(headers)?;
    let body = body.map_err(|r| body_error(&r, false))?;
    let req = openai::parse_chat(&body)?;
    let scope = state
        .scope_of(&req.model)
        .ok_or_else(|| state.model_not_found(&req.model, "chat"))?;
    let Some(Client::Chat(client)) = state.clients.get(&scope) else {
        return Err(state.model_not_found(&req.model, "chat"));
    };
    let permit = state.admit(key).await?;
    let mut request = ChatRequest::new(req.messages);
    request.overlay = req.overlay;
    // By default the upstream is always streamed (TTFT, stall hedging); the client's `stream`
    // picks the answer's shape: deltas forwarded as they pass the commit point, or one body at
    // the end. `PGW_SERVE_UPSTREAM_STREAM=client` streams upstream only for stream clients.
    let options = ChatOptions::new()
        .stream(req.stream || state.upstream_always_streams)
        .response_mode(ResponseMode::OpenAi)
        .tenant_id(key.tenant.clone())
        .cache_namespace(key.tenant.clone());
    if req.stream {
        let stream = client.chat_stream(request, options);
        return sse::respond(
            Arc::clone(state),
            scope,
            req.model,
            stream,
            req.include_usage,
            permit,
        )
        .await;
    }
    let started = Instant::now();
    let outcome = client.chat_outcome(request, options).await;
    drop(permit);
    match outcome.result {
        Err(error) => {
            state.record_chat_error(&scope, &error, Some(outcome.attempts), started);
            Err(ApiError::gateway(&error, Some(outcome.attempts)))
        }
        Ok(response) => {
            let (attempts, hedges) =
                state.record_chat_ok(&scope, &response, outcome.attempts, started);
            let mut http = json_response(200, &openai::completion_json(&response, now_s()));
            let h = http.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&response.source_name) {
                h.insert("x-pgw-source", v);
            }
            h.insert("x-pgw-attempts", HeaderValue::from(attempts));
            h.insert("x-pgw-hedges", HeaderValue::from(hedges));
            h.insert(
                "x-pgw-cache-hit",
                HeaderValue::from_static(if response.cache_hit { "true" } else { "false" }),
            );
            Ok(http)
        }
    }
}

impl AppState {
    /// Records a failed chat call; `attempts` when known.
    fn record_chat_error(
        &self,
        scope: &str,
        error: &GatewayError,
        attempts: Option<u32>,
        started: Instant,
    ) {
        let m = &self.metrics;
        m.add(
            "pgw_calls_total",
            &[("scope", scope), ("source", ""), ("outcome", "error")],
            1.0,
        );
        m.add(
            "pgw_errors_total",
            &[("scope", scope), ("type", error.type_name())],
            1.0,
        );
        if let Some(n) = attempts {
            m.add(
                "pgw_retries_total",
                &[("scope", scope)],
                f64::from(n.saturating_sub(1)),
            );
        }
        m.observe(
            "pgw_call_latency_ms",
            &[("scope", scope)],
            started.elapsed().as_secs_f64() * 1e3,
        );
    }

    /// Records a successful chat call; returns (attempts, hedges) from its statistics
    /// (`attempts` as given when the response has none).
    fn record_chat_ok(
        &self,
        scope: &str,
        response: &LlmResponse,
        attempts: u32,
        started: Instant,
    ) -> (u32, u32) {
        let m = &self.metrics;
        let source = response.source_name.as_str();
        let labels = [("scope", scope), ("source", source)];
        m.add(
            "pgw_calls_total",
            &[labels[0], labels[1], ("outcome", "ok")],
            1.0,
        );
        m.add(
            "pgw_tokens_total",
            &[labels[0], labels[1], ("kind", "prompt")],
            response.usage.prompt_tokens as f64,
        );
        m.add(
            "pgw_tokens_total",
            &[labels[0], labels[1], ("kind", "completion")],
            response.usage.completion_tokens as f64,
        );
        let (attempts, hedges) = response
            .call_stats
            .as_ref()
            .map(|s| (s.attempts, s.hedges))
            .unwrap_or((attempts, 0));
        m.add("pgw_hedges_total", &[("scope", scope)], f64::from(hedges));
        m.add(
            "pgw_retries_total",
            &[("scope", scope)],
            f64::from(attempts.saturating_sub(1).saturating_sub(hedges)),
        );
        if response.cache_hit {
            m.add("pgw_cache_hits_total", &[("scope", scope)], 1.0);
        } else if let Some(cost) = self.cost(
            CallOperation::Chat,
            &response.model,
            &response.usage,
            response.usage_source,
        ) {
            m.add("pgw_cost_total", &labels, cost);
        }
        m.observe(
            "pgw_call_latency_ms",
            &[("scope", scope)],
            started.elapsed().as_secs_f64() * 1e3,
        );
        if let Some(t) = response.ttft_ms {
            m.observe("pgw_ttft_ms", &labels, t);
        }
        (attempts, hedges)
    }

    /// The cost of a successful attempt exactly as its telemetry row prices it; `None` without
    /// a price table or for a model not in it.
    fn cost(
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

async fn embeddings_route(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match embeddings(&state, &headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state.count("/v1/embeddings", &response);
    response
}

async fn embeddings(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = state.authenticate(headers)?;
    let body = body.map_err(|r| body_error(&r, false))?;
    let req = openai::parse_embed(&body)?;
    let scope = state
        .scope_of(&req.model)
        .ok_or_else(|| state.model_not_found(&req.model, "embedding"))?;
    let Some(Client::Embed(client)) = state.clients.get(&scope) else {
        return Err(state.model_not_found(&req.model, "embedding"));
    };
    let _permit = state.admit(key).await?;
    let mut request = EmbedRequest::new(req.texts);
    request.tenant_id = Some(key.tenant.clone());
    let started = Instant::now();
    let result = client.embed(request).await;
    let m = &state.metrics;
    m.observe(
        "pgw_call_latency_ms",
        &[("scope", scope.as_str())],
        started.elapsed().as_secs_f64() * 1e3,
    );
    match result {
        Err(error) => {
            m.add(
                "pgw_calls_total",
                &[
                    ("scope", scope.as_str()),
                    ("source", ""),
                    ("outcome", "error"),
                ],
                1.0,
            );
            m.add(
                "pgw_errors_total",
                &[("scope", scope.as_str()), ("type", error.type_name())],
                1.0,
            );
            Err(ApiError::gateway(&error, None))
        }
        Ok(response) => {
            let source = response.source_name.clone();
            m.add(
                "pgw_calls_total",
                &[
                    ("scope", scope.as_str()),
                    ("source", source.as_str()),
                    ("outcome", "ok"),
                ],
                1.0,
            );
            m.add(
                "pgw_tokens_total",
                &[
                    ("scope", scope.as_str()),
                    ("source", source.as_str()),
                    ("kind", "prompt"),
                ],
                response.usage.prompt_tokens as f64,
            );
            if let Some(cost) = state.cost(
                CallOperation::Embed,
                &response.model,
                &response.usage,
                response.usage_source,
            ) {
                m.add(
                    "pgw_cost_total",
                    &[("scope", scope.as_str()), ("source", source.as_str())],
                    cost,
                );
            }
            if let Some(s) = &response.call_stats {
                m.add(
                    "pgw_retries_total",
                    &[("scope", scope.as_str())],
                    f64::from(s.attempts.saturating_sub(1).saturating_sub(s.hedges)),
                );
                m.add(
                    "pgw_hedges_total",
                    &[("scope", scope.as_str())],
                    f64::from(s.hedges),
                );
            }
            Ok(json_response(
                200,
                &openai::embeddings_json(&response, &req.model, req.base64),
            ))
        }
    }
}

async fn models_route(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let response = match state.authenticate(&headers) {
        Err(e) => e.into_response(),
        Ok(_) => {
            let entry = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "polygateway"});
            let data: Vec<Value> = state
                .clients
                .keys()
                .chain(state.aliases.keys())
                .map(|id| entry(id))
                .collect();
            json_response(200, &json!({"object": "list", "data": data}))
        }
    };
    state.count("/v1/models", &response);
    response
}

async fn healthz_route(State(state): State<Arc<AppState>>) -> Response {
    if state.draining.load(Ordering::Relaxed) {
        json_response(503, &json!({"status": "draining"}))
    } else {
        json_response(200, &json!({"status": "ok"}))
    }
}

async fn metrics_route(State(state): State<Arc<AppState>>) -> Response {
    let mut breaker = Vec::new();
    let mut inflight = Vec::new();
    for (scope, client) in &state.clients {
        if let Client::Chat(c) = client {
            for s in c.sources_status().await {
                if let Some(n) = s.inflight {
                    inflight.push((
                        gauge_labels(&[("scope", scope), ("source", &s.name)]),
                        f64::from(n),
                    ));
                }
                let value = match s.breaker_state {
                    Some(BreakerState::Closed) => 0.0,
                    Some(BreakerState::HalfOpen) => 1.0,
                    Some(BreakerState::Open) => 2.0,
                    _ => -1.0,
                };
                breaker.push((
                    gauge_labels(&[("scope", scope), ("source", &s.name)]),
                    value,
                ));
            }
        }
    }
    let streams = state.streams_open.load(Ordering::Relaxed) as f64;
    let text = state.metrics.render(&[
        (
            "pgw_breaker_state",
            "Breaker state per source: 0 closed, 1 half-open, 2 open, -1 unknown.",
            breaker,
        ),
        (
            "pgw_source_inflight",
            "Upstream attempts in flight per source (limiter permits held).",
            inflight,
        ),
        (
            "pgw_streams_open",
            "Streamed answers whose response body is still open.",
            vec![(gauge_labels(&[]), streams)],
        ),
    ]);
    let mut r = Response::new(Body::from(text));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    r
}

async fn fallback_route() -> Response {
    ApiError::plain(
        404,
        "invalid_request_error",
        "unknown_url",
        None,
        "unknown route",
    )
    .into_response()
}

/// The router over `state` (bodies limited to `max_body` bytes).
fn router(state: Arc<AppState>, max_body: usize) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_route))
        .route("/v1/embeddings", post(embeddings_route))
        .route("/v1/models", get(models_route))
        .route("/healthz", get(healthz_route))
        .route("/metrics", get(metrics_route))
        .fallback(fallback_route)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn build_state(
    map: &polygateway::EnvMap,
    cfg: &ServeConfig,
) -> Result<AppState, polygateway::ConfigError> {
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
        draining: AtomicBool::new(false),
        pricing,
        streams_open: AtomicI64::new(0),
        upstream_always_streams: cfg.upstream_always_streams,
    })
}

/// Runs `pgw serve`; returns the exit code.
pub async fn run(args: ServeArgs) -> u8 {
    let mut map = match envmap::base_map(&EnvFileChoice {
        path: args.env_file.clone(),
        disabled: args.no_env_file,
    }) {
        Ok(m) => m,
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    if let Err(e) = envmap::apply_sets(&mut map, &args.set) {
        return crate::config::report_config_error(&e, false);
    }
    envmap::apply_telemetry(&mut map, None);
    let cfg = match ServeConfig::from_map(&map, args.listen.as_deref()) {
        Ok(c) => c,
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    let state = match build_state(&map, &cfg) {
        Ok(s) => Arc::new(s),
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    let listener = match tokio::net::TcpListener::bind(cfg.listen).await {
        Ok(l) => l,
        Err(e) => {
            out::stderr_line(&format!("pgw: cannot listen on {}: {e}", cfg.listen));
            return exit::INTERNAL;
        }
    };
    match listener.local_addr() {
        Ok(addr) => {
            out::stdout_line(&addr.to_string());
        }
        Err(e) => {
            out::stderr_line(&format!("pgw: cannot read the bound address: {e}"));
            return exit::INTERNAL;
        }
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let app = router(Arc::clone(&state), cfg.max_body_bytes);
    let mut graceful_rx = stop_rx.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        let _ = graceful_rx.wait_for(|stop| *stop).await;
    });
    let signal_state = Arc::clone(&state);
    tokio::spawn(async move {
        shutdown_signal().await;
        signal_state.draining.store(true, Ordering::Relaxed);
        out::stderr_line("pgw: shutting down; draining in-flight requests");
        let _ = stop_tx.send(true);
    });
    let drain = cfg.drain;
    let mut bound_rx = stop_rx;
    let served = tokio::select! {
        r = server.into_future() => r.map_err(|e| e.to_string()),
        _ = async move {
            let _ = bound_rx.wait_for(|stop| *stop).await;
            tokio::time::sleep(drain).await;
        } => {
            out::stderr_line("pgw: drain time over (PGW_SERVE_DRAIN_S); dropping the remaining requests");
            Ok(())
        }
    };
    // Closing flushes telemetry; bounded so a stuck backend never keeps the process alive.
    let close_all = async {
        for client in state.clients.values() {
            match client {
                Client::Chat(c) => c.close().await,
                Client::Embed(c) => c.close().await,
            }
        }
        if let Some(limiter) = &state.limiter {
            limiter.close().await;
        }
    };
    if tokio::time::timeout(CLOSE_BOUND, close_all).await.is_err() {
        out::stderr_line("pgw: closing the clients took too long; exiting anyway");
    }
    match served {
        Ok(()) => exit::OK,
        Err(e) => {
            out::stderr_line(&format!("pgw: server error: {e}"));
            exit::INTERNAL
        }
    }
}
