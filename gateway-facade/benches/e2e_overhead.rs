//! R-56 end to end: the added latency of a governed `GatewayClient::chat` over a bare reqwest
//! `POST /v1/chat/completions` to the same simulator, side by side in one run.
//!
//! Setup: two simulators (`upstream-sim`, each on its own `current_thread` runtime thread): one
//! streams a typical completion (8 content frames of 8 bytes, ~180 B `chat.completion.chunk`
//! frames, a finish frame, a usage frame, `[DONE]`; chunked framing), one answers a ~300 B
//! non-stream `chat.completion` with `Content-Length`. The load side is one `current_thread`
//! runtime. Governed clients are built with `GatewayClient::from_env_map` — memory limiter,
//! breaker and AIMD pacer, `MAX_CONCURRENCY=128`, SQLite telemetry on (`PGW_TELEMETRY_BACKEND=sqlite`,
//! a temp file). The bare client is reqwest with the adapter's configuration (rustls, HTTP/1.1
//! over `http://`, keep-alive pool, no redirects, no proxy); stream: the SSE body read to the
//! end; non-stream: the body read and parsed as JSON.
//!
//! Figures: concurrency 1 — p50/p99 latency per path and wire mode, and the added latency
//! (governed − bare); concurrency 64 — throughput per path and the ratio. Bare and governed run
//! in alternating blocks so machine load drifts hit both.
//!
//! Peer (issue 21): `async-openai` (typed `CreateChatCompletionRequest` built per call, typed
//! response; stream: `create_stream` read to the end, each chunk a typed
//! `CreateChatCompletionStreamResponse`), its own default reqwest client, same simulators.
//! Every table has a bare, a peer and a governed column, measured in one run.
//!
//! Allocations: the bench's global allocator counts them (`stats_alloc`); the concurrency-1
//! table prints allocations per call for each path (whole process; `tools/e2e_dhat.py` splits
//! them by thread role and allocation site).
//!
//! Run: `cargo bench -p polygateway --bench e2e_overhead`.
//! Environment: `E2E_WARMUP` (governed warm-up calls per source, default 5000), `E2E_CALLS`
//! (measured calls per cell at concurrency 1, default 10000), `E2E_BLOCK` (calls per alternating
//! block, default 1000), `E2E_CONC` (default 64), `E2E_TPUT_SECS` (seconds per throughput slice,
//! default 2), `E2E_ROUNDS` (alternating throughput slices per path, default 2), `E2E_TELEMETRY` (`sqlite` default; `none` for diagnosis).
//!
//! Instruction counts: `E2E_CALLGRIND=<bare|peer|governed|chatstream>-<stream|json>` with
//! `E2E_CALLGRIND_CALLS=N` (and a small `E2E_WARMUP`) runs only warm-up + N sequential calls of
//! that kind and exits, so `valgrind --tool=callgrind` whole-process totals at two values of N
//! give instructions per call as ΔIr / ΔN (client, simulator and SQLite writer threads
//! included); with `--separate-threads=yes` one file per thread gives the components (the main
//! thread is the client and the emitter's hand-off, `pgw-telemetry-sqlite` the writer, the
//! simulator's runtime threads the simulator). `tools/e2e_callgrind.py` runs all of it;
//! `tools/e2e_dhat.py` counts allocations per call and site the same way. `chatstream` is
//! `chat_stream` read to its `Done` (the streamed-to-the-caller path; callgrind mode only).
//!
//! Diagnosis: `E2E_TPUT_ONLY=<bare|peer|governed|chatstream>-<stream|json>` runs only one path's
//! concurrency-`E2E_CONC` throughput slice (`E2E_TPUT_SECS`, default 5), for `perf stat`.
//!
//! Memory: `E2E_RSS=1` runs `E2E_RSS_CALLS` (default 1 000 000) governed non-stream calls at
//! concurrency `E2E_CONC` and prints the resident set size after 100 000 and after every
//! further 100 000 calls.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, ChatCompletionStreamOptions, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs,
};
use futures_util::StreamExt;
use polygateway::{ChatOptions, EnvMap, GatewayClient};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tokio::time::Instant;
use upstream_sim::script::{Completion, Framing, Response, Script};
use upstream_sim::{Sim, SimHandle};

