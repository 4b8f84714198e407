//! Cancellation cleanup.
//!
//! Dropping a call future is cancellation in Rust. What must still happen afterwards —
//! settlement, permit release, pacer leave, probe release, the cancelled attempt row and the
//! terminal row — is done by guards:
//!
//! - [`AttemptGuard`] holds one admission's acquisitions (breaker decision, pacer slot, permit)
//!   from the pick (`AdmissionGuard`) through the attempt until step 8 of G-85. On drop
//!   it applies its cell of the settlement matrix S1–S8: pacer `leave` at once, then the
//!   synchronous fast paths (`settle_and_release_now`, `release_probe_now`); only what they
//!   could not do, plus the row, is handed to the [`CleanupQueue`] as one job (governance
//!   before telemetry).
//! - the queue is bounded; [`run_cleanup_worker`] (spawned by the facade) runs jobs with at most
//!   64 at once, each bounded by 10 s; a call's attempt jobs complete before its terminal job
//!   starts; timeouts and drops are counted and logged, never silent.
//!
//! Nothing here spawns a task: the worker is one future the owner drives.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use gateway_ports::{AttemptError, CircuitBreaker, Clock, GateDecision, Permit, SourceConfig};
use tokio::sync::{Notify, mpsc};

use crate::pacer::Pacer;
use crate::rows::{AttemptRowFacts, AttemptRowOutcome, CancelLabel, RowCall, RowSink};

/// Queue capacity in jobs.
pub const CLEANUP_QUEUE_CAPACITY: usize = 4096;
/// Jobs the worker runs at once.
pub const CLEANUP_CONCURRENCY: usize = 64;
/// Bound of one job.
pub const CLEANUP_JOB_TIMEOUT: Duration = Duration::from_secs(10);

/// A job's future: the I/O part of one guard, or one terminal row.
pub type JobFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What a job is, for per-call ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobKind {
    /// The cleanup of one attempt (settle/release, probe release, attempt row).
    Attempt,
    /// One terminal row; runs after every attempt job of its call.
    Terminal,
}

struct Job {
    call: Arc<str>,
    kind: JobKind,
    fut: JobFuture,
}

#[derive(Debug, Default)]
struct CallJobs {
    attempts: u32,
    total: u32,
}

#[derive(Debug, Default)]
struct Counters {
    pending: usize,
    calls: HashMap<Arc<str>, CallJobs>,
}

#[derive(Debug, Default)]
struct Shared {
    counters: Mutex<Counters>,
    changed: Notify,
    dropped: AtomicU64,
    timed_out: AtomicU64,
    completed: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, call: &Arc<str>, kind: JobKind) {
        {
            let mut c = self.lock();
            c.pending = c.pending.saturating_sub(1);
            let remove = match c.calls.get_mut(call) {
                Some(jobs) => {
                    jobs.total = jobs.total.saturating_sub(1);
                    if kind == JobKind::Attempt {
                        jobs.attempts = jobs.attempts.saturating_sub(1);
                    }
                    jobs.total == 0
                }
                None => false,
            };
            if remove {
                c.calls.remove(call);
            }
        }
        self.changed.notify_waiters();
    }

    /// Waits until `done(counters)` holds, woken by every job completion.
    async fn wait_until(&self, done: impl Fn(&Counters) -> bool) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done(&self.lock()) {
                return;
            }
            notified.await;
        }
    }
}

/// Counters of the cleanup path (for `telemetry_status` and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CleanupStats {
    /// Jobs enqueued and not yet finished.
    pub pending: usize,
    /// Jobs finished (including timed-out ones).
    pub completed: u64,
    /// Jobs abandoned after [`CLEANUP_JOB_TIMEOUT`].
    pub timed_out: u64,
    /// Jobs refused because the queue was full or shut down (telemetry dropped; governance was
    /// tried on the fast path first, else left to the leases).
    pub dropped: u64,
}

/// The bounded cleanup queue of one client.
pub struct CleanupQueue {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    shared: Arc<Shared>,
    shut: AtomicBool,
}

impl fmt::Debug for CleanupQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanupQueue")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// The worker's end of a [`CleanupQueue`]; pass it to [`run_cleanup_worker`].
pub struct CleanupReceiver {
    rx: mpsc::Receiver<Job>,
    shared: Arc<Shared>,
}

impl fmt::Debug for CleanupReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CleanupReceiver").finish_non_exhaustive()
    }
}

impl CleanupQueue {
    /// A queue of [`CLEANUP_QUEUE_CAPACITY`] jobs and its receiver.
    pub fn new() -> (Arc<Self>, CleanupReceiver) {
        Self::with_capacity(CLEANUP_QUEUE_CAPACITY)
    }

