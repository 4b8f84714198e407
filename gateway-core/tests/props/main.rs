//! Property and soak suites, one binary: proptest invariants of accumulation, the retry loop,
//! the memory limiter, the hostile-input suites (issue 22) and the seeded hedge soak.
//!
//! Each file below was a test binary of its own; they share one here so `cargo test` links a
//! handful of binaries instead of one per file (issue 14). A test that installs process- or
//! thread-wide state (a tracing subscriber: `../governance_rows.rs`) keeps its own binary.
//! With a `main.rs` here, proptest keeps each file's regression seeds in
//! `../proptest-regressions/<file>.txt` (its `SourceParallel` default), not beside the file.

#[path = "../exec/mod.rs"]
mod exec;
#[path = "../hedge_support/mod.rs"]
mod hedge_support;
#[path = "../support/mod.rs"]
mod support;

mod accumulate_fast_props;
mod accumulate_props;
mod adversarial_core;
mod hedge_soak;
mod hostile_deadline;
mod hostile_scrub;
mod hostile_usage;
mod limiter_buckets;
mod limiter_buckets_props;
mod loop_props;
mod memory_limiter;
mod permit_model;
mod request_body_props;
