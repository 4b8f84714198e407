//! [`CallHandle`]: one open logical call over several serial loops (an embedding call's
//! batches, the structured-output ladder's rounds), made by `Governor::begin_call` /
//! `Governor::begin_ladder_call`. Re-exported from `crate::governor`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use gateway_ports::{CallStats, GatewayError, LlmResponse};
use tracing::Instrument;

use super::call::Governed;
use crate::attempt::{AttemptRunner, SettleMode};
#[cfg(doc)]
use crate::cache::CacheCall;
use crate::call_context::{CallContext, CallGuard, emit_terminal_failure, new_uuid_v4};
use crate::retry_loop::{LoopPolicy, run_loop};
use crate::rows::{CacheHitRowFacts, RowCall};
use crate::scope::{LoopEnv, ScopeState};
use crate::telemetry::input::RowInput;

/// One open logical call over several serial loops, made by
/// [`Governor::begin_call`](super::Governor::begin_call).
///
/// Every [`CallHandle::run_loop`] is a fresh governance loop (own failure counter, reasons,
/// demotion map and stall clock, `max_attempts` per loop) inside the call's one context and one
/// deadline: attempts accumulate, every row carries the one `logical_call_id`, and the
/// remaining deadline is shared. Terminal-row discipline: a loop that fails
/// writes the call's terminal row and ends the call (later `run_loop`s return the same error
/// without running); [`CallHandle::fail`] writes it for an error the caller raises after its
/// loops (e.g. a merge that fails); [`CallHandle::finish`] ends a successful call without
/// one; dropping an unfinished handle writes the `cancelled` terminal row (the `CallGuard`).
/// At most one terminal row per call on every path.
pub struct CallHandle {
    pub(super) inner: Arc<ScopeState>,
    pub(super) ctx: Arc<CallContext>,
    pub(super) guard: CallGuard,
    pub(super) deadline: Option<Duration>,
    pub(super) deadline_at: Option<tokio::time::Instant>,
    pub(super) stream: bool,
    pub(super) span: tracing::Span,
    pub(super) ended: Option<GatewayError>,
}

