//! End-to-end chat through the facade against `upstream-sim` (tier 2, real sockets; 05 R-30):
//! both response modes, stream and non-stream, a failing source switched to another, lifecycle
//! (`ClientClosed`, R-17), call-boundary guards (20 §11.8), telemetry wiring (R-24) and
//! introspection (R-39).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use std::time::Duration;

use client_support::{KEY, chat_env, map, sim, sim_completion, source_keys, user};
use gateway_ports::{BreakerState, ScopeReason};
use polygateway::{
    ChatOptions, ChatRequest, Effort, ErrorReport, GatewayClient, GatewayError, ResponseMode,
    StreamEnd, UsageSource,
};
use serde_json::{Value, json};

fn client(env: &polygateway::EnvMap) -> GatewayClient {
    GatewayClient::from_env_map("LLM", env).expect("client assembles")
}

fn assert_invalid(result: Result<polygateway::LlmResponse, GatewayError>, origin: &str) {
    match result {
        Err(GatewayError::InvalidArgument(d)) => assert_eq!(d.origin, origin, "{d:?}"),
        other => panic!("expected InvalidArgument at {origin}, got {other:?}"),
    }
}

// covers: CF-288
#[tokio::test]
async fn e2e_chat_text_stream() {
    let sim = sim_completion(r#"{"content":"hello streaming world","chunks":4}"#);
    let client = client(&chat_env(&sim, &[]));
    let r = client
        .chat("hi", ChatOptions::new())
        .await
        .expect("chat succeeds");
    assert_eq!(r.content, "hello streaming world");
    assert_eq!(r.source_name, "sim_1");
    assert_eq!(r.model, "sim-model");
    assert_eq!(r.provider, "sim");
    assert_eq!(r.stream_end, Some(StreamEnd::Done));
    assert_eq!(r.usage_source, UsageSource::Measured);
    assert!(r.ttft_ms.is_some());
    assert!(r.completion.is_none(), "text mode carries no completion");
    let stats = r.call_stats.expect("call_stats set");
    assert_eq!(stats.attempts, 1, "CF-288");
    assert!(!stats.logical_call_id.is_empty());
    let requests = sim.wait_for_requests(1).await;
    let body = requests[0].body.as_ref().expect("json body");
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["model"], json!("sim-model"));
    assert!(requests[0].auth_matches(KEY));
    assert!(requests[0].header("x-request-id").is_some(), "R-33");
}

