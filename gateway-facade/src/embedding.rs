//! `EmbeddingClient` and [`gather_bounded`].
//!
//! Owns the embedding call: the call-boundary guards, the empty input, batching,
//! one deadline shared by all batches, the per-attempt runner over an
//! `EmbeddingTransport` (body from `build_embed_body`, the `timeout_s`
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
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::StreamExt as _;
use gateway_core::attempt::SettleMode;
use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::call_context::new_uuid_v4;
use gateway_core::classify::{
    ClassifyContext, LivenessKind, classify_liveness_timeout, classify_wire_failure,
};
use gateway_core::deadline::resolve_call_deadline;
use gateway_core::governor::CallOptions;
use gateway_core::redact::ScrubOptions;
use gateway_core::request::build_embed_body;
use gateway_core::retry_loop::LoopPolicy;
use gateway_core::telemetry::RowInput;
use gateway_core::telemetry::shape::embed_response_placeholder;
use gateway_ports::{
    AttemptError, AttemptFailure, CallStats, Clock, ConfigError, ConfigWarning, EmbedRequest,
    EmbeddingResponse, EmbeddingTransport, Endpoint, ErrorOperation, GatewayError, ReasonCode,
    ResultInvalidDetails, SourceConfig, TelemetryStatus, Usage, UsageSource, WireRequest,
};
use serde_json::Value;

use crate::assembly::{ClientPlan, EmbeddingClientBuilder, EmbeddingPlan, EmbeddingSettingsRef};
use crate::client::{KeyStyle, check_dimensions};
use crate::settings::{EmbeddingSettings, EnvMap, ValidatedEmbeddingSettings};
use crate::status::SourceStatus;
use crate::wiring::{Assembly, GovernanceComponents, Runtime};

/// Origin of an invalid per-call embedding deadline.
pub const EMBED_DEADLINE_ORIGIN: &str = "EmbedRequest::call_deadline";

/// Results in input order; the first error (in time) is returned.
///
/// At most `concurrency` futures run at once. A future is first polled when it gets a slot, so a
/// deadline inside it (e.g. `embed`'s) starts then, not while it waits. On the first error the
/// remaining futures are dropped — those in flight are cancelled (with the clients' full
/// settlement), unstarted ones never start. Nothing is spawned.
pub async fn gather_bounded<T, E, F>(
    concurrency: NonZeroUsize,
    futures: impl IntoIterator<Item = F>,
) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut stream = futures_util::stream::iter(
        futures
            .into_iter()
            .enumerate()
            .map(|(i, f)| async move { (i, f.await) }),
    )
    .buffer_unordered(concurrency.get());
    let mut slots: Vec<Option<T>> = Vec::new();
    while let Some((i, result)) = stream.next().await {
        let value = result?;
        if slots.len() <= i {
            slots.resize_with(i + 1, || None);
        }
        slots[i] = Some(value);
    }
    Ok(slots.into_iter().flatten().collect())
}

/// One parsed embeddings response.
#[derive(Debug, Clone, PartialEq)]
struct Parsed {
    vectors: Vec<Vec<f32>>,
    dim: usize,
}

/// Why a 200 body is not a usable embeddings response.
enum BodyFault {
    /// Not JSON (an empty body included): `Transient(invalid_json)`.
    NotJson,
    /// A shape anomaly: `ResultInvalid`.
    Shape(String),
    /// Items whose vector holds something other than finite numbers (`null`, `"NaN"`, a value
    /// beyond f32): `ResultInvalid(malformed_item)` naming these item indexes.
    MalformedItems(Vec<u64>),
}

