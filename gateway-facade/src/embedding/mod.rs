//! `EmbeddingClient` and [`gather_bounded`].
//!
//! Owns the embedding call: the call-boundary guards, the empty input, batching,
//! one deadline shared by all batches, the per-attempt runner over an
//! `EmbeddingTransport` (body from `serialize_embed_body`, the `timeout_s`
//! watchdog, response mapping, `expected_dim`), the merge, L2 normalisation and
//! the summed `generation_ms`. Every batch runs through the core's one loop with
//! `LoopPolicy::EMBED` (no 429 exemption, no stall refund, no hedging; `Governor::run_embed`).
//!
//! # One logical call over batches
//!
//! The call opens one `CallHandle` (`Governor::begin_call`) and runs one loop per batch in
//! it (`CallHandle::run_loop`), serially: one `logical_call_id` on every row and in
//! `CallStats`, attempts accumulating over the batches, `generation_ms` summed, one deadline
//! shared by all batches, and at most one terminal row (the failing batch's,
//! or the merge's). Attempt rows carry their batch's texts; the terminal row
//! the whole call's input.
//!
//! Cancel-safety is the chat client's: dropping `embed()` cancels the batch in flight
//! with full settlement; later batches never start.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use gateway_core::attempt::SettleMode;
use gateway_core::call_context::new_uuid_v4;
use gateway_core::deadline::resolve_call_deadline;
use gateway_core::governor::CallOptions;
use gateway_core::retry_loop::LoopPolicy;
use gateway_core::telemetry::RowInput;
use gateway_ports::{
    AttemptError, CallStats, ConfigError, ConfigWarning, EmbedRequest, EmbeddingResponse,
    EmbeddingTransport, GatewayError, TelemetryStatus, UsageSource,
};

use crate::assembly::{ClientPlan, EmbeddingClientBuilder, EmbeddingPlan, EmbeddingSettingsRef};
use crate::client::{KeyStyle, check_dimensions};
use crate::settings::{EmbeddingSettings, EnvMap, ValidatedEmbeddingSettings};
use crate::status::SourceStatus;
use crate::wiring::{Assembly, GovernanceComponents, Runtime};

mod batch;
mod runner;
mod wire;

pub use batch::gather_bounded;
use batch::{BatchOutcome, normalize_l2, weakest};
use runner::EmbedRunner;
use wire::result_invalid;

/// Origin of an invalid per-call embedding deadline.
pub const EMBED_DEADLINE_ORIGIN: &str = "EmbedRequest::call_deadline";

struct EmbedInner {
    runtime: Runtime,
    transport: Arc<dyn EmbeddingTransport>,
    batch_size: usize,
    normalize: bool,
    expected_dim: Option<u32>,
}

/// The governed embedding client. `Clone + Send + Sync` (an `Arc`
/// inside). Built from the environment, from [`EmbeddingSettings`], or with
/// [`EmbeddingClientBuilder`]; hedge keys on its scope only warn (`hedge.non_chat_scope`).
#[derive(Clone)]
pub struct EmbeddingClient {
    inner: Arc<EmbedInner>,
}

impl fmt::Debug for EmbeddingClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingClient")
            .field("scope", &self.inner.runtime.plan.scope)
            .field("batch_size", &self.inner.batch_size)
            .field("normalize", &self.inner.normalize)
            .field("expected_dim", &self.inner.expected_dim)
            .finish_non_exhaustive()
    }
}

