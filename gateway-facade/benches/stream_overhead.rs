//! What streaming through the gateway adds (issue 24): the caller's time to first token minus
//! the upstream's, and the added latency per later chunk. Not a timed test: it prints tables
//! for `docs/benchmarks.md`.
//!
//! Setup: one `upstream-sim` on 127.0.0.1 (its own `current_thread` runtime thread) streams a
//! completion of `STREAM_CHUNKS` content frames (chunked framing, one HTTP chunk per frame), the
//! first after `STREAM_TTFT_MS`, the later ones `STREAM_GAP_MS` apart, then finish, usage and
//! `[DONE]`. The load side is one `current_thread` runtime. Two measurements, in one run:
//!
//! 1. **Beside a bare reader.** Alternating blocks of (a) a bare reqwest SSE reader (the
//!    adapter's reqwest configuration; it splits the body into `data:` lines, parses each JSON
//!    and notes the arrival of every frame with content) and (b) the governed
//!    `GatewayClient::chat_stream` (memory limiter, breaker, pacer; no telemetry), noting the
//!    arrival of every `Delta` at the caller. TTFT = request start → first content; gaps =
//!    between consecutive content arrivals. The added TTFT is governed − bare per percentile;
//!    the added gap likewise (the upstream's timer jitter is in both).
//! 2. **The gateway's own hop, same stream.** The governed client's transport is the real
//!    `OpenAiTransport` wrapped in a decorator that stamps the instant each wire event leaves
//!    the transport. Per call: request side = first poll of the stream → the transport's `send`;
//!    first-token hop = first content chunk out of the transport → first `Delta` at the caller
//!    (accumulator, verdict, commit point, buffer, poll); chunk hop = the same for each later
//!    content chunk.
//!
//! Run: `cargo bench -p polygateway --bench stream_overhead`.
//! Environment: `STREAM_CALLS` (calls per path, default 1000), `STREAM_BLOCK` (calls per
//! alternating block, default 50), `STREAM_WARMUP` (default 200), `STREAM_CHUNKS` (default 16),
//! `STREAM_TTFT_MS` (default 2), `STREAM_GAP_MS` (default 1), `STREAM_SPLIT` (default 1; `0`
//! runs the plain memory limiter without the stamping hook that splits the request side).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt as _;
use gateway_core::clock::TokioClock;
use gateway_core::memory::MemoryRateLimiter;
use gateway_ports::{
    ChatTransport, GlobalLimits, RateLimiter, WireEvent, WireFailure, WireRequest, WireResponse,
};
use gateway_testkit::hooked::{Effect, HookedLimiter, LimiterCall};
use polygateway::{
    ChatOptions, GatewayClient, OpenAiTransport, SourceConfig, StreamEvent, TransportOptions,
};
use tokio::time::Instant;
use upstream_sim::script::{Completion, Framing, Response, Script};
use upstream_sim::{Sim, SimHandle};

const KEY: &str = "sk-bench-stream-0123456789";
const MODEL: &str = "sim-model";
const PROMPT: &str = "Say hello.";

fn env_u64(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Shape {
    chunks: u32,
    ttft_ms: u64,
    gap_ms: u64,
}

fn start_sim(shape: &Shape) -> SimHandle {
    // Two characters per content frame.
    let content: String = (0..shape.chunks)
        .map(|i| format!("{:02}", i % 100))
        .collect();
    let mut completion = Completion::text(content);
    completion.chunks = shape.chunks;
    completion.ttft_ms = shape.ttft_ms;
    completion.inter_chunk_ms = shape.gap_ms;
    let mut response = Response::completion(completion);
    response.framing = Framing::Chunked;
    let sim = Sim::start_in_thread(
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        Script::new(vec![response]),
    )
    .unwrap();
    sim.set_recording(false);
    sim
}

fn source(sim: &SimHandle) -> SourceConfig {
    let mut s = SourceConfig::new(
        "sim_1",
        "sim",
        sim.base_url(),
        Some(KEY.to_owned().into()),
        MODEL,
    );
    s.timeout_s = 10.0;
    s.max_concurrency = 128;
    s
}

/// Instants at which the wrapped transport handed out its wire events (chunks only).
#[derive(Default)]
struct Stamps {
    /// The governor's limiter admission began (`try_acquire` entered).
    acquire: Option<Instant>,
    send: Option<Instant>,
    chunks: Vec<Instant>,
}

/// `OpenAiTransport` with an arrival stamp on every chunk it yields.
struct Stamping {
    inner: OpenAiTransport,
    stamps: Arc<Mutex<Stamps>>,
}

#[async_trait]
impl ChatTransport for Stamping {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        {
            let mut s = self.stamps.lock().unwrap();
            s.send = Some(Instant::now());
            s.chunks.clear();
        }
        match self.inner.send(request).await? {
            WireResponse::Events {
                headers,
                content_type,
                events,
            } => {
                let stamps = Arc::clone(&self.stamps);
                let events = events.map(move |event| {
                    if let WireEvent::Chunk(chunk) = &event
                        && chunk.as_str().contains("\"content\":\"")
                    {
                        stamps.lock().unwrap().chunks.push(Instant::now());
                    }
                    event
                });
                Ok(WireResponse::Events {
                    headers,
                    content_type,
                    events: Box::pin(events),
                })
            }
            other => Ok(other),
        }
    }
}

