//! Streaming to the caller, tier 1 through the public facade (README D32, D8; 60 H-40): the
//! `ChatStream` that `GatewayClient::builder()` builds, over an injected `ScriptedWire`
//! transport, an injected recording telemetry recorder and the runtime clock, all on tokio's
//! paused clock. Unlike `gateway-core/tests/stream_commit.rs` (the governor and the commit gate
//! paired by hand), these tests drive the real stream type the caller holds, so its own polling,
//! draining and drop path are what is pinned.
//!
//! Covered: a failure before the commit point is retried invisibly; a stall after the commit
//! point ends the stream with a committed error and no retry or stall hedge; a hedged first
//! token commits the faster leg and the loser is cancelled and settled; and, as a proptest over
//! random scripts (retries before commit, a hedged first token, frame counts and gaps) and
//! random drop points, dropping the stream leaks nothing: in-flight back to 0, every upstream
//! stream released, no task left, telemetry rows = attempts + failed calls (cancelled attempt
//! rows included).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a missing value is a failed test"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use gateway_core::clock::TokioClock;
use gateway_ports::{
    EventKind, RecordError, RetryPolicy, SelectorKind, SourceConfig, TelemetryRecorder,
    TelemetryRow, TelemetryStatus, TelemetryStatusProvider,
};
use gateway_testkit::ScriptedWire;
use polygateway::{ChatOptions, ChatStream, GatewayClient, GatewayError, LlmResponse, StreamEvent};
use proptest::prelude::*;
use serde_json::json;
use upstream_sim::script::{End, Match, RawChunk, Response, Script};

// ── fixture ────────────────────────────────────────────────────────────────────────────────

/// A recorder keeping every row in memory.
#[derive(Default)]
struct Rows(Mutex<Vec<TelemetryRow>>);

impl Rows {
    fn all(&self) -> Vec<TelemetryRow> {
        self.0.lock().unwrap().clone()
    }

    /// `(attempt rows, terminal rows)`.
    fn counts(&self) -> (usize, usize) {
        let rows = self.all();
        let attempts = rows
            .iter()
            .filter(|r| r.event_kind == EventKind::Attempt)
            .count();
        let terminals = rows
            .iter()
            .filter(|r| r.event_kind == EventKind::TerminalFailure)
            .count();
        (attempts, terminals)
    }

    /// `(source, error label)` of every attempt row.
    fn attempt_labels(&self) -> Vec<(String, Option<String>)> {
        self.all()
            .into_iter()
            .filter(|r| r.event_kind == EventKind::Attempt)
            .map(|r| (r.source_name, r.error))
            .collect()
    }
}

impl TelemetryStatusProvider for Rows {
    fn status(&self) -> TelemetryStatus {
        TelemetryStatus::for_backend("none")
    }
}

#[async_trait]
impl TelemetryRecorder for Rows {
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        self.0.lock().unwrap().push(row);
        Ok(())
    }
}

/// Source `name` whose model is `model`, with an inter-token budget of `inter_s`.
fn src(name: &str, model: &str, inter_s: Option<f64>) -> SourceConfig {
    let mut s = SourceConfig::new(
        name,
        "test",
        "http://127.0.0.1:9/v1",
        Some("sk-test-stream-0123".into()),
        model,
    );
    s.timeout_s = 30.0;
    if inter_s.is_some() {
        s.ttft_timeout_s = Some(10.0);
    }
    s.inter_token_timeout_s = inter_s;
    s
}

struct Fx {
    client: GatewayClient,
    wire: Arc<ScriptedWire>,
    rows: Arc<Rows>,
}

#[derive(Default)]
struct Knobs {
    hedge_after_s: Option<f64>,
    stall_after_s: Option<f64>,
    inter_s: Option<f64>,
}

/// Two sources `s1` (model `m-1`, the first pick of a fresh round-robin client) and `s2`
/// (`m-2`), one scripted wire for both, six attempts with fast backoff, rows recorded in memory.
fn fx(script: Script, knobs: Knobs) -> Fx {
    let wire = Arc::new(ScriptedWire::new(script).expect("valid script"));
    let rows = Arc::new(Rows::default());
    let mut builder = GatewayClient::builder()
        .scope("LLM")
        .sources(vec![
            src("s1", "m-1", knobs.inter_s),
            src("s2", "m-2", knobs.inter_s),
        ])
        .selector(SelectorKind::RoundRobin)
        .retry(RetryPolicy {
            max_attempts: 6,
            backoff_base_s: 0.01,
            backoff_max_s: 0.02,
            ..RetryPolicy::default()
        })
        .clock(Arc::new(TokioClock::new()))
        .telemetry(Arc::clone(&rows) as _)
        .transport(Arc::clone(&wire) as _);
    if let Some(after) = knobs.hedge_after_s {
        builder = builder.hedge_after_s(after);
    }
    if let Some(after) = knobs.stall_after_s {
        builder = builder.hedge_stall_after_s(after);
    }
    let client = builder.build().expect("client assembles");
    Fx { client, wire, rows }
}

