//! The re-ask ladder.
//!
//! [`Ladder`] is the pure state machine: which strategy a round uses, what it sends, and what a
//! round's answer means ([`LadderStep`]). [`run`] drives it over one open logical call
//! ([`CallHandle`]): every round is a full governance loop ([`CallHandle::run_loop`]: its own
//! retry budget, reasons, stall clock and hedge evaluation) inside the call's one context (one
//! `logical_call_id`, attempts accumulating) and **one** deadline. Only the ladder's own
//! parse failures re-ask; every error of a loop propagates unchanged.

use std::sync::Arc;

use gateway_ports::request::{ChatRequest, JsonObject, StructuredSpec};
use gateway_ports::{
    AttemptFailure, ErrorOperation, GatewayError, ResultInvalidDetails, StructuredFailure,
    StructuredOutputStrategy,
};
use serde_json::Value;

use gateway_ports::LlmResponse;

use crate::attempt::{AttemptRunner, SettleMode};
use crate::cache::CacheCall;
use crate::governor::{CallHandle, Governed};
use crate::retry_loop::LoopPolicy;
use crate::telemetry::RowInput;
use crate::telemetry::shape::format_bounded_errors;

/// The feedback message up to the error list (exact text).
pub const FEEDBACK_PREFIX: &str =
    "Your previous reply was not valid JSON matching the required schema. Errors: ";
/// The feedback message after the error list (exact text).
pub const FEEDBACK_SUFFIX: &str = ". Reply with ONLY the corrected JSON object.";
/// The message of the `ResultInvalid` raised when the re-asks are used up. It never
/// contains the validation errors, the repair error or the model text.
pub const LADDER_EXHAUSTED: &str = "structured output ladder exhausted";

/// `FEEDBACK(errors)` of C-11: the validation errors if any, else the repair error, else none,
/// bounded by `format_bounded_errors` (3 items × 200 characters, `"; "`; empty →
/// `output could not be parsed`).
pub fn feedback_message(failure: &StructuredFailure) -> String {
    let errors: Vec<String> = if !failure.validation_errors.is_empty() {
        failure.validation_errors.clone()
    } else {
        failure.repair_error.iter().cloned().collect()
    };
    format!(
        "{FEEDBACK_PREFIX}{}{FEEDBACK_SUFFIX}",
        format_bounded_errors(&errors)
    )
}

/// The ladder's configuration.
#[derive(Clone)]
pub struct LadderOptions {
    /// The strategy of round 0 (default [`super::JsonRepairStrategy`]).
    pub strategy: Arc<dyn StructuredOutputStrategy>,
    /// The strategy of every round after the first failure, if configured.
    pub escalation: Option<Arc<dyn StructuredOutputStrategy>>,
    /// Re-asks allowed (total rounds = 1 + this; `PGW_STRUCTURED_MAX_RETRIES`, default 2).
    pub max_retries: u32,
}

