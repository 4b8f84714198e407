//! Issue 22 (hostile configuration): no value is echoed by a parse error (a secret pasted into
//! the wrong key), non-UTF-8 values of known keys are refused naming the key, and every file the
//! settings read (`API_KEY_FILE`, `PGW_PRICING_PATH`) refuses FIFOs and devices and is capped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test assertions: a failing unwrap is a failing test"
)]

use crate::support;

use std::time::Duration;

use polygateway::NON_UTF8_VALUE;
use support::*;

const CANARY: &str = "sk-canary-7f3a9c";

#[test]
fn issue_22_numeric_parse_errors_never_echo_the_value() {
    for key in [
        "LLM__QWEN__1__TIMEOUT_S",
        "LLM__QWEN__1__RPM",
        "LLM__CALL_DEADLINE_S",
        "LLM__RETRY__MAX_ATTEMPTS",
        "PGW_LEASE_TTL_S",
    ] {
        let err = env_err(&env_with(&[(key, CANARY)]));
        assert_err(&err, "config.parse", key);
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(CANARY), "{key}: {shown}");
    }
}

#[test]
fn issue_22_non_utf8_value_of_a_known_key_is_a_parse_error_naming_it() {
    for key in [
        "LLM__QWEN__1__API_KEY",
        "LLM__QWEN__1__MODEL",
        "LLM__TIMEOUT",
        "PGW_TELEMETRY_BACKEND",
    ] {
        let err = env_err(&env_with(&[(key, NON_UTF8_VALUE)]));
        assert_err(&err, "config.parse", key);
    }
    // Another program's variable is not ours: ignored.
    assert!(from_env(&env_with(&[("LS_COLORS", NON_UTF8_VALUE)])).is_ok());
}

/// Runs `f` on a thread and fails if it does not return within 10 s (a blocking open of a FIFO
/// would hang forever).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the read blocked (FIFO opened?)")
}

fn fifo(dir: &std::path::Path) -> String {
    let path = dir.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    path.to_string_lossy().into_owned()
}

#[test]
fn issue_22_api_key_file_fifo_and_device_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    for path in [fifo, "/dev/zero".to_owned(), "/dev/null".to_owned()] {
        let err = within_10s(move || {
            let mut m = env_with(&[("LLM__QWEN__1__API_KEY_FILE", path.as_str())]);
            m.remove("LLM__QWEN__1__API_KEY");
            env_err(&m)
        });
        assert_err(&err, "source.api_key_file", "LLM__QWEN__1__API_KEY_FILE");
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}

#[test]
fn issue_22_pricing_path_is_capped_and_regular_only() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = fifo(dir.path());
    let big = dir.path().join("big.json");
    // 16 MiB + 2 bytes of valid JSON: over the cap.
    let mut text = String::from("{\"m\":{\"input_per_1k\":1,\"output_per_1k\":1},\"pad\":\"");
    text.push_str(&" ".repeat(16 * 1024 * 1024));
    text.push_str("\"}");
    std::fs::write(&big, text).unwrap();
    let big = big.to_string_lossy().into_owned();
    for (path, words) in [
        (fifo, "not a regular file"),
        ("/dev/zero".to_owned(), "not a regular file"),
        (big, "larger than"),
    ] {
        let err = within_10s(move || env_err(&env_with(&[("PGW_PRICING_PATH", path.as_str())])));
        assert_eq!(err.code, "pricing.invalid", "{err:?}");
        assert!(err.to_string().contains(words), "{err}");
    }
}
