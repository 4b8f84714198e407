//! Streamed chat answers of `pgw serve`: the library's `ChatStream` events turned into OpenAI
//! `chat.completion.chunk` SSE frames as they are committed.
//!
//! Flow: the handler polls the stream's first event before answering. A failure before the
//! commit point (nothing forwarded yet: retries, hedges and failover already ran invisibly) is
//! answered as a normal OpenAI-shaped JSON error with its HTTP status and `Retry-After`. Once a
//! delta arrives the response starts (`200`, `text/event-stream`) and every later delta is one
//! frame: role in the first, the finish frame (`finish_reason`), the usage frame (empty
//! `choices`) with `stream_options.include_usage`, then `data: [DONE]`.
//!
//! A failure after the commit point ends the body with one `data: {"error": {...}}` frame and no
//! `[DONE]`: the official OpenAI SDKs raise that frame as `APIError` (Python) and stop reading;
//! a raw client sees a stream without `[DONE]`, i.e. incomplete.
//!
//! The body owns the `ChatStream` and the caller key's permit: a client that disconnects drops
//! the body, which drops the stream (the call is cancelled, its attempts settled) and the permit.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_util::StreamExt as _;
use polygateway::{ChatStream, GatewayError, LlmResponse, StreamDelta, StreamEvent};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::openai::{self, ApiError};
use super::state::{AppState, PermitGuard};

