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
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::Instant;
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

use crate::config::{self, SCHEMA_VERSION};
pub use crate::demo_args::{DEMO_MODEL, DemoArgs, DemoBackend};
use crate::exit;
use crate::out;
use crate::signals;

/// The embedded price table for [`DEMO_MODEL`], in demo-currency per 1 M tokens.
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

/// p50 / p99 of a sample (nearest rank); `None` fields for an empty sample.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

fn percentiles(mut values: Vec<f64>) -> Percentiles {
    values.sort_by(f64::total_cmp);
    let at = |p: f64| -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let rank = (p / 100.0 * n).ceil().max(1.0) as usize;
        values.get(rank.min(values.len()) - 1).copied()
    };
    Percentiles {
        p50: at(50.0),
        p99: at(99.0),
    }
}

/// What the telemetry file holds after `close()`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TelemetryTotals {
    /// Rows in `llm_calls`.
    pub rows: u64,
    /// Σ `prompt_tokens`.
    pub prompt_tokens: u64,
    /// Σ `completion_tokens`.
    pub completion_tokens: u64,
    /// Σ `cost` over priced rows (`None` when no row was priced).
    pub cost: Option<f64>,
}

/// The Postgres DSN of `--telemetry`, when it is one.
fn postgres_target(telemetry: &std::path::Path) -> Option<String> {
    let text = telemetry.to_str()?;
    let scheme = text.split("://").next()?;
    (text.contains("://") && matches!(scheme.split('+').next(), Some("postgres" | "postgresql")))
        .then(|| text.to_owned())
}

/// The server's clock before the workload: this run's rows are those created at or after it.
async fn postgres_run_start(
    dsn: &adapter_postgres::ParsedDsn,
) -> Result<std::time::SystemTime, String> {
    let client = dsn
        .connect(std::time::Duration::from_secs(10))
        .await
        .map_err(|e| e.0)?;
    client
        .query_one("SELECT now()", &[])
        .await
        .map(|row| row.get(0))
        .map_err(|e| format!("cannot read the server clock: {e}"))
}

/// This run's totals from Postgres (rows created since `start`).
async fn read_postgres_telemetry(
    dsn: &adapter_postgres::ParsedDsn,
    start: std::time::SystemTime,
) -> Result<TelemetryTotals, String> {
    let client = dsn
        .connect(std::time::Duration::from_secs(10))
        .await
        .map_err(|e| e.0)?;
    let row = client
        .query_one(
            "SELECT count(*)::int8, COALESCE(sum(prompt_tokens), 0)::int8, \
             COALESCE(sum(completion_tokens), 0)::int8, sum(cost)::float8 FROM llm_calls \
             WHERE created_at >= $1",
            &[&start],
        )
        .await
        .map_err(|e| format!("cannot read llm_calls: {e}"))?;
    Ok(TelemetryTotals {
        rows: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
        prompt_tokens: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
        completion_tokens: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
        cost: row.get::<_, Option<f64>>(3),
    })
}

fn read_telemetry(path: &std::path::Path) -> Result<TelemetryTotals, rusqlite::Error> {
    // Read-write (never create): a read-only connection to a WAL database cannot remove the
    // `-wal` / `-shm` files when it closes, and the demo must leave only the files it names.
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let totals = conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), \
         SUM(cost) FROM llm_calls",
        [],
        |row| {
            Ok(TelemetryTotals {
                rows: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                prompt_tokens: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                completion_tokens: u64::try_from(row.get::<_, i64>(2)?).unwrap_or(0),
                cost: row.get::<_, Option<f64>>(3)?,
            })
        },
    )?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(totals)
}

fn script(value: &Value) -> Result<Script, String> {
    Script::from_json(&value.to_string()).map_err(|e| e.to_string())
}

