//! Tier 1 (05 R-30) of the attempt executor: watchdogs (40 S-88..S-93), timing signals (S-81..
//! S-87; 05 R-12), stall metering (60 H-50..H-59, H-61/H-62 through the governor), loser
//! cancellation while the transport is pending (05 R-8) and the JSON body on a stream (05 R-27)
//! — on tokio's paused clock over `gateway_testkit::ScriptedWire`, so every instant is exact.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use exec::*;
use gateway_core::attempt::{AttemptCtx, AttemptOutcome, AttemptRunner as _, LegControl};
use gateway_core::executor::{ChatExecutor, stall_from_times};
use gateway_core::governor::CallOptions;
use gateway_ports::{
    Category, NetworkFault, NetworkFaultKind, ReasonCode, ResponseMode, WireFailure,
};
use upstream_sim::script::End;

fn s(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap()
}

// ---- stall_from_times (60 H-51) -------------------------------------------------------------

#[test]
fn cf_107_h_59_stall_from_times_pinned() {
    let (ms, n) = stall_from_times(&[s(0.0), s(0.3), s(2.0), s(2.1)], 1000);
    assert!((ms.unwrap() - 1700.0).abs() < 1e-6, "{ms:?}");
    assert_eq!(n, Some(1));
}

#[test]
fn cf_108_h_53_gap_equal_to_threshold_is_not_a_stall() {
    assert_eq!(
        stall_from_times(&[s(0.0), s(1.0)], 1000),
        (Some(0.0), Some(0))
    );
}

#[test]
fn cf_109_h_55_fewer_than_two_timestamps_cannot_observe() {
    assert_eq!(stall_from_times(&[], 1000), (None, None));
    assert_eq!(stall_from_times(&[s(0.5)], 1000), (None, None));
}

#[test]
fn h_57_consecutive_stalls_are_counted_separately() {
    let (ms, n) = stall_from_times(&[s(0.0), s(2.0), s(4.5), s(4.6)], 1000);
    assert_eq!(n, Some(2));
    assert!((ms.unwrap() - 4500.0).abs() < 1e-6);
}

// ---- watchdogs (40 §8) ----------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn s_88_ttft_fires_at_exactly_its_threshold() {
    let wire = sse(vec![content(1000, "late"), done(0)]);
    let run = run_on(
        wire,
        source_with(10.0, Some(0.3), None),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 300);
    assert!(
        run.message().contains("stream liveness timeout (ttft)"),
        "{}",
        run.message()
    );
    assert_eq!(run.progress, 0);
    assert_eq!(
        run.wire.open_streams(),
        0,
        "S-10: the stream is dropped on expiry"
    );
}

#[tokio::test(start_paused = true)]
async fn s_81_ttft_budget_includes_the_response_head() {
    let wire = exec::wire_of(vec![upstream_sim::script::Response {
        head_delay_ms: 500,
        ..response(vec![content(0, "x"), done(0)], End::Eof)
    }]);
    let run = run_on(
        wire,
        source_with(10.0, Some(0.3), None),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 300);
}

#[tokio::test(start_paused = true)]
async fn s_88_first_progress_just_inside_ttft_is_in_time() {
    let wire = sse(vec![
        content(299, "ok"),
        delta(0, "{}", Some("stop"), Some(USAGE)),
        done(0),
    ]);
    let run = run_on(
        wire,
        source_with(10.0, Some(0.3), None),
        request(ResponseMode::Text, true),
    )
    .await;
    assert_eq!(run.ok().content, "ok");
    assert_eq!(run.ok().ttft_ms, Some(299.0));
}

// covers: S-79
#[tokio::test(start_paused = true)]
async fn case_021_s_32_cf_114_keepalives_never_reset_the_ttft_watchdog() {
    // Comments and usage-only frames every 100 ms: none is progress (S-32, S-78), so TTFT
    // fires at exactly 300 ms although bytes keep arriving (seeds win over case 021's idle timer).
    let mut chunks = Vec::new();
    for _ in 0..10 {
        chunks.push(raw(100, ": OPENROUTER PROCESSING\n\n"));
        chunks.push(usage_only(0));
        chunks.push(raw(0, "data:\n\n"));
    }
    chunks.push(content(0, "亚"));
    chunks.push(done(0));
    let run = run_on(
        sse(chunks),
        source_with(10.0, Some(0.3), None),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 300);
    assert!(run.message().contains("(ttft)"));
}

