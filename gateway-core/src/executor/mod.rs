//! The production attempt executor: [`ChatExecutor`] drives a `ChatTransport` for one
//! attempt and turns its wire facts into a judged [`AttemptOutcome`].
//!
//! Owns, per attempt (all state fresh per attempt, never shared):
//! - the request body ([`serialize_chat_body_with`],
//!   the JSON text sent verbatim) and the `WireRequest`;
//! - `started` and the runtime watchdogs: TTFT and total while the transport is
//!   connecting, then TTFT / inter-token / total over the event stream, total
//!   only for a non-stream body and for a JSON body answering a streamed request;
//! - frame admission and accumulation ([`Accumulator`]), progress
//!   published on the leg's `watch<u64>` counter, `ttft_ms` / `max_inter_token_ms`
//!   and stall metering ([`stall_from_times`]);
//! - cooperative loser cancellation while the transport is pending: the stream is
//!   dropped and the attempt returns [`AttemptOutcome::CancelledAsLoser`];
//! - post-stream assembly, the non-stream body, the verdict
//!   ([`judge_attempt`], 50) and the failure of each fact through `crate::classify`;
//! - dialect warnings through the client's [`WarningThrottle`] (R-27 once per source).
//!
//! Governance (admission, settlement, write-backs, rows, the generation sample of 60 H-61)
//! stays in the core's attempt step (`retry_loop`), which wraps every runner alike.
//! Measuring uses the injected `Clock`; waiting uses `tokio::time`.
//!
//! Files: this one (options, the executor, one attempt up to the response), `stream` (reading
//! the event stream), `judge` (the judging context and post-stream assembly), `timing` (budgets
//! and watchdogs).
//!
//! [`Accumulator`]: crate::accumulate::Accumulator
//! [`judge_attempt`]: crate::verdict::judge_attempt

mod judge;
mod stream;
mod timing;

pub use timing::{Budgets, stall_from_times};

use std::fmt;
use std::sync::Arc;

use gateway_ports::{
    ChatRequest, ChatTransport, Clock, Endpoint, JsonObject, RequestBody, WireRequest,
    WireResponse, is_json_content_type,
};
use tokio::time::Instant;

use crate::accumulate::{
    AccumulateOptions, DialectWarning, WarningThrottle, parse_non_stream_body,
};
use crate::attempt::{AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals};
use crate::classify::classify_wire_failure;
use crate::clock::TokioClock;
use crate::effort::{ContradictionThrottle, plan_attempt};
use crate::request::serialize_chat_body_with;
use crate::stream_call::CommitGate;
use crate::thinking::ProviderProfile;
use crate::thinking::ProviderRegistry;

use judge::Judge;
use timing::{ProgressClock, Watchdogs, expiry};

/// Client-wide options of the executor (shared by every call of one client).
#[derive(Clone)]
#[non_exhaustive]
pub struct ExecutorOptions {
    /// The clock every measured instant is read from; default [`TokioClock`].
    pub clock: Arc<dyn Clock>,
    /// The client's dialect-warning throttle (one per client).
    pub warnings: Arc<WarningThrottle>,
    /// `PGW_REDACT_IPS`: redact IP addresses in summaries; default `true`.
    pub redact_ips: bool,
    /// The scope label, for the keys a reasoning-effort refusal names; `None` renders
    /// `{SCOPE}`.
    pub scope: Option<String>,
    /// The client's reasoning contradiction throttle (one per client).
    pub contradictions: Arc<ContradictionThrottle>,
    /// The provider profiles (capability table) the reasoning decision and the think-tag
    /// stripping read; default the built-in registry. One per client, like the throttles, so it
    /// travels with the other client-wide options instead of beside them.
    pub profiles: Arc<ProviderRegistry>,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        Self {
            clock: Arc::new(TokioClock::new()),
            warnings: Arc::new(WarningThrottle::new()),
            redact_ips: true,
            scope: None,
            contradictions: Arc::new(ContradictionThrottle::new()),
            profiles: Arc::clone(crate::thinking::shared_builtin_registry()),
        }
    }
}

