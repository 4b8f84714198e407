//! The `Governor`: the client minus wiring.
//!
//! Owns one scope's governance state — sources, limiter, breaker, pacer, cooldown memo,
//! selector, clock, jitter, policies, the row sink and the cleanup queue — and the public
//! boundary of every call: the closed check (`ClientClosed`), the per-call deadline
//! resolution (before the statistics boundary), the call context and its `CallGuard`,
//! the deadline wrapper, the retry loop, and the terminal row of a failed call.
//! `run_chat` / `run_embed` / `run_ocr` are the same loop with different
//! [`LoopPolicy`] and settlement. A call of several serial loops (an embedding call's
//! batches) opens one [`CallHandle`] with [`Governor::begin_call`] and runs one
//! loop per batch in it: one context, one logical id, one deadline, at most one terminal row.
//! The facade clients wrap it; issue-level tests in the core call it directly.
//!
//! Tracing: `pgw.call` (`logical_call_id`, `scope`, `operation`) → `pgw.round` →
//! `pgw.attempt`; no content, no secrets.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gateway_ports::{
    BackpressurePolicy, CallOperation, CallStats, CircuitBreaker, Clock, GatewayError, LlmResponse,
    RateLimiter, RetryPolicy, SourceConfig, WaitPolicy,
};
use tokio::sync::Notify;
use tracing::Instrument;

use crate::admission::{Admission, AdmissionParts, AdmissionPolicy, DEFAULT_MAX_WAITERS};
use crate::attempt::{AttemptRunner, SettleMode, TransportResult};
use crate::budget::RetryBudget;
use crate::cache::CacheCall;
use crate::cleanup::{CleanupQueue, CleanupReceiver, CleanupStats};
use crate::clock::TokioClock;
use crate::config::hedge::HedgeConfig;
use crate::deadline::{deadline_instant, resolve_call_deadline, with_deadline};
use crate::pacer::{AimdPacer, Pacer};
use crate::retry_loop::{LoopPolicy, LoopSuccess, run_loop};
use crate::rows::{CacheHitRowFacts, NoopRowSink, RowCall, RowSink};
use crate::scope::{LoopEnv, ScopeState, default_jitter};
use crate::select::{HealthAwareSelector, Selector};
use crate::stats::{CallContext, CallGuard, emit_terminal_failure, new_uuid_v4};

pub use crate::scope::Jitter;

/// How long `close()` waits for the cleanup queue to drain.
pub const CLOSE_DRAIN_BOUND: Duration = Duration::from_secs(30);

/// The governance core of one client scope. Cheap to clone (an `Arc` inside).
#[derive(Debug, Clone)]
pub struct Governor {
    inner: Arc<ScopeState>,
}

/// Per-call options of a governed call.
#[derive(Clone)]
#[non_exhaustive]
pub struct CallOptions {
    /// Per-call deadline override (`None` inherits the assembled one; zero is
    /// `InvalidArgument`).
    pub call_deadline: Option<Duration>,
    /// Origin named by an invalid per-call deadline (default `"ChatOptions::call_deadline"`).
    pub deadline_origin: Option<String>,
    /// Emitter-owned call input for the call-level row columns (opaque).
    pub row_input: Option<Arc<dyn Any + Send + Sync>>,
    /// The request's upstream wire mode (`ChatRequest::stream`, default `true` like it): only
    /// the hedge entry gate reads it (60 H-12 — a stall-only scope hedges streaming calls only).
    pub stream: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        Self {
            call_deadline: None,
            deadline_origin: None,
            row_input: None,
            stream: true,
        }
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("call_deadline", &self.call_deadline)
            .field("deadline_origin", &self.deadline_origin)
            .field("row_input", &self.row_input.as_ref().map(|_| "<opaque>"))
            .field("stream", &self.stream)
            .finish()
    }
}

impl CallOptions {
    /// Options with this per-call deadline.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// Options carrying this row input.
    pub fn with_row_input(mut self, input: Arc<dyn Any + Send + Sync>) -> Self {
        self.row_input = Some(input);
        self
    }

    /// Options for a request with this wire mode (`ChatRequest::stream`; 60 H-12).
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }
}

/// Work run **inside** the call deadline after the loop succeeded (the deadline covers
/// cache IO), e.g. the facade's response-cache write. If the deadline expires while it runs,
/// its future is dropped (nothing stored), the call waits for its cleanup jobs and returns
/// `CallDeadlineExceeded` with its terminal row. Its duration counts into
/// `total_latency_ms`.
pub trait SuccessHook: Send + Sync {
    /// Runs once after the winning attempt's bookkeeping, before the statistics snapshot.
    fn after_success(&self, success: &LoopSuccess) -> impl Future<Output = ()> + Send;
}

