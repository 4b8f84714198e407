//! The completion verdict kernel (spec 50; 05 R-23): is an attempt's
//! result complete, is it delivered or does it fail (as which category, with which reason code),
//! and may a delivered result be cached.
//!
//! Everything here is a pure function over plain facts: no I/O, no logging, no errors,
//! no cancellation. Four call sites share it — the streaming path, the non-stream path, the cache
//! write path and the cache read path — so they can never disagree. The attempt executor gathers
//! the facts from the accumulator and the transport into [`AttemptFacts`] and calls
//! [`judge_attempt`]; the cache calls [`is_cacheable`] / [`is_cacheable_response`] /
//! [`is_cacheable_raw`], which are the same predicate as [`Delivery::cacheable`].
//!
//! The pipeline of [`judge_attempt`] (40 S-95 steps 4–9, S-111 steps 5–9):
//! 1. streams only: completeness ([`judge_completeness`]) → `Done`,
//!    `EofAfterFinish`, `Salvaged`, or a truncation failure;
//! 2. the output summary ([`summarize_text`] / [`summarize_message`]);
//! 3. the first-match outcome table ([`judge_outcome`]);
//! 4. usage resolution ([`resolve_usage_source`]) and cacheability.
//!
//! Submodules: `finish`, `completeness` (§2–§3), `summary`, `outcome`,
//! `registry`, `cache`. Their items are re-exported here.

mod cache;
mod completeness;
mod finish;
mod outcome;
mod registry;
mod summary;

pub use cache::{
    is_cacheable, is_cacheable_message, is_cacheable_raw, is_cacheable_response,
    tool_arguments_parse,
};
pub use completeness::{
    Completeness, StreamFacts, StreamTerminal, judge_completeness, judge_truncation,
    stream_is_complete,
};
pub use finish::{classify_finish, classify_finish_value, effective_finish};
pub use outcome::{Outcome, judge_outcome};
pub use registry::{COMPLETENESS_CODES, TERMINAL_CODES, VERDICT_CODES, reason_category};
pub use summary::{
    OutputSummary, fill_null_arguments, has_string, summarize_message, summarize_text,
    tool_snapshot_ok,
};

use gateway_ports::{
    AttemptError, AttemptFailure, Category, ErrorOperation, FinishClass, MissingDone, ReasonCode,
    ResponseMode, StreamEnd, UsageSource,
};
use serde_json::{Map, Value};

use crate::classify::Classification;

/// Every fact the verdict needs about one attempt that reached a 200 response (V-3,
/// V-20; 40 S-95). Built by the attempt executor; `Default` gives a text-mode,
/// non-stream attempt with no output, no finish and no usage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AttemptFacts<'a> {
    /// `text` or `openai` (fidelity).
    pub mode: ResponseMode,
    /// The source's `MISSING_DONE` (`retry` default, `salvage`); ignored in openai mode.
    pub missing_done: MissingDone,
    /// Stream facts; `None` for a non-stream response, which skips step 1.
    pub stream: Option<StreamFacts>,
    /// The recorded raw `finish_reason`; `""` counts as none.
    pub finish_reason: Option<&'a str>,
    /// The projected, think-stripped content.
    pub content: &'a str,
    /// The projected thinking; only its length is ever reported.
    pub thinking: &'a str,
    /// The assembled openai message (before the snapshot); `None` in text mode. In
    /// openai mode a missing message falls back to the text summary.
    pub message: Option<&'a Map<String, Value>>,
    /// The last non-null usage object is measured.
    pub usage_measured: bool,
    /// The accumulated `refusal` text; `""` when none.
    pub refusal: &'a str,
    /// Text mode: the answer carried at least one tool call.
    pub tool_calls_in_text: bool,
}

/// A deliverable attempt and what it carries besides the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Delivery {
    /// `Done` | `EofAfterFinish` | `Salvaged`; `None` for non-stream.
    pub stream_end: Option<StreamEnd>,
    /// Token trust level: `Measured` when the last usage is measured (and not
    /// salvaged), `Estimated` when salvaged with a measured usage, else `Unavailable`.
    pub usage_source: UsageSource,
    /// The finish class (`Unknown` → the caller's one-per-value dialect warning).
    pub finish_class: FinishClass,
    /// The output summary the outcome table judged.
    pub summary: OutputSummary,
    /// The one cacheability predicate applied to this attempt.
    pub cacheable: bool,
}

