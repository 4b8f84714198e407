//! The second round of wire decisions end to end (tier 2: `upstream-sim` on real loopback
//! sockets, the real OpenAI transport, the whole client): README D19, D20, D21, D22, D23, D26,
//! D27, D28, D29, D30, D35, and the public cases 041 and 049 (bytes copied from
//! `shared/cases/`, never read at test time). Event-driven: no test sleeps to hit a window.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use std::time::Duration;

use tokio::time::Instant;

use client_support::{KEY, map, sim};
use gateway_ports::{
    BreakerState, Category, EmbedRequest, FailureReason, GatewayError, ReasonCode,
};
use polygateway::{ChatOptions, EmbeddingClient, EnvMap, GatewayClient, ResponseMode};
use serde_json::{Value, json};
use upstream_sim::SimHandle;

const GOOD: &str = "good-model";
const BAD: &str = "bad-model";

/// Scope `LLM` with sources `a_1` (model `BAD`) and `b_1` (model `GOOD`) on the same simulator,
/// a 5 s backoff base (so a wait would show), telemetry off, plus `extra`.
fn two_source_env(sim: &SimHandle, extra: &[(&str, &str)]) -> EnvMap {
    let url = sim.base_url();
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__RETRY__BACKOFF_BASE_S", "5"),
        ("LLM__RETRY__BACKOFF_MAX_S", "10"),
        ("LLM__A__1__BASE_URL", &url),
        ("LLM__A__1__API_KEY", KEY),
        ("LLM__A__1__MODEL", BAD),
        ("LLM__B__1__BASE_URL", &url),
        ("LLM__B__1__API_KEY", KEY),
        ("LLM__B__1__MODEL", GOOD),
    ]);
    m.extend(map(extra));
    m
}

fn one_source_env(sim: &SimHandle, extra: &[(&str, &str)]) -> EnvMap {
    let url = sim.base_url();
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02"),
        ("LLM__A__1__BASE_URL", &url),
        ("LLM__A__1__API_KEY", KEY),
        ("LLM__A__1__MODEL", GOOD),
    ]);
    m.extend(map(extra));
    m
}

fn client(env: &EnvMap) -> GatewayClient {
    GatewayClient::from_env_map("LLM", env).expect("client assembles")
}

/// A scripted answer for requests naming `model`.
fn for_model(model: &str, mut response: Value) -> Value {
    response["match"] = json!({"model": model});
    response
}

fn raw(status: u16, headers: &[(&str, &str)], body: &str) -> Value {
    let headers: Vec<Value> = headers.iter().map(|(n, v)| json!([n, v])).collect();
    json!({"status": status, "headers": headers, "framing": "content_length",
           "chunks": [{"text": body}]})
}

fn script(responses: Vec<Value>) -> String {
    json!({"version": 1, "responses": responses}).to_string()
}

fn good_completion() -> Value {
    for_model(GOOD, json!({"completion": {"content": "fine"}}))
}

fn models_requested(sim: &SimHandle) -> Vec<String> {
    sim.requests()
        .iter()
        .filter_map(|r| r.body.as_ref()?.get("model")?.as_str().map(str::to_owned))
        .collect()
}

// ── D23: a source missing the model fails over; its breaker opens ───────────────────────────

const INVALID_MODEL: &str = r#"{"error":{"message":"litellm.BadRequestError: Invalid model name passed in model=bad-model. Call `/v1/models` to view available models for your key.","type":"invalid_request_error","param":"model","code":"400"}}"#;

#[tokio::test]
async fn d23_invalid_model_on_one_source_every_call_succeeds_on_the_other() {
    let sim = sim(&script(vec![
        for_model(
            BAD,
            raw(400, &[("content-type", "application/json")], INVALID_MODEL),
        ),
        good_completion(),
    ]));
    let client = client(&two_source_env(&sim, &[]));
    for _ in 0..6 {
        let r = client
            .chat("hi", ChatOptions::new())
            .await
            .expect("fails over");
        assert_eq!(r.content, "fine");
        assert_eq!(r.source_name, "b_1");
    }
    assert!(
        models_requested(&sim).iter().any(|m| m == BAD),
        "the bad source was tried"
    );
    let status = client.sources_status().await;
    let a = status.iter().find(|s| s.name == "a_1").unwrap();
    assert_eq!(a.breaker_state, Some(BreakerState::Open), "{a:?}");
}

