//! OCR judgement: the attempt runner over an `OcrTransport`, the
//! envelope and archive mapping, and the health judgement.
//!
//! The adapter reports wire facts; this module judges them:
//! - [`OcrRunner`] performs **one** attempt per invocation — a text POST, or a layout POST plus
//!   its archive download — bounded as a whole by the source's `timeout_s` (a
//!   timeout is `Transient` with its `cause_type`). Failures go through the common classifier
//!   with the sub-operation of the stage that failed (`ocr_text`, `parse`, `download_result`;
//!   O-16, D4/D14 included). A 200 envelope whose `success` is not `true` is `Transient` carrying
//!   `http_status = 200` and the scrubbed body summary; an archive that is foreign,
//!   too large, unsafe or undecodable, or whose members do not map, is `ResultInvalid`.
//!   Successes carry zero usage, `Measured`; the loop settles 0 on every path
//!   (`SettleMode::Zero`). The judged payload (text or layout) is kept by `call_id` in a
//!   side channel ([`OcrRunner::take`]), since the loop's result type is the chat
//!   `TransportResult`; its `content` carries the row's `response` text.
//! - [`check_health`] probes every source concurrently, each bounded by `min(timeout_s, 10 s)`,
//!   and maps each answer to a bool with [`judge_health`]; it never raises (a transport error, a
//!   timeout or a panic is `false`), passes no admission, touches no breaker and writes no row.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt as _;
use gateway_ports::{
    ArchiveEntry, ArchiveFault, AttemptError, AttemptFailure, CallOperation, Clock, ErrorOperation,
    OcrLayoutElement, OcrStage, OcrTransport, OcrWireRequest, PageSize, ReasonCode,
    ResultInvalidDetails, SourceConfig, UsageSource, WireBody, WireFailure,
};
use serde_json::{Map, Value};

use crate::attempt::TransportResult;
use crate::attempt::{AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals};
use crate::classify::{
    ClassifyContext, LivenessKind, classify_liveness_timeout, classify_wire_failure,
};
use crate::redact::{ScrubOptions, scrubbed_summary};
use crate::telemetry::shape::ocr_layout_placeholder;

/// Upper bound of one health probe: 10 s, or the source's `timeout_s` when smaller.
pub const HEALTH_PROBE_BOUND: Duration = Duration::from_secs(10);

/// Which OCR call a runner performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OcrKind {
    /// `recognize_text`: `POST /ocr/text`.
    Text,
    /// `parse_layout`: `POST /parse` + the archive download.
    Layout,
}

impl OcrKind {
    /// The telemetry `operation` of the call (the public method, whatever stage failed).
    pub const fn operation(self) -> CallOperation {
        match self {
            Self::Text => CallOperation::RecognizeText,
            Self::Layout => CallOperation::ParseLayout,
        }
    }
}

/// The mapped layout of one result archive.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LayoutParts {
    /// `_content_list.json` items in order.
    pub elements: Vec<OcrLayoutElement>,
    /// `_middle.json` `pdf_info[i].page_size`, in page order (`[]` without the member).
    pub page_sizes: Vec<PageSize>,
    /// The first `.md` member, or `""`.
    pub markdown: String,
}

/// The judged payload of one successful OCR attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum OcrPayload {
    /// A text result: `content` (`""` is legal) and the envelope.
    Text {
        /// Recognised text.
        text: String,
        /// The envelope JSON.
        raw: Value,
    },
    /// A layout result and the envelope plus `archive_members` (the member names).
    Layout {
        /// The mapped archive.
        parts: LayoutParts,
        /// The envelope JSON with `archive_members` added.
        raw: Value,
    },
}

/// Why an envelope is not a success.
enum EnvelopeFault {
    /// Not a JSON object: `Transient(invalid_json)`, status 200.
    NotJson,
    /// `success != true`: `Transient`, status 200, the body summary.
    NotSuccess,
}

/// Reads a 200 envelope: a JSON object whose `success` is `true`.
fn judge_envelope(bytes: &[u8]) -> Result<Map<String, Value>, EnvelopeFault> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| EnvelopeFault::NotJson)?;
    let Value::Object(object) = value else {
        return Err(EnvelopeFault::NotJson);
    };
    if object.get("success") == Some(&Value::Bool(true)) {
        Ok(object)
    } else {
        Err(EnvelopeFault::NotSuccess)
    }
}

