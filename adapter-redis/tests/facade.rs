//! The Redis backends through the facade (`PGW_LIMITER_BACKEND=redis`, `PGW_BREAKER_BACKEND`,
//! `REDIS_URL`; cargo feature `redis`): CF-426 (cancel in flight: `tpm_used 400`, `inflight 0`,
//! as on memory), CF-427 (the lease is released), CF-428 (Redis down at admission →
//! `GovernanceBackend`, nothing sent), and `sources_status` reading the shared state (R-39).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use adapter_redis::RedisRateLimiter;
use common::{REDIS_URL, connection, require_redis};
use contract_tests::{global, must_grant, source};
use gateway_ports::BreakerState;
use polygateway::{ChatOptions, EnvMap, GatewayClient, GatewayError};
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

fn sim(script: &str) -> SimHandle {
    Sim::start(Script::from_json(script).expect("script")).expect("simulator starts")
}

fn hanging_sim() -> SimHandle {
    sim(r#"{"version":1,"responses":[{"head":"hang"}]}"#)
}

/// A fresh valid scope name (letters and digits only).
fn scope_name() -> String {
    let s = common::fresh_scope("x");
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    format!("R{digits}")
}

/// Scope `scope` with one source `sim_1` (concurrency 1, TPM 1000, est 400) at `sim`.
fn env(scope: &str, sim: &SimHandle, backend: &str, url: &str) -> EnvMap {
    let p = format!("{scope}__SIM__1__");
    let pairs = [
        ("PGW_TELEMETRY_BACKEND".to_owned(), "none".to_owned()),
        ("PGW_LIMITER_BACKEND".to_owned(), backend.to_owned()),
        ("REDIS_URL".to_owned(), url.to_owned()),
        (format!("{p}BASE_URL"), sim.base_url()),
        (format!("{p}API_KEY"), "sk-test-redis-0123456789".to_owned()),
        (format!("{p}MODEL"), "sim-model".to_owned()),
        (format!("{p}TIMEOUT_S"), "10".to_owned()),
        (format!("{p}MAX_CONCURRENCY"), "1".to_owned()),
        (format!("{p}TPM"), "1000".to_owned()),
        (format!("{p}EST_TOKENS"), "400".to_owned()),
    ];
    pairs.into_iter().collect()
}

/// Starts a call against the hanging upstream, waits until the request is sent, then drops
/// the call (cancellation) and drains the cleanup; returns `(tpm_used, inflight)`.
async fn cancel_in_flight(client: &GatewayClient, sim: &SimHandle) -> (u64, u32) {
    let call = client.chat("hi", ChatOptions::new());
    tokio::select! {
        _ = call => panic!("the upstream hangs"),
        _ = sim.wait_for_requests(1) => {}
    }
    client.quiesce().await;
    let status = client.sources_status().await;
    assert_eq!(status[0].backend_error, None);
    (status[0].tpm_used.unwrap(), status[0].inflight.unwrap())
}

// covers: CF-426, CF-427
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_426_427_cancel_in_flight_same_as_memory_and_lease_released() {
    require_redis(&connection()).await;
    let memory_sim = hanging_sim();
    let scope = scope_name();
    let memory =
        GatewayClient::from_env_map(&scope, &env(&scope, &memory_sim, "memory", REDIS_URL))
            .unwrap();
    let on_memory = cancel_in_flight(&memory, &memory_sim).await;
    memory.close().await;

    let redis_sim = hanging_sim();
    let redis =
        GatewayClient::from_env_map(&scope, &env(&scope, &redis_sim, "redis", REDIS_URL)).unwrap();
    let on_redis = cancel_in_flight(&redis, &redis_sim).await;
    assert_eq!(on_redis, (400, 0), "CF-426");
    assert_eq!(on_redis, on_memory, "settle arithmetic identical to memory");
    // CF-427: the slot is free for every process: another instance takes the only slot.
    let other = RedisRateLimiter::new(
        &scope,
        &[source("sim_1", 1, 0, 1000)],
        global(0, 0, 0),
        30.0,
        connection(),
    );
    let p = must_grant(&other, "sim_1", 100).await;
    p.release().await.unwrap();
    redis.close().await;
}

// covers: CF-428
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_428_redis_down_at_admission_is_governance_backend_nothing_sent() {
    let sim = hanging_sim();
    let scope = scope_name();
    let client =
        GatewayClient::from_env_map(&scope, &env(&scope, &sim, "redis", "redis://127.0.0.1:1"))
            .expect("an unreachable Redis is not an assembly error");
    match client.chat("hi", ChatOptions::new()).await {
        Err(GatewayError::GovernanceBackend(_)) => {}
        other => panic!("expected GovernanceBackend, got {other:?}"),
    }
    assert_eq!(sim.request_count(), 0, "no request sent");
    let status = client.sources_status().await;
    assert!(status[0].backend_error.is_some(), "{status:?}");
    client.close().await;
}

/// R-39: `sources_status` of one client shows another client's in-flight call and the
/// breaker state they share (`PGW_BREAKER_BACKEND` defaults to the limiter's backend).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_status_reads_the_shared_state() {
    require_redis(&connection()).await;
    let sim = hanging_sim();
    let scope = scope_name();
    let a = GatewayClient::from_env_map(&scope, &env(&scope, &sim, "redis", REDIS_URL)).unwrap();
    let b = GatewayClient::from_env_map(&scope, &env(&scope, &sim, "redis", REDIS_URL)).unwrap();
    let call = a.chat("hi", ChatOptions::new());
    tokio::select! {
        _ = call => panic!("the upstream hangs"),
        _ = async {
            sim.wait_for_requests(1).await;
            let s = b.sources_status().await;
            assert_eq!((s[0].inflight, s[0].tpm_used), (Some(1), Some(400)), "{s:?}");
            assert_eq!(s[0].breaker_state, Some(BreakerState::Closed));
        } => {}
    }
    a.quiesce().await;
    assert_eq!(b.sources_status().await[0].inflight, Some(0));
    a.close().await;
    b.close().await;
}
