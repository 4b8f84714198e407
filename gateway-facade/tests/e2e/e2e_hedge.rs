//! Tier-2 hedging through the real stack (60 H-106; 95 CF-254, CF-286, CF-287): two in-process
//! `upstream-sim` simulators on 127.0.0.1, a `GatewayClient` from an environment map with
//! `LLM__HEDGE__AFTER_S` / `LLM__HEDGE__STALL_AFTER_S`, the OpenAI transport over real sockets.
//!
//! Real clock: the tests assert content, counts and lower bounds only; thresholds are 50–200 ms
//! and every scripted delay that must *not* trigger a hedge is ≥ 4× away from its threshold.
//! They wait on results and on `wait_for_requests`, never sleep to hit a window. Round robin
//! makes the first call start on the first configured source `a_1` (the primary).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use client_support::{map, sim, source_keys, user};
use polygateway::{ChatOptions, EnvMap, GatewayClient, GatewayError, ResponseMode};
use serde_json::json;
use upstream_sim::SimHandle;

/// A script of `upstream-sim/scripts/`.
fn script(name: &str) -> String {
    let path = format!(
        "{}/../upstream-sim/scripts/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Scope `LLM` with the primary `a_1` (model `primary-model` at `a`) and `b_1` (model
/// `hedge-model` at `b`), round robin, no telemetry, plus `extra`.
fn env(a: &SimHandle, b: &SimHandle, extra: &[(&str, &str)]) -> EnvMap {
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__SELECTOR", "round_robin"),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02"),
    ]);
    m.extend(source_keys("LLM", "A", a, "primary-model"));
    m.extend(source_keys("LLM", "B", b, "hedge-model"));
    m.extend(map(extra));
    m
}

fn client(env: &EnvMap) -> GatewayClient {
    GatewayClient::from_env_map("LLM", env).expect("client assembles")
}

/// Two simulators running the same `by_model` script.
fn pair(script_json: &str) -> (SimHandle, SimHandle) {
    (sim(script_json), sim(script_json))
}

// covers: H-106
#[tokio::test]
async fn h_106_first_token_hedge_wins_when_primary_hangs_before_head() {
    // hedge-first-token: the primary never sends its head; the hedge answers "fast".
    let (a, b) = pair(&script("hedge-first-token"));
    let client = client(&env(&a, &b, &[("LLM__HEDGE__AFTER_S", "0.1")]));
    let r = client
        .chat(vec![user("hi")], ChatOptions::new())
        .await
        .expect("the hedge wins");
    assert_eq!(r.content, "fast");
    assert_eq!(r.source_name, "b_1");
    let stats = r.call_stats.expect("call_stats");
    assert_eq!(stats.hedges, 1);
    assert!(stats.hedge_won);
    assert_eq!(stats.attempts, 2);
    assert!(
        stats.total_latency_ms >= 100,
        "the hedge starts only after AFTER_S: {stats:?}"
    );
    assert_eq!(a.wait_for_requests(1).await.len(), 1);
    assert_eq!(b.wait_for_requests(1).await.len(), 1);
    client.close().await;
}

// covers: CF-286, H-106
#[tokio::test]
async fn cf_286_stall_hedge_after_tool_frames_wins_with_two_tool_calls() {
    // hedge-tool-stall: the primary streams tool frames 0 and 1, then hangs; the hedge answers
    // with both tool calls. STALL_AFTER_S = 0.05.
    let (a, b) = pair(&script("hedge-tool-stall"));
    let client = client(&env(&a, &b, &[("LLM__HEDGE__STALL_AFTER_S", "0.05")]));
    let r = client
        .chat(
            "lookup",
            ChatOptions::new().response_mode(ResponseMode::OpenAi),
        )
        .await
        .expect("the stall hedge wins");
    assert_eq!(r.source_name, "b_1", "the result comes from the hedge");
    let completion = r.completion.as_ref().expect("openai mode ⇒ completion");
    let tools = completion.message()["tool_calls"]
        .as_array()
        .cloned()
        .expect("tool_calls");
    let ids: Vec<&str> = tools.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["call_a", "call_b"],
        "no half result of the primary leaks"
    );
    assert_eq!(tools[0]["function"]["arguments"], json!("{\"q\":\"a\"}"));
    let stats = r.call_stats.expect("call_stats");
    assert_eq!(stats.hedges, 1);
    assert_eq!(stats.attempts, 2);
    assert!(stats.hedge_won);
    client.close().await;
}

/// A primary that streams tool-call fragments for ~0.9 s (first one at once, then three 300 ms
/// gaps) and then finishes; no content token ever.
const SLOW_TOOL_PRIMARY: &str = r#"{"version":1,"order":"by_model","responses":[
 {"match":{"model":"primary-model"},"headers":[["content-type","text/event-stream"]],"chunks":[
  {"text":"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"primary-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_p\",\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n"},
  {"text":"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"primary-model\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\":\"}}]},\"finish_reason\":null}]}\n\n","delay_ms":300},
  {"text":"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"primary-model\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"p\\\"}\"}}]},\"finish_reason\":null}]}\n\n","delay_ms":300},
  {"text":"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"primary-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n","delay_ms":300},
  {"text":"data: [DONE]\n\n"}
 ]},
 {"match":{"model":"hedge-model"},"completion":{"content":"hedge"}}
]}"#;

