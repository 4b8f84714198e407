//! The hooked doubles forward, count, fail, delay, park and observe as documented (tier 1:
//! paused tokio clock, the memory backends as inner ports).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test assertions panic by design"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use gateway_core::cache::MemoryCache;
use gateway_core::clock::TokioClock;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::rows::{NoopRowSink, RowSink};
use gateway_ports::{
    Acquire, BackendError, BackendErrorKind, BreakerConfig, ChatTransport, CircuitBreaker, Clock,
    Endpoint, FailureReason, GlobalLimits, NetworkFault, NetworkFaultKind, RateLimiter,
    ResponseCache, SourceConfig, WireFailure, WireRequest,
};
use gateway_testkit::fixture::{FxBuilder, source};
use gateway_testkit::hooked::{
    BreakerMethod, CacheMethod, ChatCall, ChatMethod, LimiterCall, LimiterMethod, RowMethod,
};
use gateway_testkit::{
    Effect, HookedBreaker, HookedCache, HookedChatTransport, HookedLimiter, HookedRowSink, Latch,
    ScriptedWire,
};
use serde_json::json;
use tokio::time::Instant;

fn clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock::new())
}

fn memory_limiter() -> Arc<MemoryRateLimiter> {
    Arc::new(MemoryRateLimiter::new(
        "llm",
        &[source("s1"), source("s2")],
        GlobalLimits::default(),
        100.0,
        clock(),
    ))
}

fn memory_breaker(cooldown_s: f64) -> Arc<MemoryCircuitBreaker> {
    Arc::new(MemoryCircuitBreaker::new(
        "llm",
        BreakerConfig {
            fail_threshold: 1,
            cooldown_s,
            probe_ttl_s: Some(120.0),
            ..BreakerConfig::default()
        },
        clock(),
    ))
}

#[tokio::test(start_paused = true)]
async fn a_limiter_without_hooks_forwards_and_counts_per_method() {
    let inner = memory_limiter();
    let hooked = HookedLimiter::new(inner.clone());
    let Acquire::Granted(permit) = hooked.try_acquire("s1", 400).await.unwrap() else {
        panic!("the memory limiter grants the first acquisition");
    };
    assert_eq!(inner.source_stats("s1").await.unwrap().inflight, 1);
    assert_eq!(hooked.source_stats("s1").await.unwrap().inflight, 1);
    permit.release().await.unwrap();
    assert_eq!(hooked.count(LimiterMethod::TryAcquire), 1);
    assert_eq!(hooked.count(LimiterMethod::SourceStats), 1);
    assert_eq!(hooked.count(LimiterMethod::MarkProgress), 0);
}

#[tokio::test(start_paused = true)]
async fn a_failing_hook_answers_instead_of_the_inner_limiter_for_one_source_only() {
    let inner = memory_limiter();
    let hooked = HookedLimiter::new(inner.clone());
    hooked.before(|c| match c {
        LimiterCall::TryAcquire { source, .. } if source == "s2" => {
            Effect::Fail(BackendError::new(BackendErrorKind::Unavailable, "down"))
        }
        _ => Effect::Forward,
    });
    let e = hooked.try_acquire("s2", 400).await.unwrap_err();
    assert_eq!(e.kind, BackendErrorKind::Unavailable);
    assert_eq!(
        inner.source_stats("s2").await.unwrap().inflight,
        0,
        "never reached"
    );
    assert!(matches!(
        hooked.try_acquire("s1", 400).await.unwrap(),
        Acquire::Granted(_)
    ));
    // Cleared hooks forward again; counting goes on.
    hooked.clear_hooks();
    assert!(matches!(
        hooked.try_acquire("s2", 400).await.unwrap(),
        Acquire::Granted(_)
    ));
    assert_eq!(hooked.count(LimiterMethod::TryAcquire), 3);
}

#[tokio::test(start_paused = true)]
async fn a_parked_call_signals_and_resumes_only_when_released() {
    let hooked = Arc::new(HookedLimiter::new(memory_limiter()));
    let (entered, release) = (Arc::new(Latch::new()), Arc::new(Latch::new()));
    let (e, r) = (entered.clone(), release.clone());
    hooked.before(move |c| match c.source() {
        Some("s1") => Effect::park_until(&e, &r),
        _ => Effect::Forward,
    });
    let call = tokio::spawn({
        let hooked = hooked.clone();
        async move { hooked.try_acquire("s1", 1).await.map(|_| ()) }
    });
    entered.wait().await;
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(
        !call.is_finished(),
        "parked until released, not until a time"
    );
    release.open();
    call.await.unwrap().unwrap();
    // A forever-park never returns; dropping the call is the only way out.
    let forever = hooked.park(LimiterMethod::MarkProgress);
    let parked = hooked.mark_progress();
    tokio::pin!(parked);
    tokio::select! {
        r = &mut parked => panic!("returned {r:?}"),
        () = forever.wait() => {}
    }
}

