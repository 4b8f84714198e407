//! The per-attempt judging context ([`Judge`]) and post-stream assembly: the classification
//! context, the non-stream body and the verdict (`judge_attempt`) that turns an accumulated
//! answer into a `TransportResult` or a classified failure. Reading the event stream is in
//! `stream`; the constructor from a `ChatExecutor` is beside the executor.

use gateway_ports::{AttemptFailure, Category, ErrorOperation, ResponseMode, StreamEnd};
use serde_json::Value;

use crate::accumulate::{
    AccumulateError, AccumulateOptions, Accumulated, DialectWarning, WarningThrottle,
};
use crate::attempt::{AttemptOutcome, TransportResult};
use crate::classify::{Classification, ClassifyContext, LivenessKind, classify_liveness_timeout};
use crate::redact::ScrubOptions;
use crate::stream_call::CommitGate;
use crate::thinking::observe_thinking;
use crate::verdict::{AttemptFacts, StreamFacts, Verdict, judge_attempt};

/// The per-attempt judging context: classification context, accumulator options, warnings.
pub(super) struct Judge<'a> {
    pub(super) source_name: &'a str,
    pub(super) source_key: Option<&'a str>,
    pub(super) source: &'a gateway_ports::SourceConfig,
    pub(super) redact_ips: bool,
    pub(super) wall_now: std::time::SystemTime,
    pub(super) mode: ResponseMode,
    pub(super) missing_done: gateway_ports::MissingDone,
    pub(super) stall_threshold_ms: u32,
    pub(super) acc_options: AccumulateOptions,
    pub(super) warnings: &'a WarningThrottle,
    pub(super) gate: Option<&'a CommitGate>,
    pub(super) call_id: &'a str,
    pub(super) hedge_leg: bool,
}

impl<'a> Judge<'a> {
    pub(super) fn scrub(&self) -> ScrubOptions<'a> {
        ScrubOptions {
            source_key: self.source_key,
            redact_ips: self.redact_ips,
            source: Some(self.source),
        }
    }

    pub(super) fn cctx(&self) -> ClassifyContext<'a> {
        ClassifyContext::new(self.source_name, ErrorOperation::Chat, self.wall_now)
            .with_scrub(self.scrub())
    }

    pub(super) fn fail(&self, classification: Classification) -> AttemptOutcome {
        AttemptOutcome::Failed(classification.into_error())
    }

    pub(super) fn liveness(&self, kind: LivenessKind) -> Classification {
        classify_liveness_timeout(kind, &self.cctx())
    }

    pub(super) fn warn(&self, warning: &DialectWarning) {
        self.warnings.emit(self.source_name, warning);
    }
    /// A non-stream body: no stream facts, no timing, no stall.
    pub(super) fn body(&self, parsed: Result<Accumulated, AccumulateError>) -> AttemptOutcome {
        let accumulated = match parsed {
            Ok(accumulated) => accumulated,
            Err(error) => return self.fail(error.classify(&self.cctx())),
        };
        match self.judge(&accumulated, None) {
            Ok(result) => AttemptOutcome::Success(result),
            Err(classification) => self.fail(classification),
        }
    }

    /// Post-stream assembly from warnings on (S-95 steps 1, 5–12; S-111 steps 6–9): warnings,
    /// the verdict, the openai snapshot after the verdict, usage and the result.
    pub(super) fn judge(
        &self,
        accumulated: &Accumulated,
        stream: Option<StreamFacts>,
    ) -> Result<Box<TransportResult>, Classification> {
        for warning in &accumulated.warnings {
            self.warn(warning);
        }
        if accumulated
            .usage_raw
            .as_ref()
            .is_some_and(crate::accumulate::usage_is_implausible)
        {
            self.warn(&crate::accumulate::DialectWarning::ImplausibleUsage);
        }
        let facts = AttemptFacts {
            mode: self.mode,
            missing_done: self.missing_done,
            stream,
            finish_reason: accumulated.finish_reason.as_ref().map(|f| f.as_str()),
            content: &accumulated.content,
            thinking: &accumulated.thinking,
            message: accumulated.message.as_ref(),
            usage_measured: accumulated.usage_measured(),
            refusal: &accumulated.refusal,
            tool_calls_in_text: accumulated.tool_calls_in_text,
        };
        let delivery = match judge_attempt(&facts) {
            Verdict::Deliver(delivery) => delivery,
            Verdict::Fail(failure) => return Err(failure.into_classification(self.source_name)),
            // Only `Done` / `End` reach the verdict here (a failing terminal was classified
            // with its fact already); kept total without a panic.
            Verdict::TransportFailed(code) => {
                let mut failure = AttemptFailure::new(
                    format!("{}: stream failed ({code})", self.source_name),
                    ErrorOperation::Chat,
                );
                failure.source_name = Some(self.source_name.to_owned());
                failure.reason_code = Some(code);
                return Err(Classification::new(Category::Transient, failure));
            }
        };
        let completion = match accumulated.completion() {
            None => None,
            Some(Ok(completion)) => Some(completion),
            Some(Err(error)) => return Err(error.classify(&self.cctx())),
        };
        let salvaged = delivery.stream_end == Some(StreamEnd::Salvaged);
        let (usage, _) = accumulated.usage(salvaged);
        let result = TransportResult {
            thinking_observation: observe_thinking(&accumulated.thinking, usage.reasoning_tokens),
            content: accumulated.content.clone(),
            thinking: accumulated.thinking.clone(),
            usage,
            usage_source: delivery.usage_source,
            raw_usage: accumulated.usage_raw.clone().map(Value::Object),
            model_reported: accumulated.model_reported.clone(),
            completion,
            finish_reason: accumulated.finish_reason.clone(),
            stream_end: delivery.stream_end,
            ..TransportResult::default()
        };
        Ok(Box::new(result))
    }
}
