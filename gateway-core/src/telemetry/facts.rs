//! Constructors of the row facts for code outside `gateway-core`: the fact types are
//! `#[non_exhaustive]`, so other crates cannot write their literals. A custom `RowSink` or
//! `TelemetryRecorder` test, a bench or a fixture (`gateway-testkit`) builds facts here; the
//! core itself fills every field where it emits a row.

use std::sync::Arc;

use gateway_ports::{CallStats, LlmResponse, SourceConfig};

use crate::rows::{
    AttemptRowFacts, AttemptRowOutcome, CacheHitRowFacts, RowCall, TerminalOutcome,
    TerminalRowFacts,
};

impl AttemptRowFacts {
    /// Facts of one attempt row: attempt 1, not a hedge leg.
    pub fn new(
        call: Arc<RowCall>,
        call_id: impl Into<String>,
        source: Arc<SourceConfig>,
        latency_ms: u64,
        outcome: AttemptRowOutcome,
    ) -> Self {
        Self {
            call,
            call_id: call_id.into(),
            source,
            attempt: 1,
            hedge_leg: false,
            latency_ms,
            outcome,
        }
    }
}

impl TerminalRowFacts {
    /// Facts of one terminal row with the frozen `stats` snapshot.
    pub fn new(
        call: Arc<RowCall>,
        call_id: impl Into<String>,
        outcome: TerminalOutcome,
        stats: CallStats,
    ) -> Self {
        Self {
            call,
            call_id: call_id.into(),
            outcome,
            stats,
        }
    }
}

impl CacheHitRowFacts {
    /// Facts of one cache-hit row serving `response`.
    pub fn new(call: Arc<RowCall>, call_id: impl Into<String>, response: LlmResponse) -> Self {
        Self {
            call,
            call_id: call_id.into(),
            response: Box::new(response),
        }
    }
}
