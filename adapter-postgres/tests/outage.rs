//! Outage (80 T-56, T-57; 95 CF-393): the test starts its own throwaway cluster (initdb +
//! pg_ctl as the `postgres` user, on a free loopback port), writes, stops the server mid-run,
//! starts it again, and advances the injected clock past the cooldown: calls are unaffected,
//! rows during the outage are counted as dropped, the recorder recovers without a restart, and
//! nothing is written twice.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use adapter_postgres::{PostgresRecorder, PostgresRecorderConfig, SchemaMode};
use common::ManualClock;
use contract_tests::telemetry::full_row;
use gateway_ports::{TelemetryRecorder, TelemetryStatusProvider};

/// The server binaries (`/usr/lib/postgresql/<version>/bin`), newest version first.
fn bin_dir() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL server binaries under /usr/lib/postgresql are required")
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("pg_ctl").exists())
        .collect();
    dirs.sort();
    dirs.pop()
        .expect("no pg_ctl under /usr/lib/postgresql/*/bin")
}

/// Runs a server binary as the `postgres` user (initdb refuses root) when we are root.
fn as_postgres(bin: &Path, args: &[&str]) -> std::process::Output {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = if is_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args)
        .output()
        .expect("cannot run a PostgreSQL binary")
}

struct Cluster {
    _dir: tempfile::TempDir,
    data: String,
    port: u16,
    bin: PathBuf,
}

impl Cluster {
    fn init() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir.path())
            .status();
        // Not root: chown fails harmlessly and the binaries run as ourselves.
        let _ = status;
        let bin = bin_dir();
        let data = dir.path().join("data").display().to_string();
        let out = as_postgres(
            &bin.join("initdb"),
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            _dir: dir,
            data,
            port,
            bin,
        };
        cluster.start();
        cluster
    }

    fn start(&self) {
        let sock = Path::new(&self.data)
            .parent()
            .unwrap()
            .display()
            .to_string();
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {sock} -c fsync=off",
            self.port
        );
        let log = format!("{sock}/server.log");
        let out = as_postgres(
            &self.bin.join("pg_ctl"),
            &[
                "-D", &self.data, "-o", &opts, "-l", &log, "-w", "-t", "30", "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn stop(&self) {
        let out = as_postgres(
            &self.bin.join("pg_ctl"),
            &["-D", &self.data, "-m", "immediate", "-w", "stop"],
        );
        assert!(
            out.status.success(),
            "pg_ctl stop: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn dsn(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(
            &self.bin.join("pg_ctl"),
            &["-D", &self.data, "-m", "immediate", "-w", "stop"],
        );
    }
}

async fn count_rows(dsn: &str) -> (i64, i64) {
    let (client, conn) = tokio_postgres::connect(dsn, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let row = client
        .query_one(
            "SELECT count(*), count(DISTINCT call_id) FROM llm_calls",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

// covers: T-56, T-57
/// CF-393, T-56, T-57: down then restored (≥ 60 s on the injected clock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_393_server_down_then_restored_recovers_after_cooldown_without_restart() {
    let cluster = Cluster::init();
    let clock = Arc::new(ManualClock::default());
    let rec = PostgresRecorder::new(
        PostgresRecorderConfig::new(cluster.dsn())
            .with_schema_mode(SchemaMode::Auto)
            .with_pool_max(2)
            .with_write_timeout(Duration::from_secs(3))
            .with_clock(clock.clone()),
    );
    for i in 0..10 {
        rec.record(full_row(&format!("a-{i}"))).unwrap();
    }
    rec.flush().await;
    assert_eq!(rec.status().written_rows, 10);

    cluster.stop();
    let started = tokio::time::Instant::now();
    for i in 0..10 {
        rec.record(full_row(&format!("b-{i}"))).unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "calls slowed by the outage: {:?}",
        started.elapsed()
    );
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded && !s.fatal, "{s:?}");
    assert!(s.reason.is_some());
    assert_eq!((s.written_rows, s.dropped_rows), (10, 10), "{s:?}");

    // Restored, but the cooldown has not ended: still no traffic, rows dropped.
    cluster.start();
    clock.advance(Duration::from_secs(30));
    rec.record(full_row("c-early")).unwrap();
    rec.flush().await;
    let s = rec.status();
    assert!(s.degraded, "{s:?}");
    assert_eq!(s.dropped_rows, 11);

    // Past the cooldown: the next row re-prepares and the recorder heals, no restart.
    clock.advance(Duration::from_secs(31));
    for i in 0..10 {
        rec.record(full_row(&format!("d-{i}"))).unwrap();
    }
    rec.flush().await;
    let s = rec.status();
    assert!(!s.degraded && s.reason.is_none(), "{s:?}");
    assert_eq!((s.written_rows, s.dropped_rows), (20, 11), "{s:?}");
    rec.close().await;

    // Nothing written twice: 20 rows, 20 distinct ids.
    assert_eq!(count_rows(&cluster.dsn()).await, (20, 20));
}
