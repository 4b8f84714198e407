//! `pgw demo`: what governance buys, on embedded defaults.
//!
//! Starts four in-process upstreams on ephemeral ports — `healthy_1` (TTFT 30 ms, 20 chunks ×
//! 5 ms, usage), `hang_1` (sends its head, then hangs before the first body byte), `storm_1`
//! (429 with `Retry-After: 1` on 80 % of requests, fault seed `--seed`) and `down_1` (a port
//! that refuses connections) — and sends the same batch of `--calls` calls twice, at
//! `--concurrency`, with a progress bar on stderr:
//!
//! 1. **naive**: each call goes to one source (round robin), one attempt, no hedging, no
//!    breaker, no cache — what a plain client with a list of endpoints does;
//! 2. **governed**: the real configuration (retries with backoff, hedging, a breaker that opens
//!    on `down_1`, the in-memory response cache).
//!
//! Both clients are assembled **from an environment map** through `GatewayClient::from_env_map`
//! (so the demo exercises the real configuration layer). The summary puts the two side by side
//! (succeeded, latency and TTFT p50/p99, cost) and adds the governed run's details: errors by
//! type, retries, hedges sent/won, cache hits, breaker opens (`sources_status()`), tokens and
//! the check "rows = attempts + failed calls + cache hits". Telemetry goes to
//! `./pgw-demo/telemetry.db` (governed) and `./pgw-demo/telemetry-naive.db` (naive) unless
//! `--telemetry` names the governed file; the demo leaves exactly those two files (no `-wal` /
//! `-shm`). The constants are listed in `docs/cli.md`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use indicatif::{ProgressBar, ProgressStyle};
use polygateway::{ChatOptions, ConfigError, EnvMap, GatewayClient, JsonObject};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::config::{self, SCHEMA_VERSION};
pub use crate::demo_args::{DemoArgs, DemoBackend};
use crate::exit;
use crate::out;
use crate::signals;

mod readback;
mod setup;
mod summary;

pub use readback::TelemetryTotals;
use readback::{
    Reader, postgres_run_start, postgres_target, read_postgres_telemetry, read_telemetry,
};
use setup::{default_telemetry_path, start_sims, write_prices};
pub use setup::{demo_env_map, naive_env_map, naive_telemetry_path};
use summary::{print_summary, summarize, summarize_naive};

/// The embedded price table for [`DEMO_MODEL`](crate::demo_args::DEMO_MODEL), in demo-currency per 1 M tokens.
pub const DEMO_PRICES: &str = r#"{"sim-model":{"input_per_1m":0.5,"output_per_1m":1.5}}"#;
/// The healthy answer: 40 characters, so 20 frames of 2 characters.
const DEMO_TEXT: &str = "Governed calls keep going when one fails.";
/// The demo's (fake) API key; the simulators accept any key.
const DEMO_KEY: &str = "sk-demo-not-a-secret";
/// Every `DEMO_REPEAT_EVERY`-th call repeats an earlier call's prompt, so the in-memory
/// response cache (`PGW_CACHE_BACKEND=memory`) serves a share of the calls.
pub const DEMO_REPEAT_EVERY: usize = 4;

/// Scope keys of the governed run, besides the per-source ones.
pub const DEMO_SCOPE_KEYS: &[(&str, &str)] = &[
    ("LLM__HEDGE__AFTER_S", "0.3"),
    ("LLM__HEDGE__STALL_AFTER_S", "0.5"),
    ("LLM__RETRY__BACKOFF_BASE_S", "0.1"),
    ("LLM__RETRY__BACKOFF_MAX_S", "1.0"),
    ("LLM__CALL_DEADLINE_S", "10"),
    ("LLM__CIRCUIT_OPEN", "wait"),
    ("LLM__BREAKER__FAIL_THRESHOLD", "1"),
];
/// Scope keys of the naive run: one source per call in turn, one attempt, no hedging, a breaker
/// that never opens, no cache.
pub const NAIVE_SCOPE_KEYS: &[(&str, &str)] = &[
    ("LLM__SELECTOR", "round_robin"),
    ("LLM__RETRY__MAX_ATTEMPTS", "1"),
    ("LLM__CALL_DEADLINE_S", "10"),
    ("LLM__BREAKER__FAIL_THRESHOLD", "1000000"),
    ("LLM__BREAKER__FAIL_RATE", "1"),
    ("LLM__BREAKER__MIN_CALLS", "1000000"),
];
/// The providers of the demo's sources (`{provider}_1`), in configuration order.
pub const DEMO_PROVIDERS: [&str; 4] = ["HEALTHY", "HANG", "STORM", "DOWN"];
/// The demo's output folder (created when missing) and its default telemetry file names.
pub const DEMO_DIR: &str = "pgw-demo";
/// Per-source keys of the demo, the same for the three sources.
pub const DEMO_SOURCE_KEYS: &[(&str, &str)] = &[
    ("TIMEOUT_S", "5"),
    ("TTFT_TIMEOUT_S", "2"),
    ("INTER_TOKEN_TIMEOUT_S", "1"),
];

