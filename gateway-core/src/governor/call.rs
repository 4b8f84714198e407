//! The per-call types of the governor's boundary: [`CallOptions`] (what a caller may set per
//! call), [`SuccessHook`] / [`NoHook`] (work run inside the deadline after the loop's success),
//! [`Governed`] (a governed success) and [`chat_response`] (a winning attempt as the caller's
//! [`LlmResponse`]). Re-exported from `crate::governor`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gateway_ports::{CallStats, LlmResponse, SourceConfig};

use crate::attempt::TransportResult;
use crate::retry_loop::LoopSuccess;
use crate::telemetry::input::RowInput;

/// Per-call options of a governed call.
#[derive(Clone)]
#[non_exhaustive]
pub struct CallOptions {
    /// Per-call deadline override (`None` inherits the assembled one; zero is
    /// `InvalidArgument`).
    pub call_deadline: Option<Duration>,
    /// Origin named by an invalid per-call deadline (default `"ChatOptions::call_deadline"`).
    pub deadline_origin: Option<String>,
    /// The call-level row input (the emitter's; governance carries it unread).
    pub row_input: Option<Arc<RowInput>>,
    /// The request's upstream wire mode (`ChatRequest::stream`, default `true` like it): only
    /// the hedge entry gate reads it (60 H-12 — a stall-only scope hedges streaming calls only).
    pub stream: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        Self {
            call_deadline: None,
            deadline_origin: None,
            row_input: None,
            stream: true,
        }
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("call_deadline", &self.call_deadline)
            .field("deadline_origin", &self.deadline_origin)
            .field("row_input", &self.row_input.as_ref().map(|_| "<opaque>"))
            .field("stream", &self.stream)
            .finish()
    }
}

impl CallOptions {
    /// Options with this per-call deadline.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// Options carrying this row input.
    pub fn with_row_input(mut self, input: Arc<RowInput>) -> Self {
        self.row_input = Some(input);
        self
    }

    /// Options for a request with this wire mode (`ChatRequest::stream`; 60 H-12).
    pub fn with_stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }
}

/// Work run **inside** the call deadline after the loop succeeded (the deadline covers
/// cache IO), e.g. the facade's response-cache write. If the deadline expires while it runs,
/// its future is dropped (nothing stored), the call waits for its cleanup jobs and returns
/// `CallDeadlineExceeded` with its terminal row. Its duration counts into
/// `total_latency_ms`.
pub trait SuccessHook: Send + Sync {
    /// Runs once after the winning attempt's bookkeeping, before the statistics snapshot.
    fn after_success(&self, success: &LoopSuccess) -> impl Future<Output = ()> + Send;
}

/// The empty [`SuccessHook`] used by `run_chat` / `run_embed` / `run_ocr` / `run`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHook;

impl SuccessHook for NoHook {
    async fn after_success(&self, _success: &LoopSuccess) {}
}

/// A governed success: the winning attempt and the call's frozen statistics.
#[derive(Debug)]
#[non_exhaustive]
pub struct Governed {
    /// The winning attempt's judged result.
    pub result: Box<TransportResult>,
    /// The winning source.
    pub source: Arc<SourceConfig>,
    /// The winning attempt's `call_id`.
    pub call_id: String,
    /// Winning attempt latency in ms (injected clock).
    pub latency_ms: u64,
    /// The call's statistics, snapshotted just before returning.
    pub stats: CallStats,
}

impl Governed {
    /// The caller's [`LlmResponse`]: the winning attempt's judged result, the winning
    /// source's configured model and provider, and the call's statistics.
    pub fn into_response(self) -> LlmResponse {
        let mut out = chat_response(*self.result, &self.source, self.call_id, self.latency_ms);
        out.call_stats = Some(self.stats);
        out
    }
}

/// The [`LlmResponse`] of a winning attempt, without `call_stats`: projections,
/// usage, timings, fidelity snapshot, finish and stream end of `result`; model, provider and
/// name of `source`.
pub fn chat_response(
    result: TransportResult,
    source: &SourceConfig,
    call_id: String,
    latency_ms: u64,
) -> LlmResponse {
    let r = result;
    let mut out = LlmResponse::default();
    out.content = r.content;
    out.thinking = r.thinking;
    out.model = source.model.clone();
    out.provider = source.provider.clone();
    out.usage = r.usage;
    out.latency_ms = latency_ms;
    out.ttft_ms = r.ttft_ms;
    out.max_inter_token_ms = r.max_inter_token_ms;
    out.call_id = call_id;
    out.source_name = source.name.clone();
    out.usage_source = r.usage_source;
    out.model_reported = r.model_reported;
    out.thinking_observation = r.thinking_observation;
    out.applied_effort = r.applied_effort;
    out.completion = r.completion;
    out.finish_reason = r.finish_reason;
    out.stream_end = r.stream_end;
    out
}
