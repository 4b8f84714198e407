//! The first-token hedge (60 §1–§9, §12–§14 H-76..H-96, H-107, H-110; 95 §10 CF-256..CF-276;
//! 30 G-51; 05 ). Tier 1: paused tokio clock, `ScriptedRunner`
//! gates, memory backends. Timing assertions are lower bounds or relative with ≥ 4× margins;
//! windows are pinned with "entered" handles, never with sleeps.
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns the cleanup worker; the library never spawns"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fns panic on failure by design"
)]

use crate::hedge_support;
use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gateway_core::admission::Pick;
use gateway_core::attempt::TransportResult;
use gateway_core::call_context::CallContext;
use gateway_core::clock::TokioClock;
use gateway_core::governor::CallOptions;
use gateway_core::hedge::{HedgeConfig, HedgeSide, combine_failures};
use gateway_core::rows::RowCall;
use gateway_ports::{
    Acquire, CallOperation, CallStats, FailureReason, GatewayError, RateLimiter, ScopeReason,
};
use gateway_testkit::{Script, Step};
use hedge_support::*;
use support::{dead, rate_limited, retry, transient, unavailable};
use tokio::time::{Instant, sleep};

/// A leg that waits for its gate, then succeeds with `content`.
fn gated_ok(content: &str) -> Script {
    Script::new().gate().then_ok(ok_result(content))
}

/// The terminal row's statistics of a failed call (errors carry none, 30 G-6).
async fn terminal_stats(fx: &Fx) -> CallStats {
    fx.gov.quiesce().await;
    let t = fx.sink.terminals();
    assert_eq!(t.len(), 1, "one terminal row");
    t[0].stats.clone()
}

// ---------------------------------------------------------------------------------------------
// H-76 … H-79
// ---------------------------------------------------------------------------------------------

// covers: H-22, H-17, H-43, H-63, H-65, H-67, H-72
#[tokio::test(start_paused = true)]
async fn h_76_cf_256_non_stream_triggers_hedge_and_fast_leg_wins() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::succeed_after(ms(20), ok_result("fast")));
    let start = Instant::now();
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.result.content, "fast");
    assert_eq!(g.source.name, "s2");
    assert!(start.elapsed() < T * 10, "{:?}", start.elapsed());
    assert_eq!(g.stats.hedges, 1);
    assert!(g.stats.hedge_won);
    assert!(g.stats.generation_ms >= 15, "{}", g.stats.generation_ms);
    assert!(g.stats.generation_ms < g.stats.total_latency_ms);
}

// covers: H-17, H-18, H-69
#[tokio::test(start_paused = true)]
async fn h_77_cf_257_stream_hedges_when_first_token_absent() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::ok(ok_result("fast")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.source.name, "s2");
    assert_eq!(g.stats.hedges, 1);
    assert!(g.stats.hedge_won);
    assert_eq!(g.stats.attempts, 2);
}

// covers: CF-084, CF-287
#[tokio::test(start_paused = true)]
async fn h_77_cf_258_stream_after_first_token_never_hedges_slow_generation() {
    let fx = FxBuilder::hedge_after().build();
    let h1 = fx.push_for(
        "s1",
        Script::new()
            .then(Step::Token)
            .gate()
            .then_ok(ok_result("ok-s1")),
    );
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        assert_eq!(fx.calls(), ["s1"]);
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
    assert!(!g.stats.hedge_won);
    assert_eq!(g.stats.attempts, 1);
}

// covers: S-4
#[tokio::test(start_paused = true)]
async fn h_78_cf_259_h_15_injected_clock_jump_does_not_trigger_hedge() {
    let fx = FxBuilder {
        fake_clock: true,
        ..FxBuilder::hedge_after()
    }
    .build();
    fx.push_for(
        "s1",
        Script::new()
            .advance_clock(std::time::Duration::from_secs(1_000_000))
            .then(Step::Hang),
    );
    let h2 = fx.push_for("s2", Script::ok(ok_result("fast")));
    let start = Instant::now();
    let (g, launched) = tokio::join!(fx.chat_non_stream(), async {
        h2.entered().await;
        start.elapsed()
    });
    let g = g.unwrap();
    assert_eq!(g.source.name, "s2");
    assert_eq!(fx.calls(), ["s1", "s2"]);
    assert!(launched >= T * 4 / 5, "hedge launched after {launched:?}");
    assert_eq!(g.stats.hedges, 1);
}

