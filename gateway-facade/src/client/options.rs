//! Per-call chat options and results: [`ChatInput`], [`ChatOptions`], [`ChatOutcome`] and the
//! call-boundary limits.
//!
//! Separate from the client so the option builder (plain data, no I/O) reads on its own; the
//! client only consumes it.

use std::time::Duration;

use gateway_ports::{
    CachePolicy, ChatRequest, Effort, GatewayError, JsonObject, LlmResponse, Meta, MetaValue,
    ResponseMode, StructuredSpec,
};
use serde_json::Value;

use crate::report::ErrorReport;

/// Origin of an invalid per-call deadline.
pub const CHAT_DEADLINE_ORIGIN: &str = "ChatOptions::call_deadline";

/// Most `meta` entries.
pub const META_MAX_ENTRIES: usize = 16;
/// Longest `meta` string value, in characters.
pub const META_MAX_STR_CHARS: usize = 1024;
/// Longest `tenant_id`, in characters.
pub const TENANT_MAX_CHARS: usize = 128;

/// What a chat call is about: a whole [`ChatRequest`], or just the messages (every other field
/// at its default). Built with `From`: `ChatRequest`, `Vec<JsonObject>`, or a `&str`/`String`
/// (one user message).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatInput(pub ChatRequest);

impl From<ChatRequest> for ChatInput {
    fn from(request: ChatRequest) -> Self {
        Self(request)
    }
}

impl From<Vec<JsonObject>> for ChatInput {
    fn from(messages: Vec<JsonObject>) -> Self {
        Self(ChatRequest::new(messages))
    }
}

impl From<&str> for ChatInput {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl From<String> for ChatInput {
    fn from(text: String) -> Self {
        let mut message = JsonObject::new();
        message.insert("role".to_owned(), Value::from("user"));
        message.insert("content".to_owned(), Value::from(text));
        Self(ChatRequest::new(vec![message]))
    }
}

/// Per-call options of [`GatewayClient::chat`](super::GatewayClient::chat). Every `Some`
/// (and every overlay / meta entry) overrides the request's value; the default changes nothing.
///
/// ```
/// # use polygateway::ChatOptions;
/// # use std::time::Duration;
/// let options = ChatOptions::new()
///     .stream(false)
///     .temperature(0.2)
///     .call_deadline(Duration::from_secs(30))
///     .tenant_id("acme");
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ChatOptions {
    /// Upstream wire mode (`None` keeps the request's, default `true`); the caller always gets
    /// one aggregated response.
    pub stream: Option<bool>,
    /// `Text` or `OpenAi` fidelity mode.
    pub response_mode: Option<ResponseMode>,
    /// Sampling overrides merged over the request's overlay (`temperature`, `max_tokens`,
    /// `tools`, …). `model`, `messages`, `stream`, `stream_options` are refused.
    pub overlay: JsonObject,
    /// Request-level effort: wins over the source intent, resolved against each
    /// source's capability entry on every attempt; `None` inherits the source intent.
    pub reasoning_effort: Option<Effort>,
    /// Structured output: the reply is parsed, repaired, validated and re-asked;
    /// `LlmResponse::structured_data` holds the value.
    pub structured: Option<StructuredSpec>,
    /// Per-call deadline; `None` inherits the assembled one; zero is `InvalidArgument`.
    pub call_deadline: Option<Duration>,
    /// Caller tenant (telemetry only): 1–128 characters, no control characters.
    pub tenant_id: Option<String>,
    /// Caller dimensions merged over the request's (telemetry only).
    pub meta: Meta,
    /// Caller session correlation (telemetry only).
    pub session_id: Option<String>,
    /// Caller business correlation (telemetry only).
    pub parent_call_id: Option<String>,
    /// Per-call cache control (`Bypass` = neither read nor write, `Refresh` = write only).
    pub cache: Option<CachePolicy>,
    /// Per-call cache namespace overriding the client's (non-empty, at most 256 characters,
    /// no control characters).
    pub cache_namespace: Option<String>,
    /// Per-call cache salt overriding the client's (same domain as the namespace).
    pub cache_salt: Option<String>,
}

impl ChatOptions {
    /// Options that change nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Upstream wire mode: `true` = SSE stream (watchdogs, stall metering, hedges), `false` =
    /// one JSON body.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = Some(stream);
        self
    }

    /// Response mode (`Text` or `OpenAi` fidelity with the full assistant message).
    pub fn response_mode(mut self, mode: ResponseMode) -> Self {
        self.response_mode = Some(mode);
        self
    }

    /// Merges these overlay entries (keys here win).
    pub fn overlay(mut self, overlay: JsonObject) -> Self {
        self.overlay.extend(overlay);
        self
    }