/// The empty [`SuccessHook`] used by `run_chat` / `run_embed` / `run_ocr` / `run`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHook;

impl SuccessHook for NoHook {
    async fn after_success(&self, _success: &LoopSuccess) {}
}

/// A governed success: the winning attempt and the call's frozen statistics.
#[derive(Debug)]
#[non_exhaustive]
pub struct Governed {
    /// The winning attempt's judged result.
    pub result: Box<TransportResult>,
    /// The winning source.
    pub source: Arc<SourceConfig>,
    /// The winning attempt's `call_id`.
    pub call_id: String,
    /// Winning attempt latency in ms (injected clock).
    pub latency_ms: u64,
    /// The call's statistics, snapshotted just before returning.
    pub stats: CallStats,
}

impl Governed {
    /// The caller's [`LlmResponse`]: the winning attempt's judged result, the winning
    /// source's configured model and provider, and the call's statistics.
    pub fn into_response(self) -> LlmResponse {
        let mut out = chat_response(*self.result, &self.source, self.call_id, self.latency_ms);
        out.call_stats = Some(self.stats);
        out
    }
}

/// The [`LlmResponse`] of a winning attempt, without `call_stats`: projections,
/// usage, timings, fidelity snapshot, finish and stream end of `result`; model, provider and
/// name of `source`.
pub fn chat_response(
    result: TransportResult,
    source: &SourceConfig,
    call_id: String,
    latency_ms: u64,
) -> LlmResponse {
    let r = result;
    let mut out = LlmResponse::default();
    out.content = r.content;
    out.thinking = r.thinking;
    out.model = source.model.clone();
    out.provider = source.provider.clone();
    out.usage = r.usage;
    out.latency_ms = latency_ms;
    out.ttft_ms = r.ttft_ms;
    out.max_inter_token_ms = r.max_inter_token_ms;
    out.call_id = call_id;
    out.source_name = source.name.clone();
    out.usage_source = r.usage_source;
    out.model_reported = r.model_reported;
    out.thinking_observation = r.thinking_observation;
    out.applied_effort = r.applied_effort;
    out.completion = r.completion;
    out.finish_reason = r.finish_reason;
    out.stream_end = r.stream_end;
    out
}

/// What the cached chat path produced inside the deadline.
enum Served {
    Hit(Box<LlmResponse>),
    Fresh(Box<LlmResponse>),
}

/// Builds a [`Governor`] (the builder path may inject every component).
pub struct GovernorBuilder {
    scope: String,
    sources: Vec<Arc<SourceConfig>>,
    limiter: Arc<dyn RateLimiter>,
    breaker: Arc<dyn CircuitBreaker>,
    pacer: Option<Arc<dyn Pacer>>,
    selector: Option<Arc<dyn Selector>>,
    clock: Option<Arc<dyn Clock>>,
    jitter: Option<Jitter>,
    retry: RetryPolicy,
    retry_budget: Option<Arc<RetryBudget>>,
    hedge: HedgeConfig,
    backpressure: BackpressurePolicy,
    admission: AdmissionPolicy,
    call_deadline: Option<Duration>,
    sink: Option<Arc<dyn RowSink>>,
    wakeups: Vec<Arc<Notify>>,
    queue_capacity: Option<usize>,
}