#[tokio::test(start_paused = true)]
async fn h_79_cf_260_h_16_h_32_hedge_goes_to_other_source_without_signal() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::ok(ok_result("fast")));
    let g = fx.chat().await.unwrap();
    assert_eq!(fx.calls(), ["s1", "s2"]);
    // only the primary holds a progress receiver.
    assert_eq!(fx.runner.signal_pattern(), [true, false]);
    fx.gov.quiesce().await;
    let rows = fx.rows();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].call.logical_call_id, g.stats.logical_call_id);
    assert_eq!(rows[1].call.logical_call_id, g.stats.logical_call_id);
    assert_ne!(rows[0].call_id, rows[1].call_id);
    assert!(!rows[0].hedge_leg);
    assert!(rows[1].hedge_leg);
}

// ---------------------------------------------------------------------------------------------
// H-80 … H-84: no candidate, exclusion, phase 3.5
// ---------------------------------------------------------------------------------------------

// covers: H-25, H-27, G-84
#[tokio::test(start_paused = true)]
async fn h_80_cf_261_h_28_hedge_silent_when_no_candidate() {
    let fx = FxBuilder::hedge_after().build();
    // s2 has max_concurrency = 1 and its slot is held externally.
    let Acquire::Granted(held) = fx.limiter.try_acquire("s2", 400).await.unwrap() else {
        panic!("s2 slot not granted");
    };
    let h1 = fx.push_for("s1", gated_ok("ok-s1"));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        assert_eq!(fx.calls(), ["s1"], "no hedge after the window");
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
    assert_eq!(g.stats.attempts, 1);
    // G-84: the empty hedge pick never applied QUOTA_FULL = wait (no nap, no error).
    held.release().await.unwrap();
    fx.assert_idle().await;
}

#[tokio::test(start_paused = true)]
async fn h_81_h_26_pick_exclude_all_is_not_a_rejection() {
    let fx = FxBuilder::hedge_after().build();
    let mut reasons = BTreeMap::from([("prior".to_owned(), FailureReason::RateLimited)]);
    let before = reasons.clone();
    let pick = fx
        .gov
        .admission()
        .pick("lc", &mut reasons, &HashMap::new(), &["s1", "s2"])
        .await
        .unwrap();
    let Pick::NothingRunnable(rej) = pick else {
        panic!("excluded sources were picked");
    };
    assert_eq!(rej.candidates, 0);
    assert_eq!(
        rej.gate_rejections + rej.quota + rej.paced,
        0,
        "no rejection"
    );
    assert_eq!(reasons, before, "reasons unchanged");
}

// covers: H-27
#[tokio::test(start_paused = true)]
async fn h_82_cf_262_hedge_silent_when_candidate_circuit_open() {
    let fx = FxBuilder::hedge_after().build();
    let d = fx.breaker.try_enter("s2", "force").await.unwrap();
    fx.breaker
        .record_failure(&d, FailureReason::SourceDead, true)
        .await
        .unwrap();
    let h1 = fx.push_for("s1", gated_ok("ok-s1"));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(g.source.name, "s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
}

// covers: H-30, H-44
#[tokio::test(start_paused = true)]
async fn h_83_cf_263_h_31_primary_done_during_hedge_admission_sends_no_hedge() {
    let fx = FxBuilder {
        gate_source: Some("s2"),
        ..FxBuilder::hedge_after()
    }
    .build();
    let gated = fx.gated.clone().unwrap();
    let h1 = fx.push_for("s1", gated_ok("ok-s1"));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        gated.entered().await; // the hedge pick is parked in s2's quota acquisition
        h1.release();
        // Hold the acquisition until s1 has completed and settled.
        while fx.stats("s1").await.inflight != 0 {
            tokio::task::yield_now().await;
        }
        gated.open();
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
    assert_eq!(g.stats.attempts, 1);
    assert!(!g.stats.hedge_won);
    // Released with 0: no permit, nothing charged, no row.
    fx.assert_usage("s2", 0, 0).await;
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 0);
}

