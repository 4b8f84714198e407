//! The README's commands work (issue 23): the `cargo run --release -p gateway-cli -- …` lines of
//! its ```sh blocks are extracted and run with the built `pgw` — the demo (on fewer calls, in an
//! empty folder: it must leave exactly the files it names), then the simulator, `chat --json`
//! and `doctor` against it (the simulator on an ephemeral port instead of 8089).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::*;

const PREFIX: &str = "cargo run --release -p gateway-cli -- ";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Shell-like words of one command line: double quotes group, `#` starts a comment, a trailing
/// `&` is dropped.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            '#' if !quoted && !started => break,
            c if c.is_whitespace() && !quoted => {
                if started {
                    out.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            c => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(current);
    }
    if out.last().is_some_and(|w| w == "&") {
        out.pop();
    }
    out
}

/// The `pgw` argument lists of the README's `cargo run … --` lines, in order.
fn readme_commands() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let mut in_sh = false;
    let mut commands = Vec::new();
    for line in text.lines() {
        if line.trim() == "```sh" {
            in_sh = true;
        } else if line.trim() == "```" {
            in_sh = false;
        } else if in_sh && let Some(rest) = line.trim().strip_prefix(PREFIX) {
            commands.push(words(rest));
        }
    }
    commands
}

fn find<'a>(commands: &'a [Vec<String>], name: &str) -> &'a [String] {
    commands
        .iter()
        .find(|c| c.first().is_some_and(|w| w == name))
        .unwrap_or_else(|| panic!("the README has no `pgw {name}` command: {commands:?}"))
}

#[test]
fn the_readme_starts_with_the_two_commands() {
    let text = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let first_block: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != "```sh")
        .skip(1)
        .take_while(|l| l.trim() != "```")
        .map(str::trim)
        .collect();
    assert_eq!(
        first_block,
        [
            "cargo run --release -p gateway-cli -- demo",
            "cargo test --workspace"
        ]
    );
    assert!(text.contains("docs/caveats.md"));
    assert!(!text.contains("shared/spec"));
}

/// The README's demo command prints the naive and governed runs side by side and leaves exactly
/// the two telemetry files it names, under `./pgw-demo/`.
#[test]
fn readme_demo_prints_the_side_by_side_summary_and_leaves_only_its_files() {
    let commands = readme_commands();
    let demo = find(&commands, "demo");
    let pgw = Pgw::new();
    let mut args: Vec<&str> = demo.iter().map(String::as_str).collect();
    args.extend(["--calls", "24", "--concurrency", "8"]);
    let (code, stdout, stderr) = pgw.run(&args, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("naive") && stdout.contains("governed"),
        "{stdout}"
    );
    assert!(stdout.contains("succeeded"), "{stdout}");
    assert!(stdout.contains("p99"), "{stdout}");
    assert!(stdout.contains("(holds)"), "{stdout}");
    assert!(
        stderr.contains("pgw-demo/telemetry.db") && stderr.contains("telemetry-naive.db"),
        "the demo names its files: {stderr}"
    );
    let mut top: Vec<String> = std::fs::read_dir(pgw.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["pgw-demo"]);
    let mut files: Vec<String> = std::fs::read_dir(pgw.dir.path().join("pgw-demo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["telemetry-naive.db", "telemetry.db"],
        "no -wal / -shm left behind"
    );
}

/// The README's simulator, `chat --json` and `doctor` commands, run from the repository root.
#[test]
fn readme_sim_chat_and_doctor_commands_work() {
    let commands = readme_commands();
    let sim_args: Vec<String> = find(&commands, "sim")
        .iter()
        .map(|w| w.replace("127.0.0.1:8089", "127.0.0.1:0"))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgw"))
        .env_clear()
        .current_dir(workspace_root())
        .args(&sim_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().to_owned();
    let run = |name: &str| {
        let args: Vec<String> = find(&commands, name)
            .iter()
            .map(|w| w.replace("127.0.0.1:8089", &addr))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_pgw"))
            .env_clear()
            .current_dir(workspace_root())
            .args(&args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let chat = run("chat");
    let doctor = run("doctor");
    let _ = child.kill();
    let _ = child.wait();
    assert!(addr.starts_with("127.0.0.1:"), "pgw sim printed {line:?}");
    assert_eq!(chat.0, Some(0), "{chat:?}");
    assert!(chat.1.contains("Hello from the simulator!"), "{chat:?}");
    assert!(chat.1.contains("\"ok\":true"), "{chat:?}");
    assert_eq!(doctor.0, Some(0), "{doctor:?}");
}