/// One call's facts, as the summary needs them.
#[derive(Debug, Clone)]
struct CallFacts {
    error_type: Option<&'static str>,
    attempts: u32,
    hedges: u32,
    hedge_won: bool,
    latency_ms: u64,
    ttft_ms: Option<f64>,
    cache_hit: bool,
}

fn progress_bar(calls: u32, label: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(u64::from(calls));
    if let Ok(style) =
        ProgressStyle::with_template("{prefix:>8} [{elapsed_precise}] {wide_bar} {pos}/{len} calls")
    {
        bar.set_style(style);
    }
    bar.set_prefix(label);
    bar
}

async fn one_call(client: &GatewayClient, index: usize) -> CallFacts {
    // A share of the calls repeats the prompt of a call made well before it (a cache hit).
    let prompt = if index % DEMO_REPEAT_EVERY == DEMO_REPEAT_EVERY - 1 {
        index / DEMO_REPEAT_EVERY
    } else {
        index
    };
    let mut message = JsonObject::new();
    message.insert("role".into(), Value::from("user"));
    message.insert(
        "content".into(),
        Value::from(format!("Demo call {prompt}: say something short.")),
    );
    let started = Instant::now();
    let outcome = client
        .chat_outcome(vec![message], ChatOptions::new().stream(true))
        .await;
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match &outcome.result {
        Ok(response) => {
            let stats = response.call_stats.clone().unwrap_or_default();
            CallFacts {
                error_type: None,
                attempts: outcome.attempts,
                hedges: stats.hedges,
                hedge_won: stats.hedge_won,
                latency_ms: stats.total_latency_ms,
                ttft_ms: response.ttft_ms,
                cache_hit: response.cache_hit,
            }
        }
        Err(error) => CallFacts {
            error_type: Some(error.type_name()),
            attempts: outcome.attempts,
            hedges: 0,
            hedge_won: false,
            latency_ms: elapsed_ms,
            ttft_ms: None,
            cache_hit: false,
        },
    }
}

async fn run_workload(
    client: &GatewayClient,
    calls: u32,
    concurrency: u32,
    bar: &ProgressBar,
) -> Vec<CallFacts> {
    let total = usize::try_from(calls).unwrap_or(usize::MAX);
    let next = Arc::new(AtomicUsize::new(0));
    let facts = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(calls) {
        let (client, next, facts, bar) = (
            client.clone(),
            Arc::clone(&next),
            Arc::clone(&facts),
            bar.clone(),
        );
        workers.spawn(async move {
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    break;
                }
                let fact = one_call(&client, index).await;
                facts
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(fact);
                bar.inc(1);
            }
        });
    }
    while workers.join_next().await.is_some() {}
    facts.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// One run's facts.
struct Phase {
    facts: Vec<CallFacts>,
    elapsed_s: f64,
    totals: TelemetryTotals,
    breaker_opens: BTreeMap<String, u32>,
}

/// Why a run stopped early: the exit code to return.
struct Stopped(u8);

/// Runs one phase: fresh simulators (the same fault sequence for both runs), a client from
/// `map_for(urls)`, the workload with a progress bar, `close()`, then the telemetry totals.
async fn run_phase(
    args: &DemoArgs,
    label: &'static str,
    reader: Reader<'_>,
    map_for: impl FnOnce([&str; 4]) -> EnvMap,
) -> Result<Phase, Stopped> {
    let sims = start_sims(args.seed).map_err(|e| {
        out::stderr_line(&format!("pgw demo: cannot start the simulators: {e}"));
        Stopped(exit::INTERNAL)
    })?;
    let urls = sims.urls();
    let map = map_for([&urls[0], &urls[1], &urls[2], &urls[3]]);
    let client = GatewayClient::from_env_map("LLM", &map).map_err(|e: ConfigError| {
        sims.shutdown();
        Stopped(config::report_config_error(&e, args.json))
    })?;
    config::print_warnings(client.assembly_warnings());
    let bar = progress_bar(args.calls, label);
    let started = Instant::now();
    let facts = tokio::select! {
        facts = run_workload(&client, args.calls, args.concurrency, &bar) => facts,
        signal = signals::interrupted() => {
            bar.abandon();
            out::stderr_line(&format!("pgw demo: interrupted by {}; draining", signal.name()));
            client.close().await;
            sims.shutdown();
            if args.json {
                out::stdout_json(&signal.json());
            }
            return Err(Stopped(signal.exit_code()));
        }
    };
    let elapsed_s = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let breaker_opens = client
        .sources_status()
        .await
        .into_iter()
        .map(|s| (s.name, s.open_count))
        .collect();
    client.close().await;
    sims.shutdown();
    let read = match reader {
        Reader::Sqlite(path) => read_telemetry(path)
            .map_err(|e| format!("cannot read the telemetry file {}: {e}", path.display())),
        Reader::Postgres(dsn, start) => read_postgres_telemetry(dsn, start).await,
        Reader::Nothing => Ok(TelemetryTotals::default()),
    };
    let totals = read.unwrap_or_else(|e| {
        out::stderr_line(&format!("pgw demo: {e}"));
        TelemetryTotals::default()
    });
    Ok(Phase {
        facts,
        elapsed_s,
        totals,
        breaker_opens,
    })
}