#[tokio::test(start_paused = true)]
async fn wait_count_is_event_driven() {
    let hooked = Arc::new(HookedLimiter::new(memory_limiter()));
    let waiter = tokio::spawn({
        let hooked = hooked.clone();
        async move { hooked.wait_count(LimiterMethod::ProgressAgeS, 2).await }
    });
    hooked.progress_age_s().await.unwrap();
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    hooked.progress_age_s().await.unwrap();
    waiter.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn probe_ledger_follows_grant_and_resolution() {
    let inner = memory_breaker(1.0);
    let hooked = HookedBreaker::new(inner.clone());
    let ledger = hooked.track_probes();
    // Open s1, let the cooldown pass: the next entry is the half-open probe.
    let d = inner.try_enter("s1", "opener").await.unwrap();
    inner
        .record_failure(&d, FailureReason::SourceDead, true)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
    let probe = hooked.try_enter("s1", "probe-owner").await.unwrap();
    assert!(probe.is_probe, "{probe:?}");
    assert_eq!(ledger.granted(), 1);
    assert_eq!(ledger.outstanding(), ["probe-owner"]);
    hooked.record_success(&probe, true).await.unwrap();
    assert!(ledger.outstanding().is_empty());
    assert_eq!(hooked.count(BreakerMethod::RecordSuccess), 1);
}

#[tokio::test(start_paused = true)]
async fn failing_probe_release_keeps_the_probe_outstanding() {
    let inner = memory_breaker(1.0);
    let hooked = HookedBreaker::new(inner.clone());
    hooked.fail_probe_release(BackendError::unavailable("scripted"));
    let ledger = hooked.track_probes();
    let d = inner.try_enter("s1", "opener").await.unwrap();
    inner
        .record_failure(&d, FailureReason::SourceDead, true)
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
    let probe = hooked.try_enter("s1", "p").await.unwrap();
    let lease = gateway_ports::ProbeLease {
        source: probe.source.clone(),
        owner: probe.owner.clone(),
        epoch: probe.epoch,
    };
    assert!(!hooked.release_probe_now(&lease), "no fast path");
    assert!(hooked.release_probe(&probe).await.is_err());
    assert_eq!(ledger.outstanding(), ["p"]);
}

#[tokio::test(start_paused = true)]
async fn failing_write_backs_leave_the_gate_and_the_inner_state_alone() {
    let inner = memory_breaker(60.0);
    let hooked = HookedBreaker::new(inner.clone());
    hooked.fail_write_backs(BackendError::unavailable("down"));
    let d = hooked.try_enter("s1", "a").await.unwrap();
    assert!(d.allowed);
    assert!(
        hooked
            .record_failure(&d, FailureReason::Timeout, true)
            .await
            .is_err()
    );
    assert_eq!(inner.snapshot("s1").await.unwrap().consecutive_failures, 0);
    // The after hooks see only what reached the inner breaker.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    hooked.after(move |c, _| s.lock().unwrap().push(c.source().map(str::to_owned)));
    hooked.snapshot("s2").await.unwrap();
    assert!(hooked.record_success(&d, true).await.is_err());
    assert_eq!(*seen.lock().unwrap(), [Some("s2".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn a_row_sink_hook_drops_or_delays_rows() {
    let fx = FxBuilder::default().build();
    let recording: Arc<dyn RowSink> = fx.sink.clone();
    let hooked = HookedRowSink::new(recording);
    assert!(hooked.wants_rows());
    assert!(!HookedRowSink::new(Arc::new(NoopRowSink)).wants_rows());
    // A fail ends the call before a later hook runs.
    hooked.fail(RowMethod::Flush, ());
    hooked.delay(RowMethod::Flush, Duration::from_secs(5));
    let start = Instant::now();
    hooked.flush().await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert_eq!(hooked.count(RowMethod::Flush), 1);
    let start = Instant::now();
    hooked.clear_hooks();
    hooked.delay(RowMethod::Flush, Duration::from_secs(5));
    hooked.flush().await;
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

fn wire_request() -> WireRequest {
    WireRequest {
        source: Arc::new(SourceConfig::new(
            "s1",
            "test",
            "http://127.0.0.1:9",
            None,
            "m",
        )),
        call_id: "call-1".to_owned(),
        endpoint: Endpoint::ChatCompletions,
        body: json!({"model": "m", "messages": []}).into(),
        stream: false,
    }
}

#[tokio::test(start_paused = true)]
async fn a_chat_transport_hook_fails_a_send_before_the_wire_sees_it() {
    let wire = Arc::new(
        ScriptedWire::new(upstream_sim::script::Script::new(vec![
            upstream_sim::script::Response::default(),
        ]))
        .unwrap(),
    );
    let hooked = HookedChatTransport::new(wire.clone());
    let fault = WireFailure::Network(NetworkFault::new(NetworkFaultKind::Connect, "refused"));
    hooked.fail(ChatMethod::Send, fault.clone());
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let o = outcomes.clone();
    hooked.after(move |c, r| {
        let ChatCall::Send(request) = c else {
            return;
        };
        o.lock().unwrap().push((request.call_id.clone(), r.is_ok()));
    });
    let Err(e) = hooked.send(wire_request()).await else {
        panic!("the hook fails the send");
    };
    assert_eq!(e, fault);
    assert_eq!(wire.request_count(), 0, "the wire never saw it");
    hooked.clear_hooks();
    let _ = hooked.send(wire_request()).await;
    assert_eq!(wire.request_count(), 1);
    assert!(outcomes.lock().unwrap().is_empty(), "hooks were cleared");
}

#[tokio::test(start_paused = true)]
async fn a_cache_hook_delays_a_set_on_the_runtime_timer() {
    let memory = Arc::new(MemoryCache::new(10, clock()));
    let hooked = HookedCache::new(memory.clone());
    hooked.delay(CacheMethod::Set, Duration::from_secs(10));
    let start = Instant::now();
    hooked
        .set("k", "v".to_owned(), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert_eq!(hooked.get("k").await.unwrap().as_deref(), Some("v"));
    assert_eq!(
        (
            hooked.count(CacheMethod::Get),
            hooked.count(CacheMethod::Set)
        ),
        (1, 1)
    );
}
