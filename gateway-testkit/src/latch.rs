//! A one-way gate for tests (05 R-30: wait on events, never sleep).

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Opened once, awaited any number of times: [`Latch::wait`] resolves at once after
/// [`Latch::open`], and never misses an `open` that races with it (the waiter registers with
/// the `Notify` before it checks the flag).
#[derive(Debug, Default)]
pub struct Latch {
    opened: AtomicBool,
    notify: Notify,
}

impl Latch {
    /// A closed latch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the latch and wakes every waiter; idempotent.
    pub fn open(&self) {
        self.opened.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// `true` once [`open`](Self::open) was called.
    pub fn is_open(&self) -> bool {
        self.opened.load(Ordering::SeqCst)
    }

    /// Resolves once the latch is open.
    pub async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_open() {
                return;
            }
            notified.await;
        }
    }
}