/// Runs `pgw demo`; returns the exit code (0, or 1 when the rows check fails).
pub async fn run(args: DemoArgs) -> u8 {
    if let Some(spec) = &args.redis_worker {
        return crate::demo_redis::worker(spec).await;
    }
    if args.backend == DemoBackend::Redis {
        return crate::demo_redis::run(&args).await;
    }
    let telemetry_path = args
        .telemetry
        .clone()
        .unwrap_or_else(default_telemetry_path);
    // A Postgres target (`--telemetry postgres://…`): the governed rows go there (the password
    // is never printed) and are those created after the server's clock reading taken just
    // before the governed run; the naive run records nothing.
    let postgres = match postgres_target(&telemetry_path)
        .map(|d| adapter_postgres::ParsedDsn::parse(&d))
        .transpose()
    {
        Ok(dsn) => dsn,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: {e}"));
            return exit::CONFIG;
        }
    };
    let naive_path = naive_telemetry_path(&telemetry_path);
    let folder = telemetry_path
        .parent()
        .filter(|d| postgres.is_none() && !d.as_os_str().is_empty());
    if let Some(dir) = folder
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        out::stderr_line(&format!(
            "pgw demo: cannot create the folder {} for the telemetry files (pass --telemetry \
             PATH to write elsewhere): {e}",
            dir.display()
        ));
        return exit::INTERNAL;
    }
    let pricing = match write_prices() {
        Ok(f) => f,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: cannot write the price table: {e}"));
            return exit::INTERNAL;
        }
    };
    let (shown, naive_shown) = match &postgres {
        Some(dsn) => (dsn.redacted(), "none".to_owned()),
        None => (
            telemetry_path.display().to_string(),
            naive_path.display().to_string(),
        ),
    };
    out::stderr_line(&format!(
        "pgw demo: {} calls at concurrency {} over healthy_1, hang_1, storm_1, down_1; \
         telemetry {shown} and {naive_shown}",
        args.calls, args.concurrency,
    ));
    let naive_reader = if postgres.is_some() {
        Reader::Nothing
    } else {
        Reader::Sqlite(&naive_path)
    };
    let naive = match run_phase(&args, "naive", naive_reader, |urls| {
        let mut map = naive_env_map(urls, &naive_path, pricing.path());
        if postgres.is_some() {
            map.remove("PGW_TELEMETRY_SQLITE_PATH");
            map.insert("PGW_TELEMETRY_BACKEND".into(), "none".into());
        }
        map
    })
    .await
    {
        Ok(phase) => phase,
        Err(Stopped(code)) => return code,
    };
    let governed_reader = match &postgres {
        Some(dsn) => match postgres_run_start(dsn).await {
            Ok(start) => Reader::Postgres(dsn, start),
            Err(e) => {
                out::stderr_line(&format!("pgw demo: {e}"));
                return exit::CONFIG;
            }
        },
        None => Reader::Sqlite(&telemetry_path),
    };
    let governed = match run_phase(&args, "governed", governed_reader, |urls| {
        let mut map = demo_env_map(urls, &telemetry_path, pricing.path());
        if let Some(dsn) = postgres_target(&telemetry_path) {
            map.remove("PGW_TELEMETRY_SQLITE_PATH");
            map.insert("PGW_TELEMETRY_BACKEND".into(), "postgres".into());
            map.insert("PGW_TELEMETRY_PG_DSN".into(), dsn);
            map.insert("PGW_TELEMETRY_SCHEMA_MODE".into(), "auto".into());
        }
        map
    })
    .await
    {
        Ok(phase) => phase,
        Err(Stopped(code)) => return code,
    };
    crate::demo_structured::showcase().await;
    let (naive_path, telemetry_path) = if postgres.is_some() {
        (PathBuf::from(naive_shown), PathBuf::from(&shown))
    } else {
        (naive_path, telemetry_path)
    };
    let naive = summarize_naive(&naive.facts, naive.elapsed_s, &naive_path, &naive.totals);
    let (summary, holds) = summarize(&args, &governed, &telemetry_path, naive);
    if args.json {
        let mut value = serde_json::to_value(&summary).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            let mut with_version = serde_json::Map::new();
            with_version.insert("schema_version".into(), json!(SCHEMA_VERSION));
            with_version.append(map);
            value = Value::Object(with_version);
        }
        out::stdout_json(&value);
    } else {
        print_summary(&summary, holds);
    }
    if holds { exit::OK } else { exit::INTERNAL }
}

#[cfg(test)]
mod tests;
