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
    /// Whether [`record_now`](Self::record_now) takes rows synchronously (the telemetry
    /// counterpart of 05 R-9's fast paths; issue 9 follow-up). Default `false`.
    ///
    /// Must not change over the recorder's life: the emitter asks once, at construction, and
    /// then hands every row the same way, so rows never overtake each other between the two
    /// paths.
    fn supports_record_now(&self) -> bool {
        false
    }
    /// Takes one row synchronously, without awaiting (no I/O, no lock held across I/O):
    /// `Ok(result)` means the row was handled exactly as [`record`](Self::record) would have
    /// handled it (`result` is what `record` would return), and the next
    /// [`flush`](Self::flush) covers it (05 R-24, 80 T-51). `Err(row)` hands the row back
    /// unrecorded: the fast path is not offered, use `record`. A recorder answering
    /// [`supports_record_now`](Self::supports_record_now) `true` never returns `Err`. Default:
    /// `Err(row)`.
    fn record_now(
        &self,
        row: Box<TelemetryRow>,
    ) -> Result<Result<(), RecordError>, Box<TelemetryRow>> {
        Err(row)
    }
    /// Resolves when every row recorded before it has been written or dropped (05 R-24,
    /// 80 T-51). Default: nothing pending.
    async fn flush(&self) {}
    /// Flushes or drops pending writes within a bounded time; idempotent (CT-TEL-07).
    async fn close(&self) {}
}
