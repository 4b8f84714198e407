//! [`HookedRowSink`]: a forwarding [`RowSink`] with hooks.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use gateway_core::rows::{AttemptRowFacts, CacheHitRowFacts, RowSink, TerminalRowFacts};

use super::{HookedCall, Hooks, hook_methods};

/// A [`RowSink`] method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RowMethod {
    /// `attempt`.
    Attempt,
    /// `terminal`.
    Terminal,
    /// `cache_hit`.
    CacheHit,
    /// `flush`.
    Flush,
}

/// One row-sink call with its facts.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RowCall {
    /// `attempt(facts)`.
    Attempt(AttemptRowFacts),
    /// `terminal(facts)`.
    Terminal(TerminalRowFacts),
    /// `cache_hit(facts)`.
    CacheHit(CacheHitRowFacts),
    /// `flush()`.
    Flush,
}

impl HookedCall for RowCall {
    type Method = RowMethod;
    fn method(&self) -> RowMethod {
        match self {
            Self::Attempt(_) => RowMethod::Attempt,
            Self::Terminal(_) => RowMethod::Terminal,
            Self::CacheHit(_) => RowMethod::CacheHit,
            Self::Flush => RowMethod::Flush,
        }
    }
}

/// A [`RowSink`] forwarding to `inner`, with hooks (see the [module docs](crate::hooked)). A
/// before hook's `Fail(())` drops the row (a sink never fails from the loop's point of view);
/// `Park` holds the emitting code inside the sink. `wants_rows` is the inner sink's.
pub struct HookedRowSink {
    inner: Arc<dyn RowSink>,
    hooks: Hooks<RowCall, (), ()>,
}

impl fmt::Debug for HookedRowSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedRowSink")
            .field("inner", &self.inner)
            .field("hooks", &self.hooks)
            .finish()
    }
}

impl HookedRowSink {
    /// Forwards to `inner`; no hook installed.
    pub fn new(inner: Arc<dyn RowSink>) -> Self {
        Self {
            inner,
            hooks: Hooks::default(),
        }
    }

    /// The wrapped sink.
    pub fn inner(&self) -> &Arc<dyn RowSink> {
        &self.inner
    }

    hook_methods!(RowCall, RowMethod, (), ());

    async fn pass(&self, call: RowCall) {
        if self.hooks.enter(&call).await.is_some() {
            return;
        }
        match call.clone() {
            RowCall::Attempt(f) => self.inner.attempt(f).await,
            RowCall::Terminal(f) => self.inner.terminal(f).await,
            RowCall::CacheHit(f) => self.inner.cache_hit(f).await,
            RowCall::Flush => self.inner.flush().await,
        }
        self.hooks.exit(&call, &());
    }
}

#[async_trait]
impl RowSink for HookedRowSink {
    async fn attempt(&self, facts: AttemptRowFacts) {
        self.pass(RowCall::Attempt(facts)).await;
    }
    async fn terminal(&self, facts: TerminalRowFacts) {
        self.pass(RowCall::Terminal(facts)).await;
    }
    async fn cache_hit(&self, facts: CacheHitRowFacts) {
        self.pass(RowCall::CacheHit(facts)).await;
    }
    async fn flush(&self) {
        self.pass(RowCall::Flush).await;
    }
    fn wants_rows(&self) -> bool {
        self.inner.wants_rows()
    }
}
