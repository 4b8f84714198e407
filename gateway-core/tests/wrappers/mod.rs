//! Port wrappers for governance tests that need to observe or park a backend call: a limiter
//! whose `try_acquire` parks (S1), a breaker that tracks outstanding half-open probes, a breaker
//! whose probe release fails (CF-062), and a tracing subscriber that records warning codes.
#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on fixture errors by design"
)]

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use gateway_core::testing::Latch;
use gateway_ports::{
    Acquire, BackendError, BackendErrorKind, BreakerSnapshot, CircuitBreaker, FailureReason,
    GateDecision, ProbeLease, RateLimiter, SourceStats,
};

/// A limiter whose `try_acquire` parks (never returns) while parking is on; it signals
/// [`ParkingLimiter::parked`] first. Counts `try_acquire` calls and panics beyond `cap` (a busy
/// loop on the paused clock would otherwise hang the test). Everything else is delegated.
pub struct ParkingLimiter {
    pub inner: Arc<dyn RateLimiter>,
    acquires: AtomicU64,
    cap: u64,
    parking: AtomicBool,
    parked: Latch,
}

impl fmt::Debug for ParkingLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParkingLimiter").finish_non_exhaustive()
    }
}

impl ParkingLimiter {
    pub fn new(inner: Arc<dyn RateLimiter>) -> Self {
        Self {
            inner,
            acquires: AtomicU64::new(0),
            cap: u64::MAX,
            parking: AtomicBool::new(true),
            parked: Latch::new(),
        }
    }

    /// A counting wrapper that never parks and panics after `cap` acquisitions.
    pub fn counting(inner: Arc<dyn RateLimiter>, cap: u64) -> Self {
        let mut l = Self::new(inner);
        l.parking = AtomicBool::new(false);
        l.cap = cap;
        l
    }

    /// `try_acquire` calls so far.
    pub fn acquires(&self) -> u64 {
        self.acquires.load(Ordering::SeqCst)
    }

    /// Waits until a `try_acquire` is parked.
    pub async fn parked(&self) {
        self.parked.wait().await;
    }
}

#[async_trait]
impl RateLimiter for ParkingLimiter {
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError> {
        let n = self.acquires.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(
            n <= self.cap,
            "{n} try_acquire calls: the waiting picks spin"
        );
        if self.parking.load(Ordering::SeqCst) {
            self.parked.open();
            std::future::pending::<()>().await;
        }
        self.inner.try_acquire(source, est_tokens).await
    }
    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError> {
        self.inner.source_stats(source).await
    }
    async fn mark_progress(&self) -> Result<(), BackendError> {
        self.inner.mark_progress().await
    }
    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        self.inner.progress_age_s().await
    }
}

/// A breaker that tracks the half-open probes it granted and that nobody resolved yet
/// (`record_*` with the probe's entry, `release_probe`, `release_probe_now`). With
/// `fail_release`, `release_probe_now` returns `false` and `release_probe` fails (CF-062).
pub struct ProbeTracker {
    pub inner: Arc<dyn CircuitBreaker>,
    outstanding: Mutex<HashSet<String>>,
    granted: AtomicU64,
    fail_release: bool,
}

impl fmt::Debug for ProbeTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProbeTracker")
            .field("outstanding", &self.outstanding())
            .finish_non_exhaustive()
    }
}

impl ProbeTracker {
    pub fn new(inner: Arc<dyn CircuitBreaker>) -> Self {
        Self {
            inner,
            outstanding: Mutex::new(HashSet::new()),
            granted: AtomicU64::new(0),
            fail_release: false,
        }
    }

    /// Probe releases fail (no fast path, the async path errors).
    pub fn failing_release(mut self) -> Self {
        self.fail_release = true;
        self
    }

    /// Owners of probes granted and not yet resolved.
    pub fn outstanding(&self) -> Vec<String> {
        self.outstanding.lock().unwrap().iter().cloned().collect()
    }

    /// Probes granted so far.
    pub fn granted(&self) -> u64 {
        self.granted.load(Ordering::SeqCst)
    }

    fn resolve(&self, owner: &str) {
        self.outstanding.lock().unwrap().remove(owner);
    }
}

#[async_trait]
impl CircuitBreaker for ProbeTracker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        let d = self.inner.try_enter(source, owner).await?;
        if d.is_probe {
            self.granted.fetch_add(1, Ordering::SeqCst);
            self.outstanding.lock().unwrap().insert(owner.to_owned());
        }
        Ok(d)
    }
    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        self.resolve(&entry.owner);
        self.inner.record_success(entry, count_attempt).await
    }
    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        self.resolve(&entry.owner);
        self.inner.record_failure(entry, reason, force_open).await
    }
    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        if self.fail_release {
            return Err(BackendError::new(
                BackendErrorKind::Unavailable,
                "release_probe: scripted failure",
            ));
        }
        self.resolve(&entry.owner);
        self.inner.release_probe(entry).await
    }
    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        self.inner.snapshot(source).await
    }
    fn release_probe_now(&self, probe: &ProbeLease) -> bool {
        if self.fail_release {
            return false;
        }
        let done = self.inner.release_probe_now(probe);
        if done {
            self.resolve(&probe.owner);
        }
        done
    }
}

/// Records the `code` field (or the message) of every WARN event on this thread while the
/// guard of [`WarnCapture::install`] lives.
#[derive(Clone, Default)]
pub struct WarnCapture {
    codes: Arc<Mutex<Vec<String>>>,
    next_id: Arc<AtomicU64>,
}

impl fmt::Debug for WarnCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarnCapture")
            .field("codes", &self.codes())
            .finish()
    }
}

struct CodeVisitor(Option<String>);

impl tracing::field::Visit for CodeVisitor {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "code" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "code" || (field.name() == "message" && self.0.is_none()) {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

impl WarnCapture {
    /// Installs the capture as this thread's default subscriber.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(self.clone())
    }

    /// Codes of the warnings seen so far.
    pub fn codes(&self) -> Vec<String> {
        self.codes.lock().unwrap().clone()
    }
}

impl tracing::Subscriber for WarnCapture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(self.next_id.fetch_add(1, Ordering::SeqCst) + 1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut v = CodeVisitor(None);
            event.record(&mut v);
            self.codes
                .lock()
                .unwrap()
                .push(v.0.unwrap_or_else(|| "<no code>".to_owned()));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