/// Maps a 200 body: `data[]` items with an `embedding` array of finite numbers, ordered
/// by `index` when every item has one (else array order); `usage.prompt_tokens` an integer →
/// measured. `expected` is the batch length.
fn parse_embeddings(bytes: &[u8], expected: usize) -> Result<(Parsed, Option<u64>), BodyFault> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| BodyFault::NotJson)?;
    let shape = |m: &str| BodyFault::Shape(m.to_owned());
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("the body lacks a `data` array"))?;
    let mut items: Vec<(Option<u64>, Vec<f32>)> = Vec::with_capacity(data.len());
    let mut malformed: Vec<u64> = Vec::new();
    for (position, item) in data.iter().enumerate() {
        let embedding = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| shape("a `data` item lacks an `embedding` array"))?;
        let index = item.get("index").and_then(Value::as_u64);
        let mut vector = Vec::with_capacity(embedding.len());
        let mut bad = false;
        for x in embedding {
            // README D30: `null`, strings such as "NaN", and numbers beyond f32 are not finite
            // numbers.
            #[allow(clippy::cast_possible_truncation)]
            match x.as_f64().map(|v| v as f32).filter(|v| v.is_finite()) {
                Some(v) => vector.push(v),
                None => bad = true,
            }
        }
        if bad {
            malformed.push(index.unwrap_or_else(|| u64::try_from(position).unwrap_or(u64::MAX)));
        }
        items.push((index, vector));
    }
    if !malformed.is_empty() {
        malformed.sort_unstable();
        return Err(BodyFault::MalformedItems(malformed));
    }
    if items.iter().all(|(i, _)| i.is_some()) {
        items.sort_by_key(|(i, _)| *i);
        let in_order = items
            .iter()
            .enumerate()
            .all(|(k, (i, _))| *i == u64::try_from(k).ok());
        if !in_order {
            return Err(shape("the `index` values are not 0..n"));
        }
    }
    if items.len() != expected {
        return Err(BodyFault::Shape(format!(
            "{} vectors for {expected} inputs",
            items.len()
        )));
    }
    let dim = items.first().map_or(0, |(_, v)| v.len());
    if items.iter().any(|(_, v)| v.len() != dim) {
        return Err(shape("the vectors differ in length"));
    }
    let prompt_tokens = value
        .get("usage")
        .and_then(|u| u.get("prompt_tokens"))
        .and_then(Value::as_u64);
    Ok((
        Parsed {
            vectors: items.into_iter().map(|(_, v)| v).collect(),
            dim,
        },
        prompt_tokens,
    ))
}

fn result_invalid(source: &str, message: String) -> AttemptError {
    let mut failure = AttemptFailure::new(message, ErrorOperation::Embedding);
    failure.source_name = Some(source.to_owned());
    AttemptError::result_invalid(ResultInvalidDetails::new(failure))
}

/// The runner of one batch: sends the batch, judges the body, keeps the vectors of each
/// successful attempt by `call_id` for the merge (the core's `TransportResult` has no vector
/// field; usage, usage source and the row placeholder go through it).
struct EmbedRunner {
    transport: Arc<dyn EmbeddingTransport>,
    texts: Vec<String>,
    expected_dim: Option<u32>,
    clock: Arc<dyn Clock>,
    redact_ips: bool,
    vectors: Mutex<HashMap<String, Parsed>>,
}

impl EmbedRunner {
    fn take(&self, call_id: &str) -> Option<Parsed> {
        self.vectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    async fn attempt(&self, ctx: AttemptCtx) -> AttemptOutcome {
        let source: &SourceConfig = &ctx.source;
        let wire = WireRequest {
            source: Arc::clone(&ctx.source),
            call_id: ctx.call_id.clone(),
            endpoint: Endpoint::Embeddings,
            body: build_embed_body(&source.model, &self.texts),
            stream: false,
        };
        let cctx = ClassifyContext::new(&source.name, ErrorOperation::Embedding, self.clock.wall())
            .with_scrub(ScrubOptions {
                source_key: source.api_key.as_ref().map(|k| k.expose_secret().as_str()),
                redact_ips: self.redact_ips,
                source: Some(source),
            });
        // The whole-attempt watchdog (40 S-93 for a non-stream body): `timeout_s`.
        let total = Duration::try_from_secs_f64(source.timeout_s).unwrap_or(Duration::MAX);
        let body = match tokio::time::timeout(total, self.transport.send(wire)).await {
            Err(_) => {
                return AttemptOutcome::Failed(
                    classify_liveness_timeout(LivenessKind::Total, &cctx).into_error(),
                );
            }
            Ok(Err(failure)) => {
                return AttemptOutcome::Failed(classify_wire_failure(&failure, &cctx).into_error());
            }
            Ok(Ok(body)) => body,
        };
        let (parsed, prompt_tokens) = match parse_embeddings(&body.bytes, self.texts.len()) {
            Ok(ok) => ok,
            Err(BodyFault::NotJson) => {
                let mut failure = AttemptFailure::new(
                    format!(
                        "{}: embedding response body is not JSON (invalid_json): {} bytes",
                        source.name,
                        body.bytes.len()
                    ),
                    ErrorOperation::Embedding,
                );
                failure.source_name = Some(source.name.clone());
                failure.http_status = Some(200);
                failure.reason_code = Some(ReasonCode::InvalidJson);
                return AttemptOutcome::Failed(AttemptError::transient(failure));
            }
            Err(BodyFault::Shape(what)) => {
                return AttemptOutcome::Failed(result_invalid(
                    &source.name,
                    format!("{}: malformed embedding response: {what}", source.name),
                ));
            }
            Err(BodyFault::MalformedItems(indexes)) => {
                let shown: Vec<String> = indexes.iter().take(32).map(u64::to_string).collect();
                let more = if indexes.len() > shown.len() {
                    format!(" and {} more", indexes.len() - shown.len())
                } else {
                    String::new()
                };
                let mut error = result_invalid(
                    &source.name,
                    format!(
                        "{}: malformed embedding response (malformed_item): item(s) {}{more} \
                         hold values that are not finite numbers",
                        source.name,
                        shown.join(", ")
                    ),
                );
                if let AttemptError::ResultInvalid(details) = &mut error {
                    details.failure.reason_code = Some(ReasonCode::MalformedItem);
                }
                return AttemptOutcome::Failed(error);
            }
        };
        if let Some(expected) = self.expected_dim
            && u32::try_from(parsed.dim).ok() != Some(expected)
        {
            return AttemptOutcome::Failed(result_invalid(
                &source.name,
                format!(
                    "{} dimension {} does not match expected {expected}",
                    source.name, parsed.dim
                ),
            ));
        }
        let mut result = TransportResult::default();
        result.content = embed_response_placeholder(parsed.vectors.len(), parsed.dim);
        result.usage.prompt_tokens = prompt_tokens.unwrap_or(0);
        result.usage_source = if prompt_tokens.is_some() {
            UsageSource::Measured
        } else {
            UsageSource::Unavailable
        };
        self.vectors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ctx.call_id.clone(), parsed);
        AttemptOutcome::Success(Box::new(result))
    }
}

