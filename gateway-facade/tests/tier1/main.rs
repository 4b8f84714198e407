//! Facade clients on injected transports, one binary (tier 1, paused clock where time matters):
//! embedding batching and gathering, the OCR client, streaming to the caller.
//!
//! Each file below was a test binary of its own; they share one here so `cargo test` links a
//! handful of binaries instead of one per file (issue 14). A test that installs a thread-default
//! tracing subscriber (`../spans.rs`) keeps its own binary.

mod embedding_batches;
mod embedding_gather;
mod ocr_client;
mod stream_tier1;
