//! Forwarding-with-hooks doubles, one per port: [`HookedLimiter`], [`HookedBreaker`],
//! [`HookedRowSink`], [`HookedChatTransport`] and [`HookedCache`].
//!
//! Each wraps an inner `Arc<dyn Port>` and forwards every call to it. A test installs hooks to
//! observe or change chosen calls:
//! - a **before** hook sees the call (its method and owned arguments) and returns an [`Effect`]:
//!   [`Effect::Forward`] (the default; the hook only observed or counted),
//!   [`Effect::Fail`] (the call returns this error *instead* of forwarding),
//!   [`Effect::Delay`] (the call sleeps on the runtime timer first: a slow backend on the
//!   paused clock), or [`Effect::Park`] (the call opens a [`Latch`] and waits on another — or forever — before it
//!   goes on; a test can then drop the call inside the backend, 30 G-107 S1);
//! - an **after** hook sees the call and a summary of the inner port's answer (e.g. whether a
//!   gate decision was a half-open probe).
//!
//! Hooks run in installation order; parks are awaited in turn and the first `Fail` ends the
//! call. Every call is counted per method before the hooks run ([`count`](HookedLimiter::count),
//! [`wait_count`](HookedLimiter::wait_count): event-driven, never polled). Hooks can be
//! installed and cleared at any time through `&self` (a test shares the double as an `Arc`).

mod breaker;
mod cache;
mod chat;
mod limiter;
mod row_sink;

pub use breaker::{BreakerCall, BreakerMethod, BreakerOutcome, HookedBreaker, ProbeLedger};
pub use cache::{CacheCall, CacheMethod, HookedCache};
pub use chat::{ChatCall, ChatMethod, HookedChatTransport};
pub use limiter::{HookedLimiter, LimiterCall, LimiterMethod};
pub use row_sink::{HookedRowSink, RowCall, RowMethod};

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::Latch;

/// What a before hook decides for one call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Effect<E> {
    /// Go on (to the next hook, then the inner port).
    Forward,
    /// Return this error instead of calling the inner port. For the row sink (whose methods
    /// return nothing) the row is dropped; for `release_probe_now` the answer is `false`.
    Fail(E),
    /// Sleep this long on the runtime timer (`tokio::time`), then go on.
    Delay(Duration),
    /// Open `entered`, then wait until `release` opens (`None`: never return), then go on.
    Park {
        /// Opened when the call parks.
        entered: Arc<Latch>,
        /// The call resumes once this opens; `None` parks until the call is dropped.
        release: Option<Arc<Latch>>,
    },
}

impl<E> Effect<E> {
    /// `Park` forever, signalling `entered`.
    pub fn park_forever(entered: &Arc<Latch>) -> Self {
        Self::Park {
            entered: Arc::clone(entered),
            release: None,
        }
    }

    /// `Park` until `release`, signalling `entered`.
    pub fn park_until(entered: &Arc<Latch>, release: &Arc<Latch>) -> Self {
        Self::Park {
            entered: Arc::clone(entered),
            release: Some(Arc::clone(release)),
        }
    }
}

/// A port call as the hooks see it: which method it is.
pub trait HookedCall {
    /// The method enumeration of the port.
    type Method: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static;
    /// The method of this call.
    fn method(&self) -> Self::Method;
}

type Before<C, E> = Arc<dyn Fn(&C) -> Effect<E> + Send + Sync>;
type After<C, O> = Arc<dyn Fn(&C, &O) + Send + Sync>;

/// The hook table shared by the doubles.
pub(crate) struct Hooks<C: HookedCall, E, O> {
    before: Mutex<Vec<Before<C, E>>>,
    after: Mutex<Vec<After<C, O>>>,
    counts: Mutex<HashMap<C::Method, u64>>,
    counted: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<C: HookedCall, E, O> Default for Hooks<C, E, O> {
    fn default() -> Self {
        Self {
            before: Mutex::new(Vec::new()),
            after: Mutex::new(Vec::new()),
            counts: Mutex::new(HashMap::new()),
            counted: Notify::new(),
        }
    }
}

impl<C: HookedCall, E, O> fmt::Debug for Hooks<C, E, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hooks")
            .field("before", &lock(&self.before).len())
            .field("after", &lock(&self.after).len())
            .field("counts", &*lock(&self.counts))
            .finish()
    }
}

impl<C: HookedCall, E, O> Hooks<C, E, O> {
    pub(crate) fn before(&self, hook: impl Fn(&C) -> Effect<E> + Send + Sync + 'static) {
        lock(&self.before).push(Arc::new(hook));
    }

    pub(crate) fn after(&self, hook: impl Fn(&C, &O) + Send + Sync + 'static) {
        lock(&self.after).push(Arc::new(hook));
    }

