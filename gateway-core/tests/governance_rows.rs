//! Conformance rows of the governance core left by the first pass (95 §3, §4, §12): CF-062,
//! CF-063, CF-082, CF-313, CF-314, the "others still progress" half of 30 G-55, and the S1 cell
//! of 30 G-107 with a parked `try_acquire` and a held half-open probe.
//! Tier 1: paused tokio clock, `ScriptedRunner`, memory backends (wrapped where a backend call
//! must park or fail).
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns the cleanup worker; the library never spawns"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on fixture errors by design"
)]

mod support;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use gateway_core::attempt::SettleMode;
use gateway_core::attempt::TransportResult;
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::TokioClock;
use gateway_core::governor::{CallOptions, Governor, GovernorBuilder, SuccessHook};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_core::retry_loop::{LoopPolicy, LoopSuccess};
use gateway_core::rows::CancelLabel;
use gateway_core::rows::TerminalOutcome;
use gateway_core::select::StaticSelector;
use gateway_ports::{
    Acquire, BackendError, BackendErrorKind, BackpressurePolicy, BreakerConfig, CallOperation,
    CircuitBreaker, Clock, FailureReason, GatewayError, GlobalLimits, RateLimiter, RetryPolicy,
    ScopeReason,
};
use gateway_testkit::hooked::{Effect, HookedCall, LimiterMethod};
use gateway_testkit::{
    HookedBreaker, HookedLimiter, Latch, ProbeLedger, RecordingRowSink, Script, ScriptedRunner,
    WarnCapture,
};
use support::*;
use tokio::time::Instant;

fn ok() -> Script {
    Script::ok(TransportResult::ok(10, 5))
}

fn cde_scope(e: &GatewayError) -> (String, f64) {
    match e {
        GatewayError::CallDeadlineExceeded(d) => (d.scope.clone(), d.deadline_s),
        other => panic!("expected CallDeadlineExceeded, got {other:?}"),
    }
}

/// A governor wired by hand: memory limiter behind hooks (parking or counting), memory
/// breaker behind hooks tracking its half-open probes, an AIMD pacer, a recording sink.
struct Wired {
    gov: Governor,
    runner: ScriptedRunner,
    sink: Arc<RecordingRowSink>,
    limiter: Arc<MemoryRateLimiter>,
    hooked_limiter: Arc<HookedLimiter>,
    /// Opens when a `try_acquire` parks (`park`).
    parked: Option<Arc<Latch>>,
    breaker: Arc<MemoryCircuitBreaker>,
    tracker: Arc<ProbeLedger>,
    pacer: Arc<AimdPacer>,
}

struct WiredOpts {
    park: bool,
    count_cap: Option<u64>,
    fail_release: bool,
    deadline: Option<Duration>,
    sink: RecordingRowSink,
}

impl Default for WiredOpts {
    fn default() -> Self {
        Self {
            park: false,
            count_cap: None,
            fail_release: false,
            deadline: None,
            sink: RecordingRowSink::new(),
        }
    }
}

fn wired(o: WiredOpts) -> Wired {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    let sources = vec![source("s1")];
    let limiter = Arc::new(MemoryRateLimiter::new(
        "llm",
        &sources,
        GlobalLimits::default(),
        100.0,
        clock.clone(),
    ));
    let hooked_limiter = Arc::new(HookedLimiter::new(limiter.clone()));
    if let Some(cap) = o.count_cap {
        // A busy loop on the paused clock would otherwise hang the test.
        let seen = AtomicU64::new(0);
        hooked_limiter.before(move |c| {
            if c.method() == LimiterMethod::TryAcquire {
                let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
                assert!(n <= cap, "{n} try_acquire calls: the waiting picks spin");
            }
            Effect::Forward
        });
    }
    let parked = o
        .park
        .then(|| hooked_limiter.park(LimiterMethod::TryAcquire));
    let port: Arc<dyn RateLimiter> = hooked_limiter.clone();
    let breaker = Arc::new(MemoryCircuitBreaker::new(
        "llm",
        BreakerConfig {
            fail_threshold: 3,
            cooldown_s: 1.0,
            probe_ttl_s: Some(120.0),
            ..BreakerConfig::default()
        },
        clock.clone(),
    ));
    let hooked_breaker = Arc::new(HookedBreaker::new(breaker.clone()));
    if o.fail_release {
        hooked_breaker.fail_probe_release(BackendError::new(
            BackendErrorKind::Unavailable,
            "release_probe: scripted failure",
        ));
    }
    let tracker = hooked_breaker.track_probes();
    let pacer = Arc::new(AimdPacer::for_sources(&sources));
    let sink = Arc::new(o.sink);
    let (gov, rx) = GovernorBuilder::new("llm", sources, port, hooked_breaker)
        .selector(Arc::new(StaticSelector))
        .pacer(pacer.clone())
        .clock(clock)
        .jitter(Arc::new(|| 0.5))
        .retry(retry(3, 0.001, 0.01))
        .backpressure(BackpressurePolicy {
            stall_window_s: 300.0,
            poll_interval_s: 0.01,
        })
        .call_deadline(o.deadline)
        .row_sink(sink.clone())
        .wakeup(limiter.notify())
        .build();
    tokio::spawn(run_cleanup_worker(rx));
    Wired {
        gov,
        runner: ScriptedRunner::new(),
        sink,
        limiter,
        hooked_limiter,
        parked,
        breaker,
        tracker,
        pacer,
    }
}