#[tokio::test]
async fn e2e_chat_text_non_stream() {
    let sim = sim_completion(r#"{"content":"plain body"}"#);
    let client = client(&chat_env(&sim, &[]));
    let r = client
        .chat(vec![user("hi")], ChatOptions::new().stream(false))
        .await
        .expect("chat succeeds");
    assert_eq!(r.content, "plain body");
    // 10 §4.1 invariant 3: non-stream ⇒ no ttft, no stream_end, no stall.
    assert_eq!(r.ttft_ms, None);
    assert_eq!(r.stream_end, None);
    assert_eq!(r.call_stats.as_ref().and_then(|s| s.stall_ms), None);
    let requests = sim.wait_for_requests(1).await;
    assert_eq!(requests[0].body.as_ref().unwrap()["stream"], json!(false));
}

const TOOL_COMPLETION: &str = r#"{"tool_calls":[{"id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"id":"call_b","name":"get_time","arguments":"{}"}],"finish_reason":"tool_calls"}"#;

async fn fidelity_tool_calls(stream: bool) {
    let sim = sim_completion(TOOL_COMPLETION);
    let client = client(&chat_env(&sim, &[]));
    let r = client
        .chat(
            "weather?",
            ChatOptions::new()
                .stream(stream)
                .response_mode(ResponseMode::OpenAi),
        )
        .await
        .expect("fidelity chat succeeds");
    let completion = r
        .completion
        .as_ref()
        .expect("openai mode ⇒ completion (10 §4.1 inv. 1)");
    assert_eq!(completion.finish_reason(), Some("tool_calls"));
    assert_eq!(
        r.finish_reason.as_ref().map(|f| f.as_str()),
        Some("tool_calls")
    );
    let message = completion.message();
    assert_eq!(message["role"], json!("assistant"));
    let tools = message["tool_calls"].as_array().expect("tool_calls array");
    let ids: Vec<&str> = tools.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(tools[0]["function"]["name"], json!("get_weather"));
    assert_eq!(
        tools[0]["function"]["arguments"],
        json!("{\"city\":\"Paris\"}")
    );
    assert!(
        tools.iter().all(|t| t.get("index").is_none()),
        "10 §4.2: no index key"
    );
    assert_eq!(r.call_stats.unwrap().attempts, 1);
}

#[tokio::test]
async fn e2e_chat_openai_fidelity_tool_calls_stream() {
    fidelity_tool_calls(true).await;
}

#[tokio::test]
async fn e2e_chat_openai_fidelity_tool_calls_non_stream() {
    fidelity_tool_calls(false).await;
}

#[tokio::test]
async fn e2e_failing_source_500_switched_to_another() {
    // Source `bad_1` always answers 500 (Transient); `good_1` answers. Round robin makes one of
    // the two calls start on `bad_1`; both calls succeed from `good_1`.
    let bad = sim(
        r#"{"version":1,"responses":[{"status":500,"chunks":[{"text":"{\"error\":{\"message\":\"boom\"}}"}],"headers":{"content-type":"application/json"}}]}"#,
    );
    let good = sim_completion(r#"{"content":"from good"}"#);
    let mut env = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__SELECTOR", "round_robin"),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02"),
    ]);
    env.extend(source_keys("LLM", "BAD", &bad, "m-bad"));
    env.extend(source_keys("LLM", "GOOD", &good, "m-good"));
    let client = client(&env);
    let mut attempts = Vec::new();
    for _ in 0..2 {
        let r = client
            .chat("hi", ChatOptions::new().stream(false))
            .await
            .expect("switched to the good source");
        assert_eq!(r.content, "from good");
        assert_eq!(r.source_name, "good_1");
        assert_eq!(r.model, "m-good");
        attempts.push(r.call_stats.unwrap().attempts);
    }
    assert!(bad.request_count() >= 1, "the failing source was tried");
    assert!(
        attempts.contains(&2),
        "one call retried on the other source: {attempts:?}"
    );
}

#[tokio::test]
async fn e2e_failing_source_401_opens_breaker_r_39_status() {
    // 401 → SourceDead → the breaker of `bad_1` is forced open (30 G-65); R-39 shows it.
    let bad = sim(
        r#"{"version":1,"responses":[{"status":401,"chunks":[{"text":"{\"error\":{\"message\":\"bad key\"}}"}]}]}"#,
    );
    let good = sim_completion(r#"{"content":"ok"}"#);
    let mut env = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__SELECTOR", "round_robin"),
    ]);
    env.extend(source_keys("LLM", "BAD", &bad, "m"));
    env.extend(source_keys("LLM", "GOOD", &good, "m"));
    let client = client(&env);
    for _ in 0..3 {
        let r = client.chat("hi", ChatOptions::new()).await.expect("ok");
        assert_eq!(r.source_name, "good_1");
    }
    assert_eq!(bad.request_count(), 1, "an open breaker sends nothing more");
    client.quiesce().await;
    let status = client.sources_status().await;
    let names: Vec<&str> = status.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["bad_1", "good_1"]);
    assert_eq!(status[0].breaker_state, Some(BreakerState::Open));
    assert_eq!(status[0].open_count, 1);
    assert_eq!(status[1].breaker_state, Some(BreakerState::Closed));
    assert_eq!(status[1].open_count, 0);
    assert_eq!(status[1].inflight, Some(0));
    assert_eq!(status[1].rpm_used, Some(3));
    assert!(status[1].pacer_limit.is_some());
    assert!(
        status[0].health_score.is_none(),
        "round robin keeps no health score"
    );
    let json = serde_json::to_value(&status[0]).unwrap();
    assert_eq!(json["breaker_state"], json!("open"));
}