#[tokio::test(start_paused = true)]
async fn h_84_cf_264_hedge_silent_when_single_source() {
    let fx = FxBuilder::hedge_after().sources(&["s1"]).build();
    let h1 = fx.push_for("s1", gated_ok("ok-s1"));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        assert_eq!(fx.calls(), ["s1"]);
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!(g.stats.hedges, 0);
    assert_eq!(g.stats.attempts, 1);
}

// ---------------------------------------------------------------------------------------------
// H-85 … H-89: winner and loser bookkeeping (s1 hangs, s2 wins)
// ---------------------------------------------------------------------------------------------

async fn s2_wins(fx: &Fx) -> gateway_core::governor::Governed {
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::succeed_after(ms(20), ok_result("fast")));
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.source.name, "s2");
    g
}

// covers: H-40, H-44, G-115, H-47
#[tokio::test(start_paused = true)]
async fn h_85_cf_265_winner_settles_actual_loser_keeps_est() {
    let fx = FxBuilder::hedge_after().build();
    s2_wins(&fx).await;
    // the loser ran its S3 settlement inline before the call returned.
    fx.assert_usage("s2", 15, 0).await;
    fx.assert_usage("s1", 400, 0).await;
}

// covers: G-115
#[tokio::test(start_paused = true)]
async fn h_86_cf_266_h_45_loser_row_labelled_hedge_cancelled() {
    let fx = FxBuilder::hedge_after().build();
    let g = s2_wins(&fx).await;
    fx.gov.quiesce().await;
    fx.sink.assert_counts(2, 0); // no terminal row on success
    fx.sink.assert_one_call(&g.stats.logical_call_id);
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "hedge_cancelled".to_owned()),
            ("s2".to_owned(), "ok".to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn h_87_cf_267_hedge_cancelled_row_has_null_stall() {
    let fx = FxBuilder::hedge_after().build();
    s2_wins(&fx).await;
    fx.gov.quiesce().await;
    let rows = fx.rows();
    assert_eq!(label(&rows[0]), "hedge_cancelled");
    assert_eq!(row_stall(&rows[0]), (None, None));
}

// covers: G-77, G-115
#[tokio::test(start_paused = true)]
async fn h_88_cf_268_h_44_loser_does_not_feed_breaker() {
    let fx = FxBuilder::hedge_after().build();
    s2_wins(&fx).await;
    let snap = fx.breaker.snapshot("s1").await.unwrap();
    assert_eq!(snap.window_calls + snap.window_failures, 0, "{snap:?}");
    assert_eq!(snap.consecutive_failures, 0);
    assert_eq!(fx.selector.feed(), [("s2".to_owned(), true)]);
    assert!(fx.breaker.try_enter("s1", "later").await.unwrap().allowed);
}

// covers: H-49, H-69, R-7, G-118
#[tokio::test(start_paused = true)]
async fn h_89_cf_269_g_116_attempts_two_and_no_task_leak() {
    let fx = FxBuilder::hedge_after().build();
    let before = alive_tasks();
    let g = s2_wins(&fx).await;
    assert_eq!(g.stats.attempts, 2);
    assert_eq!(alive_tasks(), before, "R-7: nothing spawned by the call");
}

// ---------------------------------------------------------------------------------------------
// H-90, H-91: external cancellation and the deadline drop both legs
// ---------------------------------------------------------------------------------------------

// covers: H-8, H-49, R-8, G-113, CF-254
#[tokio::test(start_paused = true)]
async fn h_90_cf_270_h_48_external_cancel_cancels_both_legs() {
    let fx = FxBuilder::hedge_after().build();
    let before = alive_tasks();
    let h1 = fx.push_for("s1", Script::hang());
    let h2 = fx.push_for("s2", Script::hang());
    {
        let call = fx.chat();
        tokio::pin!(call);
        tokio::select! {
            biased;
            r = &mut call => panic!("the call returned: {r:?}"),
            () = async { h1.entered().await; h2.entered().await; } => {}
        }
    } // dropped: the cancellation
    fx.gov.quiesce().await;
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "cancelled".to_owned()),
            ("s2".to_owned(), "cancelled".to_owned())
        ]
    );
    let t = fx.sink.terminals();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].stats.hedges, 1);
    fx.assert_idle().await;
    assert_eq!(alive_tasks(), before);
}

