//! The attempt runner of one embedding batch: sends it through the transport, judges the body
//! and keeps the vectors of each successful attempt for the merge.
//!
//! Separate from the client: this is the per-attempt half the core's governor drives.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::classify::{
    ClassifyContext, LivenessKind, classify_liveness_timeout, classify_wire_failure,
};
use gateway_core::redact::ScrubOptions;
use gateway_core::request::serialize_embed_body;
use gateway_core::telemetry::shape::embed_response_placeholder;
use gateway_ports::{
    AttemptError, AttemptFailure, Clock, EmbeddingTransport, Endpoint, ErrorOperation, ReasonCode,
    RequestBody, SourceConfig, UsageSource, WireRequest,
};

use super::wire::{BodyFault, Parsed, parse_embeddings, result_invalid};

/// The runner of one batch: sends the batch, judges the body, keeps the vectors of each
/// successful attempt by `call_id` for the merge (the core's `TransportResult` has no vector
/// field; usage, usage source and the row placeholder go through it).
pub(super) struct EmbedRunner {
    pub(super) transport: Arc<dyn EmbeddingTransport>,
    pub(super) texts: Vec<String>,
    pub(super) expected_dim: Option<u32>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) redact_ips: bool,
    pub(super) vectors: Mutex<HashMap<String, Parsed>>,
}

impl EmbedRunner {
    pub(super) fn take(&self, call_id: &str) -> Option<Parsed> {
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
            body: RequestBody::from_json_bytes(serialize_embed_body(&source.model, &self.texts)),
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