/// A failure decided by the verdict (completeness or the outcome table), with what its message
/// needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VerdictFailure {
    /// One of [`VERDICT_CODES`] or [`COMPLETENESS_CODES`].
    pub code: ReasonCode,
    /// The code's category by the registry (`Transient` or `ResultInvalid`).
    pub category: Category,
    /// The mode (the two `missing_done` messages differ).
    pub mode: ResponseMode,
    /// The raw finish (`""` is none).
    pub finish_reason: Option<String>,
    /// Unicode scalar values of the projected thinking; the text itself is never kept.
    pub thinking_len: usize,
    /// `refused` only: the refusal text, scrubbed and capped like a body summary.
    pub detail: Option<String>,
}

impl VerdictFailure {
    /// A failure of `code` for these facts; the category comes from [`reason_category`]
    /// (`Transient` for a code the registry does not know, which cannot happen for the codes
    /// the verdict raises).
    pub fn new(code: ReasonCode, facts: &AttemptFacts<'_>) -> Self {
        Self {
            code,
            category: reason_category(code).unwrap_or(Category::Transient),
            mode: facts.mode,
            finish_reason: facts
                .finish_reason
                .filter(|f| !f.is_empty())
                .map(str::to_owned),
            thinking_len: facts.thinking.chars().count(),
            detail: None,
        }
    }

    /// The message of the registry:
    /// - outcome-table codes: `{source} {code}: finish_reason={finish}, thinking_len={n}` with
    ///   `{finish}` the JSON encoding of the raw finish (`"stop"`) or `null`;
    /// - `missing_done`, openai: `{source}: fidelity stream truncated, salvage not allowed
    ///   (missing_done)`; text: `{source}: SSE stream truncated without [DONE] (missing_done)`;
    /// - `early_eof`: `{source}: SSE stream ended with zero output (early_eof)`.
    ///
    /// Reasoning text, tool arguments and payloads are never echoed.
    pub fn message(&self, source_name: &str) -> String {
        match (self.code, self.mode) {
            (ReasonCode::MissingDone, ResponseMode::OpenAi) => format!(
                "{source_name}: fidelity stream truncated, salvage not allowed (missing_done)"
            ),
            (ReasonCode::MissingDone, ResponseMode::Text) => {
                format!("{source_name}: SSE stream truncated without [DONE] (missing_done)")
            }
            (ReasonCode::Refused, _) => crate::classify::compose(
                format!("{source_name}: the model refused to answer (refused)"),
                self.detail.as_deref().unwrap_or_default(),
            ),
            (ReasonCode::ToolCallsInTextMode, _) => format!(
                "{source_name}: the answer holds only tool calls (tool_calls_in_text_mode); \
                 use the openai response mode to receive tool calls"
            ),
            (ReasonCode::EarlyEof, _) => {
                format!("{source_name}: SSE stream ended with zero output (early_eof)")
            }
            (code, _) => {
                let finish = self
                    .finish_reason
                    .as_ref()
                    .map_or(Value::Null, |f| Value::String(f.clone()));
                format!(
                    "{source_name} {code}: finish_reason={finish}, thinking_len={}",
                    self.thinking_len
                )
            }
        }
    }

    /// The classification of this failure: the category, the
    /// message, `source_name`, operation `chat`, the `reason_code`, no status, hint, body or
    /// cause. Its failure reason is `bad_response` for `Transient` and none for
    /// `ResultInvalid` (a neutral breaker success).
    pub fn into_classification(self, source_name: &str) -> Classification {
        let mut failure = AttemptFailure::new(self.message(source_name), ErrorOperation::Chat);
        failure.source_name = Some(source_name.to_owned());
        failure.reason_code = Some(self.code);
        Classification::new(self.category, failure)
    }

    /// The `AttemptError` of this failure: `Transient`, or `ResultInvalid` with
    /// `raw_text = ""` (reasoning is never echoed) and no validation data. A `ResultInvalid`
    /// reaches the caller directly, never wrapped in `AllSourcesExhausted`.
    pub fn into_error(self, source_name: &str) -> AttemptError {
        self.into_classification(source_name).into_error()
    }
}

