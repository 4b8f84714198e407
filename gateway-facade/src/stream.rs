//! `GatewayClient::chat_stream`: the answer streamed to the caller.
//!
//! The call runs exactly as [`GatewayClient::chat`] (selection, admission, retries, the
//! first-token hedge, failover, cache, rows), with a commit point
//! (`gateway_core::stream_call::CommitGate`) between the attempts and the caller: nothing is
//! forwarded until the winning attempt's first content token; after it the call is pinned to
//! that attempt and a failure ends the stream with an error whose
//! [`GatewayError::is_committed`] is `true` and whose [`GatewayError::partial_output`] holds
//! what the caller already received. See `docs/streaming.md`.
//!
//! # Cancellation and back-pressure
//!
//! [`ChatStream`] spawns nothing: the call is driven from `poll_next`. A consumer that does not
//! poll stops the upstream read once the bounded buffer ([`StreamOptions::buffer`]) is full;
//! that wait does not count against the watchdogs. Dropping the stream cancels the call like
//! dropping a `chat()` future: every attempt in flight is settled and its `cancelled` row and
//! the terminal row are written by the client's cleanup worker.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use gateway_core::executor::ChatExecutor;
use gateway_core::governor::CallOptions;
use gateway_core::stream_call::{CommitGate, DEFAULT_STREAM_BUFFER, DeltaReceiver};
use gateway_core::telemetry::RowInput;
use gateway_ports::{GatewayError, LlmResponse};

pub use gateway_core::stream_call::{StreamDelta, StreamEvent, ToolCallFragment};

use crate::client::{CHAT_DEADLINE_ORIGIN, ChatInput, ChatOptions, GatewayClient, check_chat};

/// Options of a streamed call that `chat` does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Forward reasoning fragments too (they then also reach the commit point). Default `false`.
    pub reasoning: bool,
    /// Capacity, in deltas, of the buffer between the upstream read and the consumer (at
    /// least 1). Default 16.
    pub buffer: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            reasoning: false,
            buffer: DEFAULT_STREAM_BUFFER,
        }
    }
}

impl StreamOptions {
    /// Options forwarding reasoning fragments when `reasoning` is `true`.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// Options with this buffer capacity (values below 1 mean 1).
    #[must_use]
    pub fn with_buffer(mut self, buffer: usize) -> Self {
        self.buffer = buffer.max(1);
        self
    }
}

type Driver = Pin<Box<dyn Future<Output = Result<(LlmResponse, bool), GatewayError>> + Send>>;

/// The events of one streamed chat call: [`StreamEvent::Delta`]s, then exactly one
/// [`StreamEvent::Done`] or one error, then the end of the stream. `Send`, `Unpin`; see the
/// module docs for cancellation and back-pressure.
pub struct ChatStream {
    /// The gate's buffer; `None` for a call that failed before it started.
    rx: Option<DeltaReceiver>,
    driver: Option<Driver>,
    gate: Option<Arc<CommitGate>>,
    reasoning: bool,
    forwarded: bool,
    finished: Option<Result<(LlmResponse, bool), GatewayError>>,
    done_pending: Option<Box<LlmResponse>>,
    ended: bool,
}

impl fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatStream")
            .field("running", &self.driver.is_some())
            .field("committed", &self.is_committed())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl ChatStream {
    fn failed(error: GatewayError) -> Self {
        Self {
            rx: None,
            driver: None,
            gate: None,
            reasoning: false,
            forwarded: false,
            finished: Some(Err(error)),
            done_pending: None,
            ended: false,
        }
    }

    /// `true` once the call passed its commit point (a delta was forwarded).
    pub fn is_committed(&self) -> bool {
        self.gate.as_deref().is_some_and(CommitGate::is_committed)
    }

    /// The oldest forwarded delta as the stream's next event, if one is buffered.
    fn buffered(&mut self) -> Option<Result<StreamEvent, GatewayError>> {
        let delta = self.rx.as_mut()?.try_recv().ok()?;
        self.forwarded = true;
        Some(Ok(StreamEvent::Delta(delta)))
    }

    fn finish(&mut self) -> Option<Result<StreamEvent, GatewayError>> {
        if let Some(done) = self.done_pending.take() {
            self.ended = true;
            return Some(Ok(StreamEvent::Done(done)));
        }
        match self.finished.take() {
            None => {
                self.ended = true;
                None
            }
            Some(Err(error)) => {
                self.ended = true;
                Some(Err(error))
            }
            Some(Ok((response, _hit))) => {
                // Nothing was streamed (a cache hit, a non-stream body, a tool-call-only
                // answer without fragments): the answer arrives as one delta, then `Done`.
                let mut delta = StreamDelta::content(response.content.clone());
                if self.reasoning {
                    delta.reasoning = response.thinking.clone();
                }
                self.done_pending = Some(Box::new(response));
                if !self.forwarded && !delta.is_empty() {
                    self.forwarded = true;
                    return Some(Ok(StreamEvent::Delta(delta)));
                }
                self.finish()
            }
        }
    }
}