fn bare_client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .use_rustls_tls()
        .no_proxy()
        .build()
        .unwrap()
}

/// Arrival instants of one call's content, relative to its start.
struct Trace {
    start: Instant,
    arrivals: Vec<Instant>,
}

/// A bare SSE reader: `data:` lines split out of the body, each JSON parsed, content noted.
async fn bare_call(client: &reqwest::Client, url: &str, body: &bytes::Bytes) -> Trace {
    let start = Instant::now();
    let mut response = client
        .post(url)
        .bearer_auth(KEY)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .expect("bare request");
    assert!(response.status().is_success());
    let mut arrivals = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("bare body") {
        let now = Instant::now();
        buf.extend_from_slice(&chunk);
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let Some(data) = event.strip_prefix(b"data: ") else {
                continue;
            };
            let data = &data[..data.len() - 2];
            if data == b"[DONE]" {
                continue;
            }
            let v: serde_json::Value = serde_json::from_slice(data).expect("bare json");
            let has_content = v["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|c| !c.is_empty());
            if has_content {
                arrivals.push(now);
            }
        }
    }
    Trace { start, arrivals }
}

/// The governed stream; arrival of every content `Delta` at the caller.
async fn governed_call(client: &GatewayClient) -> Trace {
    let mut stream = client.chat_stream(PROMPT, ChatOptions::new().stream(true));
    let start = Instant::now();
    let mut arrivals = Vec::new();
    while let Some(event) = stream.next().await {
        match event.expect("governed stream") {
            StreamEvent::Delta(d) if !d.content.is_empty() => arrivals.push(Instant::now()),
            _ => {}
        }
    }
    Trace { start, arrivals }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[derive(Default)]
struct Series {
    ttft: Vec<u64>,
    gaps: Vec<u64>,
}

impl Series {
    fn add(&mut self, trace: &Trace, chunks: usize) {
        assert_eq!(trace.arrivals.len(), chunks, "every content frame arrived");
        self.ttft.push(ns(trace.arrivals[0] - trace.start));
        for w in trace.arrivals.windows(2) {
            self.gaps.push(ns(w[1] - w[0]));
        }
    }
    fn sort(&mut self) {
        self.ttft.sort_unstable();
        self.gaps.sort_unstable();
    }
}

fn row(name: &str, bare: &[u64], gov: &[u64]) {
    let (b, g): (Vec<f64>, Vec<f64>) = [0.5, 0.9, 0.99]
        .iter()
        .map(|p| (pct(bare, *p), pct(gov, *p)))
        .unzip();
    println!(
        "| {name} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} / {:.1} | **{:.1}** / {:.1} / {:.1} |",
        b[0],
        b[1],
        b[2],
        g[0],
        g[1],
        g[2],
        g[0] - b[0],
        g[1] - b[1],
        g[2] - b[2]
    );
}

fn hop_row(name: &str, v: &[u64]) {
    println!(
        "| {name} | {} | {:.1} | {:.1} | {:.1} |",
        v.len(),
        pct(v, 0.5),
        pct(v, 0.9),
        pct(v, 0.99)
    );
}

fn uptime() -> String {
    std::process::Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|e| format!("uptime unavailable: {e}"))
}

