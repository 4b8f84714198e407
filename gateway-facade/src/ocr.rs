//! `OcrClient`: governed OCR calls to MonkeyOCR servers.
//!
//! One call = one governed loop (`Governor::run_ocr`: `LoopPolicy::OCR` — every failure counts,
//! 429 included, no stall refund, no hedging — and settlement 0 on every path). Each
//! attempt is one invocation of the transport (a text POST, or a layout POST plus its archive
//! download), judged by the core's [`OcrRunner`]. Entry order: the
//! closed check, the caller dimensions, the empty image, the per-call deadline — all before the
//! statistics boundary, so those refusals write no row and reach no transport. Telemetry rows
//! carry `operation` = the public method, `messages` = `<ocr:text|layout image_bytes=N>`
//! (never the image), NULL cost, effort and sampling. No response cache, no hedging, no
//! reasoning parameters, no streaming. Errors follow the chat client's model.
//!
//! Cancel-safety is the chat client's: dropping a call cancels the attempt in flight
//! with full cleanup (settlement 0, permit released, the `cancelled` row and the terminal row).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use gateway_core::governor::CallOptions;
use gateway_core::ocr::{OcrKind, OcrPayload, OcrRunner, check_health};
use gateway_core::telemetry::RowInput;
use gateway_ports::{
    AttemptFailure, ConfigError, ConfigWarning, ErrorOperation, GatewayError, OcrLayoutResult,
    OcrRequest, OcrTextResult, OcrTransport, ResultInvalidDetails, SourceConfig, TelemetryStatus,
    Usage,
};

use crate::assembly::{ClientPlan, OcrClientBuilder, ocr_plan_from_validated};
use crate::client::{KeyStyle, check_dimensions};
use crate::settings::{EnvMap, OcrSettings, ValidatedSettings};
use crate::status::SourceStatus;
use crate::wiring::{Assembly, GovernanceComponents, Runtime};

/// Origin of an invalid per-call deadline of `recognize_text`.
pub const OCR_TEXT_DEADLINE_ORIGIN: &str = "OcrClient::recognize_text(OcrRequest::call_deadline)";

/// Origin of an invalid per-call deadline of `parse_layout`.
pub const OCR_LAYOUT_DEADLINE_ORIGIN: &str = "OcrClient::parse_layout(OcrRequest::call_deadline)";

struct OcrInner {
    runtime: Runtime,
    transport: Arc<dyn OcrTransport>,
}

/// The governed OCR client. `Clone + Send + Sync` (an `Arc` inside).
/// Built from the environment ([`OcrClient::from_env`], scope `OCR` usually), from
/// [`OcrSettings`] ([`OcrClient::from_settings`]) or with [`OcrClientBuilder`]. The settings
/// paths need the cargo feature `monkeyocr` (the MonkeyOCR transport); the builder takes any
/// `OcrTransport`.
#[derive(Clone)]
pub struct OcrClient {
    inner: Arc<OcrInner>,
}

impl fmt::Debug for OcrClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OcrClient")
            .field("scope", &self.inner.runtime.plan.scope)
            .field("sources", &self.inner.runtime.plan.sources.len())
            .finish_non_exhaustive()
    }
}

/// The MonkeyOCR transport of a settings path (feature `monkeyocr`; errors name the key).
#[cfg(feature = "monkeyocr")]
fn monkeyocr_transport(
    plan: &ClientPlan,
    style: KeyStyle,
) -> Result<Arc<dyn OcrTransport>, ConfigError> {
    adapter_monkeyocr::MonkeyOcrTransport::new(&plan.sources)
        .map(|t| Arc::new(t) as Arc<dyn OcrTransport>)
        .map_err(|e| {
            e.to_config_error(crate::client::transport_key(
                style,
                &plan.scope,
                e.source_name(),
                e.field(),
            ))
        })
}

#[cfg(not(feature = "monkeyocr"))]
fn monkeyocr_transport(
    _plan: &ClientPlan,
    _style: KeyStyle,
) -> Result<Arc<dyn OcrTransport>, ConfigError> {
    Err(ConfigError::new(
        "backend.unavailable",
        "OcrClient::from_settings",
        "the MonkeyOCR transport is not in this build: enable the cargo feature `monkeyocr`, or use OcrClient::builder() with a transport",
    ))
}