impl Stream for ChatStream {
    type Item = Result<StreamEvent, GatewayError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(None);
        }
        // Forwarded deltas first: taking one makes room and wakes the upstream read.
        //
        // The receiver is only ever read with `try_recv`, never registered: every send happens
        // inside the driver, which this task polls, so what the driver forwarded during a poll
        // is taken right after it, and while it forwards nothing its own wakers (body read,
        // timers, room in the buffer) stand for the next delta. A registered receiver would
        // wake this task once per delta for nothing (one more poll of the whole call).
        if let Some(event) = this.buffered() {
            return Poll::Ready(Some(event));
        }
        if let Some(driver) = this.driver.as_mut() {
            match driver.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.driver = None;
                    this.finished = Some(result);
                }
                Poll::Pending => {
                    return match this.buffered() {
                        Some(event) => Poll::Ready(Some(event)),
                        None => Poll::Pending,
                    };
                }
            }
        }
        // The call ended: drain what it forwarded, then the final event.
        if let Some(event) = this.buffered() {
            return Poll::Ready(Some(event));
        }
        Poll::Ready(this.finish())
    }
}

impl GatewayClient {
    /// [`chat_stream_with`](Self::chat_stream_with) with default [`StreamOptions`].
    pub fn chat_stream(&self, input: impl Into<ChatInput>, options: ChatOptions) -> ChatStream {
        self.chat_stream_with(input, options, StreamOptions::default())
    }

    /// Streams one chat call to the caller: deltas as the committed attempt's
    /// frames arrive, then `Done` with the same [`LlmResponse`] `chat` would return for the same
    /// wire bytes (a cache hit: its content as one delta, then `Done`).
    ///
    /// Nothing runs until the stream is first polled. Errors (as the stream's one error item):
    /// those of `chat`; `InvalidArgument` for a structured request (structured output needs the
    /// whole answer — use `chat`); a failure after the first forwarded token is never retried
    /// and says [`GatewayError::is_committed`], carrying the forwarded output.
    pub fn chat_stream_with(
        &self,
        input: impl Into<ChatInput>,
        options: ChatOptions,
        stream: StreamOptions,
    ) -> ChatStream {
        let request = options.apply(input.into().0);
        let inner = Arc::clone(&self.inner);
        if inner.runtime.governor.is_closed() {
            return ChatStream::failed(GatewayError::ClientClosed);
        }
        if request.structured.is_some() {
            return ChatStream::failed(GatewayError::invalid_argument(
                "ChatRequest::structured",
                "structured output cannot be streamed (the answer must be complete to be \
                 validated); call chat instead",
            ));
        }
        if let Err(error) = check_chat(&request) {
            return ChatStream::failed(error);
        }
        let (gate, rx) = CommitGate::new(stream.buffer, stream.reasoning);
        let gate = Arc::new(gate);
        let request = Arc::new(request);
        let driver_gate = Arc::clone(&gate);
        let driver: Driver = Box::pin(async move {
            let executor = ChatExecutor::with_client_options(
                Arc::clone(&inner.transport),
                Arc::clone(&request),
                inner.executor_options.clone(),
            )
            .with_commit_gate(Arc::clone(&driver_gate));
            let mut call = CallOptions::default()
                .with_row_input(Arc::new(RowInput::chat(&request)))
                .with_stream(request.stream);
            call.call_deadline = request.call_deadline;
            call.deadline_origin = Some(CHAT_DEADLINE_ORIGIN.to_owned());
            let cache = inner
                .runtime
                .cache
                .as_ref()
                .and_then(|cache| cache.prepare(&request, None));
            inner
                .runtime
                .governor
                .run_chat_streamed(&executor, call, cache.as_ref(), &driver_gate)
                .await
        });
        ChatStream {
            rx: Some(rx),
            driver: Some(driver),
            gate: Some(gate),
            reasoning: stream.reasoning,
            forwarded: false,
            finished: None,
            done_pending: None,
            ended: false,
        }
    }
}
