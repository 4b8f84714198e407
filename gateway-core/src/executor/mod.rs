//! The production attempt executor: [`ChatExecutor`] drives a `ChatTransport` for one
//! attempt and turns its wire facts into a judged [`AttemptOutcome`].
//!
//! Owns, per attempt (all state fresh per attempt, never shared):
//! - the request body ([`build_chat_body`]) and the `WireRequest`;
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

mod timing;

pub use timing::{Budgets, stall_from_times};

use std::fmt;
use std::sync::Arc;

use futures_util::StreamExt as _;
use gateway_ports::{
    AttemptFailure, Category, ChatRequest, ChatTransport, ChunkJson, Clock, Endpoint,
    ErrorOperation, JsonObject, ReasonCode, ResponseMode, StreamEnd, WireEvent, WireEventStream,
    WireRequest, WireResponse, is_json_content_type,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::accumulate::{
    AccumulateError, AccumulateOptions, Accumulated, Accumulator, DialectWarning, WarningThrottle,
    parse_non_stream_body, parse_non_stream_value,
};
use crate::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use crate::classify::{
    Classification, ClassifyContext, LivenessKind, classify_error_event, classify_frame_too_large,
    classify_liveness_timeout, classify_read_error, classify_wire_failure,
};
use crate::clock::TokioClock;
use crate::effort::{ContradictionThrottle, plan_attempt};
use crate::redact::{ScrubOptions, scrubbed_summary};
use crate::request::build_chat_body_with;
use crate::stream_call::{CommitGate, StreamDelta};
use crate::thinking::ProviderProfile;
use crate::thinking::{ProviderRegistry, observe_thinking};
use crate::verdict::{AttemptFacts, StreamFacts, StreamTerminal, Verdict, judge_attempt};

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
        Self {
            transport,
            request,
            options: ExecutorOptions::default(),
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
        let body = build_chat_body_with(&source, &self.request, stream, fragment);
        let wire = WireRequest {
            source: Arc::clone(&source),
            call_id: ctx.call_id.clone(),
            endpoint: Endpoint::ChatCompletions,
            body,
            stream,
        };
        let judge = Judge::new(self, &ctx);
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
                judge
                    .stream(events, watchdogs, progress, signals.as_ref(), &control)
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

/// How one stream stopped being read.
enum Stop {
    /// `Done` or `End`: go to post-stream assembly.
    Ended(StreamTerminal),
    /// A fact failed the attempt (S-33 "stop").
    Failed(Classification),
    /// A loser cancel while the transport was pending.
    Cancelled,
}

/// The per-attempt judging context: classification context, accumulator options, warnings.
struct Judge<'a> {
    source_name: &'a str,
    source_key: Option<&'a str>,
    source: &'a gateway_ports::SourceConfig,
    redact_ips: bool,
    wall_now: std::time::SystemTime,
    mode: ResponseMode,
    missing_done: gateway_ports::MissingDone,
    stall_threshold_ms: u32,
    acc_options: AccumulateOptions,
    warnings: &'a WarningThrottle,
    gate: Option<&'a CommitGate>,
    call_id: &'a str,
    hedge_leg: bool,
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

    fn scrub(&self) -> ScrubOptions<'a> {
        ScrubOptions {
            source_key: self.source_key,
            redact_ips: self.redact_ips,
            source: Some(self.source),
        }
    }

    fn cctx(&self) -> ClassifyContext<'a> {
        ClassifyContext::new(self.source_name, ErrorOperation::Chat, self.wall_now)
            .with_scrub(self.scrub())
    }

    fn fail(&self, classification: Classification) -> AttemptOutcome {
        AttemptOutcome::Failed(classification.into_error())
    }

    fn liveness(&self, kind: LivenessKind) -> Classification {
        classify_liveness_timeout(kind, &self.cctx())
    }

    fn warn(&self, warning: &DialectWarning) {
        self.warnings.emit(self.source_name, warning);
    }

    /// `Transient(malformed_json)` for a dispatched event that is not JSON; the
    /// message gives the length only, never the payload.
    fn malformed(&self, len: usize) -> Classification {
        let mut failure = AttemptFailure::new(
            format!(
                "{}: malformed SSE frame (malformed_json): {len} bytes of data are not JSON",
                self.source_name
            ),
            ErrorOperation::Chat,
        );
        failure.source_name = Some(self.source_name.to_owned());
        failure.reason_code = Some(ReasonCode::MalformedJson);
        Classification::new(Category::Transient, failure)
    }

    /// The caller-facing delta of one merged frame.
    fn stream_delta(&self, delta: &crate::accumulate::ChatDelta, chunk: &ChunkJson) -> StreamDelta {
        let mut out = StreamDelta::content(delta.content.clone());
        if self.gate.is_some_and(CommitGate::forwards_reasoning) {
            out.reasoning.push_str(&delta.reasoning_content);
            out.reasoning.push_str(&delta.reasoning);
        }
        if self.mode == ResponseMode::OpenAi {
            let raw = chunk.to_value();
            out.tool_calls = StreamDelta::tool_calls_of(&raw);
            out.raw = Some(raw);
        }
        out
    }

    /// Reads the event stream under the watchdogs, then assembles and judges it.
    async fn stream(
        &self,
        mut events: WireEventStream,
        watchdogs: Watchdogs,
        mut progress: ProgressClock,
        signals: Option<&LegSignals>,
        control: &LegControl,
    ) -> AttemptOutcome {
        let mut watchdogs = watchdogs;
        let mut acc = Accumulator::new(self.mode, self.acc_options.clone());
        let mut excerpt: Option<String> = None;
        let mut any_fragment = false;
        // One timer for the whole stream. A progress event moves the true deadline (the
        // inter-token interval restarts), but the timer is re-armed only when the new deadline
        // is *earlier* than the armed one; a later one is picked up lazily when the armed timer
        // fires (then the true deadline is recomputed). Timer-wheel work is thus per budget
        // window, not per frame.
        let mut armed = watchdogs.next(None);
        let timer = tokio::time::sleep_until(armed.map_or_else(Instant::now, |(at, _)| at));
        tokio::pin!(timer);
        // One cancellation waiter for the whole stream (not one registration per frame).
        let cancelled = control.cancelled();
        tokio::pin!(cancelled);
        let stop = loop {
            let event = tokio::select! {
                biased;
                () = &mut cancelled => break Stop::Cancelled,
                event = events.next() => event,
                () = &mut timer, if armed.is_some() => {
                    match watchdogs.next(progress.last_runtime()) {
                        Some((at, kind)) if at > Instant::now() => {
                            armed = Some((at, kind));
                            timer.as_mut().reset(at);
                            continue;
                        }
                        Some((_, kind)) => break Stop::Failed(self.liveness(kind)),
                        None => {
                            armed = None;
                            continue;
                        }
                    }
                }
            };
            // A stream that ends without a terminal event breaks the port contract
            // (CT-CHAT-06); it is judged as a clean end (chosen).
            let Some(event) = event else {
                break Stop::Ended(StreamTerminal::End);
            };
            match event {
                WireEvent::Chunk(chunk) => match acc.push_json(&chunk) {
                    Ok(facts) => {
                        let delta = &facts.delta;
                        if !(delta.content.is_empty()
                            && delta.reasoning_content.is_empty()
                            && delta.reasoning.is_empty())
                        {
                            any_fragment = true;
                        }
                        if facts.is_progress() {
                            progress.progress(signals);
                            let next = watchdogs.next(progress.last_runtime());
                            let earlier = match (next, armed) {
                                (Some((at, _)), Some((armed_at, _))) => at < armed_at,
                                (Some(_), None) => true,
                                (None, _) => false,
                            };
                            if let (true, Some((at, _))) = (earlier, next) {
                                armed = next;
                                timer.as_mut().reset(at);
                            }
                        }
                        if let Some(gate) = self.gate {
                            let delta = self.stream_delta(&facts.delta, &chunk);
                            if !delta.is_empty() {
                                // Back-pressure (D32): a full buffer pauses the upstream read;
                                // the wait is not upstream time, so the watchdogs move with it.
                                let waited = Instant::now();
                                gate.forward(self.call_id, self.hedge_leg, delta).await;
                                let blocked = waited.elapsed();
                                if !blocked.is_zero() {
                                    watchdogs.pause(blocked);
                                    progress.pause(blocked);
                                }
                            }
                        }
                    }
                    Err(error) => break Stop::Failed(error.classify(&self.cctx())),
                },
                WireEvent::Done => break Stop::Ended(StreamTerminal::Done),
                WireEvent::End => break Stop::Ended(StreamTerminal::End),
                WireEvent::KeepAlive(_) => {}
                WireEvent::Notice(notice) => acc.push_notice(notice),
                WireEvent::Unrecognized { excerpt: text } => {
                    excerpt.get_or_insert(text);
                }
                WireEvent::ErrorEvent { data } => {
                    break Stop::Failed(classify_error_event(&data, &self.cctx()));
                }
                WireEvent::MalformedFrame { len } => break Stop::Failed(self.malformed(len)),
                WireEvent::FrameTooLarge { limit } => {
                    break Stop::Failed(classify_frame_too_large(limit, &self.cctx()));
                }
                WireEvent::ReadError(fault) => {
                    break Stop::Failed(classify_read_error(&fault, &self.cctx()));
                }
            }
        };
        // S-10: the stream is released before judging (and on every early return).
        drop(events);
        let terminal = match stop {
            Stop::Ended(terminal) => terminal,
            Stop::Failed(classification) => return self.fail(classification),
            Stop::Cancelled => return AttemptOutcome::CancelledAsLoser,
        };
        let accumulated = acc.finish();
        let facts = StreamFacts {
            terminal,
            usage_after_finish: accumulated.usage_after_finish,
            any_fragment,
        };
        let (ttft_ms, max_inter_token_ms) = progress.ttft_and_gap();
        let (stall_ms, stall_count) = stall_from_times(progress.times(), self.stall_threshold_ms);
        match self.judge(&accumulated, Some(facts)) {
            Ok(mut result) => {
                if let Some(gate) = self.gate {
                    gate.commit_on_success(self.call_id, self.hedge_leg).await;
                }
                result.ttft_ms = ttft_ms;
                result.max_inter_token_ms = max_inter_token_ms;
                result.stall_ms = stall_ms;
                result.stall_count = stall_count;
                AttemptOutcome::Success(result)
            }
            Err(mut classification) => {
                // S-97: an unrecognized excerpt explains a zero-output or truncated stream.
                if let Some(text) = excerpt
                    && matches!(
                        classification.reason_code(),
                        Some(
                            ReasonCode::EarlyEof
                                | ReasonCode::MissingDone
                                | ReasonCode::EmptyCompletion
                        )
                    )
                {
                    classification.failure.body_text = Some(scrubbed_summary(&text, &self.scrub()));
                }
                self.fail(classification)
            }
        }
    }

    /// A JSON body answering a streamed request: one event then `End`, under the
    /// total watchdog only, judged as a non-stream body.
    async fn json_body(
        &self,
        mut events: WireEventStream,
        watchdogs: Watchdogs,
        control: &LegControl,
    ) -> AttemptOutcome {
        let mut body: Result<Option<ChunkJson>, Classification> = Ok(None);
        loop {
            let event = tokio::select! {
                biased;
                () = control.cancelled() => return AttemptOutcome::CancelledAsLoser,
                event = events.next() => event,
                kind = expiry(watchdogs.next(None)) => return self.fail(self.liveness(kind)),
            };
            match event {
                None | Some(WireEvent::End | WireEvent::Done) => break,
                Some(WireEvent::Chunk(value)) => {
                    if matches!(body, Ok(None)) {
                        body = Ok(Some(value));
                    }
                }
                Some(WireEvent::MalformedFrame { .. }) => {
                    body = Err(AccumulateError::InvalidJson.classify(&self.cctx()));
                }
                Some(WireEvent::FrameTooLarge { limit }) => {
                    body = Err(classify_frame_too_large(limit, &self.cctx()));
                    break;
                }
                Some(WireEvent::ReadError(fault)) => {
                    body = Err(classify_read_error(&fault, &self.cctx()));
                    break;
                }
                Some(WireEvent::ErrorEvent { data }) => {
                    body = Err(classify_error_event(&data, &self.cctx()));
                }
                Some(
                    WireEvent::KeepAlive(_) | WireEvent::Notice(_) | WireEvent::Unrecognized { .. },
                ) => {}
            }
        }
        drop(events);
        match body {
            Err(classification) => self.fail(classification),
            Ok(None) => self.body(Err(AccumulateError::EmptyResponse)),
            Ok(Some(value)) => self.body(parse_non_stream_value(
                &value.to_value(),
                self.mode,
                &self.acc_options,
            )),
        }
    }

    /// A non-stream body: no stream facts, no timing, no stall.
    fn body(&self, parsed: Result<Accumulated, AccumulateError>) -> AttemptOutcome {
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
    fn judge(
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