// covers: CF-287, H-106
#[tokio::test]
async fn cf_287_tool_progress_closes_the_first_token_window() {
    // AFTER_S = 0.2: the first tool fragment arrives at once, so the first-token window closes
    // although no content token ever comes; the call takes ≥ 0.9 s (4.5 × AFTER_S) without a
    // hedge, and the other source never sees a request.
    let (a, b) = pair(SLOW_TOOL_PRIMARY);
    let client = client(&env(&a, &b, &[("LLM__HEDGE__AFTER_S", "0.2")]));
    let r = client
        .chat(
            "lookup",
            ChatOptions::new().response_mode(ResponseMode::OpenAi),
        )
        .await
        .expect("the primary finishes");
    assert_eq!(r.source_name, "a_1");
    let completion = r.completion.as_ref().expect("openai mode ⇒ completion");
    let tools = completion.message()["tool_calls"]
        .as_array()
        .cloned()
        .expect("tool_calls");
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["id"], json!("call_p"));
    assert_eq!(tools[0]["function"]["arguments"], json!("{\"q\":\"p\"}"));
    let stats = r.call_stats.expect("call_stats");
    assert_eq!(stats.hedges, 0, "no false hedge: {stats:?}");
    assert_eq!(stats.attempts, 1);
    assert!(stats.total_latency_ms >= 900, "{stats:?}");
    assert_eq!(b.request_count(), 0, "no hedge request was sent");
    client.close().await;
}

// covers: H-106
#[tokio::test]
async fn h_106_stall_hedge_wins_after_primary_token_then_stall() {
    // hedge-stall: the primary sends "Hel" and hangs; STALL_AFTER_S = 0.1 → the hedge wins.
    let (a, b) = pair(&script("hedge-stall"));
    let client = client(&env(&a, &b, &[("LLM__HEDGE__STALL_AFTER_S", "0.1")]));
    let r = client
        .chat(vec![user("hi")], ChatOptions::new())
        .await
        .expect("the stall hedge wins");
    assert_eq!(
        r.content, "fast",
        "content from the hedge, nothing of the primary"
    );
    assert_eq!(r.source_name, "b_1");
    let stats = r.call_stats.expect("call_stats");
    assert_eq!(stats.hedges, 1);
    assert!(stats.hedge_won);
    assert_eq!(stats.attempts, 2);
    assert!(stats.total_latency_ms >= 100, "{stats:?}");
    client.close().await;
}

// covers: H-1
#[tokio::test]
async fn h_1_hedging_off_sends_no_second_request() {
    // hedge-primary-late without hedge keys: the primary answers "late" after 300 ms; the other
    // source is never asked.
    let (a, b) = pair(&script("hedge-primary-late"));
    let client = client(&env(&a, &b, &[]));
    let r = client
        .chat(vec![user("hi")], ChatOptions::new())
        .await
        .expect("the primary answers");
    assert_eq!(r.content, "late");
    assert_eq!(r.source_name, "a_1");
    let stats = r.call_stats.expect("call_stats");
    assert_eq!(
        (stats.hedges, stats.hedge_won, stats.attempts),
        (0, false, 1)
    );
    assert!(stats.total_latency_ms >= 300, "{stats:?}");
    assert_eq!(a.wait_for_requests(1).await.len(), 1);
    assert_eq!(b.request_count(), 0, "hedging off: no second request");
    client.close().await;
}

// covers: CF-254
#[tokio::test]
async fn cf_254_hedged_call_hitting_the_deadline_keeps_its_type_and_releases() {
    // Both legs hang before their head; the 0.5 s call deadline (5 × AFTER_S) ends the hedged
    // call as CallDeadlineExceeded; afterwards nothing is in flight on either source.
    let hang = r#"{"version":1,"responses":[{"head":"hang"}]}"#;
    let (a, b) = pair(hang);
    let client = client(&env(
        &a,
        &b,
        &[
            ("LLM__HEDGE__AFTER_S", "0.1"),
            ("LLM__CALL_DEADLINE_S", "0.5"),
        ],
    ));
    let error = client
        .chat(vec![user("hi")], ChatOptions::new())
        .await
        .expect_err("deadline");
    assert!(
        matches!(error, GatewayError::CallDeadlineExceeded(ref d) if (d.deadline_s - 0.5).abs() < 1e-9),
        "{error:?}"
    );
    assert_eq!(b.wait_for_requests(1).await.len(), 1, "the hedge was sent");
    client.quiesce().await;
    let status = client.sources_status().await;
    assert_eq!(status.len(), 2);
    assert!(
        status.iter().all(|s| s.inflight == Some(0)),
        "permits released: {status:?}"
    );
    client.close().await;
}
