//! Reasoning effort in the attempt executor, tier 1 (05 R-30) on the paused clock over
//! `gateway_testkit::ScriptedWire`: the fragment in the body (C-24), `applied_effort` (C-34), a
//! refusal before any byte (C-27), and the throttled contradiction check (C-36, C-37).

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;

use std::sync::Arc;

use exec::{delta, done, response, wire_of};
use gateway_core::attempt::{AttemptCtx, AttemptOutcome, AttemptRunner as _, LegControl};
use gateway_core::effort::ContradictionThrottle;
use gateway_core::executor::{ChatExecutor, ExecutorOptions};
use gateway_ports::request::ChatRequest;
use gateway_ports::{AttemptError, Effort, SourceConfig, ThinkingObservation};
use upstream_sim::script::End;

/// An answer whose usage reports `reasoning_tokens` (0 → `Absent`).
fn answer(reasoning_tokens: u64) -> upstream_sim::script::Response {
    // Reasoning tokens are part of the completion tokens (a larger count is implausible usage).
    let completion_tokens = reasoning_tokens + 2;
    let usage = format!(
        r#"{{"prompt_tokens": 3, "completion_tokens": {completion_tokens}, "completion_tokens_details": {{"reasoning_tokens": {reasoning_tokens}}}}}"#
    );
    response(
        vec![
            delta(0, r#"{"role":"assistant","content":"ok"}"#, None, None),
            delta(0, "{}", Some("stop"), Some(&usage)),
            done(0),
        ],
        End::Eof,
    )
}

fn o3_source() -> Arc<SourceConfig> {
    Arc::new(SourceConfig::new(
        "openai_1",
        "openai",
        "http://127.0.0.1:9",
        None,
        "o3-mini",
    ))
}

fn request(level: Option<Effort>) -> Arc<ChatRequest> {
    let mut message = serde_json::Map::new();
    message.insert("role".into(), "user".into());
    message.insert("content".into(), "hi".into());
    Arc::new(ChatRequest {
        reasoning_effort: level,
        ..ChatRequest::new(vec![message])
    })
}

// covers: C-24, C-34, C-36, C-37
#[tokio::test(start_paused = true)]
async fn c_34_c_36_applied_level_and_one_contradiction_warning() {
    let wire = wire_of(vec![answer(0)]);
    let throttle = Arc::new(ContradictionThrottle::new());
    let mut options = ExecutorOptions::default();
    options.contradictions = Arc::clone(&throttle);
    let executor =
        ChatExecutor::new(wire.clone(), request(Some(Effort::High))).with_options(options);
    for _ in 0..3 {
        let outcome = executor
            .run(
                AttemptCtx::new("call-1", o3_source()),
                None,
                LegControl::new(),
            )
            .await;
        let AttemptOutcome::Success(result) = outcome else {
            panic!("expected success, got {outcome:?}");
        };
        assert_eq!(result.applied_effort, Some(Effort::High));
        assert_eq!(result.thinking_observation, ThinkingObservation::Absent);
    }
    assert_eq!(wire.requests()[0].body["reasoning_effort"], "high");
    assert_eq!(throttle.len(), 1, "one key: warned once for three attempts");
}

// covers: C-27 (a request level the model cannot use: RequestRejected, nothing sent)
#[tokio::test(start_paused = true)]
async fn c_27_refusal_sends_nothing() {
    let wire = wire_of(vec![answer(5)]);
    let executor = ChatExecutor::new(wire.clone(), request(Some(Effort::Minimal)));
    let outcome = executor
        .run(
            AttemptCtx::new("call-1", o3_source()),
            None,
            LegControl::new(),
        )
        .await;
    match outcome {
        AttemptOutcome::Failed(AttemptError::RequestRejected(f)) => {
            assert_eq!(f.source_name.as_deref(), Some("openai_1"));
            assert_eq!(f.http_status, None);
        }
        other => panic!("expected RequestRejected, got {other:?}"),
    }
    assert_eq!(wire.request_count(), 0);
}

// covers: C-34 (no level → applied None, nothing added to the body)
#[tokio::test(start_paused = true)]
async fn c_34_no_level_sends_nothing() {
    let wire = wire_of(vec![answer(5)]);
    let executor = ChatExecutor::new(wire.clone(), request(None));
    let outcome = executor
        .run(
            AttemptCtx::new("call-1", o3_source()),
            None,
            LegControl::new(),
        )
        .await;
    let AttemptOutcome::Success(result) = outcome else {
        panic!("expected success");
    };
    assert_eq!(result.applied_effort, None);
    assert_eq!(result.thinking_observation, ThinkingObservation::Observed);
    assert!(
        wire.requests()[0]
            .body
            .value()
            .get("reasoning_effort")
            .is_none()
    );
}
