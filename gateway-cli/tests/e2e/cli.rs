//! `pgw` end to end (05 R-50–R-57): exit codes of wrong configurations, golden `--json` shapes,
//! `schema-sql`, `sim`, SIGPIPE, Ctrl-C and the demo's rows check.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::process::Stdio;

use crate::support::{KEY, Pgw, SimProcess, fixture, golden, normalise, shape};
use serde_json::Value;

fn normalised(mut value: Value) -> Value {
    normalise(&mut value);
    value
}

/// A port nobody listens on (bound, then released).
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/v1")
}

// ------------------------------------------------------------------ R-51: wrong configurations

/// Runs `chat` and `doctor` (both `--json`) with `args`/`env` and asserts exit 3 with a
/// `ConfigError` of `code` whose key is `key`.
fn assert_config_error(args: &[&str], env: &[(&str, &str)], code: &str, key: &str) {
    let pgw = Pgw::new();
    for command in ["chat", "doctor"] {
        let mut full = vec![command, "--json"];
        full.extend_from_slice(args);
        if command == "chat" {
            full.push("hi");
        }
        let (exit, value, _) = pgw.run_json(&full, env);
        assert_eq!(exit, 3, "{command}: {value}");
        let error = &value["error"];
        assert_eq!(value["ok"], false);
        assert_eq!(error["type"], "ConfigError");
        assert_eq!(error["code"], code, "{command}: {value}");
        assert_eq!(error["key"], key, "{command}: {value}");
        // Human mode names the key on stderr.
        let mut human = vec![command];
        human.extend_from_slice(args);
        if command == "chat" {
            human.push("hi");
        }
        let (exit, stdout, stderr) = pgw.run(&human, env);
        assert_eq!(exit, 3);
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains(key), "{command}: {stderr}");
    }
}

#[test]
fn r_51_missing_api_key_exits_3_naming_the_flag_source_key() {
    assert_config_error(
        &["--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        &[],
        "source.missing_field",
        "LLM__CLI__1__API_KEY",
    );
}

#[test]
fn r_51_missing_api_key_in_the_environment_names_its_key() {
    assert_config_error(
        &[],
        &[
            ("LLM__QWEN__1__BASE_URL", "http://127.0.0.1:9/v1"),
            ("LLM__QWEN__1__MODEL", "qwen-max"),
        ],
        "source.missing_field",
        "LLM__QWEN__1__API_KEY",
    );
}

#[test]
fn r_51_bad_number_exits_3_naming_the_key() {
    assert_config_error(
        &[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
            "--model",
            "m",
            "--timeout-s",
            "abc",
        ],
        &[],
        "config.parse",
        "LLM__CLI__1__TIMEOUT_S",
    );
    assert_config_error(
        &[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
            "--model",
            "m",
        ],
        &[("LLM__CALL_DEADLINE_S", "-1")],
        "config.domain",
        "LLM__CALL_DEADLINE_S",
    );
}

#[test]
fn r_51_hedge_threshold_above_the_timeout_exits_3() {
    let pgw = Pgw::new();
    let args = [
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key",
        KEY,
        "--model",
        "m",
        "--timeout-s",
        "5",
        "--set",
        "LLM__HEDGE__AFTER_S=6",
    ];
    for command in ["chat", "doctor"] {
        let mut full = vec![command, "--json"];
        full.extend_from_slice(&args);
        full.push("hi");
        if command == "doctor" {
            full.pop();
        }
        let (exit, value, _) = pgw.run_json(&full, &[]);
        assert_eq!(exit, 3, "{value}");
        assert_eq!(value["error"]["code"], "hedge.after_ge_min_timeout");
        // Cross-field guards name the field and the key pattern (20 §2.4).
        let text = value["error"].to_string();
        assert!(text.contains("HEDGE__AFTER_S"), "{text}");
    }
}

#[test]
fn r_51_unknown_scope_word_or_key_exits_3_naming_the_key() {
    // An unknown word for a scope field is an error naming the key (20 §2.3, A1)...
    assert_config_error(
        &[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
            "--model",
            "m",
        ],
        &[("LLM__SELECTOR", "fastest")],
        "config.parse",
        "LLM__SELECTOR",
    );
    // ...and so is an unknown scope key (issue 9: "unknown scope field" exits 3). The library
    // keeps the specification's warning `config.unknown_key` (20 §2.5, A7); `pgw` refuses it
    // by default because a typo on the command line is almost always a mistake.
    assert_config_error(
        &[
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
            "--model",
            "m",
        ],
        &[("LLM__RETRY__MAX_ATEMPTS", "3")],
        "config.unknown_key",
        "LLM__RETRY__MAX_ATEMPTS",
    );
    // `--allow-unknown-keys` restores the library's behaviour: doctor prints the warning naming
    // the key and goes on.
    let sim = SimProcess::start(&fixture("embed"));
    let pgw = Pgw::new();
    let base_url = sim.base_url();
    let (exit, value, _) = pgw.run_json(
        &[
            "doctor",
            "--json",
            "--allow-unknown-keys",
            "--base-url",
            &base_url,
            "--api-key",
            KEY,
            "--model",
            // README D36: /models must name the model; the simulator lists `sim-model`.
            "sim-model",
        ],
        &[("LLM__RETRY__MAX_ATEMPTS", "3")],
    );
    assert_eq!(exit, 0, "{value}");
    let warnings = value["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["code"] == "config.unknown_key"
            && w["message"]
                .as_str()
                .unwrap()
                .contains("LLM__RETRY__MAX_ATEMPTS")),
        "{value}"
    );
}

