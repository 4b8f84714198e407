//! Round trips per governed call and the bounds that buy them (issue 15; 30 G-64 dual, G-66,
//! G-74; 10 §8.4, §8.5): the breaker mirror of a closed source and the write-behind of breaker
//! successes and progress marks, against real Redis. Exact `EVALSHA` counts come from a private
//! `redis-server` (no other test shares its `INFO commandstats`); local time is a `FakeClock`, so
//! no test sleeps to hit a window.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisOptions, RedisRateLimiter};
use common::{connection, connection_with, fresh_scope, immediate_options, require_redis};
use contract_tests::breaker::harness_config;
use contract_tests::{global, must_grant, source, usage};
use gateway_core::clock::{FakeClock, TokioClock};
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    Acquire, BreakerConfig, BreakerState, CircuitBreaker, FailureReason, GlobalLimits, RateLimiter,
};
use tokio::time::Instant;

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private `redis-server` on a free port (no persistence).
fn private_redis() -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("redis-server")
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
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed for the round-trip tests");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::yield_now();
    }
    Server { child, port }
}

/// `cmdstat_evalsha` calls of the private server.
fn evalsha_calls(port: u16) -> u64 {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "INFO", "commandstats"])
        .output()
        .expect("redis-cli must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The governance sequence of one successful call in the core's order: `try_enter`,
/// `try_acquire`, `record_success`, `mark_progress`, `settle_then_release`.
async fn governed_success(l: &dyn RateLimiter, b: &dyn CircuitBreaker, owner: &str) {
    success_with_exit(l, b, owner, false).await;
}

/// [`governed_success`]; with `core_exit` the exit is the core's (`settle_and_release_now`
/// first, as `AttemptGuard` does), which must take it over (write-behind on).
async fn success_with_exit(
    l: &dyn RateLimiter,
    b: &dyn CircuitBreaker,
    owner: &str,
    core_exit: bool,
) {
    let d = b.try_enter("a", owner).await.unwrap();
    assert!(d.allowed);
    let Acquire::Granted(p) = l.try_acquire("a", 100).await.unwrap() else {
        panic!("denied");
    };
    b.record_success(&d, true).await.unwrap();
    l.mark_progress().await.unwrap();
    if core_exit {
        assert!(p.settle_and_release_now(80), "write-behind on: buffered");
    } else {
        p.settle_then_release(80).await.unwrap();
    }
}

fn redis_limiter(scope: &str, conn: &RedisConnection) -> Arc<dyn RateLimiter> {
    Arc::new(RedisRateLimiter::new(
        scope,
        &[source("a", 0, 0, 0)],
        global(0, 0, 0),
        100.0,
        conn.clone(),
    ))
}

fn redis_breaker(scope: &str, conn: &RedisConnection) -> Arc<dyn CircuitBreaker> {
    Arc::new(RedisCircuitBreaker::new(
        scope,
        BreakerConfig::default(),
        conn.clone(),
    ))
}

/// `EVALSHA` per call over `n` calls after one warm-up call (script load, first mirror read).
async fn per_call(port: u16, l: &dyn RateLimiter, b: &dyn CircuitBreaker, n: u64) -> u64 {
    governed_success(l, b, "warm").await;
    let before = evalsha_calls(port);
    for i in 0..n {
        governed_success(l, b, &format!("c{i}")).await;
    }
    let spent = evalsha_calls(port) - before;
    assert_eq!(spent % n, 0, "{spent} EVALSHA over {n} calls");
    spent / n
}

/// Issue 15 Done-when: a governed success costs at most 2 round trips with both ports on Redis
/// (admission + settle/release; the mirror answers `try_enter`, the settle carries the success
/// and the mark), 2 with the limiter alone, none with the breaker alone until its buffer is sent
/// (one script for all of it), and 5 with the mirror and write-behind off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_success_round_trips() {
    let server = private_redis();
    let url = format!("redis://127.0.0.1:{}", server.port);
    let clock = Arc::new(FakeClock::new());
    // Write-behind bound far above the test's run time: only scripts carry the buffer here
    // (the bound itself is tested below).
    let opts = RedisOptions {
        write_behind: Duration::from_secs(30),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::new(&url, opts)
        .unwrap()
        .with_clock(clock.clone());
    let tokio_clock = Arc::new(TokioClock::new());
    let mem_l: Arc<dyn RateLimiter> = Arc::new(MemoryRateLimiter::new(
        "m",
        &[source("a", 0, 0, 0)],
        GlobalLimits::default(),
        100.0,
        tokio_clock.clone(),
    ));
    let mem_b: Arc<dyn CircuitBreaker> = Arc::new(MemoryCircuitBreaker::new(
        "m",
        BreakerConfig::default(),
        tokio_clock,
    ));

    let both = fresh_scope("rt-both");
    let (l, b) = (redis_limiter(&both, &conn), redis_breaker(&both, &conn));
    assert_eq!(
        per_call(server.port, &*l, &*b, 20).await,
        2,
        "both on Redis"
    );
    let s = b.snapshot("a").await.unwrap();
    assert_eq!(
        (s.state, s.window_calls),
        (BreakerState::Closed, 21),
        "every success reached Redis with the settles"
    );

    let lim = fresh_scope("rt-lim");
    let l = redis_limiter(&lim, &conn);
    assert_eq!(
        per_call(server.port, &*l, &*mem_b, 20).await,
        2,
        "limiter only"
    );

    let brk = fresh_scope("rt-brk");
    let b = redis_breaker(&brk, &conn);
    assert_eq!(
        per_call(server.port, &*mem_l, &*b, 20).await,
        0,
        "breaker only"
    );
    let before = evalsha_calls(server.port);
    conn.flush().await;
    assert_eq!(
        evalsha_calls(server.port) - before,
        1,
        "one script sends the buffer"
    );
    assert_eq!(b.snapshot("a").await.unwrap().window_calls, 21);

    let plain = RedisConnection::new(&url, immediate_options()).unwrap();
    let imm = fresh_scope("rt-imm");
    let (l, b) = (redis_limiter(&imm, &plain), redis_breaker(&imm, &plain));
    assert_eq!(
        per_call(server.port, &*l, &*b, 10).await,
        5,
        "mirror and write-behind off"
    );
    conn.quit().await;
    plain.quit().await;
}

/// Issue 15 with the core's exit: the exit is buffered and carried by the next admission, so a
/// governed success back to back is **one** script in Redis (the exit flusher may send one of
/// the buffered exits on its own now and then; at most one call in ten here), and after
/// `flush` every exit, success and mark is in Redis: exact TPM, nothing in flight, every
/// success counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governed_success_with_the_core_exit_is_one_script() {
    let server = private_redis();
    let url = format!("redis://127.0.0.1:{}", server.port);
    let opts = RedisOptions {
        write_behind: Duration::from_secs(30),
        ..RedisOptions::default()
    };
    let conn = RedisConnection::new(&url, opts)
        .unwrap()
        .with_clock(Arc::new(FakeClock::new()));
    let scope = fresh_scope("rt-core-exit");
    let l = RedisRateLimiter::new(
        &scope,
        &[source("a", 0, 0, 0)],
        global(0, 0, 0),
        100.0,
        conn.clone(),
    );
    let b = redis_breaker(&scope, &conn);
    success_with_exit(&l, &*b, "warm", true).await;
    conn.flush().await;
    let n: u64 = 200;
    let before = evalsha_calls(server.port);
    for i in 0..n {
        success_with_exit(&l, &*b, &format!("c{i}"), true).await;
    }
    let spent = evalsha_calls(server.port) - before;
    assert!(
        (n..=n + n / 10 + 1).contains(&spent),
        "{spent} EVALSHA over {n} calls"
    );
    conn.flush().await;
    let calls = u32::try_from(n + 1).unwrap();
    assert_eq!(
        usage(&l, "a").await,
        ((n + 1) * 80, calls, 0),
        "exact after flush"
    );
    assert_eq!(b.snapshot("a").await.unwrap().window_calls, calls);
    conn.quit().await;
}