#[tokio::test]
async fn d23_401_names_itself() {
    let sim = sim(&script(vec![raw(
        401,
        &[("content-type", "application/json")],
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    )]));
    let client = client(&one_source_env(&sim, &[]));
    let e = client.chat("hi", ChatOptions::new()).await.unwrap_err();
    let u = e.unavailable().expect("a scope-level error");
    // README D25: `source_dead` for a_1 and `last_failure` = the 401 from a_1, even when the
    // call ends as CircuitOpen because that verdict opened the last breaker.
    assert_eq!(
        u.per_source_reasons.get("a_1"),
        Some(&FailureReason::SourceDead),
        "{e:?}"
    );
    assert_eq!(
        sim.request_count(),
        1,
        "a 401 is not retried on the same source"
    );
    let last = u.last_failure.as_ref().expect("D25: the cause is kept");
    assert_eq!(last.http_status(), Some(401), "{e:?}");
    assert!(last.to_string().contains("a_1"), "{e}");
    assert!(!e.to_string().contains(KEY), "never the key");
}

// ── D26: failing over does not wait ─────────────────────────────────────────────────────────

async fn assert_fails_over_at_once(bad: Value, extra: &[(&str, &str)], deadline: Option<Duration>) {
    let sim = sim(&script(vec![for_model(BAD, bad), good_completion()]));
    let client = client(&two_source_env(&sim, extra));
    let mut options = ChatOptions::new();
    if let Some(d) = deadline {
        options = options.call_deadline(d);
    }
    let start = Instant::now();
    let r = client.chat("hi", options).await.expect("fails over");
    let took = start.elapsed();
    assert_eq!(r.source_name, "b_1");
    assert_eq!(
        models_requested(&sim),
        [BAD, GOOD],
        "the hinted source first, then the other"
    );
    assert!(
        took < Duration::from_millis(2_500),
        "well under the 5 s backoff base / 30 s hint: {took:?}"
    );
}

#[tokio::test]
async fn d26_500_and_healthy_succeeds_well_under_the_backoff_base() {
    assert_fails_over_at_once(raw(500, &[], "oops"), &[], None).await;
}

#[tokio::test]
async fn d26_429_retry_after_30_and_healthy_succeeds_at_once() {
    let bad = raw(
        429,
        &[("retry-after", "30")],
        r#"{"error":{"message":"slow down"}}"#,
    );
    assert_fails_over_at_once(bad.clone(), &[], None).await;
    assert_fails_over_at_once(bad.clone(), &[("LLM__RETRY__MAX_HINT_S", "10")], None).await;
    assert_fails_over_at_once(bad, &[], Some(Duration::from_secs(5))).await;
}

#[tokio::test]
async fn d26_503_retry_after_30_and_healthy_succeeds_at_once() {
    let bad = raw(503, &[("retry-after", "30")], "busy");
    assert_fails_over_at_once(bad.clone(), &[], None).await;
    assert_fails_over_at_once(bad.clone(), &[("LLM__RETRY__MAX_HINT_S", "10")], None).await;
    assert_fails_over_at_once(bad, &[], Some(Duration::from_secs(5))).await;
}

#[tokio::test]
async fn d19_d26_ratelimit_reset_hint_holds_the_source_not_the_call() {
    let bad = raw(
        429,
        &[
            ("x-ratelimit-reset-requests", "6m0s"),
            ("x-ratelimit-remaining-requests", "0"),
        ],
        "{}",
    );
    assert_fails_over_at_once(bad, &[], None).await;
}

#[tokio::test]
async fn d19_hint_above_the_cap_on_the_only_source_fails_with_the_hint() {
    let sim = sim(&script(vec![raw(
        429,
        &[("llm_provider-retry-after", "360")],
        "{}",
    )]));
    let client = client(&one_source_env(&sim, &[("LLM__RETRY__MAX_HINT_S", "10")]));
    let start = Instant::now();
    let e = client.chat("hi", ChatOptions::new()).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(e.unavailable().unwrap().retry_after_s, 360.0, "{e:?}");
}

// ── D28: n ≠ 1 refused before any I/O ───────────────────────────────────────────────────────

