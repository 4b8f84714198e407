//! The mid-stream stall hedge, the two-phase window and generation time (60 §4, §10–§14
//! H-97..H-105, H-108; 95 §11 CF-277..CF-285; 05 ). Tier 1: paused tokio clock,
//! `ScriptedRunner` (chunks, gates, stall reports, injected-clock advances), memory backends.
//! Requests stream unless stated.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fns panic on failure by design"
)]

use crate::hedge_support;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gateway_core::call_context::CallContext;
use gateway_core::clock::TokioClock;
use gateway_core::governor::CallOptions;
use gateway_core::hedge::HedgeConfig;
use gateway_core::rows::RowCall;
use gateway_ports::{Acquire, CallOperation, GatewayError, RateLimiter, ScopeReason};
use gateway_testkit::{Script, Step};
use hedge_support::*;
use support::{transient, unavailable};
use tokio::time::{Instant, sleep};

fn both() -> HedgeConfig {
    HedgeConfig::new(Some(T), Some(T), 1).unwrap()
}

/// `chunk` then hang (60 §14 vocabulary).
fn chunk_then_hang() -> Script {
    Script::new().then(Step::Token).then(Step::Hang)
}

// ---------------------------------------------------------------------------------------------
// H-97, H-98: the stall hedge and the winner's stall attribution
// ---------------------------------------------------------------------------------------------

// covers: H-19, H-60, H-61, H-65, T-28
#[tokio::test(start_paused = true)]
async fn h_97_cf_277_stall_triggers_hedge_after_first_token() {
    let fx = FxBuilder {
        fake_clock: true,
        ..FxBuilder::hedge_stall()
    }
    .build();
    fx.push_for("s1", chunk_then_hang());
    fx.push_for(
        "s2",
        Script::new()
            .advance_clock(Duration::from_secs(2))
            .report_stall(1500.0, 2)
            .then_ok(ok_result("fast")),
    );
    let start = Instant::now();
    let g = fx.chat().await.unwrap();
    assert!(start.elapsed() < T * 10, "{:?}", start.elapsed());
    assert_eq!(g.result.content, "fast");
    assert_eq!(fx.calls(), ["s1", "s2"]);
    let s = &g.stats;
    assert_eq!((s.hedges, s.hedge_won, s.attempts), (1, true, 2));
    assert_eq!(s.generation_ms, 500);
    assert_eq!((s.stall_ms, s.stall_count), (Some(1500), Some(2)));
    assert_eq!(s.generation_ms + 1500, s.total_latency_ms);
    fx.gov.quiesce().await;
    let rows = fx.rows();
    assert_eq!(label(&rows[0]), "hedge_cancelled");
    assert_eq!(row_stall(&rows[0]), (None, None));
    assert_eq!(label(&rows[1]), "ok");
    assert_eq!(row_stall(&rows[1]), (Some(1500.0), Some(2)));
}

// covers: H-58, H-61, H-62, S-87
#[tokio::test(start_paused = true)]
async fn h_98_cf_278_single_leg_attempt_row_carries_stall() {
    let fx = FxBuilder {
        fake_clock: true,
        ..FxBuilder::hedge_off().sources(&["s1"])
    }
    .build();
    fx.push_for(
        "s1",
        Script::new()
            .advance_clock(Duration::from_secs(1))
            .report_stall(300.0, 1)
            .then_ok(ok_result("ok")),
    );
    let g = fx.chat().await.unwrap();
    fx.gov.quiesce().await;
    let rows = fx.rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(label(&rows[0]), "ok");
    assert_eq!(row_stall(&rows[0]), (Some(300.0), Some(1)));
    assert_eq!(g.stats.generation_ms, 700);
    assert_eq!(g.stats.stall_ms, Some(300));
}