fn missing_payload(source: &SourceConfig) -> GatewayError {
    let mut failure = AttemptFailure::new(
        format!("{}: the winning OCR attempt left no result", source.name),
        ErrorOperation::OcrText,
    );
    failure.source_name = Some(source.name.clone());
    GatewayError::result_invalid(ResultInvalidDetails::new(failure))
}

impl OcrClient {
    /// Path 1: reads the process environment once and assembles the OCR scope `scope` (`OCR`
    /// usually; sources `{SCOPE}__{PROVIDER}__{N}__{FIELD}`, `API_KEY` optional, `MODEL` default
    /// `monkeyocr`).
    ///
    /// Errors: any `ConfigError` of stages A–F named by the key; `backend.unavailable` without
    /// the `monkeyocr` feature; `runtime.missing` outside a tokio runtime.
    pub fn from_env(scope: &str) -> Result<Self, ConfigError> {
        let settings = OcrSettings::from_env(scope)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "OcrClient::from_env"))
    }

    /// Path 1 over an explicit map (tests, the CLI's `.env` merge).
    pub fn from_env_map(scope: &str, map: &EnvMap) -> Result<Self, ConfigError> {
        let settings = OcrSettings::from_env_map(scope, map)?;
        Self::assemble(&settings, KeyStyle::Env)
            .map_err(|e| crate::wiring::named_constructor(e, "OcrClient::from_env_map"))
    }

    /// Path 2: raw settings are validated as an OCR scope (stages B–E, the E3 hedge warning),
    /// then stage F (`extra_body` stripped).
    pub fn from_settings(settings: &OcrSettings) -> Result<Self, ConfigError> {
        Self::assemble(&settings.validate()?, KeyStyle::Settings)
    }

    /// Path 2 with settings already validated by [`OcrSettings::validate`].
    pub fn from_validated(settings: &ValidatedSettings) -> Result<Self, ConfigError> {
        Self::assemble(settings, KeyStyle::Settings)
    }

    fn assemble(settings: &ValidatedSettings, style: KeyStyle) -> Result<Self, ConfigError> {
        let plan = ocr_plan_from_validated(settings)?;
        let transport = monkeyocr_transport(&plan, style)?;
        let assembly = Assembly::from_validated(plan, settings, false, "OcrClient::from_settings")?;
        Self::start(assembly, transport)
    }

    /// Path 3: a builder for injected components.
    pub fn builder() -> OcrClientBuilder {
        OcrClientBuilder::new()
    }

    fn start(assembly: Assembly, transport: Arc<dyn OcrTransport>) -> Result<Self, ConfigError> {
        let runtime = Runtime::start(assembly)?;
        Ok(Self {
            inner: Arc::new(OcrInner { runtime, transport }),
        })
    }

    /// The checks before the statistics boundary: closed, dimensions, empty image. The
    /// deadline is resolved by the governor (zero → `InvalidArgument` naming `origin`).
    fn precheck(&self, request: &OcrRequest) -> Result<(), GatewayError> {
        if self.inner.runtime.governor.is_closed() {
            return Err(GatewayError::ClientClosed);
        }
        check_dimensions(request.tenant_id.as_deref(), &request.meta, "OcrRequest")?;
        if request.image.is_empty() {
            return Err(GatewayError::invalid_argument(
                "OcrRequest::image",
                "image must not be empty",
            ));
        }
        Ok(())
    }

    async fn run(
        &self,
        request: &OcrRequest,
        kind: OcrKind,
    ) -> Result<(OcrPayload, gateway_core::governor::Governed), GatewayError> {
        self.precheck(request)?;
        let runtime = &self.inner.runtime;
        let mut options = CallOptions::default()
            .with_row_input(Arc::new(RowInput::ocr(request)))
            .with_stream(false);
        options.call_deadline = request.call_deadline;
        options.deadline_origin = Some(
            match kind {
                OcrKind::Text => OCR_TEXT_DEADLINE_ORIGIN,
                OcrKind::Layout => OCR_LAYOUT_DEADLINE_ORIGIN,
            }
            .to_owned(),
        );
        let runner = OcrRunner::new(
            Arc::clone(&self.inner.transport),
            kind,
            request.image.clone(),
            Arc::clone(&runtime.clock),
            runtime.redact_ips,
        );
        let governed = runtime
            .governor
            .run_ocr(&runner, kind.operation(), options)
            .await?;
        let payload = runner
            .take(&governed.call_id)
            .ok_or_else(|| missing_payload(&governed.source))?;
        Ok((payload, governed))
    }

    /// Recognises the text of `request.image` (`POST /ocr/text`). `text == ""` is
    /// the legal "no text".
    ///
    /// Errors: `ClientClosed` after `close()`; `InvalidArgument` for caller dimensions
    /// (`OcrRequest::tenant_id` / `::meta`), an empty image ("image must not be empty") or a zero
    /// deadline — before any I/O and without a row; then the governed errors of chat:
    /// `AllSourcesExhausted` (retries spent, or no sources on a builder client), `CircuitOpen`,
    /// `CallDeadlineExceeded { scope }`, `RequestRejected`, `ResultInvalid`.
    pub async fn recognize_text(&self, request: OcrRequest) -> Result<OcrTextResult, GatewayError> {
        let (payload, governed) = self.run(&request, OcrKind::Text).await?;
        let OcrPayload::Text { text, raw } = payload else {
            return Err(missing_payload(&governed.source));
        };
        let mut result = OcrTextResult::default();
        result.text = text;
        result.raw = raw;
        result.source_name = governed.source.name.clone();
        result.usage = Usage::default();
        result.latency_ms = governed.latency_ms;
        result.call_id = governed.call_id;
        result.call_stats = Some(governed.stats);
        Ok(result)
    }

    /// Parses the layout of `request.image` (`POST /parse` then the result
    /// archive): elements in order, page sizes in page order, the markdown member. Empty
    /// `elements` is the legal "no elements". The POST and the download are one attempt.
    ///
    /// Errors: as [`recognize_text`](Self::recognize_text); an archive that is foreign to the
    /// source, too large, unsafe, undecodable or unmappable is `ResultInvalid`.
    pub async fn parse_layout(&self, request: OcrRequest) -> Result<OcrLayoutResult, GatewayError> {
        let (payload, governed) = self.run(&request, OcrKind::Layout).await?;
        let OcrPayload::Layout { parts, raw } = payload else {
            return Err(missing_payload(&governed.source));
        };
        let mut result = OcrLayoutResult::default();
        result.elements = parts.elements;
        result.page_sizes = parts.page_sizes;
        result.markdown = parts.markdown;
        result.raw = raw;
        result.source_name = governed.source.name.clone();
        result.usage = Usage::default();
        result.latency_ms = governed.latency_ms;
        result.call_id = governed.call_id;
        result.call_stats = Some(governed.stats);
        Ok(result)
    }

    /// `GET /health` on every source concurrently, each bounded by `min(timeout_s, 10 s)`
    /// : source name → healthy. Never fails (an error or a timeout is `false`); passes
    /// no admission, touches no breaker, writes no row.
    pub async fn check_health(&self) -> BTreeMap<String, bool> {
        let sources: Vec<Arc<SourceConfig>> = self
            .inner
            .runtime
            .plan
            .sources
            .iter()
            .cloned()
            .map(Arc::new)
            .collect();
        check_health(self.inner.transport.as_ref(), &sources).await
    }

    /// Drains the cleanup queue, then flushes telemetry and what the limiter and breaker
    /// buffered (with Redis: finished calls' exits, success samples).
    pub async fn quiesce(&self) {
        self.inner.runtime.quiesce().await;
    }

    /// Closes the client (idempotent; later calls return `ClientClosed`; closes owned
    /// components only).
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

    /// The plan this client was assembled from.
    pub fn plan(&self) -> &ClientPlan {
        &self.inner.runtime.plan
    }
}

impl OcrClientBuilder {
    /// Stage F for an OCR scope and assembly of the client (injected components are not owned).
    pub fn build(self) -> Result<OcrClient, ConfigError> {
        self.build_with(GovernanceComponents::default())
    }

    /// [`build`](Self::build) with an injected pacer, selector or jitter source.
    pub fn build_with(self, governance: GovernanceComponents) -> Result<OcrClient, ConfigError> {
        let (plan, transport, components) = self.plan()?;
        let assembly = Assembly::from_injected(
            plan,
            components,
            governance,
            false,
            "OcrClientBuilder::build",
        );
        OcrClient::start(assembly, transport)
    }
}
