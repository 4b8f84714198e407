//! The Redis response cache end to end (tier 2: real sockets through `upstream-sim`, the real
//! Redis on 127.0.0.1:6379, a fresh scope per test; `PGW_CACHE_BACKEND=redis`): the key stored
//! verbatim under the scope's hash-tagged prefix with `SET … PX` (C-62), entries shared by two
//! clients of one scope, two tenants never reading each other's entries (C-42: per-scope and
//! per-call namespaces, the tenant-prefixed helper, salt), the acceptance row "a truncated,
//! filtered, salvaged or error answer is never served from cache" on Redis (C-49, C-50), CF-430,
//! CF-431, and an unreachable Redis degrading to a miss and a skipped write (C-62).
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../gateway-facade/tests/support/cache_isolation.rs"]
mod cache_isolation;
mod common;

use std::time::Duration;

use common::{REDIS_URL, connection, require_redis};
use fred::prelude::{Builder, ClientLike, Config, KeysInterface};
use gateway_core::cache::{KeyParts, model_fingerprint};
use polygateway::{ChatOptions, ChatRequest, EnvMap, GatewayClient, ResponseMode, StreamEnd};
use serde_json::{Value, json};
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

fn sim(script: &str) -> SimHandle {
    Sim::start(Script::from_json(script).expect("script")).expect("simulator starts")
}

/// A simulator answering the n-th chat request with `answer-n` (then repeating the last).
fn numbered_sim(n: usize) -> SimHandle {
    let responses: Vec<Value> = (1..=n)
        .map(|i| json!({"completion": {"content": format!("answer-{i}")}}))
        .collect();
    sim(&json!({"version": 1, "responses": responses}).to_string())
}

/// A fresh valid scope name (letters and digits only).
fn scope_name() -> String {
    let s = common::fresh_scope("c");
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    format!("C{digits}")
}

/// Scope `scope`, one source at `sim`, `PGW_CACHE_BACKEND=redis` at `url`, plus `extra`.
fn env(scope: &str, sim: &SimHandle, url: &str, extra: &[(&str, &str)]) -> EnvMap {
    let p = format!("{scope}__SIM__1__");
    let mut m: EnvMap = [
        ("PGW_TELEMETRY_BACKEND".to_owned(), "none".to_owned()),
        ("PGW_CACHE_BACKEND".to_owned(), "redis".to_owned()),
        ("REDIS_URL".to_owned(), url.to_owned()),
        (format!("{scope}__RETRY__MAX_ATTEMPTS"), "1".to_owned()),
        (format!("{p}BASE_URL"), sim.base_url()),
        (format!("{p}API_KEY"), "sk-test-redis-0123456789".to_owned()),
        (format!("{p}MODEL"), "sim-model".to_owned()),
        (format!("{p}TIMEOUT_S"), "10".to_owned()),
    ]
    .into_iter()
    .collect();
    for (k, v) in extra {
        m.insert((*k).to_owned(), (*v).to_owned());
    }
    m
}

fn client(scope: &str, sim: &SimHandle, extra: &[(&str, &str)]) -> GatewayClient {
    GatewayClient::from_env_map(scope, &env(scope, sim, REDIS_URL, extra)).expect("assembles")
}

/// A raw client of the test Redis, to look at what the cache stored.
async fn raw() -> fred::clients::Client {
    let c = Builder::from_config(Config::from_url(REDIS_URL).unwrap())
        .build()
        .unwrap();
    c.init()
        .await
        .expect("Redis on 127.0.0.1:6379 must be running");
    c
}

/// The Redis key of a plain user message `text` sent by `client` in `namespace`.
fn redis_key(client: &GatewayClient, text: &str, namespace: &str, mode: ResponseMode) -> String {
    let mut message = serde_json::Map::new();
    message.insert("role".into(), "user".into());
    message.insert("content".into(), text.into());
    let mut request = ChatRequest::new(vec![message]);
    request.response_mode = mode;
    let fp = model_fingerprint(&client.plan().sources);
    let key = KeyParts::of_request(&request, &fp, namespace, None, None).key();
    format!("{}:cache:{key}", adapter_redis::scope_tag(client.scope()))
}

