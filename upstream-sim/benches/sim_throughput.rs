//! R-56 simulator throughput: the simulator on a `current_thread` runtime in its own thread (one
//! core), the load generator on another runtime (the other core), keep-alive connections sending
//! `POST /v1/chat/completions` for a ~300 B non-stream 200. Target ≥ 20 000 requests/s.
//!
//! Run: `cargo bench -p upstream-sim --bench sim_throughput` (prints one line of figures).
//! Environment: `SIM_BENCH_SECS` (default 3), `SIM_BENCH_CONNS` (default 32).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use upstream_sim::Sim;
use upstream_sim::script::{Completion, Response, Script};

const BODY: &str =
    r#"{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"stream":false}"#;

async fn client(addr: SocketAddr, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let mut buf = vec![0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        stream.write_all(request.as_bytes()).await.unwrap();
        // Read one response: head up to CRLFCRLF, then content-length bytes.
        let mut filled = 0;
        let (head_end, body_len) = loop {
            let n = stream.read(&mut buf[filled..]).await.unwrap();
            assert!(n > 0, "simulator closed the connection");
            filled += n;
            if let Some(pos) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&buf[..pos])
                    .unwrap()
                    .to_ascii_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .expect("non-stream response has a content-length");
                break (pos + 4, len);
            }
        };
        while filled < head_end + body_len {
            let n = stream.read(&mut buf[filled..]).await.unwrap();
            assert!(n > 0);
            filled += n;
        }
        assert_eq!(filled, head_end + body_len, "one response per request");
        done.fetch_add(1, Ordering::Relaxed);
    }
}

fn main() {
    let secs: u64 = std::env::var("SIM_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let conns: usize = std::env::var("SIM_BENCH_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    let mut completion = Completion::text("Hello from the simulator, a small body.");
    completion.chunks = 1;
    let mut response = Response::completion(completion);
    response.framing = upstream_sim::script::Framing::ContentLength;
    let script = Script::new(vec![response]);
    let sim = Sim::start_in_thread("127.0.0.1:0".parse().unwrap(), script).unwrap();
    sim.set_recording(false);
    let addr = sim.addr();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (total, elapsed) = rt.block_on(async move {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let tasks: Vec<_> = (0..conns)
            .map(|_| tokio::spawn(client(addr, stop.clone(), done.clone())))
            .collect();
        // Warm up for half a second, then measure.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let start_count = done.load(Ordering::Relaxed);
        let start = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        let total = done.load(Ordering::Relaxed) - start_count;
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            let _ = t.await;
        }
        (total, elapsed)
    });
    let rate = total as f64 / elapsed.as_secs_f64();
    println!(
        "sim_throughput: {total} requests in {:.2} s over {conns} keep-alive connections = {rate:.0} req/s (target >= 20000)",
        elapsed.as_secs_f64()
    );
    sim.shutdown();
}
