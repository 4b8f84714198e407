//! Real backends, one binary (tier 2): the fault matrix through the library over real sockets
//! with SQLite telemetry, `pgw demo --backend redis` against the real Redis, and
//! `pgw telemetry` / `pgw demo --telemetry postgres://…` against the real PostgreSQL server.
//!
//! Each file below was a test binary of its own; they share one here (and the helpers in
//! `../support`) so `cargo test` links a handful of binaries instead of one per file
//! (issue 14).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[path = "../support/mod.rs"]
mod support;

mod demo_redis;
mod fault_matrix;
mod telemetry_cmd;