fn mirrored(scope: &str, mirror: Duration, clock: &Arc<FakeClock>) -> RedisCircuitBreaker {
    let conn = connection_with(RedisOptions {
        breaker_mirror: mirror,
        ..RedisOptions::default()
    })
    .with_clock(clock.clone());
    RedisCircuitBreaker::new(scope, harness_config(), conn)
}

/// The staleness bound of the mirror: another process's open is seen by a process that read
/// the source closed at the latest `breaker_mirror` after that read; with the mirror off at
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_sees_another_process_open_within_the_bound() {
    require_redis(&connection()).await;
    let scope = fresh_scope("mirror");
    let a = RedisCircuitBreaker::new(&scope, harness_config(), connection());
    let clock = Arc::new(FakeClock::new());
    let b = mirrored(&scope, Duration::from_millis(250), &clock);
    let off = mirrored(&scope, Duration::ZERO, &clock);
    assert!(b.try_enter("s", "b0").await.unwrap().allowed);
    assert!(off.try_enter("s", "o0").await.unwrap().allowed);
    for i in 0..3 {
        let d = a.try_enter("s", &format!("t{i}")).await.unwrap();
        a.record_failure(&d, FailureReason::Timeout, false)
            .await
            .unwrap();
    }
    assert_eq!(a.snapshot("s").await.unwrap().state, BreakerState::Open);
    let denied = off.try_enter("s", "o1").await.unwrap();
    assert!(!denied.allowed, "mirror off: the open is seen at once");
    let stale = b.try_enter("s", "b1").await.unwrap();
    assert!(
        stale.allowed && !stale.is_probe,
        "within the bound the mirror still answers closed"
    );
    clock.advance(Duration::from_millis(249));
    assert!(b.try_enter("s", "b2").await.unwrap().allowed);
    clock.advance(Duration::from_millis(1));
    let seen = b.try_enter("s", "b3").await.unwrap();
    assert!(!seen.allowed, "the open is seen once the bound passed");
    let retry = seen.retry_after_s.expect("remaining cooldown");
    assert!((retry - 60.0).abs() < 1.0, "retry_after_s {retry}");
    // A write-back of the stale decision is fenced by its epoch (it changes nothing).
    b.record_success(&stale, true).await.unwrap();
    b.snapshot("s").await.unwrap();
    assert_eq!(a.snapshot("s").await.unwrap().state, BreakerState::Open);
}

