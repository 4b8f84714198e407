//! Streaming to the caller and its commit point (README D32, D8), tier 1: the governor drives a
//! `ChatExecutor` with a `CommitGate` over `ScriptedWire`s on the paused clock, the test plays
//! the consumer (the facade's `ChatStream` is exactly this pairing of the call future and the
//! gate's bounded receiver, polled from one task).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;
use crate::hedge_support;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use exec::{content, delta, done, request, response};
use gateway_core::executor::ChatExecutor;
use gateway_core::governor::{CallOptions, Governor};
use gateway_core::hedge::HedgeConfig;
use gateway_core::stream_call::{CommitGate, StreamDelta};
use gateway_ports::{GatewayError, LlmResponse, RateLimiter as _, ResponseMode, SourceConfig};
use gateway_testkit::ScriptedWire;
use hedge_support::{Fx, FxBuilder};
use proptest::prelude::*;
use upstream_sim::script::{End, Match, Order, RawChunk, Response, Script};

type CallResult = Result<(LlmResponse, bool), GatewayError>;

/// A fixture source `name` whose model is `model`, with an inter-token budget of `inter_s`.
fn src(name: &str, model: &str, inter_s: Option<f64>) -> SourceConfig {
    let mut s = support::source(name);
    s.model = model.to_owned();
    s.inter_token_timeout_s = inter_s;
    s
}

fn for_model(model: &str, mut r: Response) -> Response {
    r.matcher = Some(Match {
        model: Some(model.to_owned()),
        ..Match::default()
    });
    r
}

fn wire(script: Script) -> Arc<ScriptedWire> {
    Arc::new(ScriptedWire::new(script).expect("valid script"))
}

/// Runs one streamed call to the end, consuming every delta as it is forwarded.
async fn stream_all(
    gov: &Governor,
    wire: &Arc<ScriptedWire>,
    buffer: usize,
) -> (Vec<StreamDelta>, CallResult) {
    let (gate, mut rx) = CommitGate::new(buffer, false);
    let gate = Arc::new(gate);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::Text, true))
        .with_commit_gate(gate.clone());
    let call = gov.run_chat_streamed(&ex, CallOptions::default(), None, &gate);
    tokio::pin!(call);
    let mut deltas = Vec::new();
    let result = loop {
        tokio::select! {
            biased;
            Some(d) = rx.recv() => deltas.push(d),
            r = &mut call => break r,
        }
    };
    while let Ok(d) = rx.try_recv() {
        deltas.push(d);
    }
    (deltas, result)
}

fn text(deltas: &[StreamDelta]) -> String {
    deltas.iter().map(|d| d.content.as_str()).collect()
}

async fn assert_idle(fx: &Fx, sources: &[&str]) {
    fx.gov.quiesce().await;
    for s in sources {
        let stats = fx.limiter.source_stats(s).await.unwrap();
        assert_eq!(stats.inflight, 0, "in-flight of {s} back to 0");
    }
}

