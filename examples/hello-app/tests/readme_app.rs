//! The README's small application (issue 23): its `main.rs` is the README's Rust snippet, word
//! for word, and it answers through a governed call against the simulator when pointed at it by
//! the environment keys the README names.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::Path;
use std::process::Command;

use upstream_sim::Sim;
use upstream_sim::script::Script;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("examples/hello-app sits two levels below the repository root")
}

/// The README's ```rust block, without the lines a reader would not type.
fn readme_rust_block() -> String {
    let text = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "```rust")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .collect();
    assert!(!block.is_empty(), "the README has a ```rust block");
    block.join("\n")
}

#[test]
fn the_readme_snippet_is_this_application() {
    let main =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/main.rs")).unwrap();
    // The file starts with its crate doc line; the README shows the rest.
    let body: Vec<&str> = main
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .collect();
    assert_eq!(
        body.join("\n").trim(),
        readme_rust_block().trim(),
        "README.md's Rust snippet and examples/hello-app/src/main.rs must stay identical"
    );
}

#[test]
fn the_readme_dependency_block_names_only_polygateway_of_ours() {
    let text = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let toml: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "```toml")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .collect();
    let ours: Vec<&&str> = toml.iter().filter(|l| l.contains("path =")).collect();
    assert_eq!(ours.len(), 1, "{toml:?}");
    assert!(ours[0].starts_with("polygateway "), "{toml:?}");
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|s| s.split("\n[").next())
        .unwrap();
    assert!(deps.contains("polygateway = "), "{deps}");
    for internal in [
        "gateway-core",
        "gateway-ports",
        "adapter-",
        "upstream-sim",
        "contract-tests",
    ] {
        assert!(!deps.contains(internal), "{internal} in {deps}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_answers_through_the_simulator() {
    let script =
        std::fs::read_to_string(repo_root().join("upstream-sim/scripts/hello.json")).unwrap();
    let sim = Sim::start(Script::from_json(&script).unwrap()).unwrap();
    let base_url = sim.base_url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_hello-app"))
            .env_clear()
            .env("LLM__OPENAI__1__BASE_URL", &base_url)
            .env("LLM__OPENAI__1__API_KEY", "sk-test")
            .env("LLM__OPENAI__1__MODEL", "sim-model")
            .env("PGW_TELEMETRY_BACKEND", "none")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.trim(),
        "Hello from the simulator! (from openai_1, 1 attempt(s))",
        "{stderr}"
    );
    assert_eq!(sim.request_count(), 1);
}

#[test]
fn without_sources_the_application_names_the_missing_key() {
    let out = Command::new(env!("CARGO_BIN_EXE_hello-app"))
        .env_clear()
        .env("PGW_TELEMETRY_BACKEND", "none")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("LLM__"), "{stderr}");
}