/// Puts `source` of `breaker` into half-open: force-open on one strike, then let the 1 s
/// cooldown pass on the paused clock.
async fn half_open(breaker: &MemoryCircuitBreaker, source: &str) {
    let d = breaker.try_enter(source, "opener").await.unwrap();
    breaker
        .record_failure(&d, FailureReason::SourceDead, true)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
}

#[tokio::test(start_paused = true)]
async fn cf_062_g_100_failed_cleanup_after_expiry_is_one_warning_never_replaces_cde() {
    let warns = WarnCapture::default();
    let _g = warns.install();
    let w = wired(WiredOpts {
        fail_release: true,
        deadline: Some(Duration::from_millis(50)),
        ..WiredOpts::default()
    });
    half_open(&w.breaker, "s1").await;
    // The attempt holds the half-open probe and hangs; on expiry its guard's probe release
    // fails in the cleanup job.
    w.runner.push(Script::hang());
    let e = w
        .gov
        .run_chat(&w.runner, CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(cde_scope(&e), ("llm".to_owned(), 0.05));
    assert_eq!(w.tracker.granted(), 1);
    // G-101: the cleanup job ran (and failed) before the return; one warning, CDE kept.
    assert_eq!(warns.codes(), ["governance.writeback_failed"]);
    w.sink.assert_counts(1, 1);
    assert_eq!(w.sink.attempt_labels(), [Some(CancelLabel::Cancelled)]);
    assert_eq!(
        w.sink.terminals()[0].error_type(),
        Some("CallDeadlineExceeded")
    );
    let s = w.limiter.source_stats("s1").await.unwrap();
    assert_eq!(
        (s.tpm_used, s.inflight),
        (400, 0),
        "S3 settled despite the failure"
    );
}

#[tokio::test(start_paused = true)]
async fn cf_063_external_cancel_before_expiry_propagates() {
    let w = wired(WiredOpts {
        deadline: Some(Duration::from_secs(10)),
        ..WiredOpts::default()
    });
    let h = w.runner.push(Script::hang());
    {
        let mut call = Box::pin(w.gov.run_chat(&w.runner, CallOptions::default()));
        tokio::select! {
            _ = call.as_mut() => panic!("the call finished before the drop"),
            () = h.entered() => {}
        }
    } // dropped: the caller cancelled
    w.gov.quiesce().await;
    // The cancellation is not turned into CDE: one `cancelled` terminal row, no second.
    w.sink.assert_counts(1, 1);
    assert!(matches!(
        w.sink.terminals()[0].outcome,
        TerminalOutcome::Cancelled
    ));
    assert_eq!(w.sink.attempt_labels(), [Some(CancelLabel::Cancelled)]);
}

#[tokio::test(start_paused = true)]
async fn cf_063_g_100_external_cancel_after_expiry_during_cleanup_propagates() {
    // Rows take 150 ms: the deadline (50 ms) fires, the call awaits its attempt row job, and the
    // caller drops it meanwhile (at 100 ms).
    let w = wired(WiredOpts {
        deadline: Some(Duration::from_millis(50)),
        sink: RecordingRowSink::new().with_delay(Duration::from_millis(150)),
        ..WiredOpts::default()
    });
    w.runner.push(Script::hang());
    let start = Instant::now();
    {
        let call = w.gov.run_chat(&w.runner, CallOptions::default());
        tokio::select! {
            r = call => panic!("the call returned {r:?} before the drop"),
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    w.gov.quiesce().await;
    // Never two terminal rows; the claim was still free, so the row says `cancelled`.
    w.sink.assert_counts(1, 1);
    assert!(matches!(
        w.sink.terminals()[0].outcome,
        TerminalOutcome::Cancelled
    ));
    let s = w.limiter.source_stats("s1").await.unwrap();
    assert_eq!((s.tpm_used, s.inflight), (400, 0));
}

#[tokio::test(start_paused = true)]
async fn cf_082_embed_429_pushback_ends_retry_exhausted_after_3_calls() {
    // The original's loop counted 429s; our embedding loop still does (G-46).
    let fx = fx();
    for _ in 0..5 {
        fx.runner.push(Script::fail(rate_limited(Some(0.5))));
    }
    let start = Instant::now();
    let e = fx
        .gov
        .run_embed(&fx.runner, CallOptions::default())
        .await
        .unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 3);
    assert!(start.elapsed() >= Duration::from_secs(1), "hints honoured");
    assert_eq!(unavailable(&e).retry_after_s, 0.5);
}

#[tokio::test(start_paused = true)]
async fn cf_082_chat_429_pushback_ends_retry_exhausted_after_3_calls() {
    // Chat 429s are budget-free (G-46), so only the scope retry budget (R-35, ratio 2 = two
    // retries for this lone first attempt) ends the pushback sequence as retry_exhausted; the
    // AIMD pacer backs off on every 429 (G-72) and the hints are slept.
    let pacer = Arc::new(AimdPacer::new(8.0));
    let fx = FxBuilder {
        retry: RetryPolicy {
            budget_ratio: Some(2.0),
            ..retry(3, 0.001, 0.01)
        },
        pacer: Some(pacer.clone() as Arc<dyn Pacer>),
        ..FxBuilder::default()
    }
    .build();
    let limit_before = pacer.limit("s1").unwrap();
    for _ in 0..5 {
        fx.runner.push(Script::fail(rate_limited(Some(0.5))));
    }
    let start = Instant::now();
    let e = fx.chat().await.unwrap_err();
    let u = unavailable(&e);
    assert_eq!(u.reason, ScopeReason::RetryExhausted);
    assert_eq!(fx.runner.call_count(), 3);
    assert_eq!(u.retry_after_s, 0.5, "G-12: the largest server hint");
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(
        pacer.limit("s1").unwrap() < limit_before,
        "pacer pushed back"
    );
    fx.gov.quiesce().await;
    fx.sink.assert_counts(3, 1);
}

// covers: G-91, G-112
#[tokio::test(start_paused = true)]
async fn cf_313_g_101_slow_recorder_cleanup_is_not_cut() {
    let w = wired(WiredOpts {
        deadline: Some(Duration::from_millis(50)),
        sink: RecordingRowSink::new().with_delay(Duration::from_millis(150)),
        ..WiredOpts::default()
    });
    w.runner.push(Script::hang());
    let start = Instant::now();
    let e = w
        .gov
        .run_chat(&w.runner, CallOptions::default())
        .await
        .unwrap_err();
    let elapsed = start.elapsed();
    assert_eq!(cde_scope(&e).1, 0.05);
    // Both rows are written before the return (no quiesce): return = deadline + cleanup.
    w.sink.assert_counts(1, 1);
    assert!(elapsed > Duration::from_millis(100), "{elapsed:?}");
    assert_eq!(
        elapsed,
        Duration::from_millis(350),
        "50 + 150 (attempt) + 150 (terminal)"
    );
}

/// A response cache whose `set` takes 0.5 s on the runtime timer (CF-314).
#[derive(Default)]
struct SlowCache {
    sets_started: AtomicU32,
    stored: Mutex<Vec<String>>,
}

impl SuccessHook for SlowCache {
    async fn after_success(&self, success: &LoopSuccess) {
        self.sets_started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(500)).await;
        self.stored
            .lock()
            .unwrap()
            .push(success.result.content.clone());
    }
}

// covers: G-92
#[tokio::test(start_paused = true)]
async fn cf_314_g_94_slow_cache_set_expires_nothing_stored() {
    let w = wired(WiredOpts {
        deadline: Some(Duration::from_millis(50)),
        ..WiredOpts::default()
    });
    w.runner.push(ok());
    let cache = SlowCache::default();
    let e = w
        .gov
        .run_with_hook(
            &w.runner,
            CallOptions::default(),
            CallOperation::Chat,
            LoopPolicy::CHAT,
            SettleMode::PromptAndCompletion,
            &cache,
        )
        .await
        .unwrap_err();
    assert_eq!(cde_scope(&e), ("llm".to_owned(), 0.05));
    assert_eq!(w.runner.call_count(), 1);
    assert_eq!(cache.sets_started.load(Ordering::SeqCst), 1);
    assert!(cache.stored.lock().unwrap().is_empty(), "nothing stored");
    // G-92: the upstream billed; the attempt settled its real usage.
    let s = w.limiter.source_stats("s1").await.unwrap();
    assert_eq!((s.tpm_used, s.inflight), (15, 0));
    w.sink.assert_counts(1, 1);
    assert_eq!(w.sink.attempt_error_types(), [None]);
}

#[tokio::test(start_paused = true)]
async fn g_55_another_caller_progressing_keeps_the_waiter_alive() {
    // Caller A only ever gets 429s (budget-free, refunded into its stall account, window
    // 0.3 s); caller B succeeds every 0.1 s for 2 s. A's local wait exceeds the window early,
    // but the scope progresses, so A keeps waiting; once B stops, A is declared stalled.
    let mut s1 = source("s1");
    s1.tpm = 0;
    s1.max_concurrency = 4;
    let fx = FxBuilder {
        sources: vec![s1],
        retry: retry(1, 0.01, 0.05),
        backpressure: BackpressurePolicy {
            stall_window_s: 0.3,
            poll_interval_s: 0.01,
        },
        ..FxBuilder::default()
    }
    .build();
    let runner_a = ScriptedRunner::new();
    for _ in 0..1000 {
        runner_a.push(Script::fail(rate_limited(Some(0.05))));
    }
    let runner_b = ScriptedRunner::new();
    for _ in 0..20 {
        runner_b.push(ok());
    }
    let start = Instant::now();
    let a = async {
        let r = fx.gov.run_chat(&runner_a, CallOptions::default()).await;
        (r, start.elapsed())
    };
    let b = async {
        for _ in 0..20 {
            fx.gov
                .run_chat(&runner_b, CallOptions::default())
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        start.elapsed()
    };
    let ((ra, a_end), b_end) = tokio::join!(a, b);
    let e = ra.unwrap_err();
    assert_eq!(unavailable(&e).reason, ScopeReason::Stalled);
    assert!(b_end >= Duration::from_secs(2));
    assert!(
        a_end > b_end,
        "A outlived B's progress: a_end {a_end:?}, b_end {b_end:?}"
    );
    assert!(a_end >= Duration::from_secs(2), "{a_end:?}");
    assert!(runner_a.call_count() > 10, "{}", runner_a.call_count());
}

// covers: G-59
#[tokio::test(start_paused = true)]
async fn g_107_s1_parked_try_acquire_with_held_probe_releases_everything() {
    let w = wired(WiredOpts {
        park: true,
        ..WiredOpts::default()
    });
    half_open(&w.breaker, "s1").await;
    let parked = w.parked.clone().unwrap();
    {
        let mut call = Box::pin(w.gov.run_chat(&w.runner, CallOptions::default()));
        tokio::select! {
            r = call.as_mut() => panic!("the call returned {r:?} before the drop"),
            () = parked.wait() => {}
        }
        // Inside `pick`: the probe and a pacer slot are held, the permit is not granted.
        assert_eq!(w.tracker.outstanding().len(), 1);
        assert_eq!(w.pacer.inflight("s1"), 1);
    }
    // S1: the probe is released and the pacer left in Drop (fast path), nothing settled.
    assert!(w.tracker.outstanding().is_empty());
    assert_eq!(w.pacer.inflight("s1"), 0);
    let s = w.limiter.source_stats("s1").await.unwrap();
    assert_eq!((s.tpm_used, s.inflight), (0, 0));
    assert_eq!(w.runner.call_count(), 0, "the transport was never called");
    // The probe is free again: a new attempt gets it.
    let d = w.breaker.try_enter("s1", "next").await.unwrap();
    assert!(d.allowed && d.is_probe, "{d:?}");
    w.gov.quiesce().await;
    // No attempt registered → no attempt row; the call's `cancelled` terminal row.
    w.sink.assert_counts(0, 1);
    assert!(matches!(
        w.sink.terminals()[0].outcome,
        TerminalOutcome::Cancelled
    ));
    assert_eq!(w.sink.terminals()[0].stats.attempts, 0);
}

#[tokio::test(start_paused = true)]
async fn g_80_r_11_quota_waiters_with_aimd_pacer_do_not_wake_each_other() {
    // Regression: a rejected pick returned its borrowed pacer slot with a wakeup, so two callers
    // waiting for quota woke each other (and themselves) forever without the clock advancing.
    let w = wired(WiredOpts {
        count_cap: Some(100_000),
        ..WiredOpts::default()
    });
    // 800 of the 1000 TPM are used for the next 60 s: two 400-token calls must wait.
    let Acquire::Granted(p) = w.limiter.try_acquire("s1", 800).await.unwrap() else {
        panic!("fixture grant");
    };
    p.settle(800).await.unwrap();
    p.release().await.unwrap();
    w.runner.push_all([ok(), ok()]);
    let start = Instant::now();
    let (a, b) = tokio::join!(
        w.gov.run_chat(&w.runner, CallOptions::default()),
        w.gov.run_chat(&w.runner, CallOptions::default())
    );
    a.unwrap();
    b.unwrap();
    assert!(start.elapsed() >= Duration::from_secs(60));
    let picks = w.hooked_limiter.count(LimiterMethod::TryAcquire);
    // Polling every 10 ms for ~60 s is ~6000 picks per caller.
    assert!(picks < 20_000, "{picks} picks");
}