/// The three simulator scripts of R-54: healthy, hang, storm (fault seed `seed`).
fn demo_scripts(seed: u64) -> Result<[Script; 3], String> {
    let completion = json!({
        "content": DEMO_TEXT, "ttft_ms": 30, "chunks": 20, "inter_chunk_ms": 5
    });
    let healthy = json!({ "version": 1, "responses": [ { "completion": completion } ] });
    let hang = json!({ "version": 1, "responses": [ {
        "headers": [["content-type", "text/event-stream"]], "end": "hang" } ] });
    let storm = json!({ "version": 1, "responses": [ { "completion": completion } ],
        "faults": { "seed": seed, "p_429": 0.8, "retry_after": "1" } });
    Ok([script(&healthy)?, script(&hang)?, script(&storm)?])
}

/// The governed run's environment map: four sources, the scope keys, the memory
/// cache, SQLite telemetry at `telemetry` and the price table at `pricing`.
pub fn demo_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = sources_env_map(base_urls, telemetry, pricing);
    for (key, value) in DEMO_SCOPE_KEYS {
        map.insert((*key).to_owned(), (*value).to_owned());
    }
    map.insert("PGW_CACHE_BACKEND".into(), "memory".into());
    map
}

/// The naive run's environment map: the same sources, telemetry and prices, the
/// [`NAIVE_SCOPE_KEYS`], no cache.
pub fn naive_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = sources_env_map(base_urls, telemetry, pricing);
    for (key, value) in NAIVE_SCOPE_KEYS {
        map.insert((*key).to_owned(), (*value).to_owned());
    }
    map.insert("PGW_CACHE_BACKEND".into(), "none".into());
    map
}

fn sources_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = EnvMap::new();
    for (provider, base_url) in DEMO_PROVIDERS.into_iter().zip(base_urls) {
        let key = |field: &str| format!("LLM__{provider}__1__{field}");
        map.insert(key("BASE_URL"), base_url.to_owned());
        map.insert(key("API_KEY"), DEMO_KEY.to_owned());
        map.insert(key("MODEL"), DEMO_MODEL.to_owned());
        for (field, value) in DEMO_SOURCE_KEYS {
            map.insert(key(field), (*value).to_owned());
        }
    }
    map.insert("PGW_TELEMETRY_BACKEND".into(), "sqlite".into());
    map.insert(
        "PGW_TELEMETRY_SQLITE_PATH".into(),
        telemetry.to_string_lossy().into_owned(),
    );
    map.insert(
        "PGW_PRICING_PATH".into(),
        pricing.to_string_lossy().into_owned(),
    );
    map
}

fn default_telemetry_path() -> PathBuf {
    PathBuf::from(".").join(DEMO_DIR).join("telemetry.db")
}

