//! Invariants of the retry loop under random scripted outcomes (30 §5, §9, §10; 05;
//! 95 CF-074, CF-075, CF-303, CF-304, CF-306).
//!
//! Each case runs 1–4 concurrent chat calls over 1–3 sources on tokio's paused clock; every
//! attempt plays one random outcome (success, 429 with a hint, transient, source dead, result
//! invalid, request rejected, hang until the call deadline). Afterwards: nothing in flight
//! (limiter and pacer in-flight 0, no half-open probe held), every call produced one result or
//! one error, attempts == runner calls == attempt rows of the call, terminal rows == failed
//! calls (0 or 1 per call), and the call's budget-consuming failures never exceed
//! `max_attempts`.
#![allow(
    clippy::disallowed_methods,
    reason = "the test owns the runtime and spawns the cleanup worker; the library never spawns"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on fixture errors by design"
)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::classify::failure_reason_of;
use gateway_core::cleanup::run_cleanup_worker;
use gateway_core::clock::TokioClock;
use gateway_core::governor::{CallOptions, GovernorBuilder};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_core::pacer::{AimdPacer, Pacer};
use gateway_core::rows::{AttemptRowOutcome, RowCall};
use gateway_core::telemetry::RowInput;
use gateway_ports::{
    BackpressurePolicy, BreakerConfig, Clock, FailureReason, GatewayError, GlobalLimits,
    RateLimiter, RetryPolicy, WaitPolicy,
};
use gateway_testkit::HookedBreaker;
use gateway_testkit::{RecordingRowSink, Script, ScriptedRunner};
use proptest::prelude::*;
use support::*;

#[derive(Debug, Clone)]
enum Out {
    Ok,
    RateLimited(u8),
    Transient,
    Dead,
    Invalid,
    Rejected,
    Hang,
}

impl Out {
    fn script(&self) -> Script {
        match self {
            Self::Ok => Script::ok(TransportResult::ok(10, 5)),
            Self::RateLimited(tenths) => {
                Script::fail(rate_limited(Some(f64::from(*tenths) / 10.0)))
            }
            Self::Transient => Script::fail(transient(503)),
            Self::Dead => Script::fail(dead()),
            Self::Invalid => Script::fail(invalid()),
            Self::Rejected => Script::fail(rejected()),
            Self::Hang => Script::hang(),
        }
    }
}

fn out() -> impl Strategy<Value = Out> {
    prop_oneof![
        3 => Just(Out::Ok),
        2 => (1u8..20).prop_map(Out::RateLimited),
        3 => Just(Out::Transient),
        1 => Just(Out::Dead),
        1 => Just(Out::Invalid),
        1 => Just(Out::Rejected),
        1 => Just(Out::Hang),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    sources: usize,
    max_attempts: u32,
    budget_ratio: Option<f64>,
    circuit_wait: bool,
    limited_tpm: bool,
    calls: Vec<Vec<Out>>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=3,
        1u32..=4,
        prop::option::of(0.5f64..3.0),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(prop::collection::vec(out(), 0..8), 1..=4),
    )
        .prop_map(
            |(sources, max_attempts, budget_ratio, circuit_wait, limited_tpm, calls)| Case {
                sources,
                max_attempts,
                budget_ratio,
                circuit_wait,
                limited_tpm,
                calls,
            },
        )
}

/// The call index, carried in the row input's `parent_call_id`.
fn call_index(call: &RowCall) -> usize {
    call.input
        .as_ref()
        .and_then(|i| i.parent_call_id.as_deref())
        .and_then(|id| id.parse().ok())
        .expect("row input = call index")
}

/// A row input tagging a call with its index.
fn indexed_input(i: usize) -> Arc<RowInput> {
    let mut input = RowInput::default();
    input.parent_call_id = Some(i.to_string());
    Arc::new(input)
}