impl fmt::Debug for ExecutorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecutorOptions")
            .field("warnings", &self.warnings.len())
            .field("redact_ips", &self.redact_ips)
            .finish_non_exhaustive()
    }
}

impl ExecutorOptions {
    /// Options measuring with this clock (tests inject a `FakeClock` or share the governor's).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Options logging through this warning throttle.
    pub fn with_warnings(mut self, warnings: Arc<WarningThrottle>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Options reading this provider registry (a client's registry with its registered
    /// profiles; the default is the built-in one).
    pub fn with_profiles(mut self, profiles: Arc<ProviderRegistry>) -> Self {
        self.profiles = profiles;
        self
    }
}

/// The production [`AttemptRunner`] of one chat call: the transport, the call's
/// request and the client options (provider profiles included). Built once per call by the
/// facade (cheap: every field is an `Arc`) and borrowed by `Governor::run_chat`.
///
/// Each attempt: build the body → send → judge (see the module docs). The future it
/// returns is `Send`, spawns nothing, and leaves nothing behind when dropped.
#[derive(Clone)]
pub struct ChatExecutor {
    transport: Arc<dyn ChatTransport>,
    request: Arc<ChatRequest>,
    options: ExecutorOptions,
    gate: Option<Arc<CommitGate>>,
}

impl fmt::Debug for ChatExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatExecutor")
            .field("stream", &self.request.stream)
            .field("response_mode", &self.request.response_mode)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ChatExecutor {
    /// An executor of `request` over `transport`, with the default options (the built-in
    /// provider profiles).
    pub fn new(transport: Arc<dyn ChatTransport>, request: Arc<ChatRequest>) -> Self {
        Self::with_client_options(transport, request, ExecutorOptions::default())
    }

    /// An executor of `request` over `transport` with the client's `options` — what a client
    /// uses per call: unlike `new(..).with_options(..)` it builds no default options (a clock,
    /// two throttles) only to drop them.
    pub fn with_client_options(
        transport: Arc<dyn ChatTransport>,
        request: Arc<ChatRequest>,
        options: ExecutorOptions,
    ) -> Self {
        Self {
            transport,
            request,
            options,
            gate: None,
        }
    }

    /// The same executor streaming every merged frame to the caller through `gate`
    /// (`crate::stream_call`).
    pub fn with_commit_gate(mut self, gate: Arc<CommitGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The same executor with these options (clock, throttles, scope, provider registry).
    pub fn with_options(mut self, options: ExecutorOptions) -> Self {
        self.options = options;
        self
    }

    /// The request this executor sends.
    pub fn request(&self) -> &ChatRequest {
        &self.request
    }

    /// One attempt: the reasoning decision for this source (a refusal is
    /// `RequestRejected` before any byte), the exchange, then `applied_effort` and the
    /// contradiction check on a delivered result.
    async fn attempt(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> AttemptOutcome {
        let source = Arc::clone(&ctx.source);
        let plain;
        let profile = match self.options.profiles.get(&source.provider) {
            Some(profile) => profile,
            None => {
                plain = ProviderProfile::plain(source.provider.as_str());
                &plain
            }
        };
        let directive = match plan_attempt(
            &self.request,
            &source,
            profile,
            self.options.scope.as_deref(),
        ) {
            Ok(directive) => directive,
            Err(error) => return AttemptOutcome::Failed(error),
        };
        let mut outcome = self
            .exchange(ctx, signals, control, &directive.fragment)
            .await;
        if let AttemptOutcome::Success(result) = &mut outcome {
            result.applied_effort = directive.applied;
            self.options.contradictions.check(
                &source.name,
                &source.model,
                directive.applied,
                result.thinking_observation,
            );
        }
        outcome
    }

    async fn exchange(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
        fragment: &JsonObject,
    ) -> AttemptOutcome {
        let source = Arc::clone(&ctx.source);
        let stream = self.request.stream;
        // the body is serialised once, here, and sent verbatim.
        let body = serialize_chat_body_with(&source, &self.request, stream, fragment);
        let wire = WireRequest {
            source: Arc::clone(&source),
            call_id: ctx.call_id.clone(),
            endpoint: Endpoint::ChatCompletions,
            body: RequestBody::from_json_bytes(body),
            stream,
        };
        let mut judge = Judge::new(self, &ctx);
        let _ended = GateRelease(judge.gate, judge.call_id);
        let budgets = Budgets::of(&source);
        // S-81 / H-60: `started` immediately before the transport is invoked.
        let started = self.options.clock.monotonic();
        let t0 = Instant::now();
        let watchdogs = Watchdogs::start(budgets, t0, stream);

        let response = tokio::select! {
            biased;
            () = control.cancelled() => return AttemptOutcome::CancelledAsLoser,
            response = self.transport.send(wire) => response,
            kind = expiry(watchdogs.next(None)) => return judge.fail(judge.liveness(kind)),
        };
        match response {
            Err(failure) => judge.fail(classify_wire_failure(&failure, &judge.cctx())),
            Ok(WireResponse::Body(body)) => judge.body(parse_non_stream_body(
                &body.bytes,
                judge.mode,
                &judge.acc_options,
            )),
            Ok(WireResponse::Events {
                content_type,
                events,
                ..
            }) if stream && content_type.as_deref().is_some_and(is_json_content_type) => {
                judge.warn(&DialectWarning::JsonBodyOnStream);
                judge
                    .json_body(events, watchdogs.total_only(), &control)
                    .await
            }
            Ok(WireResponse::Events { events, .. }) => {
                let progress = ProgressClock::new(Arc::clone(&self.options.clock), started);
                // The stream's accumulator takes the options (no copy of their strings).
                let options = std::mem::replace(
                    &mut judge.acc_options,
                    AccumulateOptions::new(String::new(), String::new()),
                );
                judge
                    .stream(
                        options,
                        events,
                        watchdogs,
                        progress,
                        signals.as_ref(),
                        &control,
                    )
                    .await
            }
        }
    }
}

impl AttemptRunner for ChatExecutor {
    fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        control: LegControl,
    ) -> impl Future<Output = AttemptOutcome> + Send {
        self.attempt(ctx, signals, control)
    }
}

/// Forgets an attempt's uncommitted frames when the attempt ends, however it ends.
struct GateRelease<'a>(Option<&'a CommitGate>, &'a str);

impl Drop for GateRelease<'_> {
    fn drop(&mut self) {
        if let Some(gate) = self.0 {
            gate.attempt_ended(self.1);
        }
    }
}

impl<'a> Judge<'a> {
    fn new(executor: &'a ChatExecutor, ctx: &'a AttemptCtx) -> Self {
        let source = ctx.source.as_ref();
        let mut acc_options = AccumulateOptions::new(ctx.call_id.clone(), source.name.clone());
        acc_options.max_response_bytes =
            usize::try_from(source.max_response_bytes).unwrap_or(usize::MAX);
        acc_options.inline_think_tags = executor
            .options
            .profiles
            .inline_think_tags(&source.provider);
        Self {
            source_name: &source.name,
            source_key: source.api_key.as_ref().map(|k| k.expose_secret().as_str()),
            source,
            redact_ips: executor.options.redact_ips,
            wall_now: executor.options.clock.wall(),
            mode: executor.request.response_mode,
            missing_done: source.missing_done,
            stall_threshold_ms: source.stall_threshold_ms,
            acc_options,
            warnings: &executor.options.warnings,
            gate: executor.gate.as_deref(),
            call_id: &ctx.call_id,
            hedge_leg: ctx.hedge_leg,
        }
    }
}
