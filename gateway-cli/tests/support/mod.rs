//! Shared helpers of the `pgw` end-to-end tests: run the built binary with a clean environment
//! in an empty directory, start `pgw sim` on a fixture, normalise volatile JSON fields, and
//! compare with golden files (05 R-57).
//!
//! Set `PGW_UPDATE_GOLDEN=1` to rewrite the golden files after an intended shape change.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// The test API key; the simulator accepts any key.
pub const KEY: &str = "sk-test-not-a-secret";

/// Fast retries so failing cases finish quickly (the outcome, not the timing, is asserted).
pub const FAST_RETRY: [&str; 4] = [
    "--set",
    "LLM__RETRY__BACKOFF_BASE_S=0.01",
    "--set",
    "LLM__RETRY__BACKOFF_MAX_S=0.02",
];

/// A fixture file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"))
}

/// `pgw` with an empty environment, run in a fresh empty directory (no `.env` is found).
pub struct Pgw {
    pub dir: tempfile::TempDir,
}

impl Pgw {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgw"));
        cmd.env_clear().current_dir(self.dir.path());
        cmd
    }

    /// Runs `pgw ARGS` with `env` entries and returns (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        let mut cmd = self.command();
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let Output {
            status,
            stdout,
            stderr,
        } = cmd.output().unwrap();
        (
            status.code().unwrap_or(-1),
            String::from_utf8(stdout).unwrap(),
            String::from_utf8_lossy(&stderr).into_owned(),
        )
    }

    /// Runs a `--json` command: asserts stdout is exactly one JSON object with
    /// `schema_version` 1 and returns (exit code, object, stderr).
    pub fn run_json(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
        let (code, stdout, stderr) = self.run(args, env);
        let mut lines = stdout.lines();
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no stdout; stderr: {stderr}"));
        assert!(
            lines.next().is_none(),
            "more than one stdout line: {stdout}"
        );
        let value: Value = serde_json::from_str(first).unwrap();
        assert_eq!(value["schema_version"], 1, "{value}");
        (code, value, stderr)
    }
}

/// A `pgw sim` process serving a fixture; killed on drop.
pub struct SimProcess {
    child: Child,
    pub addr: String,
}

impl SimProcess {
    pub fn start(script: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pgw"))
            .env_clear()
            .args(["sim", "--listen", "127.0.0.1:0", "--script"])
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line.trim().to_owned();
        assert!(addr.starts_with("127.0.0.1:"), "pgw sim printed {line:?}");
        Self { child, addr }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `pgw chat --json` against a fresh `pgw sim` replaying `case`, with the flag source and fast
/// retries; `extra` flags come before the prompt.
pub fn chat_case(case: &str, extra: &[&str]) -> (i32, Value) {
    let sim = SimProcess::start(&fixture(case));
    let pgw = Pgw::new();
    let base_url = sim.base_url();
    let mut args = vec![
        "chat",
        "--json",
        "--base-url",
        &base_url,
        "--api-key",
        KEY,
        "--model",
        "m",
    ];
    args.extend_from_slice(&FAST_RETRY);
    args.extend_from_slice(extra);
    args.push("hi");
    let (code, value, _stderr) = pgw.run_json(&args, &[]);
    (code, value)
}

/// Keys whose values change from run to run (ids, timings, ports, paths).
const VOLATILE: &[&str] = &[
    "call_id",
    "logical_call_id",
    "latency_ms",
    "total_latency_ms",
    "generation_ms",
    "ttft_ms",
    "max_inter_token_ms",
    "stall_ms",
    "stall_count",
    "base_url",
    "elapsed_s",
    "path",
];

/// Replaces the values of volatile keys with `"<volatile>"` (when not null).
pub fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if VOLATILE.contains(&k.as_str()) && !v.is_null() {
                    *v = Value::from("<volatile>");
                } else {
                    normalise(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        _ => {}
    }
}

/// The shape of a value: objects keep their keys, scalars become their type name.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().take(1).map(shape).collect()),
        Value::Null => Value::from("<null>"),
        Value::Bool(_) => Value::from("<bool>"),
        Value::Number(_) => Value::from("<number>"),
        Value::String(_) => Value::from("<string>"),
    }
}

/// Compares `actual` with `tests/golden/NAME.json` (or rewrites it with `PGW_UPDATE_GOLDEN=1`).
pub fn golden(name: &str, actual: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{name}.json"));
    let pretty = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("PGW_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &pretty).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with PGW_UPDATE_GOLDEN=1)", path.display()));
    let expected: Value = serde_json::from_str(&expected).unwrap();
    assert_eq!(
        &expected, actual,
        "golden {name} differs; actual:\n{pretty}"
    );
}
