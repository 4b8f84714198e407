//! `pgw demo --backend redis`: two worker processes share one Redis (issue 15).
//!
//! The parent starts one healthy simulator and picks a refused address, then starts this binary
//! twice as workers (`--redis-worker`, hidden) on a fresh scope (so repeated runs never share
//! keys). Both workers are configured alike: `healthy_1` with an RPM quota of
//! [`REDIS_DEMO_RPM`], `down_1` (refuses connections) with a breaker that opens on one failure,
//! round-robin selection, limiter and breaker on `REDIS_URL` (default
//! `redis://127.0.0.1:6379`). Each worker sends [`REDIS_DEMO_CALLS_PER_WORKER`] calls and
//! prints one JSON line: calls granted (succeeded), refused, and the breaker state of `down_1`
//! it reads at the end. The parent then reads the shared state itself and prints the
//! accounting: per-process grants, the total against the quota, the breaker state seen by each.
//! Exit code 0 when the two processes together were granted exactly the quota and both saw the
//! breaker open; 1 otherwise.

use std::time::{SystemTime, UNIX_EPOCH};

use gateway_ports::BreakerState;
use polygateway::{ChatOptions, EnvMap, GatewayClient, JsonObject};
use serde_json::{Value, json};
use tokio::process::Command;
use upstream_sim::Sim;
use upstream_sim::script::Script;

use crate::config::SCHEMA_VERSION;
use crate::demo_args::DemoArgs;
use crate::exit;
use crate::out;

/// RPM quota of `healthy_1`, shared by the two workers.
pub const REDIS_DEMO_RPM: u32 = 20;
/// Calls each worker sends (together more than the quota).
pub const REDIS_DEMO_CALLS_PER_WORKER: u32 = 16;
/// Calls each worker has in flight at once.
const WORKER_CONCURRENCY: usize = 8;
/// Redis used when `REDIS_URL` is unset.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// The workers' environment map: scope `scope`, `healthy_1` at `healthy` (RPM quota),
/// `down_1` at `down`, limiter and breaker on `redis_url`, no telemetry, no cache.
pub fn redis_env_map(scope: &str, healthy: &str, down: &str, redis_url: &str) -> EnvMap {
    let mut map = EnvMap::new();
    for (provider, base_url) in [("HEALTHY", healthy), ("DOWN", down)] {
        let key = |field: &str| format!("{scope}__{provider}__1__{field}");
        map.insert(key("BASE_URL"), base_url.to_owned());
        map.insert(key("API_KEY"), "sk-demo-not-a-secret".to_owned());
        map.insert(key("MODEL"), crate::demo_args::DEMO_MODEL.to_owned());
        map.insert(key("TIMEOUT_S"), "5".to_owned());
    }
    map.insert(
        format!("{scope}__HEALTHY__1__RPM"),
        REDIS_DEMO_RPM.to_string(),
    );
    for (key, value) in [
        ("SELECTOR", "round_robin"),
        ("CALL_DEADLINE_S", "3"),
        ("BREAKER__FAIL_THRESHOLD", "1"),
        ("RETRY__BACKOFF_BASE_S", "0.05"),
        ("RETRY__BACKOFF_MAX_S", "0.2"),
    ] {
        map.insert(format!("{scope}__{key}"), value.to_owned());
    }
    for (key, value) in [
        ("PGW_LIMITER_BACKEND", "redis"),
        ("PGW_BREAKER_BACKEND", "redis"),
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("PGW_CACHE_BACKEND", "none"),
    ] {
        map.insert(key.to_owned(), value.to_owned());
    }
    map.insert("REDIS_URL".to_owned(), redis_url.to_owned());
    map
}

/// `REDIS_URL` from the environment, else [`DEFAULT_REDIS_URL`].
fn redis_url() -> String {
    std::env::var("REDIS_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_REDIS_URL.to_owned())
}

/// A scope name no earlier run used: `DEMO` and the current time in nanoseconds.
fn fresh_scope() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("DEMO{nanos}{}", std::process::id())
}

