//! Building HTTP answers: JSON bodies, OpenAI-shaped errors with `Retry-After`, body-read
//! rejections.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::openai::ApiError;

/// Seconds since the Unix epoch (the `created` of an answer; 0 if the clock is before it).
pub(super) fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A JSON answer with `status` (500 for a status out of range).
pub(super) fn json_response(status: u16, body: &Value) -> Response {
    json_bytes_response(status, body.to_string().into_bytes())
}

/// A JSON answer with `status` whose body is already serialised.
pub(super) fn json_bytes_response(status: u16, body: Vec<u8>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
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

/// The OpenAI-shaped error of a body that could not be read (413 when too large).
pub(super) fn body_error(rejection: &BytesRejection, limit_hint: bool) -> ApiError {
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
