//! `GatewayClient`: the governed chat client.
//!
//! Owns the public chat entry point: the three assembly paths ending in one [`Runtime`],
//! the per-call options ([`ChatOptions`]) and the call-boundary guards
//! (`InvalidArgument` before the statistics boundary, no I/O, no row), the production runner
//! (`gateway_core::executor::ChatExecutor`) driven by the core's `Governor`, and the mapping of
//! the governed result into an [`LlmResponse`] with its `call_stats`.
//!
//! # Cancel-safety
//!
//! `chat()` futures are `Send` and cancel-safe: dropping one (a `select!`, a timeout, a dropped
//! task) cancels the call. Every attempt in flight is settled exactly as a cancellation
//! (permit settled with its estimate or known usage and released, half-open probe released,
//! pacer slot returned) and its row (`error = 'cancelled'`) plus the call's terminal row are
//! written by the cleanup worker this client spawned; nothing keeps running for the call.
//! `quiesce()` waits for that cleanup; `close()` drains it.
//!
//! # Tracing
//!
//! Every call runs in the span `pgw.call` (`logical_call_id`, `scope`, `operation`), with
//! `pgw.round` and `pgw.attempt` (`call_id`, `source`, `attempt`, `hedge_leg`, `outcome`,
//! `reason_code`, `http_status`, `ttft_ms`) inside — opened by the core's governor; no content
//! and no secret is recorded in spans.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gateway_core::accumulate::WarningThrottle;
use gateway_core::cache::{check_cache_options, namespace_problem};
use gateway_core::executor::{ChatExecutor, ExecutorOptions};
use gateway_core::governor::CallOptions;
use gateway_core::telemetry::RowInput;
use gateway_core::thinking::ProviderRegistry;
use gateway_ports::{
    CachePolicy, ChatRequest, ChatTransport, ConfigError, ConfigWarning, Effort, GatewayError,
    JsonObject, LlmResponse, Meta, MetaValue, ResponseMode, StructuredSpec, TelemetryStatus,
};
use serde_json::Value;

use crate::assembly::{ClientPlan, GatewayClientBuilder, SettingsRef};
use crate::report::ErrorReport;
use crate::settings::{EnvMap, GatewaySettings, ValidatedSettings};
use crate::status::SourceStatus;
use crate::structured::StructuredConfig;
use crate::wiring::{Assembly, GovernanceComponents, Runtime};

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

/// Per-call options of [`GatewayClient::chat`]. Every `Some`
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

/// The result of [`GatewayClient::chat_outcome`]: the call's result and the number of upstream
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
    fn of(result: Result<LlmResponse, GatewayError>) -> Self {
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

pub(crate) struct ClientInner {
    pub(crate) runtime: Runtime,
    pub(crate) transport: Arc<dyn ChatTransport>,
    pub(crate) executor_options: ExecutorOptions,
    #[cfg_attr(
        not(feature = "structured"),
        allow(dead_code, reason = "read by the structured path only")
    )]
    structured: StructuredConfig,
}

/// What a chat client adds to its assembly beyond the governance components (70): the
/// structured-output configuration and the provider registry of the capability table.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChatExtras {
    pub(crate) structured: StructuredConfig,
    pub(crate) profiles: ProviderRegistry,
}

/// The governed chat client. `Clone + Send + Sync`: clones share one
/// governed scope (an `Arc` inside). See the module docs for cancel-safety and tracing.
///
/// Build it with [`GatewayClient::from_env`], [`GatewayClient::from_settings`] or
/// [`GatewayClient::builder`]; the three paths give the same client for the same
/// configuration.
#[derive(Clone)]
pub struct GatewayClient {
    pub(crate) inner: Arc<ClientInner>,
}

impl fmt::Debug for GatewayClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayClient")
            .field("scope", &self.inner.runtime.plan.scope)
            .field("runtime", &self.inner.runtime)
            .finish_non_exhaustive()
    }
}

/// Where a settings-path assembly error names a transport field.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyStyle {
    /// `{SCOPE}__{PROVIDER}__{N}__{FIELD}` (path 1).
    Env,
    /// `GatewaySettings.sources[{name}].{field}` (path 2).
    Settings,
}

