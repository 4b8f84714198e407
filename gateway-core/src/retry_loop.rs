//! The loop layer: the one retry loop.
//!
//! Owns the only place that re-sends a request. One generic loop serves chat, embedding
//! and OCR, parameterised by [`LoopPolicy`] `{ exempt_429, refund_stall, hedging }`:
//! budget (`fails` vs `max_attempts`), the chat 429 exemption (counted in `attempts`, refunded
//! into the stall account), `SourceDead` → immediate switch without backoff, `RequestRejected` /
//! `ResultInvalid` propagate at once, `AllSourcesExhausted` with reason, per-source reasons and
//! `last_failure`, `NoSources`, the stall death rule before every non-productive wait,
//! the nothing-runnable policies, the optional R-35 hint cap and the R-35 scope
//! retry budget ([`crate::budget::RetryBudget`]: a loop's first round deposits, every further
//! round withdraws — 429 rounds and `SourceDead` switches included — and a refusal ends the
//! loop as `AllSourcesExhausted { retry_exhausted }` carrying the last failure).
//!
//! A *round* is a function (`run_round`): a single attempt, or a hedged round
//! (`crate::hedge`, 60) when the scope hedges: it returns the same `RoundOutcome` with one
//! `LegDelta` per leg, and the loop applies the deltas after adjudication — legs never
//! share `&mut` loop state.
//!
//! Layering: the governor calls `run_loop`; the loop calls the hedged round (`crate::hedge`)
//! and the attempt step (`crate::leg`), both below it, and reads the scope's state through
//! `LoopEnv` (`crate::scope`). [`LoopPolicy`] and [`LoopSuccess`] are defined in those layers
//! and re-exported here, where callers look for them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gateway_ports::{AttemptError, FailureReason, GatewayError, ScopeReason, Unavailable};
use tracing::Instrument;

use crate::admission::{Admitted, NoRunnable, Pick, WaiterSlot, Wakeups, backend_error};
use crate::attempt::{AttemptRunner, LegControl};
use crate::backoff::backoff_delay;
use crate::classify::failure_reason_of;
use crate::leg::{RoundOutcome, leg_outcome, run_attempt};
use crate::retry_after::hint_exceeds_cap;
use crate::scope::LoopEnv;
use crate::stall::StallClock;

pub use crate::leg::LoopSuccess;
pub use crate::scope::LoopPolicy;

struct LoopState {
    fails: u32,
    failed_rounds: u32,
    reasons: BTreeMap<String, FailureReason>,
    attempt_fails: HashMap<String, u32>,
    stall: StallClock,
    largest_hint: Option<f64>,
    last_failure: Option<AttemptError>,
    waiter: Option<WaiterSlot>,
    /// sources held out of this loop's picks until their backoff or server hint
    /// passes (the failure's wait belongs to the source that failed, not to the call).
    held: HashMap<String, Hold>,
}

/// One source held out of selection.
#[derive(Debug, Clone, Copy)]
struct Hold {
    /// When the source may be picked again.
    until: tokio::time::Instant,
    /// Its wait in seconds (for the log line and the error's hint).
    wait_s: f64,
    /// The hold comes from a server hint above `RETRY__MAX_HINT_S`: if it is the
    /// earliest way forward, the call fails at once instead of sleeping.
    over_cap: bool,
}

/// A wait longer than this logs one line naming the source and the wait.
pub const LONG_WAIT_LOG_S: f64 = 5.0;

/// `tracing` target of the one line logged per retry wait (`pgw chat` prints these
/// in human mode).
pub const RETRY_EVENT_TARGET: &str = "pgw::retry";

impl LoopState {
    fn unavailable(&self, scope: &str, reason: ScopeReason, retry_after_s: f64) -> GatewayError {
        let mut u = Unavailable::new(scope, reason, retry_after_s);
        u.per_source_reasons = self.reasons.clone();
        u.last_failure = self.last_failure.clone().map(Box::new);
        GatewayError::all_sources_exhausted(u)
    }
}

/// The retry loop. Returns the winning attempt or the call's error; a
/// call-level error carries the call's last attempt failure and per-source reasons (README
/// D25), whichever path ended the loop (e.g. a `SourceDead` that opened the last breaker ends
/// as `CircuitOpen` at the next pick).
pub(crate) async fn run_loop<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
) -> Result<LoopSuccess, GatewayError> {
    run_loop_inner(env, runner)
        .await
        .map_err(|e| env.ctx.attach_cause(e))
}

