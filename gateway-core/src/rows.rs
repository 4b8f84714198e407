//! Row facts and the row sink.
//!
//! Owns the seam between governance and telemetry: the retry loop, the attempt guards and the
//! hedge orchestrator emit *facts* — what happened to one attempt, one cache hit or one failed
//! call — to [`RowSink`]; the telemetry emitter (issue "telemetry") turns facts into the
//! 39-column `TelemetryRow`. Governance never builds rows, so the loop stays free of telemetry
//! shaping and tests assert counts, kinds, labels, `logical_call_id` and `error_type` through a
//! recording fake (`gateway_testkit::RecordingRowSink`).
//!
//! A sink never fails from the loop's point of view (telemetry failures are warnings
//! inside the emitter), so its methods return `()`.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use gateway_ports::{
    AttemptError, CallOperation, CallStats, GatewayError, LlmResponse, SourceConfig,
};

use crate::attempt::TransportResult;
use crate::telemetry::input::RowInput;

/// The label of a cancelled attempt row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelLabel {
    /// `'cancelled'`: the call was dropped (caller cancellation, deadline).
    Cancelled,
    /// `'hedge_cancelled'`: the attempt was the losing leg of a hedged round.
    HedgeCancelled,
}

impl CancelLabel {
    /// The exact `error` column value.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::HedgeCancelled => "hedge_cancelled",
        }
    }
}

impl fmt::Display for CancelLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Call-level facts shared by every row of one logical call (80 T-12 "the call's" columns).
///
/// `input` is carried, never read, by governance: the facade puts what the emitter needs for
/// the call-level columns (messages summary, sampling, tenant, meta, caller dimensions) as a
/// typed [`RowInput`]; the emitter reads it.
#[derive(Clone)]
#[non_exhaustive]
pub struct RowCall {
    /// The logical call's id.
    pub logical_call_id: String,
    /// The call's operation.
    pub operation: CallOperation,
    /// The scope label.
    pub scope: String,
    /// The call-level row input (governance carries it; the emitter reads it).
    pub input: Option<Arc<RowInput>>,
}

impl RowCall {
    /// Call-level facts without an input payload.
    pub fn new(
        logical_call_id: impl Into<String>,
        operation: CallOperation,
        scope: impl Into<String>,
    ) -> Self {
        Self {
            logical_call_id: logical_call_id.into(),
            operation,
            scope: scope.into(),
            input: None,
        }
    }
}

impl fmt::Debug for RowCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowCall")
            .field("logical_call_id", &self.logical_call_id)
            .field("operation", &self.operation)
            .field("scope", &self.scope)
            .field("input", &self.input.as_ref().map(|_| "<row input>"))
            .finish()
    }
}

/// What happened to one attempt (80 T-12 columns "attempt ✓ / ✗ / ⊘").
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AttemptRowOutcome {
    /// Success: the judged result (response projections, usage, timings, stall, stream end).
    Success(Box<TransportResult>),
    /// A classified failure: `error`, `error_type`, status, cause, body.
    Failed(AttemptError),
    /// A cancelled attempt: `error = 'cancelled' | 'hedge_cancelled'`, `error_type` NULL.
    Cancelled(CancelLabel),
}

/// Facts of one attempt row (once per transport call actually started).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AttemptRowFacts {
    /// Call-level facts.
    pub call: Arc<RowCall>,
    /// The attempt's `call_id`.
    pub call_id: String,
    /// The attempt's source (model, provider, name, `extra_body` for `sampling`).
    pub source: Arc<SourceConfig>,
    /// 1-based attempt number within the call.
    pub attempt: u32,
    /// `true` for a hedge leg.
    pub hedge_leg: bool,
    /// `latency_ms`: injected-clock ms from attempt start to the emit.
    pub latency_ms: u64,
    /// What happened.
    pub outcome: AttemptRowOutcome,
}

