//! The hedged round: the first-token hedge and the mid-stream stall hedge (60; README D1;
//! 05 R-6).
//!
//! Owns
//! - the pure failure combination of a round whose legs both failed, [`combine_failures`];
//! - the trigger window and the hedged round itself (crate-internal; the retry loop's
//!   `run_round` hands a round to it when the scope's [`HedgeConfig`] gate says so).
//!
//! The configuration — [`HedgeConfig`] and stage D of the assembly guards
//! ([`check_hedge_assembly`], [`non_chat_hedge_warning`]) — lives beside the other assembly
//! guards in `crate::config::hedge`, and is re-exported here.
//!
//! Why a round of its own and not in the loop: the loop only sees one `RoundOutcome` per round.
//! The orchestrator owns the primary's progress receiver, the two-phase trigger window
//! (on runtime timers only), at most one trigger per round reaching admission,
//! the hedge pick with the primary's source excluded and no `on_no_runnable` (H-25..H-28,
//! G-84), the phase-3.5 release, and the adjudication of the two legs. Both
//! leg futures are polled inline in one biased `select!` loop, never spawned; the loser is
//! cancelled cooperatively through its [`LegControl`] and polled until it has run its own
//! cleanup. Each leg returns its `LegDelta`; the loop applies them after adjudication.
//! Dropping the round (external cancellation, the call deadline) drops both leg futures;
//! their guards label the rows from the loser flag.
//!
//! Layering: called by `crate::retry_loop`; runs legs through `crate::leg` and reads the scope
//! through `crate::scope`; never imports the loop.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use gateway_ports::{AttemptError, AttemptFailure, ErrorOperation, FailureReason};
use tokio::sync::watch;

use crate::admission::{Admitted, Pick};
use crate::attempt::{AttemptRunner, LegControl, LegSignals};
use crate::call_context::CallContext;
use crate::classify::failure_reason_of;
use crate::leg::{LegDelta, LegResult, LoopSuccess, RoundOutcome, leg_outcome, run_attempt};
use crate::scope::LoopEnv;

pub use crate::config::hedge::{
    HedgeAssembly, HedgeAssemblyInput, HedgeConfig, MAX_EXTRA_LIMIT, check_hedge_assembly,
    non_chat_hedge_warning,
};

// ---------------------------------------------------------------------------------------------
// Adjudication helpers
// ---------------------------------------------------------------------------------------------

/// A leg of a hedged round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HedgeSide {
    /// The primary leg (the round's pick).
    Primary,
    /// The hedge leg (the pick with the primary's source excluded).
    Hedge,
}

/// `combine_failures(primary, hedge)`: the failure a round whose two legs
/// both failed retryably reports to the loop — the hedge's iff the primary's failure reason is
/// `rate_limited` and the hedge's is not, else the primary's. So any non-429 failure wins (the
/// round consumes one unit of budget and gets no stall refund), two 429s make a rate-limited
/// (budget-free, refunded) round, and two failures of the same kind keep the primary's (its
/// Retry-After hint and its `SourceDead` switch).
pub fn combine_failures(primary: &AttemptError, hedge: &AttemptError) -> HedgeSide {
    let limited = |e: &AttemptError| failure_reason_of(e) == Some(FailureReason::RateLimited);
    if limited(primary) && !limited(hedge) {
        HedgeSide::Hedge
    } else {
        HedgeSide::Primary
    }
}

// ---------------------------------------------------------------------------------------------
// The trigger window (60 §4; 05 R-12)
// ---------------------------------------------------------------------------------------------

/// Resolves once the primary reported its first progress chunk (`seq > 0`); never resolves if
/// the runner dropped its signal without one (the transport finished: nothing to hedge).
async fn first_progress(rx: &mut watch::Receiver<u64>) {
    let closed = rx.wait_for(|seq| *seq > 0).await.is_err();
    if closed {
        std::future::pending::<()>().await;
    }
}