#[tokio::test]
async fn r_39_health_aware_status_has_health_score() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    client.chat("hi", ChatOptions::new()).await.unwrap();
    let status = client.sources_status().await;
    assert_eq!(status.len(), 1);
    let h = status[0].health_score.expect("health_aware keeps a score");
    assert!((0.0..=1.0).contains(&h));
    assert_eq!(status[0].tpm_used.map(|t| t > 0), Some(true));
}

// covers: T-17
#[tokio::test]
async fn cf_303_all_503_exhausts_with_rows_and_error_report() {
    let sim =
        sim(r#"{"version":1,"responses":[{"status":503,"chunks":[{"text":"unavailable"}]}]}"#);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let env = chat_env(
        &sim,
        &[
            ("PGW_TELEMETRY_BACKEND", "sqlite"),
            ("PGW_TELEMETRY_SQLITE_PATH", db.to_str().unwrap()),
            ("LLM__RETRY__MAX_ATTEMPTS", "3"),
        ],
    );
    let client = client(&env);
    let outcome = client.chat_outcome("hi", ChatOptions::new()).await;
    let error = outcome.result.as_ref().expect_err("all 503");
    let unavailable = error.unavailable().expect("AllSourcesExhausted");
    assert_eq!(unavailable.reason, ScopeReason::RetryExhausted);
    assert_eq!(outcome.attempts, 3);
    assert_eq!(sim.request_count(), 3);
    let report = outcome.error_report().expect("an error report");
    let json = report.to_json();
    assert_eq!(json["type"], json!("AllSourcesExhausted"));
    assert_eq!(json["scope"], json!("llm"));
    assert_eq!(json["scope_reason"], json!("retry_exhausted"));
    assert_eq!(json["attempts"], json!(3));
    assert_eq!(json["last_failure"]["type"], json!("TransientError"));
    assert_eq!(json["last_failure"]["http_status"], json!(503));
    assert!(json["last_failure"].get("last_failure").is_none());
    // R-24: quiesce drains the cleanup queue, then flushes the recorder: 3 attempt rows and
    // one terminal row are written (T-12, T-17).
    client.quiesce().await;
    let status = client.telemetry_status();
    assert_eq!(status.backend, "sqlite");
    assert_eq!(status.written_rows, 4, "{status:?}");
    assert_eq!(status.dropped_rows, 0);
    client.close().await;
}

#[tokio::test]
async fn r_17_client_closed_after_close_and_close_is_idempotent() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    let clone = client.clone();
    client.chat("hi", ChatOptions::new()).await.unwrap();
    client.close().await;
    client.close().await;
    assert!(clone.is_closed());
    let r = clone.chat("hi", ChatOptions::new()).await;
    assert!(matches!(r, Err(GatewayError::ClientClosed)), "{r:?}");
    let report = ErrorReport::from(&r.unwrap_err());
    assert_eq!(report.to_json()["type"], json!("ClientClosed"));
    assert_eq!(sim.request_count(), 1, "nothing sent after close");
}

#[tokio::test]
async fn r_40_clone_send_sync_and_send_futures() {
    fn assert_send<T: Send>(_: &T) {}
    fn assert_clone_send_sync<T: Clone + Send + Sync + 'static>() {}
    assert_clone_send_sync::<GatewayClient>();
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    let fut = client.chat("hi", ChatOptions::new());
    assert_send(&fut);
    // A spawned call (requires Send) on a clone works too.
    let c2 = client.clone();
    let handle = tokio::spawn(async move { c2.chat("hi", ChatOptions::new()).await });
    assert!(fut.await.is_ok());
    assert!(handle.await.unwrap().is_ok());
}

