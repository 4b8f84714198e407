//! Cancellation cleanup.
//!
//! Dropping a call future is cancellation in Rust. What must still happen afterwards —
//! settlement, permit release, pacer leave, probe release, the cancelled attempt row and the
//! terminal row — is done by guards:
//!
//! - [`AttemptGuard`] holds one admission's acquisitions (breaker decision, pacer slot, permit)
//!   from the pick (`AdmissionGuard`) through the attempt until step 8 of G-85. On drop
//!   it applies its cell of the settlement matrix S1–S8: pacer `leave` at once, then the
//!   synchronous fast paths (`settle_and_release_now`, `release_probe_now`); only what they
//!   could not do, plus the row, is handed to the [`CleanupQueue`] as one job (governance
//!   before telemetry).
//! - the queue is bounded; [`run_cleanup_worker`] (spawned by the facade) runs jobs with at most
//!   64 at once, each bounded by 10 s; a call's attempt jobs complete before its terminal job
//!   starts; timeouts and drops are counted and logged, never silent.
//!
//! Nothing here spawns a task: the worker is one future the owner drives.
//!
//! Files: `queue` (the queue, its counters and the worker), `guard` (the attempt guard and its
//! settlement on drop).

mod guard;
mod queue;

pub use guard::{AttemptGuard, AttemptRowInfo};
pub use queue::{
    CLEANUP_CONCURRENCY, CLEANUP_JOB_TIMEOUT, CLEANUP_QUEUE_CAPACITY, CleanupQueue,
    CleanupReceiver, CleanupStats, JobFuture, JobKind, run_cleanup_worker,
};