const KEY: &str = "sk-bench-e2e-0123456789";
const MODEL: &str = "sim-model";
/// 64 content bytes in 8 frames of 8 bytes.
const STREAM_CONTENT: &str = "The quick brown fox jumps over a lazy dog; the end of stream!!!!";
/// Gives a ~300 B `chat.completion` body.
const JSON_CONTENT: &str = "Hello from the simulator, a small body.";
const PROMPT: &str = "Say hello.";

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// Allocations so far (the whole process).
fn allocations() -> usize {
    GLOBAL.stats().allocations + GLOBAL.stats().reallocations
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Stream,
    Json,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Stream => "stream",
            Kind::Json => "non-stream",
        }
    }
}

fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn start_sim(kind: Kind) -> SimHandle {
    let (content, framing) = match kind {
        Kind::Stream => (STREAM_CONTENT, Framing::Chunked),
        Kind::Json => (JSON_CONTENT, Framing::ContentLength),
    };
    let mut completion = Completion::text(content);
    completion.chunks = 8;
    let mut response = Response::completion(completion);
    response.framing = framing;
    let sim = Sim::start_in_thread(
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        Script::new(vec![response]),
    )
    .unwrap();
    sim.set_recording(false);
    sim
}

fn governed_env(sim: &SimHandle, telemetry: &Path) -> EnvMap {
    let p = "LLM__SIM__1__";
    [
        // `E2E_TELEMETRY=none` turns telemetry off, to tell its share apart (diagnosis only;
        // R-56 figures are taken with SQLite telemetry on).
        (
            "PGW_TELEMETRY_BACKEND".to_owned(),
            std::env::var("E2E_TELEMETRY").unwrap_or_else(|_| "sqlite".to_owned()),
        ),
        (
            "PGW_TELEMETRY_SQLITE_PATH".to_owned(),
            telemetry.to_string_lossy().into_owned(),
        ),
        (format!("{p}BASE_URL"), sim.base_url()),
        (format!("{p}API_KEY"), KEY.to_owned()),
        (format!("{p}MODEL"), MODEL.to_owned()),
        (format!("{p}TIMEOUT_S"), "10".to_owned()),
        (format!("{p}MAX_CONCURRENCY"), "128".to_owned()),
    ]
    .into_iter()
    .collect()
}

/// The adapter's reqwest configuration (adapter-openai `SourceClient::build`).
fn bare_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .use_rustls_tls()
        .no_proxy()
        .build()
        .unwrap()
}

/// One side of the comparison: a bare reqwest call or a governed chat.
#[derive(Clone)]
enum Caller {
    Bare {
        client: reqwest::Client,
        url: String,
        body: bytes::Bytes,
    },
    Peer(async_openai::Client<OpenAIConfig>),
    Governed(GatewayClient),
    /// `chat_stream` read to its `Done` (callgrind mode `chatstream-stream` only).
    Streamed(GatewayClient),
}

/// The typed request a user of `async-openai` builds for each call.
fn peer_request(kind: Kind) -> CreateChatCompletionRequest {
    let mut args = CreateChatCompletionRequestArgs::default();
    args.model(MODEL)
        .messages([ChatCompletionRequestUserMessageArgs::default()
            .content(PROMPT)
            .build()
            .unwrap()
            .into()]);
    if kind == Kind::Stream {
        args.stream(true)
            .stream_options(ChatCompletionStreamOptions {
                include_usage: Some(true),
                include_obfuscation: None,
            });
    }
    args.build().unwrap()
}

