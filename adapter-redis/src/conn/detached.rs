//! Scripts sent without their caller waiting for the reply: the settle/release of a finished
//! call (docs/decisions.md "Redis settle and release off the caller's path").
//!
//! The script is on the connection before [`RedisConnection::start_detached`] returns. `fred`
//! queues commands in order and one connection answers in order, so every later operation of
//! this process runs after it and sees its effect; only the reply is awaited in the background.
//! [`RedisConnection::drain`] waits for those replies so `close()` loses nothing.

use std::sync::atomic::Ordering;
use std::task::{Context, Waker};
use std::time::Duration;

use super::RedisConnection;

impl RedisConnection {
    /// Starts `op` now and awaits the rest of it on a task of the current tokio runtime.
    ///
    /// `op` must queue its command at its first poll: a `fred` command does, before it first
    /// awaits its reply (and the connection's timeout wrapper polls it at once). Returns `false`
    /// when no runtime is running here: nothing was started and the caller runs `op`'s work
    /// itself. The background part is bounded by the operation timeout like any round trip.
    pub(crate) fn start_detached<F>(&self, op: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let mut op = Box::pin(op);
        // The first poll only queues the command (a waker that does nothing is enough: the task
        // below polls again with its own waker before anything can be ready to wake it).
        if op
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
        {
            return true;
        }
        self.inner.detached.fetch_add(1, Ordering::AcqRel);
        let conn = self.clone();
        rt.spawn(async move {
            op.await;
            if conn.inner.detached.fetch_sub(1, Ordering::AcqRel) == 1 {
                conn.inner.detached_idle.notify_waiters();
            }
        });
        true
    }

    /// Waits until every script started by [`Self::start_detached`] has its reply, for at most
    /// twice the operation timeout (each one is bounded by it, so this only guards against a
    /// runtime that stopped polling them).
    pub(crate) async fn drain(&self) {
        let bound = self
            .inner
            .opts
            .op_timeout
            .saturating_mul(2)
            .saturating_add(Duration::from_millis(200));
        let wait = async {
            loop {
                let mut idle = std::pin::pin!(self.inner.detached_idle.notified());
                idle.as_mut().enable();
                if self.inner.detached.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(bound, wait).await;
    }

    /// Settle/release scripts of finished calls whose reply has not arrived yet (they were sent
    /// without their caller waiting; `flush` and `close()` wait for them). A count, for leak
    /// checks and tests.
    pub fn detached_in_flight(&self) -> usize {
        self.inner.detached.load(Ordering::Acquire)
    }
}