// covers: CF-254
#[tokio::test(start_paused = true)]
async fn h_91_cf_271_h_73_deadline_cuts_hedged_tree() {
    let fx = FxBuilder {
        deadline: Some(ms(200)),
        ..FxBuilder::hedge_after()
    }
    .build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::hang());
    let start = Instant::now();
    let e = fx.chat_non_stream().await.unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)), "{e:?}");
    assert!(
        (ms(200)..ms(250)).contains(&start.elapsed()),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(fx.calls(), ["s1", "s2"]);
    // G-101: the governor awaited the call's cleanup jobs before returning.
    fx.assert_idle().await;
    fx.gov.quiesce().await;
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "cancelled".to_owned()),
            ("s2".to_owned(), "cancelled".to_owned())
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// H-92 … H-96: late primary, both failing, 429 rules (G-51)
// ---------------------------------------------------------------------------------------------

// covers: H-36, H-40, H-70
#[tokio::test(start_paused = true)]
async fn h_92_cf_272_primary_late_success_wins_back() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::succeed_after(ms(300), ok_result("late")));
    fx.push_for("s2", Script::hang());
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.result.content, "late");
    assert_eq!(g.source.name, "s1");
    assert_eq!(g.stats.hedges, 1);
    assert!(!g.stats.hedge_won);
    assert!(
        (250..=g.stats.total_latency_ms).contains(&g.stats.generation_ms),
        "{:?}",
        g.stats
    );
    fx.gov.quiesce().await;
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "ok".to_owned()),
            ("s2".to_owned(), "hedge_cancelled".to_owned())
        ]
    );
}

fn both_transient_rounds(fx: &Fx, rounds: usize) {
    for _ in 0..rounds {
        fx.push_for("s1", Script::fail_after(ms(100), transient(503)));
        fx.push_for("s2", Script::fail_after(ms(120), transient(503)));
    }
}

// covers: H-38, H-39, H-68, R-6
#[tokio::test(start_paused = true)]
async fn h_93_cf_273_g_51_both_fail_counts_budget_once() {
    let fx = FxBuilder::hedge_after().max_attempts(2).build();
    both_transient_rounds(&fx, 3);
    let e = fx.chat_non_stream().await.unwrap_err();
    assert!(matches!(e, GatewayError::AllSourcesExhausted(_)), "{e:?}");
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    // One budget unit per round: two rounds of two legs.
    assert_eq!(fx.calls(), ["s1", "s2", "s1", "s2"]);
    assert_eq!(terminal_stats(&fx).await.hedges, 2);
    // both legs' deltas were applied.
    let u = unavailable(&e);
    assert_eq!(
        u.per_source_reasons.get("s2"),
        Some(&FailureReason::NetworkError)
    );
}

#[tokio::test(start_paused = true)]
async fn h_94_cf_274_stall_attribution_none_when_no_winner() {
    let fx = FxBuilder::hedge_after().max_attempts(1).build();
    both_transient_rounds(&fx, 1);
    let e = fx.chat_non_stream().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    let s = terminal_stats(&fx).await;
    assert_eq!(s.hedges, 1);
    assert!(!s.hedge_won);
    assert_eq!(s.generation_ms, 0);
    assert_eq!((s.stall_ms, s.stall_count), (None, None));
}