// covers: C-43, C-60
/// C-62: the core's key is stored verbatim under `{pgw:<scope>}:cache:` with `SET … PX` (the
/// remaining TTL is at most `PGW_CACHE_TTL_S`); a second client of the same scope and
/// namespace (another process) is served from the entry without an upstream request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_62_key_verbatim_px_ttl_and_shared_between_clients() {
    require_redis(&connection()).await;
    let sim = numbered_sim(2);
    let scope = scope_name();
    let extra = [
        ("PGW_CACHE_NAMESPACE", "shared"),
        ("PGW_CACHE_TTL_S", "120"),
    ];
    let a = client(&scope, &sim, &extra);
    let b = client(&scope, &sim, &extra);
    let first = a.chat("q", ChatOptions::new()).await.unwrap();
    assert!(!first.cache_hit);
    let raw = raw().await;
    let key = redis_key(&a, "q", "shared", ResponseMode::Text);
    let stored: Option<String> = raw.get(&key).await.unwrap();
    let stored: Value =
        serde_json::from_str(&stored.expect("entry under the verbatim key")).unwrap();
    assert_eq!(stored["content"], json!("answer-1"));
    assert!(stored.get("call_stats").is_none(), "C-53");
    let pttl: i64 = raw.pttl(&key).await.unwrap();
    assert!(pttl > 0 && pttl <= 120_000, "PX ttl {pttl}");
    let second = b.chat("q", ChatOptions::new()).await.unwrap();
    assert!(
        second.cache_hit,
        "another client of the scope reads the entry"
    );
    assert_eq!(second.content, "answer-1");
    assert_eq!(sim.request_count(), 1);
    a.close().await;
    b.close().await;
}

// covers: C-41, C-48
/// C-42 on Redis: two tenants sending the identical request through `GatewayClient` never read
/// each other's entries — per-scope namespaces (`PGW_CACHE_NAMESPACE` built with
/// `CacheNamespace::compose`), per-call namespaces, epoch bump and salt — while the same tenant
/// hits, also from another client of the scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_42_two_tenants_never_read_each_other_on_redis() {
    require_redis(&connection()).await;
    let sim = numbered_sim(8);
    let scope = scope_name();
    let per_scope = |ns: &str| client(&scope, &sim, &[("PGW_CACHE_NAMESPACE", ns)]);
    let shared = client(&scope, &sim, &[]);
    cache_isolation::two_tenants_isolated(&per_scope, &shared, &sim).await;
    shared.close().await;
}

/// Runs the same call twice on the Redis cache and asserts the second is not served from
/// cache and went upstream again, and that nothing was stored under the call's key.
/// `source_extra` are keys of the source (`{scope}__SIM__1__<KEY>`).
async fn never_served_from_redis(
    script: &str,
    source_extra: &[(&str, &str)],
    label: &str,
    ok: bool,
) {
    require_redis(&connection()).await;
    let sim = sim(script);
    let scope = scope_name();
    let keys: Vec<(String, String)> = source_extra
        .iter()
        .map(|(k, v)| (format!("{scope}__SIM__1__{k}"), (*v).to_owned()))
        .collect();
    let mut all = vec![("PGW_CACHE_NAMESPACE", "n")];
    all.extend(keys.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let client = client(&scope, &sim, &all);
    let first = client.chat("q", ChatOptions::new()).await;
    assert_eq!(first.is_ok(), ok, "{label}: {first:?}");
    let after_first = sim.request_count();
    let raw = raw().await;
    let stored: Option<String> = raw
        .get(redis_key(&client, "q", "n", ResponseMode::Text))
        .await
        .unwrap();
    assert_eq!(stored, None, "{label}: stored in Redis");
    let second = client.chat("q", ChatOptions::new().stream(true)).await;
    if let Ok(r) = &second {
        assert!(!r.cache_hit, "{label}: served from cache");
    }
    assert!(
        sim.request_count() > after_first,
        "{label}: the second call did not go upstream"
    );
    client.close().await;
}

// covers: C-49, CF-332
/// The acceptance row on Redis (C-50): a `length` answer is delivered, never stored, never
/// served from cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_50_length_never_served_from_redis() {
    never_served_from_redis(
        r#"{"version":1,"responses":[{"completion":{"content":"cut off","finish_reason":"length"}}]}"#,
        &[],
        "length",
        true,
    )
    .await;
}

/// C-50 on Redis: a `content_filter` answer is never served from cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_50_filtered_never_served_from_redis() {
    never_served_from_redis(
        r#"{"version":1,"responses":[{"completion":{"content":"hidden","finish_reason":"content_filter"}}]}"#,
        &[],
        "content_filter",
        true,
    )
    .await;
}

/// C-50 on Redis: a salvaged stream (`MISSING_DONE=salvage`) is never served from cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_50_salvaged_never_served_from_redis() {
    never_served_from_redis(
        r#"{"version":1,"responses":[{"completion":{"content":"partial text","finish_reason":null,"done":false}}]}"#,
        &[("MISSING_DONE", "salvage")],
        "salvaged",
        true,
    )
    .await;
}

// covers: C-52, CF-341
/// C-50 on Redis: an error answer writes nothing; the next call goes upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_50_error_never_served_from_redis() {
    never_served_from_redis(
        r#"{"version":1,"responses":[{"status":400,"chunks":[{"text":"{\"error\":{\"message\":\"bad\"}}"}]}]}"#,
        &[],
        "error 400",
        false,
    )
    .await;
}

