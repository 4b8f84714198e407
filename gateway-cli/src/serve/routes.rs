//! The router and the small routes: `/v1/models`, `/healthz`, `/metrics`, the fallback.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use polygateway::BreakerState;
use serde_json::{Value, json};
use tower_http::timeout::TimeoutBody;

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

/// In front of the POST routes: the caller key is checked from the headers **before** the body
/// is read (an unknown caller gets its 401 at once and never has the server wait for, buffer or
/// `100 Continue` its body) and handed to the handler as a [`Caller`](super::state::Caller) extension (looked up
/// once per request), and the body then may pause at most `body_idle`
/// (`PGW_SERVE_CLIENT_TIMEOUT_S`) between two pieces (a client that announced a body and
/// stopped sending it fails with a 400 instead of holding the request).
async fn caller_first(
    State((state, body_idle)): State<(Arc<AppState>, Duration)>,
    mut req: Request,
    next: Next,
) -> Response {
    match state.authenticate(req.headers()) {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
        }
        Err(e) => {
            let response = e.into_response();
            state.count(req.uri().path(), &response);
            return response;
        }
    }
    next.run(req.map(|body| Body::new(TimeoutBody::new(body_idle, body))))
        .await
}

/// A known route asked with another method: the OpenAI-shaped 405 (axum's own has no body).
async fn method_not_allowed_route() -> Response {
    ApiError::plain(
        405,
        "invalid_request_error",
        "method_not_allowed",
        None,
        "this route does not take this method (chat completions and embeddings take POST; \
         models, healthz and metrics take GET)",
    )
    .into_response()
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

/// The router over `state` (bodies limited to `max_body` bytes, pausing at most `body_idle`).
pub(super) fn router(state: Arc<AppState>, max_body: usize, body_idle: Duration) -> Router {
    let caller_first =
        middleware::from_fn_with_state((Arc::clone(&state), body_idle), caller_first);
    Router::new()
        .route(
            "/v1/chat/completions",
            post(chat_route).route_layer(caller_first.clone()),
        )
        .route(
            "/v1/embeddings",
            post(embeddings_route).route_layer(caller_first),
        )
        .route("/v1/models", get(models_route))
        .route("/healthz", get(healthz_route))
        .route("/metrics", get(metrics_route))
        .method_not_allowed_fallback(method_not_allowed_route)
        .fallback(fallback_route)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}