// covers: D32 (failure before the commit point is retried invisibly)
#[tokio::test(start_paused = true)]
async fn d32_failure_before_commit_is_retried_invisibly() {
    let fx = FxBuilder::hedge_off()
        .hedge(HedgeConfig::off())
        .sources(&["s1"])
        .build();
    // Attempt 1: a role-only frame, then the connection resets — no content token forwarded.
    let first = response(
        vec![delta(0, r#"{"role":"assistant"}"#, None, None)],
        End::Reset,
    );
    let second = response(
        vec![
            content(5, "hel"),
            content(5, "lo"),
            delta(0, "{}", Some("stop"), None),
            done(0),
        ],
        End::Eof,
    );
    let wire = wire(Script::new(vec![first, second]));
    let (deltas, result) = stream_all(&fx.gov, &wire, 4).await;
    let (response, hit) = result.expect("the retry delivers");
    assert!(!hit);
    assert_eq!(wire.request_count(), 2, "retried once");
    assert_eq!(
        text(&deltas),
        "hello",
        "nothing of attempt 1 reached the caller"
    );
    assert_eq!(response.content, "hello", "Done carries chat's content");
    assert_eq!(response.call_stats.as_ref().unwrap().attempts, 2);
    assert_idle(&fx, &["s1"]).await;
    fx.sink.assert_counts(2, 0);
}

// covers: D32 (stall after the commit point: committed error, no retry, no stall hedge)
#[tokio::test(start_paused = true)]
async fn d32_stall_after_commit_ends_committed_without_retry_or_stall_hedge() {
    let fx = FxBuilder {
        sources: vec![src("s1", "m-1", Some(1.0)), src("s2", "m-2", Some(1.0))],
        hedge: HedgeConfig::new(None, Some(Duration::from_millis(50)), 1).unwrap(),
        ..FxBuilder::hedge_after()
    }
    .build();
    let stalled = response(vec![content(5, "par"), content(5, "tial")], End::Hang);
    let other = response(vec![content(0, "other"), done(0)], End::Eof);
    let wire = wire(
        Script::new(vec![for_model("m-1", stalled), for_model("m-2", other)])
            .with_order(Order::ByModel),
    );
    let (deltas, result) = stream_all(&fx.gov, &wire, 4).await;
    let error = result.expect_err("the stall ends the stream");
    assert!(error.is_committed(), "{error:?}");
    let partial = error.partial_output().unwrap();
    assert_eq!(partial.content, "partial");
    assert_eq!(text(&deltas), "partial");
    assert!(
        error.reason_code().is_some(),
        "carries the verdict's reason"
    );
    assert_eq!(
        wire.request_count(),
        1,
        "no retry and no stall hedge after commit"
    );
    assert_idle(&fx, &["s1", "s2"]).await;
    fx.sink.assert_counts(1, 1);
}

// covers: D32, H-40 (a hedged first token commits the faster leg; the loser is cancelled)
#[tokio::test(start_paused = true)]
async fn d32_hedged_first_token_commits_the_faster_leg_and_cancels_the_loser() {
    let fx = FxBuilder {
        sources: vec![src("s1", "m-1", None), src("s2", "m-2", None)],
        hedge: HedgeConfig::new(Some(Duration::from_millis(50)), None, 1).unwrap(),
        ..FxBuilder::hedge_after()
    }
    .build();
    // The primary's head arrives after 40 ms, its first token only at 500 ms; the hedge leg
    // (launched at 50 ms) answers its first token 10 ms later and keeps streaming for 1 s.
    // Without the commit point the primary would finish first (at 500 ms) and win, as in chat.
    let mut slow = response(
        vec![
            content(460, "slow"),
            delta(0, "{}", Some("stop"), None),
            done(0),
        ],
        End::Eof,
    );
    slow.head_delay_ms = 40;
    let fast = response(
        vec![
            content(10, "fast"),
            content(1000, " tail"),
            delta(0, "{}", Some("stop"), None),
            done(0),
        ],
        End::Eof,
    );
    let wire = wire(
        Script::new(vec![for_model("m-1", slow), for_model("m-2", fast)])
            .with_order(Order::ByModel),
    );
    let (deltas, result) = stream_all(&fx.gov, &wire, 4).await;
    let (response, _) = result.expect("the hedge leg delivers");
    assert_eq!(
        text(&deltas),
        "fast tail",
        "only the committed leg is forwarded"
    );
    assert_eq!(response.source_name, "s2");
    let stats = response.call_stats.unwrap();
    assert_eq!(
        (stats.hedges, stats.hedge_won, stats.attempts),
        (1, true, 2)
    );
    assert_idle(&fx, &["s1", "s2"]).await;
    let labels = fx.row_labels();
    assert!(
        labels.contains(&("s1".to_owned(), "hedge_cancelled".to_owned())),
        "{labels:?}"
    );
    assert!(
        labels.contains(&("s2".to_owned(), "ok".to_owned())),
        "{labels:?}"
    );
}

/// Plays a streamed call and drops it after `drop_after` forwarded deltas (never, when the
/// call ends first). Returns whether it was dropped.
async fn drop_after(fx: &Fx, wire: &Arc<ScriptedWire>, drop_after: usize) -> bool {
    let (gate, mut rx) = CommitGate::new(1, false);
    let gate = Arc::new(gate);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::Text, true))
        .with_commit_gate(gate.clone());
    let call = fx
        .gov
        .run_chat_streamed(&ex, CallOptions::default(), None, &gate);
    tokio::pin!(call);
    let mut got = 0;
    let warmup = tokio::time::sleep(Duration::from_millis(1));
    tokio::pin!(warmup);
    loop {
        if got >= drop_after && warmup.is_elapsed() {
            return true;
        }
        tokio::select! {
            biased;
            Some(_) = rx.recv() => got += 1,
            _ = &mut call => return false,
            () = &mut warmup, if !warmup.is_elapsed() => {}
        }
    }
}

fn frames(n: usize, gap_ms: u64) -> Vec<RawChunk> {
    let mut v: Vec<RawChunk> = (0..n).map(|i| content(gap_ms, &format!("t{i} "))).collect();
    v.push(delta(0, "{}", Some("stop"), None));
    v.push(done(0));
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    // covers: D32, D8 (dropping the stream at any event index leaks nothing)
    #[test]
    fn d32_d8_dropping_the_stream_at_any_point_leaks_nothing(
        n in 1usize..6,
        at in 0usize..8,
        gap in 0u64..20,
        fail_first in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let fx = FxBuilder::hedge_off().hedge(HedgeConfig::off()).sources(&["s1"]).build();
            let mut responses = Vec::new();
            if fail_first {
                responses.push(response(vec![delta(0, r#"{"role":"assistant"}"#, None, None)], End::Reset));
            }
            responses.push(response(frames(n, gap), End::Eof));
            let wire = wire(Script::new(responses));
            let dropped = drop_after(&fx, &wire, at).await;
            assert_idle(&fx, &["s1"]).await;
            assert_eq!(wire.open_streams(), 0, "every upstream stream released");
            let attempts = wire.request_count();
            let (rows, terminals) = fx.sink.counts();
            // rows = attempts + failed (here: cancelled) calls.
            assert_eq!(rows, attempts, "one attempt row per attempt");
            assert_eq!(terminals, usize::from(dropped), "one terminal row per dropped call");
        });
    }
}
