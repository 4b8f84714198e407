//! The per-call context: logical-call statistics, the terminal-row discipline and call ids.
//!
//! (Named `stats` until issue 14; the name now says what it holds — the context one logical
//! call carries through every loop — rather than one of its uses.)
//!
//! Owns [`CallContext`] — one per logical call, created at the statistics boundary and shared
//! by every loop, round and leg of the call (never stored on the client) — with its
//! synchronous, thread-safe counters (`register_attempt`, the generation sample, hedges), the
//! repeatable [`CallContext::snapshot`] into `CallStats`, and the one-shot
//! [`CallContext::claim_terminal`] that makes "at most one terminal row per call" hold on every
//! path (error, deadline, cancellation). [`CallGuard`] writes the `cancelled` terminal row when
//! the call future is dropped. Ids are UUIDv4 from a per-process keyed hash, never from the OS
//! per call.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use gateway_ports::{AttemptError, CallStats, Clock, FailureReason, GatewayError};

use crate::cleanup::{CleanupQueue, JobKind};
use crate::rows::{RowCall, RowSink, TerminalOutcome, TerminalRowFacts};

static ID_KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);
static ID_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh UUIDv4 in hyphenated lower-case text. Random bits come from a keyed hash
/// (keys drawn once per process) of a process-wide counter: unique within the process,
/// unpredictable across processes, and no OS randomness per call.
pub fn new_uuid_v4() -> String {
    let n = ID_COUNTER.fetch_add(1, Ordering::Relaxed);
    // Two keyed words from one hasher: `hi` hashes `n`, `lo` hashes `(n, salt)` (`finish` does
    // not reset the state), so the counter is absorbed once (05 R-56).
    let mut h = ID_KEYS.build_hasher();
    h.write_u64(n);
    let hi = h.finish();
    h.write_u64(0x7f4a_7c15);
    let lo = h.finish();
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&hi.to_be_bytes());
    b[8..].copy_from_slice(&lo.to_be_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    // Hyphenated lower-case hex into one buffer (one allocation; this runs on every call and
    // every attempt, 05 R-56).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 36];
    let mut pos = 0;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out[pos] = b'-';
            pos += 1;
        }
        out[pos] = HEX[usize::from(byte >> 4)];
        out[pos + 1] = HEX[usize::from(byte & 0x0f)];
        pos += 2;
    }
    // ASCII by construction, so the conversion cannot fail.
    std::str::from_utf8(&out)
        .map(str::to_owned)
        .unwrap_or_default()
}

#[derive(Debug, Default, Clone, Copy)]
struct Generation {
    generation_ms: u64,
    stall_ms: Option<u64>,
    stall_count: Option<u32>,
    hedge_won: bool,
}

/// The statistics of one logical call. Methods are synchronous; the one mutex is
/// never held across an await.
pub struct CallContext {
    clock: Arc<dyn Clock>,
    started: Duration,
    attempts: AtomicU32,
    hedges: AtomicU32,
    generation: Mutex<Generation>,
    terminal_claimed: AtomicBool,
    row_call: Arc<RowCall>,
    accumulate_generation: bool,
    /// The call's last attempt failure and per-source reasons so far: written by
    /// the retry loop on each failed round, read when the call ends with a call-level error
    /// (the deadline path has no loop state left to read).
    cause: Mutex<Option<CallCause>>,
}

/// What [`CallContext::note_cause`] keeps.
#[derive(Debug, Clone)]
struct CallCause {
    last_failure: AttemptError,
    reasons: std::collections::BTreeMap<String, FailureReason>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("logical_call_id", &self.logical_call_id())
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

impl CallContext {
    /// A context for one call, reading `started` from `clock` now.
    pub fn new(clock: Arc<dyn Clock>, row_call: RowCall) -> Self {
        let started = clock.monotonic();
        Self {
            clock,
            started,
            attempts: AtomicU32::new(0),
            hedges: AtomicU32::new(0),
            generation: Mutex::new(Generation::default()),
            terminal_claimed: AtomicBool::new(false),
            row_call: Arc::new(row_call),
            accumulate_generation: false,
            cause: Mutex::new(None),
        }
    }

    /// Records the call's latest attempt failure and the per-source reasons so far (README
    /// D25). Only on failed rounds, never on the success path.
    pub fn note_cause(
        &self,
        last_failure: &AttemptError,
        reasons: &std::collections::BTreeMap<String, FailureReason>,
    ) {
        let cause = CallCause {
            last_failure: last_failure.clone(),
            reasons: reasons.clone(),
        };
        *self.cause.lock().unwrap_or_else(PoisonError::into_inner) = Some(cause);
    }

    /// `error` with the call's cause attached ([`GatewayError::with_cause`]): the
    /// last attempt failure and per-source reasons noted so far, when the error is a
    /// call-level one that carries them and has none yet, and the call's attempt count
    /// ([`GatewayError::with_attempts`]).
    pub fn attach_cause(&self, error: GatewayError) -> GatewayError {
        let cause = self
            .cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let error = error.with_attempts(self.attempts());
        match cause {
            Some(c) => error.with_cause(Some(&c.last_failure), &c.reasons),
            None => error,
        }
    }

    /// This context with accumulating generation samples: each successful round **adds** its
    /// `generation_ms` instead of overwriting it (90 E-12 step 5 `accumulate = true`, E-15: the
    /// call's `generation_ms` is the sum over its embedding batches). Used by multi-loop calls
    /// ([`crate::governor::CallHandle`]).
    pub fn with_accumulated_generation(mut self) -> Self {
        self.accumulate_generation = true;
        self
    }

