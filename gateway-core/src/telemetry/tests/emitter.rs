//! Tests of the telemetry emitter against a fake recorder: rows handed over at emit in order,
//! flush, and refusals counted once and never propagated.
//!
//! Separate: the only tests here that run the emitter and its recorder.

use super::*;

/// A recorder like the SQLite one: `record` only queues (rows become visible in
/// `written` at its `flush`); `fail` refuses every row and counts it, as a full queue would.
#[derive(Debug, Default)]
struct FakeRecorder {
    pending: Mutex<Vec<TelemetryRow>>,
    written: Mutex<Vec<TelemetryRow>>,
    fail: bool,
    refused: Mutex<u64>,
    flushes: Mutex<u32>,
    closes: Mutex<u32>,
}

impl TelemetryStatusProvider for FakeRecorder {
    fn status(&self) -> TelemetryStatus {
        let mut s = TelemetryStatus::for_backend("sqlite");
        s.dropped_rows = 1 + *self.refused.lock().unwrap();
        s
    }
}

#[async_trait]
impl TelemetryRecorder for FakeRecorder {
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        if self.fail {
            *self.refused.lock().unwrap() += 1;
            return Err(RecordError::new(RecordErrorKind::Dropped, "queue full"));
        }
        self.pending.lock().unwrap().push(row);
        Ok(())
    }
    async fn flush(&self) {
        *self.flushes.lock().unwrap() += 1;
        let rows: Vec<_> = self.pending.lock().unwrap().drain(..).collect();
        self.written.lock().unwrap().extend(rows);
    }
    async fn close(&self) {
        *self.closes.lock().unwrap() += 1;
        self.flush().await;
    }
}

pub(super) fn kinds(rows: &Mutex<Vec<TelemetryRow>>) -> Vec<EventKind> {
    rows.lock().unwrap().iter().map(|r| r.event_kind).collect()
}

// covers: T-1, T-51, R-24, D31
#[tokio::test]
async fn t_1_d31_emitter_hands_rows_over_at_emit_in_order_and_flush_covers_them() {
    let rec = Arc::new(FakeRecorder::default());
    let emitter = TelemetryEmitter::new(rec.clone(), EmitterConfig::default()).unwrap();
    emitter
        .attempt(success(chat_call(), "m", ok_result(1, 1)))
        .await;
    emitter.cache_hit(cache_hit(chat_call(), historic())).await;
    emitter
        .terminal(terminal(chat_call(), TerminalOutcome::Cancelled))
        .await;
    assert_eq!(rec.pending.lock().unwrap().len(), 3, "handed over at emit");
    assert!(rec.written.lock().unwrap().is_empty());
    RowSink::flush(&emitter).await;
    assert_eq!(
        kinds(&rec.written),
        [
            EventKind::Attempt,
            EventKind::CacheHit,
            EventKind::TerminalFailure
        ],
        "flush covers the rows handed over, in emit order"
    );
    assert_eq!(*rec.flushes.lock().unwrap(), 1);
    emitter.close().await;
    emitter.close().await;
    assert_eq!(
        *rec.closes.lock().unwrap(),
        2,
        "close is the recorder's (idempotent)"
    );
    emitter.emit(priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Cancelled)));
    assert_eq!(
        emitter.dropped_rows(),
        1,
        "after close: dropped and counted"
    );
    assert_eq!(rec.written.lock().unwrap().len(), 3);
}

/// T-39 / D31: a refused row is the recorder's to count (once), never the caller's error.
#[tokio::test]
async fn t_39_d31_recorder_refusal_is_counted_once_never_propagated() {
    let rec = Arc::new(FakeRecorder {
        fail: true,
        ..FakeRecorder::default()
    });
    let emitter = TelemetryEmitter::new(rec.clone(), EmitterConfig::default()).unwrap();
    for _ in 0..3 {
        emitter
            .attempt(success(chat_call(), "m", ok_result(1, 1)))
            .await;
    }
    emitter.flush().await;
    assert_eq!(
        emitter.dropped_rows(),
        0,
        "the emitter handed every row over"
    );
    assert_eq!(
        emitter.status().dropped_rows,
        4,
        "recorder's 1 + its 3 refusals, counted once"
    );
}
