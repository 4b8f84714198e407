//! The `Governor`: the client minus wiring — the top layer of a governed call.
//!
//! Builds one scope's governance state (`crate::scope`'s `ScopeState`: sources, limiter,
//! breaker, pacer, cooldown memo, selector, clock, jitter, policies, the row sink and the cleanup
//! queue) with [`GovernorBuilder`], and owns the public boundary of every call: the closed check
//! (`ClientClosed`), the per-call deadline resolution (before the statistics boundary), the call
//! context and its `CallGuard`, the deadline wrapper, the retry loop, and the terminal row of a
//! failed call. `run_chat` / `run_embed` / `run_ocr` are the same loop with different
//! [`LoopPolicy`] and settlement. A call of several serial loops (an embedding call's
//! batches) opens one [`CallHandle`] (`handle.rs`) with [`Governor::begin_call`] and runs one
//! loop per batch in it: one context, one logical id, one deadline, at most one terminal row.
//! The per-call types ([`CallOptions`], [`Governed`], [`SuccessHook`]) are in `call.rs`.
//! The facade clients wrap it; issue-level tests in the core call it directly.
//!
//! Layering: `governor` → `retry_loop` → `hedge` → `leg` → `scope` → `admission`; nothing below
//! imports this module.
//!
//! Size: about 780 lines, over the ~600 the crate aims for, because the builder and the call
//! paths of `Governor` are one unit — every `run_*` path shares `open_call` and the private
//! `inner` state, and a child file holding half of `impl Governor` would import its parent
//! (a cycle between files). The parts that stand alone (per-call types, the call handle) are
//! child files.
//!
//! Tracing: `pgw.call` (`logical_call_id`, `scope`, `operation`) → `pgw.round` →
//! `pgw.attempt`; no content, no secrets.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use gateway_ports::{
    BackpressurePolicy, CallOperation, CircuitBreaker, Clock, ConfigError, GatewayError,
    LlmResponse, RateLimiter, RetryPolicy, SelectorKind, SourceConfig, WaitPolicy,
};
use tokio::sync::Notify;
use tracing::Instrument;

use crate::admission::{Admission, AdmissionParts, AdmissionPolicy, DEFAULT_MAX_WAITERS};
use crate::attempt::{AttemptRunner, SettleMode};
use crate::budget::RetryBudget;
use crate::cache::CacheCall;
use crate::call_context::{CallContext, CallGuard, emit_terminal_failure, new_uuid_v4};
use crate::cleanup::{CleanupQueue, CleanupReceiver, CleanupStats};
use crate::clock::TokioClock;
use crate::config::hedge::HedgeConfig;
use crate::deadline::{deadline_instant, resolve_call_deadline, with_deadline};
use crate::pacer::{AimdPacer, Pacer};
use crate::policy::ScopePolicy;
use crate::retry_loop::{LoopPolicy, run_loop};
use crate::rows::{CacheHitRowFacts, NoopRowSink, RowCall, RowSink};
use crate::scope::{LoopEnv, ScopeState, default_jitter};
use crate::select::{Selector, selector_for};

mod call;
mod handle;
#[cfg(test)]
mod tests;

pub use crate::scope::Jitter;
pub use call::{CallOptions, Governed, NoHook, SuccessHook, chat_response};
pub use handle::CallHandle;

/// How long `close()` waits for the cleanup queue to drain.
pub const CLOSE_DRAIN_BOUND: Duration = Duration::from_secs(30);

/// The governance core of one client scope. Cheap to clone (an `Arc` inside).
#[derive(Debug, Clone)]
pub struct Governor {
    inner: Arc<ScopeState>,
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
    selector_kind: Option<SelectorKind>,
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
            selector_kind: None,
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

    /// Takes every knob of a [`ScopePolicy`]: the selector kind (used unless a selector is
    /// injected), both wait policies, `max_waiters`, the call deadline, retry, backpressure,
    /// the global TPM, the breaker cooldown (the `CircuitOpen` hint fallback) and the hedge
    /// thresholds. The breaker and limits themselves belong to the injected ports, the stall
    /// threshold to the sources, the text cap to the row sink. Setters called afterwards override
    /// single knobs (the facade turns hedging off for non-chat scopes this way).
    ///
    /// Errors: the policy rules ([`ScopePolicy::validate`]), the deadline and hedge domains, with
    /// origins `ScopePolicy.<field>`. The checks against the sources (stage D) are the caller's,
    /// with [`ScopePolicy::check_hedge`].
    pub fn policy(mut self, policy: &ScopePolicy) -> Result<Self, ConfigError> {
        const AT: &str = "ScopePolicy.";
        policy.validate(AT)?;
        self.call_deadline = policy.call_deadline(&format!("{AT}call_deadline_s"))?;
        self.hedge = policy.hedge_config(AT)?;
        self.selector_kind = Some(policy.selector);
        self.retry = policy.retry;
        self.backpressure = policy.backpressure;
        self.admission.quota_full = policy.quota_full;
        self.admission.circuit_open = policy.circuit_open;
        self.admission.global_tpm = policy.global_limits.tpm;
        self.admission.breaker_cooldown_s = policy.breaker.cooldown_s;
        self.admission.max_waiters = usize::try_from(policy.max_waiters).unwrap_or(usize::MAX);
        Ok(self)
    }

    /// Injects the pacer (default `AimdPacer::for_sources`).
    pub fn pacer(mut self, pacer: Arc<dyn Pacer>) -> Self {
        self.pacer = Some(pacer);
        self
    }

    /// Injects the selector (default: the selector of the policy's kind, else `HealthAwareSelector`).
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
        let selector: Arc<dyn Selector> = self.selector.unwrap_or_else(|| {
            selector_for(self.selector_kind.unwrap_or_default(), Arc::clone(&clock))
        });
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
