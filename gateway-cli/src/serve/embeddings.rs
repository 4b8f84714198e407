//! `POST /v1/embeddings`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, State};
use axum::response::{IntoResponse, Response};
use gateway_ports::CallOperation;
use polygateway::EmbedRequest;
use tokio::time::Instant;

use gateway_ports::vocab::ScopeKind;

use super::openai::{self, ApiError};
use super::respond::{body_error, json_bytes_response};
use super::state::{AppState, Caller, Client};

pub(super) async fn embeddings_route(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let response = match embeddings(&state, caller, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    state.count("/v1/embeddings", &response);
    response
}

async fn embeddings(
    state: &AppState,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let key = state.caller_key(caller)?;
    let body = body.map_err(|r| body_error(&r, false))?;
    let req = openai::parse_embed(&body)?;
    let scope = state
        .scope_of(&req.model)
        .ok_or_else(|| state.model_not_found(&req.model, ScopeKind::Embedding))?;
    let Some(Client::Embed(client)) = state.clients.get(&scope) else {
        return Err(state.model_not_found(&req.model, ScopeKind::Embedding));
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
            state.failures.failed(&scope, &error);
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
            // Like a chat answer, the body names the model that answered (the winning
            // source's), not the scope or alias the request named.
            let model = if response.model.is_empty() {
                req.model.as_str()
            } else {
                response.model.as_str()
            };
            let body = openai::embeddings_body(&response, model, req.base64).map_err(|_| {
                ApiError::plain(
                    500,
                    "server_error",
                    "response_encoding",
                    None,
                    "the embeddings could not be written as JSON",
                )
            })?;
            Ok(json_bytes_response(200, body))
        }
    }
}
