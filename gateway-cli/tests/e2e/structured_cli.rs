//! `pgw chat --schema FILE` / `--json-object` / `--effort LEVEL` end to end (70 C-1, C-10,
//! C-21, C-28) against a `pgw sim` process.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::support::{KEY, Pgw, SimProcess};
use serde_json::json;

fn sim_with(pgw: &Pgw, contents: &[&str]) -> SimProcess {
    let responses: Vec<_> = contents
        .iter()
        .map(|c| json!({"completion": {"content": c}}))
        .collect();
    let path = pgw.dir.path().join("script.json");
    std::fs::write(
        &path,
        json!({"version": 1, "responses": responses}).to_string(),
    )
    .unwrap();
    SimProcess::start(&path)
}

fn chat_args<'a>(base_url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "chat",
        "--json",
        "--no-env-file",
        "--base-url",
        base_url,
        "--api-key",
        KEY,
        "--model",
        "m",
    ];
    args.extend_from_slice(extra);
    args.push("q");
    args
}

// covers: C-10 (the ladder through the CLI), C-1 (--schema FILE)
#[test]
fn c_10_schema_flag_reasks_and_prints_structured_data() {
    let pgw = Pgw::new();
    let sim = sim_with(&pgw, &["no json here", r#"{"answer": 7}"#]);
    std::fs::write(
        pgw.dir.path().join("answer.schema.json"),
        json!({"type": "object", "required": ["answer"],
               "properties": {"answer": {"type": "integer"}}})
        .to_string(),
    )
    .unwrap();
    let base_url = sim.base_url();
    let (code, value, stderr) = pgw.run_json(
        &chat_args(&base_url, &["--schema", "answer.schema.json"]),
        &[],
    );
    assert_eq!(code, 0, "{value} {stderr}");
    assert_eq!(value["response"]["structured_data"], json!({"answer": 7}));
    assert_eq!(value["response"]["call_stats"]["attempts"], 2);
    // Human output prints the validated value.
    let (code, stdout, _) = pgw.run(
        &[
            "chat",
            "--no-env-file",
            "--base-url",
            &base_url,
            "--api-key",
            KEY,
            "--model",
            "m",
            "--json-object",
            "q",
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert_eq!(stdout.trim(), r#"{"answer":7}"#);
    // A missing schema file is a usage error naming the flag.
    let (code, _, stderr) = pgw.run(&chat_args(&base_url, &["--schema", "nope.json"]), &[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--schema nope.json"), "{stderr}");
}

// covers: C-21 (a bad level is a usage error listing the names), C-28 (unknown model refused)
#[test]
fn c_21_c_28_effort_flag() {
    let pgw = Pgw::new();
    let sim = sim_with(&pgw, &["ok"]);
    let base_url = sim.base_url();
    let (code, _, stderr) = pgw.run(&chat_args(&base_url, &["--effort", "huge"]), &[]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("none, auto, minimal, low, medium, high, xhigh, max"),
        "{stderr}"
    );
    let (code, value, _) = pgw.run_json(&chat_args(&base_url, &["--effort", "HIGH"]), &[]);
    assert_ne!(code, 0);
    assert_eq!(value["error"]["type"], "RequestRejectedError", "{value}");
    assert!(
        value["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no capability entry for model m"),
        "{value}"
    );
}
