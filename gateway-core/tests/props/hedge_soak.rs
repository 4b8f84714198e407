//! Randomised soak of hedged rounds (issue 6; 60 H-8, H-14, H-38, H-39, H-48, H-49, H-68;
//! 30 G-51, G-116; 05 ). Seeded, so a failure is reproducible from its iteration
//! number; paused tokio clock.
//!
//! Each iteration draws a hedge configuration (first-token and/or stall threshold, or none), the
//! wire mode, 2–3 sources, a retry budget, an optional call deadline and an optional external
//! cancellation, and 6 scripted attempts per source from: success, 429, Transient, SourceDead,
//! RequestRejected, hang, token-then-hang, a chunked stream with gaps — each after a random
//! delay. Afterwards: nothing is in flight (no permit held, no pending cleanup job), no task is
//! alive beyond the fixture's, the call produced exactly one result or one error (a cancelled
//! call: exactly one `cancelled` terminal row), every attempt wrote exactly one row, the
//! statistics agree with the rows, and the retry budget was charged once per round.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fns panic on failure by design"
)]

use crate::hedge_support;
use crate::support;

use std::time::Duration;

use gateway_core::classify::failure_reason_of;
use gateway_core::governor::CallOptions;
use gateway_core::hedge::HedgeConfig;
use gateway_core::rows::{AttemptRowFacts, AttemptRowOutcome};
use gateway_ports::{AttemptError, FailureReason, GatewayError, ScopeReason};
use gateway_testkit::{Script, Step};
use hedge_support::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use support::{dead, rate_limited, rejected, source, transient};

const ITERATIONS: u64 = 400;

fn random_script(rng: &mut SmallRng) -> Script {
    let d = ms(rng.gen_range(0..150));
    match rng.gen_range(0..9) {
        0 | 1 => Script::succeed_after(d, ok_result("ok")),
        2 => Script::fail_after(d, rate_limited(Some(0.01))),
        3 => Script::fail_after(d, transient(503)),
        4 => Script::fail_after(d, dead()),
        5 => Script::fail_after(d, rejected()),
        6 => Script::hang(),
        7 => Script::token_then_hang(),
        _ => {
            // A stream: first chunk after d, then gaps around the 0.05 s threshold, then ok.
            let mut s = Script::new().chunk_after(d);
            for _ in 0..rng.gen_range(1..4) {
                s = s.chunk_after(ms(rng.gen_range(10..90)));
            }
            s.then(Step::Sleep(ms(rng.gen_range(0..60))))
                .then_ok(ok_result("streamed"))
        }
    }
}

fn is_rate_limited(r: &AttemptRowFacts) -> bool {
    matches!(&r.outcome, AttemptRowOutcome::Failed(e)
        if failure_reason_of(e) == Some(FailureReason::RateLimited))
}

fn is_retryable_failure(r: &AttemptRowFacts) -> bool {
    matches!(&r.outcome, AttemptRowOutcome::Failed(e)
        if matches!(e, AttemptError::Transient(_) | AttemptError::SourceDead(_)))
}

/// Rounds reconstructed from the rows: each primary row (not a hedge leg) opens a round.
fn rounds(rows: &[AttemptRowFacts]) -> Vec<Vec<AttemptRowFacts>> {
    let mut out: Vec<Vec<AttemptRowFacts>> = Vec::new();
    for r in rows {
        if r.hedge_leg {
            out.last_mut()
                .unwrap_or_else(|| panic!("a hedge row opens no round: {r:?}"))
                .push(r.clone());
        } else {
            out.push(vec![r.clone()]);
        }
    }
    out
}

/// What the iterations exercised (asserted at the end so the soak cannot silently go idle).
#[derive(Debug, Default)]
struct Coverage {
    hedged_rounds: u32,
    hedge_wins: u32,
    losers_cancelled: u32,
    both_failed_rounds: u32,
    external_cancels: u32,
    deadlines: u32,
    retry_exhausted: u32,
    successes: u32,
}