impl std::fmt::Debug for LadderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LadderOptions")
            .field("strategy", &self.strategy.name())
            .field("escalation", &self.escalation.as_ref().map(|s| s.name()))
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl Default for LadderOptions {
    fn default() -> Self {
        Self {
            strategy: super::default_strategy(),
            escalation: None,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }
}

/// Default number of re-asks on every assembly path.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// What one round's answer means.
#[derive(Debug)]
pub enum LadderStep {
    /// The answer parsed and validated: the structured value.
    Done(Value),
    /// The answer failed and a re-ask was prepared; run the next round.
    Reask,
    /// The answer failed with no re-ask left: `ResultInvalid`.
    Exhausted(GatewayError),
}

/// The ladder's state over one call: the current (un-injected) request, the re-asks used.
#[derive(Debug)]
pub struct Ladder {
    spec: StructuredSpec,
    options: LadderOptions,
    current: ChatRequest,
    reasks_used: u32,
}

impl Ladder {
    /// A ladder for `request` (its `structured` is taken as the spec; `Json` if `None`).
    pub fn new(request: &ChatRequest, options: LadderOptions) -> Self {
        Self {
            spec: request.structured.clone().unwrap_or(StructuredSpec::Json),
            options,
            current: request.clone(),
            reasks_used: 0,
        }
    }

    /// Re-asks used so far.
    pub fn reasks_used(&self) -> u32 {
        self.reasks_used
    }

    /// The strategy of the current round: the escalation strategy once a re-ask happened and
    /// one is configured, else the configured one.
    pub fn strategy(&self) -> &Arc<dyn StructuredOutputStrategy> {
        match (&self.options.escalation, self.reasks_used) {
            (Some(escalation), n) if n > 0 => escalation,
            _ => &self.options.strategy,
        }
    }

    /// The current round's request without injection: its messages are this round's
    /// and its overlay is the caller's sampling intent.
    pub fn plain_request(&self) -> &ChatRequest {
        &self.current
    }

    /// The current round's request as sent: the strategy overlay merged over the caller
    /// overlay.
    pub fn round_request(&self) -> ChatRequest {
        super::inject(&self.current, self.strategy().as_ref(), &self.spec)
    }

    /// Judges one round's `content` (the text projection after think-tag handling).
    pub fn judge(&mut self, content: &str) -> LadderStep {
        let failure = match self.strategy().parse(content, &self.spec) {
            Ok(value) => return LadderStep::Done(value),
            Err(failure) => failure,
        };
        if self.reasks_used >= self.options.max_retries {
            return LadderStep::Exhausted(exhausted_error(failure, content));
        }
        let feedback = feedback_message(&failure);
        self.current.messages.push(message("assistant", content));
        self.current.messages.push(message("user", &feedback));
        self.reasks_used += 1;
        LadderStep::Reask
    }
}

fn message(role: &str, content: &str) -> JsonObject {
    let mut m = JsonObject::with_capacity(2);
    m.insert("role".to_owned(), Value::from(role));
    m.insert("content".to_owned(), Value::from(content));
    m
}

/// The `ResultInvalid` of C-13: message [`LADDER_EXHAUSTED`] only; the last validation errors,
/// repair error and raw text ride in the details (never in the message or telemetry's raw text).
pub fn exhausted_error(failure: StructuredFailure, raw_text: &str) -> GatewayError {
    let mut details =
        ResultInvalidDetails::new(AttemptFailure::new(LADDER_EXHAUSTED, ErrorOperation::Chat));
    details.validation_errors = failure.validation_errors;
    details.repair_error = failure.repair_error;
    details.raw_text = raw_text.to_owned();
    GatewayError::result_invalid(details)
}

/// A structured success: the last round's governed result and its structured value.
#[derive(Debug)]
pub struct LadderSuccess {
    /// The last (successful) round's governed result.
    pub governed: Governed,
    /// The parsed, validated value (`LlmResponse::structured_data`).
    pub value: Value,
    /// Re-asks used.
    pub reasks_used: u32,
}

/// Drives `ladder` over the open call `handle`. `make_runner` builds the attempt
/// runner of one round from the request that round sends (injected). Each round's attempt
/// rows carry that round's messages and the caller's sampling.
///
/// Errors: a loop's error unchanged (the loop already wrote the terminal row and ended
/// the call); on exhaustion the `ResultInvalid` of C-13, after writing the call's terminal row.
/// The caller ends a successful call with [`CallHandle::finish`].
pub async fn run<R, F>(
    handle: &mut CallHandle,
    ladder: &mut Ladder,
    mut make_runner: F,
) -> Result<LadderSuccess, GatewayError>
where
    R: AttemptRunner,
    F: FnMut(Arc<ChatRequest>) -> R,
{
    loop {
        let plain = Arc::new(ladder.plain_request().clone());
        let runner = make_runner(Arc::new(ladder.round_request()));
        let row_input = Arc::new(RowInput::chat(&plain));
        let governed = handle
            .run_loop(
                &runner,
                LoopPolicy::CHAT,
                SettleMode::PromptAndCompletion,
                Some(row_input),
            )
            .await?;
        match ladder.judge(&governed.result.content) {
            LadderStep::Done(value) => {
                return Ok(LadderSuccess {
                    governed,
                    value,
                    reasks_used: ladder.reasks_used(),
                });
            }
            LadderStep::Reask => {}
            LadderStep::Exhausted(error) => {
                return Err(handle.fail(error).await);
            }
        }
    }
}

/// The structured call through the response cache (05 R-4
/// `chat → cache → ladder → loop`): the cache stage sits **outside** the ladder.
///
/// Inside the call's one deadline: the read (`cache` built with the call's strategy, so a hit
/// rebuilds `structured_data` from the stored text, C-55 step 7, and a text no strategy of the
/// call accepts is a miss); a hit ends the call with one `cache_hit` row and no loop. On a miss
/// the ladder runs ([`run`]); only its final, validated answer is written (judged by the one
/// cacheability predicate) — the intermediate rounds that failed to parse never reach the
/// cache, and an exhausted ladder or a loop error writes nothing. Without `cache` this is
/// [`run`] plus [`CallHandle::finish`].
///
/// Returns the response with `structured_data` and `call_stats` set.
///
/// Errors: those of [`run`]; `CallDeadlineExceeded` when the deadline expires during the cache
/// read or write (the already produced answer is then discarded).
pub async fn run_cached<R, F>(
    mut handle: CallHandle,
    ladder: &mut Ladder,
    cache: Option<&CacheCall<'_>>,
    make_runner: F,
) -> Result<LlmResponse, GatewayError>
where
    R: AttemptRunner,
    F: FnMut(Arc<ChatRequest>) -> R,
{
    if let Some(cache) = cache
        && let Some(hit) = handle.within_deadline(cache.read()).await?
    {
        return Ok(handle.finish_hit(hit).await);
    }
    let success = run(&mut handle, ladder, make_runner).await?;
    let mut response = success.governed.into_response();
    response.structured_data = Some(success.value);
    if let Some(cache) = cache {
        handle.within_deadline(cache.write(&response)).await?;
    }
    response.call_stats = Some(handle.finish());
    Ok(response)
}
