//! Issue 22: `pgw` under hostile inputs and signals — no secret in any output of a malformed
//! `.env` or of `pgw doctor`, bounded file reads, non-UTF-8 values refused naming the key,
//! SIGTERM / SIGHUP handled like SIGINT (drain, exit 143 / 129, one JSON object with `--json`),
//! and an answer that cannot be written (`/dev/full`) is an error exit.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::os::unix::ffi::OsStrExt as _;
use std::process::Stdio;
use std::time::Duration;

use crate::support::{KEY, Pgw};
use serde_json::Value;

const CANARY: &str = "sk-canary-hostile-5d1e77";

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} leaks the canary: {text}");
    assert!(
        !text.contains("canary"),
        "{what} leaks part of the canary: {text}"
    );
}

#[test]
fn issue_22_malformed_env_line_reports_line_and_key_never_the_value() {
    for line in [
        format!("LLM__QWEN__1__API_KEY {CANARY}"),
        format!("LLM__QWEN__1__API_KEY='{CANARY}"),
        format!("export LLM__QWEN__1__API_KEY=\"{CANARY}\" trailing'"),
    ] {
        let pgw = Pgw::new();
        std::fs::write(
            pgw.dir.path().join(".env"),
            format!("# comment\nLLM__QWEN__1__MODEL=m\n{line}\n"),
        )
        .unwrap();
        let (code, stdout, stderr) = pgw.run(&["doctor"], &[]);
        assert_eq!(code, 3, "{line}: {stdout} {stderr}");
        assert_clean("stdout", &stdout);
        assert_clean("stderr", &stderr);
        assert!(stderr.contains("line 3"), "{line}: {stderr}");
        assert!(stderr.contains("LLM__QWEN__1__API_KEY"), "{line}: {stderr}");
        let (code, value, stderr) = pgw.run_json(&["doctor", "--json"], &[]);
        assert_eq!(code, 3);
        assert_clean("--json stdout", &value.to_string());
        assert_clean("--json stderr", &stderr);
    }
}

#[test]
fn issue_22_env_file_dev_zero_fifo_and_huge_files_are_refused_at_once() {
    let pgw = Pgw::new();
    let fifo = pgw.dir.path().join("fifo.env");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let huge = pgw.dir.path().join("huge.env");
    std::fs::write(&huge, "A=".to_owned() + &"x".repeat(2 * 1024 * 1024)).unwrap();
    for path in [
        "/dev/zero".to_owned(),
        fifo.to_string_lossy().into_owned(),
        huge.to_string_lossy().into_owned(),
    ] {
        let mut waited = Duration::ZERO;
        let mut child = pgw
            .command()
            .args(["doctor", "--env-file", &path])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A blocking open of the FIFO would hang: give it 20 s, then fail the test.
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if waited > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("pgw blocked reading {path}");
            }
            std::thread::sleep(Duration::from_millis(20));
            waited += Duration::from_millis(20);
        };
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(status.code(), Some(3), "{path}: {stderr}");
        assert!(stderr.contains("--env-file"), "{stderr}");
    }
}

#[test]
fn issue_22_non_utf8_value_of_a_known_key_exits_3_naming_it() {
    let pgw = Pgw::new();
    let mut cmd = pgw.command();
    cmd.args(["doctor", "--json", "--no-env-file"])
        .env("LLM__QWEN__1__BASE_URL", "http://127.0.0.1:9/v1")
        .env("LLM__QWEN__1__API_KEY", KEY)
        .env(
            "LLM__QWEN__1__MODEL",
            std::ffi::OsStr::from_bytes(b"qwen\xff\xfe"),
        );
    let output = cmd.output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["error"]["code"], "config.parse", "{value}");
    assert_eq!(value["error"]["key"], "LLM__QWEN__1__MODEL", "{value}");
}

#[test]
fn issue_22_doctor_never_prints_a_base_url_password() {
    let pgw = Pgw::new();
    let url = format!("http://user:{CANARY}@127.0.0.1:9/v1");
    let env = [
        ("LLM__QWEN__1__BASE_URL", url.as_str()),
        ("LLM__QWEN__1__API_KEY", KEY),
        ("LLM__QWEN__1__MODEL", "m"),
        ("LLM__QWEN__1__TIMEOUT_S", "2"),
    ];
    let (code, stdout, stderr) = pgw.run(&["doctor", "--no-env-file", "-vvv"], &env);
    assert_eq!(code, 13, "{stdout} {stderr}");
    assert_clean("stdout", &stdout);
    assert_clean("stderr", &stderr);
    assert!(stdout.contains("user:<redacted>@127.0.0.1:9"), "{stdout}");
    let (code, value, stderr) = pgw.run_json(&["doctor", "--json", "--no-env-file"], &env);
    assert_eq!(code, 13);
    assert_clean("--json stdout", &value.to_string());
    assert_clean("--json stderr", &stderr);
}

