//! Governance cost per call, Redis vs memory (issue 15 benchmark; docs/benchmarks.md "Redis
//! governance"). Starts a private `redis-server` on a free port, then for each backend and
//! concurrency (1 and 64) runs the governance sequence of one successful governed call in the
//! core's order — `try_enter`, `try_acquire`, `record_success`, `mark_progress`,
//! `settle_then_release` — and prints p50/p99 per call, the p50 added over memory, and the
//! `EVALSHA` round trips per call from `INFO commandstats` (background flushes and mirror
//! refreshes included). Rows: memory; both ports on Redis with the default options; the same
//! with the breaker mirror and write-behind off (every operation its own round trip); the
//! limiter alone on Redis; the breaker alone on Redis.
//!
//! The governance exit is the core's: `settle_and_release_now` first (on Redis with
//! write-behind on, the exit's script is sent and its reply awaited in the background), else
//! `settle_then_release`.
//!
//! Shapes: back to back at concurrency 1 (each admission queues in Redis behind the previous
//! exit's script); one caller with a 2 ms upstream time (±50 %, exact wake-ups) between
//! admission and exit, the sequential caller of a deployment; back to back at 64 (the saturation throughput
//! of one Redis — there the per-call time is queueing, 64 callers × the server's time per
//! script); and 64 calls in flight that each hold their permit for a simulated upstream time
//! (`PGW_BENCH_HOLD_MS`, default 20 ms), where the printed time is the governance alone, the
//! hold left out: the latency the callers of a deployment see. The held shape runs twice: with
//! one fixed hold (the tasks stay in lockstep and reach Redis as bursts of 64) and with holds
//! drawn uniformly within ±50 % of the mean and staggered starts (decorrelated arrivals, as a
//! deployment's calls are). A last row ends those decorrelated holds at their exact instants from
//! a thread of its own instead of on tokio's millisecond timer ticks, where the holds of several
//! tasks end together and reach Redis as small bursts.
//!
//! `cargo run --release -p adapter-redis --example bench_governance [calls_per_task]`
//! (`PGW_BENCH_OP_TIMEOUT_MS` raises the operation timeout, e.g. with `redis-server` under valgrind)
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisOptions, RedisRateLimiter};
use gateway_core::clock::TokioClock;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    Acquire, BreakerConfig, CircuitBreaker, GlobalLimits, RateLimiter, SourceConfig,
};
use tokio::sync::oneshot;
use tokio::time::Instant;

fn source() -> SourceConfig {
    let mut s = SourceConfig::new("a", "bench", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = 1000;
    s.rpm = 0;
    s.tpm = 0;
    s
}

/// Ends the simulated upstream times at their exact instants, from one thread of its own.
///
/// Why: tokio's timer wheel has a 1 ms resolution and fires every timer of a tick together, so
/// 64 tasks sleeping through their holds wake as bursts on millisecond ticks and reach Redis
/// together. A deployment's upstream answers arrive from sockets at arbitrary instants; this
/// thread models that by waking each waiter at its own deadline (condition-variable wait, the
/// kernel's timer slack its only coarsening).
struct Releaser {
    due: Arc<(Mutex<BinaryHeap<Reverse<Due>>>, Condvar)>,
}

/// One waiter of the [`Releaser`]: its deadline and the sender that wakes it.
#[allow(
    clippy::disallowed_types,
    reason = "the releaser is a plain thread outside the runtime, woken by a condition variable at OS-clock deadlines"
)]
struct Due(std::time::Instant, u64, oneshot::Sender<()>);

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.0, self.1) == (other.0, other.1)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(other.0, other.1))
    }
}