impl fmt::Debug for GovernorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GovernorBuilder")
            .field("scope", &self.scope)
            .field("sources", &self.sources.len())
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl GovernorBuilder {
    /// A builder for `scope` over `sources` with this limiter and breaker; everything else at
    /// its default (AIMD pacer, health-aware selector, `TokioClock`, seeded jitter, D3 retry,
    /// backpressure, `QUOTA_FULL=wait`, `CIRCUIT_OPEN=fail_fast`, no deadline, no rows).
    pub fn new(
        scope: impl Into<String>,
        sources: Vec<SourceConfig>,
        limiter: Arc<dyn RateLimiter>,
        breaker: Arc<dyn CircuitBreaker>,
    ) -> Self {
        Self {
            scope: scope.into(),
            sources: sources.into_iter().map(Arc::new).collect(),
            limiter,
            breaker,
            pacer: None,
            selector: None,
            clock: None,
            jitter: None,
            retry: RetryPolicy::default(),
            retry_budget: None,
            hedge: HedgeConfig::off(),
            backpressure: BackpressurePolicy::default(),
            admission: AdmissionPolicy::default(),
            call_deadline: None,
            sink: None,
            wakeups: Vec::new(),
            queue_capacity: None,
        }
    }

    /// Injects the pacer (default `AimdPacer::for_sources`).
    pub fn pacer(mut self, pacer: Arc<dyn Pacer>) -> Self {
        self.pacer = Some(pacer);
        self
    }

    /// Injects the selector (default `HealthAwareSelector`).
    pub fn selector(mut self, selector: Arc<dyn Selector>) -> Self {
        self.selector = Some(selector);
        self
    }

    /// Injects the clock (default `TokioClock`).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Injects the jitter source (default: a `SmallRng` seeded once per governor).
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Injects a retry budget shared with other governors of the same scope.
    /// Without it, `retry.budget_ratio = Some(r)` builds one on the governor's clock; with
    /// neither the budget is off.
    pub fn retry_budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.retry_budget = Some(budget);
        self
    }

    /// The scope's hedge thresholds (default [`HedgeConfig::off`]). Validate them with
    /// [`crate::hedge::check_hedge_assembly`] first (stage D); only chat calls hedge.
    pub fn hedge(mut self, hedge: HedgeConfig) -> Self {
        self.hedge = hedge;
        self
    }

    /// Backpressure policy (stall window, poll interval).
    pub fn backpressure(mut self, backpressure: BackpressurePolicy) -> Self {
        self.backpressure = backpressure;
        self
    }

    /// `QUOTA_FULL` policy.
    pub fn quota_full(mut self, policy: WaitPolicy) -> Self {
        self.admission.quota_full = policy;
        self
    }

    /// `{SCOPE}__GLOBAL__TPM` (0 = none): calls whose estimate exceeds it fail at once with
    /// `quota_full` instead of waiting (issue 22).
    pub fn global_tpm(mut self, tpm: u64) -> Self {
        self.admission.global_tpm = tpm;
        self
    }

    /// `CIRCUIT_OPEN` policy.
    pub fn circuit_open(mut self, policy: WaitPolicy) -> Self {
        self.admission.circuit_open = policy;
        self
    }

    /// The breaker's first-open cooldown in seconds (the `CircuitOpen` hint fallback).
    pub fn breaker_cooldown_s(mut self, cooldown_s: f64) -> Self {
        self.admission.breaker_cooldown_s = cooldown_s;
        self
    }

    /// `MAX_WAITERS` (default 10 000).
    pub fn max_waiters(mut self, max_waiters: usize) -> Self {
        self.admission.max_waiters = max_waiters;
        self
    }

    /// The assembled call deadline.
    pub fn call_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.call_deadline = deadline;
        self
    }

    /// The row sink (default: none).
    pub fn row_sink(mut self, sink: Arc<dyn RowSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// An extra wakeup handle for waiting picks, e.g. the memory limiter's release `Notify`.
    /// The pacer's own handle is added automatically.
    pub fn wakeup(mut self, notify: Arc<Notify>) -> Self {
        self.wakeups.push(notify);
        self
    }

    /// Cleanup queue capacity (default 4096).
    pub fn cleanup_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = Some(capacity);
        self
    }

    /// Builds the governor and the receiver its cleanup worker must run
    /// (`tokio::spawn(run_cleanup_worker(rx))` in the facade).
    pub fn build(self) -> (Governor, CleanupReceiver) {
        let (queue, rx) = CleanupQueue::with_capacity(
            self.queue_capacity
                .unwrap_or(crate::cleanup::CLEANUP_QUEUE_CAPACITY),
        );
        let clock: Arc<dyn Clock> = self.clock.unwrap_or_else(|| Arc::new(TokioClock::new()));
        let pacer: Arc<dyn Pacer> = self.pacer.unwrap_or_else(|| {
            let plain: Vec<SourceConfig> = self.sources.iter().map(|s| (**s).clone()).collect();
            Arc::new(AimdPacer::for_sources(&plain))
        });
        let selector: Arc<dyn Selector> = self
            .selector
            .unwrap_or_else(|| Arc::new(HealthAwareSelector::new(Arc::clone(&clock))));
        let jitter = self.jitter.unwrap_or_else(default_jitter);
        let retry_budget = self.retry_budget.or_else(|| {
            self.retry
                .budget_ratio
                .map(|r| Arc::new(RetryBudget::new(r, Arc::clone(&clock))))
        });
        let mut admission = self.admission;
        admission.poll_interval_s = self.backpressure.poll_interval_s;
        if admission.max_waiters == 0 {
            admission.max_waiters = DEFAULT_MAX_WAITERS;
        }
        let mut parts = AdmissionParts::new(
            self.scope.clone(),
            self.sources,
            Arc::clone(&self.limiter),
            Arc::clone(&self.breaker),
            Arc::clone(&pacer),
            Arc::clone(&selector),
            Arc::clone(&clock),
            Arc::clone(&queue),
        );
        parts.policy = admission;
        parts.wakeups = self.wakeups;
        let inner = ScopeState {
            scope: self.scope,
            admission: Admission::new(parts),
            limiter: self.limiter,
            breaker: self.breaker,
            pacer,
            selector,
            clock,
            jitter,
            retry: self.retry,
            retry_budget,
            hedge: self.hedge,
            backpressure: self.backpressure,
            call_deadline: self.call_deadline,
            sink: self.sink.unwrap_or_else(|| Arc::new(NoopRowSink)),
            queue,
            closed: AtomicBool::new(false),
        };
        (
            Governor {
                inner: Arc::new(inner),
            },
            rx,
        )
    }
}

