//! The Redis limiter against the memory limiter (30 G-74, D11, CT-LIM-01..06, -10, -14): the
//! same random interleavings of acquire, settle, release, the fast path (buffered and carried
//! by the next script), settle-then-release and time moves run on both, and every decision,
//! every usage figure and the end state must agree. The memory limiter is the reference: its
//! own property suite pins it to the accounting model, so this pins the limiter script to the
//! same semantics. A second test ages out and reclaims 1 200 permits in one script each, then
//! reads a full window of 1 200 entries for a wait hint.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use adapter_redis::{RedisConnection, RedisRateLimiter};
use common::{connection, fresh_scope, require_redis};
use contract_tests::{global, must_grant, source, usage};
use gateway_core::clock::FakeClock;
use gateway_core::memory::MemoryRateLimiter;
use gateway_ports::{Acquire, GlobalLimits, LimitGate, Permit, RateLimiter, SourceConfig};
use proptest::prelude::*;

const LEASE_S: u64 = 90;
const SOURCES: [&str; 2] = ["a", "b"];

fn sources() -> Vec<SourceConfig> {
    vec![source("a", 3, 10, 3000), source("b", 0, 0, 0)]
}

fn limits() -> GlobalLimits {
    global(4, 15, 5000)
}

#[derive(Debug, Clone)]
enum Op {
    Acquire {
        src: usize,
        est: u64,
    },
    Settle {
        pick: usize,
        actual: u64,
    },
    Release {
        pick: usize,
    },
    /// `settle_and_release_now`: on Redis buffered and carried by the next script.
    FastPath {
        pick: usize,
        actual: u64,
    },
    SettleThenRelease {
        pick: usize,
        actual: u64,
    },
    Advance {
        secs: u64,
    },
    /// Compare the usage figures. Not after every op: a stats read is a script too, and it
    /// would carry every buffered exit and age the window before the next acquire could.
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..2usize, 0..1500u64).prop_map(|(src, est)| Op::Acquire { src, est }),
        2 => (any::<usize>(), 0..2500u64).prop_map(|(pick, actual)| Op::Settle { pick, actual }),
        2 => any::<usize>().prop_map(|pick| Op::Release { pick }),
        3 => (any::<usize>(), 0..2500u64).prop_map(|(pick, actual)| Op::FastPath { pick, actual }),
        1 => (any::<usize>(), 0..2500u64)
            .prop_map(|(pick, actual)| Op::SettleThenRelease { pick, actual }),
        2 => (0..70u64).prop_map(|secs| Op::Advance { secs }),
        2 => Just(Op::Check),
    ]
}

/// Both limiters' usage per source and scope-wide, as (tpm, rpm, inflight).
async fn same_usage(
    mem: &MemoryRateLimiter,
    red: &RedisRateLimiter,
    after: &Op,
) -> Result<(), TestCaseError> {
    for s in SOURCES {
        prop_assert_eq!(
            usage(mem, s).await,
            usage(red, s).await,
            "source {} after {:?}",
            s,
            after
        );
    }
    let (m, r) = (mem.global_stats(), red.global_stats().await.expect("stats"));
    prop_assert_eq!(
        (m.tpm_used, m.rpm_used, m.inflight),
        (r.tpm_used, r.rpm_used, r.inflight),
        "scope after {:?}",
        after
    );
    Ok(())
}

