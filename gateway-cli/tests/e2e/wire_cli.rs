//! `pgw` in front of a real server (README D26, D36 and the issue's CLI items), end to end over
//! `pgw sim` processes: doctor's probes and exit codes, `pgw chat`'s retry lines, deadline and
//! last failure, and `pgw embed` printing the f32 values the server sent.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use crate::support::{KEY, Pgw, SimProcess};
use serde_json::{Value, json};

/// Writes `script` into `dir` and starts `pgw sim` on it.
fn sim_with(dir: &tempfile::TempDir, script: &Value) -> SimProcess {
    let path: PathBuf = dir.path().join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    SimProcess::start(&path)
}

fn doctor(pgw: &Pgw, base_url: &str, model: &str, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "doctor",
        "--json",
        "--base-url",
        base_url,
        "--api-key",
        KEY,
        "--model",
        model,
    ];
    args.extend_from_slice(extra);
    pgw.run_json(&args, &[])
}

#[test]
fn d36_doctor_models_list_names_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"completion": {"content": "hi", "model": "m"}}]}),
    );
    let (code, value, _) = doctor(&Pgw::new(), &sim.base_url(), "m", &[]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "ok");
    assert_eq!(value["sources"][0]["probe"], "models");
}

#[test]
fn d36_doctor_model_missing_has_its_own_exit_code_and_names_the_listed_models() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"completion": {"content": "hi", "model": "llama-3-8b"}}]}),
    );
    let pgw = Pgw::new();
    let (code, value, _) = doctor(&pgw, &sim.base_url(), "gpt-x", &[]);
    assert_eq!(code, 14, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "model_missing");
    assert_eq!(value["sources"][0]["models_listed"], json!(["llama-3-8b"]));
    let (code, stdout, _) = pgw.run(
        &[
            "doctor",
            "--base-url",
            &sim.base_url(),
            "--api-key",
            KEY,
            "--model",
            "gpt-x",
        ],
        &[],
    );
    assert_eq!(code, 14);
    assert!(stdout.contains("model gpt-x is not listed"), "{stdout}");
    // The time reads with the status; the listing ends the line.
    assert!(
        stdout.contains(" ms; model gpt-x is not listed; the server lists: llama-3-8b\n"),
        "{stdout}"
    );
}

#[test]
fn d36_doctor_without_standard_models_probes_one_chat_completion() {
    for models in [
        json!({"match": {"path": "/models"}, "status": 404, "chunks": [{"text": "Not Found"}]}),
        json!({"match": {"path": "/models"}, "headers": {"content-type": "application/json"},
               "chunks": [{"text": "{\"models\":[{\"name\":\"m\"}]}"}]}),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let sim = sim_with(
            &dir,
            &json!({"version": 1, "responses": [
            models, {"completion": {"content": "p"}}]}),
        );
        let (code, value, _) = doctor(&Pgw::new(), &sim.base_url(), "m", &[]);
        assert_eq!(code, 0, "{value}");
        assert_eq!(value["sources"][0]["verdict"], "ok");
        assert_eq!(
            value["sources"][0]["probe"], "chat",
            "says which probe it used"
        );
    }
}

#[test]
fn d36_doctor_refusal_shows_the_scrubbed_reason() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{{\"error\":{{\"message\":\"Incorrect API key provided: {KEY}. Authorization: Bearer {KEY}\",\"type\":\"invalid_request_error\"}}}}"
    );
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"match": {"path": "/models"}, "status": 404, "chunks": [{"text": "nope"}]},
        {"status": 401, "headers": {"content-type": "application/json"},
         "chunks": [{"text": body}]}]}),
    );
    let (code, value, _) = doctor(&Pgw::new(), &sim.base_url(), "m", &[]);
    assert_eq!(code, 13, "{value}");
    let source = &value["sources"][0];
    assert_eq!(source["verdict"], "refused");
    assert_eq!(source["http_status"], 401);
    let reason = source["reason"].as_str().unwrap();
    assert!(reason.contains("Incorrect API key provided"), "{reason}");
    assert!(!value.to_string().contains(KEY), "scrubbed: {value}");
}

