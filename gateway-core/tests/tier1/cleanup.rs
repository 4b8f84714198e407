//! Cancellation and cleanup: the settlement matrix S1–S8 under dropped futures, the cleanup
//! queue, row labels (30 §9, G-104..G-116; README D8; 05 R-7..R-10; 95 CF-067..CF-076,
//! CF-306, CF-307).
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns the cleanup worker; the library never spawns"
)]

use crate::support;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use gateway_core::attempt::TransportResult;
use gateway_core::cleanup::{CleanupQueue, JobKind, run_cleanup_worker};
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_core::rows::CancelLabel;
use gateway_ports::UsageSource;
use gateway_testkit::{HangOn, RecordingRowSink, Script};
use support::*;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

/// Polls the call until `entered` completes, then drops it (external cancellation).
async fn drop_after<F: std::future::Future>(
    call: F,
    entered: impl std::future::Future<Output = ()>,
) {
    let mut call = Box::pin(call);
    tokio::select! {
        _ = call.as_mut() => panic!("the call finished before the drop point"),
        () = entered => {}
    }
    drop(call);
}

// covers: G-104, G-106, G-109, CF-306
#[tokio::test(start_paused = true)]
async fn cf_067_s3_hang_dropped_settles_est_and_rows_cancelled() {
    let fx = fx();
    let h = fx.runner.push(Script::hang());
    drop_after(fx.chat(), h.entered()).await;
    // G-106: memory backends settle in Drop (fast path) — visible before any cleanup job ran.
    fx.assert_usage("s1", 400, 0).await;
    fx.gov.quiesce().await;
    // CF-306: exactly one terminal row, error 'cancelled', error_type NULL; one attempt row
    // labelled 'cancelled'; same logical_call_id.
    fx.sink.assert_counts(1, 1);
    assert_eq!(fx.sink.attempt_labels(), [Some(CancelLabel::Cancelled)]);
    let t = &fx.sink.terminals()[0];
    assert_eq!(t.error_type(), None);
    assert!(matches!(
        t.outcome,
        gateway_core::rows::TerminalOutcome::Cancelled
    ));
    assert_eq!(t.stats.attempts, 1);
    fx.sink.assert_one_call(&t.stats.logical_call_id);
}

// covers: G-86, G-109
#[tokio::test(start_paused = true)]
async fn cf_068_s4_drop_in_record_success_keeps_actual() {
    let fx = FxBuilder {
        hang: Some(HangOn::RecordSuccess),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(ok());
    let hb = fx.hanging.clone().unwrap();
    drop_after(fx.chat(), hb.entered()).await;
    fx.assert_usage("s1", 15, 0).await;
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.attempt_labels(), [Some(CancelLabel::Cancelled)]);
    fx.sink.assert_counts(1, 1);
}

// covers: G-86, G-109
#[tokio::test(start_paused = true)]
async fn cf_069_s5_dead_drop_in_record_failure_settles_zero() {
    let fx = FxBuilder {
        hang: Some(HangOn::RecordFailure),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(dead()));
    let hb = fx.hanging.clone().unwrap();
    drop_after(fx.chat(), hb.entered()).await;
    fx.assert_usage("s1", 0, 0).await;
    fx.gov.quiesce().await;
    // S5 (chosen): the known failure row is still written.
    assert_eq!(fx.sink.attempt_error_types(), [Some("SourceDeadError")]);
    fx.sink.assert_counts(1, 1);
}

// covers: G-86, G-88, G-109
#[tokio::test(start_paused = true)]
async fn cf_070_s5_transient_drop_in_record_failure_settles_est() {
    let fx = FxBuilder {
        hang: Some(HangOn::RecordFailure),
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::fail(transient(500)));
    let hb = fx.hanging.clone().unwrap();
    drop_after(fx.chat(), hb.entered()).await;
    fx.assert_usage("s1", 400, 0).await;
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.attempt_error_types(), [Some("TransientError")]);
}

// covers: G-109, G-121, CF-305
#[tokio::test(start_paused = true)]
async fn cf_071_s8_panic_propagates_settles_zero_no_rows() {
    let fx = fx();
    fx.runner.push(Script::panic("boom"));
    let r = AssertUnwindSafe(fx.chat()).catch_unwind().await;
    assert!(r.is_err(), "the panic propagates unchanged");
    fx.assert_usage("s1", 0, 0).await;
    fx.gov.quiesce().await;
    // I4 (80 T-17): no terminal row; S8: no attempt row.
    fx.sink.assert_counts(0, 0);
}

// covers: G-88
#[tokio::test(start_paused = true)]
async fn cf_072_zero_usage_settles_zero() {
    let fx = fx();
    fx.runner.push(Script::ok(TransportResult::ok(0, 0)));
    fx.chat().await.unwrap();
    fx.assert_usage("s1", 0, 0).await;
}

// covers: G-85, G-88, S-96, S-109
#[tokio::test(start_paused = true)]
async fn cf_076_g_87_settlement_by_outcome() {
    let cases: Vec<(Script, u64)> = vec![
        (ok(), 15),
        (
            Script::ok(TransportResult::ok(10, 5).with_usage_source(UsageSource::Unavailable)),
            400,
        ),
        (Script::fail(dead()), 0),
        (Script::fail(rejected()), 0),
        (Script::fail(invalid()), 0),
    ];
    for (script, expected) in cases {
        let fx = FxBuilder {
            retry: retry(1, 0.001, 0.01),
            ..FxBuilder::default()
        }
        .build();
        fx.runner.push(script);
        let _ = fx.chat().await;
        fx.assert_usage("s1", expected, 0).await;
    }
}