/// The key naming a transport-build error of `source` (F9).
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn transport_key(
    style: KeyStyle,
    scope: &str,
    source: &str,
    field: Option<&str>,
) -> String {
    match style {
        KeyStyle::Env => {
            let (provider, n) = source.rsplit_once('_').unwrap_or((source, "1"));
            let base = format!(
                "{}__{}__{}",
                scope.to_ascii_uppercase(),
                provider.to_ascii_uppercase(),
                n
            );
            match field {
                Some(f) => format!("{base}__{f}"),
                None => base,
            }
        }
        KeyStyle::Settings => match field {
            Some(f) => format!(
                "GatewaySettings.sources[{source}].{}",
                f.to_ascii_lowercase()
            ),
            None => format!("GatewaySettings.sources[{source}]"),
        },
    }
}

/// The OpenAI transport of a settings path (feature `openai`; F9 errors name the key).
#[cfg(feature = "openai")]
pub(crate) fn openai_transport(
    plan: &ClientPlan,
    style: KeyStyle,
) -> Result<Arc<adapter_openai::OpenAiTransport>, ConfigError> {
    adapter_openai::OpenAiTransport::new(&plan.sources, adapter_openai::TransportOptions::default())
        .map(Arc::new)
        .map_err(|e| {
            e.to_config_error(transport_key(
                style,
                &plan.scope,
                e.source_name(),
                e.field(),
            ))
        })
}

#[cfg(not(feature = "openai"))]
pub(crate) fn no_transport(origin: &str) -> ConfigError {
    ConfigError::new(
        "backend.unavailable",
        origin,
        "the OpenAI transport is not in this build: cargo feature `openai` (off); use the builder with a transport",
    )
}

