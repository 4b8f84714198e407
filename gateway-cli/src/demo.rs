//! `pgw demo` (05 R-54, R-55): the main job on embedded defaults.
//!
//! Starts three in-process simulators on ephemeral ports — `healthy_1` (TTFT 30 ms, 20 chunks ×
//! 5 ms, usage), `hang_1` (sends its head, then hangs before the first body byte) and `storm_1`
//! (429 with `Retry-After: 1` on 80 % of requests, fault seed `--seed`) — assembles one chat
//! scope over them **from an environment map** through `GatewayClient::from_env_map` (so the demo
//! exercises the real configuration layer), runs `--calls` governed calls at `--concurrency`
//! with a progress bar on stderr, closes the client and prints the R-55 summary: errors by type,
//! retries, hedges sent/won, breaker opens (`sources_status()`), latency and TTFT percentiles,
//! tokens and cost summed from the telemetry file, and the check "rows = attempts + failed
//! calls". The constants are listed in `docs/cli.md`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use polygateway::{ChatOptions, ConfigError, EnvMap, GatewayClient, JsonObject};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::Instant;
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

use crate::config::{self, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// The model every demo source is configured with.
pub const DEMO_MODEL: &str = "sim-model";
/// The embedded price table (20 §8.5) for [`DEMO_MODEL`], in demo-currency per 1 M tokens.
pub const DEMO_PRICES: &str = r#"{"sim-model":{"input_per_1m":0.5,"output_per_1m":1.5}}"#;
/// The healthy answer: 40 characters, so 20 frames of 2 characters.
const DEMO_TEXT: &str = "Governed calls keep going when one fails.";
/// The demo's (fake) API key; the simulators accept any key.
const DEMO_KEY: &str = "sk-demo-not-a-secret";
/// Every `DEMO_REPEAT_EVERY`-th call repeats an earlier call's prompt, so the in-memory
/// response cache (`PGW_CACHE_BACKEND=memory`) serves a share of the calls (70 Part C).
pub const DEMO_REPEAT_EVERY: usize = 4;

/// Scope keys of the demo (05 R-54), besides the per-source ones.
pub const DEMO_SCOPE_KEYS: &[(&str, &str)] = &[
    ("LLM__HEDGE__AFTER_S", "0.3"),
    ("LLM__HEDGE__STALL_AFTER_S", "0.5"),
    ("LLM__RETRY__BACKOFF_BASE_S", "0.1"),
    ("LLM__RETRY__BACKOFF_MAX_S", "1.0"),
    ("LLM__CALL_DEADLINE_S", "10"),
    ("LLM__CIRCUIT_OPEN", "wait"),
];
/// Per-source keys of the demo (05 R-54), the same for the three sources.
pub const DEMO_SOURCE_KEYS: &[(&str, &str)] = &[
    ("TIMEOUT_S", "5"),
    ("TTFT_TIMEOUT_S", "2"),
    ("INTER_TOKEN_TIMEOUT_S", "1"),
];

/// Arguments of `pgw demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Number of governed calls.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub calls: u32,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Seed of the storm simulator's faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Telemetry file (default `./pgw-demo-<unix_ts>.db`), or a `postgres://` DSN: the rows
    /// go to its `llm_calls` table (created if missing) and only this run's rows are counted.
    #[arg(long, value_name = "PATH|DSN")]
    pub telemetry: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

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
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.query_row(
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
    )
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

/// The demo's environment map (05 R-54): three sources, the scope keys, SQLite telemetry at
/// `telemetry` and the price table at `pricing`.
pub fn demo_env_map(
    base_urls: [&str; 3],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = EnvMap::new();
    for (provider, base_url) in ["HEALTHY", "HANG", "STORM"].into_iter().zip(base_urls) {
        let key = |field: &str| format!("LLM__{provider}__1__{field}");
        map.insert(key("BASE_URL"), base_url.to_owned());
        map.insert(key("API_KEY"), DEMO_KEY.to_owned());
        map.insert(key("MODEL"), DEMO_MODEL.to_owned());
        for (field, value) in DEMO_SOURCE_KEYS {
            map.insert(key(field), (*value).to_owned());
        }
    }
    for (key, value) in DEMO_SCOPE_KEYS {
        map.insert((*key).to_owned(), (*value).to_owned());
    }
    map.insert("PGW_CACHE_BACKEND".into(), "memory".into());
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
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    PathBuf::from(format!("./pgw-demo-{ts}.db"))
}

fn progress_bar(calls: u32) -> ProgressBar {
    let bar = ProgressBar::new(u64::from(calls));
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} calls")
    {
        bar.set_style(style);
    }
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

/// The R-55 summary (the `--json` object without `schema_version`).
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
}

fn summarize(
    args: &DemoArgs,
    facts: &[CallFacts],
    elapsed_s: f64,
    breaker_opens: BTreeMap<String, u32>,
    telemetry_path: &std::path::Path,
    totals: &TelemetryTotals,
) -> (Summary, bool) {
    let mut errors_by_type = BTreeMap::new();
    for f in facts {
        if let Some(t) = f.error_type {
            *errors_by_type.entry(t.to_owned()).or_insert(0u64) += 1;
        }
    }
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
    };
    (summary, holds)
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

