//! Tier 1 (05 R-30), one binary: the governor, the retry loop, admission, deadline, cleanup,
//! hedging, the response cache, streaming commit and the attempt executor, on tokio's paused
//! clock over `ScriptedRunner` / `ScriptedWire` and the memory backends.
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

mod admission;
mod cache;
mod cases_governance;
mod cleanup;
mod clock;
mod deadline;
mod effort_executor;
mod executor_governed;
mod executor_timing;
mod executor_wire;
mod governance_sweep;
mod governor_lifecycle;
mod hedge;
mod hedge_stall;
mod retry_budget;
mod retry_loop;
mod stream_commit;
mod structured_cache;
mod structured_ladder;
mod wire_round2;