impl GatewayClient {
    /// Path 1: reads the process environment once (never a `.env` file) and
    /// assembles scope `scope` ≡ `from_settings(GatewaySettings::from_env(scope)?)`.
    ///
    /// Errors: any `ConfigError` of stages A–F, named by the environment key that matched;
    /// `runtime.missing` outside a tokio runtime.
    pub fn from_env(scope: &str) -> Result<Self, ConfigError> {
        let settings = GatewaySettings::from_env(scope)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "GatewayClient::from_env"))
    }

    /// Path 1 over an explicit map instead of the process environment (tests, the CLI's
    /// `.env` merge).
    pub fn from_env_map(scope: &str, map: &EnvMap) -> Result<Self, ConfigError> {
        let settings = GatewaySettings::from_env_map(scope, map)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "GatewayClient::from_env_map"))
    }

    /// Path 2: raw settings are validated (stages B–D), validated ones are used as
    /// they are; then stage F builds the owned components: the OpenAI transport (feature
    /// `openai`), the in-memory limiter and breaker, the AIMD pacer, the selector of
    /// `selector`, the telemetry recorder of `telemetry_backend` and the price table.
    pub fn from_settings<'a>(settings: impl Into<SettingsRef<'a>>) -> Result<Self, ConfigError> {
        match settings.into() {
            SettingsRef::Raw(raw) => Self::assemble(&raw.validate()?, KeyStyle::Settings),
            SettingsRef::Validated(v) => Self::assemble(v, KeyStyle::Settings),
        }
    }

    // Without the `openai` feature the settings path ends at the transport (no backend).
    #[cfg_attr(not(feature = "openai"), allow(clippy::needless_return))]
    fn assemble(settings: &ValidatedSettings, style: KeyStyle) -> Result<Self, ConfigError> {
        let plan = ClientPlan::from_settings(settings)?;
        #[cfg(feature = "openai")]
        let transport: Arc<dyn ChatTransport> = openai_transport(&plan, style)?;
        #[cfg(not(feature = "openai"))]
        {
            let _ = (style, plan);
            return Err(no_transport("GatewayClient::from_settings"));
        }
        #[cfg(feature = "openai")]
        let assembly =
            Assembly::from_validated(plan, settings, true, "GatewayClient::from_settings")?;
        let extras = ChatExtras {
            structured: StructuredConfig {
                max_retries: settings.structured_max_retries,
                ..StructuredConfig::default()
            },
            profiles: ProviderRegistry::builtin(),
        };
        #[cfg(feature = "openai")]
        Self::start(assembly, transport, extras, style)
    }

    /// Path 3: a builder for injected components.
    pub fn builder() -> GatewayClientBuilder {
        GatewayClientBuilder::new()
    }

    pub(crate) fn start(
        assembly: Assembly,
        transport: Arc<dyn ChatTransport>,
        extras: ChatExtras,
        style: KeyStyle,
    ) -> Result<Self, ConfigError> {
        // 70 C-22, C-27, C-31.3: source-level reasoning checked against this client's registry.
        let scope = assembly.plan.scope.clone();
        for source in &assembly.plan.sources {
            gateway_core::effort::check_source(source, &extras.profiles, &|field| {
                transport_key(style, &scope, &source.name, Some(field))
            })?;
        }
        let runtime = Runtime::start(assembly)?;
        let mut executor_options = ExecutorOptions::default()
            .with_clock(Arc::clone(&runtime.clock))
            .with_warnings(Arc::new(WarningThrottle::new()))
            .with_profiles(Arc::new(extras.profiles));
        executor_options.redact_ips = runtime.redact_ips;
        executor_options.scope = Some(scope);
        Ok(Self {
            inner: Arc::new(ClientInner {
                runtime,
                transport,
                executor_options,
                structured: extras.structured,
            }),
        })
    }

    /// One governed chat call (30, 40, 50, 60): `input` is a [`ChatRequest`], messages or a
    /// user text; `options` override the request's fields. Returns one aggregated
    /// [`LlmResponse`] with `call_stats` set.
    ///
    /// Errors: `ClientClosed` after [`close`](Self::close); `InvalidArgument` for a
    /// bad combination found before any I/O (fidelity with structured output or
    /// `n ≠ 1`, structured output not in this build or an invalid schema / schema name,
    /// library-controlled overlay keys, caller dimensions, a managed reasoning key in the
    /// overlay together with `reasoning_effort`, a zero deadline); otherwise the call's error
    /// (`AllSourcesExhausted`, `CircuitOpen`, `RequestRejected` — also a reasoning level the
    /// selected model cannot use —, `ResultInvalid` — also an exhausted structured-output
    /// ladder —, `CallDeadlineExceeded`, …). With `structured`, `structured_data` holds the
    /// validated value. Cancel-safe (module docs).
    pub async fn chat(
        &self,
        input: impl Into<ChatInput>,
        options: ChatOptions,
    ) -> Result<LlmResponse, GatewayError> {
        self.chat_outcome(input, options).await.result
    }

    /// [`chat`](Self::chat) plus the number of upstream requests the call made (for
    /// [`ErrorReport`]'s `attempts`).
    pub async fn chat_outcome(
        &self,
        input: impl Into<ChatInput>,
        options: ChatOptions,
    ) -> ChatOutcome {
        let request = options.apply(input.into().0);
        let failed = |error| ChatOutcome {
            result: Err(error),
            attempts: 0,
        };
        let inner = &*self.inner;
        if inner.runtime.governor.is_closed() {
            return failed(GatewayError::ClientClosed);
        }
        if let Err(error) = check_chat(&request) {
            return failed(error);
        }
        if let Err(error) = check_n(&request, &inner.runtime.plan.sources) {
            return failed(error);
        }
        let request = Arc::new(request);
        let mut call = CallOptions::default()
            .with_row_input(Arc::new(RowInput::chat(&request)))
            .with_stream(request.stream);
        call.call_deadline = request.call_deadline;
        call.deadline_origin = Some(CHAT_DEADLINE_ORIGIN.to_owned());
        #[cfg(feature = "structured")]
        if request.structured.is_some() {
            return self.chat_structured(&request, call).await;
        }
        let executor = ChatExecutor::new(Arc::clone(&inner.transport), Arc::clone(&request))
            .with_options(inner.executor_options.clone());
        let cache = inner
            .runtime
            .cache
            .as_ref()
            .and_then(|cache| cache.prepare(&request, None));
        let result = inner
            .runtime
            .governor
            .run_chat_cached(&executor, call, cache.as_ref())
            .await;
        ChatOutcome::of(result)
    }

    /// The structured path: one logical call, every ladder round a full governed
    /// loop under the call's one deadline; `structured_data` holds the validated value. The
    /// response cache sits outside the ladder (key with the structured spec and the round-0
    /// strategy's name; only the final validated answer is stored; a hit rebuilds
    /// `structured_data` from the stored text).
    #[cfg(feature = "structured")]
    async fn chat_structured(&self, request: &ChatRequest, call: CallOptions) -> ChatOutcome {
        use gateway_core::structured::{Ladder, ladder};
        let inner = &*self.inner;
        let handle = match inner.runtime.governor.begin_ladder_call(call) {
            Ok(handle) => handle,
            Err(error) => {
                return ChatOutcome {
                    result: Err(error),
                    attempts: 0,
                };
            }
        };
        let options = inner.structured.ladder();
        let cache = inner.runtime.cache.as_ref().and_then(|cache| {
            cache.prepare_structured(
                request,
                Some(options.strategy.as_ref()),
                options.escalation.as_deref(),
            )
        });
        let mut state = Ladder::new(request, options.clone());
        let result = ladder::run_cached(handle, &mut state, cache.as_ref(), |round| {
            ChatExecutor::new(Arc::clone(&inner.transport), round)
                .with_options(inner.executor_options.clone())
        })
        .await;
        ChatOutcome::of(result)
    }

    /// [`chat`](Self::chat) with structured output decoded into `T` (beyond the original):
    /// `spec` (default `StructuredSpec::Json`) asks for JSON, the ladder parses, repairs,
    /// validates and re-asks, and the validated value is deserialized.
    ///
    /// Errors: those of [`chat`](Self::chat); a value that validates but does not deserialize
    /// into `T` is `ResultInvalid` whose validation error names the serde error (the text is in
    /// the error's details, never its message).
    #[cfg(feature = "structured")]
    pub async fn chat_json<T: serde::de::DeserializeOwned>(
        &self,
        input: impl Into<ChatInput>,
        options: ChatOptions,
    ) -> Result<(T, LlmResponse), GatewayError> {
        let options = if options.structured.is_none() {
            options.structured(StructuredSpec::Json)
        } else {
            options
        };
        let response = self.chat(input, options).await?;
        let value = response.structured_data.clone().unwrap_or(Value::Null);
        match serde_json::from_value::<T>(value) {
            Ok(typed) => Ok((typed, response)),
            Err(e) => Err(gateway_core::structured::ladder::exhausted_error(
                gateway_ports::StructuredFailure {
                    validation_errors: vec![format!("/: {e}")],
                    repair_error: None,
                },
                &response.content,
            )),
        }
    }

    /// Waits until this client's cleanup queue holds no pending job (every cancelled attempt
    /// settled, its rows handed on), then flushes the telemetry recorder.
    /// Keeps accepting calls.
    pub async fn quiesce(&self) {
        self.inner.runtime.quiesce().await;
    }

    /// Closes the client: idempotent; later calls return
    /// `ClientClosed`; drains the cleanup worker it spawned (bounded), flushes telemetry, and
    /// closes the components it built (limiter, breaker, recorder) — never injected ones
    /// . Affects every clone.
    pub async fn close(&self) {
        self.inner.runtime.close().await;
    }

    /// `true` after [`close`](Self::close).
    pub fn is_closed(&self) -> bool {
        self.inner.runtime.governor.is_closed()
    }

    /// The telemetry recorder's status; backend `"none"` without telemetry.
    pub fn telemetry_status(&self) -> TelemetryStatus {
        self.inner.runtime.telemetry_status()
    }

    /// Per source: breaker state, epoch, `open_count`, in-flight, RPM/TPM used, pacer limit,
    /// health score, in configuration order.
    pub async fn sources_status(&self) -> Vec<SourceStatus> {
        self.inner.runtime.sources_status().await
    }

    /// The assembly warnings of this client, each once.
    pub fn assembly_warnings(&self) -> &[ConfigWarning] {
        &self.inner.runtime.plan.warnings
    }

    /// The plan this client was assembled from (scope, sources, policies).
    pub fn plan(&self) -> &ClientPlan {
        &self.inner.runtime.plan
    }

    /// The scope label (lower case).
    pub fn scope(&self) -> &str {
        &self.inner.runtime.plan.scope
    }
}