/// The two-phase trigger window. Returns when a hedge must be
/// triggered; stays pending when none ever will (the caller races it against the primary,
/// polling the primary first, so a primary that completes wins: H-24).
///
/// Stage 1: wait for the first progress, for at most `after` when set (then re-check the
/// counter at expiry: a first token that arrived with the timer prevents the trigger),
/// without a limit when not (a stall-only config never triggers before the first token).
/// Stage 2 (only with `stall`, i.e. a streaming request with `STALL_AFTER_S`): each window is
/// `timeout(stall, rx.changed())` measured from the last `borrow_and_update`, with a
/// re-check of `has_changed` at expiry. Runtime timers only.
async fn trigger_window(
    rx: &mut watch::Receiver<u64>,
    after: Option<Duration>,
    stall: Option<Duration>,
) {
    match after {
        Some(after) => {
            if tokio::time::timeout(after, first_progress(rx))
                .await
                .is_err()
            {
                let seq = *rx.borrow();
                if seq == 0 {
                    return; // H-18: trigger
                }
            }
        }
        None => first_progress(rx).await,
    }
    let Some(stall) = stall else {
        return std::future::pending::<()>().await;
    };
    loop {
        drop(rx.borrow_and_update());
        match tokio::time::timeout(stall, rx.changed()).await {
            Ok(Ok(())) => {}
            // The runner dropped its signal: the stream ended, it cannot stall any more.
            Ok(Err(_)) => return std::future::pending::<()>().await,
            Err(_) => match rx.has_changed() {
                Ok(true) => {}       // a chunk arrived with the timer (H-20)
                Ok(false) => return, // a real silence: trigger
                Err(_) => return std::future::pending::<()>().await,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The hedged round (60 §3–§9)
// ---------------------------------------------------------------------------------------------

/// Resolves when the streamed call passed its commit point; never for `chat`.
async fn wait_committed(env: LoopEnv<'_>) {
    match env.commit {
        Some(gate) => gate.wait_committed().await,
        None => std::future::pending().await,
    }
}

/// A successful round's bookkeeping: the winner's generation sample, then the
/// round's `hedge_won`.
fn won(ctx: &CallContext, success: LoopSuccess, hedge_won: bool) -> RoundOutcome {
    ctx.record_generation(
        success.generation,
        success.result.stall_ms,
        success.result.stall_count,
        hedge_won,
    );
    RoundOutcome::Success(success)
}

/// A leg's retryable failure, its `SourceDead` flag and its delta. A leg that reports a loser
/// cancel it was never asked for violated the runner contract: a transient failure without a
/// delta (as in the single-leg path).
fn retryable(leg: LegResult) -> (AttemptError, bool, Option<LegDelta>) {
    match leg {
        LegResult::Failed {
            failure,
            dead,
            delta,
        } => (failure, dead, Some(delta)),
        _ => (
            AttemptError::transient(AttemptFailure::new(
                "hedged leg ended without a result (runner contract violation)",
                ErrorOperation::Chat,
            )),
            false,
            None,
        ),
    }
}

/// No winner: a raised error propagates (the primary's first); two retryable
/// failures combine into one carrying both legs' deltas. `hedge_won := false`;
/// the generation sample is kept.
fn no_winner(ctx: &CallContext, primary: LegResult, hedge: LegResult) -> RoundOutcome {
    ctx.set_hedge_won(false);
    match (primary, hedge) {
        (LegResult::Propagate(e), _) | (_, LegResult::Propagate(e)) => RoundOutcome::Propagate(e),
        (p, h) => {
            let (pf, pdead, pdelta) = retryable(p);
            let (hf, hdead, hdelta) = retryable(h);
            let deltas = pdelta.into_iter().chain(hdelta).collect();
            let (failure, immediate) = match combine_failures(&pf, &hf) {
                HedgeSide::Hedge => (hf, hdead),
                _ => (pf, pdead),
            };
            RoundOutcome::Failed {
                failure,
                immediate,
                deltas,
            }
        }
    }
}

/// The hedged round (60 §3–§9; D1; 05 R-6): the primary leg on
/// `admitted` with the progress receiver, the trigger window, at most one hedge admission with
/// the primary's source excluded (sharing the loop's `reasons` and `attempt_fails`, never
/// `on_no_runnable`), then the adjudication. Returns exactly one outcome.
pub(crate) async fn run_hedged_round<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
    admitted: Admitted,
    reasons: &mut BTreeMap<String, FailureReason>,
    attempt_fails: &HashMap<String, u32>,
) -> RoundOutcome {
    let cfg = env.gov.hedge;
    let primary_source = admitted.source.name.clone();
    let (signals, mut progress) = LegSignals::new();
    let primary_ctl = LegControl::new();
    let primary = run_attempt(
        env,
        runner,
        admitted,
        Some(signals),
        primary_ctl.clone(),
        false,
    );
    tokio::pin!(primary);

    // Phases 1–2: the trigger window, raced against the primary (primary first: H-18, H-24).
    {
        let stall = cfg.stall_after.filter(|_| env.stream);
        let window = trigger_window(&mut progress, cfg.after, stall);
        tokio::pin!(window);
        let committed = wait_committed(env);
        tokio::pin!(committed);
        tokio::select! {
            biased;
            leg = &mut primary => return leg_outcome(env.ctx, leg),
            // D32: the primary committed — no hedge after the commit point.
            () = &mut committed => return leg_outcome(env.ctx, (&mut primary).await),
            () = &mut window => {}
        }
    }
    drop(progress); // H-23: the window's waiter is gone before admission starts

    // Phase 3: one hedge admission, the primary still driven (H-30); the pick is allowed
    // to finish even when the primary completes meanwhile (abandoning it midway could leak).
    let mut early: Option<LegResult> = None;
    let picked = {
        let exclude = [primary_source.as_str()];
        let pick =
            env.gov
                .admission
                .pick(env.ctx.logical_call_id(), reasons, attempt_fails, &exclude);
        tokio::pin!(pick);
        loop {
            tokio::select! {
                biased;
                leg = &mut primary, if early.is_none() => early = Some(leg),
                res = &mut pick => break res,
            }
        }
    };
    let hedge_admitted = match picked {
        Ok(Pick::Picked(admitted)) => admitted,
        // H-28 (G-84): nothing admitted → silently abandoned; only the primary is awaited.
        Ok(Pick::NothingRunnable(_)) => {
            let leg = match early {
                Some(leg) => leg,
                None => (&mut primary).await,
            };
            return leg_outcome(env.ctx, leg);
        }
        Err(error) => {
            if let Some(leg) = early {
                // The primary already delivered its outcome, settled and written back; nothing
                // was admitted for the hedge, so the outcome stands (decision, see module doc).
                tracing::warn!(
                    code = "hedge.admission_failed",
                    "hedge admission failed after the primary completed; the primary's outcome \
                     stands: {error}"
                );
                return leg_outcome(env.ctx, leg);
            }
            // H-29: fail closed. Returning drops the primary leg: its guard settles `est` and
            // writes its `cancelled` row through the cleanup path.
            return RoundOutcome::Propagate(error);
        }
    };
    if let Some(leg) = early {
        // Phase 3.5 (H-31): the primary completed during the admission — release what was just
        // acquired (probe → pacer → settle 0 and release); nothing is sent, nothing counted.
        hedge_admitted.guard.release_admission().await;
        return leg_outcome(env.ctx, leg);
    }
    // D32: the primary committed during the admission — no hedge after the commit point.
    if env
        .commit
        .is_some_and(crate::stream_call::CommitGate::is_committed)
    {
        hedge_admitted.guard.release_admission().await;
        return leg_outcome(env.ctx, (&mut primary).await);
    }
    // 05 R-35: a hedge leg is a retry for the scope's budget; a refusal abandons the hedge like
    // an empty pick (60 H-28 as amended), after releasing the admission.
    if env
        .gov
        .retry_budget
        .as_deref()
        .is_some_and(|b| !b.try_withdraw())
    {
        hedge_admitted.guard.release_admission().await;
        return leg_outcome(env.ctx, (&mut primary).await);
    }

    // Phase 4: the hedge leg (H-32): an ordinary attempt without signals (H-16, H-33).
    env.ctx.add_hedge(); // D1, H-68: a launched leg counts
    let hedge_ctl = LegControl::new();
    let hedge = run_attempt(env, runner, *hedge_admitted, None, hedge_ctl.clone(), true);
    tokio::pin!(hedge);

    // Adjudication (H-34..H-43): inspect after every wake-up, the primary first (H-36).
    let mut p: Option<LegResult> = None;
    let mut h: Option<LegResult> = None;
    let committed = wait_committed(env);
    tokio::pin!(committed);
    let mut commit_seen = false;
    let mut committed_side: Option<bool> = None;
    loop {
        tokio::select! {
            biased;
            leg = &mut primary, if p.is_none() => p = Some(leg),
            leg = &mut hedge, if h.is_none() => h = Some(leg),
            // D32: the first leg to commit wins the stream; the other is the loser.
            () = &mut committed, if !commit_seen => {
                commit_seen = true;
                let hedge_committed = env
                    .commit
                    .and_then(crate::stream_call::CommitGate::committed_leg)
                    .is_some_and(|leg| leg.hedge_leg);
                committed_side = Some(hedge_committed);
                if hedge_committed && p.is_none() {
                    primary_ctl.cancel_as_loser();
                    p = Some((&mut primary).await);
                } else if !hedge_committed && h.is_none() {
                    hedge_ctl.cancel_as_loser();
                    h = Some((&mut hedge).await);
                }
            }
        }
        match (p.take(), h.take()) {
            (Some(LegResult::Success(success)), other) => {
                if other.is_none() {
                    // mark, cancel, and poll the loser until its cleanup is done (H-40).
                    hedge_ctl.cancel_as_loser();
                    let _race_or_cancelled = (&mut hedge).await; // H-41, H-42: discarded
                }
                return won(env.ctx, success, false);
            }
            (other, Some(LegResult::Success(success))) => {
                if other.is_none() {
                    primary_ctl.cancel_as_loser();
                    let _race_or_cancelled = (&mut primary).await;
                }
                return won(env.ctx, success, true);
            }
            // D32: after the commit point only the committed leg's failure counts.
            (Some(pl), Some(hl)) if committed_side.is_some() => {
                env.ctx.set_hedge_won(false);
                let leg = if committed_side == Some(true) { hl } else { pl };
                return leg_outcome(env.ctx, leg);
            }
            (Some(pl), Some(hl)) => return no_winner(env.ctx, pl, hl),
            // H-35: one leg failed or raised while the other runs → wait for the other.
            (pl, hl) => {
                p = pl;
                h = hl;
            }
        }
    }
}
