//! `pgw soak`: a fault soak of the whole library against in-process simulators.
//!
//! Starts three simulators on ephemeral ports, each injecting random faults with its own seed
//! (per request: 5 % 429, 5 % 503, 2 % a hang before the head, 5 % a 400 ms mid-stream stall,
//! 5 % a truncated stream)
//! — assembles one chat scope over them from an environment map with SQLite telemetry, and runs
//! `--calls` governed calls at `--concurrency`. A `--drop-percent` share of the calls is dropped
//! by the caller after a random 0–`--drop-max-ms` ms (a caller cancellation). It prints the
//! process RSS and the in-flight count while running, then closes the client and checks the
//! ledger against the telemetry file:
//!
//! - `rows = attempts + failed calls + rows of dropped calls` (attempts and failed calls as
//!   the completed callers saw them; the dropped calls' rows as the file holds them);
//! - one `cancelled` terminal row per dropped call;
//! - in-flight 0 on every source after `close()`.
//!
//! Exit 0 when the ledger holds, 1 otherwise. The figures of long runs are in
//! `docs/reliability.md`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;
use polygateway::{ChatOptions, EnvMap, GatewayClient, JsonObject};
use serde_json::{Value, json};
use tokio::time::Instant;
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

use crate::config::SCHEMA_VERSION;
use crate::exit;
use crate::out;
use crate::signals;

/// Arguments of `pgw soak`.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// Number of governed calls.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub calls: u64,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,
    /// Share of calls the caller drops (cancels) mid-flight, in percent.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub drop_percent: u8,
    /// A dropped call is dropped after a random delay up to this many milliseconds.
    #[arg(long, default_value_t = 50)]
    pub drop_max_ms: u64,
    /// Seed of the simulators' faults and of the caller drops.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Telemetry file (default: a temporary file, removed at the end).
    #[arg(long, value_name = "PATH")]
    pub telemetry: Option<PathBuf>,
    /// Seconds between progress lines (RSS, in flight, calls done) on stderr; 0 = none.
    #[arg(long, default_value_t = 10)]
    pub report_every_s: u64,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The process's resident set size in KiB (`VmRSS` of `/proc/self/status`); `None` elsewhere.
pub fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn script(value: &Value) -> Result<Script, String> {
    Script::from_json(&value.to_string()).map_err(|e| e.to_string())
}

fn soak_scripts(seed: u64) -> Result<[Script; 3], String> {
    let completion = json!({
        "content": "soak answer in five frames", "ttft_ms": 2, "chunks": 5, "inter_chunk_ms": 1
    });
    let faulty = |seed: u64| {
        json!({ "version": 1, "responses": [ { "completion": completion } ],
            "faults": { "seed": seed, "p_429": 0.05, "retry_after": "0", "p_5xx": 0.05,
                "status_5xx": 503, "p_hang_before_head": 0.02, "p_stall": 0.05,
                "stall_ms": 400, "p_truncate": 0.05 } })
    };
    Ok([
        script(&faulty(seed))?,
        script(&faulty(seed.wrapping_add(1)))?,
        script(&faulty(seed.wrapping_add(2)))?,
    ])
}

fn soak_env_map(urls: &[String], telemetry: &std::path::Path) -> EnvMap {
    let mut map = EnvMap::new();
    for (provider, url) in ["ALPHA", "BETA", "GAMMA"].into_iter().zip(urls) {
        let key = |field: &str| format!("LLM__{provider}__1__{field}");
        map.insert(key("BASE_URL"), url.clone());
        map.insert(key("API_KEY"), "sk-soak-not-a-secret".to_owned());
        map.insert(key("MODEL"), "sim-model".to_owned());
        map.insert(key("TIMEOUT_S"), "2".to_owned());
        map.insert(key("TTFT_TIMEOUT_S"), "0.5".to_owned());
        map.insert(key("INTER_TOKEN_TIMEOUT_S"), "0.2".to_owned());
    }
    for (key, value) in [
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.05"),
        ("LLM__BREAKER__COOLDOWN_S", "0.5"),
        ("LLM__CIRCUIT_OPEN", "wait"),
        ("LLM__HEDGE__AFTER_S", "0.3"),
    ] {
        map.insert(key.to_owned(), value.to_owned());
    }
    map.insert("PGW_TELEMETRY_BACKEND".into(), "sqlite".into());
    map.insert(
        "PGW_TELEMETRY_SQLITE_PATH".into(),
        telemetry.to_string_lossy().into_owned(),
    );
    map
}

/// Caller-side counts.
#[derive(Debug, Default)]
struct Counts {
    done: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    attempts: AtomicU64,
    dropped: AtomicU64,
    inflight: AtomicU64,
}

/// splitmix64: the drop decisions, reproducible from the seed and the call index.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