impl GatewayClientBuilder {
    /// Stage F and assembly of the client: the injected components are used and
    /// never closed by the client; missing ones default to the in-memory limiter and breaker
    /// (owned), the AIMD pacer, the selector of `selector(..)`, the tokio clock; without an
    /// injected recorder there is no telemetry.
    ///
    /// Errors: the `ConfigError`s of [`GatewayClientBuilder::plan`]; `runtime.missing` outside
    /// a tokio runtime.
    pub fn build(self) -> Result<GatewayClient, ConfigError> {
        self.build_with(GovernanceComponents::default())
    }

    /// [`build`](Self::build) with an injected pacer, selector or jitter source.
    pub fn build_with(
        self,
        governance: GovernanceComponents,
    ) -> Result<GatewayClient, ConfigError> {
        let extras = ChatExtras {
            structured: self.structured.clone(),
            profiles: self.profiles.clone(),
        };
        let (plan, transport, components) = self.plan()?;
        for (field, value) in [
            ("cache_namespace", &components.cache_options.namespace),
            ("cache_salt", &components.cache_options.salt),
        ] {
            if let Some(problem) = value.as_deref().and_then(namespace_problem) {
                return Err(ConfigError::new(
                    "settings.backend",
                    format!("GatewayClientBuilder::{field}"),
                    format!("{field} {problem}"),
                ));
            }
        }
        if components.cache_options.ttl.is_some_and(|t| t.is_zero()) {
            return Err(ConfigError::new(
                "settings.backend",
                "GatewayClientBuilder::cache_ttl",
                "cache_ttl must be greater than zero",
            ));
        }
        let assembly = Assembly::from_injected(
            plan,
            components,
            governance,
            true,
            "GatewayClientBuilder::build",
        );
        GatewayClient::start(assembly, transport, extras, KeyStyle::Settings)
    }
}

