//! `pgw` end to end, one binary: the built binary in a clean environment against `pgw sim`
//! processes over loopback sockets (tier 2) — exit codes, golden `--json` shapes, the public
//! wire cases, streaming to stdout, structured output, doctor and the retry lines, OCR, hostile
//! inputs and signals, the README's commands and the user-facing text.
//!
//! Each file below was a test binary of its own; they share one here (and the helpers in
//! `../support`) so `cargo test` links a handful of binaries instead of one per file
//! (issue 14). `pgw serve`'s tests keep their own binary (`../serve.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../support/mod.rs"]
mod support;

mod cases;
mod chat_stream_out;
mod cli;
mod hostile;
mod ocr;
mod readme;
mod structured_cli;
mod user_text;
mod wire_cli;