#[tokio::test(start_paused = true)]
async fn case_021_comments_between_content_complete_in_time() {
    let wire = sse(vec![
        raw(0, ": OPENROUTER PROCESSING\n\n"),
        raw(50, ":ping\n"),
        content(0, "亚"),
        delta(0, "{}", Some("stop"), Some(USAGE)),
        done(0),
    ]);
    let run = run_on(
        wire,
        source_with(10.0, Some(0.3), None),
        request(ResponseMode::Text, true),
    )
    .await;
    assert_eq!(run.ok().content, "亚");
}

#[tokio::test(start_paused = true)]
async fn s_89_inter_token_fires_after_the_last_progress_event() {
    // Progress at 100 ms, then only keep-alives and a finish-only frame (not progress).
    let wire = sse(vec![
        content(100, "a"),
        raw(100, ": ping\n\n"),
        delta(100, "{}", Some("stop"), None),
        content(500, "b"),
        done(0),
    ]);
    let run = run_on(
        wire,
        source_with(10.0, Some(1.0), Some(0.25)),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 350);
    assert!(run.message().contains("(inter_token)"), "{}", run.message());
    assert_eq!(run.progress, 1);
}

#[tokio::test(start_paused = true)]
async fn s_89_tail_after_the_last_progress_is_inside_the_inter_token_budget() {
    let wire = sse(vec![content(0, "a"), usage_only(300), done(0)]);
    let run = run_on(
        wire,
        source_with(10.0, Some(1.0), Some(0.25)),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 250);
}

#[tokio::test(start_paused = true)]
async fn s_88_total_watchdog_ends_a_steady_stream() {
    let mut chunks: Vec<_> = (0..20).map(|_| content(300, "x")).collect();
    chunks.push(done(0));
    let run = run_on(
        sse(chunks),
        source_with(1.0, Some(0.5), Some(0.5)),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 1000);
    assert!(run.message().contains("(total)"), "{}", run.message());
    assert_eq!(
        run.progress, 3,
        "progress at 300, 600, 900 ms; the 1200 ms frame is late"
    );
}

#[tokio::test(start_paused = true)]
async fn s_90_budgets_ending_at_the_same_instant_report_total() {
    // ttft and inter_token inherit timeout_s: the TTFT and total budgets end together.
    let run = run_on(
        hang_head(),
        source_with(0.5, None, None),
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 500);
    assert!(run.message().contains("(total)"), "{}", run.message());
}

#[tokio::test(start_paused = true)]
async fn s_93_non_stream_has_only_the_total_watchdog() {
    let body = r#"{"choices":[{"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
    let src = source_with(1.0, Some(0.1), Some(0.05));
    let run = run_on(
        json_body(700, body),
        src.clone(),
        request(ResponseMode::Text, false),
    )
    .await;
    assert_eq!(
        run.ok().content,
        "42",
        "TTFT does not apply to a non-stream body"
    );
    let run = run_on(
        json_body(1500, body),
        src,
        request(ResponseMode::Text, false),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 1000);
    assert!(run.message().contains("(total)"));
}

#[tokio::test(start_paused = true)]
async fn r_27_json_body_on_a_stream_is_judged_as_non_stream_under_total_only() {
    let body = r#"{"id":"chatcmpl-1","choices":[{"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
    let src = source_with(1.0, Some(0.1), Some(0.05));
    let run = run_on(
        json_body(700, body),
        src.clone(),
        request(ResponseMode::Text, true),
    )
    .await;
    let r = run.ok();
    assert_eq!(r.content, "42");
    assert_eq!(
        (r.ttft_ms, r.stall_ms, r.stream_end),
        (None, None, None),
        "S-111 step 10"
    );
    assert_eq!(r.usage.prompt_tokens + r.usage.completion_tokens, 5);
    assert_eq!(run.progress, 0, "a body never signals progress");
    assert_eq!(
        run.warnings.len(),
        1,
        "one warning per source (stream:json_body)"
    );

    let run = run_on(
        json_body(1500, body),
        src,
        request(ResponseMode::Text, true),
    )
    .await;
    run.assert_fails(Category::Transient, ReasonCode::LivenessTimeout);
    assert_eq!(run.elapsed_ms, 1000);
}