fn first<'a>(entries: &'a [ArchiveEntry], suffix: &str) -> Option<&'a ArchiveEntry> {
    entries.iter().find(|e| e.path.ends_with(suffix))
}

fn opt_str(item: &Value, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Maps the archive entries. Errors (→ `ResultInvalid`): the `_content_list.json`
/// member absent, not JSON or not an array; a `_middle.json` member that is not JSON, whose
/// `pdf_info` is not an array, or a page whose `page_size` is not two finite numbers.
pub fn map_archive(entries: &[ArchiveEntry]) -> Result<LayoutParts, String> {
    let list = first(entries, "_content_list.json")
        .ok_or("the result archive has no *_content_list.json member")?;
    let items: Value =
        serde_json::from_slice(&list.bytes).map_err(|_| format!("{} is not JSON", list.path))?;
    let Value::Array(items) = items else {
        return Err(format!("{} is not a JSON array", list.path));
    };
    let elements = items
        .into_iter()
        .map(|item| OcrLayoutElement {
            kind: opt_str(&item, "type").unwrap_or_default(),
            page_index: item.get("page_idx").and_then(Value::as_u64),
            text: opt_str(&item, "text").or_else(|| opt_str(&item, "table_body")),
            image_path: opt_str(&item, "img_path"),
            raw: item,
        })
        .collect();
    let mut page_sizes = Vec::new();
    if let Some(middle) = first(entries, "_middle.json") {
        let value: Value = serde_json::from_slice(&middle.bytes)
            .map_err(|_| format!("{} is not JSON", middle.path))?;
        let pages = value
            .get("pdf_info")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{} has no pdf_info array", middle.path))?;
        for (i, page) in pages.iter().enumerate() {
            let size = page
                .get("page_size")
                .and_then(Value::as_array)
                .filter(|s| s.len() == 2)
                .and_then(|s| Some((s[0].as_f64()?, s[1].as_f64()?)))
                .filter(|(w, h)| w.is_finite() && h.is_finite())
                .ok_or_else(|| {
                    format!(
                        "{} pdf_info[{i}].page_size is not [width, height]",
                        middle.path
                    )
                })?;
            page_sizes.push(PageSize(size.0, size.1));
        }
    }
    let markdown = first(entries, ".md")
        .map(|e| gateway_ports::body_text(&e.bytes).into_owned())
        .unwrap_or_default();
    Ok(LayoutParts {
        elements,
        page_sizes,
        markdown,
    })
}

/// The sub-operation of a failed stage.
pub const fn stage_operation(stage: OcrStage) -> ErrorOperation {
    match stage {
        OcrStage::OcrText => ErrorOperation::OcrText,
        OcrStage::Parse => ErrorOperation::Parse,
        OcrStage::DownloadResult => ErrorOperation::DownloadResult,
    }
}

/// Performs one OCR attempt: see the module docs.
pub struct OcrRunner {
    transport: Arc<dyn OcrTransport>,
    kind: OcrKind,
    image: Bytes,
    clock: Arc<dyn Clock>,
    redact_ips: bool,
    results: Mutex<HashMap<String, OcrPayload>>,
}

impl fmt::Debug for OcrRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OcrRunner")
            .field("kind", &self.kind)
            .field("image_bytes", &self.image.len())
            .finish_non_exhaustive()
    }
}

impl OcrRunner {
    /// A runner for one call of `kind` over `image`. `redact_ips` is `PGW_REDACT_IPS`.
    pub fn new(
        transport: Arc<dyn OcrTransport>,
        kind: OcrKind,
        image: Bytes,
        clock: Arc<dyn Clock>,
        redact_ips: bool,
    ) -> Self {
        Self {
            transport,
            kind,
            image,
            clock,
            redact_ips,
            results: Mutex::new(HashMap::new()),
        }
    }

    /// Removes and returns the payload the successful attempt `call_id` produced.
    pub fn take(&self, call_id: &str) -> Option<OcrPayload> {
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(call_id)
    }

