//! Output that survives a closed pipe: `pgw chat --json | head -c1` must not panic.
//!
//! Rust ignores SIGPIPE, so a write to a closed stdout returns `EPIPE`; `println!` would panic on
//! it. Every line `pgw` prints goes through [`stdout_line`] / [`stderr_line`], which write with
//! error handling and stay quiet on a broken pipe (later writes are skipped).

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// A write to stdout failed for another reason than a closed pipe (e.g. ENOSPC on `/dev/full`).
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// `true` once a stdout write failed other than by a closed pipe: the output is incomplete, so
/// a command that would exit 0 exits 1 instead (a closed pipe is the reader's choice and stays 0).
pub fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// Writes `text` and a newline to stdout and flushes. Returns `false` when stdout is gone (a
/// broken pipe or another write error); never panics.
pub fn stdout_line(text: &str) -> bool {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return false;
    }
    let mut out = std::io::stdout().lock();
    let result = out
        .write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match result {
        Ok(()) => true,
        Err(e) => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            if e.kind() != ErrorKind::BrokenPipe {
                STDOUT_FAILED.store(true, Ordering::Relaxed);
                stderr_line(&format!("pgw: cannot write to stdout: {e}"));
            }
            false
        }
    }
}

/// Writes `text` (no newline) to stdout and flushes: a streamed token (`pgw chat
/// --stream-out`). Returns `false` when stdout is gone; never panics.
pub fn stdout_text(text: &str) -> bool {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return false;
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            if e.kind() != ErrorKind::BrokenPipe {
                stderr_line(&format!("pgw: cannot write to stdout: {e}"));
            }
            false
        }
    }
}

/// Writes `text` and a newline to stderr, ignoring every error (diagnostics are best effort).
pub fn stderr_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err
        .write_all(text.as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// Prints one JSON value on one line of stdout (the `--json` outputs).
pub fn stdout_json(value: &serde_json::Value) -> bool {
    stdout_line(&value.to_string())
}