impl Caller {
    fn bare(sim: &SimHandle, kind: Kind) -> Self {
        let body = match kind {
            Kind::Stream => format!(
                r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"{PROMPT}"}}],"stream":true,"stream_options":{{"include_usage":true}}}}"#
            ),
            Kind::Json => format!(
                r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"{PROMPT}"}}],"stream":false}}"#
            ),
        };
        Caller::Bare {
            client: bare_client(),
            url: format!("{}/chat/completions", sim.base_url()),
            body: bytes::Bytes::from(body),
        }
    }

    fn peer(sim: &SimHandle) -> Self {
        let config = OpenAIConfig::new()
            .with_api_base(sim.base_url())
            .with_api_key(KEY);
        Caller::Peer(async_openai::Client::with_config(config))
    }

    /// One call; returns the number of response body bytes (bare) or content bytes (peer,
    /// governed).
    async fn call(&self, kind: Kind) -> usize {
        match self {
            Caller::Bare { client, url, body } => {
                let mut response = client
                    .post(url)
                    .bearer_auth(KEY)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .expect("bare request");
                assert!(response.status().is_success());
                match kind {
                    Kind::Stream => {
                        let mut n = 0;
                        while let Some(chunk) = response.chunk().await.expect("bare body") {
                            n += chunk.len();
                        }
                        n
                    }
                    Kind::Json => {
                        let bytes = response.bytes().await.expect("bare body");
                        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                        assert!(v.get("choices").is_some());
                        bytes.len()
                    }
                }
            }
            Caller::Peer(client) => match kind {
                Kind::Stream => {
                    let mut stream = client
                        .chat()
                        .create_stream(peer_request(kind))
                        .await
                        .expect("peer stream");
                    let mut n = 0;
                    while let Some(chunk) = stream.next().await {
                        let chunk = chunk.expect("peer chunk");
                        if let Some(choice) = chunk.choices.first() {
                            n += choice.delta.content.as_deref().map_or(0, str::len);
                        }
                    }
                    n
                }
                Kind::Json => {
                    let r = client
                        .chat()
                        .create(peer_request(kind))
                        .await
                        .expect("peer chat");
                    r.choices[0].message.content.as_deref().map_or(0, str::len)
                }
            },
            Caller::Governed(client) => {
                let r = client
                    .chat(PROMPT, ChatOptions::new().stream(kind == Kind::Stream))
                    .await
                    .expect("governed chat");
                r.content.len()
            }
            Caller::Streamed(client) => {
                let mut stream =
                    client.chat_stream(PROMPT, ChatOptions::new().stream(kind == Kind::Stream));
                let mut n = 0;
                while let Some(event) = stream.next().await {
                    if let polygateway::StreamEvent::Delta(delta) = event.expect("governed stream")
                    {
                        n += delta.content.len();
                    }
                }
                n
            }
        }
    }
}

