//! The attempt seam: what the retry loop and the hedge orchestrator
//! hand to whoever performs one transport invocation, and what comes back.
//!
//! Owns [`AttemptRunner`] (production: the executor that drives a `ChatTransport`; tests:
//! `gateway_testkit::ScriptedRunner`), its inputs [`AttemptCtx`], [`LegSignals`] and
//! [`LegControl`], its output [`AttemptOutcome`], and [`TransportResult`], the judged outcome
//! of one successful attempt. The runner only *performs* the attempt; admission, settlement,
//! write-backs and rows stay in the core's attempt step (`retry_loop`), so every runner gets
//! the same governance.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gateway_ports::{
    AttemptError, CallOperation, Effort, FinishReason, OpenAiChatCompletion, SourceConfig,
    StreamEnd, ThinkingObservation, Usage, UsageSource,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The judged outcome of one successful attempt (lives in the core).
///
/// Produced by the core's attempt executor from the transport's wire events (never by a
/// transport); input of response building, settlement and the attempt row.
/// `#[non_exhaustive]` with `Default`: build it with `TransportResult::default()` plus field
/// assignment, or with the shorthand `TransportResult::ok(prompt, completion)`.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct TransportResult {
    /// Text projection.
    pub content: String,
    /// Reasoning projection.
    pub thinking: String,
    /// Resolved usage.
    pub usage: Usage,
    /// Trust level of `usage`; `Unavailable` settles `est`.
    pub usage_source: UsageSource,
    /// Time to first progress chunk in ms; `None` for non-stream.
    pub ttft_ms: Option<f64>,
    /// Largest gap between adjacent progress chunks in ms.
    pub max_inter_token_ms: Option<f64>,
    /// The last non-null usage object as received.
    pub raw_usage: Option<serde_json::Value>,
    /// First valid model name the upstream reported.
    pub model_reported: Option<String>,
    /// Whether the model reasoned.
    pub thinking_observation: ThinkingObservation,
    /// Effort level actually sent.
    pub applied_effort: Option<Effort>,
    /// Unrounded above-threshold silence in ms (60); `None` = not observed.
    pub stall_ms: Option<f64>,
    /// Gaps counted in `stall_ms`; `None` together with it.
    pub stall_count: Option<u32>,
    /// Fidelity snapshot (`response_mode = openai`).
    pub completion: Option<OpenAiChatCompletion>,
    /// Raw upstream finish_reason.
    pub finish_reason: Option<FinishReason>,
    /// How the stream ended; `None` for non-stream.
    pub stream_end: Option<StreamEnd>,
}

impl TransportResult {
    /// Tokens this success settles: `prompt + completion` for chat when usage is
    /// measured or estimated (a real 0 stays 0), `est` when usage is unavailable; embedding
    /// settles `prompt` only; OCR always 0.
    pub fn settle_tokens(&self, mode: SettleMode, est_tokens: u64) -> u64 {
        match mode {
            SettleMode::Zero => 0,
            _ if self.usage_source == UsageSource::Unavailable => est_tokens,
            SettleMode::PromptAndCompletion => self
                .usage
                .prompt_tokens
                .saturating_add(self.usage.completion_tokens),
            SettleMode::PromptOnly => self.usage.prompt_tokens,
        }
    }
}

/// Shorthand constructors for code that plays an attempt outside a real executor (a custom
/// [`AttemptRunner`], the scripted runner of `gateway-testkit`, benches).
impl TransportResult {
    /// A measured success with this usage (tokens) and content `"ok"` (the original's
    /// positional `TransportResult(...)`); every other field at its default.
    pub fn ok(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            content: "ok".to_owned(),
            usage: Usage::new(prompt_tokens, completion_tokens),
            usage_source: UsageSource::Measured,
            ..Self::default()
        }
    }

    /// The same result with `usage_source` replaced (e.g. `Unavailable` to exercise the `est`
    /// settlement of 30 G-87).
    pub fn with_usage_source(mut self, usage_source: UsageSource) -> Self {
        self.usage_source = usage_source;
        self
    }

    /// The same result with a stall observation (60; `report_stall` steps).
    pub fn with_stall(mut self, stall_ms: f64, stall_count: u32) -> Self {
        self.stall_ms = Some(stall_ms);
        self.stall_count = Some(stall_count);
        self
    }
}

/// Which tokens a success settles: chat `prompt + completion`, embedding
/// `prompt`, OCR nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettleMode {
    /// Chat: `prompt_tokens + completion_tokens`.
    PromptAndCompletion,
    /// Embedding: `prompt_tokens`.
    PromptOnly,
    /// OCR: always 0 — OCR has no tokens, a fact (S6).
    Zero,
}

