//! [`HookedBreaker`]: a forwarding [`CircuitBreaker`] with hooks, and [`ProbeLedger`], the
//! half-open probes it granted that nobody resolved yet.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use gateway_ports::{
    BackendError, BreakerSnapshot, CircuitBreaker, FailureReason, GateDecision, ProbeLease,
};

use super::{Effect, HookedCall, Hooks, hook_methods};

/// A [`CircuitBreaker`] method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerMethod {
    /// `try_enter`.
    TryEnter,
    /// `record_success`.
    RecordSuccess,
    /// `record_failure`.
    RecordFailure,
    /// `release_probe`.
    ReleaseProbe,
    /// `snapshot`.
    Snapshot,
    /// `release_probe_now` (synchronous: a `Park` effect only signals, it cannot wait).
    ReleaseProbeNow,
    /// `close`.
    Close,
}

impl BreakerMethod {
    /// The write-backs: `record_success`, `record_failure`, `release_probe`.
    pub const WRITE_BACKS: [Self; 3] =
        [Self::RecordSuccess, Self::RecordFailure, Self::ReleaseProbe];
}

/// One breaker call with its arguments.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BreakerCall {
    /// `try_enter(source, owner)`.
    TryEnter {
        /// The source.
        source: String,
        /// The attempt asking (the probe owner if it becomes one).
        owner: String,
    },
    /// `record_success(entry, count_attempt)`.
    RecordSuccess {
        /// The gate decision written back.
        entry: GateDecision,
        /// Whether the success counts as an attempt.
        count_attempt: bool,
    },
    /// `record_failure(entry, reason, force_open)`.
    RecordFailure {
        /// The gate decision written back.
        entry: GateDecision,
        /// Why the attempt failed.
        reason: FailureReason,
        /// Open at once.
        force_open: bool,
    },
    /// `release_probe(entry)`.
    ReleaseProbe {
        /// The gate decision whose probe is released.
        entry: GateDecision,
    },
    /// `snapshot(source)`.
    Snapshot {
        /// The source.
        source: String,
    },
    /// `release_probe_now(probe)`.
    ReleaseProbeNow {
        /// The probe released.
        probe: ProbeLease,
    },
    /// `close()`.
    Close,
}

impl BreakerCall {
    /// The source the call concerns, if any.
    pub fn source(&self) -> Option<&str> {
        match self {
            Self::TryEnter { source, .. } | Self::Snapshot { source } => Some(source),
            Self::RecordSuccess { entry, .. }
            | Self::RecordFailure { entry, .. }
            | Self::ReleaseProbe { entry } => Some(&entry.source),
            Self::ReleaseProbeNow { probe } => Some(&probe.source),
            Self::Close => None,
        }
    }
}

impl HookedCall for BreakerCall {
    type Method = BreakerMethod;
    fn method(&self) -> BreakerMethod {
        match self {
            Self::TryEnter { .. } => BreakerMethod::TryEnter,
            Self::RecordSuccess { .. } => BreakerMethod::RecordSuccess,
            Self::RecordFailure { .. } => BreakerMethod::RecordFailure,
            Self::ReleaseProbe { .. } => BreakerMethod::ReleaseProbe,
            Self::Snapshot { .. } => BreakerMethod::Snapshot,
            Self::ReleaseProbeNow { .. } => BreakerMethod::ReleaseProbeNow,
            Self::Close => BreakerMethod::Close,
        }
    }
}

/// What the inner breaker answered, as the after hooks see it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BreakerOutcome {
    /// `try_enter`'s answer.
    Gate(Result<GateDecision, BackendError>),
    /// A write-back's answer.
    Done(Result<(), BackendError>),
    /// `snapshot`'s answer.
    Snapshot(Result<BreakerSnapshot, BackendError>),
    /// `release_probe_now`'s answer.
    Released(bool),
    /// `close` returned.
    Closed,
}

/// A [`CircuitBreaker`] forwarding to `inner`, with hooks (see the [module docs](crate::hooked)).
pub struct HookedBreaker {
    inner: Arc<dyn CircuitBreaker>,
    hooks: Hooks<BreakerCall, BackendError, BreakerOutcome>,
}

