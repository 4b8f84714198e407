//! [`HookedCache`]: a forwarding [`ResponseCache`] with hooks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{CacheError, ResponseCache};

use super::{HookedCall, Hooks, hook_methods};

/// A [`ResponseCache`] method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheMethod {
    /// `get`.
    Get,
    /// `set`.
    Set,
    /// `close`.
    Close,
}

/// One cache call with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheCall {
    /// `get(key)`.
    Get {
        /// The key.
        key: String,
    },
    /// `set(key, value, ttl)`.
    Set {
        /// The key.
        key: String,
        /// The stored text.
        value: String,
        /// The time to live.
        ttl: Duration,
    },
    /// `close()`.
    Close,
}

impl HookedCall for CacheCall {
    type Method = CacheMethod;
    fn method(&self) -> CacheMethod {
        match self {
            Self::Get { .. } => CacheMethod::Get,
            Self::Set { .. } => CacheMethod::Set,
            Self::Close => CacheMethod::Close,
        }
    }
}

/// A [`ResponseCache`] forwarding to `inner`, with hooks (see the [module docs](crate::hooked)).
/// A before hook's `Fail` answers `get` / `set` with that error and keeps `close` from reaching
/// the inner cache; the after hooks see `Ok(())` or the inner error.
pub struct HookedCache {
    inner: Arc<dyn ResponseCache>,
    hooks: Hooks<CacheCall, CacheError, Result<(), CacheError>>,
}

impl fmt::Debug for HookedCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedCache")
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl HookedCache {
    /// Forwards to `inner`; no hook installed.
    pub fn new(inner: Arc<dyn ResponseCache>) -> Self {
        Self {
            inner,
            hooks: Hooks::default(),
        }
    }

    /// The wrapped cache.
    pub fn inner(&self) -> &Arc<dyn ResponseCache> {
        &self.inner
    }

    hook_methods!(CacheCall, CacheMethod, CacheError, Result<(), CacheError>);
}

#[async_trait]
impl ResponseCache for HookedCache {
    async fn get(&self, key: &str) -> Result<Option<String>, CacheError> {
        let call = CacheCall::Get {
            key: key.to_owned(),
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.get(key).await;
        self.hooks
            .exit(&call, &r.as_ref().map(|_| ()).map_err(Clone::clone));
        r
    }
    async fn set(&self, key: &str, value: String, ttl: Duration) -> Result<(), CacheError> {
        let call = CacheCall::Set {
            key: key.to_owned(),
            value: value.clone(),
            ttl,
        };
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.set(key, value, ttl).await;
        self.hooks.exit(&call, &r.clone());
        r
    }
    async fn close(&self) {
        let call = CacheCall::Close;
        if self.hooks.enter(&call).await.is_some() {
            return;
        }
        self.inner.close().await;
        self.hooks.exit(&call, &Ok(()));
    }
}
