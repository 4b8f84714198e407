//! The response cache end to end (tier 2, real sockets through `upstream-sim`; 70 Part C):
//! `PGW_CACHE_BACKEND=memory` wired, a repeated call served from cache without an upstream
//! request, and — the issue's acceptance row — a truncated (`length`), filtered, salvaged or
//! error answer is never served from cache (C-49, C-50; CF-332, CF-341). Also the injected
//! cache of the builder path, per-call namespace/salt and bypass, and close ownership (C-64,
//! CF-308).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use crate::cache_isolation;
use std::sync::Arc;
use std::time::Duration;

use client_support::{chat_env, map, sim, sim_completion, source_keys};
use gateway_core::cache::MemoryCache;
use gateway_core::clock::TokioClock;
use gateway_testkit::HookedCache;
use gateway_testkit::hooked::CacheMethod;
use polygateway::{
    CachePolicy, ChatOptions, EmbedRequest, EmbeddingClient, EnvMap, GatewayClient, GatewayError,
};
use serde_json::{Value, json};
use upstream_sim::SimHandle;

fn memory_env(sim: &SimHandle, extra: &[(&str, &str)]) -> EnvMap {
    let mut pairs = vec![("PGW_CACHE_BACKEND", "memory")];
    pairs.extend_from_slice(extra);
    chat_env(sim, &pairs)
}

fn client(env: &EnvMap) -> GatewayClient {
    GatewayClient::from_env_map("LLM", env).expect("client assembles")
}