async fn run_loop_inner<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
) -> Result<LoopSuccess, GatewayError> {
    let gov = env.gov;
    let scope = gov.scope.as_str();
    if gov.admission.sources().is_empty() {
        // G-49: inside the stats boundary and the deadline, so the terminal row is written.
        return Err(GatewayError::all_sources_exhausted(Unavailable::new(
            scope,
            ScopeReason::NoSources,
            0.0,
        )));
    }
    let budget = gov.retry_budget.as_deref();
    let mut first_round = true;
    let window_s = gov.backpressure.stall_window_s;
    let mut st = LoopState {
        fails: 0,
        failed_rounds: 0,
        reasons: BTreeMap::new(),
        attempt_fails: HashMap::new(),
        stall: StallClock::start(Arc::clone(&gov.clock)),
        largest_hint: None,
        last_failure: None,
        waiter: None,
        held: HashMap::new(),
    };
    // wakeups are armed before any pick that may end in a nap. The first pick runs
    // unarmed (no allocation on the fast path, 05 R-56); when it finds nothing runnable the loop
    // arms and picks once more before napping, and re-arms right after every nap.
    let mut wakeups: Option<Wakeups> = None;
    loop {
        // README D26: sources whose wait has not passed are held out of this pick; when every
        // source is held, or the others are not runnable, the loop sleeps until the earliest
        // hold passes (and fails when that hold is a hint above the cap).
        let now = tokio::time::Instant::now();
        st.held.retain(|_, h| h.until > now);
        if !st.held.is_empty() {
            let held_names: Vec<&str> = st.held.keys().map(String::as_str).collect();
            let all_held = gov
                .admission
                .sources()
                .iter()
                .all(|s| held_names.contains(&s.name.as_str()));
            let pick = if all_held {
                None
            } else {
                match gov
                    .admission
                    .pick(
                        env.ctx.logical_call_id(),
                        &mut st.reasons,
                        &st.attempt_fails,
                        &held_names,
                    )
                    .await?
                {
                    Pick::Picked(admitted) => Some(*admitted),
                    Pick::NothingRunnable(_) => None,
                }
            };
            let admitted = match pick {
                Some(admitted) => admitted,
                None => {
                    wait_for_held(env, &mut st, scope, window_s).await?;
                    continue;
                }
            };
            st.waiter = None;
            wakeups = None;
            let outcome = after_pick(env, runner, &mut st, admitted, &mut first_round, budget);
            match Box::pin(outcome).await {
                Ok(Some(success)) => return Ok(success),
                Ok(None) => continue,
                Err(e) => return Err(e),
            }
        }
        let pick = gov
            .admission
            .pick(
                env.ctx.logical_call_id(),
                &mut st.reasons,
                &st.attempt_fails,
                &[],
            )
            .await?;
        let admitted = match pick {
            Pick::Picked(admitted) => *admitted,
            Pick::NothingRunnable(rej) => {
                match gov.admission.on_no_runnable(&rej, &st.reasons) {
                    NoRunnable::Fail(e) => return Err(e),
                    NoRunnable::Nap => {
                        let Some(armed) = wakeups.take() else {
                            wakeups = Some(gov.admission.arm_wakeups());
                            continue; // pick again, armed
                        };
                        if st.waiter.is_none() {
                            match gov.admission.try_wait_slot() {
                                Some(slot) => st.waiter = Some(slot),
                                // shed load beyond MAX_WAITERS.
                                None => {
                                    return Err(gov.admission.quota_full_error(&rej, &st.reasons));
                                }
                            }
                        }
                        check_death(env, &st, window_s).await?;
                        gov.admission.nap(armed).await;
                        wakeups = Some(gov.admission.arm_wakeups());
                        continue;
                    }
                }
            }
        };
        st.waiter = None;
        wakeups = None;
        let outcome = after_pick(env, runner, &mut st, admitted, &mut first_round, budget);
        match Box::pin(outcome).await {
            Ok(Some(success)) => return Ok(success),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
    }
}

/// One round from an admitted candidate to its outcome, and the bookkeeping of a failed round:
/// `Ok(Some)` = the call succeeded, `Ok(None)` = pick again,
/// `Err` = the call ends.
///
/// A failed round holds its source(s) out of this loop's picks for the backoff delay (which
/// includes the server hint) instead of sleeping: the next pick sends to another runnable
/// source at once, and the loop sleeps only when nothing else can run ([`wait_for_held`]).
async fn after_pick<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
    st: &mut LoopState,
    admitted: Admitted,
    first_round: &mut bool,
    budget: Option<&crate::budget::RetryBudget>,
) -> Result<Option<LoopSuccess>, GatewayError> {
    let gov = env.gov;
    let scope = gov.scope.as_str();
    let retry = gov.retry;
    if *first_round {
        *first_round = false;
        if let Some(b) = budget {
            b.deposit_first_attempt(); // a first attempt of the scope
        }
    }

    let mark = st.stall.round_started();
    // Boxed (05 R-56): built in place, the round's state machine would be copied twice (into
    // the span wrapper, then into the loop's state); boxed, it is copied once.
    let outcome = Box::pin(run_round(
        env,
        runner,
        admitted,
        &mut st.reasons,
        &st.attempt_fails,
    ))
    .instrument(tracing::debug_span!("pgw.round"))
    .await;
    match outcome {
        RoundOutcome::Success(success) => {
            st.stall.round_ended(mark, false);
            Ok(Some(success))
        }
        RoundOutcome::Propagate(e) => Err(committed(env, e)),
        RoundOutcome::Failed {
            failure,
            immediate,
            deltas,
        } => {
            // D32: after the commit point the call is pinned to its attempt — no retry.
            if env
                .commit
                .is_some_and(crate::stream_call::CommitGate::is_committed)
            {
                for d in &deltas {
                    st.reasons.insert(d.source.clone(), d.failure_reason);
                }
                env.ctx.note_cause(&failure, &st.reasons);
                return Err(committed_attempt(env, failure));
            }
            // apply the legs' deltas after adjudication.
            for d in &deltas {
                st.reasons.insert(d.source.clone(), d.failure_reason);
                *st.attempt_fails.entry(d.source.clone()).or_insert(0) += 1;
            }
            let rate_limited = failure_reason_of(&failure) == Some(FailureReason::RateLimited);
            st.stall
                .round_ended(mark, rate_limited && env.policy.refund_stall);
            st.failed_rounds = st.failed_rounds.saturating_add(1);
            if !(rate_limited && env.policy.exempt_429) {
                st.fails = st.fails.saturating_add(1);
            }
            let hint = failure
                .retry_after_s()
                .filter(|h| h.is_finite() && *h > 0.0);
            if let Some(h) = hint {
                st.largest_hint = Some(st.largest_hint.map_or(h, |l: f64| l.max(h)));
            }
            let status = failure.http_status();
            env.ctx.note_cause(&failure, &st.reasons);
            st.last_failure = Some(failure);
            // G-48, G-12: no sleep after the exhausting round; R-35: a retry the scope's
            // budget refuses ends the loop the same way, with this failure as last_failure.
            if st.fails >= retry.max_attempts || budget.is_some_and(|b| !b.try_withdraw()) {
                let ra = st
                    .largest_hint
                    .map_or(retry.backoff_base_s, |h| h.max(retry.backoff_base_s));
                return Err(st.unavailable(scope, ScopeReason::RetryExhausted, ra));
            }
            if immediate {
                return Ok(None); // G-47: SourceDead → switch without backoff
            }
            let over_cap = hint.is_some_and(|h| hint_exceeds_cap(h, retry.max_hint_s));
            let jitter = Arc::clone(&gov.jitter);
            let delay = backoff_delay(&retry, st.failed_rounds, hint, || jitter());
            let now = tokio::time::Instant::now();
            let until = now.checked_add(delay).unwrap_or_else(|| far_future(now));
            let wait_s = delay.as_secs_f64();
            for d in &deltas {
                st.held.insert(
                    d.source.clone(),
                    Hold {
                        until,
                        wait_s,
                        over_cap,
                    },
                );
                tracing::debug!(
                    target: RETRY_EVENT_TARGET,
                    source = %d.source,
                    http_status = status,
                    reason = d.failure_reason.as_str(),
                    wait_s,
                    attempt = st.failed_rounds.saturating_add(1),
                    "{} from {}, {} rests {:.3} s, attempt {} next",
                    status.map_or_else(|| d.failure_reason.as_str().to_owned(), |s| s.to_string()),
                    d.source,
                    d.source,
                    wait_s,
                    st.failed_rounds.saturating_add(1),
                );
            }
            Ok(None)
        }
    }
}