fn for_model(model: &str, mut r: Response) -> Response {
    r.matcher = Some(Match {
        model: Some(model.to_owned()),
        ..Match::default()
    });
    r
}

fn frame(delay_ms: u64, json_text: &str) -> RawChunk {
    RawChunk::text(format!("data: {json_text}\n\n")).after_ms(delay_ms)
}

fn content(delay_ms: u64, text: &str) -> RawChunk {
    let chunk = json!({"id": "up-1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    frame(delay_ms, &chunk.to_string())
}

fn role_only(delay_ms: u64) -> RawChunk {
    frame(
        delay_ms,
        r#"{"id":"up-1","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}"#,
    )
}

fn stop_and_done() -> [RawChunk; 2] {
    [
        frame(
            0,
            r#"{"id":"up-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        RawChunk::text("data: [DONE]\n\n"),
    ]
}

fn response(chunks: Vec<RawChunk>, end: End) -> Response {
    Response {
        chunks: Some(chunks),
        end,
        ..Response::default()
    }
}

/// A response resetting the connection after a role-only frame (no content token).
fn reset_before_token() -> Response {
    response(vec![role_only(0)], End::Reset)
}

/// A good answer: `n` content frames `t{i} ` `gap_ms` apart, the first after `first_ms`.
fn good(n: usize, first_ms: u64, gap_ms: u64) -> Response {
    let mut chunks: Vec<RawChunk> = (0..n)
        .map(|i| content(if i == 0 { first_ms } else { gap_ms }, &format!("t{i} ")))
        .collect();
    chunks.extend(stop_and_done());
    response(chunks, End::Eof)
}

/// What a stream produced: the concatenated deltas and the final item.
struct Streamed {
    text: String,
    end: Result<LlmResponse, GatewayError>,
}

async fn collect(mut stream: ChatStream) -> Streamed {
    let mut text = String::new();
    let mut end = None;
    while let Some(item) = stream.next().await {
        assert!(end.is_none(), "nothing after the final event");
        match item {
            Ok(StreamEvent::Delta(d)) => text.push_str(&d.content),
            Ok(StreamEvent::Done(r)) => end = Some(Ok(*r)),
            Ok(other) => panic!("unknown event {other:?}"),
            Err(e) => end = Some(Err(e)),
        }
    }
    Streamed {
        text,
        end: end.expect("exactly one final event"),
    }
}

fn stream_options() -> ChatOptions {
    ChatOptions::new().stream(true)
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Settles the client and asserts nothing is held: in-flight 0 on every source, every
/// upstream stream released, no task beyond `baseline_tasks`.
async fn assert_settled(fx: &Fx, baseline_tasks: usize) {
    fx.client.quiesce().await;
    for status in fx.client.sources_status().await {
        assert_eq!(status.inflight, Some(0), "in-flight of {}", status.name);
    }
    assert_eq!(fx.wire.open_streams(), 0, "every upstream stream released");
    // Tasks that just finished are reaped at their next poll.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    assert_eq!(alive_tasks(), baseline_tasks, "no task left behind");
}

// ── the Done-when rows ─────────────────────────────────────────────────────────────────────

// covers: D32 (a failure before the commit point is retried invisibly)
#[tokio::test(start_paused = true)]
async fn d32_chat_stream_failure_before_commit_is_retried_invisibly() {
    // Attempt 1 (on s1) sends a role-only frame, then resets; attempt 2 (s2) delivers.
    let script = Script::new(vec![
        for_model("m-1", reset_before_token()),
        for_model("m-2", good(2, 5, 5)),
    ]);
    let fx = fx(script, Knobs::default());
    let baseline = alive_tasks();
    let streamed = collect(fx.client.chat_stream("hi", stream_options())).await;
    let response = streamed.end.expect("the retry delivers");
    assert_eq!(fx.wire.request_count(), 2, "retried once");
    assert_eq!(
        streamed.text, "t0 t1 ",
        "nothing of attempt 1 reached the caller"
    );
    assert_eq!(response.content, "t0 t1 ");
    assert_eq!(response.source_name, "s2");
    assert_eq!(response.call_stats.as_ref().unwrap().attempts, 2);
    assert_settled(&fx, baseline).await;
    assert_eq!(fx.rows.counts(), (2, 0), "two attempt rows, no terminal");
    fx.client.close().await;
}

// covers: D32, H-19 (a stall after the commit point: committed error, no retry, no stall hedge)
#[tokio::test(start_paused = true)]
async fn d32_chat_stream_stall_after_commit_ends_committed_without_retry() {
    let stalled = response(vec![content(5, "par"), content(5, "tial")], End::Hang);
    let script = Script::new(vec![
        for_model("m-1", stalled),
        for_model("m-2", good(1, 0, 0)),
    ]);
    let fx = fx(
        script,
        Knobs {
            stall_after_s: Some(0.05),
            inter_s: Some(1.0),
            ..Knobs::default()
        },
    );
    let baseline = alive_tasks();
    let started = tokio::time::Instant::now();
    let streamed = collect(fx.client.chat_stream("hi", stream_options())).await;
    let error = streamed.end.expect_err("the stall ends the stream");
    assert!(error.is_committed(), "{error:?}");
    assert_eq!(streamed.text, "partial");
    assert_eq!(error.partial_output().unwrap().content, "partial");
    assert!(
        error.reason_code().is_some(),
        "carries the verdict's reason"
    );
    assert_eq!(
        fx.wire.request_count(),
        1,
        "no retry and no stall hedge after the commit point"
    );
    // The inter-token watchdog (1 s) fired, not the stall hedge (50 ms) nor the 30 s timeout.
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    assert_settled(&fx, baseline).await;
    assert_eq!(
        fx.rows.counts(),
        (1, 1),
        "one attempt row, one terminal row"
    );
    fx.client.close().await;
}

// covers: D32, H-40, H-44, H-45 (a hedged first token commits the faster leg; the loser is cancelled and
// settled)
#[tokio::test(start_paused = true)]
async fn d32_chat_stream_hedged_first_token_commits_the_faster_leg() {
    // s1's head arrives at 40 ms, its first token only at 500 ms; the hedge leg on s2 (launched
    // at 50 ms) sends its first token 10 ms later and keeps streaming for 1 s. Without the commit
    // point s1 would finish first (at 500 ms) and win, as in chat.
    let mut slow = response(
        {
            let mut c = vec![content(460, "slow")];
            c.extend(stop_and_done());
            c
        },
        End::Eof,
    );
    slow.head_delay_ms = 40;
    let fast = response(
        {
            let mut c = vec![content(10, "fast"), content(1000, " tail")];
            c.extend(stop_and_done());
            c
        },
        End::Eof,
    );
    let script = Script::new(vec![for_model("m-1", slow), for_model("m-2", fast)]);
    let fx = fx(
        script,
        Knobs {
            hedge_after_s: Some(0.05),
            ..Knobs::default()
        },
    );
    let baseline = alive_tasks();
    let mut stream = fx.client.chat_stream("hi", stream_options());
    let first = stream.next().await.expect("an event").expect("a delta");
    let StreamEvent::Delta(first) = first else {
        panic!("a delta first: {first:?}")
    };
    assert_eq!(first.content, "fast");
    assert!(stream.is_committed());
    // The loser is settled as soon as the faster leg commits, long before the stream ends.
    fx.client.quiesce().await;
    for status in fx.client.sources_status().await {
        if status.name == "s1" {
            assert_eq!(status.inflight, Some(0), "the loser's permit is back");
        }
    }
    assert!(
        fx.rows
            .attempt_labels()
            .contains(&("s1".to_owned(), Some("hedge_cancelled".to_owned()))),
        "{:?}",
        fx.rows.attempt_labels()
    );
    let rest = collect(stream).await;
    let response = rest.end.expect("the hedge leg delivers");
    assert_eq!(
        format!("fast{}", rest.text),
        "fast tail",
        "only the committed leg"
    );
    assert_eq!(response.content, "fast tail");
    assert_eq!(response.source_name, "s2");
    let stats = response.call_stats.unwrap();
    assert_eq!(
        (stats.hedges, stats.hedge_won, stats.attempts),
        (1, true, 2)
    );
    assert_settled(&fx, baseline).await;
    assert_eq!(
        fx.rows.counts(),
        (2, 0),
        "winner and loser rows, no terminal"
    );
    assert!(
        fx.rows.attempt_labels().contains(&("s2".to_owned(), None)),
        "{:?}",
        fx.rows.attempt_labels()
    );
    fx.client.close().await;
}

// ── drop points ────────────────────────────────────────────────────────────────────────────

/// One random streamed call.
#[derive(Debug, Clone)]
struct Case {
    /// Failures (reset before a token) s1 answers before its good answer.
    fails_s1: usize,
    /// The same for s2.
    fails_s2: usize,
    /// First-token hedge on (threshold 50 ms).
    hedged: bool,
    /// s1's first-token delay (ms): above 50 ms with a hedge, s2's leg may win.
    first_ms_s1: u64,
    /// Content frames of a good answer.
    frames: usize,
    /// Gap between content frames (ms).
    gap_ms: u64,
    /// Events taken before the drop.
    drop_after: usize,
    /// Then how long the next event is awaited before the stream is dropped (ms; 0: not at all).
    wait_ms: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0usize..3,
        0usize..3,
        any::<bool>(),
        0u64..200,
        1usize..5,
        0u64..30,
        0usize..8,
        0u64..120,
    )
        .prop_map(
            |(fails_s1, fails_s2, hedged, first_ms_s1, frames, gap_ms, drop_after, wait_ms)| Case {
                fails_s1,
                fails_s2,
                hedged,
                first_ms_s1,
                frames,
                gap_ms,
                drop_after,
                wait_ms,
            },
        )
}

fn script_of(case: &Case) -> Script {
    let mut responses = Vec::new();
    for (model, fails, first_ms) in [
        ("m-1", case.fails_s1, case.first_ms_s1),
        ("m-2", case.fails_s2, 5),
    ] {
        for _ in 0..fails {
            responses.push(for_model(model, reset_before_token()));
        }
        // The last response of a model repeats for its later requests.
        responses.push(for_model(model, good(case.frames, first_ms, case.gap_ms)));
    }
    Script::new(responses)
}

/// Plays `case` against a fresh client and checks the settlement invariants.
async fn play(case: Case) {
    let fx = fx(
        script_of(&case),
        Knobs {
            hedge_after_s: case.hedged.then_some(0.05),
            ..Knobs::default()
        },
    );
    let baseline = alive_tasks();
    let mut stream = fx.client.chat_stream("hi", stream_options());
    let mut taken = 0;
    let mut delivered = false;
    let mut ended = false;
    while taken < case.drop_after {
        match stream.next().await {
            Some(Ok(StreamEvent::Done(_))) => {
                delivered = true;
                taken += 1;
            }
            Some(Ok(_)) => taken += 1,
            Some(Err(e)) => {
                // Only when the retries ran out before a good answer (a failed call).
                assert!(
                    !e.is_committed(),
                    "no failure after the commit point: {e:?}"
                );
                taken += 1;
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    if !ended && case.wait_ms > 0 {
        // Poll once more for a while, then drop mid-wait (in a backoff, an admission, a
        // hedge round, or between two frames).
        if let Ok(Some(Ok(StreamEvent::Done(_)))) =
            tokio::time::timeout(Duration::from_millis(case.wait_ms), stream.next()).await
        {
            delivered = true;
        }
    }
    drop(stream);
    assert_settled(&fx, baseline).await;
    let attempts = fx.wire.request_count();
    let started = taken > 0 || case.wait_ms > 0;
    // The call may have ended well before the caller took its `Done` (the last frames and the
    // verdict run inside the poll that hands out a delta): then it succeeded, with an `ok`
    // attempt row, and dropping the stream cancels nothing.
    let ok_rows = fx
        .rows
        .attempt_labels()
        .iter()
        .filter(|(_, e)| e.is_none())
        .count();
    assert!(ok_rows <= 1, "one winner at most: {case:?}");
    if delivered {
        assert_eq!(ok_rows, 1, "a delivered call has its ok row: {case:?}");
    }
    let failed_calls = usize::from(started && ok_rows == 0);
    let (attempt_rows, terminal_rows) = fx.rows.counts();
    assert_eq!(
        attempt_rows, attempts,
        "one attempt row per attempt: {case:?}"
    );
    assert_eq!(
        terminal_rows, failed_calls,
        "one terminal row per failed (dropped) call: {case:?}"
    );
    assert_eq!(
        attempt_rows + terminal_rows,
        attempts + failed_calls,
        "rows = attempts + failed calls"
    );
    if failed_calls == 1 && taken > 0 {
        // Dropped after the commit point: the committed attempt was running, so its row is
        // the `cancelled` one (D8).
        let labels = fx.rows.attempt_labels();
        assert!(
            labels
                .iter()
                .any(|(_, e)| e.as_deref() == Some("cancelled")),
            "the running attempt's cancelled row: {labels:?} {case:?}"
        );
    }
    fx.client.close().await;
    assert_eq!(
        fx.rows.counts(),
        (attempt_rows, terminal_rows),
        "no late row"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    // covers: D32, D8, H-40 (dropping the public ChatStream at any event index, or while it
    // waits, leaks nothing and leaves rows = attempts + failed calls)
    #[test]
    fn d32_d8_dropping_chat_stream_at_any_point_leaks_nothing(case in case()) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(play(case));
    }
}

// covers: D8 (a never-polled stream starts nothing)
#[tokio::test(start_paused = true)]
async fn d32_chat_stream_never_polled_starts_nothing() {
    let fx = fx(Script::new(vec![good(1, 0, 0)]), Knobs::default());
    let baseline = alive_tasks();
    drop(fx.client.chat_stream("hi", stream_options()));
    assert_settled(&fx, baseline).await;
    assert_eq!(fx.wire.request_count(), 0);
    assert_eq!(fx.rows.counts(), (0, 0));
    fx.client.close().await;
}