#[tokio::test]
async fn r_40_dropped_call_is_cancelled_with_cleanup() {
    // The upstream never answers; dropping the call future cancels the attempt, and quiesce
    // returns once its settlement ran (permit released: inflight back to 0).
    let sim = sim(r#"{"version":1,"responses":[{"head":"hang"}]}"#);
    let client = client(&chat_env(&sim, &[]));
    let call = client.chat("hi", ChatOptions::new());
    tokio::select! {
        _ = call => panic!("the upstream hangs"),
        _ = sim.wait_for_requests(1) => {}
    }
    client.quiesce().await;
    let status = client.sources_status().await;
    assert_eq!(status[0].inflight, Some(0));
}

#[tokio::test]
async fn cf_317_zero_deadline_is_invalid_argument_without_io() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    let r = client
        .chat("hi", ChatOptions::new().call_deadline(Duration::ZERO))
        .await;
    assert_invalid(r, "ChatOptions::call_deadline");
    assert_eq!(sim.request_count(), 0);
}

// 70 C-27, C-28: a request level on a model without a capability entry is refused before any
// byte (RequestRejected naming the model), not retried.
#[tokio::test]
async fn c_28_request_effort_unknown_model_is_rejected_before_io() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    let r = client
        .chat("hi", ChatOptions::new().reasoning_effort(Effort::High))
        .await;
    match &r {
        Err(GatewayError::RequestRejected(f)) => {
            assert!(
                f.failure()
                    .message
                    .contains("no capability entry for model"),
                "names the missing entry: {f:?}"
            );
        }
        other => panic!("expected RequestRejected, got {other:?}"),
    }
    assert_eq!(sim.request_count(), 0);
}

// covers: CF-296, T-33
#[tokio::test]
async fn g_25_call_boundary_guards() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    // CF-296 / T-33: a bad meta key.
    let r = client
        .chat("hi", ChatOptions::new().meta("BAD-KEY", 1_i64))
        .await;
    assert_invalid(r, "ChatOptions::meta");
    // T-33: tenant with a control character.
    let r = client
        .chat("hi", ChatOptions::new().tenant_id("a\nb"))
        .await;
    assert_invalid(r, "ChatOptions::tenant_id");
    // 10 §3.1: library-controlled overlay keys.
    let r = client
        .chat("hi", ChatOptions::new().sampling("model", "x"))
        .await;
    assert_invalid(r, "ChatOptions::overlay");
    // 10 §3.1: openai mode supports only n=1.
    let r = client
        .chat(
            "hi",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .sampling("n", 2),
        )
        .await;
    assert_invalid(r, "ChatOptions::overlay");
    // n = 1 is fine in openai mode.
    let ok = client
        .chat(
            "hi",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .sampling("n", 1),
        )
        .await;
    assert!(ok.is_ok(), "{ok:?}");
    // 70 C-2 step 3: a schema name outside ^[A-Za-z0-9_-]{1,64}$.
    let request = ChatRequest {
        structured: Some(gateway_ports::StructuredSpec::Schema {
            name: "bad name".into(),
            schema: serde_json::json!({"type": "object"}),
            strict: true,
        }),
        ..ChatRequest::new(vec![user("hi")])
    };
    assert_invalid(
        client.chat(request, ChatOptions::new()).await,
        "ChatRequest::structured.name",
    );
    assert_eq!(
        sim.request_count(),
        1,
        "only the valid call reached the upstream"
    );
}

#[tokio::test]
async fn chat_options_override_request_fields() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    let request = ChatRequest {
        stream: true,
        ..ChatRequest::new(vec![user("hi")])
    };
    client
        .chat(
            request,
            ChatOptions::new()
                .stream(false)
                .temperature(0.25)
                .max_tokens(7)
                .tenant_id("acme")
                .meta("team", "search")
                .bypass_cache(),
        )
        .await
        .unwrap();
    let requests = sim.wait_for_requests(1).await;
    let body: &Value = requests[0].body.as_ref().unwrap();
    assert_eq!(body["stream"], json!(false));
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["max_tokens"], json!(7));
    assert!(
        body.get("tenant_id").is_none(),
        "caller dimensions never go upstream"
    );
}