#[test]
fn r_41_dotenv_is_read_and_the_environment_wins() {
    let sim = SimProcess::start(&fixture("case_004_a"));
    let pgw = Pgw::new();
    std::fs::write(
        pgw.dir.path().join(".env"),
        format!(
            "LLM__DOT__1__BASE_URL={}\nLLM__DOT__1__API_KEY={KEY}\nLLM__DOT__1__MODEL=from-dotenv\n",
            sim.base_url()
        ),
    )
    .unwrap();
    let (exit, value, _) = pgw.run_json(&["chat", "--json", "hi"], &[]);
    assert_eq!(exit, 0, "{value}");
    assert_eq!(value["response"]["model"], "from-dotenv");
    assert_eq!(value["response"]["source_name"], "dot_1");
    let (exit, value, _) = pgw.run_json(
        &["chat", "--json", "hi"],
        &[("LLM__DOT__1__MODEL", "from-env")],
    );
    assert_eq!(exit, 0);
    assert_eq!(value["response"]["model"], "from-env");
    let (exit, value, _) = pgw.run_json(&["chat", "--json", "--no-env-file", "hi"], &[]);
    assert_eq!(exit, 3, "no sources without .env: {value}");
}

#[test]
fn r_51_usage_errors_exit_2() {
    let pgw = Pgw::new();
    assert_eq!(pgw.run(&["chat", "--bogus"], &[]).0, 2);
    assert_eq!(pgw.run(&["schema-sql", "mysql"], &[]).0, 2);
    assert_eq!(pgw.run(&["demo", "--calls", "0"], &[]).0, 2);
    assert_eq!(pgw.run(&["--version"], &[]).0, 0);
}

// ------------------------------------------------------------------ R-57: golden JSON shapes

#[test]
fn r_57_golden_chat_success() {
    let (code, value) = crate::support::chat_case("case_009_b", &[]);
    assert_eq!(code, 0);
    golden("chat_success", &normalised(value));
}

#[test]
fn r_57_golden_chat_call_error() {
    let (code, value) = crate::support::chat_case("case_034_b", &[]);
    assert_eq!(code, 7);
    golden("chat_call_error", &normalised(value));
}

#[test]
fn r_57_golden_chat_config_error() {
    let (code, value, _) = Pgw::new().run_json(
        &[
            "chat",
            "--json",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "hi",
        ],
        &[],
    );
    assert_eq!(code, 3);
    golden("chat_config_error", &value);
}