#[test]
fn issue_22_answer_to_a_full_device_is_an_error_exit() {
    let pgw = Pgw::new();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = pgw
        .command()
        .args(["schema-sql", "sqlite"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
}

/// `pgw chat --json` against a hanging simulator, interrupted by `signal` once the request is
/// in flight: exit `code`, one JSON object naming the signal, and the drain message.
async fn interrupted_chat(signal: &str, code: i32, name: &str) {
    let script =
        upstream_sim::script::Script::from_json(include_str!("../fixtures/hang.json")).unwrap();
    let sim = upstream_sim::Sim::start(script).unwrap();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pgw"))
        .env_clear()
        .args(["chat", "--json", "--no-env-file", "--base-url"])
        .arg(sim.base_url())
        .args(["--api-key", KEY, "--model", "m", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sim.wait_for_requests(1).await;
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "one JSON object: {stdout}");
    let value: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(value["schema_version"], 1);
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["type"], "Interrupted", "{value}");
    assert_eq!(value["error"]["signal"], name, "{value}");
    assert!(stderr.contains("draining"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_22_sigterm_drains_and_exits_143_with_one_json_object() {
    interrupted_chat("-TERM", 143, "SIGTERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_22_sighup_drains_and_exits_129_with_one_json_object() {
    interrupted_chat("-HUP", 129, "SIGHUP").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_22_sigint_json_prints_one_object_and_exits_130() {
    interrupted_chat("-INT", 130, "SIGINT").await;
}

/// Issue 22: the short soak CI runs — 2 000 calls at concurrency 64 against in-process faulty
/// simulators, 10 % dropped by the caller: the ledger holds, nothing is in flight after close.
#[test]
fn issue_22_short_soak_ledger_holds() {
    let pgw = Pgw::new();
    let (code, value, stderr) = pgw.run_json(
        &[
            "soak",
            "--calls",
            "2000",
            "--concurrency",
            "64",
            "--drop-percent",
            "10",
            "--seed",
            "7",
            "--json",
        ],
        &[],
    );
    assert_eq!(code, 0, "{value} {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(value["ok"], true, "{value}");
    assert_eq!(value["ledger"]["holds"], true, "{value}");
    assert_eq!(value["inflight_after_close"], 0);
    let n = |k: &str| value[k].as_u64().unwrap();
    assert_eq!(n("succeeded") + n("failed") + n("dropped"), 2000, "{value}");
    assert!(n("dropped") > 0, "some calls were dropped: {value}");
    assert!(
        value["ledger"]["failed_attempt_rows"].as_u64().unwrap() > 0,
        "faults were injected: {value}"
    );
}

/// The secret canaries of the sweep, one per secret-bearing key.
const SWEEP: [(&str, &str); 5] = [
    ("API_KEY", "sk-cnry-apikey-0001aa"),
    ("HEADERS", "cnry-header-0002bb"),
    ("QUERY", "cnry-query-0003cc"),
    ("BASE_URL password", "cnry-pw-0004dd"),
    ("PGW_CACHE_SALT", "cnry-salt-0005ee"),
];

/// Issue 22: the secret sweep. `pgw chat` runs with a canary in every secret-bearing key
/// against an upstream that echoes every one it was sent (plain, JSON-escaped, as a Bearer
/// token) in its error bodies; no canary (nor its `cnry` stem) appears on stdout, on stderr with
/// `RUST_LOG=trace`, or anywhere in the SQLite telemetry file.
#[test]
fn issue_22_secret_sweep_finds_no_canary() {
    // The upstream echoes what it was sent (key, headers, query, URL userinfo); the scope-level
    // salt never leaves the process, so it is a canary for logs and the file only.
    let echo: String = SWEEP[..4]
        .iter()
        .map(|(_, c)| format!("{c} {} Bearer {c} ", c.replace('-', "\\u002d")))
        .collect();
    let body = format!("{{\"error\":{{\"message\":\"echo: {echo}\"}}}}");
    let response = |status: u16| {
        serde_json::json!({
            "status": status,
            "headers": [["content-type", "application/json"]],
            "chunks": [{ "text": body }],
        })
    };
    let script = serde_json::json!({
        "version": 1,
        "responses": [response(503), response(500), response(401)],
    });
    let pgw = Pgw::new();
    let script_path = pgw.dir.path().join("echo.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let sim = crate::support::SimProcess::start(&script_path);
    let db = pgw.dir.path().join("sweep.db");
    let base_url = format!("http://user:{}@{}/v1", SWEEP[3].1, sim.addr);
    let headers = format!("{{\"x-auth\":\"{}\"}}", SWEEP[1].1);
    let query = format!("{{\"token\":\"{}\"}}", SWEEP[2].1);
    let env = [
        ("LLM__QWEN__1__BASE_URL", base_url.as_str()),
        ("LLM__QWEN__1__API_KEY", SWEEP[0].1),
        ("LLM__QWEN__1__MODEL", "m"),
        ("LLM__QWEN__1__HEADERS", headers.as_str()),
        ("LLM__QWEN__1__QUERY", query.as_str()),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02"),
        ("PGW_CACHE_SALT", SWEEP[4].1),
        ("RUST_LOG", "trace"),
    ];
    let telemetry = format!("sqlite:{}", db.display());
    for json in [true, false] {
        let mut args = vec!["chat", "--no-env-file", "--telemetry", &telemetry];
        if json {
            args.push("--json");
        }
        args.push("hi");
        let (code, stdout, stderr) = pgw.run(&args, &env);
        assert_ne!(code, 0, "the upstream refuses: {stdout} {stderr}");
        assert!(stderr.len() > 1000, "trace logs were produced");
        for (key, canary) in SWEEP {
            assert!(!stdout.contains(canary), "stdout shows {key}: {stdout}");
            assert!(!stderr.contains(canary), "stderr shows {key}");
        }
        assert!(!stdout.contains("cnry"), "stdout: {stdout}");
        let leaked: Vec<&str> = stderr.lines().filter(|l| l.contains("cnry")).collect();
        assert!(leaked.is_empty(), "stderr lines with a canary: {leaked:#?}");
    }
    let mut bytes = std::fs::read(&db).unwrap();
    if let Ok(wal) = std::fs::read(pgw.dir.path().join("sweep.db-wal")) {
        bytes.extend(wal);
    }
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("llm_calls"), "the telemetry file was written");
    for (key, canary) in SWEEP {
        assert!(!text.contains(canary), "the SQLite file holds {key}");
    }
    assert!(
        !text.contains("cnry"),
        "the SQLite file holds a canary stem"
    );
}