/// Counts an open SSE body in `AppState::streams_open` while it lives.
struct OpenGuard(Arc<AppState>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The state of one streamed answer (moved into the response body).
struct SseBody {
    stream: ChatStream,
    state: Arc<AppState>,
    scope: String,
    started: Instant,
    include_usage: bool,
    id: String,
    model: String,
    created: u64,
    role_sent: bool,
    tool_calls_sent: bool,
    /// The first event, taken before the response started.
    pending: Option<Result<StreamEvent, GatewayError>>,
    finished: bool,
    _permit: PermitGuard,
    _open: OpenGuard,
}

/// Answers a streamed chat request: polls `stream` to its first event, then returns the JSON
/// error (nothing committed) or the SSE response.
pub(super) async fn respond(
    state: Arc<AppState>,
    scope: String,
    requested_model: String,
    mut stream: ChatStream,
    include_usage: bool,
    permit: PermitGuard,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let first = stream.next().await;
    let first = match first {
        None => {
            return Err(ApiError::plain(
                500,
                "server_error",
                "internal",
                None,
                "the streamed call ended without an answer",
            ));
        }
        Some(Err(error)) if !error.is_committed() => {
            state.record_chat_error(&scope, &error, None, started);
            return Err(ApiError::gateway(&error, None));
        }
        Some(first) => first,
    };
    let (id, model) = match &first {
        Ok(StreamEvent::Delta(d)) => ids_of(d.raw.as_ref()),
        Ok(StreamEvent::Done(r)) => (
            Some(openai::response_id(r).into_owned()),
            Some(openai::model_of_response(r).to_owned()),
        ),
        _ => (None, None),
    };
    state.streams_open.fetch_add(1, Ordering::Relaxed);
    let body = SseBody {
        stream,
        state: Arc::clone(&state),
        scope,
        started,
        include_usage,
        id: id.unwrap_or_else(fresh_id),
        model: model.unwrap_or(requested_model),
        created: super::respond::now_s(),
        role_sent: false,
        tool_calls_sent: false,
        pending: Some(first),
        finished: false,
        _permit: permit,
        _open: OpenGuard(state),
    };
    let frames = futures_util::stream::unfold(body, |mut body| async move {
        let bytes = body.next_frames().await?;
        Some((Ok::<Bytes, std::convert::Infallible>(bytes), body))
    });
    let mut response = Response::new(Body::from_stream(frames));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The upstream chunk's `id` and `model`, when it has them.
fn ids_of(raw: Option<&Value>) -> (Option<String>, Option<String>) {
    let field = |k: &str| {
        raw.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    (field("id"), field("model"))
}

/// A fresh response id when the upstream gave none.
fn fresh_id() -> String {
    use std::sync::atomic::AtomicU64;
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "chatcmpl-pgw{nanos:x}{:x}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl SseBody {
    /// The bytes of the next event's frames; `None` once the body is complete.
    async fn next_frames(&mut self) -> Option<Bytes> {
        if self.finished {
            return None;
        }
        let event = match self.pending.take() {
            Some(e) => Some(e),
            None => self.stream.next().await,
        };
        let mut out = String::new();
        match event {
            Some(Ok(StreamEvent::Delta(delta))) => self.delta_frame(&mut out, &delta),
            Some(Ok(StreamEvent::Done(response))) => {
                self.finished = true;
                self.done_frames(&mut out, &response);
                self.state
                    .record_chat_ok(&self.scope, &response, 1, self.started);
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                self.finished = true;
                self.state
                    .record_chat_error(&self.scope, &error, None, self.started);
                let mut e = ApiError::gateway(&error, None);
                e.body["error"]["committed"] = Value::Bool(error.is_committed());
                frame(&mut out, &e.body);
            }
            None => {
                // The library always ends with Done or an error; end the body cleanly anyway.
                self.finished = true;
                return None;
            }
        }
        Some(Bytes::from(out))
    }

    fn chunk(&self, choices: Value) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": choices,
        })
    }

    fn choice(delta: Map<String, Value>, finish: Option<&str>) -> Value {
        json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
    }

    /// The `delta` object, with the role on the first frame.
    fn delta_object(&mut self) -> Map<String, Value> {
        let mut d = Map::new();
        if !self.role_sent {
            self.role_sent = true;
            d.insert("role".into(), Value::from("assistant"));
        }
        d
    }

    fn delta_frame(&mut self, out: &mut String, delta: &StreamDelta) {
        let first = !self.role_sent;
        let mut d = self.delta_object();
        if !delta.reasoning.is_empty() {
            d.insert(
                "reasoning_content".into(),
                Value::from(delta.reasoning.as_str()),
            );
        }
        if !delta.content.is_empty() || first {
            d.insert("content".into(), Value::from(delta.content.as_str()));
        }
        if !delta.tool_calls.is_empty() {
            self.tool_calls_sent = true;
            let calls: Vec<Value> = delta
                .tool_calls
                .iter()
                .map(|t| {
                    let mut function = Map::new();
                    if let Some(n) = &t.name {
                        function.insert("name".into(), Value::from(n.as_str()));
                    }
                    function.insert("arguments".into(), Value::from(t.arguments.as_str()));
                    let mut call = Map::new();
                    call.insert("index".into(), Value::from(t.index));
                    if let Some(id) = &t.id {
                        call.insert("id".into(), Value::from(id.as_str()));
                        call.insert("type".into(), Value::from("function"));
                    }
                    call.insert("function".into(), Value::Object(function));
                    Value::Object(call)
                })
                .collect();
            d.insert("tool_calls".into(), Value::Array(calls));
        }
        if d.is_empty() {
            return;
        }
        frame(out, &self.chunk(Self::choice(d, None)));
    }

    fn done_frames(&mut self, out: &mut String, response: &LlmResponse) {
        let tools = openai::tool_calls_of(response);
        let mut queue: VecDeque<Value> = VecDeque::new();
        if !self.tool_calls_sent && !tools.is_empty() {
            for (i, tool) in tools.iter().enumerate() {
                let mut t = tool.clone();
                if let Value::Object(o) = &mut t {
                    o.insert("index".into(), Value::from(i));
                }
                let mut d = self.delta_object();
                d.insert("tool_calls".into(), Value::Array(vec![t]));
                queue.push_back(self.chunk(Self::choice(d, None)));
            }
        }
        if !self.role_sent {
            let mut d = self.delta_object();
            d.insert("content".into(), Value::from(""));
            queue.push_front(self.chunk(Self::choice(d, None)));
        }
        for f in &queue {
            frame(out, f);
        }
        let finish = openai::finish_of(response);
        frame(out, &self.chunk(Self::choice(Map::new(), Some(finish))));
        if self.include_usage {
            let mut last = self.chunk(json!([]));
            last["usage"] = openai::usage_json(response);
            frame(out, &last);
        }
        out.push_str("data: [DONE]\n\n");
    }
}

/// Appends one `data:` frame.
fn frame(out: &mut String, value: &Value) {
    let _ = write!(out, "data: {value}\n\n");
}
