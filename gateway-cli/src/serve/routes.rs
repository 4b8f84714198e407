//! The router and the small routes: `/v1/models`, `/healthz`, `/metrics`, the fallback.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use polygateway::BreakerState;
use serde_json::{Value, json};

use super::chat::chat_route;
use super::embeddings::embeddings_route;
use super::metrics::gauge_labels;
use super::openai::ApiError;
use super::respond::json_response;
use super::state::{AppState, Client};

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
pub(super) fn router(state: Arc<AppState>, max_body: usize) -> Router {
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