fn breaker_name(state: Option<BreakerState>) -> &'static str {
    match state {
        Some(BreakerState::Closed) => "closed",
        Some(BreakerState::Open) => "open",
        Some(BreakerState::HalfOpen) => "half_open",
        None => "unknown",
    }
}

/// The worker: `spec` = `scope healthy_url down_url`. Prints one JSON line; exit 0, or 1 when
/// the client cannot be built.
pub async fn worker(spec: &str) -> u8 {
    let mut parts = spec.split_whitespace();
    let (Some(scope), Some(healthy), Some(down)) = (parts.next(), parts.next(), parts.next())
    else {
        out::stderr_line("pgw demo: malformed --redis-worker value");
        return exit::USAGE;
    };
    let map = redis_env_map(scope, healthy, down, &redis_url());
    let client = match GatewayClient::from_env_map(scope, &map) {
        Ok(c) => c,
        Err(e) => {
            out::stderr_line(&format!("pgw demo worker: {e}"));
            return exit::CONFIG;
        }
    };
    let client = std::sync::Arc::new(client);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..WORKER_CONCURRENCY {
        let (client, next) = (std::sync::Arc::clone(&client), std::sync::Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            let (mut granted, mut refused) = (0u32, 0u32);
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                if i >= REDIS_DEMO_CALLS_PER_WORKER {
                    break;
                }
                let mut message = JsonObject::new();
                message.insert("role".into(), Value::from("user"));
                message.insert(
                    "content".into(),
                    Value::from(format!(
                        "Shared demo call {i} of process {}",
                        std::process::id()
                    )),
                );
                match client
                    .chat_outcome(vec![message], ChatOptions::new())
                    .await
                    .result
                {
                    Ok(_) => granted += 1,
                    Err(_) => refused += 1,
                }
            }
            (granted, refused)
        }));
    }
    let (mut granted, mut refused) = (0u32, 0u32);
    for t in tasks {
        if let Ok((g, r)) = t.await {
            granted += g;
            refused += r;
        }
    }
    let status = client.sources_status().await;
    let down_state = status
        .iter()
        .find(|s| s.name.starts_with("down"))
        .and_then(|s| s.breaker_state);
    let backend_error = status.iter().find_map(|s| s.backend_error.clone());
    client.close().await;
    out::stdout_json(&json!({
        "granted": granted,
        "refused": refused,
        "down_breaker": breaker_name(down_state),
        "backend_error": backend_error,
    }));
    exit::OK
}

/// One worker's report.
#[derive(Debug, Default)]
struct Report {
    granted: u32,
    refused: u32,
    down_breaker: String,
}

async fn spawn_worker(spec: &str) -> Result<Report, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the pgw binary: {e}"))?;
    let output = Command::new(exe)
        .args(["demo", "--backend", "redis", "--redis-worker", spec])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(|e| format!("cannot start a worker process: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| {
            format!(
                "a worker process ended without a report ({})",
                output.status
            )
        })?;
    let v: Value =
        serde_json::from_str(line).map_err(|e| format!("unreadable worker report: {e}"))?;
    if let Some(err) = v.get("backend_error").and_then(Value::as_str) {
        return Err(format!("a worker could not use Redis: {err}"));
    }
    let n = |k: &str| {
        v.get(k)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    };
    Ok(Report {
        granted: n("granted"),
        refused: n("refused"),
        down_breaker: v
            .get("down_breaker")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned(),
    })
}