/// About 30 years after `now`: a hold that never ends in practice (a huge hint).
fn far_future(now: tokio::time::Instant) -> tokio::time::Instant {
    now + std::time::Duration::from_secs(86_400 * 365 * 30)
}

/// Nothing but held sources can run: sleep until the earliest hold passes, after
/// the death check. When that earliest hold is a server hint above `RETRY__MAX_HINT_S`,
/// the call fails at once carrying the hint. A wait above [`LONG_WAIT_LOG_S`] logs one
/// line naming the source and the wait.
async fn wait_for_held(
    env: LoopEnv<'_>,
    st: &mut LoopState,
    scope: &str,
    window_s: f64,
) -> Result<(), GatewayError> {
    let Some((name, hold)) = st
        .held
        .iter()
        .min_by_key(|(_, h)| h.until)
        .map(|(n, h)| (n.clone(), *h))
    else {
        return Ok(());
    };
    let now = tokio::time::Instant::now();
    let remaining_s = hold.until.saturating_duration_since(now).as_secs_f64();
    if hold.over_cap {
        return Err(st.unavailable(scope, ScopeReason::RetryExhausted, hold.wait_s));
    }
    check_death(env, st, window_s).await?;
    let attempt = st.failed_rounds.saturating_add(1);
    let status = st
        .last_failure
        .as_ref()
        .and_then(AttemptError::http_status)
        .map_or_else(|| "failure".to_owned(), |s| s.to_string());
    if remaining_s > LONG_WAIT_LOG_S {
        tracing::info!(
            target: RETRY_EVENT_TARGET,
            source = %name,
            wait_s = remaining_s,
            attempt,
            "{status} from {name}, waiting {remaining_s:.3} s, attempt {attempt}"
        );
    } else {
        tracing::debug!(
            target: RETRY_EVENT_TARGET,
            source = %name,
            wait_s = remaining_s,
            attempt,
            "{status} from {name}, waiting {remaining_s:.3} s, attempt {attempt}"
        );
    }
    tokio::time::sleep_until(hold.until).await;
    st.held.remove(&name);
    Ok(())
}

