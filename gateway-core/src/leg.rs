//! The leg layer: one attempt of a round, with its governance.
//!
//! Owns the attempt step ([`run_attempt`], 30 G-85 steps 1–8): register the attempt, arm the
//! guard, race the [`AttemptRunner`] against the leg's loser cancel, store the settlement before
//! the first await, write back quietly, emit the attempt row ([`write_attempt_row`]), then settle
//! and release. A leg ends as a [`LegResult`] carrying its [`LegDelta`] (the loop applies deltas
//! after adjudication — legs never share `&mut` loop state); a round ends as a [`RoundOutcome`],
//! and [`leg_outcome`] is the outcome of a leg that ran alone. [`LoopSuccess`] is the winning
//! attempt a loop returns.
//!
//! Layering: called by the retry loop's single-leg round and by the hedged round (`crate::hedge`);
//! reads the scope's state through [`LoopEnv`] (`crate::scope`); never imports either caller.

use std::sync::Arc;

use gateway_ports::{
    AttemptError, AttemptFailure, Category, CauseKind, ErrorOperation, FailureReason, GatewayError,
    SourceConfig,
};
use tracing::Instrument;

use crate::admission::Admitted;
use crate::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, SettleMode, TransportResult,
};
use crate::call_context::CallContext;
use crate::classify::failure_reason_of;
use crate::cleanup::{AttemptGuard, AttemptRowInfo};
use crate::rows::{AttemptRowOutcome, CancelLabel};
use crate::scope::{LoopEnv, ScopeState};

/// A successful loop: the winning attempt's result and provenance.
#[derive(Debug)]
#[non_exhaustive]
pub struct LoopSuccess {
    /// The judged result.
    pub result: Box<TransportResult>,
    /// The winning source.
    pub source: Arc<SourceConfig>,
    /// The winning attempt's `call_id`.
    pub call_id: String,
    /// Injected-clock ms from attempt start to the end of its bookkeeping.
    pub latency_ms: u64,
    /// Wall time of the winning transport: the generation sample is recorded by the
    /// round once the winner is known, never by a race loser.
    pub(crate) generation: std::time::Duration,
}

/// One leg's contribution to the loop state, applied by the loop after adjudication.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LegDelta {
    /// The leg's source.
    pub(crate) source: String,
    /// Its failure reason: written to `reasons[source]` and `attempt_fails[source]`.
    pub(crate) failure_reason: FailureReason,
}

/// The outcome of one round.
#[derive(Debug)]
pub(crate) enum RoundOutcome {
    /// A deliverable result.
    Success(LoopSuccess),
    /// An error that ends the call now (`RequestRejected`, `ResultInvalid`, a backend error).
    Propagate(GatewayError),
    /// The round failed; `failure` is the (combined) failure; `immediate` = switch
    /// without backoff (`SourceDead`).
    Failed {
        /// The round's failure (`Transient` or `SourceDead`).
        failure: AttemptError,
        /// `SourceDead`: continue without backoff.
        immediate: bool,
        /// Per-leg deltas.
        deltas: Vec<LegDelta>,
    },
}

/// The outcome of one leg after the attempt step.
#[derive(Debug)]
pub(crate) enum LegResult {
    /// Success.
    Success(LoopSuccess),
    /// A propagating error.
    Propagate(GatewayError),
    /// A `Transient` / `SourceDead` failure and its delta.
    Failed {
        /// The failure.
        failure: AttemptError,
        /// `SourceDead`?
        dead: bool,
        /// Delta for the loop.
        delta: LegDelta,
    },
    /// The leg was cancelled as a hedge loser.
    CancelledAsLoser,
}

