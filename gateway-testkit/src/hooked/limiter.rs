//! [`HookedLimiter`]: a forwarding [`RateLimiter`] with hooks.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use gateway_ports::{Acquire, BackendError, RateLimiter, SourceStats};

use super::{HookedCall, Hooks, hook_methods};

/// A [`RateLimiter`] method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimiterMethod {
    /// `try_acquire`.
    TryAcquire,
    /// `source_stats`.
    SourceStats,
    /// `mark_progress`.
    MarkProgress,
    /// `progress_age_s`.
    ProgressAgeS,
    /// `close`.
    Close,
}

/// One limiter call with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimiterCall {
    /// `try_acquire(source, est_tokens)`.
    TryAcquire {
        /// The source.
        source: String,
        /// The reservation (tokens).
        est_tokens: u64,
    },
    /// `source_stats(source)`.
    SourceStats {
        /// The source.
        source: String,
    },
    /// `mark_progress()`.
    MarkProgress,
    /// `progress_age_s()`.
    ProgressAgeS,
    /// `close()`.
    Close,
}

impl LimiterCall {
    /// The source the call names, if any.
    pub fn source(&self) -> Option<&str> {
        match self {
            Self::TryAcquire { source, .. } | Self::SourceStats { source } => Some(source),
            _ => None,
        }
    }
}

impl HookedCall for LimiterCall {
    type Method = LimiterMethod;
    fn method(&self) -> LimiterMethod {
        match self {
            Self::TryAcquire { .. } => LimiterMethod::TryAcquire,
            Self::SourceStats { .. } => LimiterMethod::SourceStats,
            Self::MarkProgress => LimiterMethod::MarkProgress,
            Self::ProgressAgeS => LimiterMethod::ProgressAgeS,
            Self::Close => LimiterMethod::Close,
        }
    }
}

/// A [`RateLimiter`] forwarding to `inner`, with hooks (see the [module docs](crate::hooked)).
/// The after hooks see `Ok(())` or the error the inner limiter answered.
pub struct HookedLimiter {
    inner: Arc<dyn RateLimiter>,
    hooks: Hooks<LimiterCall, BackendError, Result<(), BackendError>>,
}

impl fmt::Debug for HookedLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedLimiter")
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl HookedLimiter {
    /// Forwards to `inner`; no hook installed.
    pub fn new(inner: Arc<dyn RateLimiter>) -> Self {
        Self {
            inner,
            hooks: Hooks::default(),
        }
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &Arc<dyn RateLimiter> {
        &self.inner
    }

    hook_methods!(
        LimiterCall,
        LimiterMethod,
        BackendError,
        Result<(), BackendError>
    );

    async fn call<T>(
        &self,
        call: LimiterCall,
        forward: impl Future<Output = Result<T, BackendError>>,
    ) -> Result<T, BackendError> {
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = forward.await;
        self.hooks
            .exit(&call, &r.as_ref().map(|_| ()).map_err(Clone::clone));
        r
    }
}

#[async_trait]
impl RateLimiter for HookedLimiter {
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError> {
        let call = LimiterCall::TryAcquire {
            source: source.to_owned(),
            est_tokens,
        };
        self.call(call, self.inner.try_acquire(source, est_tokens))
            .await
    }
    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError> {
        let call = LimiterCall::SourceStats {
            source: source.to_owned(),
        };
        self.call(call, self.inner.source_stats(source)).await
    }
    async fn mark_progress(&self) -> Result<(), BackendError> {
        self.call(LimiterCall::MarkProgress, self.inner.mark_progress())
            .await
    }
    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        self.call(LimiterCall::ProgressAgeS, self.inner.progress_age_s())
            .await
    }
    async fn close(&self) {
        let _ = self
            .call(LimiterCall::Close, async {
                self.inner.close().await;
                Ok(())
            })
            .await;
    }
    /// Passed through unhooked: a flush has no outcome to script.
    async fn flush(&self) {
        self.inner.flush().await;
    }
}