impl AttemptRunner for EmbedRunner {
    fn run(
        &self,
        ctx: AttemptCtx,
        _signals: Option<LegSignals>,
        _control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        // No hedging on an embedding scope (90 E-3): a loser cancel never reaches this runner.
        self.attempt(ctx)
    }
}

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

/// One batch's governed success, kept for the merge.
struct BatchOutcome {
    parsed: Parsed,
    usage: Usage,
    usage_source: UsageSource,
    latency_ms: u64,
    call_id: String,
    source: Arc<SourceConfig>,
}

fn weakest(a: UsageSource, b: UsageSource) -> UsageSource {
    let rank = |u: UsageSource| match u {
        UsageSource::Unavailable => 0,
        UsageSource::Estimated => 1,
        _ => 2,
    };
    if rank(b) < rank(a) { b } else { a }
}

/// L2 normalisation: a zero vector is returned unchanged.
fn normalize_l2(vector: &mut [f32]) {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in vector.iter_mut() {
            #[allow(clippy::cast_possible_truncation)]
            {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
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

    /// Drains the cleanup queue, then flushes telemetry.
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
mod tests {
    use super::*;

    #[test]
    fn e_19_index_orders_vectors() {
        let body = br#"{"data":[{"index":1,"embedding":[2.0]},{"index":0,"embedding":[1.0]}],"usage":{"prompt_tokens":3}}"#;
        let Ok((parsed, tokens)) = parse_embeddings(body, 2) else {
            panic!("parse failed");
        };
        assert_eq!(parsed.vectors, vec![vec![1.0], vec![2.0]]);
        assert_eq!(tokens, Some(3));
    }

    #[test]
    fn e_19_not_json_and_shape_anomalies() {
        assert!(matches!(parse_embeddings(b"", 1), Err(BodyFault::NotJson)));
        assert!(matches!(
            parse_embeddings(b"{}", 1),
            Err(BodyFault::Shape(_))
        ));
        assert!(matches!(
            parse_embeddings(br#"{"data":[{"embedding":[1.0]}]}"#, 2),
            Err(BodyFault::Shape(_))
        ));
        assert!(matches!(
            parse_embeddings(
                br#"{"data":[{"embedding":[1.0]},{"embedding":[1.0,2.0]}]}"#,
                2
            ),
            Err(BodyFault::Shape(_))
        ));
    }

    #[test]
    fn e_14_normalize_l2_and_zero_vector() {
        let mut v = vec![3.0_f32, 4.0];
        normalize_l2(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0_f32, 0.0];
        normalize_l2(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }
}