impl EmbeddingClient {
    /// Path 1: reads the process environment once and assembles the embedding scope `scope`
    /// (`EMBED` usually) ≡ `from_settings(EmbeddingSettings::from_env(scope)?)`.
    pub fn from_env(scope: &str) -> Result<Self, ConfigError> {
        let settings = EmbeddingSettings::from_env(scope)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "EmbeddingClient::from_env"))
    }

    /// Path 1 over an explicit map.
    pub fn from_env_map(scope: &str, map: &EnvMap) -> Result<Self, ConfigError> {
        let settings = EmbeddingSettings::from_env_map(scope, map)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "EmbeddingClient::from_env_map"))
    }

    /// Path 2: raw settings are validated (stages B–E); then stage F (F7 strips `extra_body`)
    /// and the owned components, as for `GatewayClient::from_settings`.
    pub fn from_settings<'a>(
        settings: impl Into<EmbeddingSettingsRef<'a>>,
    ) -> Result<Self, ConfigError> {
        match settings.into() {
            EmbeddingSettingsRef::Raw(raw) => Self::assemble(&raw.validate()?, KeyStyle::Settings),
            EmbeddingSettingsRef::Validated(v) => Self::assemble(v, KeyStyle::Settings),
        }
    }

    // Without the `openai` feature the settings path ends at the transport (no backend).
    #[cfg_attr(not(feature = "openai"), allow(unreachable_code, unused_variables))]
    fn assemble(
        settings: &ValidatedEmbeddingSettings,
        style: KeyStyle,
    ) -> Result<Self, ConfigError> {
        let plan = EmbeddingPlan::from_settings(settings)?;
        #[cfg(feature = "openai")]
        let transport: Arc<dyn EmbeddingTransport> =
            crate::client::openai_transport(&plan.gateway, style)?;
        #[cfg(not(feature = "openai"))]
        let transport: Arc<dyn EmbeddingTransport> = {
            let _ = style;
            return Err(crate::client::no_transport(
                "EmbeddingClient::from_settings",
            ));
        };
        let EmbeddingPlan {
            gateway,
            batch_size,
            normalize,
            expected_dim,
        } = plan;
        let assembly = Assembly::from_validated(
            gateway,
            &settings.gateway,
            false,
            "EmbeddingClient::from_settings",
        )?;
        Self::start(assembly, transport, batch_size, normalize, expected_dim)
    }

    /// Path 3: a builder for injected components.
    pub fn builder() -> EmbeddingClientBuilder {
        EmbeddingClientBuilder::new()
    }

    fn start(
        assembly: Assembly,
        transport: Arc<dyn EmbeddingTransport>,
        batch_size: u32,
        normalize: bool,
        expected_dim: Option<u32>,
    ) -> Result<Self, ConfigError> {
        let runtime = Runtime::start(assembly)?;
        Ok(Self {
            inner: Arc::new(EmbedInner {
                runtime,
                transport,
                batch_size: usize::try_from(batch_size.max(1)).unwrap_or(usize::MAX),
                normalize,
                expected_dim,
            }),
        })
    }

    /// Embeds `request.texts`: one vector per text, in input order.
    ///
    /// Errors: `ClientClosed` after `close()`; `InvalidArgument` for caller dimensions
    /// (`EmbedRequest::tenant_id` / `::meta`) or a zero deadline (`EmbedRequest::call_deadline`),
    /// before any I/O; then the first batch error, `CallDeadlineExceeded` when the one
    /// deadline of the call expires in any batch, or `ResultInvalid` when batches disagree
    /// on the dimension.
    pub async fn embed(&self, request: EmbedRequest) -> Result<EmbeddingResponse, GatewayError> {
        let inner = &*self.inner;
        let runtime = &inner.runtime;
        if runtime.governor.is_closed() {
            return Err(GatewayError::ClientClosed);
        }
        check_dimensions(request.tenant_id.as_deref(), &request.meta, "EmbedRequest")?;
        // A zero deadline is `InvalidArgument` even for an empty input (E-5 before E-6);
        // `begin_call` resolves it again for the call.
        resolve_call_deadline(
            runtime.plan.call_deadline,
            request.call_deadline,
            EMBED_DEADLINE_ORIGIN,
        )?;
        if request.texts.is_empty() {
            // E-6: outside the deadline, no transport call, no row.
            let mut response = EmbeddingResponse::default();
            response.call_id = new_uuid_v4();
            response.call_stats = Some(CallStats::new(new_uuid_v4(), 0, 0));
            return Ok(response);
        }
        let mut call = CallOptions::default()
            .with_row_input(Arc::new(RowInput::embed(&request, inner.batch_size)))
            .with_stream(false);
        call.call_deadline = request.call_deadline;
        call.deadline_origin = Some(EMBED_DEADLINE_ORIGIN.to_owned());
        let mut handle = runtime
            .governor
            .begin_call(call, gateway_ports::CallOperation::Embed)?;
        let mut batches: Vec<BatchOutcome> = Vec::new();
        for chunk in request.texts.chunks(inner.batch_size) {
            let runner = EmbedRunner {
                transport: Arc::clone(&inner.transport),
                texts: chunk.to_vec(),
                expected_dim: inner.expected_dim,
                clock: Arc::clone(&runtime.clock),
                redact_ips: runtime.redact_ips,
                vectors: Mutex::new(HashMap::new()),
            };
            let batch_request = EmbedRequest {
                texts: chunk.to_vec(),
                session_id: request.session_id.clone(),
                parent_call_id: request.parent_call_id.clone(),
                tenant_id: request.tenant_id.clone(),
                meta: request.meta.clone(),
                call_deadline: None,
            };
            let batch_input = Arc::new(RowInput::embed(&batch_request, inner.batch_size));
            // E-10: a fresh loop per batch; E-11: its error (terminal row written) ends the call.
            let governed = handle
                .run_loop(
                    &runner,
                    LoopPolicy::EMBED,
                    SettleMode::PromptOnly,
                    Some(batch_input),
                )
                .await?;
            let Some(parsed) = runner.take(&governed.call_id) else {
                let error = result_invalid(
                    &governed.source.name,
                    format!(
                        "{}: the winning attempt left no embedding vectors",
                        governed.source.name
                    ),
                );
                return Err(handle.fail(GatewayError::from_attempt("", error)).await);
            };
            let result = *governed.result;
            batches.push(BatchOutcome {
                parsed,
                usage: result.usage,
                usage_source: result.usage_source,
                latency_ms: governed.latency_ms,
                call_id: governed.call_id,
                source: governed.source,
            });
        }
        match self.merge(batches) {
            Ok(mut response) => {
                response.call_stats = Some(handle.finish());
                Ok(response)
            }
            Err(error) => Err(handle.fail(GatewayError::from_attempt("", error)).await),
        }
    }

    /// The merge of the batches' vectors (then the optional L2 normalisation).
    /// `call_stats` is left for the caller (the call handle's snapshot).
    fn merge(&self, batches: Vec<BatchOutcome>) -> Result<EmbeddingResponse, AttemptError> {
        let mut response = EmbeddingResponse::default();
        let Some(first) = batches.first() else {
            return Ok(response);
        };
        let dim = first.parsed.dim;
        if batches.iter().any(|b| b.parsed.dim != dim) {
            return Err(result_invalid(
                &first.source.name,
                "embedding dimension differs across batches".to_owned(),
            ));
        }
        response.model = first.source.model.clone();
        response.provider = first.source.provider.clone();
        response.call_id = first.call_id.clone();
        response.dim = u32::try_from(dim).unwrap_or(u32::MAX);
        let mut names: Vec<&str> = Vec::new();
        let mut usage_source = UsageSource::Measured;
        for b in &batches {
            if !names.contains(&b.source.name.as_str()) {
                names.push(&b.source.name);
            }
            usage_source = weakest(usage_source, b.usage_source);
            response.usage.prompt_tokens = response
                .usage
                .prompt_tokens
                .saturating_add(b.usage.prompt_tokens);
            response.latency_ms = response.latency_ms.saturating_add(b.latency_ms);
        }
        response.source_name = names.join(",");
        response.usage_source = usage_source;
        response.vectors = batches.into_iter().flat_map(|b| b.parsed.vectors).collect();
        if self.inner.normalize {
            for v in &mut response.vectors {
                normalize_l2(v);
            }
        }
        Ok(response)
    }

    /// Drains the cleanup queue, then flushes telemetry and what the limiter and breaker
    /// buffered (with Redis: finished calls' exits, success samples).
    pub async fn quiesce(&self) {
        self.inner.runtime.quiesce().await;
    }

    /// Closes the client (idempotent; later calls return `ClientClosed`; drains the cleanup
    /// worker it spawned; closes owned components only).
    pub async fn close(&self) {
        self.inner.runtime.close().await;
    }

    /// `true` after `close()`.
    pub fn is_closed(&self) -> bool {
        self.inner.runtime.governor.is_closed()
    }

    /// The telemetry recorder's status; backend `"none"` without telemetry.
    pub fn telemetry_status(&self) -> TelemetryStatus {
        self.inner.runtime.telemetry_status()
    }

    /// Per-source status.
    pub async fn sources_status(&self) -> Vec<SourceStatus> {
        self.inner.runtime.sources_status().await
    }

    /// The assembly warnings of this client (e.g. `hedge.non_chat_scope`).
    pub fn assembly_warnings(&self) -> &[ConfigWarning] {
        &self.inner.runtime.plan.warnings
    }

    /// The gateway plan this client was assembled from.
    pub fn plan(&self) -> &ClientPlan {
        &self.inner.runtime.plan
    }

    /// Texts per upstream request.
    pub fn batch_size(&self) -> usize {
        self.inner.batch_size
    }
}

impl EmbeddingClientBuilder {
    /// Stage F for an embedding scope and assembly of the client (injected components are not
    /// owned; see `GatewayClientBuilder::build`).
    pub fn build(self) -> Result<EmbeddingClient, ConfigError> {
        self.build_with(GovernanceComponents::default())
    }

    /// [`build`](Self::build) with an injected pacer, selector or jitter source.
    pub fn build_with(
        self,
        governance: GovernanceComponents,
    ) -> Result<EmbeddingClient, ConfigError> {
        let (plan, transport, components) = self.plan()?;
        let EmbeddingPlan {
            gateway,
            batch_size,
            normalize,
            expected_dim,
        } = plan;
        let assembly = Assembly::from_injected(
            gateway,
            components,
            governance,
            false,
            "EmbeddingClientBuilder::build",
        );
        EmbeddingClient::start(assembly, transport, batch_size, normalize, expected_dim)
    }
}

#[cfg(test)]
mod tests;