#[tokio::test(start_paused = true)]
async fn r_27_json_error_body_on_a_stream_is_an_in_band_error() {
    let run = run_text(json_body(
        0,
        r#"{"error":{"message":"x","code":"server_error"}}"#,
    ))
    .await;
    run.assert_fails(Category::Transient, ReasonCode::UpstreamErrorFrame);
    // README D20: a JSON-typed body that does not start with `{` or `[` is framed as SSE: the
    // line is not SSE, so the stream ends with zero output.
    let run = run_text(json_body(0, "not json")).await;
    run.assert_fails(Category::Transient, ReasonCode::EarlyEof);
    let run = run_text(json_body(0, "  ")).await;
    run.assert_fails(Category::Transient, ReasonCode::EmptyResponse);
}

// covers: S-102
#[tokio::test(start_paused = true)]
async fn cf_115_s_92_reasoning_alias_keeps_ttft_and_inter_token_alive() {
    let mut chunks = vec![delta(0, r#"{"role":"assistant"}"#, None, None)];
    for _ in 0..5 {
        chunks.push(delta(100, r#"{"reasoning":"t"}"#, None, None));
    }
    chunks.push(delta(
        100,
        r#"{"content":"answer"}"#,
        Some("stop"),
        Some(USAGE),
    ));
    chunks.push(done(0));
    let run = run_on(
        sse(chunks),
        source_with(10.0, Some(0.3), Some(0.25)),
        request(ResponseMode::Text, true),
    )
    .await;
    let r = run.ok();
    assert_eq!(
        (r.content.as_str(), r.thinking.as_str()),
        ("answer", "ttttt")
    );
}

// covers: CF-287
#[tokio::test(start_paused = true)]
async fn cf_117_tool_fragments_keep_the_watchdogs_alive() {
    let first = serde_json::json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1",
        "type": "function", "function": {"name": "f", "arguments": ""}}]});
    let mut chunks = vec![delta(200, &first.to_string(), None, None)];
    for part in ["{", "\"a\"", ":", "1", "}"] {
        let d = serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]});
        chunks.push(delta(200, &d.to_string(), None, None));
    }
    chunks.push(delta(0, "{}", Some("tool_calls"), Some(USAGE)));
    chunks.push(done(0));
    let run = run_on(
        sse(chunks),
        source_with(10.0, Some(0.3), Some(0.25)),
        request(ResponseMode::OpenAi, true),
    )
    .await;
    let r = run.ok();
    let completion = r.completion.as_ref().unwrap();
    let tools = completion.message()["tool_calls"].clone();
    assert_eq!(tools[0]["function"]["arguments"], "{\"a\":1}");
    assert_eq!(
        run.progress, 6,
        "identity frame plus five argument fragments (R-12)"
    );
}

// ---- timing signals (40 §7; 05 R-12) --------------------------------------------------------