/// C-39, C-40, C-58 / CF-290: with the memory backend the second identical call (here: once
/// streamed, once not — they share the entry, C-48) is a hit with no upstream request.
#[tokio::test]
async fn c_40_memory_backend_serves_repeat_from_cache() {
    let sim = sim_completion(r#"{"content":"cached answer","chunks":3}"#);
    let client = client(&memory_env(&sim, &[]));
    let first = client.chat("same", ChatOptions::new()).await.unwrap();
    assert!(!first.cache_hit);
    let second = client
        .chat("same", ChatOptions::new().stream(false).tenant_id("other"))
        .await
        .unwrap();
    assert!(second.cache_hit, "stream and non-stream share one entry");
    assert_eq!(second.content, "cached answer");
    assert_eq!(second.call_stats.as_ref().unwrap().attempts, 0);
    assert_eq!(sim.request_count(), 1, "no upstream request for the hit");
    // A different prompt is a miss.
    let third = client.chat("different", ChatOptions::new()).await.unwrap();
    assert!(!third.cache_hit);
    assert_eq!(sim.request_count(), 2);
    client.close().await;
}

/// Runs the same call twice (the first delivered or failed as `delivered` says) and asserts
/// the second is not served from cache and went
/// upstream again.
async fn never_served_from_cache(
    script: &str,
    extra: &[(&str, &str)],
    label: &str,
    delivered: bool,
) {
    let sim = sim(script);
    let client = client(&memory_env(&sim, extra));
    let options = || ChatOptions::new();
    let first = client.chat("q", options()).await;
    assert_eq!(first.is_ok(), delivered, "{label}: {first:?}");
    let after_first = sim.request_count();
    assert!(after_first >= 1, "{label}");
    if let Ok(r) = &first {
        assert!(!r.cache_hit, "{label}");
    }
    let second = client.chat("q", options()).await;
    if let Ok(r) = &second {
        assert!(!r.cache_hit, "{label}: served from cache");
    }
    assert!(
        sim.request_count() > after_first,
        "{label}: the second call did not go upstream"
    );
    client.close().await;
}

/// The issue's acceptance row (C-50; CF-332): a `length` answer is never served from cache.
#[tokio::test]
async fn c_50_truncated_length_never_cached() {
    never_served_from_cache(
        r#"{"version":1,"responses":[{"completion":{"content":"cut off","finish_reason":"length"}}]}"#,
        &[("LLM__RETRY__MAX_ATTEMPTS", "1")],
        "length",
        true,
    )
    .await;
}

/// C-50 / CF-332: a `content_filter` answer is never served from cache.
#[tokio::test]
async fn c_50_filtered_never_cached() {
    never_served_from_cache(
        r#"{"version":1,"responses":[{"completion":{"content":"hidden","finish_reason":"content_filter"}}]}"#,
        &[("LLM__RETRY__MAX_ATTEMPTS", "1")],
        "content_filter",
        true,
    )
    .await;
}

/// C-50 / CF-332: a salvaged stream (no finish, no `[DONE]`, `MISSING_DONE=salvage`) is
/// delivered but never served from cache.
#[tokio::test]
async fn c_50_salvaged_never_cached() {
    never_served_from_cache(
        r#"{"version":1,"responses":[{"completion":{"content":"partial text","finish_reason":null,"done":false}}]}"#,
        &[
            ("LLM__RETRY__MAX_ATTEMPTS", "1"),
            ("LLM__SIM__1__MISSING_DONE", "salvage"),
        ],
        "salvaged",
        true,
    )
    .await;
}

/// C-50, C-52 / CF-341: an error answer writes nothing; the next call goes upstream.
#[tokio::test]
async fn c_52_error_never_cached() {
    never_served_from_cache(
        r#"{"version":1,"responses":[{"status":400,"chunks":[{"text":"{\"error\":{\"message\":\"bad\"}}"}]}]}"#,
        &[],
        "error 400",
        false,
    )
    .await;
}

/// C-41 / CF-343: per-call bypass neither reads nor writes; per-call namespace and salt
/// isolate; a bad per-call namespace is `InvalidArgument` naming the option.
#[tokio::test]
async fn c_41_per_call_options() {
    let sim = sim_completion(r#"{"content":"a"}"#);
    let client = client(&memory_env(&sim, &[]));
    client.chat("q", ChatOptions::new()).await.unwrap();
    let bypass = client
        .chat("q", ChatOptions::new().cache(CachePolicy::Bypass))
        .await
        .unwrap();
    assert!(!bypass.cache_hit);
    assert_eq!(sim.request_count(), 2);
    let other_ns = client
        .chat("q", ChatOptions::new().cache_namespace("tenant-b:1:chat"))
        .await
        .unwrap();
    assert!(
        !other_ns.cache_hit,
        "another namespace never reads this one"
    );
    let salted = client
        .chat("q", ChatOptions::new().cache_salt("v2"))
        .await
        .unwrap();
    assert!(!salted.cache_hit, "a salt starts a fresh key space");
    assert!(
        client
            .chat("q", ChatOptions::new())
            .await
            .unwrap()
            .cache_hit
    );
    match client
        .chat("q", ChatOptions::new().cache_namespace(""))
        .await
    {
        Err(GatewayError::InvalidArgument(d)) => {
            assert_eq!(d.origin, "ChatOptions::cache_namespace");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    client.close().await;
}

/// C-64 / CF-308 and the builder path: an injected cache is used (hits), written with the
/// builder's TTL, and never closed by the client.
#[tokio::test]
async fn c_64_injected_cache_used_never_closed() {
    let sim = sim_completion(r#"{"content":"injected"}"#);
    // Counts `set` and `close` calls over a `MemoryCache`.
    let cache = Arc::new(HookedCache::new(Arc::new(MemoryCache::new(
        10,
        Arc::new(TokioClock::new()),
    ))));
    let mut source = polygateway::SourceConfig::new(
        "sim_1",
        "sim",
        sim.base_url(),
        Some(client_support::KEY.to_owned().into()),
        "sim-model",
    );
    source.timeout_s = 10.0;
    let transport = adapter_openai::OpenAiTransport::new(
        [&source],
        adapter_openai::TransportOptions::default(),
    )
    .expect("transport");
    let client = GatewayClient::builder()
        .sources(vec![source])
        .transport(Arc::new(transport))
        .cache(cache.clone())
        .cache_namespace("tenant-a:1:chat")
        .cache_ttl(Duration::from_secs(30))
        .build()
        .expect("builder");
    let first = client.chat("q", ChatOptions::new()).await.unwrap();
    let second = client.chat("q", ChatOptions::new()).await.unwrap();
    assert!(!first.cache_hit);
    assert!(second.cache_hit, "the injected cache is used");
    assert_eq!(sim.request_count(), 1);
    assert_eq!(cache.count(CacheMethod::Set), 1);
    client.close().await;
    client.close().await;
    assert_eq!(cache.count(CacheMethod::Close), 0, "injected: never closed");
}

/// C-39: embedding is never cached, even with `PGW_CACHE_BACKEND=memory`: two identical
/// embedding calls both go upstream.
#[tokio::test]
async fn c_39_embedding_never_cached() {
    let sim = sim(r#"{"version":1,"responses":[{"embedding":{"dim":4}}]}"#);
    let mut env = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("PGW_CACHE_BACKEND", "memory"),
    ]);
    env.extend(source_keys("EMBED", "EMB", &sim, "embed-1"));
    let client = EmbeddingClient::from_env_map("EMBED", &env).expect("client assembles");
    let request = || EmbedRequest::new(vec!["same text".to_owned()]);
    client.embed(request()).await.unwrap();
    client.embed(request()).await.unwrap();
    assert_eq!(sim.request_count(), 2, "no embedding cache");
    client.close().await;
}

/// A builder client over `sim` with the shared injected `cache` and, if given, the default
/// namespace `ns`.
fn builder_client(sim: &SimHandle, cache: &Arc<MemoryCache>, ns: Option<&str>) -> GatewayClient {
    let mut source = polygateway::SourceConfig::new(
        "sim_1",
        "sim",
        sim.base_url(),
        Some(client_support::KEY.to_owned().into()),
        "sim-model",
    );
    source.timeout_s = 10.0;
    let transport = adapter_openai::OpenAiTransport::new(
        [&source],
        adapter_openai::TransportOptions::default(),
    )
    .expect("transport");
    let mut b = GatewayClient::builder()
        .sources(vec![source])
        .transport(Arc::new(transport))
        .cache(cache.clone());
    if let Some(ns) = ns {
        b = b.cache_namespace(ns.to_owned());
    }
    b.build().expect("builder")
}

// covers: C-41, C-48
/// C-42 on the memory backend (shared by every client of the process through injection): two
/// tenants sending the identical request through `GatewayClient` never read each other's
/// entries — per-scope namespaces (builder `cache_namespace` built with
/// `CacheNamespace::compose`), per-call namespaces, epoch bump and salt — while the same tenant
/// hits, also from another client.
#[tokio::test]
async fn c_42_two_tenants_never_read_each_other_on_memory() {
    let responses: Vec<Value> = (1..=8)
        .map(|i| json!({"completion": {"content": format!("answer-{i}")}}))
        .collect();
    let sim = sim(&json!({"version": 1, "responses": responses}).to_string());
    let cache = Arc::new(MemoryCache::new(100, Arc::new(TokioClock::new())));
    let per_scope = |ns: &str| builder_client(&sim, &cache, Some(ns));
    let shared = builder_client(&sim, &cache, None);
    cache_isolation::two_tenants_isolated(&per_scope, &shared, &sim).await;
    shared.close().await;
}

// covers: C-44, C-50, C-52, C-58
/// The structured-output ladder inside the cache stage, end to end: the first call needs one
/// re-ask (the first round is not JSON), only the final validated answer is stored, and the
/// second identical call is a hit carrying the validated `structured_data` without an upstream
/// request; the same messages without structured output do not read the structured entry.
#[tokio::test]
async fn c_44_c_50_structured_answer_cached_intermediate_round_never() {
    let sim = sim(r#"{"version":1,"responses":[
            {"completion":{"content":"not json at all"}},
            {"completion":{"content":"{\"answer\": 42}"}},
            {"completion":{"content":"plain text"}}
        ]}"#);
    let client = client(&memory_env(&sim, &[]));
    let options = || ChatOptions::new().structured(polygateway::StructuredSpec::Json);
    let first = client.chat("same", options()).await.unwrap();
    assert!(!first.cache_hit);
    assert_eq!(first.structured_data, Some(json!({"answer": 42})));
    assert_eq!(sim.request_count(), 2, "one re-ask");
    let second = client.chat("same", options()).await.unwrap();
    assert!(
        second.cache_hit,
        "the final structured answer is served from cache"
    );
    assert_eq!(second.structured_data, Some(json!({"answer": 42})));
    assert_eq!(second.content, r#"{"answer": 42}"#);
    assert_eq!(second.call_stats.as_ref().unwrap().attempts, 0);
    assert_eq!(sim.request_count(), 2);
    let plain = client.chat("same", ChatOptions::new()).await.unwrap();
    assert!(!plain.cache_hit, "the structured spec is a key member");
    assert_eq!(plain.content, "plain text");
    client.close().await;
}
