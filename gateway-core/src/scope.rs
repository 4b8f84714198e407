//! The scope layer: what one scope's calls share, and what one loop is told.
//!
//! Owns the per-scope governance state ([`ScopeState`]: admission, limiter, breaker, pacer,
//! selector, clock, jitter, retry policy and budget, hedge thresholds, backpressure, call
//! deadline, row sink, cleanup queue, the closed flag), the injected [`Jitter`] source and its
//! seeded default, the [`LoopPolicy`] knobs that tell the chat, embedding and OCR loops apart, and
//! the [`LoopEnv`] one loop hands to its rounds and legs.
//!
//! Layering (no file imports one above it): `governor` (the public boundary) → `retry_loop` (the
//! loop) → `hedge` (the hedged round) → `leg` (the attempt step) → `scope` (this) → `admission`.
//! The governor builds the state; everything below reads it through `LoopEnv::gov`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_ports::{BackpressurePolicy, CircuitBreaker, Clock, RateLimiter, RetryPolicy};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::admission::Admission;
use crate::attempt::SettleMode;
use crate::budget::RetryBudget;
use crate::call_context::{CallContext, new_uuid_v4};
use crate::cleanup::CleanupQueue;
use crate::config::hedge::HedgeConfig;
use crate::pacer::Pacer;
use crate::rows::{RowCall, RowSink};
use crate::select::Selector;

/// The injected jitter source (30 vocabulary "rng"): nominally uniform in `[0, 1)`.
pub type Jitter = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The governance state of one scope, shared by the governor, its call handles and every
/// loop, round and leg of its calls (crate-internal).
pub(crate) struct ScopeState {
    pub(crate) scope: String,
    pub(crate) admission: Admission,
    pub(crate) limiter: Arc<dyn RateLimiter>,
    pub(crate) breaker: Arc<dyn CircuitBreaker>,
    pub(crate) pacer: Arc<dyn Pacer>,
    pub(crate) selector: Arc<dyn Selector>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) jitter: Jitter,
    pub(crate) retry: RetryPolicy,
    /// The scope's retry budget; `None` = off. The hedge orchestrator charges
    /// hedge legs to it (`try_withdraw` before dispatching a hedge).
    pub(crate) retry_budget: Option<Arc<RetryBudget>>,
    /// The scope's hedge thresholds (60; off by default).
    pub(crate) hedge: HedgeConfig,
    pub(crate) backpressure: BackpressurePolicy,
    pub(crate) call_deadline: Option<Duration>,
    pub(crate) sink: Arc<dyn RowSink>,
    pub(crate) queue: Arc<CleanupQueue>,
    /// Set by `Governor::close`; later calls return `ClientClosed`.
    pub(crate) closed: AtomicBool,
}

impl fmt::Debug for ScopeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeState")
            .field("scope", &self.scope)
            .field("admission", &self.admission)
            .field("retry", &self.retry)
            .field("backpressure", &self.backpressure)
            .field("call_deadline", &self.call_deadline)
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A jitter source seeded once per governor (never OS randomness per call).
pub(crate) fn default_jitter() -> Jitter {
    let seed = new_uuid_v4()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    let rng = Mutex::new(SmallRng::seed_from_u64(seed));
    Arc::new(move || {
        rng.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .r#gen::<f64>()
    })
}

/// The three knobs that distinguish the chat, embedding and OCR loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopPolicy {
    /// A rate-limited round does not consume budget (chat only).
    pub exempt_429: bool,
    /// A rate-limited round's duration is refunded into the stall account (chat only).
    pub refund_stall: bool,
    /// Rounds may be hedged (chat only, 60).
    pub hedging: bool,
}

impl LoopPolicy {
    /// Chat: `(true, true, true)`.
    pub const CHAT: Self = Self {
        exempt_429: true,
        refund_stall: true,
        hedging: true,
    };
    /// Embedding: `(false, false, false)`.
    pub const EMBED: Self = Self {
        exempt_429: false,
        refund_stall: false,
        hedging: false,
    };
    /// OCR: `(false, false, false)`.
    pub const OCR: Self = Self::EMBED;
}

/// Everything the loop needs about the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoopEnv<'a> {
    pub(crate) gov: &'a ScopeState,
    pub(crate) ctx: &'a CallContext,
    /// The call-level facts this loop's attempt rows carry: the context's own, or a per-loop
    /// copy with the same `logical_call_id` and the loop's input (an embedding batch's texts,
    /// 80 T-15) in a multi-loop call.
    pub(crate) row_call: &'a Arc<RowCall>,
    pub(crate) policy: LoopPolicy,
    pub(crate) settle: SettleMode,
    pub(crate) deadline_at: Option<tokio::time::Instant>,
    /// `request.stream` (the wire mode): the hedge entry gate reads it.
    pub(crate) stream: bool,
    /// The commit point of a call streamed to its caller; `None` for `chat`.
    pub(crate) commit: Option<&'a crate::stream_call::CommitGate>,
}