/// The round outcome of one leg that ran alone (single-leg round, or a hedged round whose hedge
/// never launched): a success records its generation sample with `hedge_won = false`.
pub(crate) fn leg_outcome(ctx: &CallContext, leg: LegResult) -> RoundOutcome {
    match leg {
        LegResult::Success(s) => {
            ctx.record_generation(s.generation, s.result.stall_ms, s.result.stall_count, false);
            RoundOutcome::Success(s)
        }
        LegResult::Propagate(e) => RoundOutcome::Propagate(e),
        LegResult::Failed {
            failure,
            dead,
            delta,
        } => RoundOutcome::Failed {
            failure,
            immediate: dead,
            deltas: vec![delta],
        },
        // A single-attempt round never cancels its leg; a runner that reports a loser cancel
        // anyway violated its contract: count it as a transient failure without a delta.
        LegResult::CancelledAsLoser => RoundOutcome::Failed {
            failure: AttemptError::transient(AttemptFailure::new(
                "attempt reported a loser cancel outside a hedged round",
                ErrorOperation::Chat,
            )),
            immediate: false,
            deltas: Vec::new(),
        },
    }
}

fn ms_since(gov: &ScopeState, start: std::time::Duration) -> u64 {
    u64::try_from(gov.clock.monotonic().saturating_sub(start).as_millis()).unwrap_or(u64::MAX)
}

