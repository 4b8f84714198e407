//! Telemetry recorder port (10 §8.7; 80 T-2; 05 ): persists rows, makes no semantic
//! decision, absorbs its own failures, and reports health synchronously.

use async_trait::async_trait;

use crate::error::RecordError;
use crate::telemetry::{TelemetryRow, TelemetryStatus};

/// Synchronous health of a recorder (10 §8.7, CT-TEL-06).
pub trait TelemetryStatusProvider: Send + Sync {
    /// Cheap snapshot; never blocks, never fails.
    fn status(&self) -> TelemetryStatus;
}

/// The telemetry recorder port (10 §8.7; README D31). Binds values by column name from
/// [`TelemetryRow::columns`].
///
/// `record` is one synchronous, non-blocking hand-off onto the recorder's own bounded queue;
/// the recorder writes from there on its own task or thread. The call path calls `record`
/// inline, so it must never block, await I/O or hold a lock across I/O.
#[async_trait]
pub trait TelemetryRecorder: TelemetryStatusProvider + Send + Sync + 'static {
    /// Hands one row to the recorder's bounded queue; never blocks or awaits I/O. Writes are
    /// idempotent by `call_id` (CT-TEL-03).
    ///
    /// `Err(RecordError)`: the row was not accepted (queue full, recorder closed); the
    /// recorder counts it in its `dropped_rows`. An `Err` is only ever logged by the caller.
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError>;
    /// Resolves when every row recorded before it has been written or dropped (05 R-24,
    /// 80 T-51). Default: nothing pending.
    async fn flush(&self) {}
    /// Flushes or drops pending writes within a bounded time; idempotent (CT-TEL-07).
    async fn close(&self) {}
}