// ---------------------------------------------------------------------------------------------
// H-99, H-18, H-20: re-checks
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn h_99_cf_279_h_19_stall_recheck_prevents_false_trigger() {
    let fx = FxBuilder::hedge_stall().build();
    fx.push_for(
        "s1",
        Script::new()
            .then(Step::Token)
            .chunk_after(ms(49))
            .then_ok(ok_result("done")),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(g.result.content, "done");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!((g.stats.hedges, g.stats.attempts), (0, 1));
}

// covers: S-86
#[tokio::test(start_paused = true)]
async fn h_20_stall_chunk_arriving_with_timer_expiry_is_seen() {
    // The chunk lands exactly when the 0.05 s window expires: no trigger (05 R-12).
    let fx = FxBuilder::hedge_stall().build();
    fx.push_for(
        "s1",
        Script::new()
            .then(Step::Token)
            .chunk_after(T)
            .chunk_after(T - ms(1))
            .then_ok(ok_result("done")),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
}

// covers: S-86
#[tokio::test(start_paused = true)]
async fn h_18_first_token_with_timer_expiry_prevents_trigger() {
    let fx = FxBuilder::hedge_after().build();
    let h1 = fx.push_for(
        "s1",
        Script::new()
            .chunk_after(T)
            .gate()
            .then_ok(ok_result("ok-s1")),
    );
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
}

// ---------------------------------------------------------------------------------------------
// H-100, H-101: the independence matrix
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn h_100_cf_280_case_1_only_after_pre_ttft_hang_hedges() {
    let fx = FxBuilder::hedge_after().build();
    fx.push_for("s1", Script::hang());
    fx.push_for("s2", Script::ok(ok_result("fast")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.hedges, 1);
}

#[tokio::test(start_paused = true)]
async fn h_100_cf_280_case_2_h_21_only_stall_never_triggers_before_first_token() {
    let fx = FxBuilder::hedge_stall().build();
    let h1 = fx.push_for("s1", Script::new().gate().then_ok(ok_result("ok-s1")));
    let (g, ()) = tokio::join!(fx.chat(), async {
        h1.entered().await;
        sleep(T * 4).await;
        assert_eq!(fx.calls(), ["s1"], "no hedge before the first token");
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!((g.stats.hedges, g.stats.attempts), (0, 1));
}

// covers: H-17, H-19, R-12
#[tokio::test(start_paused = true)]
async fn h_100_cf_280_case_3_both_stage_2_hedge_after_chunk() {
    let fx = FxBuilder::hedge_after().hedge(both()).build();
    // First chunk at 0.04 s (before the 0.05 s first-token threshold), then silence.
    fx.push_for("s1", Script::new().chunk_after(ms(40)).then(Step::Hang));
    let h2 = fx.push_for("s2", Script::ok(ok_result("fast")));
    let start = Instant::now();
    let (g, launched) = tokio::join!(fx.chat(), async {
        h2.entered().await;
        start.elapsed()
    });
    let g = g.unwrap();
    assert_eq!(g.stats.hedges, 1);
    assert_eq!(
        launched,
        ms(90),
        "stage 2: 0.05 s of silence after the chunk at 0.04 s"
    );
}

#[tokio::test(start_paused = true)]
async fn h_100_cf_280_case_3b_both_pre_ttft_hang_stage_1_hedge() {
    let fx = FxBuilder::hedge_after().hedge(both()).build();
    fx.push_for("s1", Script::hang());
    let h2 = fx.push_for("s2", Script::ok(ok_result("fast")));
    let start = Instant::now();
    let (g, launched) = tokio::join!(fx.chat(), async {
        h2.entered().await;
        start.elapsed()
    });
    assert_eq!(g.unwrap().stats.hedges, 1);
    assert_eq!(launched, T, "stage 1");
}

#[tokio::test(start_paused = true)]
async fn h_100_cf_280_case_4_neither_runs_without_progress_receiver() {
    let fx = FxBuilder::hedge_off().build();
    fx.push_for("s1", Script::succeed_after(ms(200), ok_result("ok")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.hedges, 0);
    assert_eq!(fx.runner.signal_pattern(), [false]);
}

#[tokio::test(start_paused = true)]
async fn h_101_cf_281_stall_only_non_stream_degrades_to_single_leg() {
    let fx = FxBuilder::hedge_stall().build();
    let h1 = fx.push_for("s1", Script::new().gate().then_ok(ok_result("ok-s1")));
    let (g, ()) = tokio::join!(fx.chat_non_stream(), async {
        h1.entered().await;
        sleep(T * 4).await;
        assert_eq!(fx.calls(), ["s1"]);
        h1.release();
    });
    let g = g.unwrap();
    assert_eq!((g.stats.hedges, g.stats.attempts), (0, 1));
    assert_eq!(fx.runner.signal_pattern(), [false], "no progress receiver");
}

// ---------------------------------------------------------------------------------------------
// H-102 … H-105
// ---------------------------------------------------------------------------------------------

// covers: S-91
#[tokio::test(start_paused = true)]
async fn h_102_cf_282_h_75_watchdog_kills_primary_hedge_leg_survives() {
    let fx = FxBuilder::hedge_stall().build();
    fx.push_for(
        "s1",
        Script::new()
            .then(Step::Token)
            .then(Step::Sleep(ms(120)))
            .then_fail(transient(504)),
    );
    fx.push_for("s2", Script::succeed_after(ms(200), ok_result("rescued")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.result.content, "rescued");
    assert_eq!((g.stats.hedges, g.stats.hedge_won), (1, true));
    // A watchdog kill is an ordinary Transient: it feeds s1's breaker (the H-44 asymmetry).
    let snap = fx.breaker.snapshot("s1").await.unwrap();
    assert_eq!(
        (snap.window_calls, snap.window_failures),
        (1, 1),
        "{snap:?}"
    );
    fx.gov.quiesce().await;
    assert_eq!(
        fx.row_labels(),
        [
            ("s1".to_owned(), "TransientError".to_owned()),
            ("s2".to_owned(), "ok".to_owned())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn h_103_cf_283_stall_both_fail_counts_budget_once() {
    let fx = FxBuilder::hedge_stall().max_attempts(2).build();
    for _ in 0..3 {
        fx.push_for(
            "s1",
            Script::new()
                .then(Step::Token)
                .then(Step::Sleep(ms(100)))
                .then_fail(transient(503)),
        );
        fx.push_for("s2", Script::fail_after(ms(120), transient(503)));
    }
    let e = fx.chat().await.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.calls(), ["s1", "s2", "s1", "s2"]);
    fx.gov.quiesce().await;
    let s = &fx.sink.terminals()[0].stats;
    assert_eq!((s.hedges, s.hedge_won, s.generation_ms), (2, false, 0));
    assert_eq!((s.stall_ms, s.stall_count), (None, None));
}

#[tokio::test(start_paused = true)]
async fn h_104_cf_284_h_23_external_cancel_during_stall_wait_penetrates() {
    let fx = FxBuilder::hedge_stall()
        .hedge(HedgeConfig::new(None, Some(Duration::from_secs(5)), 1).unwrap())
        .build();
    let before = alive_tasks();
    let h1 = fx.push_for("s1", chunk_then_hang());
    {
        let call = fx.chat();
        tokio::pin!(call);
        tokio::select! {
            biased;
            r = &mut call => panic!("the call returned: {r:?}"),
            () = async { h1.entered().await; sleep(Duration::from_secs(1)).await; } => {}
        }
    }
    fx.gov.quiesce().await;
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(fx.row_labels(), [("s1".to_owned(), "cancelled".to_owned())]);
    fx.assert_usage("s1", 400, 0).await; // S3: cancelled in flight keeps est
    assert_eq!(alive_tasks(), before, "no leftover task or waiter");
}

#[tokio::test(start_paused = true)]
async fn h_105_cf_285_hedge_leg_content_event_always_none() {
    let fx = FxBuilder::hedge_stall().build();
    fx.push_for("s1", chunk_then_hang());
    fx.push_for(
        "s2",
        Script::new()
            .then(Step::Token)
            .then(Step::Token)
            .then_ok(ok_result("fast")),
    );
    let g = fx.chat().await.unwrap();
    assert!(g.stats.hedge_won);
    assert_eq!(fx.runner.signal_pattern(), [true, false]);
}

// ---------------------------------------------------------------------------------------------
// at most one trigger per round reaches admission
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn r_13_h_28_after_abandoned_admission_no_stage_2_trigger() {
    let fx = FxBuilder::hedge_after().hedge(both()).build();
    let Acquire::Granted(held) = fx.limiter.try_acquire("s2", 400).await.unwrap() else {
        panic!("s2 slot not granted");
    };
    // Stage 1 fires at 0.05 s and finds no candidate; the first chunk comes at 0.1 s, then a
    // 0.2 s silence that would be a stage-2 trigger — but the round already used its trigger.
    fx.push_for(
        "s1",
        Script::new()
            .chunk_after(ms(100))
            .then(Step::Sleep(ms(200)))
            .then_ok(ok_result("ok-s1")),
    );
    let (g, ()) = tokio::join!(fx.chat(), async {
        sleep(ms(60)).await;
        held.release().await.unwrap(); // s2 would be admissible from now on
    });
    let g = g.unwrap();
    assert_eq!(g.result.content, "ok-s1");
    assert_eq!(fx.calls(), ["s1"]);
    assert_eq!(g.stats.hedges, 0);
}

#[tokio::test(start_paused = true)]
async fn h_24_primary_failure_inside_window_is_an_ordinary_round() {
    let fx = FxBuilder::hedge_stall().max_attempts(2).build();
    fx.push_for(
        "s1",
        Script::new()
            .then(Step::Token)
            .then(Step::Sleep(ms(10)))
            .then_fail(transient(503)),
    );
    fx.push_for("s2", Script::ok(ok_result("next-round")));
    let g = fx.chat().await.unwrap();
    assert_eq!(g.result.content, "next-round");
    assert_eq!(fx.calls(), ["s1", "s2"]);
    assert_eq!(
        g.stats.hedges, 0,
        "s2 ran as the next round's primary, not as a hedge"
    );
    assert!(!g.stats.hedge_won);
}

#[tokio::test(start_paused = true)]
async fn h_91_deadline_during_stall_hedge_keeps_type_and_releases() {
    let fx = FxBuilder {
        deadline: Some(ms(300)),
        ..FxBuilder::hedge_stall()
    }
    .build();
    fx.push_for("s1", chunk_then_hang());
    fx.push_for("s2", Script::new().then(Step::Token).then(Step::Hang));
    let e = fx
        .chat_with(CallOptions::default().with_stream(true))
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)), "{e:?}");
    assert_eq!(fx.calls(), ["s1", "s2"]);
    fx.assert_idle().await;
}

// ---------------------------------------------------------------------------------------------
// H-108: net generation time
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn h_108_h_62_generation_ms_net_of_stall() {
    let ctx = CallContext::new(
        Arc::new(TokioClock::new()),
        RowCall::new("lc", CallOperation::Chat, "llm"),
    );
    ctx.record_generation(Duration::from_secs(5), Some(3200.0), Some(2), false);
    let s = ctx.snapshot();
    assert_eq!(
        (s.generation_ms, s.stall_ms, s.stall_count),
        (1800, Some(3200), Some(2))
    );
    assert_eq!(s.generation_ms + s.stall_ms.unwrap(), 5000);
    // clamps_negative_to_zero
    ctx.record_generation(Duration::from_secs(5), Some(6000.0), Some(3), false);
    let s = ctx.snapshot();
    assert_eq!(
        (s.generation_ms, s.stall_ms, s.stall_count),
        (0, Some(6000), Some(3))
    );
    // stall none → the wall time
    ctx.record_generation(Duration::from_secs(5), None, None, false);
    let s = ctx.snapshot();
    assert_eq!(
        (s.generation_ms, s.stall_ms, s.stall_count),
        (5000, None, None)
    );
}

// covers: H-56, H-58, H-52
#[test]
fn h_51_h_53_h_57_h_59_stall_metering_pins() {
    use gateway_core::executor::stall_from_times;
    let s = |v: &[f64]| -> Vec<Duration> {
        v.iter()
            .map(|x| Duration::try_from_secs_f64(*x).unwrap())
            .collect()
    };
    let (ms_, n) = stall_from_times(&s(&[0.0, 0.3, 2.0, 2.1]), 1000);
    assert!((ms_.unwrap() - 1700.0).abs() < 1e-6);
    assert_eq!(n, Some(1));
    assert_eq!(stall_from_times(&[], 1000), (None, None));
    assert_eq!(stall_from_times(&s(&[0.5]), 1000), (None, None));
    // H-53: a gap equal to the threshold is not counted; H-56: observed-no-stall is Some(0).
    assert_eq!(
        stall_from_times(&s(&[0.0, 1.0]), 1000),
        (Some(0.0), Some(0))
    );
    // H-57: two stalls are never merged.
    let (total, count) = stall_from_times(&s(&[0.0, 2.0, 2.1, 4.1]), 1000);
    assert_eq!(count, Some(2));
    assert!((total.unwrap() - 4000.0).abs() < 1e-6);
}