// covers: H-39, H-74
#[tokio::test(start_paused = true)]
async fn h_95_cf_275_g_53_both_429_refund_no_budget() {
    let mut b = FxBuilder::hedge_after().max_attempts(1);
    b.backpressure.stall_window_s = 0.3;
    for s in &mut b.sources {
        s.tpm = 0; // no quota wait: the stall must come from the refunded 429 rounds
    }
    let fx = b.build();
    for _ in 0..40 {
        fx.push_for("s1", Script::fail_after(ms(100), rate_limited(Some(0.01))));
        fx.push_for("s2", Script::fail_after(ms(10), rate_limited(Some(0.01))));
    }
    let e = fx.chat_non_stream().await.unwrap_err();
    let u = unavailable(&e);
    assert_eq!(u.reason, ScopeReason::Stalled, "{e:?}");
    assert!(fx.calls().len() >= 4, "several budget-free rounds ran");
    assert!(fx.calls().len().is_multiple_of(2), "every round hedged");
}

// covers: H-38, H-74
#[tokio::test(start_paused = true)]
async fn h_96_cf_276_mixed_429_and_failure_counts_budget() {
    let fx = FxBuilder::hedge_after().max_attempts(1).build();
    fx.push_for("s1", Script::fail_after(ms(100), rate_limited(Some(0.01))));
    fx.push_for("s2", Script::fail_after(ms(20), transient(503)));
    let e = fx.chat_non_stream().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.calls(), ["s1", "s2"]);
    // The combined failure is the hedge's Transient (G-51).
    assert!(matches!(
        unavailable(&e).last_failure.as_deref(),
        Some(e) if e.http_status() == Some(503)
    ));
}

#[tokio::test(start_paused = true)]
async fn g_51_primary_transient_hedge_429_counts_primary() {
    let fx = FxBuilder::hedge_after().max_attempts(1).build();
    fx.push_for("s1", Script::fail_after(ms(100), transient(500)));
    fx.push_for("s2", Script::fail_after(ms(20), rate_limited(Some(0.01))));
    let e = fx.chat_non_stream().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.calls(), ["s1", "s2"]);
    assert!(matches!(
        unavailable(&e).last_failure.as_deref(),
        Some(e) if e.http_status() == Some(500)
    ));
}

#[test]
fn g_51_h_38_combine_failures_rules() {
    let t = transient(503);
    let r = rate_limited(Some(1.0));
    let d = dead();
    assert_eq!(combine_failures(&r, &t), HedgeSide::Hedge);
    assert_eq!(combine_failures(&r, &d), HedgeSide::Hedge);
    assert_eq!(combine_failures(&t, &r), HedgeSide::Primary);
    assert_eq!(combine_failures(&r, &r), HedgeSide::Primary);
    assert_eq!(combine_failures(&t, &t), HedgeSide::Primary);
    assert_eq!(combine_failures(&d, &t), HedgeSide::Primary);
}

#[tokio::test(start_paused = true)]
async fn h_38_same_kind_keeps_primary_source_dead_switch() {
    // Both legs SourceDead: the primary's failure (immediate switch, no backoff) is the round's.
    let fx = FxBuilder::hedge_after()
        .sources(&["s1", "s2", "s3"])
        .max_attempts(3)
        .build();
    fx.push_for("s1", Script::fail_after(ms(100), dead()));
    fx.push_for("s2", Script::fail_after(ms(20), dead()));
    fx.push_for("s3", Script::ok(ok_result("s3")));
    let start = Instant::now();
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.source.name, "s3");
    assert_eq!(
        start.elapsed(),
        ms(100),
        "no backoff after a SourceDead round"
    );
    assert_eq!(fx.calls(), ["s1", "s2", "s3"]);
    assert_eq!(g.stats.hedges, 1);
    assert!(!g.stats.hedge_won);
    assert_eq!(g.stats.attempts, 3);
}

