//! `ScriptedRunner`: an [`AttemptRunner`] that plays one scripted [`Script`] per attempt
//! (05 R-2).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use gateway_ports::{AttemptError, AttemptFailure, ErrorOperation};
use tokio::sync::Notify;

use crate::Latch;
use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner, LegControl, LegSignals, TransportResult,
};
use gateway_core::clock::FakeClock;

/// One action of a scripted attempt, executed in order (05 R-2).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Step {
    /// End the attempt with this success (stall reports of earlier steps are applied).
    Ok(Box<TransportResult>),
    /// End the attempt with this (classified) failure.
    Fail(AttemptError),
    /// Never return (until the attempt future is dropped or cancelled as a loser).
    Hang,
    /// Emit one progress chunk (R-12 counter +1).
    Token,
    /// Sleep on the runtime timer.
    Sleep(Duration),
    /// Set `stall_ms` / `stall_count` of the eventual success.
    ReportStall(f64, u32),
    /// Advance the injected `FakeClock` (requires [`ScriptedRunner::with_clock`]).
    AdvanceClock(Duration),
    /// Wait until [`StepHandle::release`] is called.
    Gate,
    /// Panic with this message (the S8 cell).
    Panic(&'static str),
}

/// The script of one attempt: a list of [`Step`]s (05 R-2).
#[derive(Debug, Clone, Default)]
pub struct Script {
    steps: Vec<Step>,
}

impl Script {
    /// An empty script (add steps with the builder methods; an attempt whose script ends
    /// without a terminal step hangs).
    pub fn new() -> Self {
        Self::default()
    }

    /// `ok(TransportResult)`.
    pub fn ok(result: TransportResult) -> Self {
        Self::new().then_ok(result)
    }

    /// `fail(AttemptError)`.
    pub fn fail(error: AttemptError) -> Self {
        Self::new().then_fail(error)
    }

    /// `hang`.
    pub fn hang() -> Self {
        Self::new().then(Step::Hang)
    }

    /// `token_then_hang`: one progress chunk, then hang.
    pub fn token_then_hang() -> Self {
        Self::new().then(Step::Token).then(Step::Hang)
    }

    /// `succeed_after(d)`: sleep `d`, then succeed with `result`.
    pub fn succeed_after(d: Duration, result: TransportResult) -> Self {
        Self::new().then(Step::Sleep(d)).then_ok(result)
    }

    /// `fail_after(d, e)`: sleep `d`, then fail with `error`.
    pub fn fail_after(d: Duration, error: AttemptError) -> Self {
        Self::new().then(Step::Sleep(d)).then_fail(error)
    }

    /// `panic`.
    pub fn panic(message: &'static str) -> Self {
        Self::new().then(Step::Panic(message))
    }

    /// Appends a step.
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends `chunk_after(d)`: sleep `d`, then one progress chunk.
    pub fn chunk_after(self, d: Duration) -> Self {
        self.then(Step::Sleep(d)).then(Step::Token)
    }

    /// Appends `report_stall(ms, n)`.
    pub fn report_stall(self, stall_ms: f64, stall_count: u32) -> Self {
        self.then(Step::ReportStall(stall_ms, stall_count))
    }

    /// Appends `advance_clock(d)`.
    pub fn advance_clock(self, d: Duration) -> Self {
        self.then(Step::AdvanceClock(d))
    }

    /// Appends a gate released by [`StepHandle::release`].
    pub fn gate(self) -> Self {
        self.then(Step::Gate)
    }

    /// Appends the terminal `ok` step.
    pub fn then_ok(self, result: TransportResult) -> Self {
        self.then(Step::Ok(Box::new(result)))
    }

    /// Appends the terminal `fail` step.
    pub fn then_fail(self, error: AttemptError) -> Self {
        self.then(Step::Fail(error))
    }
}

#[derive(Debug, Default)]
struct HandleState {
    entered: Latch,
    released: Latch,
}

/// The entered/release handle of one scripted attempt (05 R-2).
#[derive(Debug, Clone, Default)]
pub struct StepHandle {
    state: Arc<HandleState>,
}

impl StepHandle {
    /// `true` once the runner started this attempt.
    pub fn is_entered(&self) -> bool {
        self.state.entered.is_open()
    }

    /// Waits until the runner started this attempt.
    pub async fn entered(&self) {
        self.state.entered.wait().await;
    }

    /// Opens this attempt's [`Step::Gate`]s.
    pub fn release(&self) {
        self.state.released.open();
    }

    async fn wait_release(&self) {
        self.state.released.wait().await;
    }

    fn enter(&self) {
        self.state.entered.open();
    }
}

#[derive(Debug, Default)]
struct Queues {
    any: VecDeque<(Script, StepHandle)>,
    per_source: HashMap<String, VecDeque<(Script, StepHandle)>>,
    calls: Vec<String>,
    signals: Vec<bool>,
}