#[allow(
    clippy::disallowed_types,
    reason = "the releaser is a plain thread outside the runtime, woken by a condition variable at OS-clock deadlines"
)]
impl Releaser {
    fn start() -> Self {
        let due: Arc<(Mutex<BinaryHeap<Reverse<Due>>>, Condvar)> = Arc::default();
        let worker = Arc::clone(&due);
        std::thread::spawn(move || {
            let (lock, cv) = &*worker;
            // A poisoned lock only means a waiter panicked; the heap stays usable.
            let mut heap = lock.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                let now = std::time::Instant::now();
                let next = heap.peek().map(|Reverse(d)| d.0);
                match next {
                    Some(at) if at <= now => {
                        if let Some(Reverse(d)) = heap.pop() {
                            let _ = d.2.send(());
                        }
                    }
                    Some(at) => {
                        heap = cv
                            .wait_timeout(heap, at - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                    None => heap = cv.wait(heap).unwrap_or_else(PoisonError::into_inner),
                }
            }
        });
        Self { due }
    }

    /// Waits `hold` from now, woken at that instant.
    async fn sleep(&self, hold: Duration, seq: u64) {
        let (tx, rx) = oneshot::channel();
        {
            let (lock, cv) = &*self.due;
            lock.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Reverse(Due(std::time::Instant::now() + hold, seq, tx)));
            cv.notify_one();
        }
        let _ = rx.await;
    }
}

/// How a held call waits out its upstream time.
#[derive(Clone, Copy)]
enum Wait {
    /// `tokio::time::sleep` (1 ms ticks).
    Tick,
    /// The [`Releaser`] thread (each wait ends at its own instant).
    Exact,
}

/// One governed call's governance; returns the time spent in it, leaving out `hold` (the
/// upstream call, simulated by a timer between admission and settlement).
async fn one_call(
    l: &dyn RateLimiter,
    b: &dyn CircuitBreaker,
    owner: &str,
    hold: Duration,
    wait: (Wait, &Releaser, u64),
) -> Duration {
    let start = Instant::now();
    let d = b.try_enter("a", owner).await.expect("try_enter");
    assert!(d.allowed);
    let Acquire::Granted(p) = l.try_acquire("a", 100).await.expect("acquire") else {
        panic!("denied");
    };
    let mut spent = start.elapsed();
    if !hold.is_zero() {
        match wait.0 {
            Wait::Tick => tokio::time::sleep(hold).await,
            Wait::Exact => wait.1.sleep(hold, wait.2).await,
        }
    }
    let resumed = Instant::now();
    b.record_success(&d, true).await.expect("record_success");
    l.mark_progress().await.expect("mark_progress");
    if !p.settle_and_release_now(80) {
        p.settle_then_release(80)
            .await
            .expect("settle_then_release");
    }
    spent += resumed.elapsed();
    spent
}

/// The upstream time of each call: `hold` itself, or with `jitter` a value drawn uniformly
/// from `[hold/2, 3·hold/2)` (same mean) by a per-task xorshift, so calls decorrelate as real
/// upstream latencies do instead of waking on one timer tick as a burst.
struct Holds {
    hold: Duration,
    jitter: bool,
    state: u64,
}

