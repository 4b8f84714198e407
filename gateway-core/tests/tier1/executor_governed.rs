//! The executor under the governor (05 R-30 tier 1): `Governor::run_chat` driving a
//! `ChatExecutor` over a `ScriptedWire` on the paused clock — the 95 §8 "via client" wire rows
//! (CF-231, CF-233) and the fidelity rows (CF-241, CF-253; 40 S-3, S-122) at the core's
//! boundary (the facade adds only the response wrapping).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;
use crate::support;

use std::time::Duration;

use exec::{USAGE, content, delta, done, frame, request, response, wire_of};
use gateway_core::executor::ChatExecutor;
use gateway_core::governor::CallOptions;
use gateway_ports::{GatewayError, ReasonCode, ResponseMode, StreamEnd, UsageSource};
use serde_json::{Value, json};
use support::fx;
use upstream_sim::script::{End, RawChunk};

/// `_THINK` of 95.
const THINK: &str = r#"{"role":"assistant","reasoning_content":"long thought"}"#;

/// `tool_frames()` of 95 (as in `executor_wire.rs`).
fn tool_frames() -> Vec<RawChunk> {
    let tools = json!({"role": "assistant", "content": null, "tool_calls": [
        {"index": 1, "id": "b", "type": "function", "function": {"name": "echo", "arguments": "{\"v\":"}},
        {"index": 0, "id": "a", "type": "function", "function": {"name": "echo", "arguments": "{"}}]});
    let rest = json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"v\": \"中\" }"}},
        {"index": 1, "function": {"arguments": "2}"}}]});
    vec![
        delta(0, &tools.to_string(), None, None),
        delta(10, &rest.to_string(), Some("tool_calls"), Some(USAGE)),
        done(0),
    ]
}

// covers: V-48
#[tokio::test(start_paused = true)]
async fn cf_231_text_thinking_with_length_is_result_invalid_and_breaker_neutral() {
    let fx = fx();
    let wire = wire_of(vec![response(
        vec![delta(0, THINK, Some("length"), None), done(0)],
        End::Eof,
    )]);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::Text, true));
    let e = fx
        .gov
        .run_chat(&ex, CallOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::ResultInvalid(_)), "{e:?}");
    assert_eq!(e.reason_code(), Some(ReasonCode::LengthWithoutContent));
    assert_eq!(wire.request_count(), 1, "not retried");
    let snap = fx.breaker.snapshot("s1").await.unwrap();
    assert_eq!(
        (
            snap.consecutive_failures,
            snap.window_failures,
            snap.window_calls
        ),
        (0, 0, 0),
        "record_failure never called, no window sample"
    );
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.terminals()[0].stats.attempts, 1);
    fx.assert_usage("s1", 0, 0).await;
}

#[tokio::test(start_paused = true)]
async fn cf_233_text_eof_after_finish_with_usage_is_delivered_once() {
    let fx = fx();
    let wire = wire_of(vec![response(
        vec![content(0, "ok"), delta(0, "{}", Some("stop"), Some(USAGE))],
        End::Eof,
    )]);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::Text, true));
    let g = fx.gov.run_chat(&ex, CallOptions::default()).await.unwrap();
    assert_eq!(wire.request_count(), 1);
    assert_eq!(g.stats.attempts, 1);
    assert_eq!(g.result.content, "ok");
    assert_eq!(g.result.stream_end, Some(StreamEnd::EofAfterFinish));
    assert_eq!(g.result.usage_source, UsageSource::Measured);
    fx.assert_usage("s1", 18, 0).await;
}

// covers: S-3, S-122
#[tokio::test(start_paused = true)]
async fn cf_241_fidelity_retry_returns_only_the_second_attempts_completion() {
    let fx = fx();
    let first = response(
        vec![
            delta(0, r#"{"role":"assistant","content":"partial"}"#, None, None),
            frame(5, r#"{"error":{"code":"upstream_stream_read_error"}}"#),
        ],
        End::Eof,
    );
    let wire = wire_of(vec![first, response(tool_frames(), End::Eof)]);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::OpenAi, true));
    let g = fx.gov.run_chat(&ex, CallOptions::default()).await.unwrap();
    assert_eq!(g.stats.attempts, 2);
    assert_eq!(wire.request_count(), 2);
    let c = g.result.completion.as_ref().unwrap();
    let m = c.message();
    assert_eq!(m["role"], "assistant");
    assert_eq!(
        m["content"],
        Value::Null,
        "no pollution from the first attempt"
    );
    let ids: Vec<_> = m["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, [json!("a"), json!("b")]);
    assert_eq!(
        m["tool_calls"][0]["function"]["arguments"],
        "{\"v\": \"中\" }"
    );
    assert_eq!(c.response_id(), Some("upstream-1"));
    assert_eq!(c.finish_reason(), Some("tool_calls"));
}

// covers: S-122
#[tokio::test(start_paused = true)]
async fn cf_253_cancelled_hanging_tool_stream_is_closed_and_released() {
    let fx = fx();
    let wire = wire_of(vec![response(
        tool_frames().into_iter().take(1).collect(),
        End::Hang,
    )]);
    let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::OpenAi, true));
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        fx.gov.run_chat(&ex, CallOptions::default()),
    )
    .await;
    assert!(r.is_err(), "the call was still hanging");
    // The drop closed the stream and released the permit (settled at the estimate, S3).
    assert_eq!(wire.open_streams(), 0);
    fx.assert_usage("s1", 400, 0).await;
    fx.gov.quiesce().await;
    fx.sink.assert_counts(1, 1);
}

// covers: V-47
#[tokio::test(start_paused = true)]
async fn cf_243_non_stream_role_absent_or_user_is_transient_until_exhausted() {
    for message in [
        json!({"content": "ok"}),
        json!({"role": "user", "content": "ok"}),
    ] {
        let fx = fx();
        let body = json!({"choices": [{"message": message, "finish_reason": "stop"}]});
        let wire = exec::json_body(0, &body.to_string());
        let ex = ChatExecutor::new(wire.clone(), request(ResponseMode::OpenAi, false));
        let e = fx
            .gov
            .run_chat(&ex, CallOptions::default().with_stream(false))
            .await
            .unwrap_err();
        assert!(matches!(e, GatewayError::AllSourcesExhausted(_)), "{e:?}");
        assert_eq!(wire.request_count(), 3, "retried as a Transient");
    }
}