async fn one_call(client: &GatewayClient, args: &SoakArgs, index: u64, counts: &Counts) {
    let mut message = JsonObject::new();
    message.insert("role".into(), Value::from("user"));
    message.insert("content".into(), Value::from(format!("soak {index}")));
    let r = mix(args.seed ^ index.wrapping_mul(0x1000_0000_01B3));
    let drop_after = (r % 100 < u64::from(args.drop_percent))
        .then(|| Duration::from_millis((r >> 8) % args.drop_max_ms.max(1)));
    counts.inflight.fetch_add(1, Ordering::Relaxed);
    let call = client.chat_outcome(vec![message], ChatOptions::new().stream(true));
    let outcome = match drop_after {
        Some(after) => tokio::time::timeout(after, call).await.ok(),
        None => Some(call.await),
    };
    counts.inflight.fetch_sub(1, Ordering::Relaxed);
    match outcome {
        None => {
            counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Some(outcome) => {
            counts
                .attempts
                .fetch_add(u64::from(outcome.attempts), Ordering::Relaxed);
            if outcome.result.is_ok() {
                counts.succeeded.fetch_add(1, Ordering::Relaxed);
            } else {
                counts.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    counts.done.fetch_add(1, Ordering::Relaxed);
}

/// What the telemetry file holds after `close()`.
#[derive(Debug, Default)]
struct Ledger {
    rows: u64,
    attempt_rows: u64,
    terminal_rows: u64,
    cancelled_terminals: u64,
    dropped_call_rows: u64,
    /// Attempt rows that carry an error: the faults the library saw (and absorbed or reported).
    failed_attempt_rows: u64,
}

fn read_ledger(path: &std::path::Path) -> Result<Ledger, rusqlite::Error> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let count = |sql: &str| -> Result<u64, rusqlite::Error> {
        conn.query_row(sql, [], |row| row.get::<_, i64>(0))
            .map(|n| u64::try_from(n).unwrap_or(0))
    };
    Ok(Ledger {
        rows: count("SELECT COUNT(*) FROM llm_calls")?,
        attempt_rows: count("SELECT COUNT(*) FROM llm_calls WHERE event_kind = 'attempt'")?,
        terminal_rows: count(
            "SELECT COUNT(*) FROM llm_calls WHERE event_kind = 'terminal_failure'",
        )?,
        cancelled_terminals: count(
            "SELECT COUNT(*) FROM llm_calls WHERE event_kind = 'terminal_failure' \
             AND error = 'cancelled'",
        )?,
        failed_attempt_rows: count(
            "SELECT COUNT(*) FROM llm_calls WHERE event_kind = 'attempt' AND error IS NOT NULL",
        )?,
        dropped_call_rows: count(
            "SELECT COUNT(*) FROM llm_calls WHERE logical_call_id IN (SELECT logical_call_id \
             FROM llm_calls WHERE event_kind = 'terminal_failure' AND error = 'cancelled')",
        )?,
    })
}

fn progress(started: Instant, counts: &Counts, args: &SoakArgs) {
    out::stderr_line(&format!(
        "pgw soak: {:>7.1} s  {}/{} calls  in flight {}  dropped {}  RSS {} KiB",
        started.elapsed().as_secs_f64(),
        counts.done.load(Ordering::Relaxed),
        args.calls,
        counts.inflight.load(Ordering::Relaxed),
        counts.dropped.load(Ordering::Relaxed),
        rss_kib().map_or_else(|| "-".to_owned(), |k| k.to_string())
    ));
}

/// Runs `pgw soak`; returns 0 when the ledger holds, 1 otherwise (130/143/129 when interrupted).
pub async fn run(args: SoakArgs) -> u8 {
    let scripts = match soak_scripts(args.seed) {
        Ok(s) => s,
        Err(e) => {
            out::stderr_line(&format!("pgw soak: bad simulator script: {e}"));
            return exit::INTERNAL;
        }
    };
    let mut sims: Vec<SimHandle> = Vec::new();
    for s in scripts {
        match Sim::start(s) {
            Ok(sim) => {
                // Recording every request would grow without bound over a long soak.
                sim.set_recording(false);
                sims.push(sim);
            }
            Err(e) => {
                out::stderr_line(&format!("pgw soak: cannot start a simulator: {e}"));
                return exit::INTERNAL;
            }
        }
    }
    let temp = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            out::stderr_line(&format!(
                "pgw soak: cannot create a temporary directory: {e}"
            ));
            return exit::INTERNAL;
        }
    };
    let telemetry = args
        .telemetry
        .clone()
        .unwrap_or_else(|| temp.path().join("soak.db"));
    let urls: Vec<String> = sims.iter().map(SimHandle::base_url).collect();
    let client = match GatewayClient::from_env_map("LLM", &soak_env_map(&urls, &telemetry)) {
        Ok(c) => c,
        Err(e) => return crate::config::report_config_error(&e, args.json),
    };
    let rss_start = rss_kib();
    let started = Instant::now();
    let counts = Arc::new(Counts::default());
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..args.concurrency {
        let (client, counts, next, args) = (
            client.clone(),
            Arc::clone(&counts),
            Arc::clone(&next),
            args.clone(),
        );
        workers.spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed) as u64;
                if index >= args.calls {
                    break;
                }
                one_call(&client, &args, index, &counts).await;
            }
        });
    }
    let report = async {
        if args.report_every_s == 0 {
            return std::future::pending::<()>().await;
        }
        let mut tick = tokio::time::interval(Duration::from_secs(args.report_every_s));
        tick.tick().await;
        loop {
            tick.tick().await;
            progress(started, &counts, &args);
        }
    };
    let all_done = async { while workers.join_next().await.is_some() {} };
    tokio::select! {
        () = all_done => {}
        () = report => {}
        signal = signals::interrupted() => {
            out::stderr_line(&format!("pgw soak: interrupted by {}; draining", signal.name()));
            client.close().await;
            return signal.exit_code();
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let rss_before_close = rss_kib();
    client.close().await;
    let inflight_after_close: u64 = client
        .sources_status()
        .await
        .iter()
        .map(|s| u64::from(s.inflight.unwrap_or(0)))
        .sum();
    let rss_end = rss_kib();
    let ledger = match read_ledger(&telemetry) {
        Ok(l) => l,
        Err(e) => {
            out::stderr_line(&format!("pgw soak: cannot read the telemetry file: {e}"));
            return exit::INTERNAL;
        }
    };
    let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (succeeded, failed, attempts, dropped) = (
        c(&counts.succeeded),
        c(&counts.failed),
        c(&counts.attempts),
        c(&counts.dropped),
    );
    let expected_rows = attempts + failed + ledger.dropped_call_rows;
    let holds = ledger.rows == expected_rows
        && ledger.cancelled_terminals == dropped
        && ledger.terminal_rows == failed + dropped
        && inflight_after_close == 0;
    let result = json!({
        "calls": args.calls,
        "concurrency": args.concurrency,
        "seed": args.seed,
        "drop_percent": args.drop_percent,
        "elapsed_s": elapsed_s,
        "succeeded": succeeded,
        "failed": failed,
        "dropped": dropped,
        "attempts": attempts,
        "rss_kib": { "start": rss_start, "before_close": rss_before_close, "end": rss_end },
        "inflight_after_close": inflight_after_close,
        "ledger": {
            "rows": ledger.rows,
            "attempt_rows": ledger.attempt_rows,
            "terminal_rows": ledger.terminal_rows,
            "cancelled_terminals": ledger.cancelled_terminals,
            "dropped_call_rows": ledger.dropped_call_rows,
            "failed_attempt_rows": ledger.failed_attempt_rows,
            "check": "rows = attempts + failed calls + rows of dropped calls; one cancelled terminal per dropped call; terminal rows = failed + dropped; in flight after close = 0",
            "holds": holds,
        },
    });
    if args.json {
        let mut object = json!({ "schema_version": SCHEMA_VERSION, "ok": holds });
        if let (Some(o), Value::Object(r)) = (object.as_object_mut(), result) {
            o.extend(r);
        }
        out::stdout_json(&object);
    } else {
        let kib = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |k| k.to_string());
        for line in [
            format!(
                "pgw soak: {} calls at concurrency {} in {elapsed_s:.1} s (seed {}, {} % dropped by the caller)",
                args.calls, args.concurrency, args.seed, args.drop_percent
            ),
            format!(
                "  succeeded {succeeded}, failed {failed}, dropped {dropped}, attempts {attempts}"
            ),
            format!(
                "  RSS KiB   start {}, before close {}, end {}",
                kib(rss_start),
                kib(rss_before_close),
                kib(rss_end)
            ),
            format!("  in flight after close {inflight_after_close}"),
            format!(
                "  faults    {} attempt rows carry an error (faults seen, incl. hedge losers and drops)",
                ledger.failed_attempt_rows
            ),
            format!(
                "  ledger    rows {} = attempts {attempts} + failed {failed} + dropped-call rows {}; cancelled terminals {} (dropped {dropped}) {}",
                ledger.rows,
                ledger.dropped_call_rows,
                ledger.cancelled_terminals,
                if holds { "(holds)" } else { "(FAILS)" }
            ),
        ] {
            out::stdout_line(&line);
        }
    }
    drop(sims);
    if holds { exit::OK } else { exit::INTERNAL }
}
