//! The arguments of `pgw demo` and the demo model name: a leaf shared by the in-process demo
//! (`demo.rs`), which dispatches to the Redis and structured showcases, and by those
//! showcases, so no two of these files import each other.

use std::path::PathBuf;

use clap::Args;

/// The model every demo source is configured with.
pub const DEMO_MODEL: &str = "sim-model";

/// Arguments of `pgw demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Number of chat calls in the batch (sent once naively, once governed).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub calls: u32,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub concurrency: u32,
    /// Seed of the storm simulator's faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Telemetry file of the governed run (default `./pgw-demo/telemetry.db`, in a folder the
    /// demo creates); the naive run writes next to it, with `-naive` added to the name. Existing
    /// files are appended to. A `postgres://` DSN sends the governed rows to its `llm_calls`
    /// table (created if missing; only this run's rows are counted) and records no naive rows.
    #[arg(long, value_name = "PATH|DSN")]
    pub telemetry: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Where the governance state lives: `memory` (the default: the governed-vs-naive demo in
    /// this process) or `redis` (two worker processes share one quota and one breaker through
    /// the Redis at `REDIS_URL`, default `redis://127.0.0.1:6379`, and the demo prints the
    /// shared accounting).
    #[arg(long, value_enum, default_value_t = DemoBackend::Memory)]
    pub backend: DemoBackend,
    /// Internal: run as one worker process of `--backend redis`.
    #[arg(long, hide = true, value_name = "SPEC")]
    pub redis_worker: Option<String>,
}

/// Where `pgw demo` keeps the governance state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoBackend {
    /// In this process (the governed-vs-naive comparison).
    Memory,
    /// In Redis, shared by two worker processes.
    Redis,
}