// covers: G-59, G-104, G-105
#[tokio::test(start_paused = true)]
async fn cf_074_cf_075_drop_at_every_await_point_leaks_nothing() {
    // A call that fails once (10 ms), backs off (5 ms), then succeeds (10 ms), with a slow
    // recorder (1 ms per row) so row emission is an await point too. Dropped after every
    // 1 ms step: no permit, pacer slot or probe may leak, labels are right, at most one
    // terminal row, attempt rows == registered attempts.
    for drop_ms in 0..40u64 {
        let pacer: Arc<dyn Pacer> = Arc::new(AimdPacer::new(64.0));
        let mut s = source("s1");
        s.tpm = 100_000;
        let fx = FxBuilder {
            sources: vec![s],
            retry: retry(3, 0.005, 0.005),
            jitter: 0.5,
            pacer: Some(pacer.clone()),
            sink: Some(RecordingRowSink::new().with_delay(Duration::from_millis(1))),
            ..FxBuilder::default()
        }
        .build();
        fx.runner.push_all([
            Script::fail_after(Duration::from_millis(10), transient(500)),
            Script::succeed_after(Duration::from_millis(10), TransportResult::ok(10, 5)),
        ]);
        let finished = tokio::time::timeout(Duration::from_millis(drop_ms), fx.chat())
            .await
            .is_ok();
        fx.gov.quiesce().await;
        let st = fx.stats("s1").await;
        assert_eq!(st.inflight, 0, "drop at {drop_ms} ms: slot leaked");
        assert_eq!(
            pacer.inflight("s1"),
            0,
            "drop at {drop_ms} ms: pacer slot leaked"
        );
        let (attempt_rows, terminal_rows) = fx.sink.counts();
        assert_eq!(attempt_rows, fx.runner.call_count(), "drop at {drop_ms} ms");
        assert_eq!(
            terminal_rows,
            usize::from(!finished),
            "drop at {drop_ms} ms"
        );
        for label in fx.sink.attempt_labels().into_iter().flatten() {
            assert_eq!(label, CancelLabel::Cancelled);
        }
        let d = fx.breaker.try_enter("s1", "after").await.unwrap();
        assert!(d.allowed, "drop at {drop_ms} ms: breaker");
    }
}

#[tokio::test(start_paused = true)]
async fn g_116_r_7_no_task_outlives_the_call() {
    let fx = fx();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    fx.runner.push_all([Script::fail(transient(500)), ok()]);
    fx.chat().await.unwrap();
    let h = fx.runner.push(Script::hang());
    drop_after(fx.chat(), h.entered()).await;
    fx.gov.quiesce().await;
    assert_eq!(metrics.num_alive_tasks(), before);
}

#[tokio::test(start_paused = true)]
async fn r_10_terminal_job_runs_after_the_calls_attempt_jobs() {
    let (queue, rx) = CleanupQueue::new();
    let worker = tokio::spawn(run_cleanup_worker(rx));
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    queue.enqueue(
        "c1",
        JobKind::Attempt,
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            l.lock().unwrap().push("attempt");
        }),
    );
    let l = log.clone();
    queue.enqueue(
        "c1",
        JobKind::Terminal,
        Box::pin(async move { l.lock().unwrap().push("terminal") }),
    );
    let l = log.clone();
    queue.enqueue(
        "c2",
        JobKind::Terminal,
        Box::pin(async move { l.lock().unwrap().push("other call") }),
    );
    queue.wait_call_idle("c1").await;
    assert_eq!(*log.lock().unwrap(), ["other call", "attempt", "terminal"]);
    queue.shutdown();
    worker.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn r_10_job_timeout_is_counted_not_silent() {
    let (queue, rx) = CleanupQueue::new();
    let worker = tokio::spawn(run_cleanup_worker(rx));
    queue.enqueue("c", JobKind::Attempt, Box::pin(std::future::pending()));
    queue.wait_idle().await;
    let s = queue.stats();
    assert_eq!((s.timed_out, s.completed, s.pending), (1, 1, 0));
    queue.shutdown();
    worker.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn g_110_full_queue_drops_and_counts() {
    let (queue, _rx) = CleanupQueue::with_capacity(1);
    assert!(queue.enqueue("c", JobKind::Attempt, Box::pin(async {})));
    assert!(!queue.enqueue("c", JobKind::Attempt, Box::pin(async {})));
    assert_eq!(queue.stats().dropped, 1);
    assert_eq!(queue.stats().pending, 1);
}

#[tokio::test(start_paused = true)]
async fn r_10_worker_bounds_concurrency_at_64() {
    let (queue, rx) = CleanupQueue::new();
    let worker = tokio::spawn(run_cleanup_worker(rx));
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for i in 0..200 {
        let (r, p) = (running.clone(), peak.clone());
        queue.enqueue(
            &format!("c{i}"),
            JobKind::Attempt,
            Box::pin(async move {
                let now = r.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                p.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                r.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }),
        );
    }
    queue.wait_idle().await;
    assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 64);
    queue.shutdown();
    worker.await.unwrap();
}