async fn bench(sim: &SimHandle, shape: &Shape) {
    let calls = env_u64("STREAM_CALLS", 1000);
    let block = env_u64("STREAM_BLOCK", 50).max(1);
    let warmup = env_u64("STREAM_WARMUP", 200);
    let chunks = usize::try_from(shape.chunks).unwrap();

    let stamps = Arc::new(Mutex::new(Stamps::default()));
    let src = source(sim);
    let transport = Stamping {
        inner: OpenAiTransport::new([&src], TransportOptions::default()).unwrap(),
        stamps: Arc::clone(&stamps),
    };
    // The memory limiter behind the test kit's forwarding double, whose before hook stamps the
    // moment admission asks it: splits the request side into the part before the limiter (the
    // stream's driver, opening the call, selection, breaker, pacer) and the part after it (the
    // limiter, the attempt step, the request build).
    // `STREAM_SPLIT=0`: the plain memory limiter, no hook, so the request side is measured
    // without the split's own stamp (a lock, a clock read and one more forwarding future).
    let split = env_u64("STREAM_SPLIT", 1) != 0;
    let memory = Arc::new(MemoryRateLimiter::new(
        "bench",
        std::slice::from_ref(&src),
        GlobalLimits::default(),
        100.0,
        Arc::new(TokioClock::new()),
    ));
    let limiter: Arc<dyn RateLimiter> = if split {
        let hooked = HookedLimiter::new(memory);
        let acquire_stamps = Arc::clone(&stamps);
        hooked.before(move |call| {
            if matches!(call, LimiterCall::TryAcquire { .. }) {
                acquire_stamps.lock().unwrap().acquire = Some(Instant::now());
            }
            Effect::Forward
        });
        Arc::new(hooked)
    } else {
        memory
    };
    let client = GatewayClient::builder()
        .sources(vec![src])
        .transport(Arc::new(transport))
        .limiter(limiter)
        .build()
        .unwrap();
    let bare = bare_client();
    let url = format!("{}/chat/completions", sim.base_url());
    let body = bytes::Bytes::from(format!(
        r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"{PROMPT}"}}],"stream":true,"stream_options":{{"include_usage":true}}}}"#
    ));

    println!("uptime before: {}", uptime());
    println!(
        "shape: {} content frames, first after {} ms, then every {} ms; {calls} calls per path \
         in alternating blocks of {block}, {warmup} warm-up calls each",
        shape.chunks, shape.ttft_ms, shape.gap_ms
    );
    for _ in 0..warmup {
        governed_call(&client).await;
        bare_call(&bare, &url, &body).await;
    }

    let (mut b, mut g) = (Series::default(), Series::default());
    let (mut request_side, mut first_hop, mut chunk_hop) = (Vec::new(), Vec::new(), Vec::new());
    let (mut before_limiter, mut after_limiter) = (Vec::new(), Vec::new());
    let mut gov_upstream = Vec::new();
    let mut left = calls;
    let mut flip = false;
    while left > 0 {
        let n = left.min(block);
        for turn in [flip, !flip] {
            for _ in 0..n {
                if turn {
                    let trace = governed_call(&client).await;
                    g.add(&trace, chunks);
                    let s = stamps.lock().unwrap();
                    assert_eq!(s.chunks.len(), chunks, "stamped every content chunk");
                    request_side.push(ns(s.send.unwrap() - trace.start));
                    if let Some(acquire) = s.acquire {
                        before_limiter.push(ns(acquire - trace.start));
                        after_limiter.push(ns(s.send.unwrap() - acquire));
                    }
                    gov_upstream.push(ns(s.chunks[0] - s.send.unwrap()));
                    first_hop.push(ns(trace.arrivals[0] - s.chunks[0]));
                    for (caller, wire) in trace.arrivals.iter().zip(&s.chunks).skip(1) {
                        chunk_hop.push(ns(*caller - *wire));
                    }
                } else {
                    b.add(&bare_call(&bare, &url, &body).await, chunks);
                }
            }
        }
        flip = !flip;
        left -= n;
    }
    b.sort();
    g.sort();
    request_side.sort_unstable();
    before_limiter.sort_unstable();
    after_limiter.sort_unstable();
    first_hop.sort_unstable();
    chunk_hop.sort_unstable();
    gov_upstream.sort_unstable();

    println!();
    println!("Beside a bare reader (µs, p50 / p90 / p99):");
    println!();
    println!("| measure | bare reader | governed `chat_stream` | added |");
    println!("| --- | --- | --- | --- |");
    row("time to first token", &b.ttft, &g.ttft);
    row("inter-chunk gap", &b.gaps, &g.gaps);
    println!();
    println!("The gateway's own hop on the same stream (µs):");
    println!();
    println!("| hop | samples | p50 | p90 | p99 |");
    println!("| --- | --- | --- | --- | --- |");
    hop_row("request side (first poll → transport send)", &request_side);
    if split {
        hop_row("… of which first poll → limiter admission", &before_limiter);
        hop_row(
            "… of which limiter admission → transport send",
            &after_limiter,
        );
    }
    hop_row("first token (transport → caller)", &first_hop);
    hop_row("later chunk (transport → caller)", &chunk_hop);
    println!();
    println!("The upstream leg (µs, p50 / p90 / p99; the governed transport's `send` resolves");
    println!("only once the first event is in, so head and first chunk are not split):");
    println!();
    println!("| phase | bare reader | governed transport | added |");
    println!("| --- | --- | --- | --- |");
    row("request sent → first content chunk", &b.ttft, &gov_upstream);
    println!();
    println!("uptime after: {}", uptime());
    client.close().await;
}

fn main() {
    let shape = Shape {
        chunks: u32::try_from(env_u64("STREAM_CHUNKS", 16)).unwrap().max(2),
        ttft_ms: env_u64("STREAM_TTFT_MS", 2),
        gap_ms: env_u64("STREAM_GAP_MS", 1),
    };
    let sim = start_sim(&shape);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench(&sim, &shape));
    sim.shutdown();
}