impl Governor {
    /// The scope label.
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// The admission (introspection: memo, waiters, sources).
    pub fn admission(&self) -> &Admission {
        &self.inner.admission
    }

    /// The scope's retry budget, if `RETRY__BUDGET_RATIO` is set.
    pub fn retry_budget(&self) -> Option<&Arc<RetryBudget>> {
        self.inner.retry_budget.as_ref()
    }

    /// The cleanup queue's counters.
    pub fn cleanup_stats(&self) -> CleanupStats {
        self.inner.queue.stats()
    }

    /// Runs one chat call (`LoopPolicy::CHAT`, settles prompt + completion).
    pub async fn run_chat<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
    ) -> Result<Governed, GatewayError> {
        self.run(
            runner,
            options,
            CallOperation::Chat,
            LoopPolicy::CHAT,
            SettleMode::PromptAndCompletion,
        )
        .await
    }

    /// Runs one embedding call as a single loop (`LoopPolicy::EMBED`, settles prompt tokens).
    /// Multi-batch calls use [`Governor::begin_call`] and one
    /// [`CallHandle::run_loop`] per batch.
    pub async fn run_embed<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
    ) -> Result<Governed, GatewayError> {
        self.run(
            runner,
            options,
            CallOperation::Embed,
            LoopPolicy::EMBED,
            SettleMode::PromptOnly,
        )
        .await
    }

    /// Runs one OCR call (`LoopPolicy::OCR`, settles 0: S6). `operation` is
    /// `RecognizeText` or `ParseLayout`.
    pub async fn run_ocr<R: AttemptRunner>(
        &self,
        runner: &R,
        operation: CallOperation,
        options: CallOptions,
    ) -> Result<Governed, GatewayError> {
        self.run(
            runner,
            options,
            operation,
            LoopPolicy::OCR,
            SettleMode::Zero,
        )
        .await
    }

    /// One chat call through the response cache (`chat → cache → loop`),
    /// returning the caller's [`LlmResponse`] with `call_stats`. Without `cache` it is
    /// [`run_chat`](Self::run_chat) mapped to a response.
    ///
    /// Inside the call deadline: the read ([`CacheCall::read`]); on a hit no loop
    /// runs — the response gets a fresh `call_id` and this call's statistics (attempts 0,
    /// generation 0, a fresh `logical_call_id`, `total_latency_ms` = time on the cache path)
    /// and exactly one `cache_hit` row is emitted; on a miss the loop runs and its
    /// response is written ([`CacheCall::write`]) before the call returns. Failures and
    /// cancellations are the boundary's as for any call (one terminal row; the cache layer
    /// writes none).
    ///
    /// Errors: those of [`run_chat`](Self::run_chat); a deadline that expires during the
    /// cache read or write is `CallDeadlineExceeded`.
    pub async fn run_chat_cached<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
        cache: Option<&CacheCall<'_>>,
    ) -> Result<LlmResponse, GatewayError> {
        let Some(cache) = cache else {
            return self
                .run_chat(runner, options)
                .await
                .map(Governed::into_response);
        };
        self.chat_call(runner, options, Some(cache), None)
            .await
            .map(|(response, _hit)| response)
    }

    /// One chat call streamed to its caller: [`run_chat_cached`](Self::run_chat_cached)
    /// with the call's commit point `gate` — the hedged round cancels the loser once a leg
    /// commits, and a failure after the commit point ends the call without a retry (its error
    /// says `committed` and carries the forwarded output). `runner` must forward its frames to
    /// the same `gate`. Returns the response and whether it was a cache hit (nothing was
    /// forwarded then).
    ///
    /// Errors: those of [`run_chat_cached`](Self::run_chat_cached), post-commit failures marked
    /// with [`GatewayError::into_committed`].
    pub async fn run_chat_streamed<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
        cache: Option<&CacheCall<'_>>,
        gate: &crate::stream_call::CommitGate,
    ) -> Result<(LlmResponse, bool), GatewayError> {
        self.chat_call(runner, options, cache, Some(gate)).await
    }

    async fn chat_call<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
        cache: Option<&CacheCall<'_>>,
        commit: Option<&crate::stream_call::CommitGate>,
    ) -> Result<(LlmResponse, bool), GatewayError> {
        let gov = &*self.inner;
        let OpenedCall {
            ctx,
            mut guard,
            deadline,
            stream,
            span,
        } = self.open_call(options, CallOperation::Chat, false)?;
        let outcome = async {
            let env = LoopEnv {
                gov,
                ctx: &ctx,
                row_call: ctx.row_call(),
                policy: LoopPolicy::CHAT,
                settle: SettleMode::PromptAndCompletion,
                deadline_at: deadline.map(|d| tokio::time::Instant::now() + d),
                stream,
                commit,
            };
            let served = Box::pin(async {
                if let Some(hit) = match cache {
                    Some(cache) => cache.read().await,
                    None => None,
                } {
                    return Ok(Served::Hit(Box::new(hit)));
                }
                let success = run_loop(env, runner).await?;
                let response = chat_response(
                    *success.result,
                    &success.source,
                    success.call_id,
                    success.latency_ms,
                );
                if let Some(cache) = cache {
                    cache.write(&response).await;
                }
                Ok(Served::Fresh(Box::new(response)))
            });
            match with_deadline(deadline, served).await {
                Ok(result) => result,
                Err(expired) => {
                    gov.queue.wait_call_idle(ctx.logical_call_id()).await;
                    let error = expired.into_error(&gov.scope);
                    // A streamed call's deadline error explains itself like `run`'s.
                    Err(match commit {
                        Some(gate) => gate.mark(ctx.attach_cause(error)),
                        None => error,
                    })
                }
            }
        }
        .instrument(span)
        .await;
        match outcome {
            Ok(Served::Fresh(mut response)) => {
                guard.disarm();
                response.call_stats = Some(ctx.snapshot());
                Ok((*response, false))
            }
            Ok(Served::Hit(mut response)) => {
                guard.disarm();
                response.call_id = new_uuid_v4();
                response.call_stats = Some(ctx.snapshot());
                if gov.sink.wants_rows() {
                    gov.sink
                        .cache_hit(CacheHitRowFacts {
                            call: Arc::clone(ctx.row_call()),
                            call_id: response.call_id.clone(),
                            response: response.clone(),
                        })
                        .await;
                }
                Ok((*response, true))
            }
            Err(error) => {
                emit_terminal_failure(&ctx, gov.sink.as_ref(), &error).await;
                guard.disarm();
                Err(error)
            }
        }
    }

    /// The one governed call path behind `run_chat` / `run_embed` / `run_ocr`.
    pub async fn run<R: AttemptRunner>(
        &self,
        runner: &R,
        options: CallOptions,
        operation: CallOperation,
        policy: LoopPolicy,
        settle: SettleMode,
    ) -> Result<Governed, GatewayError> {
        self.run_with_hook(runner, options, operation, policy, settle, &NoHook)
            .await
    }

    /// [`Governor::run`] plus a [`SuccessHook`] run inside the deadline after the loop's
    /// success (the facade's cache write).
    pub async fn run_with_hook<R: AttemptRunner, H: SuccessHook>(
        &self,
        runner: &R,
        options: CallOptions,
        operation: CallOperation,
        policy: LoopPolicy,
        settle: SettleMode,
        hook: &H,
    ) -> Result<Governed, GatewayError> {
        let gov = &*self.inner;
        let OpenedCall {
            ctx,
            mut guard,
            deadline,
            stream,
            span,
        } = self.open_call(options, operation, false)?;
        let outcome = async {
            let env = LoopEnv {
                gov,
                ctx: &ctx,
                row_call: ctx.row_call(),
                policy,
                settle,
                deadline_at: deadline
                    .and_then(|d| deadline_instant(tokio::time::Instant::now(), d)),
                stream,
                commit: None,
            };
            // Boxed once per call (05 R-56): the loop's state machine is ~16 KB, and every
            // wrapper (deadline, span, the public `run_*` futures, the caller's) would otherwise
            // memcpy it on each move.
            let governed = Box::pin(async {
                let success = run_loop(env, runner).await?;
                hook.after_success(&success).await;
                Ok(success)
            });
            match with_deadline(deadline, governed).await {
                Ok(result) => result,
                Err(expired) => {
                    // G-101: the governed future is dropped; await this call's cleanup jobs
                    // (the cancelled attempt is settled and its row written first).
                    gov.queue.wait_call_idle(ctx.logical_call_id()).await;
                    Err(ctx.attach_cause(expired.into_error(&gov.scope)))
                }
            }
        }
        .instrument(span)
        .await;
        match outcome {
            Ok(success) => {
                guard.disarm();
                Ok(Governed {
                    result: success.result,
                    source: success.source,
                    call_id: success.call_id,
                    latency_ms: success.latency_ms,
                    stats: ctx.snapshot(),
                })
            }
            Err(error) => {
                // G-121: claim, snapshot, write inline; a drop during the write leaves the
                // claim consumed, so the guard writes nothing more.
                emit_terminal_failure(&ctx, gov.sink.as_ref(), &error).await;
                guard.disarm();
                Err(error)
            }
        }
    }

    /// Opens one logical call that may run several loops (one loop per embedding
    /// batch): the closed check (`ClientClosed`), the deadline resolution
    /// (`options.call_deadline` against the assembled one; zero → `InvalidArgument` naming
    /// `options.deadline_origin`), then the statistics boundary — one [`CallContext`] (one
    /// `logical_call_id`, attempts accumulating over all loops, generation samples summed,
    /// E-15) armed with its [`CallGuard`], and the call's one deadline, started now.
    /// `options.row_input` is the call-level row input (the terminal row's).
    pub fn begin_call(
        &self,
        options: CallOptions,
        operation: CallOperation,
    ) -> Result<CallHandle, GatewayError> {
        let OpenedCall {
            ctx,
            guard,
            deadline,
            stream,
            span,
        } = self.open_call(options, operation, true)?;
        Ok(CallHandle {
            inner: Arc::clone(&self.inner),
            ctx,
            guard,
            deadline,
            deadline_at: deadline.and_then(|d| deadline_instant(tokio::time::Instant::now(), d)),
            stream,
            span,
            ended: None,
        })
    }

    /// Opens one logical chat call for the structured-output re-ask ladder: like
    /// [`begin_call`](Self::begin_call) (one context, attempts accumulating over the rounds, one
    /// deadline), except that `generation_ms` is **overwritten** by the last successful round
    /// instead of summed.
    pub fn begin_ladder_call(&self, options: CallOptions) -> Result<CallHandle, GatewayError> {
        let OpenedCall {
            ctx,
            guard,
            deadline,
            stream,
            span,
        } = self.open_call(options, CallOperation::Chat, false)?;
        Ok(CallHandle {
            inner: Arc::clone(&self.inner),
            ctx,
            guard,
            deadline,
            deadline_at: deadline.map(|d| tokio::time::Instant::now() + d),
            stream,
            span,
            ended: None,
        })
    }

    /// The opening shared by [`run_with_hook`](Self::run_with_hook) and
    /// [`begin_call`](Self::begin_call): the closed check (`ClientClosed`, R-17: before the
    /// statistics boundary), the deadline resolution, then the statistics boundary —
    /// the call's [`CallContext`] (summing generation samples across loops when
    /// `accumulated`), its armed [`CallGuard`] and the `pgw.call` span.
    fn open_call(
        &self,
        options: CallOptions,
        operation: CallOperation,
        accumulated: bool,
    ) -> Result<OpenedCall, GatewayError> {
        let gov = &*self.inner;
        if gov.closed.load(Ordering::SeqCst) {
            return Err(GatewayError::ClientClosed);
        }
        let origin = options
            .deadline_origin
            .as_deref()
            .unwrap_or("ChatOptions::call_deadline");
        let deadline = resolve_call_deadline(gov.call_deadline, options.call_deadline, origin)?;
        let mut row_call = RowCall::new(new_uuid_v4(), operation, gov.scope.clone());
        row_call.input = options.row_input;
        let mut context = CallContext::new(Arc::clone(&gov.clock), row_call);
        if accumulated {
            context = context.with_accumulated_generation();
        }
        let ctx = Arc::new(context);
        let guard = CallGuard::new(
            Arc::clone(&ctx),
            Arc::clone(&gov.sink),
            Arc::clone(&gov.queue),
        );
        let span = tracing::info_span!(
            "pgw.call",
            logical_call_id = %ctx.logical_call_id(),
            scope = %gov.scope,
            operation = %operation,
        );
        Ok(OpenedCall {
            ctx,
            guard,
            deadline,
            stream: options.stream,
            span,
        })
    }

    /// Waits until the cleanup queue holds no pending job, then flushes the row sink.
    /// Keeps accepting calls.
    pub async fn quiesce(&self) {
        self.inner.queue.wait_idle().await;
        self.inner.sink.flush().await;
    }

    /// Closes the governor: idempotent; later calls return
    /// `ClientClosed`; waits up to 30 s for the cleanup queue to drain (a remainder is
    /// abandoned with a warning), flushes the sink, then shuts the queue so the worker returns.
    /// Injected components are not closed here (the facade closes what it owns).
    pub async fn close(&self) {
        if self.inner.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if tokio::time::timeout(CLOSE_DRAIN_BOUND, self.inner.queue.wait_idle())
            .await
            .is_err()
        {
            tracing::warn!(
                code = "cleanup.close_timeout",
                pending = self.inner.queue.stats().pending,
                "close(): cleanup queue not drained within {} s; remainder abandoned (leases reclaim)",
                CLOSE_DRAIN_BOUND.as_secs()
            );
        }
        self.inner.sink.flush().await;
        self.inner.queue.shutdown();
    }

    /// `true` after [`Governor::close`].
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }
}