    /// A queue of `capacity` jobs (at least 1) and its receiver.
    pub fn with_capacity(capacity: usize) -> (Arc<Self>, CleanupReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let shared = Arc::new(Shared::default());
        let queue = Arc::new(Self {
            tx: Mutex::new(Some(tx)),
            shared: Arc::clone(&shared),
            shut: AtomicBool::new(false),
        });
        (queue, CleanupReceiver { rx, shared })
    }

    /// Enqueues one job of `call` without waiting (callable from `Drop`). Returns `false` when
    /// the queue is full or shut down: the job is dropped, counted and logged.
    pub fn enqueue(&self, call: &str, kind: JobKind, fut: JobFuture) -> bool {
        let call: Arc<str> = Arc::from(call);
        {
            let mut c = self.shared.lock();
            c.pending += 1;
            let jobs = c.calls.entry(Arc::clone(&call)).or_default();
            jobs.total += 1;
            if kind == JobKind::Attempt {
                jobs.attempts += 1;
            }
        }
        let sent = {
            let tx = self.tx.lock().unwrap_or_else(PoisonError::into_inner);
            match tx.as_ref() {
                Some(tx) => tx
                    .try_send(Job {
                        call: Arc::clone(&call),
                        kind,
                        fut,
                    })
                    .is_ok(),
                None => false,
            }
        };
        if !sent {
            self.shared.finish(&call, kind);
            let n = self.shared.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            // Log the 1st, 2nd, 4th, 8th … drop: never silent, never a storm.
            if n.is_power_of_two() {
                tracing::warn!(
                    code = "cleanup.job_dropped",
                    dropped = n,
                    "cleanup queue full or closed; job dropped (leases reclaim governance)"
                );
            }
        }
        sent
    }

    /// Waits until every job of `call` enqueued so far has finished.
    pub async fn wait_call_idle(&self, call: &str) {
        self.shared
            .wait_until(|c| c.calls.get(call).is_none_or(|j| j.total == 0))
            .await;
    }

    /// Waits until the queue holds no pending job (`quiesce`).
    pub async fn wait_idle(&self) {
        self.shared.wait_until(|c| c.pending == 0).await;
    }

    /// Stops accepting jobs: the worker finishes what is queued and returns.
    /// Idempotent.
    pub fn shutdown(&self) {
        self.shut.store(true, Ordering::SeqCst);
        self.tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// `true` after [`CleanupQueue::shutdown`].
    pub fn is_shut_down(&self) -> bool {
        self.shut.load(Ordering::SeqCst)
    }

    /// The counters now.
    pub fn stats(&self) -> CleanupStats {
        CleanupStats {
            pending: self.shared.lock().pending,
            completed: self.shared.completed.load(Ordering::Relaxed),
            timed_out: self.shared.timed_out.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
        }
    }
}

async fn run_job(shared: Arc<Shared>, job: Job) {
    let Job { call, kind, fut } = job;
    if kind == JobKind::Terminal {
        // a call's attempt jobs complete before its terminal job starts.
        shared
            .wait_until(|c| c.calls.get(&call).is_none_or(|j| j.attempts == 0))
            .await;
    }
    if tokio::time::timeout(CLEANUP_JOB_TIMEOUT, fut)
        .await
        .is_err()
    {
        let n = shared.timed_out.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            code = "cleanup.job_timeout",
            timed_out = n,
            logical_call_id = %call,
            "cleanup job exceeded {} s and was abandoned (leases reclaim)",
            CLEANUP_JOB_TIMEOUT.as_secs()
        );
    }
    shared.completed.fetch_add(1, Ordering::Relaxed);
    shared.finish(&call, kind);
}

/// Runs the cleanup jobs of one client until its queue is shut down and drained:
/// at most [`CLEANUP_CONCURRENCY`] jobs at once, each bounded by [`CLEANUP_JOB_TIMEOUT`].
/// The facade spawns it; it never spawns anything itself.
pub async fn run_cleanup_worker(rx: CleanupReceiver) {
    let CleanupReceiver { mut rx, shared } = rx;
    let mut running = FuturesUnordered::new();
    let mut open = true;
    loop {
        tokio::select! {
            job = rx.recv(), if open && running.len() < CLEANUP_CONCURRENCY => match job {
                Some(job) => running.push(run_job(Arc::clone(&shared), job)),
                None => open = false,
            },
            Some(()) = running.next(), if !running.is_empty() => {}
            else => break,
        }
    }
}

