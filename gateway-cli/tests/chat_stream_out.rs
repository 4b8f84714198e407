//! `pgw chat --stream-out` (issue 24, README D32): tokens as they arrive in human mode, NDJSON
//! events with `--json` — delta lines whose contents concatenate to the answer, then one `done`
//! line carrying the same response `pgw chat --json` prints.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

use serde_json::Value;
use support::{FAST_RETRY, KEY, Pgw, SimProcess, fixture};

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