/// What [`Governor::open_call`] hands both call paths.
struct OpenedCall {
    ctx: Arc<CallContext>,
    guard: CallGuard,
    deadline: Option<Duration>,
    stream: bool,
    span: tracing::Span,
}

/// One open logical call over several serial loops, made by
/// [`Governor::begin_call`].
///
/// Every [`CallHandle::run_loop`] is a fresh governance loop (own failure counter, reasons,
/// demotion map and stall clock, `max_attempts` per loop) inside the call's one context and one
/// deadline: attempts accumulate, every row carries the one `logical_call_id`, and the
/// remaining deadline is shared. Terminal-row discipline: a loop that fails
/// writes the call's terminal row and ends the call (later `run_loop`s return the same error
/// without running); [`CallHandle::fail`] writes it for an error the caller raises after its
/// loops (e.g. a merge that fails); [`CallHandle::finish`] ends a successful call without
/// one; dropping an unfinished handle writes the `cancelled` terminal row (the `CallGuard`).
/// At most one terminal row per call on every path.
pub struct CallHandle {
    inner: Arc<ScopeState>,
    ctx: Arc<CallContext>,
    guard: CallGuard,
    deadline: Option<Duration>,
    deadline_at: Option<tokio::time::Instant>,
    stream: bool,
    span: tracing::Span,
    ended: Option<GatewayError>,
}

