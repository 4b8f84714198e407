//! The bounded cleanup queue ([`CleanupQueue`]), its counters ([`CleanupStats`]) and the
//! worker ([`run_cleanup_worker`]) that runs its jobs: at most 64 at once, each bounded, a
//! call's attempt jobs before its terminal job.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{Notify, mpsc};

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