/// The naive run's telemetry file: `telemetry` with `-naive` added to its stem
/// (`telemetry.db` → `telemetry-naive.db`).
pub fn naive_telemetry_path(telemetry: &std::path::Path) -> PathBuf {
    let stem = telemetry
        .file_stem()
        .map_or_else(|| "telemetry".into(), |s| s.to_string_lossy().into_owned());
    let name = match telemetry.extension() {
        Some(ext) => format!("{stem}-naive.{}", ext.to_string_lossy()),
        None => format!("{stem}-naive"),
    };
    telemetry.with_file_name(name)
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

/// The naive run's figures, for the side-by-side comparison.
#[derive(Debug, Clone, Serialize)]
pub struct NaiveSummary {
    /// Wall time of the naive workload in seconds.
    pub elapsed_s: f64,
    /// Calls that returned a response.
    pub succeeded: u64,
    /// Calls that returned an error.
    pub failed: u64,
    /// Failed calls by error type.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Latency over all calls (failed calls: their wall time).
    pub latency_ms: Percentiles,
    /// TTFT over successful streams.
    pub ttft_ms: Percentiles,
    /// Σ cost from the naive telemetry file.
    pub cost: Option<f64>,
    /// The naive run's telemetry file.
    pub telemetry_path: String,
}

fn errors_by_type(facts: &[CallFacts]) -> BTreeMap<String, u64> {
    let mut errors = BTreeMap::new();
    for f in facts {
        if let Some(t) = f.error_type {
            *errors.entry(t.to_owned()).or_insert(0u64) += 1;
        }
    }
    errors
}

fn summarize_naive(
    facts: &[CallFacts],
    elapsed_s: f64,
    telemetry_path: &std::path::Path,
    totals: &TelemetryTotals,
) -> NaiveSummary {
    let failed = facts.iter().filter(|f| f.error_type.is_some()).count() as u64;
    NaiveSummary {
        elapsed_s,
        succeeded: facts.len() as u64 - failed,
        failed,
        errors_by_type: errors_by_type(facts),
        latency_ms: percentiles(facts.iter().map(|f| f.latency_ms as f64).collect()),
        ttft_ms: percentiles(facts.iter().filter_map(|f| f.ttft_ms).collect()),
        cost: totals.cost,
        telemetry_path: telemetry_path.to_string_lossy().into_owned(),
    }
}

/// The R-55 summary of the governed run, with the naive run beside it (the `--json` object
/// without `schema_version`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Calls made.
    pub calls: u32,
    /// Concurrency.
    pub concurrency: u32,
    /// Fault seed.
    pub seed: u64,
    /// Wall time of the workload in seconds.
    pub elapsed_s: f64,
    /// Calls that returned a response.
    pub succeeded: u64,
    /// Calls that returned an error.
    pub failed: u64,
    /// Failed calls by error type.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Σ upstream requests over all calls.
    pub attempts: u64,
    /// Σ (attempts − 1 − hedges) over all calls.
    pub retries: u64,
    /// Σ hedges.
    pub hedges_sent: u64,
    /// Calls won by the hedge leg.
    pub hedges_won: u64,
    /// Calls served from the response cache (no upstream request).
    pub cache_hits: u64,
    /// Breaker opens per source (`sources_status()`).
    pub breaker_opens: BTreeMap<String, u32>,
    /// `total_latency_ms` over all calls (failed calls: their wall time).
    pub latency_ms: Percentiles,
    /// TTFT over successful streams.
    pub ttft_ms: Percentiles,
    /// Σ tokens from the telemetry file.
    pub tokens: Value,
    /// Σ cost from the telemetry file.
    pub cost: Option<f64>,
    /// The telemetry file and the rows check.
    pub telemetry: Value,
    /// The same batch sent naively (one source per call, one attempt, no hedging, no cache).
    pub naive: NaiveSummary,
}

fn summarize(
    args: &DemoArgs,
    governed: &Phase,
    telemetry_path: &std::path::Path,
    naive: NaiveSummary,
) -> (Summary, bool) {
    let (facts, elapsed_s, totals) = (&governed.facts, governed.elapsed_s, &governed.totals);
    let breaker_opens = governed.breaker_opens.clone();
    let errors_by_type = errors_by_type(facts);
    let failed = facts.iter().filter(|f| f.error_type.is_some()).count() as u64;
    let attempts: u64 = facts.iter().map(|f| u64::from(f.attempts)).sum();
    let retries: u64 = facts
        .iter()
        .map(|f| u64::from(f.attempts.saturating_sub(1).saturating_sub(f.hedges)))
        .sum();
    let cache_hits = facts.iter().filter(|f| f.cache_hit).count() as u64;
    let expected_rows = attempts + failed + cache_hits;
    let holds = totals.rows == expected_rows;
    let summary = Summary {
        calls: args.calls,
        concurrency: args.concurrency,
        seed: args.seed,
        elapsed_s,
        succeeded: facts.len() as u64 - failed,
        failed,
        errors_by_type,
        attempts,
        retries,
        hedges_sent: facts.iter().map(|f| u64::from(f.hedges)).sum(),
        hedges_won: facts.iter().filter(|f| f.hedge_won).count() as u64,
        cache_hits,
        breaker_opens,
        latency_ms: percentiles(facts.iter().map(|f| f.latency_ms as f64).collect()),
        ttft_ms: percentiles(facts.iter().filter_map(|f| f.ttft_ms).collect()),
        tokens: json!({
            "prompt": totals.prompt_tokens,
            "completion": totals.completion_tokens,
            "total": totals.prompt_tokens + totals.completion_tokens,
        }),
        cost: totals.cost,
        telemetry: json!({
            "path": telemetry_path.to_string_lossy(),
            "rows": totals.rows,
            "attempts": attempts,
            "failed_calls": failed,
            "cache_hits": cache_hits,
            "check": "rows = attempts + failed calls + cache hits",
            "check_holds": holds,
        }),
        naive,
    };
    (summary, holds)
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

fn fmt_cost(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |c| format!("{c:.6}"))
}

