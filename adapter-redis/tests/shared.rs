//! Redis-only rows: CT-LIM-13 and CT-BRK-11 (two instances on one Redis and scope share all
//! state, 10 §8.4, §8.5; 30 G-74), two OS processes sharing one scope (exact RPM and TPM under
//! concurrent load), a killed holder's slots freed by the lease (D11), and the outage row (Redis
//! killed mid-run → fail closed within the operation timeout, back within a second), and the
//! fast exit (settle/release buffered and carried by the next script: seen by every later
//! operation, bounded in an outage).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisOptions, RedisRateLimiter};
use common::{
    REDIS_URL, connection, connection_with, fresh_scope, immediate_options, require_redis,
};
use contract_tests::breaker::harness_config;
use contract_tests::{global, must_deny, must_grant, source, usage};
use gateway_ports::{
    Acquire, BackendErrorKind, BreakerState, CircuitBreaker, FailureReason, LimitGate, RateLimiter,
};

fn limiter(scope: &str, conn: RedisConnection, conc: u32, rpm: u32, tpm: u64) -> RedisRateLimiter {
    RedisRateLimiter::new(
        scope,
        &[source("a", conc, rpm, tpm)],
        global(0, 0, 0),
        30.0,
        conn,
    )
}

/// CT-LIM-13: two limiter instances, each on its own connection, share every gate, the
/// window, settle, release, lease reclaim and progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_lim_13_two_instances_share_all_state() {
    let (c1, c2) = (connection(), connection());
    require_redis(&c1).await;
    let scope = fresh_scope("lim13");
    let a = limiter(&scope, c1.clone(), 2, 3, 1000);
    let b = limiter(&scope, c2, 2, 3, 1000);
    let p = must_grant(&a, "a", 400).await;
    assert_eq!(usage(&b, "a").await, (400, 1, 1), "b sees a's grant");
    let q = must_grant(&b, "a", 500).await;
    assert_eq!(must_deny(&a, "a", 1).await.0, LimitGate::SourceConcurrency);
    p.settle(100).await.unwrap();
    assert_eq!(usage(&b, "a").await, (600, 2, 2), "b sees a's settle");
    p.release().await.unwrap();
    q.release().await.unwrap();
    assert_eq!(usage(&a, "a").await, (600, 2, 0), "a sees b's release");
    let _r = must_grant(&a, "a", 100).await;
    assert_eq!(must_deny(&b, "a", 1).await.0, LimitGate::SourceRpm);
    // Lease reclaim of a permit granted by `b` is seen by `a`.
    c1.advance_time(&scope, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        usage(&a, "a").await.2,
        0,
        "lease expired for every instance"
    );
    // Progress is scope-wide.
    a.mark_progress().await.unwrap();
    c1.advance_time(&scope, Duration::from_secs(4))
        .await
        .unwrap();
    let age = b.progress_age_s().await.unwrap();
    assert!((age - 4.0).abs() < 0.5, "b reads a's mark: {age}");
    b.mark_progress().await.unwrap();
    assert!(a.progress_age_s().await.unwrap() < 0.5);
    // The window slides for both.
    c1.advance_time(&scope, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(usage(&b, "a").await, (0, 0, 0));
    assert_eq!(a.tracked_permits().await.unwrap(), 0, "nothing leaked");
}

/// CT-BRK-11: two breaker instances on one scope share state, probe and epoch (default
/// options: the breaker mirror is on; each instance's own failures drop its mirror).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_brk_11_two_instances_share_state() {
    ct_brk_11(connection(), connection()).await;
}

/// CT-BRK-11 with the mirror and write-behind off (every operation asks Redis).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_brk_11_two_instances_share_state_mirror_off() {
    ct_brk_11(
        connection_with(immediate_options()),
        connection_with(immediate_options()),
    )
    .await;
}