    /// The logical call id.
    pub fn logical_call_id(&self) -> &str {
        &self.row_call.logical_call_id
    }

    /// The call-level row facts.
    pub fn row_call(&self) -> &Arc<RowCall> {
        &self.row_call
    }

    /// Registers one attempt before its transport is invoked; returns
    /// the attempt's 1-based number.
    pub fn register_attempt(&self) -> u32 {
        self.attempts
            .fetch_add(1, Ordering::SeqCst)
            .saturating_add(1)
    }

    /// Attempts registered so far.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// Counts one dispatched hedge leg (`hedges`).
    pub fn add_hedge(&self) {
        self.hedges.fetch_add(1, Ordering::SeqCst);
    }

    /// Hedge legs dispatched so far.
    pub fn hedges(&self) -> u32 {
        self.hedges.load(Ordering::SeqCst)
    }

    /// Overwrites `hedge_won` without touching the generation sample (a hedged round
    /// without a winner sets `false`).
    pub fn set_hedge_won(&self, hedge_won: bool) {
        self.generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hedge_won = hedge_won;
    }

    /// The original's context API `register_hedge(hedge_won)`: `hedges += 1`
    /// and the flag overwritten.
    pub fn register_hedge(&self, hedge_won: bool) {
        self.add_hedge();
        self.set_hedge_won(hedge_won);
    }

    /// Records the generation sample of a successful round (60; 10 §4.4): `generation_ms =
    /// max(0, wall − stall)`, with the stall truncated once here. The last successful
    /// round overwrites, except in an accumulating context
    /// ([`CallContext::with_accumulated_generation`]), where `generation_ms` sums.
    pub fn record_generation(
        &self,
        wall: Duration,
        stall_ms: Option<f64>,
        stall_count: Option<u32>,
        hedge_won: bool,
    ) {
        let wall_ms = u64::try_from(wall.as_millis()).unwrap_or(u64::MAX);
        let stall = stall_ms
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| s.floor() as u64);
        let mut generation_ms = wall_ms.saturating_sub(stall.unwrap_or(0));
        let mut g = self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if self.accumulate_generation {
            generation_ms = generation_ms.saturating_add(g.generation_ms);
        }
        *g = Generation {
            generation_ms,
            stall_ms: stall,
            stall_count: stall.and(stall_count),
            hedge_won,
        };
    }

    /// The frozen statistics now: synchronous and repeatable;
    /// `total_latency_ms` = injected-clock ms since the context was created, truncated.
    pub fn snapshot(&self) -> CallStats {
        let elapsed = self.clock.monotonic().saturating_sub(self.started);
        let g = *self
            .generation
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut s = CallStats::new(
            self.row_call.logical_call_id.clone(),
            self.attempts(),
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        );
        s.hedges = self.hedges.load(Ordering::SeqCst);
        s.generation_ms = g.generation_ms;
        s.hedge_won = g.hedge_won;
        s.stall_ms = g.stall_ms;
        s.stall_count = g.stall_count;
        s
    }

    /// The one-shot terminal claim: `true` exactly once per context.
    pub fn claim_terminal(&self) -> bool {
        !self.terminal_claimed.swap(true, Ordering::SeqCst)
    }

    /// Terminal-row facts for `outcome`, with the snapshot taken now.
    pub fn terminal_facts(&self, outcome: TerminalOutcome) -> TerminalRowFacts {
        TerminalRowFacts {
            call: Arc::clone(&self.row_call),
            call_id: new_uuid_v4(),
            outcome,
            stats: self.snapshot(),
        }
    }
}

/// Writes the terminal row of a call that ends in `error`, inline, at most once:
/// claims first, snapshots synchronously right after the claim, then awaits the sink.
pub async fn emit_terminal_failure(ctx: &CallContext, sink: &dyn RowSink, error: &GatewayError) {
    if ctx.claim_terminal() {
        let facts = ctx.terminal_facts(TerminalOutcome::Error(error.clone()));
        sink.terminal(facts).await;
    }
}

/// Armed from the statistics boundary until the call returns (`CallGuard`): when the
/// call future is dropped while armed and not panicking, it claims the terminal slot and
/// enqueues the `cancelled` terminal row after this call's attempt jobs. A panic
/// writes nothing (I4).
#[derive(Debug)]
pub struct CallGuard {
    ctx: Arc<CallContext>,
    sink: Arc<dyn RowSink>,
    queue: Arc<CleanupQueue>,
    armed: bool,
}

impl CallGuard {
    /// Arms a guard for `ctx`.
    pub fn new(ctx: Arc<CallContext>, sink: Arc<dyn RowSink>, queue: Arc<CleanupQueue>) -> Self {
        Self {
            ctx,
            sink,
            queue,
            armed: true,
        }
    }

    /// Disarms the guard (the call returned a result or an error on its own).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if !self.armed || std::thread::panicking() || !self.ctx.claim_terminal() {
            return;
        }
        let facts = self.ctx.terminal_facts(TerminalOutcome::Cancelled);
        let sink = Arc::clone(&self.sink);
        self.queue.enqueue(
            self.ctx.logical_call_id(),
            JobKind::Terminal,
            Box::pin(async move { sink.terminal(facts).await }),
        );
    }
}