fn fmt_errors(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        "none".to_owned()
    } else {
        errors
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The summary lines: the side-by-side table, then the governed run's details.
fn summary_lines(s: &Summary, holds: bool) -> Vec<String> {
    let n = &s.naive;
    let row = |label: &str, naive: String, governed: String| {
        format!("  {label:<18} {naive:<16} {governed}")
    };
    let opens = s
        .breaker_opens
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        format!(
            "pgw demo: {} calls at concurrency {} (seed {}), sent naively then governed",
            s.calls, s.concurrency, s.seed
        ),
        row("", "naive".into(), "governed".into()),
        row(
            "succeeded",
            format!("{}/{}", n.succeeded, s.calls),
            format!("{}/{}", s.succeeded, s.calls),
        ),
        row(
            "latency p50 ms",
            fmt_ms(n.latency_ms.p50),
            fmt_ms(s.latency_ms.p50),
        ),
        row(
            "latency p99 ms",
            fmt_ms(n.latency_ms.p99),
            fmt_ms(s.latency_ms.p99),
        ),
        row("TTFT p50 ms", fmt_ms(n.ttft_ms.p50), fmt_ms(s.ttft_ms.p50)),
        row("TTFT p99 ms", fmt_ms(n.ttft_ms.p99), fmt_ms(s.ttft_ms.p99)),
        row("cost", fmt_cost(n.cost), fmt_cost(s.cost)),
        row(
            "wall time s",
            format!("{:.2}", n.elapsed_s),
            format!("{:.2}", s.elapsed_s),
        ),
        "  naive: one source per call in turn, one attempt, no hedging, no breaker, no cache"
            .to_owned(),
        format!("  naive errors       {}", fmt_errors(&n.errors_by_type)),
        "governed run:".to_owned(),
        format!("  errors by type   {}", fmt_errors(&s.errors_by_type)),
        format!("  retries          {}", s.retries),
        format!(
            "  hedges           sent {}, won {}",
            s.hedges_sent, s.hedges_won
        ),
        format!("  cache hits       {}", s.cache_hits),
        format!(
            "  breaker opens    {}",
            if opens.is_empty() { "none" } else { &opens }
        ),
        format!(
            "  tokens           prompt {}, completion {}",
            s.tokens["prompt"], s.tokens["completion"]
        ),
        format!(
            "  telemetry        {} (naive: {})",
            s.telemetry["path"].as_str().unwrap_or_default(),
            n.telemetry_path
        ),
        format!(
            "  check            rows = attempts + failed calls + cache hits: {} = {} + {} + {} {}",
            s.telemetry["rows"],
            s.attempts,
            s.failed,
            s.cache_hits,
            if holds { "(holds)" } else { "(FAILS)" }
        ),
    ]
}

fn print_summary(s: &Summary, holds: bool) {
    for line in summary_lines(s, holds) {
        out::stdout_line(&line);
    }
}

/// The three simulators and the refused address of `down_1`.
struct Sims {
    handles: [SimHandle; 3],
    down_url: String,
}

impl Sims {
    fn urls(&self) -> [String; 4] {
        let [healthy, hang, storm] = &self.handles;
        [
            healthy.base_url(),
            hang.base_url(),
            storm.base_url(),
            self.down_url.clone(),
        ]
    }

    fn shutdown(&self) {
        for sim in &self.handles {
            sim.shutdown();
        }
    }
}