async fn ct_brk_11(c1: RedisConnection, c2: RedisConnection) {
    require_redis(&c1).await;
    let scope = fresh_scope("brk11");
    let a = RedisCircuitBreaker::new(&scope, harness_config(), c1.clone());
    let b = RedisCircuitBreaker::new(&scope, harness_config(), c2);
    for i in 0..3 {
        let d = a.try_enter("s", &format!("t{i}")).await.unwrap();
        a.record_failure(&d, FailureReason::Timeout, false)
            .await
            .unwrap();
    }
    let denied = b.try_enter("s", "x").await.unwrap();
    assert!(!denied.allowed, "b sees a's open");
    assert_eq!(b.snapshot("s").await.unwrap().state, BreakerState::Open);
    c1.advance_time(&scope, Duration::from_secs(60))
        .await
        .unwrap();
    let probe = b.try_enter("s", "p").await.unwrap();
    assert!(probe.is_probe);
    let other = a.try_enter("s", "q").await.unwrap();
    assert!(
        !other.allowed && other.retry_after_s == Some(0.0),
        "one probe across instances"
    );
    b.record_success(&probe, true).await.unwrap();
    let s = a.snapshot("s").await.unwrap();
    assert_eq!((s.state, s.epoch), (BreakerState::Closed, probe.epoch + 1));
    // A's stale decision (older epoch) is fenced for b's state too.
    a.record_failure(&denied, FailureReason::SourceDead, true)
        .await
        .unwrap();
    assert_eq!(b.snapshot("s").await.unwrap().state, BreakerState::Closed);
}

// ---- two OS processes -------------------------------------------------------------------

const WORKER_ENV: &str = "PGW_REDIS_TEST_WORKER";

/// Spawns this test binary again running only [`worker_process_entry`] in `mode`.
fn spawn_worker(mode: &str, scope: &str) -> Child {
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .args([
            "--exact",
            "worker_process_entry",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(WORKER_ENV, format!("{mode} {scope}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn worker process")
}

/// Reads the worker's stdout until a line starts with `prefix`; returns that line.
fn read_line_with(child: &mut Child, prefix: &str) -> String {
    let out = child.stdout.as_mut().expect("piped stdout");
    let mut reader = BufReader::new(out);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("read worker stdout");
        assert!(n > 0, "worker ended before printing `{prefix}`");
        // The harness may print `test worker_process_entry ... ` on the same line.
        if let Some(at) = line.find(&format!("{prefix} ")) {
            return line[at + prefix.len()..].trim().to_owned();
        }
    }
}

const RPM: u32 = 50;
const EST: u64 = 100;
const ACTUAL: u64 = 37;

/// Not a test of its own: the body of the helper processes (does nothing unless spawned by
/// `two_processes_*` with `PGW_REDIS_TEST_WORKER` set).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_process_entry() {
    let Ok(spec) = std::env::var(WORKER_ENV) else {
        return;
    };
    let (mode, scope) = spec.split_once(' ').expect("mode scope");
    let conn = connection();
    match mode {
        "load" => {
            // 16 tasks hammer the shared scope for 1.5 s; every grant settles and releases.
            let l = Arc::new(limiter(scope, conn, 0, RPM, 0));
            let deadline = Instant::now() + Duration::from_millis(1500);
            let mut tasks = Vec::new();
            for _ in 0..16 {
                let l = Arc::clone(&l);
                tasks.push(tokio::spawn(async move {
                    let mut granted = 0u32;
                    while Instant::now() < deadline {
                        match l.try_acquire("a", EST).await.expect("try_acquire") {
                            Acquire::Granted(p) => {
                                granted += 1;
                                p.settle(ACTUAL).await.expect("settle");
                                p.release().await.expect("release");
                            }
                            Acquire::Denied { .. } => tokio::task::yield_now().await,
                        }
                    }
                    granted
                }));
            }
            let mut total = 0;
            for t in tasks {
                total += t.await.expect("task");
            }
            println!("granted {total}");
        }
        "hold" => {
            // Takes 3 slots, reports them, then waits to be killed without releasing.
            let l = limiter(scope, conn, 3, 0, 0);
            let mut held = Vec::new();
            for _ in 0..3 {
                held.push(must_grant(&l, "a", EST).await);
            }
            println!("held {}", held.len());
            std::future::pending::<()>().await;
        }
        other => panic!("unknown worker mode {other}"),
    }
}

/// Two OS processes sharing one scope with RPM = N grant exactly N between them under
/// concurrent load (30 G-74: the reason multi-process deployments use Redis), and TPM is exact
/// after settle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_rpm_and_tpm_exactly() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("procs");
    let mut w1 = spawn_worker("load", &scope);
    let mut w2 = spawn_worker("load", &scope);
    let g1: u32 = read_line_with(&mut w1, "granted").parse().unwrap();
    let g2: u32 = read_line_with(&mut w2, "granted").parse().unwrap();
    assert!(w1.wait().unwrap().success() && w2.wait().unwrap().success());
    assert_eq!(
        g1 + g2,
        RPM,
        "exactly N grants between two processes ({g1} + {g2})"
    );
    let l = limiter(&scope, conn, 0, RPM, 0);
    assert_eq!(
        usage(&l, "a").await,
        (u64::from(RPM) * ACTUAL, RPM, 0),
        "TPM exact after settle, nothing in flight"
    );
}