    pub(crate) fn clear(&self) {
        lock(&self.before).clear();
        lock(&self.after).clear();
    }

    pub(crate) fn count(&self, method: C::Method) -> u64 {
        lock(&self.counts).get(&method).copied().unwrap_or(0)
    }

    pub(crate) async fn wait_count(&self, method: C::Method, n: u64) {
        loop {
            let notified = self.counted.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count(method) >= n {
                return;
            }
            notified.await;
        }
    }

    /// Counts the call, runs the before hooks: `Some(e)` when the call fails instead.
    pub(crate) async fn enter(&self, call: &C) -> Option<E> {
        *lock(&self.counts).entry(call.method()).or_insert(0) += 1;
        self.counted.notify_waiters();
        let hooks: Vec<Before<C, E>> = lock(&self.before).clone();
        for hook in hooks {
            match hook(call) {
                Effect::Forward => {}
                Effect::Fail(e) => return Some(e),
                Effect::Delay(d) => tokio::time::sleep(d).await,
                Effect::Park { entered, release } => {
                    entered.open();
                    match release {
                        Some(r) => r.wait().await,
                        None => std::future::pending::<()>().await,
                    }
                }
            }
        }
        None
    }

    /// The synchronous variant of [`enter`](Self::enter) for non-async methods: `Park` and
    /// `Delay` cannot wait there (`Park` only opens its `entered` latch).
    pub(crate) fn enter_now(&self, call: &C) -> Option<E> {
        *lock(&self.counts).entry(call.method()).or_insert(0) += 1;
        self.counted.notify_waiters();
        let hooks: Vec<Before<C, E>> = lock(&self.before).clone();
        for hook in hooks {
            match hook(call) {
                Effect::Forward => {}
                Effect::Fail(e) => return Some(e),
                Effect::Park { entered, .. } => entered.open(),
                Effect::Delay(_) => {}
            }
        }
        None
    }

    /// Runs the after hooks.
    pub(crate) fn exit(&self, call: &C, outcome: &O) {
        let hooks: Vec<After<C, O>> = lock(&self.after).clone();
        for hook in hooks {
            hook(call, outcome);
        }
    }
}

/// The shared hook-management methods of every hooked double.
macro_rules! hook_methods {
    ($call:ty, $method:ty, $err:ty, $outcome:ty) => {
        /// Installs a before hook (see the [module docs](crate::hooked)).
        pub fn before(
            &self,
            hook: impl Fn(&$call) -> $crate::hooked::Effect<$err> + Send + Sync + 'static,
        ) -> &Self {
            self.hooks.before(hook);
            self
        }

        /// Installs an after hook: it sees the call and a summary of the inner port's answer.
        pub fn after(&self, hook: impl Fn(&$call, &$outcome) + Send + Sync + 'static) -> &Self {
            self.hooks.after(hook);
            self
        }

        /// Every call of `method` fails with `error` instead of reaching the inner port.
        pub fn fail(&self, method: $method, error: $err) -> &Self {
            self.before(move |c| {
                if $crate::hooked::HookedCall::method(c) == method {
                    $crate::hooked::Effect::Fail(error.clone())
                } else {
                    $crate::hooked::Effect::Forward
                }
            })
        }

        /// Every call of `method` first sleeps `delay` on the runtime timer.
        pub fn delay(&self, method: $method, delay: std::time::Duration) -> &Self {
            self.before(move |c| {
                if $crate::hooked::HookedCall::method(c) == method {
                    $crate::hooked::Effect::Delay(delay)
                } else {
                    $crate::hooked::Effect::Forward
                }
            })
        }

        /// Every call of `method` parks forever; the returned latch opens when one parks.
        pub fn park(&self, method: $method) -> std::sync::Arc<$crate::Latch> {
            let entered = std::sync::Arc::new($crate::Latch::new());
            let signal = std::sync::Arc::clone(&entered);
            self.before(move |c| {
                if $crate::hooked::HookedCall::method(c) == method {
                    $crate::hooked::Effect::park_forever(&signal)
                } else {
                    $crate::hooked::Effect::Forward
                }
            });
            entered
        }

        /// Removes every hook (counting goes on).
        pub fn clear_hooks(&self) {
            self.hooks.clear();
        }

        /// Calls of `method` so far (parked and failed ones included).
        pub fn count(&self, method: $method) -> u64 {
            self.hooks.count(method)
        }

        /// Completes once `method` was called at least `n` times (event-driven, no polling).
        pub async fn wait_count(&self, method: $method, n: u64) {
            self.hooks.wait_count(method, n).await;
        }
    };
}
pub(crate) use hook_methods;
