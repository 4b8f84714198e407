//! `pgw demo --backend redis` against the real Redis on 127.0.0.1:6379 (issue 15; 30 G-74,
//! CT-LIM-13 and CT-BRK-11 at process level): two worker processes share one quota and one
//! breaker. Redis must be running: the demo then exits non-zero and this test fails loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::support::Pgw;

const REDIS: (&str, &str) = ("REDIS_URL", "redis://127.0.0.1:6379");

/// Two processes together are granted exactly the RPM quota (20 of 32 calls), every call is
/// accounted to one of them, the breaker opened by one is open for both, and a second run uses
/// a fresh scope (the same accounting, nothing carried over).
#[test]
fn demo_backend_redis_two_processes_share_quota_and_breaker() {
    let pgw = Pgw::new();
    for run in 0..2 {
        let (exit, v, stderr) = pgw.run_json(&["demo", "--backend", "redis", "--json"], &[REDIS]);
        assert_eq!(exit, 0, "run {run}: {v} {stderr}");
        assert_eq!(v["backend"], "redis");
        assert_eq!(v["quota_rpm"], 20);
        assert_eq!(v["granted_total"], 20, "run {run}: {v}");
        assert_eq!(v["rpm_used_shared"], 20, "run {run}: {v}");
        assert_eq!(v["down_breaker_shared"], "open");
        let workers = v["workers"].as_array().expect("workers");
        assert_eq!(workers.len(), 2);
        let mut sum = 0;
        for w in workers {
            let (g, r) = (
                w["granted"].as_u64().unwrap(),
                w["refused"].as_u64().unwrap(),
            );
            assert_eq!(g + r, 16, "every call of a worker is accounted: {w}");
            assert_eq!(w["down_breaker"], "open", "{w}");
            sum += g;
        }
        assert_eq!(sum, 20);
        assert_eq!(v["holds"], true);
    }
    let (exit, stdout, stderr) = pgw.run(&["demo", "--backend", "redis"], &[REDIS]);
    assert_eq!(exit, 0, "{stdout} {stderr}");
    assert!(
        stdout.contains("granted together: 20 of the quota 20"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the two processes shared one quota and one breaker"),
        "{stdout}"
    );
}

/// An unreachable Redis: the demo says so, naming `REDIS_URL`, and exits non-zero.
#[test]
fn demo_backend_redis_without_redis_names_redis_url() {
    let pgw = Pgw::new();
    let (exit, stdout, stderr) = pgw.run(
        &["demo", "--backend", "redis"],
        &[("REDIS_URL", "redis://127.0.0.1:1")],
    );
    assert_ne!(exit, 0, "{stdout}");
    assert!(stderr.contains("REDIS_URL"), "{stderr}");
}