// covers: V-51
#[tokio::test(start_paused = true)]
async fn h_35_h_42_primary_raised_waits_for_hedge_which_wins() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::fail_after(ms(80), support::invalid()));
    fx.push_for("s2", Script::succeed_after(ms(100), ok_result("rescued")));
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.result.content, "rescued");
    assert!(g.stats.hedge_won);
    fx.gov.quiesce().await;
    // The swallowed raised error stays visible in the primary's row.
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "ResultInvalidError".to_owned()),
            ("s2".to_owned(), "ok".to_owned())
        ]
    );
}

// covers: H-68, H-70, V-51
#[tokio::test(start_paused = true)]
async fn h_37_no_winner_primary_raised_propagates_after_hedge() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::fail_after(ms(80), support::rejected()));
    fx.push_for("s2", Script::fail_after(ms(100), transient(503)));
    let e = fx.chat_non_stream().await.unwrap_err();
    assert!(matches!(e, GatewayError::RequestRejected(_)), "{e:?}");
    assert_eq!(fx.calls(), ["s1", "s2"]);
    let s = terminal_stats(&fx).await;
    assert_eq!(s.hedges, 1, "D1: the launched leg counts");
    assert!(!s.hedge_won);
}

// covers: H-34, H-36, H-43, H-44, H-63, R-8
#[tokio::test(start_paused = true)]
async fn h_41_race_loser_keeps_its_own_success_row_and_settlement() {
    // Both legs succeed in the same instant: the primary wins the tie (H-36); the hedge, whose
    // transport had already returned, finishes as a race loser: success row, real usage.
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::succeed_after(ms(100), ok_result("p")));
    fx.push_for("s2", Script::succeed_after(ms(50), ok_result("h")));
    let g = fx.chat_non_stream().await.unwrap();
    assert_eq!(g.result.content, "p");
    assert!(!g.stats.hedge_won);
    assert_eq!(g.stats.hedges, 1);
    assert_eq!(
        g.stats.generation_ms, 100,
        "the winner's sample, not the race loser's"
    );
    fx.assert_usage("s1", 15, 0).await;
    fx.assert_usage("s2", 15, 0).await;
    fx.gov.quiesce().await;
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "ok".to_owned()),
            ("s2".to_owned(), "ok".to_owned())
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// H-1, H-12, H-13: off by default, the gate; R-35: the budget
// ---------------------------------------------------------------------------------------------

/// The same scripted scenario — 429, Transient, SourceDead switch, success — on a fixture.
async fn scenario_rows(fx: &Fx, stream: bool) -> (Vec<(String, String)>, Vec<String>, u32) {
    // G-62 demotes a source that failed in this loop: s1, s2, s1, s2.
    fx.push_for("s1", Script::fail(rate_limited(Some(0.01))));
    fx.push_for("s2", Script::fail(transient(503)));
    fx.push_for("s1", Script::fail(dead()));
    fx.push_for("s2", Script::ok(ok_result("done")));
    let g = fx
        .chat_with(CallOptions::default().with_stream(stream))
        .await
        .unwrap();
    fx.gov.quiesce().await;
    (fx.row_labels(), fx.calls(), g.stats.attempts)
}

// covers: CF-084
#[tokio::test(start_paused = true)]
async fn h_1_off_by_default_is_exactly_the_unhedged_path() {
    let off = FxBuilder::hedge_off().build();
    let expected = scenario_rows(&off, true).await;
    assert_eq!(
        expected.0,
        [
            ("s1".to_owned(), "TransientError".to_owned()),
            ("s2".to_owned(), "TransientError".to_owned()),
            ("s1".to_owned(), "SourceDeadError".to_owned()),
            ("s2".to_owned(), "ok".to_owned()),
        ]
    );
    // Neither key set: no progress receiver for any attempt (H-100 case 4).
    assert!(off.runner.signal_pattern().iter().all(|s| !s));
    // A stall-only scope on a non-stream call runs the same single-leg path (H-12 row 2) …
    let stall_only = FxBuilder::hedge_stall().build();
    assert_eq!(scenario_rows(&stall_only, false).await, expected);
    assert!(stall_only.runner.signal_pattern().iter().all(|s| !s));
    // … and a hedged scope whose rounds all end before the threshold writes the same rows.
    let hedged = FxBuilder::hedge_after().build();
    assert_eq!(scenario_rows(&hedged, true).await, expected);
    assert!(hedged.runner.signal_pattern().iter().all(|s| *s));
}