#[tokio::test]
async fn d28_n_other_than_one_is_invalid_argument_from_any_origin() {
    let sim = sim(&script(vec![json!({"completion": {"content": "ok"}})]));
    let c = client(&one_source_env(&sim, &[]));
    for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
        let e = c
            .chat(
                "hi",
                ChatOptions::new().response_mode(mode).sampling("n", 2),
            )
            .await
            .unwrap_err();
        match &e {
            GatewayError::InvalidArgument(d) => assert_eq!(d.origin, "ChatOptions::overlay"),
            other => panic!("{other:?}"),
        }
    }
    let c = client(&one_source_env(
        &sim,
        &[("LLM__A__1__EXTRA_BODY", r#"{"n": 3}"#)],
    ));
    let e = c.chat("hi", ChatOptions::new()).await.unwrap_err();
    match &e {
        GatewayError::InvalidArgument(d) => {
            assert!(d.origin.contains("a_1"), "{d:?}");
            assert!(d.message.contains("n=3"), "{d:?}");
        }
        other => panic!("{other:?}"),
    }
    // The overlay's n = 1 wins over the source's.
    c.chat("hi", ChatOptions::new().sampling("n", 1))
        .await
        .unwrap();
    assert_eq!(
        sim.request_count(),
        1,
        "only the valid call reached the upstream"
    );
}

// ── D20: the first byte decides; "stream": false is explicit ────────────────────────────────

#[tokio::test]
async fn d20_event_stream_labelled_json_and_json_with_trailing_done() {
    let sse = concat!(
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let trailed = concat!(
        "{\"id\":\"y\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Paris.\"},\"finish_reason\":\"stop\"}]}",
        "\n\ndata: [DONE]\n\n"
    );
    let sim = sim(&script(vec![
        raw(200, &[("content-type", "application/json")], sse),
        raw(200, &[("content-type", "application/json")], trailed),
        raw(200, &[("content-type", "text/event-stream")], trailed),
    ]));
    let c = client(&one_source_env(&sim, &[]));
    let r = c.chat("hi", ChatOptions::new().stream(true)).await.unwrap();
    assert_eq!(r.content, "Hello");
    let r = c
        .chat("hi", ChatOptions::new().stream(false))
        .await
        .unwrap();
    assert_eq!(r.content, "Paris.");
    let r = c.chat("hi", ChatOptions::new().stream(true)).await.unwrap();
    assert_eq!(r.content, "Paris.");
    let requests = sim.wait_for_requests(3).await;
    assert_eq!(
        requests[1].body.as_ref().unwrap()["stream"],
        json!(false),
        "sent explicitly"
    );
    assert_eq!(sim.request_count(), 3, "no retries");
}

// ── D21, D22, D27, D35 through the real transport ───────────────────────────────────────────

#[tokio::test]
async fn d21_d22_d27_d35_bodies_over_real_sockets() {
    let parts = r#"{"id":"m","choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"4"}]},"finish_reason":"stop"}]}"#;
    let refusal = r#"{"id":"r","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#;
    let tools = r#"{"id":"t","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
    let ids = concat!(
        "data: {\"id\":\"a\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"o\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"b\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"k\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n"
    );
    let json_type = [("content-type", "application/json")];
    let sim = sim(&script(vec![
        raw(200, &json_type, parts),
        raw(200, &json_type, refusal),
        raw(200, &json_type, tools),
        raw(200, &[("content-type", "text/event-stream")], ids),
    ]));
    let c = client(&one_source_env(&sim, &[]));
    let r = c
        .chat("hi", ChatOptions::new().stream(false))
        .await
        .unwrap();
    assert_eq!((r.content.as_str(), r.thinking.as_str()), ("4", "hmm"));
    let e = c
        .chat("hi", ChatOptions::new().stream(false))
        .await
        .unwrap_err();
    assert_eq!(
        (e.category(), e.reason_code()),
        (Some(Category::ResultInvalid), Some(ReasonCode::Refused))
    );
    assert!(e.to_string().contains("I can't help with that."), "{e}");
    let e = c
        .chat("hi", ChatOptions::new().stream(false))
        .await
        .unwrap_err();
    assert_eq!(
        e.reason_code(),
        Some(ReasonCode::ToolCallsInTextMode),
        "{e:?}"
    );
    let r = c
        .chat(
            "hi",
            ChatOptions::new()
                .stream(true)
                .response_mode(ResponseMode::OpenAi),
        )
        .await
        .unwrap();
    assert_eq!(r.content, "ok");
    assert_eq!(r.completion.unwrap().response_id(), Some("a"));
    assert_eq!(sim.request_count(), 4, "none of them retried");
}

// ── case 041 / D29: a stale pooled connection is re-sent once on a fresh one ───────────────

#[tokio::test]
async fn case_041_stale_pooled_keepalive_is_resent_without_a_failure() {
    let script = json!({"version": 1, "keep_alive_idle_ms": 0,
        "responses": [{"completion": {"content": "fine"}}]})
    .to_string();
    let sim = sim(&script);
    let c = client(&one_source_env(
        &sim,
        &[
            ("LLM__RETRY__BACKOFF_BASE_S", "5"),
            ("LLM__RETRY__BACKOFF_MAX_S", "10"),
        ],
    ));
    let first = c.chat("hi", ChatOptions::new()).await.unwrap();
    assert_eq!(first.content, "fine");
    let start = Instant::now();
    let second = c.chat("hi", ChatOptions::new()).await.unwrap();
    assert_eq!(second.content, "fine");
    assert!(start.elapsed() < Duration::from_secs(2), "no backoff");
    assert_eq!(
        second.call_stats.unwrap().attempts,
        1,
        "not an attempt failure"
    );
    assert_eq!(
        sim.request_count(),
        2,
        "the dropped request never reached the server"
    );
    assert_eq!(
        sim.connection_count(),
        2,
        "the re-send used a fresh connection"
    );
    let status = c.sources_status().await;
    assert_eq!(
        status[0].consecutive_failures.unwrap_or(0),
        0,
        "no breaker strike"
    );
}

#[tokio::test]
async fn d29_pool_idle_timeout_is_configurable_per_source() {
    let sim = sim(&script(vec![json!({"completion": {"content": "ok"}})]));
    let env = one_source_env(&sim, &[("LLM__A__1__POOL_IDLE_TIMEOUT_S", "0.5")]);
    let c = client(&env);
    assert_eq!(c.plan().sources[0].pool_idle_timeout_s, 0.5);
    let default = client(&one_source_env(&sim, &[]));
    assert_eq!(default.plan().sources[0].pool_idle_timeout_s, 4.0);
    let bad = one_source_env(&sim, &[("LLM__A__1__POOL_IDLE_TIMEOUT_S", "0")]);
    let e = GatewayClient::from_env_map("LLM", &bad).unwrap_err();
    assert!(e.to_string().contains("POOL_IDLE_TIMEOUT_S"), "{e}");
}

// ── case 049 / D30: embeddings with non-numbers ─────────────────────────────────────────────

fn embed_client(sim: &SimHandle) -> EmbeddingClient {
    let url = sim.base_url();
    let env = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("EMBED__RETRY__BACKOFF_BASE_S", "0.01"),
        ("EMBED__RETRY__BACKOFF_MAX_S", "0.02"),
        ("EMBED__EMB__1__BASE_URL", &url),
        ("EMBED__EMB__1__API_KEY", KEY),
        ("EMBED__EMB__1__MODEL", "modernbert-embed-base"),
    ]);
    EmbeddingClient::from_env_map("EMBED", &env).expect("client assembles")
}