/// Sequential calls; pushes each latency in nanoseconds.
async fn run_seq(caller: &Caller, kind: Kind, n: u64, out: &mut Vec<u64>) {
    for _ in 0..n {
        let start = Instant::now();
        std::hint::black_box(caller.call(kind).await);
        out.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
}

/// `conc` tasks calling back to back for `secs`; returns calls per second.
async fn run_tput(caller: &Caller, kind: Kind, conc: u64, secs: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..conc)
        .map(|_| {
            let (caller, stop, done) = (caller.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(caller.call(kind).await);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    // Let the pool fill and the tasks reach steady state before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let first = done.load(Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let total = done.load(Ordering::Relaxed) - first;
    let elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    total as f64 / elapsed.as_secs_f64()
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

struct Side {
    kind: Kind,
    bare: Caller,
    peer: Caller,
    governed: Caller,
}

async fn bench(dir: &Path, sims: &[(Kind, SimHandle)]) {
    let warmup = env_u64("E2E_WARMUP", 5000);
    let calls = env_u64("E2E_CALLS", 10_000);
    let block = env_u64("E2E_BLOCK", 1000).max(1);
    let conc = env_u64("E2E_CONC", 64);
    let secs = env_u64("E2E_TPUT_SECS", 2);
    let rounds = env_u64("E2E_ROUNDS", 2);

    let mut sides = Vec::new();
    for (kind, sim) in sims {
        let db = dir.join(format!("telemetry-{}.db", kind.name()));
        let client = GatewayClient::from_env_map("LLM", &governed_env(sim, &db)).unwrap();
        sides.push(Side {
            kind: *kind,
            bare: Caller::bare(sim, *kind),
            peer: Caller::peer(sim),
            governed: Caller::Governed(client),
        });
    }

    // Wire shapes, from one bare call each.
    for side in &sides {
        println!(
            "shape {:<10}: bare response body {} B; peer content {} B; governed content {} B",
            side.kind.name(),
            side.bare.call(side.kind).await,
            side.peer.call(side.kind).await,
            side.governed.call(side.kind).await
        );
    }

    let t0 = Instant::now();
    let mut scratch = Vec::new();
    for side in &sides {
        run_seq(&side.governed, side.kind, warmup, &mut scratch).await;
        run_seq(&side.bare, side.kind, warmup / 5, &mut scratch).await;
        run_seq(&side.peer, side.kind, warmup / 5, &mut scratch).await;
    }
    println!(
        "warm-up: {warmup} governed + {} bare + {} peer calls per wire mode in {:.1} s",
        warmup / 5,
        warmup / 5,
        t0.elapsed().as_secs_f64()
    );

    println!();
    println!(
        "concurrency 1 ({calls} calls per cell, alternating blocks of {block}), latency in µs"
    );
    println!(
        "{:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "mode",
        "bare p50",
        "peer p50",
        "gov p50",
        "added",
        "bare p99",
        "peer p99",
        "gov p99",
        "added",
        "bare avg",
        "gov avg",
        "bare alc",
        "peer alc",
        "gov alc"
    );
    for side in &sides {
        let (mut bare, mut peer, mut gov) = (Vec::new(), Vec::new(), Vec::new());
        let mut allocs = [0usize; 3];
        let mut left = calls;
        let mut flip = false;
        while left > 0 {
            let n = left.min(block);
            let order: [usize; 3] = if flip { [2, 1, 0] } else { [0, 1, 2] };
            for which in order {
                let (caller, out) = match which {
                    0 => (&side.bare, &mut bare),
                    1 => (&side.peer, &mut peer),
                    _ => (&side.governed, &mut gov),
                };
                let before = allocations();
                run_seq(caller, side.kind, n, out).await;
                allocs[which] += allocations() - before;
            }
            flip = !flip;
            left -= n;
        }
        bare.sort_unstable();
        peer.sort_unstable();
        gov.sort_unstable();
        let avg = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64 / 1000.0;
        let (b50, p50, g50, b99, p99, g99) = (
            pct(&bare, 0.5),
            pct(&peer, 0.5),
            pct(&gov, 0.5),
            pct(&bare, 0.99),
            pct(&peer, 0.99),
            pct(&gov, 0.99),
        );
        let per = |a: usize| a as f64 / calls.max(1) as f64;
        println!(
            "{:<11} {b50:>9.1} {p50:>9.1} {g50:>9.1} {:>9.1} {b99:>9.1} {p99:>9.1} {g99:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
            side.kind.name(),
            g50 - b50,
            g99 - b99,
            avg(&bare),
            avg(&gov),
            per(allocs[0]),
            per(allocs[1]),
            per(allocs[2])
        );
    }
    println!("(allocations per call include the simulator's and the SQLite writer's)");

    println!();
    println!("concurrency {conc} ({rounds} alternating slices of {secs} s per path), calls/s");
    println!(
        "{:<11} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "mode", "bare", "peer", "governed", "gov/bare", "gov/peer"
    );
    for side in &sides {
        let (mut bare, mut peer, mut gov) = (0.0, 0.0, 0.0);
        for r in 0..rounds {
            if r % 2 == 0 {
                bare += run_tput(&side.bare, side.kind, conc, secs).await;
                peer += run_tput(&side.peer, side.kind, conc, secs).await;
                gov += run_tput(&side.governed, side.kind, conc, secs).await;
            } else {
                gov += run_tput(&side.governed, side.kind, conc, secs).await;
                peer += run_tput(&side.peer, side.kind, conc, secs).await;
                bare += run_tput(&side.bare, side.kind, conc, secs).await;
            }
        }
        let r = rounds.max(1) as f64;
        println!(
            "{:<11} {:>10.0} {:>10.0} {:>10.0} {:>9.3} {:>9.3}",
            side.kind.name(),
            bare / r,
            peer / r,
            gov / r,
            gov / bare,
            gov / peer
        );
    }

    println!();
    for side in sides {
        if let Caller::Governed(client) = side.governed {
            client.close().await;
            let s = client.telemetry_status();
            println!(
                "telemetry {:<10}: backend {}, written {} rows, dropped {}, degraded {}",
                side.kind.name(),
                s.backend,
                s.written_rows,
                s.dropped_rows,
                s.degraded
            );
        }
    }
    println!("total bench time {:.1} s", t0.elapsed().as_secs_f64());
}

/// The caller and wire mode named by a diagnosis mode's `<path>-<stream|json>` (`mode` names
/// the environment key in the panic message).
fn one_caller(dir: &Path, mode: &str, spec: &str, sims: &[(Kind, SimHandle)]) -> (Caller, Kind) {
    let (path, kind) = spec
        .split_once('-')
        .unwrap_or_else(|| panic!("{mode}=<bare|peer|governed|chatstream>-<stream|json>"));
    let kind = match kind {
        "stream" => Kind::Stream,
        "json" => Kind::Json,
        other => panic!("unknown kind {other}"),
    };
    let sim = &sims.iter().find(|(k, _)| *k == kind).unwrap().1;
    let governed = || {
        let db = dir.join("telemetry.db");
        GatewayClient::from_env_map("LLM", &governed_env(sim, &db)).unwrap()
    };
    let caller = match path {
        "bare" => Caller::bare(sim, kind),
        "peer" => Caller::peer(sim),
        "governed" => Caller::Governed(governed()),
        "chatstream" => Caller::Streamed(governed()),
        other => panic!("unknown path {other}"),
    };
    (caller, kind)
}

/// `E2E_CALLGRIND` mode: warm-up and N calls of one kind on one path, nothing else.
async fn callgrind(dir: &Path, spec: &str, sims: &[(Kind, SimHandle)]) {
    let (caller, kind) = one_caller(dir, "E2E_CALLGRIND", spec, sims);
    let warmup = env_u64("E2E_WARMUP", 200);
    let n = env_u64("E2E_CALLGRIND_CALLS", 1000);
    let mut scratch = Vec::with_capacity(usize::try_from(warmup + n).unwrap_or(0));
    run_seq(&caller, kind, warmup, &mut scratch).await;
    run_seq(&caller, kind, n, &mut scratch).await;
    if let Caller::Governed(client) | Caller::Streamed(client) = caller {
        client.close().await;
    }
    println!("callgrind mode {spec}: {warmup} warm-up + {n} calls");
}

/// `E2E_TPUT_ONLY=<bare|peer|governed|chatstream>-<stream|json>` mode: warm-up, then only the concurrency
/// `E2E_CONC` throughput slice of one path for `E2E_TPUT_SECS`, so `perf stat` counts (cycles,
/// instructions, cache misses, context switches) belong to that path alone (diagnosis).
async fn tput_only(dir: &Path, spec: &str, sims: &[(Kind, SimHandle)]) {
    let (caller, kind) = one_caller(dir, "E2E_TPUT_ONLY", spec, sims);
    let mut scratch = Vec::new();
    run_seq(&caller, kind, env_u64("E2E_WARMUP", 2000), &mut scratch).await;
    let conc = env_u64("E2E_CONC", 64);
    let secs = env_u64("E2E_TPUT_SECS", 5);
    let rate = run_tput(&caller, kind, conc, secs).await;
    let dropped = if let Caller::Governed(client) | Caller::Streamed(client) = &caller {
        client.close().await;
        client.telemetry_status().dropped_rows
    } else {
        0
    };
    println!("tput-only {spec}: concurrency {conc}, {rate:.0} calls/s, {dropped} rows dropped");
}

/// Resident set size in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `E2E_RSS` mode: governed non-stream calls at concurrency `E2E_CONC`, RSS every 100 000.
async fn rss(dir: &Path, sims: &[(Kind, SimHandle)]) {
    let total = env_u64("E2E_RSS_CALLS", 1_000_000);
    let conc = env_u64("E2E_CONC", 64);
    let sim = &sims.iter().find(|(k, _)| *k == Kind::Json).unwrap().1;
    let db = dir.join("telemetry-rss.db");
    let client = GatewayClient::from_env_map("LLM", &governed_env(sim, &db)).unwrap();
    let caller = Caller::Governed(client.clone());
    let step = 100_000u64;
    let next = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    println!("rss: start {} KiB", rss_kib());
    let mut done_to = 0;
    while done_to < total {
        let target = (done_to + step).min(total);
        let tasks: Vec<_> = (0..conc)
            .map(|_| {
                let (caller, next) = (caller.clone(), next.clone());
                tokio::spawn(async move {
                    while next.fetch_add(1, Ordering::Relaxed) < target {
                        std::hint::black_box(caller.call(Kind::Json).await);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        next.store(target, Ordering::Relaxed);
        done_to = target;
        let s = client.telemetry_status();
        println!(
            "rss: after {done_to} governed calls {} KiB ({:.0} s; rows written {}, dropped {})",
            rss_kib(),
            t0.elapsed().as_secs_f64(),
            s.written_rows,
            s.dropped_rows
        );
    }
    client.close().await;
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let dir = tempfile::tempdir().unwrap();
    let sims = [
        (Kind::Stream, start_sim(Kind::Stream)),
        (Kind::Json, start_sim(Kind::Json)),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mode = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
    match (mode("E2E_CALLGRIND"), mode("E2E_TPUT_ONLY")) {
        (Some(spec), _) => rt.block_on(callgrind(dir.path(), &spec, &sims)),
        (None, Some(spec)) => rt.block_on(tput_only(dir.path(), &spec, &sims)),
        _ if std::env::var("E2E_RSS").is_ok_and(|v| v == "1") => {
            rt.block_on(rss(dir.path(), &sims));
        }
        _ => rt.block_on(bench(dir.path(), &sims)),
    }
    for (_, sim) in &sims {
        sim.shutdown();
    }
}