fn print_summary(s: &Summary, holds: bool) {
    let errors = if s.errors_by_type.is_empty() {
        "none".to_owned()
    } else {
        s.errors_by_type
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let opens = s
        .breaker_opens
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let lines = [
        format!(
            "pgw demo: {} calls at concurrency {} in {:.2} s (seed {})",
            s.calls, s.concurrency, s.elapsed_s, s.seed
        ),
        format!("  succeeded        {}, failed {}", s.succeeded, s.failed),
        format!("  errors by type   {errors}"),
        format!("  retries          {}", s.retries),
        format!(
            "  hedges           sent {}, won {}",
            s.hedges_sent, s.hedges_won
        ),
        format!("  cache hits       {}", s.cache_hits),
        format!("  breaker opens    {opens}"),
        format!(
            "  latency ms       p50 {}, p99 {}",
            fmt_ms(s.latency_ms.p50),
            fmt_ms(s.latency_ms.p99)
        ),
        format!(
            "  TTFT ms          p50 {}, p99 {}",
            fmt_ms(s.ttft_ms.p50),
            fmt_ms(s.ttft_ms.p99)
        ),
        format!(
            "  tokens           prompt {}, completion {}",
            s.tokens["prompt"], s.tokens["completion"]
        ),
        format!(
            "  cost             {}",
            s.cost.map_or_else(|| "-".to_owned(), |c| format!("{c:.6}"))
        ),
        format!(
            "  telemetry        {}",
            s.telemetry["path"].as_str().unwrap_or_default()
        ),
        format!(
            "  check            rows = attempts + failed calls + cache hits: {} = {} + {} + {} {}",
            s.telemetry["rows"],
            s.attempts,
            s.failed,
            s.cache_hits,
            if holds { "(holds)" } else { "(FAILS)" }
        ),
    ];
    for line in lines {
        out::stdout_line(&line);
    }
}

struct Sims([SimHandle; 3]);

fn start_sims(seed: u64) -> Result<Sims, String> {
    let [healthy, hang, storm] = demo_scripts(seed)?;
    let start = |s| Sim::start(s).map_err(|e| e.to_string());
    Ok(Sims([start(healthy)?, start(hang)?, start(storm)?]))
}

fn assemble(
    sims: &Sims,
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> Result<GatewayClient, ConfigError> {
    let urls: Vec<String> = sims.0.iter().map(SimHandle::base_url).collect();
    let mut map = demo_env_map([&urls[0], &urls[1], &urls[2]], telemetry, pricing);
    if let Some(dsn) = postgres_target(telemetry) {
        map.remove("PGW_TELEMETRY_SQLITE_PATH");
        map.insert("PGW_TELEMETRY_BACKEND".into(), "postgres".into());
        map.insert("PGW_TELEMETRY_PG_DSN".into(), dsn);
        map.insert("PGW_TELEMETRY_SCHEMA_MODE".into(), "auto".into());
    }
    GatewayClient::from_env_map("LLM", &map)
}

/// Runs `pgw demo`; returns the exit code (0, or 1 when the rows check fails).
pub async fn run(args: DemoArgs) -> u8 {
    let sims = match start_sims(args.seed) {
        Ok(s) => s,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: cannot start the simulators: {e}"));
            return exit::INTERNAL;
        }
    };
    let telemetry_path = args
        .telemetry
        .clone()
        .unwrap_or_else(default_telemetry_path);
    let pricing = match write_prices() {
        Ok(f) => f,
        Err(e) => {
            out::stderr_line(&format!("pgw demo: cannot write the price table: {e}"));
            return exit::INTERNAL;
        }
    };
    // A Postgres target: the password never printed; the run's rows are those created after
    // the server's clock reading taken here.
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
    let shown = postgres.as_ref().map_or_else(
        || telemetry_path.display().to_string(),
        adapter_postgres::ParsedDsn::redacted,
    );
    let run_start = match &postgres {
        Some(dsn) => match postgres_run_start(dsn).await {
            Ok(t) => Some(t),
            Err(e) => {
                out::stderr_line(&format!("pgw demo: {e}"));
                return exit::CONFIG;
            }
        },
        None => None,
    };
    let client = match assemble(&sims, &telemetry_path, pricing.path()) {
        Ok(c) => c,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    config::print_warnings(client.assembly_warnings());
    out::stderr_line(&format!(
        "pgw demo: {} calls at concurrency {} over healthy_1, hang_1, storm_1; telemetry {shown}",
        args.calls, args.concurrency,
    ));
    let bar = progress_bar(args.calls);
    let started = Instant::now();
    let facts = tokio::select! {
        facts = run_workload(&client, args.calls, args.concurrency, &bar) => facts,
        signal = signals::interrupted() => {
            bar.abandon();
            out::stderr_line(&format!("pgw demo: interrupted by {}; draining", signal.name()));
            client.close().await;
            if args.json {
                out::stdout_json(&signal.json());
            }
            return signal.exit_code();
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
    for sim in &sims.0 {
        sim.shutdown();
    }
    crate::demo_structured::showcase().await;
    let read = match (&postgres, run_start) {
        (Some(dsn), Some(start)) => read_postgres_telemetry(dsn, start).await,
        _ => read_telemetry(&telemetry_path).map_err(|e| e.to_string()),
    };
    let totals = match read {
        Ok(t) => t,
        Err(e) => {
            out::stderr_line(&format!(
                "pgw demo: cannot read the telemetry of {shown}: {e}"
            ));
            TelemetryTotals::default()
        }
    };
    let (summary, holds) = summarize(
        &args,
        &facts,
        elapsed_s,
        breaker_opens,
        std::path::Path::new(&shown),
        &totals,
    );
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
        assert_eq!(names, ["hang_1", "healthy_1", "storm_1"]);
    }
}
