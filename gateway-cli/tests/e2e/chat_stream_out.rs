//! `pgw chat --stream-out` (issue 24, README D32): tokens as they arrive in human mode, NDJSON
//! events with `--json` — delta lines whose contents concatenate to the answer, then one `done`
//! line carrying the same response `pgw chat --json` prints.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::support::{FAST_RETRY, KEY, Pgw, SimProcess, fixture};
use serde_json::Value;

fn run(case: &str, extra: &[&str]) -> (i32, String, String) {
    let sim = SimProcess::start(&fixture(case));
    let base_url = sim.base_url();
    let mut args = vec![
        "chat",
        "--stream-out",
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
    Pgw::new().run(&args, &[])
}

// covers: D32 (NDJSON events: deltas then exactly one done)
#[test]
fn d32_stream_out_json_prints_deltas_then_one_done() {
    let (code, stdout, stderr) = run("case_025_a", &["--json"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (last, deltas) = events.split_last().expect("events");
    assert_eq!(last["event"], "done", "{stdout}");
    assert!(!deltas.is_empty(), "{stdout}");
    let text: String = deltas
        .iter()
        .map(|d| {
            assert_eq!(d["event"], "delta");
            // The finish and usage frames add nothing and print no event.
            let carries = !d["content"].as_str().unwrap().is_empty()
                || !d["reasoning"].as_str().unwrap().is_empty()
                || !d["tool_calls"].as_array().unwrap().is_empty();
            assert!(carries, "an empty delta event: {d}");
            d["content"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(text, last["response"]["content"].as_str().unwrap());
    assert!(!text.is_empty());
}

// covers: D32 (human mode prints the tokens, then a newline)
#[test]
fn d32_stream_out_human_prints_the_answer() {
    let (code, stdout, stderr) = run("case_025_a", &[]);
    assert_eq!(code, 0, "{stderr}");
    let (_, json_out, _) = run("case_025_a", &["--json"]);
    let done: Value = serde_json::from_str(json_out.lines().last().unwrap()).unwrap();
    assert_eq!(
        stdout.trim_end_matches('\n'),
        done["response"]["content"].as_str().unwrap()
    );
}

/// `pgw chat --stream-out --json` against an in-process simulator playing `script`, sent
/// `signal` once `ready` deltas were printed (0: once the request is in flight). Returns the
/// exit code, the NDJSON events and stderr.
async fn interrupted_stream(
    script: upstream_sim::script::Script,
    ready: usize,
    signal: &str,
) -> (Option<i32>, Vec<Value>, String) {
    use tokio::io::{AsyncBufReadExt as _, BufReader};
    let sim = upstream_sim::Sim::start(script).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_pgw"))
        .env_clear()
        .args([
            "chat",
            "--stream-out",
            "--json",
            "--no-env-file",
            "--base-url",
        ])
        .arg(sim.base_url())
        .args(["--api-key", KEY, "--model", "m", "hi"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    sim.wait_for_requests(1).await;
    while events.len() < ready {
        let line = lines.next_line().await.unwrap().expect("a delta line");
        events.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(status.success());
    while let Some(line) = lines.next_line().await.unwrap() {
        events.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), events, stderr)
}

// covers: D32, D8 (an interrupted stream before its first token: the handlers are installed
// before the stream starts; exit 130 and one error event, not committed)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d32_stream_out_sigint_before_the_first_token_exits_130() {
    let script =
        upstream_sim::script::Script::from_json(include_str!("../fixtures/hang.json")).unwrap();
    let (code, events, stderr) = interrupted_stream(script, 0, "-INT").await;
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(events.len(), 1, "one error event: {events:?}");
    let event = &events[0];
    assert_eq!(event["event"], "error", "{event}");
    assert_eq!(event["committed"], false, "{event}");
    assert_eq!(event["error"]["type"], "Interrupted", "{event}");
    assert_eq!(event["error"]["signal"], "SIGINT", "{event}");
    assert!(stderr.contains("draining"), "{stderr}");
}

// covers: D32, D8 (SIGTERM after the first token: exit 143, the error event says committed)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d32_stream_out_sigterm_after_the_first_token_is_committed() {
    use upstream_sim::script::{End, RawChunk, Response, Script};
    let token = r#"data: {"id":"c1","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}

"#;
    let script = Script::new(vec![Response {
        chunks: Some(vec![RawChunk::text(token)]),
        end: End::Hang,
        ..Response::default()
    }]);
    let (code, events, stderr) = interrupted_stream(script, 1, "-TERM").await;
    assert_eq!(code, Some(143), "{stderr}");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["event"], "delta");
    assert_eq!(events[0]["content"], "par");
    assert_eq!(events[1]["event"], "error");
    assert_eq!(events[1]["committed"], true, "{}", events[1]);
    assert_eq!(events[1]["error"]["signal"], "SIGTERM");
}