/// D11: a process killed while holding permits frees its slots when the leases expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_holder_slots_freed_by_lease() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("killed");
    let mut w = spawn_worker("hold", &scope);
    assert_eq!(read_line_with(&mut w, "held"), "3");
    w.kill().expect("kill worker");
    let _ = w.wait();
    let l = limiter(&scope, conn.clone(), 3, 0, 0);
    assert_eq!(
        usage(&l, "a").await,
        (3 * EST, 3, 3),
        "slots still held by the dead process"
    );
    assert_eq!(must_deny(&l, "a", 1).await.0, LimitGate::SourceConcurrency);
    conn.advance_time(&scope, Duration::from_secs(29))
        .await
        .unwrap();
    assert_eq!(usage(&l, "a").await.2, 3);
    conn.advance_time(&scope, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(
        usage(&l, "a").await,
        (3 * EST, 3, 0),
        "leases reclaimed, TPM kept"
    );
    let p = must_grant(&l, "a", 1).await;
    p.release().await.unwrap();
}

// ---- outage -----------------------------------------------------------------------------

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// Starts `redis-server` on `port` with an append-only file in `dir` (fsync always), so the
/// state survives a kill; waits until it accepts connections.
fn start_redis(port: u16, dir: &std::path::Path) -> Server {
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
        ])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed for the outage test");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::yield_now();
    }
    Server { child }
}

/// The operation timeout of the outage tests' connections.
const OUTAGE_OP_TIMEOUT: Duration = Duration::from_millis(300);

/// A private `redis-server` for an outage test and what the test needs to restart it.
struct Outage {
    /// Holds the append-only file across the restart.
    dir: std::path::PathBuf,
    port: u16,
    /// A connection to it with the operation timeout [`OUTAGE_OP_TIMEOUT`].
    conn: RedisConnection,
}

/// Starts a private server (state in a fresh temporary directory, `label` names it) and
/// connects to it.
fn outage_redis(label: &str) -> (Server, Outage) {
    let dir = std::env::temp_dir().join(fresh_scope(label));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let server = start_redis(port, &dir);
    let conn = RedisConnection::new(
        &format!("redis://127.0.0.1:{port}"),
        RedisOptions {
            op_timeout: OUTAGE_OP_TIMEOUT,
            ..RedisOptions::default()
        },
    )
    .unwrap();
    (server, Outage { dir, port, conn })
}