async fn run(ops: Vec<Op>, conn: &RedisConnection) -> Result<(), TestCaseError> {
    let scope = fresh_scope("model");
    conn.freeze_time(&scope).await.expect("freeze");
    let red = RedisRateLimiter::new(&scope, &sources(), limits(), LEASE_S as f64, conn.clone());
    let clock = Arc::new(FakeClock::new());
    let mem = MemoryRateLimiter::new("model", &sources(), limits(), LEASE_S as f64, clock.clone());
    // (memory permit, Redis permit), granted together; released ones stay (ops on them are
    // no-ops on both).
    let mut held: Vec<(Box<dyn Permit>, Box<dyn Permit>)> = Vec::new();
    for op in &ops {
        match *op {
            Op::Acquire { src, est } => {
                let m = mem.try_acquire(SOURCES[src], est).await.expect("memory");
                let r = red.try_acquire(SOURCES[src], est).await.expect("redis");
                match (m, r) {
                    (Acquire::Granted(m), Acquire::Granted(r)) => held.push((m, r)),
                    (
                        Acquire::Denied {
                            gate: mg,
                            wait_hint_s: mh,
                        },
                        Acquire::Denied {
                            gate: rg,
                            wait_hint_s: rh,
                        },
                    ) => {
                        prop_assert_eq!(mg, rg, "gate after {:?}", op);
                        match (mh, rh) {
                            (None, None) => {}
                            (Some(a), Some(b)) => {
                                prop_assert!((a - b).abs() < 1e-3, "hints {} / {}", a, b);
                            }
                            other => prop_assert!(false, "hints differ: {:?}", other),
                        }
                    }
                    (m, r) => prop_assert!(false, "memory {:?}, redis {:?}", m, r),
                }
            }
            Op::Settle { pick, actual } if !held.is_empty() => {
                let (m, r) = &held[pick % held.len()];
                m.settle(actual).await.expect("memory");
                r.settle(actual).await.expect("redis");
            }
            Op::Release { pick } if !held.is_empty() => {
                let (m, r) = &held[pick % held.len()];
                m.release().await.expect("memory");
                r.release().await.expect("redis");
            }
            Op::FastPath { pick, actual } if !held.is_empty() => {
                let (m, r) = &held[pick % held.len()];
                prop_assert!(m.settle_and_release_now(actual));
                prop_assert!(
                    r.settle_and_release_now(actual),
                    "write-behind on: buffered"
                );
            }
            Op::SettleThenRelease { pick, actual } if !held.is_empty() => {
                let (m, r) = &held[pick % held.len()];
                m.settle_then_release(actual).await.expect("memory");
                r.settle_then_release(actual).await.expect("redis");
            }
            Op::Advance { secs } => {
                clock.advance(Duration::from_secs(secs));
                conn.advance_time(&scope, Duration::from_secs(secs))
                    .await
                    .expect("advance");
            }
            Op::Check => same_usage(&mem, &red, op).await?,
            _ => {}
        }
    }
    // Zero leaks on both: release everything, let every entry leave the window.
    for (m, r) in &held {
        m.release().await.expect("memory");
        r.release().await.expect("redis");
    }
    clock.advance(Duration::from_secs(LEASE_S));
    conn.advance_time(&scope, Duration::from_secs(LEASE_S))
        .await
        .expect("advance");
    let end = Op::Advance { secs: LEASE_S };
    same_usage(&mem, &red, &end).await?;
    prop_assert_eq!(red.tracked_permits().await.expect("stats"), 0);
    prop_assert_eq!(mem.tracked_permits(), 0);
    Ok(())
}

/// One runtime and one connection for every case (a case is a fresh scope): building them
/// per case cost more than the case itself.
static RT: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
});
static CONN: LazyLock<RedisConnection> = LazyLock::new(|| {
    let _rt = RT.enter();
    let conn = connection();
    RT.block_on(require_redis(&conn));
    conn
});

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// 30 G-74, D11: the Redis limiter decides and counts as the memory limiter does under
    /// random interleavings, carried exits and window and lease expiry included.
    #[test]
    fn g_74_redis_limiter_agrees_with_the_memory_limiter(
        ops in proptest::collection::vec(op(), 1..60)
    ) {
        RT.block_on(run(ops, &CONN))?;
    }
}

/// 30 G-74, D11 at scale: 1 200 permits leave the window in one script while their slots stay
/// held, then lose their leases in another, then a denial's wait hint reads all of a full
/// window; the counts stay exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn g_74_more_permits_than_one_command_carries() {
    let conn = connection();
    require_redis(&conn).await;
    let scope = fresh_scope("chunks");
    conn.freeze_time(&scope).await.unwrap();
    let n: u32 = 1_200;
    let l = RedisRateLimiter::new(
        &scope,
        &[source("a", 0, 0, 0), source("b", 0, n, 0)],
        GlobalLimits::default(),
        100.0,
        conn.clone(),
    );
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(must_grant(&l, "a", 3).await);
    }
    assert_eq!(usage(&l, "a").await, (3 * u64::from(n), n, n));
    // 61 s: every entry leaves the window in one script; the slots stay (lease 100 s).
    conn.advance_time(&scope, Duration::from_secs(61))
        .await
        .unwrap();
    assert_eq!(usage(&l, "a").await, (0, 0, n));
    assert_eq!(l.tracked_permits().await.unwrap(), n as usize);
    // 40 s more: every lease expires in one script; nothing is left.
    conn.advance_time(&scope, Duration::from_secs(40))
        .await
        .unwrap();
    assert_eq!(usage(&l, "a").await, (0, 0, 0));
    assert_eq!(l.tracked_permits().await.unwrap(), 0);
    // Releasing the reclaimed permits changes nothing.
    for p in &held {
        p.release().await.unwrap();
    }
    assert_eq!(usage(&l, "a").await, (0, 0, 0));
    // A full RPM window of 1 200 on `b`, each granted one second later than the one before
    // it in blocks of 100: the hint names the first entry's age-out.
    for i in 0..n {
        let p = must_grant(&l, "b", 1).await;
        p.release().await.unwrap();
        if i % 100 == 99 {
            conn.advance_time(&scope, Duration::from_secs(1))
                .await
                .unwrap();
        }
    }
    let Acquire::Denied { gate, wait_hint_s } = l.try_acquire("b", 1).await.unwrap() else {
        panic!("granted past the RPM gate");
    };
    assert_eq!(gate, LimitGate::SourceRpm);
    let hint = wait_hint_s.expect("a hint");
    assert!((hint - 48.0).abs() < 1e-3, "hint {hint}");
    assert_eq!(l.tracked_permits().await.unwrap(), n as usize);
    conn.quit().await;
}
