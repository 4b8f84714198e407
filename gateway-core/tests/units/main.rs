//! Pure layers of the core, one binary: accumulation, classification, Retry-After, backoff,
//! redaction, verdict, selectors, pacer, effort, thinking, structured output, request bodies,
//! the hedge assembly guards and the memory breaker. No scripted runner, no governor.
//!
//! Each file below was a test binary of its own; they share one here so `cargo test` links a
//! handful of binaries instead of one per file (issue 14). A test that installs process- or
//! thread-wide state (a tracing subscriber: `../governance_rows.rs`) keeps its own binary.
//! With a `main.rs` here, proptest keeps each file's regression seeds in
//! `../proptest-regressions/<file>.txt` (its `SourceParallel` default), not beside the file.

mod accumulate;
mod accumulate_sweep;
mod backoff;
mod cases_accumulate;
mod cases_classify;
mod classify;
mod effort;
mod hedge_assembly;
mod memory_breaker;
mod pacer;
mod redact;
mod request_body;
mod retry_after;
mod select;
mod structured;
mod thinking;
mod verdict;
mod verdict_tables;
mod wire_classify;
