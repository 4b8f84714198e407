//! Configuration and reports through the public facade, one binary: the environment path, the
//! guard matrix, hedge and process-wide keys, embedding and OCR scopes, hostile and adversarial
//! maps, the error reports, the compiled guide snippets.
//!
//! Each file below was a test binary of its own; they share one here so `cargo test` links a
//! handful of binaries instead of one per file (issue 14). A test that installs a thread-default
//! tracing subscriber (`../spans.rs`) keeps its own binary.

#[path = "../client_support/mod.rs"]
mod client_support;
#[path = "../support/mod.rs"]
mod support;

mod adversarial_config;
mod config_embedding;
mod config_env;
mod config_guards;
mod config_hedge;
mod config_process;
mod guide_snippets;
mod hostile_config;
mod hostile_never_admit;
mod report;
mod structured_off;