impl AttemptRowFacts {
    /// The `error` column's cancel label, if this is a cancelled row.
    pub fn cancel_label(&self) -> Option<CancelLabel> {
        match &self.outcome {
            AttemptRowOutcome::Cancelled(label) => Some(*label),
            _ => None,
        }
    }

    /// The `error_type` column: the failure's type name, `None` for success and
    /// cancelled rows.
    pub fn error_type(&self) -> Option<&'static str> {
        match &self.outcome {
            AttemptRowOutcome::Failed(e) => Some(e.type_name()),
            _ => None,
        }
    }
}

/// How a failed logical call ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TerminalOutcome {
    /// A `GatewayError` escaped the public boundary: `error_type` = its type name.
    Error(GatewayError),
    /// The call was dropped: `error = 'cancelled'`, `error_type` NULL.
    Cancelled,
}

/// Facts of the terminal row of one failed call.
/// Never carries the last attempt's status, cause or body.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TerminalRowFacts {
    /// Call-level facts.
    pub call: Arc<RowCall>,
    /// A fresh UUIDv4 for the row.
    pub call_id: String,
    /// How the call ended.
    pub outcome: TerminalOutcome,
    /// The frozen snapshot taken right after the terminal claim (`latency_ms ==
    /// total_latency_ms`, `attempts`).
    pub stats: CallStats,
}

impl TerminalRowFacts {
    /// The `error_type` column: the error's type name; `None` for a cancellation.
    pub fn error_type(&self) -> Option<&'static str> {
        match &self.outcome {
            TerminalOutcome::Error(e) => Some(e.type_name()),
            TerminalOutcome::Cancelled => None,
        }
    }
}

/// Facts of one cache-hit row (80 T-12 "cache_hit").
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CacheHitRowFacts {
    /// Call-level facts.
    pub call: Arc<RowCall>,
    /// The hit's new `call_id`.
    pub call_id: String,
    /// The response served from the cache (historic values).
    pub response: Box<LlmResponse>,
}

/// Where governance sends row facts. Implemented by the telemetry emitter; tests use
/// `gateway_testkit::RecordingRowSink`. Each method is awaited inline by the emitting code, or
/// run by the cleanup worker for dropped attempts and calls.
#[async_trait]
pub trait RowSink: Send + Sync + fmt::Debug + 'static {
    /// One attempt row.
    async fn attempt(&self, facts: AttemptRowFacts);
    /// The terminal row of one failed or cancelled call (at most one per call).
    async fn terminal(&self, facts: TerminalRowFacts);
    /// One cache-hit row.
    async fn cache_hit(&self, facts: CacheHitRowFacts);
    /// Flushes buffered rows (`quiesce()` drains the cleanup queue, then flushes).
    async fn flush(&self) {}
    /// Whether this sink keeps any row (default `true`). A sink answering `false` drops every
    /// fact, so the attempt step skips building them (rows are excluded from the core
    /// overhead). Only the inline attempt row of the attempt step is skipped; guards and the
    /// terminal paths still hand their facts to the sink.
    fn wants_rows(&self) -> bool {
        true
    }
}

/// A sink that drops every fact (no telemetry configured).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopRowSink;

#[async_trait]
impl RowSink for NoopRowSink {
    async fn attempt(&self, _facts: AttemptRowFacts) {}
    async fn terminal(&self, _facts: TerminalRowFacts) {}
    async fn cache_hit(&self, _facts: CacheHitRowFacts) {}
    fn wants_rows(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// the no-op sink opts out of row facts; a sink keeps rows by default.
    #[test]
    fn r_56_noop_sink_wants_no_rows() {
        #[derive(Debug)]
        struct Keeps;
        #[async_trait]
        impl RowSink for Keeps {
            async fn attempt(&self, _facts: AttemptRowFacts) {}
            async fn terminal(&self, _facts: TerminalRowFacts) {}
            async fn cache_hit(&self, _facts: CacheHitRowFacts) {}
        }
        assert!(!NoopRowSink.wants_rows());
        assert!(Keeps.wants_rows());
    }
}
