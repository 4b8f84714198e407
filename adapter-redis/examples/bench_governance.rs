//! Governance cost per call, Redis vs memory (issue 15 benchmark; docs/benchmarks.md "Redis
//! governance"). Starts a private `redis-server` on a free port, then for each backend and
//! concurrency (1 and 64) runs the governance sequence of one successful governed call —
//! `try_enter`, `try_acquire`, `settle_then_release`, `record_success`, `mark_progress` — and
//! prints p50/p99 per call and the `EVALSHA` round trips per call from `INFO commandstats`.
//!
//! `cargo run --release -p adapter-redis --example bench_governance [calls_per_task]`
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisOptions, RedisRateLimiter};
use gateway_core::clock::TokioClock;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    Acquire, BreakerConfig, CircuitBreaker, GlobalLimits, RateLimiter, SourceConfig,
};
use tokio::time::Instant;

fn source() -> SourceConfig {
    let mut s = SourceConfig::new("a", "bench", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = 1000;
    s.rpm = 0;
    s.tpm = 0;
    s
}

async fn one_call(l: &dyn RateLimiter, b: &dyn CircuitBreaker, owner: &str) {
    let d = b.try_enter("a", owner).await.expect("try_enter");
    assert!(d.allowed);
    let Acquire::Granted(p) = l.try_acquire("a", 100).await.expect("acquire") else {
        panic!("denied");
    };
    if !p.settle_and_release_now(80) {
        p.settle_then_release(80)
            .await
            .expect("settle_then_release");
    }
    b.record_success(&d, true).await.expect("record_success");
    l.mark_progress().await.expect("mark_progress");
}

async fn run(
    l: Arc<dyn RateLimiter>,
    b: Arc<dyn CircuitBreaker>,
    tasks: usize,
    calls: usize,
) -> (Vec<Duration>, Duration) {
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (l, b) = (Arc::clone(&l), Arc::clone(&b));
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(calls);
            for i in 0..calls {
                let s = Instant::now();
                one_call(&*l, &*b, &format!("c{t}-{i}")).await;
                lat.push(s.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    all.sort();
    (all, t0.elapsed())
}

fn pct(v: &[Duration], p: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e6
}

fn evalsha_calls(port: u16) -> u64 {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "INFO", "commandstats"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let conn = RedisConnection::new(
        &format!("redis://127.0.0.1:{port}"),
        RedisOptions::default(),
    )
    .unwrap();
    let clock = Arc::new(TokioClock::new());
    println!(
        "| backend | concurrency | calls | p50 µs/call | p99 µs/call | calls/s | EVALSHA per call |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for tasks in [1usize, 64] {
        let per_task = if tasks == 1 {
            calls
        } else {
            (calls / 8).max(10)
        };
        for backend in ["memory", "redis"] {
            let scope = format!("bench-{backend}-{tasks}");
            let (l, b): (Arc<dyn RateLimiter>, Arc<dyn CircuitBreaker>) = if backend == "memory" {
                (
                    Arc::new(MemoryRateLimiter::new(
                        &scope,
                        &[source()],
                        GlobalLimits::default(),
                        100.0,
                        clock.clone(),
                    )),
                    Arc::new(MemoryCircuitBreaker::new(
                        &scope,
                        BreakerConfig::default(),
                        clock.clone(),
                    )),
                )
            } else {
                (
                    Arc::new(RedisRateLimiter::new(
                        &scope,
                        &[source()],
                        GlobalLimits::default(),
                        100.0,
                        conn.clone(),
                    )),
                    Arc::new(RedisCircuitBreaker::new(
                        &scope,
                        BreakerConfig::default(),
                        conn.clone(),
                    )),
                )
            };
            // Warm-up (loads the scripts, opens the connection).
            run(Arc::clone(&l), Arc::clone(&b), 1, 20).await;
            let before = evalsha_calls(port);
            let (lat, total) = run(l, b, tasks, per_task).await;
            let n = lat.len() as u64;
            let rt = (evalsha_calls(port) - before) as f64 / n as f64;
            println!(
                "| {backend} | {tasks} | {n} | {:.1} | {:.1} | {:.0} | {:.2} |",
                pct(&lat, 0.5),
                pct(&lat, 0.99),
                n as f64 / total.as_secs_f64(),
                rt
            );
        }
    }
    conn.quit().await;
    let _ = server.kill();
    let _ = server.wait();
}