/// A loopback URL whose port refuses connections: bound to an ephemeral port, then released.
fn refused_url() -> Result<String, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    drop(listener);
    Ok(format!("http://127.0.0.1:{port}/v1"))
}

fn start_sims(seed: u64) -> Result<Sims, String> {
    let [healthy, hang, storm] = demo_scripts(seed)?;
    let start = |s| Sim::start(s).map_err(|e| e.to_string());
    Ok(Sims {
        handles: [start(healthy)?, start(hang)?, start(storm)?],
        down_url: refused_url()?,
    })
}

/// One run's facts.
struct Phase {
    facts: Vec<CallFacts>,
    elapsed_s: f64,
    totals: TelemetryTotals,
    breaker_opens: BTreeMap<String, u32>,
}

/// Where a run's telemetry is read back from.
enum Reader<'a> {
    /// A SQLite file.
    Sqlite(&'a std::path::Path),
    /// Postgres rows created at or after the instant (the server's clock).
    Postgres(&'a adapter_postgres::ParsedDsn, std::time::SystemTime),
    /// Nothing was recorded (the naive run when the target is Postgres).
    Nothing,
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

fn write_prices() -> std::io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new()
        .prefix("pgw-demo-prices-")
        .suffix(".json")
        .tempfile()?;
    std::io::Write::write_all(&mut file, DEMO_PRICES.as_bytes())?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_55_percentiles_nearest_rank() {
        let p = percentiles((1..=100).map(f64::from).collect());
        assert_eq!((p.p50, p.p99), (Some(50.0), Some(99.0)));
        let empty = percentiles(Vec::new());
        assert_eq!((empty.p50, empty.p99), (None, None));
        let one = percentiles(vec![7.0]);
        assert_eq!((one.p50, one.p99), (Some(7.0), Some(7.0)));
    }

    #[test]
    fn r_54_demo_scripts_are_valid() {
        assert!(demo_scripts(7).is_ok());
    }

    #[test]
    fn r_54_demo_map_is_a_valid_configuration() {
        let map = demo_env_map(
            [
                "http://127.0.0.1:1/v1",
                "http://127.0.0.1:2/v1",
                "http://127.0.0.1:3/v1",
                "http://127.0.0.1:4/v1",
            ],
            std::path::Path::new("demo.db"),
            std::path::Path::new("prices.json"),
        );
        assert_eq!(map["LLM__HANG__1__TTFT_TIMEOUT_S"], "2");
        assert_eq!(map["LLM__CIRCUIT_OPEN"], "wait");
        let mut without_prices = map.clone();
        without_prices.remove("PGW_PRICING_PATH");
        let settings = polygateway::GatewaySettings::from_env_map("LLM", &without_prices)
            .expect("the demo configuration is valid");
        let names: Vec<&str> = settings.sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["down_1", "hang_1", "healthy_1", "storm_1"]);
    }

    #[test]
    fn r_54_naive_map_is_a_valid_configuration_without_retries() {
        let mut map = naive_env_map(
            [
                "http://127.0.0.1:1/v1",
                "http://127.0.0.1:2/v1",
                "http://127.0.0.1:3/v1",
                "http://127.0.0.1:4/v1",
            ],
            std::path::Path::new("demo.db"),
            std::path::Path::new("prices.json"),
        );
        map.remove("PGW_PRICING_PATH");
        assert_eq!(map["LLM__RETRY__MAX_ATTEMPTS"], "1");
        assert!(!map.contains_key("LLM__HEDGE__AFTER_S"));
        assert!(polygateway::GatewaySettings::from_env_map("LLM", &map).is_ok());
    }

    #[test]
    fn naive_telemetry_file_sits_next_to_the_governed_one() {
        assert_eq!(
            naive_telemetry_path(std::path::Path::new("./pgw-demo/telemetry.db")),
            std::path::Path::new("./pgw-demo/telemetry-naive.db")
        );
        assert_eq!(
            naive_telemetry_path(std::path::Path::new("demo")),
            std::path::Path::new("demo-naive")
        );
    }
}