impl Holds {
    fn next(&mut self) -> Duration {
        if !self.jitter || self.hold.is_zero() {
            return self.hold;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let unit = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        self.hold.mul_f64(0.5 + unit)
    }
}

// The shape's parameters are spelled out at each call site on purpose (a bench, not an API).
#[allow(clippy::too_many_arguments)]
async fn run(
    l: Arc<dyn RateLimiter>,
    b: Arc<dyn CircuitBreaker>,
    tasks: usize,
    calls: usize,
    hold: Duration,
    jitter: bool,
    wait: Wait,
    releaser: &Arc<Releaser>,
) -> (Vec<Duration>, Duration) {
    let t0 = Instant::now();
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (l, b) = (Arc::clone(&l), Arc::clone(&b));
        let releaser = Arc::clone(releaser);
        handles.push(tokio::spawn(async move {
            let mut holds = Holds {
                hold,
                jitter,
                state: 0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1).wrapping_mul(0xbf58_476d_1ce4_e5b9),
            };
            if jitter {
                // Staggered starts: the first wave does not arrive as one burst either.
                tokio::time::sleep(hold.mul_f64(t as f64 / tasks as f64)).await;
            }
            let mut lat = Vec::with_capacity(calls);
            for i in 0..calls {
                let h = holds.next();
                let seq = (t * calls + i) as u64;
                lat.push(one_call(&*l, &*b, &format!("c{t}-{i}"), h, (wait, &releaser, seq)).await);
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

/// Every `cmdstat_<name>` `(calls, usec)` of the private server (commands run inside a script
/// are counted under their own names too).
fn command_stats(port: u16) -> BTreeMap<String, (u64, u64)> {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "INFO", "commandstats"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stats = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let field = |key: &str| {
            rest.split(',')
                .find_map(|kv| kv.strip_prefix(key))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        stats.insert(name.to_owned(), (field("calls="), field("usec=")));
    }
    stats
}

/// `(calls, usec)` of `name` between two readings.
fn delta(
    before: &BTreeMap<String, (u64, u64)>,
    after: &BTreeMap<String, (u64, u64)>,
    name: &str,
) -> (u64, u64) {
    let (c0, u0) = before.get(name).copied().unwrap_or((0, 0));
    let (c1, u1) = after.get(name).copied().unwrap_or((0, 0));
    (c1.saturating_sub(c0), u1.saturating_sub(u0))
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
    let url = format!("redis://127.0.0.1:{port}");
    // `PGW_BENCH_OP_TIMEOUT_MS` raises the operation timeout, for a server run under valgrind.
    let op_timeout = std::env::var("PGW_BENCH_OP_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(adapter_redis::DEFAULT_OP_TIMEOUT, Duration::from_millis);
    let base = RedisOptions {
        op_timeout,
        ..RedisOptions::default()
    };
    let conn = RedisConnection::new(&url, base).unwrap();
    let immediate = RedisConnection::new(
        &url,
        RedisOptions {
            breaker_mirror: Duration::ZERO,
            write_behind: Duration::ZERO,
            ..base
        },
    )
    .unwrap();
    let clock = Arc::new(TokioClock::new());
    println!(
        "| backend | concurrency | calls | p50 µs/call | p99 µs/call | added p50 µs | calls/s | EVALSHA per call | Redis µs per EVALSHA |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let backends = [
        "memory",
        "redis (both)",
        "redis (both, mirror and write-behind off)",
        "redis limiter only",
        "redis breaker only",
    ];
    let mut commands_per_call = String::new();
    // `PGW_BENCH_HOLD_MS`: the simulated upstream time of the held rows (default 20 ms, a fast
    // embedding call; chat calls take far longer, which only lowers the load on Redis).
    let hold_ms: u64 = std::env::var("PGW_BENCH_HOLD_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let hold = Duration::from_millis(hold_ms);
    // (concurrency, upstream hold): back to back at 1 and 64 (at 64 this is the saturation
    // throughput of one Redis: the latency is queueing, by Little's law), then 64 calls in flight
    // each holding its permit for the upstream time, the latency a deployment's callers see.
    // The last shape draws each hold around the mean (`Holds`): with one fixed hold the 64 tasks
    // stay in lockstep and reach Redis as bursts of 64, which no deployment's traffic does.
    // The last shape ends each hold at its own instant (`Releaser`) instead of on tokio's
    // millisecond timer ticks, where the holds of several tasks end together.
    // The second row is one caller with a short upstream time between admission and exit: the
    // exit's script is in Redis before the next admission, as for a deployment's sequential
    // caller (back to back, the next admission queues behind it).
    let shapes = [
        (1usize, Duration::ZERO, false, Wait::Tick),
        (1, Duration::from_millis(2), true, Wait::Exact),
        (64, Duration::ZERO, false, Wait::Tick),
        (64, hold, false, Wait::Tick),
        (64, hold, true, Wait::Tick),
        (64, hold, true, Wait::Exact),
    ];
    let releaser = Arc::new(Releaser::start());
    for (tasks, hold, jitter, wait) in shapes {
        let per_task = if tasks == 1 {
            calls
        } else if hold.is_zero() {
            (calls / 8).max(10)
        } else {
            // About one second of held calls per row.
            ((1000 / hold.as_millis().max(1)) as usize).clamp(10, calls)
        };
        let hold_ms = hold.as_millis();
        let shape = if hold.is_zero() {
            format!("{tasks}")
        } else if jitter && matches!(wait, Wait::Exact) {
            format!("{tasks}, {hold_ms} ms upstream ±50 %, staggered, exact wake-ups")
        } else if jitter {
            format!("{tasks}, {hold_ms} ms upstream ±50 %, staggered")
        } else {
            format!("{tasks}, {hold_ms} ms upstream")
        };
        let mut memory_p50 = 0.0;
        for backend in backends {
            let scope = format!(
                "bench-{}-{tasks}-{}-{jitter}-{}",
                backend.replace([' ', ',', '(', ')'], ""),
                hold.as_millis(),
                matches!(wait, Wait::Exact)
            );
            let mem_l: Arc<dyn RateLimiter> = Arc::new(MemoryRateLimiter::new(
                &scope,
                &[source()],
                GlobalLimits::default(),
                100.0,
                clock.clone(),
            ));
            let mem_b: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
                &scope,
                BreakerConfig::default(),
                clock.clone(),
            ));
            let redis_l = |c: &RedisConnection| -> Arc<dyn RateLimiter> {
                Arc::new(RedisRateLimiter::new(
                    &scope,
                    &[source()],
                    GlobalLimits::default(),
                    100.0,
                    c.clone(),
                ))
            };
            let redis_b = |c: &RedisConnection| -> Arc<dyn CircuitBreaker> {
                Arc::new(RedisCircuitBreaker::new(
                    &scope,
                    BreakerConfig::default(),
                    c.clone(),
                ))
            };
            let (l, b) = match backend {
                "memory" => (mem_l, mem_b),
                "redis (both)" => (redis_l(&conn), redis_b(&conn)),
                "redis limiter only" => (redis_l(&conn), mem_b),
                "redis breaker only" => (mem_l, redis_b(&conn)),
                _ => (redis_l(&immediate), redis_b(&immediate)),
            };
            // Warm-up (loads the scripts, opens the connection, first mirror read).
            run(
                Arc::clone(&l),
                Arc::clone(&b),
                1,
                20,
                Duration::ZERO,
                false,
                Wait::Tick,
                &releaser,
            )
            .await;
            conn.flush().await;
            let before = command_stats(port);
            let (lat, total) = run(l, b, tasks, per_task, hold, jitter, wait, &releaser).await;
            let n = lat.len() as u64;
            // What is still buffered is part of these calls' cost.
            conn.flush().await;
            let after = command_stats(port);
            let (scripts, script_usec) = delta(&before, &after, "evalsha");
            let rt = scripts as f64 / n as f64;
            let script_us = if scripts == 0 {
                0.0
            } else {
                script_usec as f64 / scripts as f64
            };
            if tasks == 1 && backend == "redis (both)" {
                // What the scripts run inside Redis, per governed call.
                let inner: Vec<String> = after
                    .keys()
                    .filter(|name| name.as_str() != "evalsha" && name.as_str() != "info")
                    .filter_map(|name| {
                        let (c, _) = delta(&before, &after, name);
                        (c > 0).then(|| format!("{name} {:.2}", c as f64 / n as f64))
                    })
                    .collect();
                commands_per_call = inner.join(", ");
            }
            let p50 = pct(&lat, 0.5);
            if backend == "memory" {
                memory_p50 = p50;
            }
            println!(
                "| {backend} | {shape} | {n} | {p50:.1} | {:.1} | {:.1} | {:.0} | {rt:.2} | {script_us:.1} |",
                pct(&lat, 0.99),
                p50 - memory_p50,
                n as f64 / total.as_secs_f64(),
            );
        }
    }
    println!();
    println!(
        "Redis commands run by the scripts per governed call (redis (both), concurrency 1): {commands_per_call}"
    );
    immediate.quit().await;
    conn.quit().await;
    let _ = server.kill();
    let _ = server.wait();
}