/// The mirror is dropped at once when a reply of this connection shows another state (here the
/// limiter's acquire on the same scope and connection) and when this process records a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_dropped_by_a_reply_or_an_own_failure() {
    require_redis(&connection()).await;
    let scope = fresh_scope("mirror-drop");
    let a = RedisCircuitBreaker::new(&scope, harness_config(), connection());
    let clock = Arc::new(FakeClock::new());
    let conn = connection().with_clock(clock.clone());
    let b = RedisCircuitBreaker::new(&scope, harness_config(), conn.clone());
    let l = RedisRateLimiter::new(&scope, &[source("s", 0, 0, 0)], global(0, 0, 0), 30.0, conn);
    assert!(b.try_enter("s", "b0").await.unwrap().allowed);
    for i in 0..3 {
        let d = a.try_enter("s", &format!("t{i}")).await.unwrap();
        a.record_failure(&d, FailureReason::Timeout, false)
            .await
            .unwrap();
    }
    let p = must_grant(&l, "s", 10).await; // its reply reports the open
    p.release().await.unwrap();
    assert!(
        !b.try_enter("s", "b1").await.unwrap().allowed,
        "the limiter's reply dropped the mirror"
    );

    let scope = fresh_scope("mirror-own");
    let b = RedisCircuitBreaker::new(
        &scope,
        harness_config(),
        connection().with_clock(clock.clone()),
    );
    let d = b.try_enter("s", "x").await.unwrap();
    assert!(b.try_enter("s", "y").await.unwrap().allowed, "mirror set");
    b.record_failure(&d, FailureReason::SourceDead, true)
        .await
        .unwrap();
    assert!(
        !b.try_enter("s", "z").await.unwrap().allowed,
        "own failure seen at once"
    );
}