#[test]
fn r_57_golden_embed_success_and_error() {
    let sim = SimProcess::start(&fixture("embed"));
    let base_url = sim.base_url();
    let pgw = Pgw::new();
    let args = |extra: &'static str| {
        vec![
            "embed".to_owned(),
            "--json".to_owned(),
            "--base-url".to_owned(),
            base_url.clone(),
            "--api-key".to_owned(),
            KEY.to_owned(),
            "--model".to_owned(),
            "e".to_owned(),
            extra.to_owned(),
            "second text".to_owned(),
        ]
    };
    let owned = args("first text");
    let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (code, value, _) = pgw.run_json(&refs, &[]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["response"]["vectors"].as_array().unwrap().len(), 2);
    assert_eq!(value["response"]["dim"], 4);
    golden("embed_success", &normalised(value));
    let (code, value, _) = pgw.run_json(
        &[
            "embed",
            "--json",
            "--base-url",
            &base_url,
            "--model",
            "e",
            "x",
        ],
        &[],
    );
    assert_eq!(code, 3);
    assert_eq!(value["error"]["key"], "EMBED__CLI__1__API_KEY");
}

#[test]
fn r_53_golden_doctor_ok_unreachable_and_config_error() {
    let sim = SimProcess::start(&fixture("case_004_a"));
    let pgw = Pgw::new();
    let base_url = sim.base_url();
    let (code, value, _) = pgw.run_json(
        &[
            "doctor",
            "--json",
            "--base-url",
            &base_url,
            "--api-key",
            KEY,
            "--model",
            "sim-model",
        ],
        &[],
    );
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "ok");
    assert_eq!(value["sources"][0]["http_status"], 200);
    golden("doctor_ok", &normalised(value));

    let closed = closed_port_url();
    let (code, value, _) = pgw.run_json(
        &[
            "doctor",
            "--json",
            "--base-url",
            &closed,
            "--api-key",
            KEY,
            "--model",
            "m",
        ],
        &[],
    );
    assert_eq!(code, 13, "{value}");
    assert_eq!(value["ok"], false);
    assert_eq!(value["sources"][0]["verdict"], "unreachable");
    let mut value = normalised(value);
    value["sources"][0]["error"] = Value::from("<volatile: OS message>");
    golden("doctor_unreachable", &value);

    let (code, value, _) = pgw.run_json(&["doctor", "--json", "--model", "m"], &[]);
    assert_eq!(code, 3);
    golden("doctor_config_error", &value);

    // Human output: one line per source on stdout, the verdict first.
    let (code, stdout, _) = pgw.run(
        &[
            "doctor",
            "--base-url",
            &base_url,
            "--api-key",
            KEY,
            "--model",
            "sim-model",
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert!(stdout.starts_with("ok cli_1 "), "{stdout}");
}

#[test]
fn r_53_doctor_refused_source_exits_13() {
    // The simulator answers 404 to a path it does not know: a base URL with an extra segment
    // makes GET {base_url}/models a refusal.
    let sim = SimProcess::start(&fixture("case_004_a"));
    let base_url = format!("http://{}/nope/v1", sim.addr);
    let (code, value, _) = Pgw::new().run_json(
        &[
            "doctor",
            "--json",
            "--base-url",
            &base_url,
            "--api-key",
            KEY,
            "--model",
            "m",
        ],
        &[],
    );
    assert_eq!(code, 13, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "refused");
    assert_eq!(value["sources"][0]["http_status"], 404);
}

// ------------------------------------------------------------------ schema-sql, sim, SIGPIPE

#[test]
fn t_49_schema_sql_prints_the_ddl() {
    let pgw = Pgw::new();
    let (code, stdout, _) = pgw.run(&["schema-sql", "sqlite"], &[]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("CREATE TABLE IF NOT EXISTS llm_calls"),
        "{stdout}"
    );
    let (code, stdout, _) = pgw.run(&["schema-sql", "postgres"], &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("ADD COLUMN IF NOT EXISTS"), "{stdout}");
}

#[test]
fn r_51_stdout_survives_sigpipe() {
    let pgw = Pgw::new();
    let mut child = pgw
        .command()
        .args(["schema-sql", "postgres"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone before pgw writes: EPIPE
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn r_49_sim_rejects_an_invalid_script() {
    let pgw = Pgw::new();
    let bad = pgw.dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"version": 2, "responses": []}"#).unwrap();
    let (code, stdout, stderr) = pgw.run(&["sim", "--script", bad.to_str().unwrap()], &[]);
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(stderr.contains("version"), "{stderr}");
}

// ------------------------------------------------------------------ Ctrl-C

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r_51_ctrl_c_drops_the_call_and_exits_130() {
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
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(130));
    // Issue 22: `--json` prints one JSON object also when interrupted (tests/e2e/hostile.rs).
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.contains("\"Interrupted\""), "{stdout}");
}

// ------------------------------------------------------------------ R-54, R-55: the demo

#[test]
fn r_55_demo_json_summary_and_rows_check() {
    let pgw = Pgw::new();
    let db = pgw.dir.path().join("demo.db");
    let (code, value, _) = pgw.run_json(
        &[
            "demo",
            "--calls",
            "40",
            "--concurrency",
            "8",
            "--json",
            "--telemetry",
            db.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{value}");
    let t = &value["telemetry"];
    assert_eq!(t["check_holds"], true, "{value}");
    assert_eq!(
        t["rows"].as_u64().unwrap(),
        t["attempts"].as_u64().unwrap()
            + t["failed_calls"].as_u64().unwrap()
            + t["cache_hits"].as_u64().unwrap()
    );
    // 70 C-59: a share of the prompts repeats; those calls are served from the memory cache
    // (one `cache_hit` row each, no attempt).
    assert!(value["cache_hits"].as_u64().unwrap() > 0, "{value}");
    assert_eq!(value["cache_hits"], t["cache_hits"]);
    assert_eq!(value["calls"], 40);
    assert_eq!(
        value["succeeded"].as_u64().unwrap() + value["failed"].as_u64().unwrap(),
        40
    );
    assert!(
        value["tokens"]["completion"].as_u64().unwrap() > 0,
        "{value}"
    );
    assert!(
        value["cost"].as_f64().unwrap() > 0.0,
        "priced by the embedded table"
    );
    assert!(db.exists());
    let keys: Vec<&String> = value["breaker_opens"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["down_1", "hang_1", "healthy_1", "storm_1"]);
    // Issue 23: the breaker of the source that refuses connections opens.
    assert!(
        value["breaker_opens"]["down_1"].as_u64().unwrap() >= 1,
        "{value}"
    );
    // The naive run (one source per call, one attempt) beside the governed one.
    let naive = &value["naive"];
    assert_eq!(
        naive["succeeded"].as_u64().unwrap() + naive["failed"].as_u64().unwrap(),
        40
    );
    assert!(
        naive["succeeded"].as_u64().unwrap() < value["succeeded"].as_u64().unwrap(),
        "governance must beat the naive run: {value}"
    );
    assert!(db.with_file_name("demo-naive.db").exists());
    for leftover in [
        "demo.db-wal",
        "demo.db-shm",
        "demo-naive.db-wal",
        "demo-naive.db-shm",
    ] {
        assert!(
            !db.with_file_name(leftover).exists(),
            "{leftover} left behind"
        );
    }
    let mut skeleton = shape(&value);
    // errors_by_type is a map from error type to count: its keys vary with timing.
    skeleton["errors_by_type"] = Value::from("<map type→count>");
    skeleton["naive"]["errors_by_type"] = Value::from("<map type→count>");
    golden("demo_summary_shape", &skeleton);
}

// ------------------------------------------------------------------ 70 Part C: `pgw chat --cache`

/// `pgw chat --cache` turns the response cache on (memory when `PGW_CACHE_BACKEND` is `none`):
/// a one-shot process misses (`cache_hit false`) and still answers; `--cache --no-cache` is a
/// usage error; a bad `--cache-namespace` is a call error naming the option.
#[test]
fn c_40_chat_cache_flag() {
    let sim = SimProcess::start(&fixture("case_004_a"));
    let pgw = Pgw::new();
    let base = |extra: &[&str]| {
        let mut v = vec![
            "chat".to_owned(),
            "--json".to_owned(),
            "--no-env-file".to_owned(),
            "--base-url".to_owned(),
            sim.base_url(),
            "--api-key".to_owned(),
            KEY.to_owned(),
            "--model".to_owned(),
            "m".to_owned(),
        ];
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v.push("hi".to_owned());
        v
    };
    let owned = base(&["--cache"]);
    let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (code, value, _) = pgw.run_json(&refs, &[]);
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["response"]["cache_hit"], false);
    let owned = base(&["--cache", "--no-cache"]);
    let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
    assert_eq!(pgw.run(&refs, &[]).0, 2);
    let owned = base(&["--cache", "--cache-namespace", ""]);
    let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (code, value, _) = pgw.run_json(&refs, &[]);
    assert_ne!(code, 0, "{value}");
    assert!(value.to_string().contains("cache_namespace"), "{value}");
}