/// CF-430 (C-62): on the Redis cache a text answer with `finish_reason stop` whose stream ended
/// without `[DONE]` (`eof_after_finish`) is stored and the second call hits with
/// `finish_reason stop`, `stream_end None`; a salvaged answer for other messages is not stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_430_redis_eof_after_finish_hits_salvaged_not_stored() {
    require_redis(&connection()).await;
    let stop_sim = sim(r#"{"version":1,"responses":[
            {"match":{"model":"sim-model"},"completion":{"content":"fine","finish_reason":"stop","done":false}}
        ]}"#);
    let scope = scope_name();
    let client = client(&scope, &stop_sim, &[("PGW_CACHE_NAMESPACE", "n")]);
    let first = client
        .chat("q", ChatOptions::new().stream(true))
        .await
        .unwrap();
    assert_eq!(first.stream_end, Some(StreamEnd::EofAfterFinish));
    let second = client
        .chat("q", ChatOptions::new().stream(true))
        .await
        .unwrap();
    assert!(second.cache_hit);
    assert_eq!(
        second.finish_reason.as_ref().map(|f| f.as_str()),
        Some("stop")
    );
    assert_eq!(second.stream_end, None);
    assert_eq!(stop_sim.request_count(), 1);
    client.close().await;

    // A salvaged answer for other messages.
    let salvage_sim = sim(
        r#"{"version":1,"responses":[{"completion":{"content":"partial","finish_reason":null,"done":false}}]}"#,
    );
    let salvage = GatewayClient::from_env_map(
        &scope,
        &env(
            &scope,
            &salvage_sim,
            REDIS_URL,
            &[
                ("PGW_CACHE_NAMESPACE", "n"),
                (&format!("{scope}__SIM__1__MISSING_DONE"), "salvage"),
            ],
        ),
    )
    .unwrap();
    let r = salvage
        .chat("other", ChatOptions::new().stream(true))
        .await
        .unwrap();
    assert_eq!(r.stream_end, Some(StreamEnd::Salvaged));
    let raw = raw().await;
    let stored: Option<String> = raw
        .get(redis_key(&salvage, "other", "n", ResponseMode::Text))
        .await
        .unwrap();
    assert_eq!(stored, None, "get(key(other)) is empty");
    salvage.close().await;
}

// covers: C-57
/// CF-431 (C-57, C-62): a real accumulated fidelity completion (streamed, with a tool call)
/// round-trips through Redis: the hit's completion, content and usage equal the original's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_431_redis_round_trip_of_an_accumulated_completion() {
    require_redis(&connection()).await;
    let sim = sim(
        r#"{"version":1,"responses":[{"completion":{"content":"calling","chunks":3,
            "tool_calls":[{"id":"call-1","name":"lookup","arguments":"{\"q\":\"x\"}"}],"finish_reason":"tool_calls"}}]}"#,
    );
    let scope = scope_name();
    let client = client(&scope, &sim, &[("PGW_CACHE_NAMESPACE", "n")]);
    let options = || {
        ChatOptions::new()
            .stream(true)
            .response_mode(ResponseMode::OpenAi)
    };
    let first = client.chat("q", options()).await.unwrap();
    assert!(!first.cache_hit);
    assert!(first.completion.is_some());
    let hit = client.chat("q", options()).await.unwrap();
    assert!(hit.cache_hit);
    assert_eq!(sim.request_count(), 1);
    assert_eq!(
        hit.completion, first.completion,
        "the completion round-trips"
    );
    assert_eq!(hit.content, first.content);
    assert_eq!(hit.usage, first.usage);
    assert_eq!(hit.model, first.model);
    assert_ne!(hit.call_id, first.call_id);
    client.close().await;
}

// covers: C-54, CF-328, CF-329
/// C-62: an unreachable Redis never fails a call — every read is a miss and every write is
/// skipped (with a warning); both identical calls go upstream and succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_62_redis_down_degrades_to_miss_and_skipped_write() {
    let sim = numbered_sim(2);
    let scope = scope_name();
    let client =
        GatewayClient::from_env_map(&scope, &env(&scope, &sim, "redis://127.0.0.1:1", &[]))
            .expect("an unreachable Redis is not an assembly error");
    let t0 = tokio::time::Instant::now();
    let first = client.chat("q", ChatOptions::new()).await.unwrap();
    let second = client.chat("q", ChatOptions::new()).await.unwrap();
    assert!(!first.cache_hit && !second.cache_hit);
    assert_eq!(
        (first.content.as_str(), second.content.as_str()),
        ("answer-1", "answer-2")
    );
    assert_eq!(sim.request_count(), 2);
    // Each operation is bounded by the Redis operation timeout (0.5 s + margin).
    assert!(t0.elapsed() < Duration::from_secs(10));
    client.close().await;
}