/// A buffered success reaches Redis within the write-behind bound with no other operation to
/// carry it (the connection's flusher), and `close()` sends what is still buffered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_success_reaches_redis_within_the_bound_and_on_close() {
    require_redis(&connection()).await;
    let scope = fresh_scope("wb");
    let reader = RedisCircuitBreaker::new(&scope, harness_config(), connection());
    let b = RedisCircuitBreaker::new(&scope, harness_config(), connection());
    let d = b.try_enter("s", "x").await.unwrap();
    b.record_failure(&d, FailureReason::Timeout, false)
        .await
        .unwrap();
    let d = b.try_enter("s", "y").await.unwrap();
    let t0 = Instant::now();
    b.record_success(&d, true).await.unwrap();
    loop {
        let s = reader.snapshot("s").await.unwrap();
        if s.window_calls == 2 {
            assert_eq!(s.consecutive_failures, 0, "the success reset the count");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "buffered success not in Redis after {:?}",
            t0.elapsed()
        );
        tokio::task::yield_now().await;
    }

    let scope = fresh_scope("wb-close");
    let reader = RedisCircuitBreaker::new(&scope, harness_config(), connection());
    let b = RedisCircuitBreaker::new(
        &scope,
        harness_config(),
        connection_with(RedisOptions {
            write_behind: Duration::from_secs(30),
            ..RedisOptions::default()
        }),
    )
    .owning_connection();
    let d = b.try_enter("s", "x").await.unwrap();
    b.record_success(&d, true).await.unwrap();
    assert_eq!(
        reader.snapshot("s").await.unwrap().window_calls,
        0,
        "buffered"
    );
    b.close().await;
    assert_eq!(
        reader.snapshot("s").await.unwrap().window_calls,
        1,
        "close() sent it"
    );
}

/// CT-LIM-12 across processes with write-behind: a mark made while a permit is in flight rides
/// on that permit's settle/release (no round trip of its own) and is stamped with the time it was
/// made; a mark with no permit in flight is sent at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_mark_rides_on_the_permit_exit() {
    let reader_conn = connection();
    require_redis(&reader_conn).await;
    let scope = fresh_scope("mark");
    let reader = RedisRateLimiter::new(
        &scope,
        &[source("a", 0, 0, 0)],
        global(0, 0, 0),
        30.0,
        reader_conn.clone(),
    );
    let l = RedisRateLimiter::new(
        &scope,
        &[source("a", 0, 0, 0)],
        global(0, 0, 0),
        30.0,
        connection_with(RedisOptions {
            write_behind: Duration::from_secs(30),
            ..RedisOptions::default()
        }),
    );
    assert!(reader.progress_age_s().await.unwrap() < 0.5);
    reader_conn
        .advance_time(&scope, Duration::from_secs(5))
        .await
        .unwrap();
    let p = must_grant(&l, "a", 10).await;
    l.mark_progress().await.unwrap();
    let age = reader.progress_age_s().await.unwrap();
    assert!((age - 5.0).abs() < 0.5, "still buffered: {age}");
    p.settle_then_release(10).await.unwrap();
    assert!(
        reader.progress_age_s().await.unwrap() < 0.5,
        "carried by the settle/release"
    );
    reader_conn
        .advance_time(&scope, Duration::from_secs(3))
        .await
        .unwrap();
    l.mark_progress().await.unwrap(); // no permit in flight: sent at once
    assert!(reader.progress_age_s().await.unwrap() < 0.5);
}