    fn cctx<'a>(&self, source: &'a SourceConfig, operation: ErrorOperation) -> ClassifyContext<'a> {
        ClassifyContext::new(&source.name, operation, self.clock.wall()).with_scrub(ScrubOptions {
            source_key: source.api_key.as_ref().map(|k| k.expose_secret().as_str()),
            redact_ips: self.redact_ips,
            source: Some(source),
        })
    }

    fn failure(
        &self,
        source: &SourceConfig,
        operation: ErrorOperation,
        message: String,
    ) -> AttemptFailure {
        let mut failure = AttemptFailure::new(message, operation);
        failure.source_name = Some(source.name.clone());
        failure
    }

    /// A 200 envelope that is not a success.
    fn envelope_failure(
        &self,
        source: &SourceConfig,
        operation: ErrorOperation,
        body: &WireBody,
        fault: &EnvelopeFault,
    ) -> AttemptError {
        let cctx = self.cctx(source, operation);
        let text = gateway_ports::body_text(&body.bytes);
        let summary = scrubbed_summary(&text, &cctx.scrub);
        let mut failure = match fault {
            EnvelopeFault::NotJson => {
                let mut f = self.failure(
                    source,
                    operation,
                    format!(
                        "{}: OCR response body is not a JSON object (invalid_json): {} bytes",
                        source.name,
                        body.bytes.len()
                    ),
                );
                f.reason_code = Some(ReasonCode::InvalidJson);
                f
            }
            EnvelopeFault::NotSuccess => self.failure(
                source,
                operation,
                format!("{}: HTTP 200 success!=true | {summary}", source.name),
            ),
        };
        failure.http_status = Some(200);
        failure.body_text = Some(summary);
        AttemptError::transient(failure)
    }

    fn result_invalid(
        &self,
        source: &SourceConfig,
        operation: ErrorOperation,
        message: String,
        reason: Option<ReasonCode>,
    ) -> AttemptError {
        let mut failure = self.failure(source, operation, message);
        failure.reason_code = reason;
        AttemptError::result_invalid(ResultInvalidDetails::new(failure))
    }

    fn judge_text(
        &self,
        source: &SourceConfig,
        body: &WireBody,
    ) -> Result<OcrPayload, AttemptError> {
        let op = ErrorOperation::OcrText;
        let envelope =
            judge_envelope(&body.bytes).map_err(|f| self.envelope_failure(source, op, body, &f))?;
        let text = match envelope.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(self.result_invalid(
                    source,
                    op,
                    format!(
                        "{}: OCR text response `content` is not a string",
                        source.name
                    ),
                    None,
                ));
            }
        };
        Ok(OcrPayload::Text {
            text,
            raw: Value::Object(envelope),
        })
    }

    fn judge_layout(
        &self,
        source: &SourceConfig,
        wire: gateway_ports::OcrLayoutWire,
    ) -> Result<OcrPayload, AttemptError> {
        let op = ErrorOperation::Parse;
        let mut envelope = judge_envelope(&wire.envelope.bytes)
            .map_err(|f| self.envelope_failure(source, op, &wire.envelope, &f))?;
        let download = ErrorOperation::DownloadResult;
        let entries = match wire.archive {
            None => {
                return Err(self.result_invalid(
                    source,
                    op,
                    format!(
                        "{}: the parse response names no result archive",
                        source.name
                    ),
                    None,
                ));
            }
            Some(Err(fault)) => {
                let reason = matches!(fault, ArchiveFault::TooLarge { .. })
                    .then_some(ReasonCode::ResponseTooLarge);
                return Err(self.result_invalid(
                    source,
                    download,
                    format!("{}: {fault}", source.name),
                    reason,
                ));
            }
            Some(Ok(entries)) => entries,
        };
        let parts = map_archive(&entries).map_err(|what| {
            self.result_invalid(
                source,
                download,
                format!("{}: result archive cannot be mapped: {what}", source.name),
                None,
            )
        })?;
        envelope.insert(
            "archive_members".to_owned(),
            Value::Array(
                entries
                    .iter()
                    .map(|e| Value::String(e.path.clone()))
                    .collect(),
            ),
        );
        Ok(OcrPayload::Layout {
            parts,
            raw: Value::Object(envelope),
        })
    }

    async fn attempt(&self, ctx: AttemptCtx) -> AttemptOutcome {
        let source: &SourceConfig = &ctx.source;
        let request = OcrWireRequest {
            source: Arc::clone(&ctx.source),
            call_id: ctx.call_id.clone(),
            image: self.image.clone(),
        };
        // O-18: one invocation (POST, or POST + download) bounded by `timeout_s` as a whole.
        let total = Duration::try_from_secs_f64(source.timeout_s).unwrap_or(Duration::MAX);
        let first_op = match self.kind {
            OcrKind::Text => ErrorOperation::OcrText,
            OcrKind::Layout => ErrorOperation::Parse,
        };
        let judged = match self.kind {
            OcrKind::Text => {
                match tokio::time::timeout(total, self.transport.recognize_text(request)).await {
                    Err(_) => Err(None),
                    Ok(Err(f)) => Err(Some(f)),
                    Ok(Ok(body)) => Ok(self.judge_text(source, &body)),
                }
            }
            OcrKind::Layout => {
                match tokio::time::timeout(total, self.transport.parse_layout(request)).await {
                    Err(_) => Err(None),
                    Ok(Err(f)) => Err(Some(f)),
                    Ok(Ok(wire)) => Ok(self.judge_layout(source, wire)),
                }
            }
        };
        let payload = match judged {
            Err(None) => {
                let cctx = self.cctx(source, first_op);
                return AttemptOutcome::Failed(
                    classify_liveness_timeout(LivenessKind::Total, &cctx).into_error(),
                );
            }
            Err(Some(failure)) => {
                let cctx = self.cctx(source, stage_operation(failure.stage));
                return AttemptOutcome::Failed(
                    classify_wire_failure(&failure.failure, &cctx).into_error(),
                );
            }
            Ok(Err(error)) => return AttemptOutcome::Failed(error),
            Ok(Ok(payload)) => payload,
        };
        let result = TransportResult {
            content: match &payload {
                OcrPayload::Text { text, .. } => text.clone(),
                OcrPayload::Layout { parts, .. } => {
                    ocr_layout_placeholder(parts.elements.len(), parts.page_sizes.len())
                }
            },
            usage_source: UsageSource::Measured, // O-19: zero tokens is a fact
            ..TransportResult::default()
        };
        self.results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ctx.call_id.clone(), payload);
        AttemptOutcome::Success(Box::new(result))
    }
}