    /// Sets one sampling key of the overlay (e.g. `("seed", 7.into())`).
    pub fn sampling(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.overlay.insert(key.into(), value.into());
        self
    }

    /// `temperature` in the overlay.
    pub fn temperature(self, temperature: f64) -> Self {
        self.sampling("temperature", temperature)
    }

    /// `max_tokens` in the overlay.
    pub fn max_tokens(self, max_tokens: u64) -> Self {
        self.sampling("max_tokens", max_tokens)
    }

    /// Request-level reasoning effort: sent in each source's wire dialect; a level
    /// the selected model cannot hit is `RequestRejected` unless the source sets
    /// `EFFORT_FALLBACK=nearest`.
    pub fn reasoning_effort(mut self, effort: Effort) -> Self {
        self.reasoning_effort = Some(effort);
        self
    }

    /// Structured output: `StructuredSpec::Json` (any JSON object) or a JSON Schema.
    pub fn structured(mut self, spec: StructuredSpec) -> Self {
        self.structured = Some(spec);
        self
    }

    /// Per-call deadline (zero → `InvalidArgument` naming `ChatOptions::call_deadline`).
    pub fn call_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// Caller tenant.
    pub fn tenant_id(mut self, tenant: impl Into<String>) -> Self {
        self.tenant_id = Some(tenant.into());
        self
    }

    /// One caller dimension.
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<MetaValue>) -> Self {
        self.meta.insert(key.into(), value.into());
        self
    }

    /// Caller session correlation.
    pub fn session_id(mut self, session: impl Into<String>) -> Self {
        self.session_id = Some(session.into());
        self
    }

    /// Caller business correlation.
    pub fn parent_call_id(mut self, parent: impl Into<String>) -> Self {
        self.parent_call_id = Some(parent.into());
        self
    }

    /// Per-call cache control.
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// Neither read nor write the response cache for this call.
    pub fn bypass_cache(self) -> Self {
        self.cache(CachePolicy::Bypass)
    }

    /// The cache namespace of this call (overrides the client's; the isolation unit — give
    /// each tenant its own, e.g. with `gateway_core::cache::CacheNamespace::compose`).
    pub fn cache_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.cache_namespace = Some(namespace.into());
        self
    }

    /// The cache salt of this call (overrides the client's).
    pub fn cache_salt(mut self, salt: impl Into<String>) -> Self {
        self.cache_salt = Some(salt.into());
        self
    }

    /// `request` with these options applied.
    pub fn apply(self, mut request: ChatRequest) -> ChatRequest {
        if let Some(stream) = self.stream {
            request.stream = stream;
        }
        if let Some(mode) = self.response_mode {
            request.response_mode = mode;
        }
        request.overlay.extend(self.overlay);
        if self.reasoning_effort.is_some() {
            request.reasoning_effort = self.reasoning_effort;
        }
        if self.structured.is_some() {
            request.structured = self.structured;
        }
        if self.call_deadline.is_some() {
            request.call_deadline = self.call_deadline;
        }
        if self.tenant_id.is_some() {
            request.tenant_id = self.tenant_id;
        }
        request.meta.extend(self.meta);
        if self.session_id.is_some() {
            request.session_id = self.session_id;
        }
        if self.parent_call_id.is_some() {
            request.parent_call_id = self.parent_call_id;
        }
        if let Some(cache) = self.cache {
            request.cache = cache;
        }
        if self.cache_namespace.is_some() {
            request.cache_namespace = self.cache_namespace;
        }
        if self.cache_salt.is_some() {
            request.cache_salt = self.cache_salt;
        }
        request
    }
}

/// The result of [`GatewayClient::chat_outcome`](super::GatewayClient::chat_outcome): the call's result and the number of upstream
/// requests it made (errors carry no statistics).
#[derive(Debug)]
#[non_exhaustive]
pub struct ChatOutcome {
    /// What `chat` returns.
    pub result: Result<LlmResponse, GatewayError>,
    /// Upstream requests the call made (attempts that reached the transport).
    pub attempts: u32,
}

impl ChatOutcome {
    /// The outcome of `result`: the attempt count from the response's statistics or from
    /// the error.
    pub(super) fn of(result: Result<LlmResponse, GatewayError>) -> Self {
        let attempts = match &result {
            Ok(response) => response
                .call_stats
                .as_ref()
                .map_or(0, |stats| stats.attempts),
            Err(error) => error.attempts(),
        };
        Self { result, attempts }
    }

    /// The JSON report of the error (with its `attempts`); `None` on success.
    pub fn error_report(&self) -> Option<ErrorReport> {
        self.result.as_ref().err().map(ErrorReport::from)
    }
}