async fn run_case(c: Case) -> Result<(), TestCaseError> {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::new());
    let names: Vec<String> = (1..=c.sources).map(|i| format!("s{i}")).collect();
    let sources: Vec<_> = names
        .iter()
        .map(|n| {
            let mut s = source(n);
            s.tpm = if c.limited_tpm { 2000 } else { 0 };
            s.max_concurrency = 2;
            s
        })
        .collect();
    let limiter = Arc::new(MemoryRateLimiter::new(
        "llm",
        &sources,
        GlobalLimits::default(),
        100.0,
        clock.clone(),
    ));
    let breaker = Arc::new(MemoryCircuitBreaker::new(
        "llm",
        BreakerConfig {
            fail_threshold: 2,
            cooldown_s: 0.5,
            cooldown_max_s: 2.0,
            probe_ttl_s: Some(120.0),
            ..BreakerConfig::default()
        },
        clock.clone(),
    ));
    let hooked = Arc::new(HookedBreaker::new(breaker));
    let tracker = hooked.track_probes();
    let pacer = Arc::new(AimdPacer::for_sources(&sources));
    let sink = Arc::new(RecordingRowSink::new());
    let (gov, rx) = GovernorBuilder::new("llm", sources, limiter.clone(), hooked)
        .pacer(pacer.clone())
        .clock(clock)
        .jitter(Arc::new(|| 0.5))
        .retry(RetryPolicy {
            budget_ratio: c.budget_ratio,
            ..retry(c.max_attempts, 0.01, 0.1)
        })
        .backpressure(BackpressurePolicy {
            stall_window_s: 2.0,
            poll_interval_s: 0.01,
        })
        .circuit_open(if c.circuit_wait {
            WaitPolicy::Wait
        } else {
            WaitPolicy::FailFast
        })
        .breaker_cooldown_s(0.5)
        .call_deadline(Some(Duration::from_secs(20)))
        .row_sink(sink.clone())
        .wakeup(limiter.notify())
        .build();
    let worker = tokio::spawn(run_cleanup_worker(rx));

    let runners: Vec<ScriptedRunner> = c
        .calls
        .iter()
        .map(|outs| {
            let r = ScriptedRunner::new();
            for o in outs {
                r.push(o.script());
            }
            r
        })
        .collect();
    let results =
        futures_util::future::join_all(runners.iter().enumerate().map(|(i, r)| {
            gov.run_chat(r, CallOptions::default().with_row_input(indexed_input(i)))
        }))
        .await;
    gov.quiesce().await;

    // Nothing in flight.
    for n in &names {
        let s = limiter.source_stats(n).await.unwrap();
        prop_assert_eq!(s.inflight, 0, "limiter inflight of {}", n);
        prop_assert_eq!(pacer.inflight(n), 0, "pacer inflight of {}", n);
    }
    prop_assert!(
        tracker.outstanding().is_empty(),
        "probe held: {:?}",
        tracker.outstanding()
    );

    // One outcome per call; attempts == runner calls == attempt rows; terminal rows.
    prop_assert_eq!(results.len(), c.calls.len());
    let attempts = sink.attempts();
    let terminals = sink.terminals();
    let failed = results.iter().filter(|r| r.is_err()).count();
    prop_assert_eq!(terminals.len(), failed, "terminal rows == failed calls");
    for (i, (r, runner)) in results.iter().zip(&runners).enumerate() {
        let calls = runner.call_count();
        let rows: Vec<_> = attempts
            .iter()
            .filter(|a| call_index(&a.call) == i)
            .collect();
        prop_assert_eq!(rows.len(), calls, "attempt rows of call {}", i);
        let mine: Vec<_> = terminals
            .iter()
            .filter(|t| call_index(&t.call) == i)
            .collect();
        match r {
            Ok(g) => {
                prop_assert_eq!(g.stats.attempts as usize, calls);
                prop_assert!(mine.is_empty(), "success wrote a terminal row");
            }
            Err(e) => {
                // G-3, G-4: the two absorbed categories never reach the caller; only the
                // caller-facing kinds do.
                prop_assert!(
                    matches!(
                        e,
                        GatewayError::RequestRejected(_)
                            | GatewayError::ResultInvalid(_)
                            | GatewayError::AllSourcesExhausted(_)
                            | GatewayError::CircuitOpen(_)
                            | GatewayError::CallDeadlineExceeded(_)
                    ),
                    "call {} escaped with {:?}",
                    i,
                    e
                );
                prop_assert_eq!(mine.len(), 1, "call {} ended in {:?}", i, e);
                prop_assert_eq!(mine[0].stats.attempts as usize, calls);
            }
        }
        // Budget: failures that consume budget (chat: every failure but 429) ≤ max_attempts.
        let fails = rows
            .iter()
            .filter(|a| match &a.outcome {
                AttemptRowOutcome::Failed(e) => matches!(
                    failure_reason_of(e),
                    Some(FailureReason::NetworkError | FailureReason::Timeout)
                        | Some(FailureReason::SourceDead)
                ),
                _ => false,
            })
            .count();
        prop_assert!(
            fails <= c.max_attempts as usize,
            "call {} had {} budget failures > {}",
            i,
            fails,
            c.max_attempts
        );
    }
    gov.close().await;
    let _ = worker.await;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    // covers: G-3, G-4, G-45, G-118, G-59
    #[test]
    fn g_44_r_4_loop_invariants_hold_under_random_outcomes(c in case()) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(run_case(c))?;
    }
}