/// Outage (CF-428 at the port level, issue 15): Redis killed mid-run → every entry point fails
/// closed with `Unavailable` within the operation timeout, no panic, no grant; the held permit's
/// release fails too and is retried after the restart; Redis restarted → calls succeed again
/// within a second in the same process, and the state shows no leaked permit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_fails_closed_then_recovers() {
    let (server, Outage { dir, port, conn }) = outage_redis("aof");
    let op_timeout = OUTAGE_OP_TIMEOUT;
    let scope = fresh_scope("outage");
    let l = limiter(&scope, conn.clone(), 2, 0, 0);
    let br = RedisCircuitBreaker::new(&scope, harness_config(), conn.clone());
    let held = must_grant(&l, "a", 10).await;
    assert!(br.try_enter("s", "c").await.unwrap().allowed);

    drop(server); // killed (SIGKILL)
    let bound = op_timeout + Duration::from_millis(250);
    for _ in 0..3 {
        let t0 = Instant::now();
        match l.try_acquire("a", 10).await {
            Err(e) => assert_eq!(e.kind, BackendErrorKind::Unavailable),
            Ok(a) => panic!("granted during an outage: {a:?}"),
        }
        assert!(
            t0.elapsed() <= bound,
            "acquire failed after {:?}",
            t0.elapsed()
        );
        let t0 = Instant::now();
        let e = br
            .try_enter("s", "c")
            .await
            .expect_err("breaker fails closed");
        assert_eq!(e.kind, BackendErrorKind::Unavailable);
        assert!(
            t0.elapsed() <= bound,
            "try_enter failed after {:?}",
            t0.elapsed()
        );
    }
    assert_eq!(
        l.source_stats("a").await.expect_err("stats").kind,
        BackendErrorKind::Unavailable
    );
    assert!(held.release().await.is_err(), "release cannot reach Redis");

    let _server = start_redis(port, &dir);
    let t0 = Instant::now();
    let p = loop {
        match l.try_acquire("a", 10).await {
            Ok(Acquire::Granted(p)) => break p,
            Ok(Acquire::Denied { gate, .. }) => panic!("denied at {gate} after restart"),
            Err(_) => {
                assert!(
                    t0.elapsed() < Duration::from_secs(1),
                    "not back within a second"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert!(t0.elapsed() < Duration::from_secs(1));
    // The failed acquires left nothing behind: only `held` and `p` were ever granted.
    assert_eq!(usage(&l, "a").await, (20, 2, 2));
    held.release().await.unwrap();
    p.release().await.unwrap();
    assert_eq!(usage(&l, "a").await.2, 0, "no leaked permit");
    assert!(br.try_enter("s", "c").await.unwrap().allowed);
    conn.quit().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_url_is_the_shared_test_instance() {
    assert!(REDIS_URL.starts_with("redis://127.0.0.1"));
}

/// The core's exit path `settle_then_release` is one script with the settle/release rules:
/// at most once, idempotent, and the same as `settle` then `release` (CT-LIM-03..05).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_then_release_is_settle_and_release_in_one() {
    let conn = connection();
    require_redis(&conn).await;
    let l = limiter(&fresh_scope("str"), conn, 1, 0, 0);
    let p = must_grant(&l, "a", 400).await;
    p.settle_then_release(37).await.unwrap();
    assert_eq!(usage(&l, "a").await, (37, 1, 0));
    p.settle_then_release(999).await.unwrap();
    p.release().await.unwrap();
    assert_eq!(usage(&l, "a").await, (37, 1, 0), "idempotent");
    let q = must_grant(&l, "a", 10).await;
    q.release().await.unwrap();
    q.settle_then_release(0).await.unwrap();
    assert_eq!(usage(&l, "a").await, (47, 2, 0), "no settle after release");
}

// ---- settle and release off the caller's path ---------------------------------------------

/// 05 R-9 / CT-LIM-15 on Redis: with write-behind on, the fast exit returns `true` without a
/// round trip (the exit is buffered and carried by the next script), yet every later operation
/// of the connection sees it — an admission for the slot it freed is granted at once (one
/// slot, 50 calls back to back) — and after `flush` another connection reads the exact TPM:
/// nothing is left buffered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_9_fast_exit_runs_before_every_later_operation() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("fastexit");
    let l = limiter(&scope, conn.clone(), 1, 0, 0);
    let mut p = must_grant(&l, "a", 100).await;
    for _ in 0..50 {
        assert!(p.settle_and_release_now(7), "write-behind on: taken over");
        // No await between the exit and the next admission: FIFO on the connection.
        p = must_grant(&l, "a", 100).await;
    }
    assert!(p.settle_and_release_now(7));
    conn.flush().await;
    let other = limiter(&scope, connection(), 1, 0, 0);
    assert_eq!(usage(&other, "a").await, (51 * 7, 51, 0), "exact in Redis");
    l.close().await;
}

/// With write-behind off every operation is its own awaited round trip: the fast exit
/// declines and changed nothing (the core then awaits `settle_then_release`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_exit_declines_with_write_behind_off() {
    let conn = connection_with(immediate_options());
    require_redis(&conn).await;
    let l = limiter(&fresh_scope("fastoff"), conn, 1, 0, 0);
    let p = must_grant(&l, "a", 100).await;
    assert!(!p.settle_and_release_now(7));
    assert_eq!(usage(&l, "a").await, (100, 1, 1), "nothing done");
    p.settle_then_release(7).await.unwrap();
    assert_eq!(usage(&l, "a").await, (7, 1, 0));
}

/// D11 with the fast exit: Redis killed → the exit still returns at once, the script that
/// carries it fails within the operation timeout (logged, no panic), `flush` returns within
/// its bound, and after the restart the slot frees when the lease expires (30 s lease: seen
/// through the test-time offset, no sleep).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_exit_during_an_outage_is_bounded_and_the_lease_frees_the_slot() {
    let (server, Outage { dir, port, conn }) = outage_redis("aof-fast");
    let op_timeout = OUTAGE_OP_TIMEOUT;
    let scope = fresh_scope("outage-fast");
    let l = limiter(&scope, conn.clone(), 1, 0, 0);
    let p = must_grant(&l, "a", 10).await;
    drop(server); // killed (SIGKILL)
    let t0 = Instant::now();
    assert!(p.settle_and_release_now(3), "returns without waiting");
    assert!(t0.elapsed() < op_timeout, "did not wait for Redis");
    conn.flush().await;
    assert!(
        t0.elapsed() <= op_timeout * 2 + Duration::from_millis(400),
        "flush bounded: {:?}",
        t0.elapsed()
    );

    let _server = start_redis(port, &dir);
    let t0 = Instant::now();
    let gate = loop {
        match l.try_acquire("a", 1).await {
            Ok(Acquire::Denied { gate, .. }) => break gate,
            Ok(Acquire::Granted(_)) => panic!("the lost exit freed the slot"),
            Err(_) => {
                assert!(t0.elapsed() < Duration::from_secs(1), "not back");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert_eq!(gate, LimitGate::SourceConcurrency, "slot still held");
    conn.advance_time(&scope, Duration::from_secs(30))
        .await
        .unwrap();
    must_grant(&l, "a", 1).await.release().await.unwrap();
    conn.quit().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// 05 R-31: the contract suites' Redis clock is frozen per scope, so it moves only by
/// `advance_time` (as the memory backends' manual clock does) and a window edge asserted to the
/// second cannot be crossed by the real time the test's own round trips take. Exact to the
/// microsecond: a running clock would show the round trips' time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_31_frozen_test_clock_moves_only_by_advance() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("frozen");
    conn.freeze_time(&scope).await.unwrap();
    conn.freeze_time(&scope).await.unwrap(); // idempotent: stays where it was
    let l = limiter(&scope, conn.clone(), 0, 0, 0);
    l.mark_progress().await.unwrap();
    for _ in 0..20 {
        assert_eq!(l.progress_age_s().await.unwrap(), 0.0, "frozen");
    }
    conn.advance_time(&scope, Duration::from_micros(1_500_001))
        .await
        .unwrap();
    assert_eq!(l.progress_age_s().await.unwrap(), 1.500001);
}

/// The exit flusher: an exit that no later script of its connection carries still reaches
/// Redis on its own (within 2 ms of the call; checked as "soon": another connection polls for
/// it for at most a second), so an idle process does not keep other processes' slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exit_no_script_carries_reaches_redis_on_its_own() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("exitflush");
    let l = limiter(&scope, conn, 1, 0, 0);
    let other = limiter(&scope, connection(), 1, 0, 0);
    let p = must_grant(&l, "a", 100).await;
    assert!(p.settle_and_release_now(9));
    let t0 = Instant::now();
    while usage(&other, "a").await != (9, 1, 0) {
        assert!(
            t0.elapsed() < Duration::from_secs(1),
            "the exit never reached Redis"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Polls `fut` once, so a script it sends is queued on the connection.
fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> bool {
    let waker = std::task::Waker::noop();
    fut.poll(&mut std::task::Context::from_waker(waker))
        .is_ready()
}

/// A script that carried exits and was dropped before its reply (its caller cancelled) puts
/// them back: they are applied again by the next script, which changes nothing when the dropped
/// script had run (settle at most once, release idempotent) and applies them when it had not.
/// Here the dropped admission did run: its grant and the exit each count once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exits_of_a_cancelled_carrier_are_applied_once() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("cancelcarrier");
    let l = limiter(&scope, conn.clone(), 2, 0, 0);
    let p = must_grant(&l, "a", 100).await;
    assert!(p.settle_and_release_now(7));
    {
        let mut carrier = Box::pin(l.try_acquire("a", 100));
        assert!(!poll_once(carrier.as_mut()), "sent, not answered yet");
    } // dropped before its reply
    conn.flush().await;
    let other = limiter(&scope, connection(), 2, 0, 0);
    assert_eq!(
        usage(&other, "a").await,
        (7 + 100, 2, 1),
        "the exit once, the dropped grant once"
    );
}

/// `flush` waits for a script that took buffered exits and is still on its way (another
/// task's admission): it cannot return before that script's reply, so everything buffered
/// before it is in Redis when it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_waits_for_a_carrier_on_its_way() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("flushwaits");
    let l = limiter(&scope, conn.clone(), 2, 0, 0);
    let p = must_grant(&l, "a", 100).await;
    assert!(p.settle_and_release_now(7));
    let mut carrier = Box::pin(l.try_acquire("a", 50));
    assert!(!poll_once(carrier.as_mut()), "the admission took the exit");
    let mut flush = Box::pin(conn.flush());
    let granted = tokio::select! {
        biased;
        () = &mut flush => panic!("flush returned while the exit was still on its way"),
        a = &mut carrier => a.unwrap(),
    };
    flush.await;
    let other = limiter(&scope, connection(), 2, 0, 0);
    assert_eq!(usage(&other, "a").await, (7 + 50, 2, 1));
    drop(granted);
}

/// The loss case of a cancelled carrier: after `SCRIPT FLUSH` (as after a failover or a
/// restart) the carrying admission is answered `NOSCRIPT`, and its caller is gone before the
/// reload and retry. The exits it carried are put back and the next flush applies them; the
/// admission itself never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exits_of_a_carrier_cancelled_after_noscript_are_not_lost() {
    let (_server, Outage { dir, port, conn }) = outage_redis("noscript");
    let scope = fresh_scope("noscript");
    let l = limiter(&scope, conn.clone(), 2, 0, 0);
    let p = must_grant(&l, "a", 100).await;
    let flushed = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "SCRIPT", "FLUSH"])
        .output()
        .expect("redis-cli");
    assert!(flushed.status.success());
    // Buffered and taken with no await between, so the exit flusher (2 ms) cannot take it.
    assert!(p.settle_and_release_now(7));
    {
        let mut carrier = Box::pin(l.try_acquire("a", 100));
        assert!(!poll_once(carrier.as_mut()), "sent, not answered yet");
        // Let the NOSCRIPT answer arrive, without polling the carrier again.
        must_grant(&limiter(&scope, conn.clone(), 2, 0, 0), "a", 1)
            .await
            .release()
            .await
            .unwrap();
    } // dropped: the reload and retry never run
    conn.flush().await;
    assert_eq!(
        usage(&l, "a").await,
        (7 + 1, 2, 0),
        "the exit applied, no phantom grant"
    );
    conn.quit().await;
    let _ = std::fs::remove_dir_all(&dir);
}