/// An [`AttemptRunner`] playing scripted attempts (05 R-2). Attempts take the next script
/// queued for their source ([`ScriptedRunner::push_for`]), else the next of the shared queue
/// ([`ScriptedRunner::push`]); with nothing queued an attempt fails with `RequestRejected`
/// ("script exhausted"), which ends the call. Records each attempt's source and whether it got
/// a progress signal. Clones share the same queues.
#[derive(Clone, Default)]
pub struct ScriptedRunner {
    queues: Arc<Mutex<Queues>>,
    clock: Option<Arc<FakeClock>>,
    calls_changed: Arc<Notify>,
}

impl fmt::Debug for ScriptedRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedRunner")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl ScriptedRunner {
    /// An empty runner.
    pub fn new() -> Self {
        Self::default()
    }

    /// A runner whose `advance_clock` steps move `clock`.
    pub fn with_clock(mut self, clock: Arc<FakeClock>) -> Self {
        self.clock = Some(clock);
        self
    }

    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a script for the next attempt on any source.
    pub fn push(&self, script: Script) -> StepHandle {
        let h = StepHandle::default();
        self.lock().any.push_back((script, h.clone()));
        h
    }

    /// Queues several scripts; returns their handles in order.
    pub fn push_all(&self, scripts: impl IntoIterator<Item = Script>) -> Vec<StepHandle> {
        scripts.into_iter().map(|s| self.push(s)).collect()
    }

    /// Queues a script for the next attempt on `source`.
    pub fn push_for(&self, source: &str, script: Script) -> StepHandle {
        let h = StepHandle::default();
        self.lock()
            .per_source
            .entry(source.to_owned())
            .or_default()
            .push_back((script, h.clone()));
        h
    }

    /// The source of every attempt started so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    /// `(source, got a progress signal)` per attempt, in start order (60 H-79, H-105: only the
    /// primary of a hedged round gets one).
    pub fn seen(&self) -> Vec<(String, bool)> {
        let q = self.lock();
        q.calls
            .iter()
            .cloned()
            .zip(q.signals.iter().copied())
            .collect()
    }

    /// Whether each attempt got a progress signal, in start order (the `[true, false]`
    /// pattern of H-79 / H-105).
    pub fn signal_pattern(&self) -> Vec<bool> {
        self.lock().signals.clone()
    }

    /// Attempts started so far.
    pub fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Waits until at least `n` attempts have started.
    pub async fn wait_calls(&self, n: usize) {
        loop {
            let notified = self.calls_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.call_count() >= n {
                return;
            }
            notified.await;
        }
    }

    fn next(&self, source: &str, signalled: bool) -> Option<(Script, StepHandle)> {
        let mut q = self.lock();
        q.calls.push(source.to_owned());
        q.signals.push(signalled);
        let next = q
            .per_source
            .get_mut(source)
            .and_then(VecDeque::pop_front)
            .or_else(|| q.any.pop_front());
        drop(q);
        self.calls_changed.notify_waiters();
        next
    }

    async fn play(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        script: Script,
        handle: StepHandle,
    ) -> AttemptOutcome {
        handle.enter();
        let mut stall: Option<(f64, u32)> = None;
        for step in script.steps {
            match step {
                Step::Ok(mut result) => {
                    if let Some((ms, n)) = stall {
                        result.stall_ms = Some(ms);
                        result.stall_count = Some(n);
                    }
                    return AttemptOutcome::Success(result);
                }
                Step::Fail(e) => return AttemptOutcome::Failed(e),
                Step::Hang => std::future::pending::<()>().await,
                Step::Token => {
                    if let Some(s) = &signals {
                        s.progress();
                    }
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::ReportStall(ms, n) => stall = Some((ms, n)),
                Step::AdvanceClock(d) => {
                    if let Some(c) = &self.clock {
                        c.advance(d);
                    }
                }
                Step::Gate => handle.wait_release().await,
                Step::Panic(msg) => panic!("scripted panic on {}: {msg}", ctx.source.name),
            }
        }
        std::future::pending::<AttemptOutcome>().await
    }
}

impl AttemptRunner for ScriptedRunner {
    async fn run(
        &self,
        ctx: AttemptCtx,
        signals: Option<LegSignals>,
        _control: LegControl,
    ) -> AttemptOutcome {
        match self.next(&ctx.source.name, signals.is_some()) {
            Some((script, handle)) => self.play(ctx, signals, script, handle).await,
            None => AttemptOutcome::Failed(AttemptError::request_rejected(AttemptFailure::new(
                format!("{}: scripted runner: script exhausted", ctx.source.name),
                ErrorOperation::Chat,
            ))),
        }
    }
}