impl fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallHandle")
            .field("logical_call_id", &self.ctx.logical_call_id())
            .field("attempts", &self.ctx.attempts())
            .field("deadline", &self.deadline)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl CallHandle {
    /// The call's one logical id.
    pub fn logical_call_id(&self) -> &str {
        self.ctx.logical_call_id()
    }

    /// Runs one governance loop of this call (one embedding batch) with `policy` and
    /// `settle`. `row_input` is this loop's input for its attempt rows (the batch
    /// texts); `None` uses the call-level input. The loop runs under the **remaining** part of
    /// the call's deadline; an expired deadline (also before the loop starts) is
    /// `CallDeadlineExceeded { scope, deadline_s = the whole deadline }` (the
    /// cancelled attempt is settled and its row written first).
    ///
    /// Errors: the loop's error; it also writes the call's terminal row and ends the call, so a
    /// later `run_loop` returns the same error without running.
    /// The returned [`Governed::stats`] is the call's snapshot so far.
    pub async fn run_loop<R: AttemptRunner>(
        &mut self,
        runner: &R,
        policy: LoopPolicy,
        settle: SettleMode,
        row_input: Option<Arc<RowInput>>,
    ) -> Result<Governed, GatewayError> {
        if let Some(error) = &self.ended {
            return Err(error.clone());
        }
        let gov = &*self.inner;
        let row_call = match row_input {
            Some(input) => {
                let base = self.ctx.row_call();
                let mut call = RowCall::new(
                    base.logical_call_id.clone(),
                    base.operation,
                    base.scope.clone(),
                );
                call.input = Some(input);
                Arc::new(call)
            }
            None => Arc::clone(self.ctx.row_call()),
        };
        let ctx = &self.ctx;
        let deadline_at = self.deadline_at;
        let stream = self.stream;
        let outcome = async {
            let env = LoopEnv {
                gov,
                ctx,
                row_call: &row_call,
                policy,
                settle,
                deadline_at,
                stream,
                commit: None,
            };
            let governed = Box::pin(run_loop(env, runner));
            let Some(at) = deadline_at else {
                return governed.await.map_err(Some);
            };
            if tokio::time::Instant::now() >= at {
                return Err(None); // E-7: no time left for this loop
            }
            match tokio::time::timeout_at(at, governed).await {
                Ok(result) => result.map_err(Some),
                Err(_) => {
                    // G-101: the loop is dropped; await this call's cleanup jobs.
                    gov.queue.wait_call_idle(ctx.logical_call_id()).await;
                    Err(None)
                }
            }
        }
        .instrument(self.span.clone())
        .await;
        match outcome {
            Ok(success) => Ok(Governed {
                result: success.result,
                source: success.source,
                call_id: success.call_id,
                latency_ms: success.latency_ms,
                stats: self.ctx.snapshot(),
            }),
            Err(error) => {
                let error = error.unwrap_or_else(|| {
                    self.ctx.attach_cause(
                        crate::deadline::CallDeadlineExceeded {
                            deadline: self.deadline.unwrap_or_default(),
                        }
                        .into_error(&gov.scope),
                    )
                });
                Err(self.fail(error).await)
            }
        }
    }

    /// Ends the call with `error` raised by the caller after its loops (e.g. batches that
    /// disagree on the dimension): attaches the call's cause and attempt count
    /// ([`CallContext::attach_cause`]), writes the terminal row inline unless one was
    /// already written, and disarms the guard. Returns the error to hand to the caller; later
    /// `run_loop`s return it too.
    pub async fn fail(&mut self, error: GatewayError) -> GatewayError {
        let error = self.ctx.attach_cause(error);
        emit_terminal_failure(&self.ctx, self.inner.sink.as_ref(), &error).await;
        self.guard.disarm();
        if self.ended.is_none() {
            self.ended = Some(error.clone());
        }
        error
    }

    /// Ends a successful call: disarms the guard (no terminal row) and returns the call's
    /// frozen statistics: one `logical_call_id`, the attempts of all loops, the
    /// summed generation, `total_latency_ms` since [`Governor::begin_call`](super::Governor::begin_call).
    pub fn finish(mut self) -> CallStats {
        self.guard.disarm();
        self.ctx.snapshot()
    }

    /// Runs `step` — a response-cache read or write of this call — under the
    /// **remaining** part of the call's deadline.
    ///
    /// Errors: the call's earlier error if it already ended; `CallDeadlineExceeded` when the
    /// deadline expires first (the step is dropped, the call's terminal row is written and the
    /// call ends, as for a loop; CF-314).
    pub async fn within_deadline<F: Future>(&mut self, step: F) -> Result<F::Output, GatewayError> {
        if let Some(error) = &self.ended {
            return Err(error.clone());
        }
        let outcome = match self.deadline_at {
            None => Some(step.instrument(self.span.clone()).await),
            Some(at) if tokio::time::Instant::now() >= at => None,
            Some(at) => tokio::time::timeout_at(at, step.instrument(self.span.clone()))
                .await
                .ok(),
        };
        if let Some(value) = outcome {
            return Ok(value);
        }
        let gov = &*self.inner;
        gov.queue.wait_call_idle(self.ctx.logical_call_id()).await;
        let error = self.ctx.attach_cause(
            crate::deadline::CallDeadlineExceeded {
                deadline: self.deadline.unwrap_or_default(),
            }
            .into_error(&gov.scope),
        );
        Err(self.fail(error).await)
    }

    /// Ends a call served from the response cache: `hit` (already restored
    /// and rewritten by [`CacheCall::read`]) gets a fresh `call_id` and this call's statistics
    /// (attempts 0 unless a loop ran, a fresh `logical_call_id`, `total_latency_ms` = time on
    /// the cache path), and exactly one `cache_hit` row is emitted, after the snapshot.
    pub async fn finish_hit(mut self, mut hit: LlmResponse) -> LlmResponse {
        self.guard.disarm();
        hit.call_id = new_uuid_v4();
        hit.call_stats = Some(self.ctx.snapshot());
        let sink = &self.inner.sink;
        if sink.wants_rows() {
            sink.cache_hit(CacheHitRowFacts {
                call: Arc::clone(self.ctx.row_call()),
                call_id: hit.call_id.clone(),
                response: Box::new(hit.clone()),
            })
            .await;
        }
        hit
    }
}
