//! [`HookedChatTransport`]: a forwarding [`ChatTransport`] with hooks.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use gateway_ports::{ChatTransport, WireFailure, WireRequest, WireResponse};

use super::{HookedCall, Hooks, hook_methods};

/// The [`ChatTransport`] method (`send`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChatMethod {
    /// `send`.
    Send,
}

/// One `send` with its request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ChatCall {
    /// `send(request)`.
    Send(WireRequest),
}

impl HookedCall for ChatCall {
    type Method = ChatMethod;
    fn method(&self) -> ChatMethod {
        match self {
            Self::Send(_) => ChatMethod::Send,
        }
    }
}

/// A [`ChatTransport`] forwarding to `inner`, with hooks (see the [module docs](crate::hooked)).
/// A before hook's `Fail` answers the send with that wire failure; the after hooks see `Ok(())`
/// when the inner transport answered (head or body) or its failure.
pub struct HookedChatTransport {
    inner: Arc<dyn ChatTransport>,
    hooks: Hooks<ChatCall, WireFailure, Result<(), WireFailure>>,
}

impl fmt::Debug for HookedChatTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedChatTransport")
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl HookedChatTransport {
    /// Forwards to `inner`; no hook installed.
    pub fn new(inner: Arc<dyn ChatTransport>) -> Self {
        Self {
            inner,
            hooks: Hooks::default(),
        }
    }

    /// The wrapped transport.
    pub fn inner(&self) -> &Arc<dyn ChatTransport> {
        &self.inner
    }

    hook_methods!(ChatCall, ChatMethod, WireFailure, Result<(), WireFailure>);
}

#[async_trait]
impl ChatTransport for HookedChatTransport {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        let call = ChatCall::Send(request.clone());
        if let Some(e) = self.hooks.enter(&call).await {
            return Err(e);
        }
        let r = self.inner.send(request).await;
        self.hooks
            .exit(&call, &r.as_ref().map(|_| ()).map_err(Clone::clone));
        r
    }
}