/// The chat call-boundary guards, in order. Each
/// failure is `InvalidArgument` naming the `ChatOptions` field.
pub(crate) fn check_chat(request: &ChatRequest) -> Result<(), GatewayError> {
    if request.response_mode == ResponseMode::OpenAi && request.structured.is_some() {
        return Err(GatewayError::invalid_argument(
            "ChatOptions::response_mode",
            "openai mode does not support structured output",
        ));
    }
    if let Some(spec) = &request.structured {
        check_structured(spec)?;
    }
    for key in ["model", "messages", "stream", "stream_options"] {
        if request.overlay.contains_key(key) {
            return Err(GatewayError::invalid_argument(
                "ChatOptions::overlay",
                format!("`{key}` is controlled by the library and must not be in the overlay"),
            ));
        }
    }
    check_dimensions(request.tenant_id.as_deref(), &request.meta, "ChatOptions")?;
    check_cache_options(request, "ChatOptions")?;
    // 70 C-31.1: a managed reasoning root in the overlay together with a request level.
    if request.reasoning_effort.is_some()
        && let Some(root) = gateway_core::effort::managed_root_in(
            &request.overlay,
            &gateway_core::thinking::ProviderProfile::plain(""),
        )
    {
        return Err(GatewayError::invalid_argument(
            "ChatOptions::overlay",
            format!(
                "`{root}` in the overlay cannot be combined with ChatOptions::reasoning_effort; \
                 use one of them"
            ),
        ));
    }
    Ok(())
}

/// steps 2–3: structured support is in this build (cargo feature `structured`) and the
/// spec's schema compiles with a valid name.
#[cfg(feature = "structured")]
fn check_structured(spec: &StructuredSpec) -> Result<(), GatewayError> {
    gateway_core::structured::check_spec(spec)
}

#[cfg(not(feature = "structured"))]
fn check_structured(_spec: &StructuredSpec) -> Result<(), GatewayError> {
    Err(GatewayError::invalid_argument(
        "ChatRequest::structured",
        "structured output not enabled: this build lacks the cargo feature `structured` of polygateway",
    ))
}