/// What a registered attempt needs to write its row from `Drop`.
#[derive(Clone)]
pub struct AttemptRowInfo {
    /// Where rows go.
    pub sink: Arc<dyn RowSink>,
    /// Call-level row facts.
    pub call: Arc<RowCall>,
    /// The attempt's id.
    pub call_id: String,
    /// The attempt's source.
    pub source: Arc<SourceConfig>,
    /// 1-based attempt number.
    pub attempt: u32,
    /// Hedge leg?
    pub hedge_leg: bool,
    /// Attempt start on the injected clock.
    pub started: Duration,
    /// The injected clock.
    pub clock: Arc<dyn Clock>,
}

impl fmt::Debug for AttemptRowInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptRowInfo")
            .field("call_id", &self.call_id)
            .field("source", &self.source.name)
            .field("attempt", &self.attempt)
            .field("hedge_leg", &self.hedge_leg)
            .finish_non_exhaustive()
    }
}

impl AttemptRowInfo {
    /// Attempt-row facts with `latency_ms` read now.
    pub fn facts(&self, outcome: AttemptRowOutcome) -> AttemptRowFacts {
        let latency = self.clock.monotonic().saturating_sub(self.started);
        AttemptRowFacts {
            call: Arc::clone(&self.call),
            call_id: self.call_id.clone(),
            source: Arc::clone(&self.source),
            attempt: self.attempt,
            hedge_leg: self.hedge_leg,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            outcome,
        }
    }
}

/// The acquisitions of one admission and, once registered, one attempt (the
/// `AdmissionGuard` and the `AttemptGuard` are one type in two phases).
///
/// Settlement value on drop: admission phase (S1) or panic (S8) → 0; otherwise the
/// value stored by [`AttemptGuard::set_settlement`] (S4, S5), else `est` (S3).
pub struct AttemptGuard {
    logical_call_id: Arc<str>,
    source: Arc<str>,
    est: u64,
    queue: Arc<CleanupQueue>,
    breaker: Arc<dyn CircuitBreaker>,
    decision: GateDecision,
    probe_open: bool,
    pacer: Option<Arc<dyn Pacer>>,
    permit: Option<Box<dyn Permit>>,
    settlement: Option<u64>,
    row: Option<AttemptRowInfo>,
    pending_row: Option<AttemptRowOutcome>,
    row_written: bool,
    loser: Option<Arc<AtomicBool>>,
}

impl fmt::Debug for AttemptGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptGuard")
            .field("source", &self.source)
            .field("est", &self.est)
            .field("probe_open", &self.probe_open)
            .field("pacer_held", &self.pacer.is_some())
            .field("permit_held", &self.permit.is_some())
            .field("settlement", &self.settlement)
            .field("registered", &self.row.is_some())
            .field("row_written", &self.row_written)
            .finish_non_exhaustive()
    }
}

fn warn_writeback(source: &str, what: &'static str, err: &dyn fmt::Display) {
    tracing::warn!(
        code = "governance.writeback_failed",
        source = source,
        op = what,
        "governance write-back degraded (not propagated): {err}"
    );
}

impl AttemptGuard {
    /// Arms a guard holding the breaker `decision` of `source` (probe included) in the admission
    /// phase (S1). `est` is the source's admission estimate. `source` is a `&str` or a shared
    /// name (`Arc<str>`, no copy: 05 R-56).
    pub fn new(
        logical_call_id: &str,
        source: impl Into<Arc<str>>,
        est: u64,
        queue: Arc<CleanupQueue>,
        breaker: Arc<dyn CircuitBreaker>,
        decision: GateDecision,
    ) -> Self {
        Self {
            logical_call_id: Arc::from(logical_call_id),
            source: source.into(),
            est,
            queue,
            breaker,
            probe_open: decision.is_probe,
            decision,
            pacer: None,
            permit: None,
            settlement: None,
            row: None,
            pending_row: None,
            row_written: false,
            loser: None,
        }
    }

    /// Records that the guard holds one pacer slot of its source (released by `leave`).
    pub fn hold_pacer(&mut self, pacer: Arc<dyn Pacer>) {
        self.pacer = Some(pacer);
    }

    /// Records the granted permit.
    pub fn hold_permit(&mut self, permit: Box<dyn Permit>) {
        self.permit = Some(permit);
    }

    /// The breaker decision (the write-back entry).
    pub fn decision(&self) -> &GateDecision {
        &self.decision
    }

    /// Enters the attempt phase: from now on a drop settles `est` unless a
    /// value is stored, and writes a row unless one was written. `loser` is the leg's flag.
    pub fn register(&mut self, row: AttemptRowInfo, loser: Arc<AtomicBool>) {
        self.row = Some(row);
        self.loser = Some(loser);
    }

    /// The registered row info, if any.
    pub fn row_info(&self) -> Option<&AttemptRowInfo> {
        self.row.as_ref()
    }