#[test]
fn h_12_h_13_entry_gate_depends_on_config_and_wire_mode_only() {
    let off = HedgeConfig::off();
    let after = off.with_after(T).unwrap();
    let stall = off.with_stall_after(T).unwrap();
    let both = after.with_stall_after(T).unwrap();
    assert!(!off.hedges_round(true) && !off.hedges_round(false));
    assert!(!stall.hedges_round(false));
    assert!(stall.hedges_round(true));
    assert!(after.hedges_round(false) && after.hedges_round(true));
    assert!(both.hedges_round(false) && both.hedges_round(true));
    // D1: max_extra > 1 acts as 1.
    assert_eq!(both.with_max_extra(3).unwrap().legs_per_round(), 1);
    assert_eq!(off.legs_per_round(), 0);
    assert_eq!(HedgeConfig::default(), off);
}

// covers: H-33, D1
#[tokio::test(start_paused = true)]
async fn h_6_d1_max_extra_above_one_launches_one_leg_per_round() {
    let fx = FxBuilder::hedge_after()
        .hedge(HedgeConfig::new(Some(T), None, 3).unwrap())
        .sources(&["s1", "s2", "s3"])
        .build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::hang());
    fx.push_for("s3", Script::ok(ok_result("s3")));
    let call = fx.chat_with(CallOptions::default().with_deadline(ms(500)));
    let e = call.await.unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)));
    assert_eq!(fx.calls(), ["s1", "s2"], "one hedge leg only");
}

#[tokio::test(start_paused = true)]
async fn r_35_hedge_refused_by_retry_budget_is_abandoned() {
    let mut b = FxBuilder::hedge_after();
    b.retry.budget_ratio = Some(0.5); // a lone call gets no retry and no hedge
    let fx = b.build();
    let h1 = fx.push_for("s1", gated_ok("ok-s1"));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
    fx.assert_idle().await; // the hedge admission was released
    assert_eq!(fx.stats("s2").await.tpm_used, 0);

    let mut b = FxBuilder::hedge_after();
    b.retry.budget_ratio = Some(1.0);
    let fx = b.build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::ok(ok_result("fast")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.hedges, 1);
    assert_eq!(fx.gov.retry_budget().unwrap().stats().withdrawals, 1);
}