const C049_A: &str = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[null,null,null,null]},{"object":"embedding","index":1,"embedding":[0.0123,-0.0456,0.0789,0.0012]}],"model":"modernbert-embed-base","usage":{"prompt_tokens":140,"total_tokens":140}}"#;
const C049_B: &str = r#"{"error":{"message":"failed to encode response: json: unsupported value: NaN","type":"api_error","param":null,"code":null}}"#;

#[tokio::test]
async fn case_049_a_null_filled_vector_is_malformed_item_naming_the_index() {
    let sim = sim(
        &json!({"version": 1, "responses": [{"match": {"path": "/embeddings"},
        "headers": {"content-type": "application/json"}, "framing": "content_length",
        "chunks": [{"text": C049_A}]}]})
        .to_string(),
    );
    let c = embed_client(&sim);
    let e = c
        .embed(EmbedRequest::new(vec!["short".into(), "long".into()]))
        .await
        .unwrap_err();
    assert_eq!(e.category(), Some(Category::ResultInvalid), "{e:?}");
    assert_eq!(e.reason_code(), Some(ReasonCode::MalformedItem));
    assert!(e.to_string().contains("item(s) 0 "), "{e}");
    assert_eq!(sim.request_count(), 1, "not retried as is");
}

#[tokio::test]
async fn case_049_b_500_nan_is_transient_and_retried() {
    let sim = sim(
        &json!({"version": 1, "responses": [{"match": {"path": "/embeddings"},
        "status": 500, "headers": {"content-type": "application/json"},
        "framing": "content_length", "chunks": [{"text": C049_B}]}]})
        .to_string(),
    );
    let c = embed_client(&sim);
    let e = c
        .embed(EmbedRequest::new(vec!["x".into()]))
        .await
        .unwrap_err();
    assert_eq!(sim.request_count(), 3, "spec: 3 attempts (90 E-10)");
    assert!(e.unavailable().is_some(), "{e:?}");
}
