//! Telemetry recorder port: persists rows, makes no semantic
//! decision, absorbs its own failures, and reports health synchronously.

use async_trait::async_trait;

use crate::error::RecordError;
use crate::telemetry::{TelemetryRow, TelemetryStatus};

/// Synchronous health of a recorder.
pub trait TelemetryStatusProvider: Send + Sync {
    /// Cheap snapshot; never blocks, never fails.
    fn status(&self) -> TelemetryStatus;
}

/// The telemetry recorder port. Binds values by column name from
/// [`TelemetryRow::columns`].
///
/// `record` is one synchronous, non-blocking hand-off onto the recorder's own bounded queue;
/// the recorder writes from there on its own task or thread. The call path calls `record`
/// inline, so it must never block, await I/O or hold a lock across I/O.
#[async_trait]
pub trait TelemetryRecorder: TelemetryStatusProvider + Send + Sync + 'static {
    /// Hands one row to the recorder's bounded queue; never blocks or awaits I/O. Writes are
    /// idempotent by `call_id`.
    ///
    /// `Err(RecordError)`: the row was not accepted (queue full, recorder closed); the
    /// recorder counts it in its `dropped_rows`. An `Err` is only ever logged by the caller.
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError>;
    /// Resolves when every row recorded before it has been written or dropped.
    /// Default: nothing pending.
    async fn flush(&self) {}
    /// Flushes or drops pending writes within a bounded time; idempotent.
    async fn close(&self) {}
}
