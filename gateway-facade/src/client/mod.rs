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

use gateway_core::accumulate::WarningThrottle;
use gateway_core::executor::{ChatExecutor, ExecutorOptions};
use gateway_core::governor::CallOptions;
use gateway_core::telemetry::RowInput;
use gateway_core::thinking::ProviderRegistry;
#[cfg(feature = "structured")]
use gateway_ports::{ChatRequest, StructuredSpec};
use gateway_ports::{
    ChatTransport, ConfigError, ConfigWarning, GatewayError, LlmResponse, TelemetryStatus,
};
#[cfg(feature = "structured")]
use serde_json::Value;

use crate::assembly::{ClientPlan, GatewayClientBuilder, SettingsRef};
use crate::settings::{EnvMap, GatewaySettings, ValidatedSettings};
use crate::status::SourceStatus;
use crate::structured::StructuredConfig;
use crate::wiring::{Assembly, Runtime};

mod build;
mod guards;
mod options;

#[cfg(not(feature = "openai"))]
pub(crate) use build::no_transport;
#[cfg(feature = "openai")]
pub(crate) use build::openai_transport;
pub(crate) use build::{KeyStyle, transport_key};
pub(crate) use guards::{check_chat, check_dimensions, check_n};
pub use options::{
    CHAT_DEADLINE_ORIGIN, ChatInput, ChatOptions, ChatOutcome, META_MAX_ENTRIES,
    META_MAX_STR_CHARS, TENANT_MAX_CHARS,
};

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
    /// [`ErrorReport`](crate::ErrorReport)'s `attempts`).
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
        let executor = ChatExecutor::with_client_options(
            Arc::clone(&inner.transport),
            Arc::clone(&request),
            inner.executor_options.clone(),
        );
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
            ChatExecutor::with_client_options(
                Arc::clone(&inner.transport),
                round,
                inner.executor_options.clone(),
            )
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
    /// settled, its rows handed on), then flushes the telemetry recorder, then sends what the
    /// limiter and breaker buffered (with Redis: finished calls' exits, success samples).
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

#[cfg(test)]
mod cache_ownership_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use std::time::Duration;

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