impl fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandle")
            .field("logical_call_id", &self.ctx.logical_call_id())
            .field("attempts", &self.ctx.attempts())
            .field("deadline", &self.deadline)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl CallHandle {
    /// The call's one logical id.
    pub fn logical_call_id(&self) -> &str {
        self.ctx.logical_call_id()
    }

    /// Runs one governance loop of this call (one embedding batch) with `policy` and
    /// `settle`. `row_input` is this loop's input for its attempt rows (the batch
    /// texts); `None` uses the call-level input. The loop runs under the **remaining** part of
    /// the call's deadline; an expired deadline (also before the loop starts) is
    /// `CallDeadlineExceeded { scope, deadline_s = the whole deadline }` (the
    /// cancelled attempt is settled and its row written first).
    ///
    /// Errors: the loop's error; it also writes the call's terminal row and ends the call, so a
    /// later `run_loop` returns the same error without running.
    /// The returned [`Governed::stats`] is the call's snapshot so far.
    pub async fn run_loop<R: AttemptRunner>(
        &mut self,
        runner: &R,
        policy: LoopPolicy,
        settle: SettleMode,
        row_input: Option<Arc<dyn Any + Send + Sync>>,
    ) -> Result<Governed, GatewayError> {
        if let Some(error) = &self.ended {
            return Err(error.clone());
        }
        let gov = &*self.inner;
        let row_call = match row_input {
            Some(input) => {
                let base = self.ctx.row_call();
                let mut call = RowCall::new(
                    base.logical_call_id.clone(),
                    base.operation,
                    base.scope.clone(),
                );
                call.input = Some(input);
                Arc::new(call)
            }
            None => Arc::clone(self.ctx.row_call()),
        };
        let ctx = &self.ctx;
        let deadline_at = self.deadline_at;
        let stream = self.stream;
        let outcome = async {
            let env = LoopEnv {
                gov,
                ctx,
                row_call: &row_call,
                policy,
                settle,
                deadline_at,
                stream,
                commit: None,
            };
            let governed = Box::pin(run_loop(env, runner));
            let Some(at) = deadline_at else {
                return governed.await.map_err(Some);
            };
            if tokio::time::Instant::now() >= at {
                return Err(None); // E-7: no time left for this loop
            }
            match tokio::time::timeout_at(at, governed).await {
                Ok(result) => result.map_err(Some),
                Err(_) => {
                    // G-101: the loop is dropped; await this call's cleanup jobs.
                    gov.queue.wait_call_idle(ctx.logical_call_id()).await;
                    Err(None)
                }
            }
        }
        .instrument(self.span.clone())
        .await;
        match outcome {
            Ok(success) => Ok(Governed {
                result: success.result,
                source: success.source,
                call_id: success.call_id,
                latency_ms: success.latency_ms,
                stats: self.ctx.snapshot(),
            }),
            Err(error) => {
                let error = error.unwrap_or_else(|| {
                    self.ctx.attach_cause(
                        crate::deadline::CallDeadlineExceeded {
                            deadline: self.deadline.unwrap_or_default(),
                        }
                        .into_error(&gov.scope),
                    )
                });
                Err(self.fail(error).await)
            }
        }
    }

    /// Ends the call with `error` raised by the caller after its loops (e.g. batches that
    /// disagree on the dimension): attaches the call's cause and attempt count
    /// ([`CallContext::attach_cause`]), writes the terminal row inline unless one was
    /// already written, and disarms the guard. Returns the error to hand to the caller; later
    /// `run_loop`s return it too.
    pub async fn fail(&mut self, error: GatewayError) -> GatewayError {
        let error = self.ctx.attach_cause(error);
        emit_terminal_failure(&self.ctx, self.inner.sink.as_ref(), &error).await;
        self.guard.disarm();
        if self.ended.is_none() {
            self.ended = Some(error.clone());
        }
        error
    }

    /// Ends a successful call: disarms the guard (no terminal row) and returns the call's
    /// frozen statistics: one `logical_call_id`, the attempts of all loops, the
    /// summed generation, `total_latency_ms` since [`Governor::begin_call`].
    pub fn finish(mut self) -> CallStats {
        self.guard.disarm();
        self.ctx.snapshot()
    }

    /// Runs `step` — a response-cache read or write of this call — under the
    /// **remaining** part of the call's deadline.
    ///
    /// Errors: the call's earlier error if it already ended; `CallDeadlineExceeded` when the
    /// deadline expires first (the step is dropped, the call's terminal row is written and the
    /// call ends, as for a loop; CF-314).
    pub async fn within_deadline<F: Future>(&mut self, step: F) -> Result<F::Output, GatewayError> {
        if let Some(error) = &self.ended {
            return Err(error.clone());
        }
        let outcome = match self.deadline_at {
            None => Some(step.instrument(self.span.clone()).await),
            Some(at) if tokio::time::Instant::now() >= at => None,
            Some(at) => tokio::time::timeout_at(at, step.instrument(self.span.clone()))
                .await
                .ok(),
        };
        if let Some(value) = outcome {
            return Ok(value);
        }
        let gov = &*self.inner;
        gov.queue.wait_call_idle(self.ctx.logical_call_id()).await;
        let error = self.ctx.attach_cause(
            crate::deadline::CallDeadlineExceeded {
                deadline: self.deadline.unwrap_or_default(),
            }
            .into_error(&gov.scope),
        );
        Err(self.fail(error).await)
    }

    /// Ends a call served from the response cache: `hit` (already restored
    /// and rewritten by [`CacheCall::read`]) gets a fresh `call_id` and this call's statistics
    /// (attempts 0 unless a loop ran, a fresh `logical_call_id`, `total_latency_ms` = time on
    /// the cache path), and exactly one `cache_hit` row is emitted, after the snapshot.
    pub async fn finish_hit(mut self, mut hit: LlmResponse) -> LlmResponse {
        self.guard.disarm();
        hit.call_id = new_uuid_v4();
        hit.call_stats = Some(self.ctx.snapshot());
        let sink = &self.inner.sink;
        if sink.wants_rows() {
            sink.cache_hit(CacheHitRowFacts {
                call: Arc::clone(self.ctx.row_call()),
                call_id: hit.call_id.clone(),
                response: Box::new(hit.clone()),
            })
            .await;
        }
        hit
    }
}