async fn one_iteration(seed: u64, cov: &mut Coverage) {
    let rng = &mut SmallRng::seed_from_u64(seed);
    let after = rng.gen_bool(0.6).then_some(T);
    let stall = rng.gen_bool(0.5).then_some(T);
    let hedge = HedgeConfig::new(after, stall, rng.gen_range(1..=3)).unwrap();
    let stream = rng.gen_bool(0.7);
    let n_sources = rng.gen_range(2..=3);
    let names = ["s1", "s2", "s3"];
    let max_attempts = rng.gen_range(1..=3);
    let mut b = FxBuilder::hedge_after()
        .hedge(hedge)
        .max_attempts(max_attempts);
    b.sources = names[..n_sources]
        .iter()
        .map(|n| {
            let mut s = source(n);
            s.tpm = 0;
            s
        })
        .collect();
    b.deadline = rng.gen_bool(0.3).then(|| ms(rng.gen_range(30..800)));
    let cancel_at = rng.gen_bool(0.3).then(|| ms(rng.gen_range(1..600)));
    let fx = b.build();
    for name in &names[..n_sources] {
        for _ in 0..6 {
            fx.push_for(name, random_script(rng));
        }
    }
    let tasks_before = alive_tasks();

    let call = fx.chat_with(CallOptions::default().with_stream(stream));
    // A generous outer bound also cuts every all-hang scenario (an external drop).
    let bound = cancel_at.unwrap_or(Duration::from_secs(120));
    let outcome = tokio::time::timeout(bound, call).await;
    fx.gov.quiesce().await;

    let ctx = format!("seed {seed}: hedge {hedge:?} stream {stream} max {max_attempts}");
    // Nothing in flight, no permit held, no job pending, no task alive.
    for name in &names[..n_sources] {
        assert_eq!(fx.stats(name).await.inflight, 0, "{ctx}: {name} inflight");
    }
    let cleanup = fx.gov.cleanup_stats();
    assert_eq!(
        (cleanup.pending, cleanup.dropped, cleanup.timed_out),
        (0, 0, 0),
        "{ctx}"
    );
    assert_eq!(alive_tasks(), tasks_before, "{ctx}: task leak");

    let rows = fx.rows();
    assert_eq!(rows.len(), fx.calls().len(), "{ctx}: one row per attempt");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.attempt as usize, i + 1, "{ctx}: attempt numbers");
    }
    let rounds = rounds(&rows);
    let terminals = fx.sink.terminals();
    let hedged_rounds = rounds.iter().filter(|r| r.len() == 2).count() as u32;
    for (i, round) in rounds.iter().enumerate() {
        assert!(
            round.len() <= 2,
            "{ctx}: at most one hedge leg per round (D1)"
        );
        let last = i + 1 == rounds.len();
        if round.len() == 2 {
            assert_ne!(round[0].source.name, round[1].source.name, "{ctx}: H-25");
        }
        let won = round.iter().any(|r| label(r) == "ok");
        for r in round {
            match label(r).as_str() {
                // a loser is only ever cancelled in a round that has a winner.
                "hedge_cancelled" => assert!(won && round.len() == 2, "{ctx}: {round:?}"),
                // An unmarked cancellation only happens to the call's last round (a drop).
                "cancelled" => assert!(last, "{ctx}: {round:?}"),
                _ => {}
            }
        }
        if !last {
            assert!(!won, "{ctx}: a won round ends the call");
        }
    }
    // Budget once per round (G-51, H-39): a round counts iff every leg failed retryably and
    // not all of them were rate-limited.
    cov.hedged_rounds += hedged_rounds;
    cov.losers_cancelled += rows
        .iter()
        .filter(|r| label(r) == "hedge_cancelled")
        .count() as u32;
    cov.both_failed_rounds += rounds
        .iter()
        .filter(|r| r.len() == 2 && r.iter().all(is_retryable_failure))
        .count() as u32;
    let counted = rounds
        .iter()
        .filter(|round| {
            round.iter().all(is_retryable_failure) && !round.iter().all(is_rate_limited)
        })
        .count() as u32;
    assert!(counted <= max_attempts, "{ctx}: {counted} counted rounds");

    match outcome {
        Ok(Ok(g)) => {
            assert!(
                terminals.is_empty(),
                "{ctx}: success writes no terminal row"
            );
            assert_eq!(g.stats.attempts as usize, rows.len(), "{ctx}");
            assert_eq!(
                g.stats.hedges, hedged_rounds,
                "{ctx}: hedges = launched legs"
            );
            let last = rounds.last().unwrap_or_else(|| panic!("{ctx}: no round"));
            let winner = last
                .iter()
                .find(|r| r.call_id == g.call_id)
                .unwrap_or_else(|| panic!("{ctx}: winner not in the last round"));
            assert_eq!(label(winner), "ok");
            assert_eq!(g.stats.hedge_won, winner.hedge_leg, "{ctx}: hedge_won");
            cov.successes += 1;
            cov.hedge_wins += u32::from(g.stats.hedge_won);
        }
        Ok(Err(e)) => {
            assert_eq!(terminals.len(), 1, "{ctx}: one terminal row for {e:?}");
            assert_eq!(terminals[0].stats.hedges, hedged_rounds, "{ctx}");
            assert_eq!(terminals[0].stats.attempts as usize, rows.len(), "{ctx}");
            cov.deadlines += u32::from(matches!(e, GatewayError::CallDeadlineExceeded(_)));
            if let Some(u) = e.unavailable()
                && u.reason == ScopeReason::RetryExhausted
            {
                cov.retry_exhausted += 1;
                assert_eq!(
                    counted, max_attempts,
                    "{ctx}: budget charged once per round"
                );
            }
        }
        Err(_elapsed) => {
            cov.external_cancels += 1;
            assert_eq!(terminals.len(), 1, "{ctx}: the cancelled terminal row");
            assert_eq!(
                terminals[0].error_type(),
                None,
                "{ctx}: 'cancelled', no type"
            );
            assert_eq!(terminals[0].stats.hedges, hedged_rounds, "{ctx}");
        }
    }
    fx.gov.close().await;
    fx.worker
        .await
        .unwrap_or_else(|e| panic!("{ctx}: worker {e}"));
}

// covers: H-8, H-14, H-39, H-48, H-49, H-67, H-68, H-69, G-51, G-116, R-6, R-7, R-8
#[tokio::test(start_paused = true)]
async fn soak_hedged_rounds_leave_nothing_behind_and_charge_budget_once_per_round() {
    let mut cov = Coverage::default();
    for seed in 0..ITERATIONS {
        one_iteration(seed, &mut cov).await;
    }
    println!("{cov:?}");
    for (what, n) in [
        ("hedged rounds", cov.hedged_rounds),
        ("hedge wins", cov.hedge_wins),
        ("cancelled losers", cov.losers_cancelled),
        ("both-failed rounds", cov.both_failed_rounds),
        ("external cancels", cov.external_cancels),
        ("deadlines", cov.deadlines),
        ("retry exhausted", cov.retry_exhausted),
        ("successes", cov.successes),
    ] {
        assert!(n >= 5, "the soak exercised too few {what}: {cov:?}");
    }
}