impl fmt::Debug for HookedBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedBreaker")
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl HookedBreaker {
    /// Forwards to `inner`; no hook installed.
    pub fn new(inner: Arc<dyn CircuitBreaker>) -> Self {
        Self {
            inner,
            hooks: Hooks::default(),
        }
    }

    /// The wrapped breaker.
    pub fn inner(&self) -> &Arc<dyn CircuitBreaker> {
        &self.inner
    }

    hook_methods!(BreakerCall, BreakerMethod, BackendError, BreakerOutcome);

    /// Every write-back (`record_success`, `record_failure`, `release_probe`) fails with
    /// `error`, and `release_probe_now` answers `false` (no fast path); the gate and
    /// `snapshot` work (30 G-7, G-82).
    pub fn fail_write_backs(&self, error: BackendError) -> &Self {
        self.before(move |c| {
            let m = c.method();
            if BreakerMethod::WRITE_BACKS.contains(&m) || m == BreakerMethod::ReleaseProbeNow {
                Effect::Fail(error.clone())
            } else {
                Effect::Forward
            }
        })
    }

    /// Probe releases fail: `release_probe` with `error`, `release_probe_now` answers `false`
    /// (no fast path, the asynchronous release errors; 95 CF-062).
    pub fn fail_probe_release(&self, error: BackendError) -> &Self {
        self.before(move |c| match c.method() {
            BreakerMethod::ReleaseProbe | BreakerMethod::ReleaseProbeNow => {
                Effect::Fail(error.clone())
            }
            _ => Effect::Forward,
        })
    }

    /// Starts tracking the half-open probes this breaker grants (installs one after hook). A
    /// probe is resolved once the inner breaker answered a `record_*` or `release_probe` with
    /// its entry (whatever the answer), or accepted a `release_probe_now`. A call a before hook
    /// failed never reaches the inner breaker and resolves nothing (95 CF-062).
    pub fn track_probes(&self) -> Arc<ProbeLedger> {
        let ledger = Arc::new(ProbeLedger::default());
        let hook = Arc::clone(&ledger);
        self.after(move |c, outcome| match (c, outcome) {
            (BreakerCall::TryEnter { owner, .. }, BreakerOutcome::Gate(Ok(d))) if d.is_probe => {
                hook.grant(owner);
            }
            (
                BreakerCall::RecordSuccess { entry, .. }
                | BreakerCall::RecordFailure { entry, .. }
                | BreakerCall::ReleaseProbe { entry },
                _,
            ) => hook.resolve(&entry.owner),
            (BreakerCall::ReleaseProbeNow { probe }, BreakerOutcome::Released(true)) => {
                hook.resolve(&probe.owner);
            }
            _ => {}
        });
        ledger
    }
}

#[async_trait]
impl CircuitBreaker for HookedBreaker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        let call = BreakerCall::TryEnter {
            source: source.to_owned(),
            owner: owner.to_owned(),
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.try_enter(source, owner).await;
        self.hooks.exit(&call, &BreakerOutcome::Gate(r.clone()));
        r
    }
    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        let call = BreakerCall::RecordSuccess {
            entry: entry.clone(),
            count_attempt,
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.record_success(entry, count_attempt).await;
        self.hooks.exit(&call, &BreakerOutcome::Done(r.clone()));
        r
    }
    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        let call = BreakerCall::RecordFailure {
            entry: entry.clone(),
            reason,
            force_open,
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.record_failure(entry, reason, force_open).await;
        self.hooks.exit(&call, &BreakerOutcome::Done(r.clone()));
        r
    }
    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        let call = BreakerCall::ReleaseProbe {
            entry: entry.clone(),
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.release_probe(entry).await;
        self.hooks.exit(&call, &BreakerOutcome::Done(r.clone()));
        r
    }
    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        let call = BreakerCall::Snapshot {
            source: source.to_owned(),
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.snapshot(source).await;
        self.hooks.exit(&call, &BreakerOutcome::Snapshot(r.clone()));
        r
    }
    async fn close(&self) {
        let call = BreakerCall::Close;
        if self.hooks.enter(&call).await.is_some() {
            return;
        }
        self.inner.close().await;
        self.hooks.exit(&call, &BreakerOutcome::Closed);
    }
    /// Passed through unhooked: a flush has no outcome to script.
    async fn flush(&self) {
        self.inner.flush().await;
    }
    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        let call = BreakerCall::ReleaseProbeNow {
            probe: probe.clone(),
        };
        if self.hooks.enter_now(&call).is_some() {
            return false;
        }
        let done = self.inner.release_probe_now(probe);
        self.hooks.exit(&call, &BreakerOutcome::Released(done));
        done
    }
}

/// The half-open probes a [`HookedBreaker`] granted and nobody resolved yet
/// ([`HookedBreaker::track_probes`]).
#[derive(Debug, Default)]
pub struct ProbeLedger {
    outstanding: Mutex<HashSet<String>>,
    granted: AtomicU64,
}

impl ProbeLedger {
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.outstanding
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn grant(&self, owner: &str) {
        self.granted.fetch_add(1, Ordering::SeqCst);
        self.lock().insert(owner.to_owned());
    }

    fn resolve(&self, owner: &str) {
        self.lock().remove(owner);
    }

    /// Owners of probes granted and not yet resolved.
    pub fn outstanding(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    /// Probes granted so far.
    pub fn granted(&self) -> u64 {
        self.granted.load(Ordering::SeqCst)
    }
}