/// `pgw demo --backend redis`: returns the exit code.
pub async fn run(args: &DemoArgs) -> u8 {
    let url = redis_url();
    let scope = fresh_scope();
    let healthy_script = json!({ "version": 1, "responses": [ { "completion": {
        "content": "Shared quota, shared breaker.", "ttft_ms": 20, "chunks": 4, "inter_chunk_ms": 5
    } } ] });
    let sim = match Script::from_json(&healthy_script.to_string())
        .map_err(|e| e.to_string())
        .and_then(|s| Sim::start(s).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: cannot start the simulator: {e}"));
            return exit::INTERNAL;
        }
    };
    let down = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => format!("http://127.0.0.1:{}/v1", a.port()),
        Err(e) => {
            out::stderr_line(&format!("pgw demo: no free port: {e}"));
            return exit::INTERNAL;
        }
    };
    let healthy = sim.base_url();
    // The parent's own client reads the shared state (and checks Redis answers first).
    let map = redis_env_map(&scope, &healthy, &down, &url);
    let client = match GatewayClient::from_env_map(&scope, &map) {
        Ok(c) => c,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: {e}"));
            sim.shutdown();
            return exit::CONFIG;
        }
    };
    if let Some(err) = client
        .sources_status()
        .await
        .into_iter()
        .find_map(|s| s.backend_error)
    {
        out::stderr_line(&format!(
            "pgw demo: Redis does not answer (set REDIS_URL; default {DEFAULT_REDIS_URL}): {err}"
        ));
        client.close().await;
        sim.shutdown();
        return exit::INTERNAL;
    }
    if !args.json {
        out::stderr_line(&format!(
            "pgw demo: two worker processes, scope {scope}, quota {REDIS_DEMO_RPM} requests per \
             minute on healthy_1, {REDIS_DEMO_CALLS_PER_WORKER} calls each"
        ));
    }
    let spec = format!("{scope} {healthy} {down}");
    let (a, b) = tokio::join!(spawn_worker(&spec), spawn_worker(&spec));
    let status = client.sources_status().await;
    client.close().await;
    sim.shutdown();
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            out::stderr_line(&format!("pgw demo: {e}"));
            return exit::INTERNAL;
        }
    };
    let healthy_status = status.iter().find(|s| s.name.starts_with("healthy"));
    let rpm_used = healthy_status.and_then(|s| s.rpm_used).unwrap_or(0);
    let parent_down = breaker_name(
        status
            .iter()
            .find(|s| s.name.starts_with("down"))
            .and_then(|s| s.breaker_state),
    );
    let total = a.granted + b.granted;
    let holds = total == REDIS_DEMO_RPM
        && rpm_used == REDIS_DEMO_RPM
        && a.down_breaker == "open"
        && b.down_breaker == "open";
    if args.json {
        out::stdout_json(&json!({
            "schema_version": SCHEMA_VERSION,
            "backend": "redis",
            "scope": scope,
            "quota_rpm": REDIS_DEMO_RPM,
            "workers": [
                { "granted": a.granted, "refused": a.refused, "down_breaker": a.down_breaker },
                { "granted": b.granted, "refused": b.refused, "down_breaker": b.down_breaker },
            ],
            "granted_total": total,
            "rpm_used_shared": rpm_used,
            "down_breaker_shared": parent_down,
            "holds": holds,
        }));
    } else {
        let lines = [
            format!("shared governance over Redis (scope {scope})"),
            format!(
                "worker 1: {} calls granted, {} refused; sees down_1 {}",
                a.granted, a.refused, a.down_breaker
            ),
            format!(
                "worker 2: {} calls granted, {} refused; sees down_1 {}",
                b.granted, b.refused, b.down_breaker
            ),
            format!(
                "granted together: {total} of the quota {REDIS_DEMO_RPM} requests per minute \
                 (Redis counts {rpm_used} in the window)"
            ),
            format!("breaker of down_1 in Redis: {parent_down}"),
            format!(
                "check: {}",
                if holds {
                    "the two processes shared one quota and one breaker"
                } else {
                    "FAILED: the processes did not share the quota or the breaker"
                }
            ),
        ];
        for l in lines {
            out::stdout_line(&l);
        }
    }
    if holds { exit::OK } else { exit::INTERNAL }
}