/// The attempt step (30 G-85 steps 1–8) for one leg.
pub(crate) async fn run_attempt<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
    admitted: Admitted,
    signals: Option<LegSignals>,
    control: LegControl,
    hedge_leg: bool,
) -> LegResult {
    let gov = env.gov;
    let Admitted {
        source,
        call_id,
        mut guard,
    } = admitted;
    let name: &str = &source.name;
    // Step 1: attempt start, registration before the transport is invoked. The same reading
    // starts the generation wall time (60 H-60): nothing is awaited in between.
    let started = gov.clock.monotonic();
    let attempt = env.ctx.register_attempt();
    // Step 2: arm the guard's attempt phase.
    let info = AttemptRowInfo {
        sink: Arc::clone(&gov.sink),
        call: Arc::clone(env.row_call),
        call_id: call_id.clone(),
        source: Arc::clone(&source),
        attempt,
        hedge_leg,
        started,
        clock: Arc::clone(&gov.clock),
    };
    guard.register(info, control.loser_flag());
    let est = source.effective_est_tokens();
    if env.settle == SettleMode::Zero {
        guard.set_settlement(0); // S6: OCR has no tokens
    }
    let span = tracing::info_span!(
        "pgw.attempt",
        call_id = %call_id,
        source = %name,
        attempt,
        hedge_leg,
        outcome = tracing::field::Empty,
        reason_code = tracing::field::Empty,
        http_status = tracing::field::Empty,
        ttft_ms = tracing::field::Empty,
    );
    let ctx = AttemptCtx {
        call_id: call_id.clone(),
        logical_call_id: env.ctx.logical_call_id().to_owned(),
        source: Arc::clone(&source),
        attempt,
        est_tokens: est,
        deadline_remaining: env
            .deadline_at
            .map(|at| at.saturating_duration_since(tokio::time::Instant::now())),
        operation: env.ctx.row_call().operation,
        hedge_leg,
    };
    // Step 3: invoke the runner, raced against a loser cancel.
    let gen_started = started;
    let outcome = {
        let run = runner
            .run(ctx, signals, control.clone())
            .instrument(span.clone());
        tokio::select! {
            biased;
            out = run => out,
            () = control.cancelled() => AttemptOutcome::CancelledAsLoser,
        }
    };
    let breaker = &*gov.breaker;
    match outcome {
        AttemptOutcome::Success(result) => {
            // Step 4, synchronously first (G-86).
            let wall = gov.clock.monotonic().saturating_sub(gen_started);
            guard.set_settlement(result.settle_tokens(env.settle, est));
            span.record("outcome", "success");
            if let Some(t) = result.ttft_ms {
                span.record("ttft_ms", t);
            }
            gov.selector.feed_outcome(name, true);
            gov.pacer.on_success(name);
            if let Err(e) = breaker.record_success(guard.decision(), true).await {
                warn_quiet(name, "record_success", &e);
            } else {
                guard.probe_resolved();
            }
            if let Err(e) = gov.limiter.mark_progress().await {
                warn_quiet(name, "mark_progress", &e);
            }
            write_attempt_row(&mut guard, || AttemptRowOutcome::Success(result.clone())).await;
            let latency_ms = ms_since(gov, started);
            guard.finish().await;
            LegResult::Success(LoopSuccess {
                result,
                source,
                call_id,
                latency_ms,
                generation: wall,
            })
        }
        AttemptOutcome::Failed(err) => {
            span.record("outcome", err.type_name());
            if let Some(rc) = err.reason_code() {
                span.record("reason_code", rc.as_str());
            }
            if let Some(s) = err.http_status() {
                span.record("http_status", s);
            }
            match err.category() {
                Category::Transient | Category::SourceDead => {
                    // Step 7, synchronously before the first await (G-86).
                    let dead = err.category() == Category::SourceDead;
                    let reason = failure_reason_of(&err).unwrap_or(FailureReason::NetworkError);
                    // A request that never reached the server (connect refused or timed
                    // out, no pooled connection) used no tokens: settle 0, not the estimate.
                    let never_sent = never_reached_server(&err);
                    guard.set_settlement(if dead || never_sent || env.settle == SettleMode::Zero {
                        0
                    } else {
                        est
                    });
                    guard.set_failure_row(err.clone());
                    gov.selector.feed_outcome(name, false);
                    if reason == FailureReason::RateLimited {
                        gov.pacer.on_backpressure(name);
                    }
                    if let Err(e) = breaker.record_failure(guard.decision(), reason, dead).await {
                        warn_quiet(name, "record_failure", &e);
                    } else {
                        guard.probe_resolved();
                    }
                    write_attempt_row(&mut guard, || AttemptRowOutcome::Failed(err.clone())).await;
                    guard.finish().await;
                    LegResult::Failed {
                        failure: err,
                        dead,
                        delta: LegDelta {
                            source: name.to_owned(),
                            failure_reason: reason,
                        },
                    }
                }
                Category::RequestRejected | Category::ResultInvalid => {
                    // Steps 5/6: settle 0 first; neutral breaker success (G-71).
                    guard.set_settlement(0);
                    guard.set_failure_row(err.clone());
                    if let Err(e) = breaker.record_success(guard.decision(), false).await {
                        warn_quiet(name, "record_success", &e);
                    } else {
                        guard.probe_resolved();
                    }
                    write_attempt_row(&mut guard, || AttemptRowOutcome::Failed(err.clone())).await;
                    guard.finish().await;
                    LegResult::Propagate(GatewayError::from_attempt(&gov.scope, err))
                }
            }
        }
        AttemptOutcome::CancelledAsLoser => {
            // S3 inline — settle est, release the probe, no record_failure, no health.
            span.record("outcome", CancelLabel::HedgeCancelled.as_str());
            if env.settle != SettleMode::Zero {
                guard.set_settlement(est);
            }
            guard.release_probe().await;
            write_attempt_row(&mut guard, || {
                AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled)
            })
            .await;
            guard.finish().await;
            LegResult::CancelledAsLoser
        }
    }
}

/// Writes the registered attempt's row inline and marks it written. The outcome is
/// only built when the sink keeps rows (`NoopRowSink` gets no facts, no clone).
async fn write_attempt_row(guard: &mut AttemptGuard, outcome: impl FnOnce() -> AttemptRowOutcome) {
    if let Some(info) = guard.row_info()
        && info.sink.wants_rows()
    {
        info.sink.attempt(info.facts(outcome())).await;
    }
    guard.row_written();
}

fn warn_quiet(source: &str, op: &'static str, err: &dyn std::fmt::Display) {
    tracing::warn!(
        code = "governance.writeback_failed",
        source = source,
        op,
        "governance write-back degraded (not propagated): {err}"
    );
}

/// Did the attempt fail before its request could reach the server (connect refused or timed
/// out, no pooled connection)? Such an attempt used no tokens, so its TPM reservation settles
/// at 0 instead of the estimate.
fn never_reached_server(err: &AttemptError) -> bool {
    err.failure().cause.is_some_and(|c| {
        matches!(
            c,
            CauseKind::ConnectError | CauseKind::ConnectTimeout | CauseKind::PoolTimeout
        )
    })
}