// ---------------------------------------------------------------------------------------------
// H-107, H-110: generation time and the context API
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn h_107_generation_ms_excludes_backoff_and_admission() {
    let mut b = FxBuilder::hedge_off().sources(&["s1"]);
    b.retry = retry(3, 5.0, 30.0); // jitter 0.5 → factor 1.0: a 5.0 s backoff
    let fx = b.build();
    fx.push_for("s1", Script::fail(transient(503)));
    fx.push_for("s1", Script::succeed_after(ms(250), ok_result("ok")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.generation_ms, 250);
    assert!(g.stats.total_latency_ms >= 5250, "{:?}", g.stats);
    assert_eq!(g.stats.hedges, 0);
    assert!(!g.stats.hedge_won);
}

#[tokio::test(start_paused = true)]
async fn h_110_h_62_context_api() {
    let stats = CallStats::new("id", 3, 10);
    assert_eq!(
        (stats.hedges, stats.generation_ms, stats.hedge_won),
        (0, 0, false)
    );
    assert_eq!((stats.stall_ms, stats.stall_count), (None, None));

    let ctx = CallContext::new(
        Arc::new(TokioClock::new()),
        RowCall::new("lc".to_owned(), CallOperation::Chat, "llm".to_owned()),
    );
    ctx.record_generation(ms(100), None, None, false);
    ctx.record_generation(ms(30), None, None, false);
    assert_eq!(
        ctx.snapshot().generation_ms,
        30,
        "overwritten, not accumulated"
    );
    ctx.register_hedge(false);
    ctx.register_hedge(true);
    let s = ctx.snapshot();
    assert_eq!((s.hedges, s.hedge_won), (2, true));
    ctx.record_generation(ms(5000), Some(3200.0), Some(2), true);
    let s = ctx.snapshot();
    assert_eq!(
        (s.generation_ms, s.stall_ms, s.stall_count),
        (1800, Some(3200), Some(2))
    );
    ctx.record_generation(ms(200), None, None, true);
    let s = ctx.snapshot();
    assert_eq!((s.hedges, s.generation_ms, s.hedge_won), (2, 200, true));
    assert_eq!((s.stall_ms, s.stall_count), (None, None));
    ctx.set_hedge_won(false);
    assert!(!ctx.snapshot().hedge_won);
    assert_eq!(ctx.snapshot().generation_ms, 200, "the sample is kept");
}

#[tokio::test(start_paused = true)]
async fn h_63_single_leg_success_records_sample() {
    let fx = FxBuilder::hedge_off().sources(&["s1"]).build();
    fx.push_for(
        "s1",
        Script::succeed_after(ms(40), TransportResult::ok(1, 1).with_stall(0.0, 0)),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.generation_ms, 40);
    assert_eq!((g.stats.stall_ms, g.stats.stall_count), (Some(0), Some(0)));
}

#[tokio::test(start_paused = true)]
async fn h_2_embedding_never_hedges() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::succeed_after(ms(200), ok_result("emb")));
    let g = fx
        .gov
        .run_embed(&fx.runner, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(g.source.name, "s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
    assert_eq!(fx.runner.signal_pattern(), [false]);
}

#[tokio::test(start_paused = true)]
async fn h_29_hedge_admission_backend_failure_cancels_primary() {
    // A limiter whose acquisition fails for s2 only: the hedge admission fails closed.
    use gateway_ports::{BackendError, BackendErrorKind};
    use gateway_testkit::hooked::{Effect, HookedLimiter, LimiterCall};

    let base = FxBuilder::hedge_after().build();
    let limiter = Arc::new(HookedLimiter::new(base.limiter.clone()));
    limiter.before(|c| match c {
        LimiterCall::TryAcquire { source, .. } if source == "s2" => {
            Effect::Fail(BackendError::new(BackendErrorKind::Unavailable, "down"))
        }
        _ => Effect::Forward,
    });
    let sink = Arc::new(gateway_testkit::RecordingRowSink::new());
    let (gov, rx) = gateway_core::governor::GovernorBuilder::new(
        "llm",
        vec![support::source("s1"), support::source("s2")],
        limiter,
        base.breaker.clone(),
    )
    .selector(Arc::new(gateway_core::select::StaticSelector))
    .pacer(Arc::new(gateway_core::pacer::NoopPacer))
    .row_sink(sink.clone())
    .hedge(HedgeConfig::new(Some(T), None, 1).unwrap())
    .build();
    let worker = tokio::spawn(gateway_core::cleanup::run_cleanup_worker(rx));
    base.push_for("s1", Script::hang());
    let e = gov
        .run_chat(&base.runner, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::GovernanceBackend(_)), "{e:?}");
    gov.quiesce().await;
    let rows = sink.attempts();
    assert_eq!(rows.len(), 1);
    assert_eq!(label(&rows[0]), "cancelled");
    assert_eq!(base.stats("s1").await.inflight, 0);
    gov.close().await;
    worker.await.unwrap();
}

// covers: G-95, H-4
#[tokio::test(start_paused = true)]
async fn h_11_per_call_deadline_below_threshold_silently_disables_hedging() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::ok(ok_result("never")));
    let e = fx
        .chat_with(CallOptions::default().with_deadline(ms(30)))
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)), "{e:?}");
    assert_eq!(fx.calls(), ["s1"]);
}

// covers: G-117
#[test]
fn h_71_call_context_is_sync_and_never_blocks() {
    fn assert_sync_send<T: Sync + Send>() {}
    assert_sync_send::<CallContext>();
}
