//! Open-loop load generator for the `pgw serve` benchmark (run by `tools/serve/bench.sh`).
//!
//! ```text
//! serve_load TARGET... --rate R --duration-s D [--stream] [--warmup-s W]
//! TARGET = name=url|token|model   (token `-` = no Authorization header)
//! ```
//!
//! For each rate, each target in turn gets `R × D` requests started at fixed intervals (open
//! loop: a request never waits for an earlier answer), `POST url/chat/completions`. Latency is
//! measured from the moment the request is started to the end of the body (non-stream) or to
//! the first non-empty content delta (`--stream`: time to first token). Prints one JSON object a
//! line per (rate, target): p50, p90, p99, max in milliseconds, achieved rate and errors.
//!
//! The generator runs on one thread (a current-thread runtime), so it takes at most one core.

use std::sync::Arc;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

struct Target {
    name: String,
    url: String,
    token: Option<String>,
    model: String,
}

#[derive(Default)]
struct Samples {
    ms: Vec<f64>,
    errors: u64,
}

/// `name=url|token|model`; the error names the argument that is not of that form.
fn parse_target(spec: &str) -> Result<Target, String> {
    let (name, rest) = spec
        .split_once('=')
        .ok_or_else(|| format!("target `{spec}` is not name=url|token|model"))?;
    let mut parts = rest.split('|');
    let url = parts
        .next()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| format!("target `{name}` has no url"))?
        .trim_end_matches('/')
        .to_owned();
    let token = parts.next().filter(|t| *t != "-").map(str::to_owned);
    let model = parts.next().unwrap_or("m").to_owned();
    Ok(Target {
        name: name.to_owned(),
        url: format!("{url}/chat/completions"),
        token,
        model,
    })
}

/// The value after `flag`, parsed as a finite positive number of seconds or requests/s.
fn number(flag: &str, value: Option<String>) -> Result<f64, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{flag}: `{value}` is not a positive number")),
    }
}

/// The samples, also after a task panicked while holding the lock (its sample is lost only).
fn lock(samples: &Mutex<Samples>) -> MutexGuard<'_, Samples> {
    samples.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `true` once `text` holds a delta with non-empty `content`.
fn has_token(text: &str) -> bool {
    let mut rest = text;
    while let Some(i) = rest.find("\"content\":\"") {
        let after = &rest[i + 11..];
        if !after.starts_with('"') {
            return true;
        }
        rest = after;
    }
    false
}

async fn one(
    client: &reqwest::Client,
    t: &Target,
    body: &axum::body::Bytes,
    stream: bool,
) -> Option<f64> {
    let started = Instant::now();
    let mut req = client
        .post(&t.url)
        .header("content-type", "application/json")
        .body(body.clone());
    if let Some(token) = &t.token {
        req = req.bearer_auth(token);
    }
    let mut r = req.send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    if stream {
        let mut text = String::new();
        let mut ttft = None;
        while let Some(chunk) = r.chunk().await.ok()? {
            if ttft.is_none() {
                text.push_str(&String::from_utf8_lossy(&chunk));
                if has_token(&text) {
                    ttft = Some(started.elapsed());
                }
            }
        }
        ttft.map(|d| d.as_secs_f64() * 1e3)
    } else {
        r.bytes().await.ok()?;
        Some(started.elapsed().as_secs_f64() * 1e3)
    }
}

async fn run(
    client: &reqwest::Client,
    t: &Arc<Target>,
    rate: f64,
    duration_s: f64,
    stream: bool,
    record: bool,
) -> (Samples, f64) {
    let body = axum::body::Bytes::from(
        serde_json::json!({
            "model": t.model,
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        })
        .to_string(),
    );
    let n = (rate * duration_s).round() as u64;
    let samples = Arc::new(Mutex::new(Samples::default()));
    let mut tasks = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_nanos((i as f64 * 1e9 / rate) as u64))
            .await;
        let (client, t, body, samples) = (
            client.clone(),
            Arc::clone(t),
            body.clone(),
            Arc::clone(&samples),
        );
        tasks.push(tokio::spawn(async move {
            let r = one(&client, &t, &body, stream).await;
            let mut s = lock(&samples);
            match r {
                Some(ms) if record => s.ms.push(ms),
                Some(_) => {}
                None => s.errors += 1,
            }
        }));
    }
    let issued = start.elapsed().as_secs_f64();
    for task in tasks {
        let _ = task.await;
    }
    let s = std::mem::take(&mut *lock(&samples));
    (s, n as f64 / issued.max(1e-9))
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn main() -> std::process::ExitCode {
    match parse_args(std::env::args().skip(1)).and_then(|args| bench(&args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!(
                "serve_load: {message} (usage: see the top of gateway-cli/examples/serve_load.rs)"
            );
            std::process::ExitCode::from(2)
        }
    }
}

struct Args {
    targets: Vec<Arc<Target>>,
    rates: Vec<f64>,
    duration_s: f64,
    warmup_s: f64,
    stream: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        targets: Vec::new(),
        rates: Vec::new(),
        duration_s: 5.0,
        warmup_s: 1.0,
        stream: false,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rate" => parsed.rates.push(number("--rate", args.next())?),
            "--duration-s" => parsed.duration_s = number("--duration-s", args.next())?,
            "--warmup-s" => {
                let value = args.next().ok_or("--warmup-s needs a value")?;
                parsed.warmup_s = match value.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => v,
                    _ => return Err(format!("--warmup-s: `{value}` is not a number ≥ 0")),
                };
            }
            "--stream" => parsed.stream = true,
            spec => parsed.targets.push(Arc::new(parse_target(spec)?)),
        }
    }
    if parsed.targets.is_empty() || parsed.rates.is_empty() {
        return Err("at least one TARGET and one --rate are needed".to_owned());
    }
    Ok(parsed)
}

fn bench(args: &Args) -> Result<(), String> {
    let (targets, duration_s, warmup_s, stream) =
        (&args.targets, args.duration_s, args.warmup_s, args.stream);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .http1_only()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(4096)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        for &rate in &args.rates {
            for t in targets {
                if warmup_s > 0.0 {
                    run(&client, t, rate, warmup_s, stream, false).await;
                }
                let (mut s, achieved) = run(&client, t, rate, duration_s, stream, true).await;
                s.ms.sort_by(f64::total_cmp);
                println!(
                    "{}",
                    serde_json::json!({
                        "target": t.name,
                        "rate": rate,
                        "stream": stream,
                        "n": s.ms.len(),
                        "errors": s.errors,
                        "achieved_rps": (achieved * 10.0).round() / 10.0,
                        "p50_ms": pct(&s.ms, 0.50),
                        "p90_ms": pct(&s.ms, 0.90),
                        "p99_ms": pct(&s.ms, 0.99),
                        "max_ms": s.ms.last().copied().unwrap_or(f64::NAN),
                    })
                );
            }
        }
        Ok(())
    })
}