    /// Stores the settlement value the moment it is known (before the next await).
    pub fn set_settlement(&mut self, actual_tokens: u64) {
        self.settlement = Some(actual_tokens);
    }

    /// Stores the known failure row a drop must still write (S5).
    pub fn set_failure_row(&mut self, error: AttemptError) {
        self.pending_row = Some(AttemptRowOutcome::Failed(error));
    }

    /// The probe was resolved by a completed write-back (no release needed any more).
    pub fn probe_resolved(&mut self) {
        self.probe_open = false;
    }

    /// The attempt row was written inline.
    pub fn row_written(&mut self) {
        self.row_written = true;
        self.pending_row = None;
    }

    /// Releases the probe now if one is held: the fast path first, else the async path
    /// (quietly).
    pub async fn release_probe(&mut self) {
        if !self.probe_open {
            return;
        }
        let done = self
            .decision
            .probe_lease()
            .is_some_and(|lease| self.breaker.release_probe_now(&lease));
        if !done && let Err(e) = self.breaker.release_probe(&self.decision).await {
            warn_writeback(&self.source, "release_probe", &e);
        }
        self.probe_open = false;
    }

    /// Returns the pacer slot now (sync, 30 G-72: always runs when the attempt ends).
    pub fn leave_pacer(&mut self) {
        if let Some(p) = self.pacer.take() {
            p.leave(&self.source);
        }
    }

    /// Settles and releases the permit now with `value` (fast path first, else the async
    /// `settle` then `release`, quietly). Idempotent.
    async fn settle_and_release(&mut self, value: u64) {
        let Some(permit) = self.permit.as_ref() else {
            return;
        };
        if !permit.settle_and_release_now(value)
            && let Err(e) = permit.settle_then_release(value).await
        {
            warn_writeback(&self.source, "settle_then_release", &e);
        }
        self.permit = None;
    }

    /// Releases everything of a rejected or aborted admission (30 G-59 order: probe release →
    /// pacer leave → settle 0 and release), then disarms. The pacer slot admitted nothing, so it
    /// is returned with [`Pacer::leave_unused`] (no wakeup: waiting callers would otherwise
    /// wake each other in a loop while quota is exhausted).
    pub async fn release_admission(mut self) {
        self.release_probe().await;
        if let Some(p) = self.pacer.take() {
            p.leave_unused(&self.source);
        }
        self.settle_and_release(0).await;
    }

    /// Step 8 of 30 G-85: pacer leave, then settle-and-release with the stored value (else
    /// `est`), and any probe still held; the guard is disarmed only after all completed.
    pub async fn finish(mut self) {
        self.leave_pacer();
        let value = self.settlement.unwrap_or(self.est);
        self.settle_and_release(value).await;
        self.release_probe().await;
        self.row_written = true;
    }
}

impl Drop for AttemptGuard {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        // Pacer leave is synchronous and always runs (G-106).
        self.leave_pacer();
        let value = if panicking || self.row.is_none() {
            0 // S8 / S1
        } else {
            self.settlement.unwrap_or(self.est) // S4/S5 known value, else S3 `est`
        };
        let permit = self
            .permit
            .take()
            .filter(|p| !p.settle_and_release_now(value));
        let probe = if self.probe_open {
            self.probe_open = false;
            let fast = self
                .decision
                .probe_lease()
                .is_some_and(|lease| self.breaker.release_probe_now(&lease));
            (!fast).then(|| (Arc::clone(&self.breaker), self.decision.clone()))
        } else {
            None
        };
        let row = match (&self.row, self.row_written || panicking) {
            (Some(info), false) => {
                let outcome = self.pending_row.take().unwrap_or_else(|| {
                    let loser = self
                        .loser
                        .as_ref()
                        .is_some_and(|l| l.load(Ordering::SeqCst));
                    AttemptRowOutcome::Cancelled(if loser {
                        CancelLabel::HedgeCancelled
                    } else {
                        CancelLabel::Cancelled
                    })
                });
                Some((Arc::clone(&info.sink), info.facts(outcome)))
            }
            _ => None,
        };
        if permit.is_none() && probe.is_none() && row.is_none() {
            return;
        }
        let source = Arc::clone(&self.source);
        let job = async move {
            // Governance before telemetry (30 G-110).
            if let Some(permit) = permit
                && let Err(e) = permit.settle_then_release(value).await
            {
                warn_writeback(&source, "settle_then_release", &e);
            }
            if let Some((breaker, decision)) = probe
                && let Err(e) = breaker.release_probe(&decision).await
            {
                warn_writeback(&source, "release_probe", &e);
            }
            if let Some((sink, facts)) = row {
                sink.attempt(facts).await;
            }
        };
        self.queue
            .enqueue(&self.logical_call_id, JobKind::Attempt, Box::pin(job));
    }
}
