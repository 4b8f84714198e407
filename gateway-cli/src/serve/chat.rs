//! `POST /v1/chat/completions`: the non-stream answer (streamed answers are in `sse`) and the
//! chat metrics of a finished call.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use gateway_ports::{CallOperation, GatewayError, LlmResponse};
use polygateway::{ChatOptions, ChatRequest, ResponseMode};
use tokio::time::Instant;

use gateway_ports::vocab::ScopeKind;

use super::openai::{self, ApiError};
use super::respond::{body_error, json_bytes_response, now_s};
use super::sse;
use super::state::{AppState, Caller, Client};

pub(super) async fn chat_route(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match chat(&state, caller, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state.count("/v1/chat/completions", &response);
    response
}

async fn chat(
    state: &Arc<AppState>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = state.caller_key(caller)?;
    let body = body.map_err(|r| body_error(&r, false))?;
    let req = openai::parse_chat(&body)?;
    let scope = state
        .scope_of(&req.model)
        .ok_or_else(|| state.model_not_found(&req.model, ScopeKind::Chat))?;
    let Some(Client::Chat(client)) = state.clients.get(&scope) else {
        return Err(state.model_not_found(&req.model, ScopeKind::Chat));
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
            let body = openai::completion_body(&response, now_s()).map_err(|_| {
                ApiError::plain(
                    500,
                    "server_error",
                    "response_encoding",
                    None,
                    "the answer could not be written as JSON",
                )
            })?;
            let mut http = json_bytes_response(200, body);
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
    pub(super) fn record_chat_error(
        &self,
        scope: &str,
        error: &GatewayError,
        attempts: Option<u32>,
        started: Instant,
    ) {
        self.failures.failed(scope, error);
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
    pub(super) fn record_chat_ok(
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
}
