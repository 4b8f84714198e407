//! Tier 2 through the facade, one binary: real loopback sockets to `upstream-sim` — chat,
//! streaming, hedging, the response cache, effort, structured output, embeddings, the wire
//! decisions, the assembly paths, hostile deadlines and (feature `postgres`) Postgres telemetry.
//!
//! Each file below was a test binary of its own; they share one here so `cargo test` links a
//! handful of binaries instead of one per file (issue 14). A test that installs a thread-default
//! tracing subscriber (`../spans.rs`) keeps its own binary.

#[path = "../support/cache_isolation.rs"]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "shared scenario: a failed setup is a failed test"
)]
mod cache_isolation;
#[path = "../client_support/mod.rs"]
mod client_support;

mod client_assembly;
mod e2e_cache;
mod e2e_chat;
mod e2e_hedge;
mod e2e_stream;
mod effort_e2e;
mod embedding_e2e;
mod hostile_deadline;
mod postgres_telemetry;
mod structured_e2e;
mod wire_e2e;