/// Everything one attempt needs to know about itself.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AttemptCtx {
    /// The attempt's id (UUIDv4): breaker probe owner, `X-Request-Id`, the row's `call_id`.
    pub call_id: String,
    /// The logical call's id, shared by every attempt of the call.
    pub logical_call_id: String,
    /// The admitted source.
    pub source: Arc<SourceConfig>,
    /// 1-based number of this attempt within the logical call (= `CallStats::attempts` after
    /// registration).
    pub attempt: u32,
    /// The admission estimate pre-deducted from TPM (`est`).
    pub est_tokens: u64,
    /// Remaining time of the call deadline when the attempt started, if a deadline is set
    /// (runtime timer; 30 §8). Informational: the boundary enforces it.
    pub deadline_remaining: Option<Duration>,
    /// The call's operation (telemetry `operation`).
    pub operation: CallOperation,
    /// `true` for a hedge leg (60), `false` for the primary.
    pub hedge_leg: bool,
}

impl AttemptCtx {
    /// A context for attempt 1 of a chat call on `source` with this attempt `call_id`: the
    /// logical call id equals `call_id`, `est_tokens` is the source's effective estimate, no
    /// deadline, primary leg. Drives a runner directly (tier-1 executor tests, benches); the
    /// retry loop builds its own.
    pub fn new(call_id: impl Into<String>, source: Arc<SourceConfig>) -> Self {
        let call_id = call_id.into();
        Self {
            logical_call_id: call_id.clone(),
            call_id,
            est_tokens: source.effective_est_tokens(),
            source,
            attempt: 1,
            deadline_remaining: None,
            operation: CallOperation::Chat,
            hedge_leg: false,
        }
    }
}

/// The primary leg's liveness signal: one progress counter. The runner calls
/// [`LegSignals::progress`] on every progress chunk; first token ⇔ `seq > 0`.
#[derive(Debug, Clone)]
pub struct LegSignals {
    tx: Arc<watch::Sender<u64>>,
}

impl LegSignals {
    /// A signal pair: the runner's side and the orchestrator's receiver (starts at 0).
    pub fn new() -> (Self, watch::Receiver<u64>) {
        let (tx, rx) = watch::channel(0);
        (Self { tx: Arc::new(tx) }, rx)
    }

    /// Records one progress chunk (bumps the counter, wakes the receiver).
    pub fn progress(&self) {
        self.tx.send_modify(|seq| *seq = seq.saturating_add(1));
    }

    /// Progress chunks seen so far.
    pub fn seq(&self) -> u64 {
        *self.tx.borrow()
    }
}

/// Why a leg is asked to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelReason {
    /// The other leg of a hedged round won; this leg is the loser (`hedge_cancelled` row).
    HedgeLoser,
}

/// Cooperative cancellation of one leg: a token plus a reason, and the `loser` flag
/// its `AttemptGuard` labels a dropped attempt's row from (`hedge_cancelled` vs `cancelled`).
///
/// Cloning shares the same token and flag.
#[derive(Debug, Clone, Default)]
pub struct LegControl {
    token: CancellationToken,
    loser: Arc<AtomicBool>,
}

impl LegControl {
    /// A fresh control: not cancelled, not a loser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the leg the loser of its hedged round **before** cancelling it, then
    /// cancels it.
    pub fn cancel_as_loser(&self) {
        self.loser.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    /// `true` once [`LegControl::cancel_as_loser`] was called.
    pub fn is_loser(&self) -> bool {
        self.loser.load(Ordering::SeqCst)
    }

    /// `true` once the leg was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The reason the leg was asked to stop, if it was.
    pub fn reason(&self) -> Option<CancelReason> {
        (self.is_cancelled() && self.is_loser()).then_some(CancelReason::HedgeLoser)
    }

    /// Completes when the leg is asked to stop.
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        self.token.cancelled()
    }

    /// The shared loser flag (read by the attempt guard on drop).
    pub(crate) fn loser_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.loser)
    }
}

/// What a runner reports for one attempt.
#[derive(Debug)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// The attempt produced a deliverable result.
    Success(Box<TransportResult>),
    /// The attempt failed; the error is already classified (one of the four categories).
    Failed(AttemptError),
    /// The runner honoured a loser cancel while its transport was pending.
    CancelledAsLoser,
}

/// The outcome of one leg after the core's attempt step: the runner's outcome
/// with the governance done (settled, written back, row emitted).
pub type LegOutcome = AttemptOutcome;

/// Performs one attempt. The core has already admitted the attempt; the runner must
/// not retry, sleep for capacity or touch governance. Dropping the returned future is
/// cancellation: the runner must leave nothing behind (no spawned task).
///
/// The future must be `Send` so calls stay `Send`.
pub trait AttemptRunner: Send + Sync {
    /// Runs one attempt. `signals` is `Some` only for the leg whose liveness the orchestrator
    /// watches; `control` tells a hedge leg to stop — honouring it is optional, the
    /// core also races the runner against it.
    fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send;
}

impl<R: AttemptRunner + ?Sized> AttemptRunner for Arc<R> {
    fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        (**self).run(ctx, signals, control)
    }
}

impl<R: AttemptRunner + ?Sized> AttemptRunner for &R {
    fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        (**self).run(ctx, signals, control)
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HedgeLoser => f.write_str("hedge_loser"),
        }
    }
}