/// The verdict on one attempt.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// Deliver the result.
    Deliver(Delivery),
    /// The verdict failed the attempt (completeness or the outcome table).
    Fail(VerdictFailure),
    /// A terminal wire fact failed the stream before completeness: `read_error`,
    /// `response_too_large` or `liveness_timeout`. Build the failure with `crate::classify`,
    /// which holds the fault, the limit or the watchdog kind (cause `ReadError`/…,
    /// `StreamLivenessTimeout`).
    TransportFailed(ReasonCode),
}

impl Verdict {
    /// `true` for [`Verdict::Deliver`].
    pub const fn is_deliver(&self) -> bool {
        matches!(self, Self::Deliver(_))
    }

    /// The delivery, if delivered.
    pub const fn delivery(&self) -> Option<&Delivery> {
        match self {
            Self::Deliver(delivery) => Some(delivery),
            _ => None,
        }
    }

    /// The reason code of a failure; `None` when delivered.
    pub fn reason_code(&self) -> Option<ReasonCode> {
        match self {
            Self::Deliver(_) => None,
            Self::Fail(failure) => Some(failure.code),
            Self::TransportFailed(code) => Some(*code),
        }
    }

    /// The category of a failure by the registry; `None` when delivered.
    pub fn category(&self) -> Option<Category> {
        self.reason_code().and_then(reason_category)
    }
}

/// Usage resolution of a delivered attempt: a salvaged stream
/// downgrades a measured usage to `Estimated`; otherwise a measured usage is `Measured`; no
/// measured usage is `Unavailable`.
pub const fn resolve_usage_source(
    stream_end: Option<StreamEnd>,
    usage_measured: bool,
) -> UsageSource {
    match (stream_end, usage_measured) {
        (_, false) => UsageSource::Unavailable,
        (Some(StreamEnd::Salvaged), true) => UsageSource::Estimated,
        (_, true) => UsageSource::Measured,
    }
}

/// The verdict on one attempt (40 S-95 steps 5–9, S-111 steps 7–9): completeness for
/// streams, then the outcome table on the (possibly salvaged) output, then usage resolution and
/// cacheability. Invariants (checked by property tests): `EofAfterFinish ⇒ Measured`;
/// `Salvaged ⇒ Estimated | Unavailable`; `Estimated ⇒ Salvaged`; openai mode never salvages;
/// `cacheable ⇒` a natural or absent finish, a body, not salvaged.
pub fn judge_attempt(facts: &AttemptFacts<'_>) -> Verdict {
    let stream_end = match &facts.stream {
        None => None,
        Some(stream) => match judge_completeness(
            facts.mode,
            facts.missing_done,
            stream,
            facts.finish_reason,
            facts.usage_measured,
        ) {
            Completeness::Continue(end) => Some(end),
            Completeness::Truncated(code) => {
                return Verdict::Fail(VerdictFailure::new(code, facts));
            }
            Completeness::TransportFailed(code) => return Verdict::TransportFailed(code),
        },
    };
    let summary = match (facts.mode, facts.message) {
        (ResponseMode::OpenAi, Some(message)) => summarize_message(message, facts.content),
        _ => summarize_text(facts.content, facts.thinking),
    };
    let finish_class = classify_finish(facts.finish_reason);
    if let Outcome::Fail(code) = judge_outcome(facts.mode, &summary, finish_class) {
        // README D22, D27: in text mode, an answer without a body whose output is a refusal or
        // tool calls is not an empty completion: retrying would give the same answer.
        if code == ReasonCode::EmptyCompletion && facts.mode == ResponseMode::Text {
            if !facts.refusal.trim().is_empty() {
                let mut failure = VerdictFailure::new(ReasonCode::Refused, facts);
                failure.detail = Some(crate::redact::scrubbed_summary(
                    facts.refusal,
                    &crate::redact::ScrubOptions::default(),
                ));
                return Verdict::Fail(failure);
            }
            if facts.tool_calls_in_text {
                return Verdict::Fail(VerdictFailure::new(ReasonCode::ToolCallsInTextMode, facts));
            }
        }
        return Verdict::Fail(VerdictFailure::new(code, facts));
    }
    Verdict::Deliver(Delivery {
        stream_end,
        usage_source: resolve_usage_source(stream_end, facts.usage_measured),
        finish_class,
        summary,
        cacheable: is_cacheable_message(
            facts.mode,
            facts.content,
            facts.finish_reason,
            stream_end,
            facts.message,
        ),
    })
}