// covers: S-79, S-84, CF-100
#[tokio::test(start_paused = true)]
async fn cf_103_r_12_progress_counter_counts_progress_frames_only() {
    let wire = sse(vec![
        delta(0, r#"{"reasoning":"ponder"}"#, None, None),
        content(0, "hi"),
        content(0, " there"),
        usage_only(0),
        done(0),
    ]);
    let run = run_text(wire).await;
    assert_eq!(run.ok().content, "hi there");
    assert_eq!(run.progress, 3, "usage frame not counted");
}

// covers: S-85
#[tokio::test(start_paused = true)]
async fn cf_104_reasoning_steps_progress_three_times_and_observe_no_stall() {
    let wire = sse(vec![
        delta(0, r#"{"reasoning_content":"step1"}"#, None, None),
        delta(0, r#"{"reasoning_content":"step2"}"#, None, None),
        content(0, "ok"),
        usage_only(0),
        done(0),
    ]);
    let run = run_text(wire).await;
    let r = run.ok();
    assert_eq!(r.thinking, "step1step2");
    assert_eq!(run.progress, 3);
    assert_eq!((r.stall_ms, r.stall_count), (Some(0.0), Some(0)));
}

// covers: S-84, S-85
#[tokio::test(start_paused = true)]
async fn cf_101_cf_105_non_stream_never_signals_and_has_no_stall() {
    let body = r#"{"choices":[{"message":{"content":"42"}}],"usage":{"prompt_tokens":11,"completion_tokens":7}}"#;
    let run = run_on(
        json_body(0, body),
        source(),
        request(ResponseMode::Text, false),
    )
    .await;
    let r = run.ok();
    assert_eq!(r.content, "42");
    assert_eq!(run.progress, 0);
    assert_eq!((r.stall_ms, r.stall_count, r.ttft_ms), (None, None, None));
}

#[tokio::test(start_paused = true)]
async fn s_82_s_83_ttft_and_max_inter_token_are_exact_unrounded_ms() {
    let wire = exec::wire_of(vec![upstream_sim::script::Response {
        head_delay_ms: 40,
        ..response(
            vec![
                content(160, "a"),
                content(50, "b"),
                content(120, "c"),
                usage_only(900),
                done(0),
            ],
            End::Eof,
        )
    }]);
    let run = run_text(wire).await;
    let r = run.ok();
    assert_eq!(
        r.ttft_ms,
        Some(200.0),
        "from `started`, head included (S-81)"
    );
    assert_eq!(r.max_inter_token_ms, Some(120.0), "the tail is not a gap");
}

#[tokio::test(start_paused = true)]
async fn s_83_one_progress_event_gives_zero_gap_and_no_stall_observation() {
    let run = run_text(sse(vec![content(10, "a"), usage_only(0), done(0)])).await;
    let r = run.ok();
    assert_eq!((r.ttft_ms, r.max_inter_token_ms), (Some(10.0), Some(0.0)));
    assert_eq!(
        (r.stall_ms, r.stall_count),
        (None, None),
        "H-55: fewer than 2 events"
    );
}

// ---- stall metering on the wire (60 §10) ----------------------------------------------------

fn threshold(ms: u32) -> gateway_ports::SourceConfig {
    let mut s = source();
    s.stall_threshold_ms = ms;
    s
}

#[tokio::test(start_paused = true)]
async fn cf_110_h_54_the_tail_is_never_a_stall() {
    let wire = sse(vec![
        content(0, "a"),
        content(0, "b"),
        usage_only(200),
        done(0),
    ]);
    let run = run_on(wire, threshold(50), request(ResponseMode::Text, true)).await;
    let r = run.ok();
    assert_eq!(r.content, "ab");
    assert_eq!((r.stall_ms, r.stall_count), (Some(0.0), Some(0)));
}

#[tokio::test(start_paused = true)]
async fn cf_111_h_50_empty_chunks_pings_and_usage_are_not_timed() {
    let wire = sse(vec![
        content(0, "a"),
        frame(200, r#"{"choices":[{"delta":{}}]}"#),
        raw(200, ": ping\n\n"),
        usage_only(200),
        content(0, "b"),
        done(0),
    ]);
    let run = run_on(wire, threshold(50), request(ResponseMode::Text, true)).await;
    let r = run.ok();
    assert_eq!(r.content, "ab");
    assert_eq!(r.stall_count, Some(1));
    assert_eq!(r.stall_ms, Some(600.0));
}

#[tokio::test(start_paused = true)]
async fn h_53_a_gap_exactly_at_the_threshold_is_not_counted_on_the_wire() {
    let wire = sse(vec![
        content(0, "a"),
        content(50, "b"),
        content(51, "c"),
        usage_only(0),
        done(0),
    ]);
    let run = run_on(wire, threshold(50), request(ResponseMode::Text, true)).await;
    let r = run.ok();
    assert_eq!((r.stall_ms, r.stall_count), (Some(51.0), Some(1)));
}

#[tokio::test(start_paused = true)]
async fn h_62_generation_ms_is_wall_time_net_of_truncated_stalls() {
    // Through the governor: the executor reports stall_ms unrounded, the attempt step records
    // the one generation sample (H-61: floor once, H-62: net = wall − stall).
    let mut src = support::source("s1");
    src.stall_threshold_ms = 1000;
    let fx = support::FxBuilder {
        sources: vec![src],
        ..support::FxBuilder::default()
    }
    .build();
    let wire = sse(vec![
        content(100, "a"),
        content(1500, "b"),
        content(1200, "c"),
        usage_only(300),
        done(0),
    ]);
    let executor = ChatExecutor::new(wire, request(ResponseMode::Text, true));
    let governed = fx
        .gov
        .run_chat(&executor, CallOptions::default())
        .await
        .unwrap();
    assert_eq!(governed.result.stall_ms, Some(2700.0));
    assert_eq!(governed.stats.stall_ms, Some(2700));
    assert_eq!(governed.stats.stall_count, Some(2));
    assert_eq!(governed.stats.generation_ms, 3100 - 2700);
}

// ---- cancellation (05 R-8) ------------------------------------------------------------------

async fn cancel_after(wire: Arc<gateway_testkit::ScriptedWire>, after_ms: u64) -> AttemptOutcome {
    let executor = ChatExecutor::new(wire, request(ResponseMode::Text, true));
    let control = LegControl::new();
    let ctx = AttemptCtx::new("call-0001", Arc::new(source()));
    let attempt = executor.run(ctx, None, control.clone());
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(after_ms)).await;
        control.cancel_as_loser();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        out = attempt => out,
        () = cancel => unreachable!(),
    }
}

#[tokio::test(start_paused = true)]
async fn r_8_loser_cancel_while_the_head_is_pending() {
    let wire = hang_head();
    let out = cancel_after(wire.clone(), 100).await;
    assert!(matches!(out, AttemptOutcome::CancelledAsLoser), "{out:?}");
    assert_eq!(wire.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn r_8_s_10_loser_cancel_mid_stream_drops_the_stream() {
    let wire = exec::wire_of(vec![response(
        vec![content(0, "a"), content(50, "b")],
        End::Hang,
    )]);
    let out = cancel_after(wire.clone(), 500).await;
    assert!(matches!(out, AttemptOutcome::CancelledAsLoser), "{out:?}");
    assert_eq!(wire.open_streams(), 0);
}

#[tokio::test(start_paused = true)]
async fn r_8_a_cancel_after_the_stream_ended_is_ignored() {
    let executor = ChatExecutor::new(
        sse(vec![content(0, "ok"), usage_only(0), done(0)]),
        request(ResponseMode::Text, true),
    );
    let control = LegControl::new();
    let ctx = AttemptCtx::new("call-0001", Arc::new(source()));
    let out = executor.run(ctx, None, control.clone()).await;
    control.cancel_as_loser();
    assert!(matches!(out, AttemptOutcome::Success(_)));
}

// ---- transport failures (30 G-19..G-21) -----------------------------------------------------

#[tokio::test(start_paused = true)]
async fn g_21_network_fault_before_the_head_is_classified() {
    let wire = sse(vec![done(0)]);
    wire.push_failure(WireFailure::Network(NetworkFault::new(
        NetworkFaultKind::Connect,
        "refused",
    )));
    let run = run_text(wire).await;
    assert_eq!(run.err().category(), Category::Transient);
}

#[tokio::test(start_paused = true)]
async fn g_19_http_status_is_classified_with_its_status() {
    let wire = exec::wire_of(vec![upstream_sim::script::Response {
        status: 503,
        ..response(vec![raw(0, r#"{"error":{"message":"busy"}}"#)], End::Eof)
    }]);
    let run = run_text(wire).await;
    assert_eq!(run.err().category(), Category::Transient);
    assert_eq!(run.err().http_status(), Some(503));
}

#[tokio::test(start_paused = true)]
async fn cf_118_s_29_read_error_after_finish_and_usage_is_never_clean() {
    let wire = exec::wire_of(vec![response(
        vec![delta(0, r#"{"content":"a"}"#, Some("stop"), Some(USAGE))],
        End::Reset,
    )]);
    let run = run_text(wire).await;
    run.assert_fails(Category::Transient, ReasonCode::ReadError);
}

// covers: S-87
#[tokio::test(start_paused = true)]
async fn cf_102_cf_106_ttft_is_measured_without_a_progress_receiver() {
    let executor = ChatExecutor::new(
        sse(vec![content(25, "ok"), usage_only(0), done(0)]),
        request(ResponseMode::Text, true),
    );
    let ctx = AttemptCtx::new("call-0001", Arc::new(source()));
    let AttemptOutcome::Success(r) = executor.run(ctx, None, LegControl::new()).await else {
        panic!("expected delivery");
    };
    assert_eq!(r.content, "ok");
    assert_eq!(r.ttft_ms, Some(25.0));
}

#[tokio::test(start_paused = true)]
async fn cf_119_watchdog_failure_names_source_and_kind_with_its_cause() {
    let run = run_on(
        hang_head(),
        source_with(10.0, Some(0.2), None),
        request(ResponseMode::Text, true),
    )
    .await;
    let failure = run.err().failure();
    assert_eq!(failure.message, "s1: stream liveness timeout (ttft)");
    assert_eq!(
        failure.cause,
        Some(gateway_ports::CauseKind::StreamLivenessTimeout)
    );
    assert_eq!(failure.source_name.as_deref(), Some("s1"));
}
