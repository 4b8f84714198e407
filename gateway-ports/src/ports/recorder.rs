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

/// The telemetry recorder port (10 §8.7). Binds values by column name from
/// [`TelemetryRow::columns`].
#[async_trait]
pub trait TelemetryRecorder: TelemetryStatusProvider + Send + Sync + 'static {
    /// Writes one row (idempotent by `call_id`, CT-TEL-03). An `Err` is only ever logged.
    async fn record(&self, row: TelemetryRow) -> Result<(), RecordError>;
    /// Resolves when every row recorded before it has been written or dropped (05 R-24,
    /// 80 T-51). Default: nothing pending.
    async fn flush(&self) {}
    /// Flushes or drops pending writes within a bounded time; idempotent (CT-TEL-07).
    async fn close(&self) {}
}