impl AttemptRunner for OcrRunner {
    fn run(
        &self,
        ctx: AttemptCtx,
        _signals: Option<LegSignals>,
        _control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        // No hedging on an OCR scope (O-21): a loser cancel never reaches this runner.
        self.attempt(ctx)
    }
}

/// The health judgement of one `/health` answer: healthy iff the answer is a 200 JSON
/// object with `status == "healthy"` and `model_loaded` not `false`.
pub fn judge_health(answer: &Result<WireBody, WireFailure>) -> bool {
    let Ok(body) = answer else {
        return false;
    };
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(&body.bytes) else {
        return false;
    };
    object.get("status").and_then(Value::as_str) == Some("healthy")
        && object.get("model_loaded") != Some(&Value::Bool(false))
}

/// Probes every source concurrently, each bounded by `min(timeout_s, 10 s)`; a source
/// name maps to `true` iff [`judge_health`] says so. Never raises: a failure, a timeout or a
/// panicking transport is `false`. No admission, no breaker, no row. Nothing is spawned.
pub async fn check_health(
    transport: &dyn OcrTransport,
    sources: &[Arc<SourceConfig>],
) -> BTreeMap<String, bool> {
    let probes = sources.iter().map(|source| async move {
        let bound = Duration::try_from_secs_f64(source.timeout_s)
            .unwrap_or(HEALTH_PROBE_BOUND)
            .min(HEALTH_PROBE_BOUND);
        let probe = AssertUnwindSafe(transport.check_health(source)).catch_unwind();
        let healthy = match tokio::time::timeout(bound, probe).await {
            Ok(Ok(answer)) => judge_health(&answer),
            Ok(Err(_panic)) => {
                tracing::warn!(
                    code = "ocr.health_probe_panicked",
                    source = %source.name,
                    "OCR health probe panicked; the source is reported unhealthy"
                );
                false
            }
            Err(_elapsed) => false,
        };
        (source.name.clone(), healthy)
    });
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests;