/// The effective `n` of a chat request must be 1 in both modes: the request
/// overlay's `n` when it has one, else each source's `extra_body` `n`. The text mode reads only
/// choice 0 and would pay for the others. Checked before any I/O; the error names where the
/// value came from.
pub(crate) fn check_n(
    request: &ChatRequest,
    sources: &[gateway_ports::SourceConfig],
) -> Result<(), GatewayError> {
    let is_one = |n: &serde_json::Value| n.as_i64() == Some(1);
    if let Some(n) = request.overlay.get("n") {
        if is_one(n) {
            return Ok(());
        }
        return Err(GatewayError::invalid_argument(
            "ChatOptions::overlay",
            format!(
                "n={n} is not supported: the gateway returns one choice; set n to 1 or remove it"
            ),
        ));
    }
    for source in sources {
        if let Some(n) = source.extra_body.get("n")
            && !is_one(n)
        {
            return Err(GatewayError::invalid_argument(
                format!("SourceConfig::extra_body ({})", source.name),
                format!(
                    "source {}'s extra_body sets n={n}; the gateway returns one choice: set n \
                     to 1 or remove it from the source's EXTRA_BODY",
                    source.name
                ),
            ));
        }
    }
    Ok(())
}

/// `^[a-z][a-z0-9_]{0,63}$`.
fn is_meta_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// Caller dimensions: `tenant_id` 1–128 characters without control
/// characters; `meta` at most 16 entries, keys `^[a-z][a-z0-9_]{0,63}$`, strings at most 1024
/// characters. Origins `{owner}::tenant_id` / `{owner}::meta`.
pub(crate) fn check_dimensions(
    tenant: Option<&str>,
    meta: &Meta,
    owner: &str,
) -> Result<(), GatewayError> {
    if let Some(tenant) = tenant {
        let chars = tenant.chars().count();
        if chars == 0 || chars > TENANT_MAX_CHARS || tenant.chars().any(char::is_control) {
            return Err(GatewayError::invalid_argument(
                format!("{owner}::tenant_id"),
                format!(
                    "tenant_id must be 1–{TENANT_MAX_CHARS} characters without control characters"
                ),
            ));
        }
    }
    let origin = || format!("{owner}::meta");
    if meta.len() > META_MAX_ENTRIES {
        return Err(GatewayError::invalid_argument(
            origin(),
            format!(
                "meta has {} entries; at most {META_MAX_ENTRIES} are allowed",
                meta.len()
            ),
        ));
    }
    for (key, value) in meta {
        if !is_meta_key(key) {
            return Err(GatewayError::invalid_argument(
                origin(),
                format!("meta key `{key}` must match ^[a-z][a-z0-9_]{{0,63}}$"),
            ));
        }
        if let MetaValue::Str(s) = value
            && s.chars().count() > META_MAX_STR_CHARS
        {
            return Err(GatewayError::invalid_argument(
                origin(),
                format!("meta value of `{key}` exceeds {META_MAX_STR_CHARS} characters"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod cache_ownership_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    fn env(backend: &str) -> EnvMap {
        [
            ("PGW_TELEMETRY_BACKEND", "none"),
            ("PGW_CACHE_BACKEND", backend),
            ("LLM__SIM__1__BASE_URL", "http://127.0.0.1:9/v1"),
            ("LLM__SIM__1__API_KEY", "sk-test-0123456789"),
            ("LLM__SIM__1__MODEL", "m"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The memory cache built from `PGW_CACHE_BACKEND=memory` is owned and
    /// closed by `close()` (a closed memory cache answers `Err`); `none` builds no cache.
    #[cfg(feature = "openai")]
    #[tokio::test]
    async fn c_64_cf_308_factory_cache_closed_by_close() {
        let client = GatewayClient::from_env_map("LLM", &env("memory")).unwrap();
        let cache = client
            .inner
            .runtime
            .cache
            .as_ref()
            .expect("memory cache built");
        assert_eq!(cache.namespace(), "llm", "default namespace = scope name");
        let backend = Arc::clone(cache.backend());
        backend
            .set("k", "v".to_owned(), Duration::from_secs(60))
            .await
            .unwrap();
        client.close().await;
        client.close().await;
        assert!(backend.get("k").await.is_err(), "closed by the client");
        let none = GatewayClient::from_env_map("LLM", &env("none")).unwrap();
        assert!(none.inner.runtime.cache.is_none());
        none.close().await;
    }
}