#[test]
fn d36_doctor_chat_probe_with_a_missing_model_is_model_missing() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"match": {"path": "/models"}, "status": 404, "chunks": [{"text": "nope"}]},
        {"status": 400, "headers": {"content-type": "application/json"},
         "chunks": [{"text": "{\"error\":{\"message\":\"Invalid model name passed in model=m\"}}"}]}]}),
    );
    let (code, value, _) = doctor(&Pgw::new(), &sim.base_url(), "m", &[]);
    assert_eq!(code, 14, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "model_missing");
}

#[test]
fn d36_doctor_embedding_scope_probes_one_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"match": {"path": "/models"}, "status": 404, "chunks": [{"text": "nope"}]}]}),
    );
    let (code, value, _) = doctor(&Pgw::new(), &sim.base_url(), "e", &["--kind", "embedding"]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["sources"][0]["probe"], "embedding");
}

#[test]
fn d26_chat_prints_one_line_per_retry_or_wait_and_the_hint_at_ms_precision() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"status": 429, "headers": {"retry-after": "0.25"}, "chunks": [{"text": "{}"}]},
        {"completion": {"content": "finally"}}]}),
    );
    let (code, stdout, stderr) = Pgw::new().run(
        &[
            "chat",
            "--base-url",
            &sim.base_url(),
            "--api-key",
            KEY,
            "--model",
            "m",
            "hi",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "finally");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("429 from cli_1"))
        .collect();
    // The wait is max(backoff, hint) at millisecond precision: "waiting 0.557 s, attempt 2".
    let wait = lines
        .iter()
        .find(|l| l.contains(", waiting ") && l.ends_with(" s, attempt 2"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let seconds = wait
        .split(", waiting ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap();
    assert_eq!(seconds.split('.').nth(1).map(str::len), Some(3), "{wait}");
    assert!(seconds.parse::<f64>().unwrap() >= 0.25, "{wait}");
    assert!(lines.iter().all(|l| l.starts_with("pgw: ")), "{stderr}");
}

#[test]
fn chat_deadline_flag_bounds_a_persistent_429() {
    let dir = tempfile::tempdir().unwrap();
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"status": 429, "headers": {"retry-after": "30"}, "chunks": [{"text": "{}"}]}]}),
    );
    let start = Instant::now();
    let (code, stdout, stderr) = Pgw::new().run(
        &[
            "chat",
            "--base-url",
            &sim.base_url(),
            "--api-key",
            KEY,
            "--model",
            "m",
            "--deadline-s",
            "0.5",
            "hi",
        ],
        &[],
    );
    assert!(start.elapsed() < Duration::from_secs(10), "{stderr}");
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("CallDeadlineExceeded"), "{stderr}");
    // The announced wait is what remains of the 30 s hold (29.999 s or 30.000 s).
    assert!(
        stderr.contains("429 from cli_1, waiting 29.9") || stderr.contains("waiting 30.000 s"),
        "the wait is announced: {stderr}"
    );
    let (code, _, stderr) = Pgw::new().run(
        &[
            "chat",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
            "--model",
            "m",
            "--deadline-s",
            "-1",
            "hi",
        ],
        &[],
    );
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn embed_prints_the_f32_values_the_server_sent() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.25,0.3]}],"model":"e","usage":{"prompt_tokens":1,"total_tokens":1}}"#;
    let sim = sim_with(
        &dir,
        &json!({"version": 1, "responses": [
        {"match": {"path": "/embeddings"}, "headers": {"content-type": "application/json"},
         "chunks": [{"text": body}]}]}),
    );
    let pgw = Pgw::new();
    let (code, stdout, stderr) = pgw.run(
        &[
            "embed",
            "--base-url",
            &sim.base_url(),
            "--api-key",
            KEY,
            "--model",
            "e",
            "x",
        ],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.trim(), "[0.1,-0.25,0.3]");
    let (code, stdout, _) = pgw.run(
        &[
            "embed",
            "--json",
            "--base-url",
            &sim.base_url(),
            "--api-key",
            KEY,
            "--model",
            "e",
            "x",
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert!(stdout.contains("[0.1,-0.25,0.3]"), "{stdout}");
}
