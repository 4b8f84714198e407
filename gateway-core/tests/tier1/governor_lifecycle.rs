//! Governor lifecycle and call statistics (05; 30 G-111, G-117..G-122;
//! 95 CF-288, CF-289, CF-292, CF-306, CF-307).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::call_context::{CallContext, new_uuid_v4};
use gateway_core::clock::FakeClock;
use gateway_core::rows::RowCall;
use gateway_ports::{CallOperation, GatewayError};
use gateway_testkit::{RecordingRowSink, Script};
use support::*;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

#[tokio::test(start_paused = true)]
async fn r_17_call_after_close_is_client_closed_close_idempotent() {
    let fx = fx();
    fx.runner.push(ok());
    fx.chat().await.unwrap();
    fx.gov.close().await;
    fx.gov.close().await;
    assert!(fx.gov.is_closed());
    let e = fx.chat().await.unwrap_err();
    assert!(matches!(e, GatewayError::ClientClosed));
    assert_eq!(fx.runner.call_count(), 1);
    fx.sink.assert_counts(1, 0);
    // The worker returns once the queue is shut and drained.
    tokio::time::timeout(Duration::from_secs(1), fx.worker)
        .await
        .unwrap()
        .unwrap();
}

// covers: G-112
#[tokio::test(start_paused = true)]
async fn g_111_close_drains_pending_cleanup() {
    let fx = FxBuilder {
        sink: Some(RecordingRowSink::new().with_delay(Duration::from_millis(100))),
        ..FxBuilder::default()
    }
    .build();
    let h = fx.runner.push(Script::hang());
    {
        let mut call = Box::pin(fx.chat());
        tokio::select! {
            _ = call.as_mut() => panic!("finished"),
            () = h.entered() => {}
        }
    }
    fx.gov.close().await;
    fx.sink.assert_counts(1, 1);
    assert_eq!(fx.gov.cleanup_stats().pending, 0);
}

// covers: G-117, G-122
#[tokio::test(start_paused = true)]
async fn cf_289_concurrent_calls_distinct_ids_counters_not_shared() {
    let fx = FxBuilder::default().sources(&["s1", "s2"]).build();
    fx.runner.push_all([ok(), ok()]);
    let (a, b) = tokio::join!(fx.chat(), fx.chat());
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.stats.logical_call_id, b.stats.logical_call_id);
    assert_eq!((a.stats.attempts, b.stats.attempts), (1, 1));
}

// covers: G-119, G-122
#[tokio::test(start_paused = true)]
async fn cf_292_ticking_recorder_counts_inline_row_time() {
    // A recorder that advances the injected clock 0.5 s per row: the inline success row
    // counts into total_latency_ms (80 T-6).
    let fx = FxBuilder {
        fake_clock: true,
        tick_rows: Some(Duration::from_millis(500)),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(ok());
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.total_latency_ms, 500);
}

// covers: G-119
#[tokio::test(start_paused = true)]
async fn cf_316_terminal_snapshot_includes_ticking_row_time() {
    // A failed call's terminal snapshot is taken right after the claim: it includes the
    // attempt row's 0.5 s and excludes its own write (G-121).
    let fx = FxBuilder {
        fake_clock: true,
        tick_rows: Some(Duration::from_millis(500)),
        retry: retry(1, 0.001, 0.01),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(transient(500)));
    let _ = fx.chat().await.unwrap_err();
    assert_eq!(fx.sink.terminals()[0].stats.total_latency_ms, 500);
}

// covers: G-121
#[tokio::test(start_paused = true)]
async fn g_120_cf_307_snapshot_repeatable_claim_once() {
    let clock = Arc::new(FakeClock::new());
    let ctx = CallContext::new(
        clock.clone(),
        RowCall::new(new_uuid_v4(), CallOperation::Chat, "llm"),
    );
    assert_eq!(ctx.snapshot().total_latency_ms, 0);
    ctx.register_attempt();
    ctx.register_attempt();
    clock.advance(Duration::from_millis(1500));
    let s = ctx.snapshot();
    assert_eq!((s.attempts, s.total_latency_ms), (2, 1500));
    assert_eq!(ctx.snapshot().logical_call_id, s.logical_call_id);
    clock.advance(Duration::from_millis(500));
    assert_eq!(ctx.snapshot().total_latency_ms, 2000);
    assert!(ctx.claim_terminal());
    assert!(!ctx.claim_terminal());
    assert!(!ctx.claim_terminal());
}

#[test]
fn g_120_two_contexts_get_different_uuid_v4_ids() {
    let (a, b) = (new_uuid_v4(), new_uuid_v4());
    assert_ne!(a, b);
    for id in [&a, &b] {
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert!(
            id.chars()
                .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}

#[tokio::test(start_paused = true)]
async fn cf_085_generation_net_of_stall() {
    let fx = fx();
    fx.runner.push(
        Script::new()
            .then(gateway_testkit::Step::Sleep(Duration::from_secs(5)))
            .report_stall(3200.0, 2)
            .then_ok(TransportResult::ok(10, 5)),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.generation_ms, 1800);
    assert_eq!(g.stats.stall_ms, Some(3200));
    assert_eq!(g.stats.stall_count, Some(2));
    assert_eq!((g.stats.hedges, g.stats.hedge_won), (0, false)); // CF-084
}

#[tokio::test(start_paused = true)]
async fn cf_086_generation_clamped_at_zero() {
    let fx = fx();
    fx.runner.push(
        Script::new()
            .then(gateway_testkit::Step::Sleep(Duration::from_secs(5)))
            .report_stall(6000.0, 3)
            .then_ok(TransportResult::ok(10, 5)),
    );
    let g = fx.chat().await.unwrap();
    assert_eq!(g.stats.generation_ms, 0);
    assert_eq!(
        (g.stats.stall_ms, g.stats.stall_count),
        (Some(6000), Some(3))
    );
}

#[tokio::test(start_paused = true)]
async fn cf_087_no_stall_observation_full_wall() {
    let fx = fx();
    fx.runner.push(Script::succeed_after(
        Duration::from_secs(5),
        TransportResult::ok(10, 5),
    ));
    let g = fx.chat().await.unwrap();
    assert_eq!((g.stats.generation_ms, g.stats.stall_ms), (5000, None));
}