/// The death check before a non-productive wait. `progress_age_s` is only read when
/// the local condition already holds (it may be a backend round trip); its failure is
/// `GovernanceBackend` (fail closed).
async fn check_death(env: LoopEnv<'_>, st: &LoopState, window_s: f64) -> Result<(), GatewayError> {
    if st.stall.local_wait().as_secs_f64() <= window_s {
        return Ok(());
    }
    let gov = env.gov;
    let age = gov
        .limiter
        .progress_age_s()
        .await
        .map_err(|e| backend_error(&gov.scope, &e))?;
    if st.stall.is_dead(window_s, age) {
        return Err(st.unavailable(&gov.scope, ScopeReason::Stalled, gov.retry.backoff_max_s));
    }
    Ok(())
}

/// One round (`round(admitted)`): a single attempt, or — when `env.policy.hedging` and
/// the scope's [`crate::hedge::HedgeConfig`] gate says so for this wire mode — a
/// hedged round (`crate::hedge`: the primary leg from `admitted` plus at most one hedge leg
/// admitted through `pick(exclude = {primary})` with this loop's `reasons` / `attempt_fails`,
/// both polled in one `select!`, never spawned; 05 R-7). Either way one outcome with one
/// `LegDelta` per failed leg.
pub(crate) async fn run_round<R: AttemptRunner>(
    env: LoopEnv<'_>,
    runner: &R,
    admitted: Admitted,
    reasons: &mut BTreeMap<String, FailureReason>,
    attempt_fails: &HashMap<String, u32>,
) -> RoundOutcome {
    if env.policy.hedging && env.gov.hedge.hedges_round(env.stream) {
        // Boxed (05 R-56): the hedged round holds two legs; inline, it would make every
        // single-attempt round as large, and that state is copied when the round is boxed.
        return Box::pin(crate::hedge::run_hedged_round(
            env,
            runner,
            admitted,
            reasons,
            attempt_fails,
        ))
        .await;
    }
    let control = LegControl::new();
    let leg = run_attempt(env, runner, admitted, None, control, false).await;
    leg_outcome(env.ctx, leg)
}

/// Marks `error` as a post-commit failure when the streamed call passed its commit point.
fn committed(env: LoopEnv<'_>, error: GatewayError) -> GatewayError {
    match env.commit {
        Some(gate) => gate.mark(error),
        None => error,
    }
}

/// The call-level error of an attempt failure that ends the call: `Committed` after a streamed
/// call's commit point, else its own call-level form.
fn committed_attempt(env: LoopEnv<'_>, error: AttemptError) -> GatewayError {
    match env.commit {
        Some(gate) => gate.mark_attempt(&env.gov.scope, error),
        None => GatewayError::from_attempt(&env.gov.scope, error),
    }
}
