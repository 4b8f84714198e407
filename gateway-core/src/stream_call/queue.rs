//! The bounded FIFO between a streamed call's [`CommitGate`](super::CommitGate) and its consumer.
//!
//! Why not `tokio::sync::mpsc`: a streamed call creates one buffer, and a tokio channel allocates
//! its first block of 32 slots up front (≈ 4 KB of `StreamDelta`s) plus the channel state and an
//! aligned allocation, before the first token, whatever `StreamOptions::buffer` says; every
//! delta then goes through its semaphore and block list. Here the items sit in a `VecDeque`
//! that starts empty (no allocation until the first item) and grows to at most `capacity`
//! slots, and the queue shares its one `std::sync::Mutex` with the gate's own state (`S`): the
//! gate decides where a frame goes, records it as forwarded and queues it under a single lock.
//!
//! Semantics are those of the bounded tokio channel the gate used before:
//! - at most `capacity` (at least 1) items are queued; [`Sender::send`] pends while the queue is
//!   full and resumes once the receiver takes an item (the gate's back-pressure);
//! - items come out in the order they were pushed;
//! - once the [`Receiver`] is dropped, every push or send fails and hands the item back (the
//!   caller stopped listening), and the queued items are dropped;
//! - once the [`Sender`] is dropped, the receiver drains what is queued and then reads "closed".
//!
//! Wakers: a sender waiting for room registers in one slot, woken by the next take (or by the
//! receiver's drop). A receiver registers only when it waits in [`Receiver::poll_recv`];
//! [`Receiver::try_recv`] never registers, so a consumer that polls the sender itself (the
//! facade's `ChatStream` drives the call from its own `poll_next`) is not woken once per item.
//! The gate's sends all come from one task (the call's), so one slot per side is enough; a
//! waker displaced by a different one is woken, so no wake-up is ever lost.

use std::collections::VecDeque;
use std::fmt;
use std::future::poll_fn;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// Slots allocated by the first push (fewer when the capacity is smaller): a short answer that
/// the consumer takes as it comes never needs more.
pub(super) const FIRST_ALLOCATION: usize = 4;

/// Why [`DeltaReceiver::try_recv`](super::DeltaReceiver::try_recv) returned no delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing is queued right now; the sender may still push.
    Empty,
    /// Nothing is queued and the sender is gone: nothing will ever arrive.
    Disconnected,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "the stream buffer is empty",
            Self::Disconnected => "the stream buffer is empty and closed",
        })
    }
}

impl std::error::Error for TryRecvError {}

/// Why a push did not queue the item; the item is handed back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryPushError<T> {
    /// `capacity` items are queued.
    Full(T),
    /// The receiver is gone.
    Closed(T),
}

/// The receiver is gone; the item that could not be sent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed<T>(pub(crate) T);

struct Inner<T, S> {
    items: VecDeque<T>,
    capacity: usize,
    /// A sender waiting for room.
    room: Option<Waker>,
    /// A receiver waiting for an item (only [`Receiver::poll_recv`] registers).
    ready: Option<Waker>,
    receiver_alive: bool,
    sender_alive: bool,
    state: S,
}

type Shared<T, S> = Arc<Mutex<Inner<T, S>>>;

fn lock<T, S>(shared: &Shared<T, S>) -> MutexGuard<'_, Inner<T, S>> {
    // A poisoned lock only means another holder panicked; the queue stays consistent (every
    // update below is a single push, pop or flag store).
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Stores `waker` in `slot`; a different waker it displaces is returned to be woken (after the
/// lock is released), so its task re-checks instead of sleeping forever.
fn register(slot: &mut Option<Waker>, waker: &Waker) -> Option<Waker> {
    match slot {
        Some(current) if current.will_wake(waker) => None,
        _ => slot.replace(waker.clone()),
    }
}

/// A bounded queue of at most `capacity` items (at least 1) whose lock also guards `state`.
pub(crate) fn bounded<T, S>(capacity: usize, state: S) -> (Sender<T, S>, Receiver<T, S>) {
    let shared = Arc::new(Mutex::new(Inner {
        items: VecDeque::new(),
        capacity: capacity.max(1),
        room: None,
        ready: None,
        receiver_alive: true,
        sender_alive: true,
        state,
    }));
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Receiver { shared },
    )
}

/// The pushing end (one per queue; it also owns access to the shared state).
pub(crate) struct Sender<T, S> {
    shared: Shared<T, S>,
}

impl<T, S> Sender<T, S> {
    /// Takes the lock: the shared state through `Deref`, and [`SendGuard::try_push`].
    pub(crate) fn lock(&self) -> SendGuard<'_, T, S> {
        SendGuard {
            inner: lock(&self.shared),
            wake: WakeOnDrop(None),
        }
    }

    /// Queues `item`, waiting while the queue is full. Fails, handing the item back, once the
    /// receiver is gone (also when it goes while this waits). Dropping the future drops the item
    /// unsent.
    pub(crate) async fn send(&self, item: T) -> Result<(), Closed<T>> {
        let mut item = Some(item);
        poll_fn(|cx| self.poll_send(cx, &mut item)).await
    }

    fn poll_send(&self, cx: &mut Context<'_>, item: &mut Option<T>) -> Poll<Result<(), Closed<T>>> {
        let Some(value) = item.take() else {
            // Only reachable when polled again after `Ready`, which `send`'s `async` forbids.
            return Poll::Ready(Ok(()));
        };
        let mut guard = self.lock();
        match guard.try_push(value) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(TryPushError::Closed(value)) => Poll::Ready(Err(Closed(value))),
            Err(TryPushError::Full(value)) => {
                *item = Some(value);
                // A failed push woke nobody, so the guard's wake slot is free.
                guard.wake.0 = register(&mut guard.inner.room, cx.waker());
                Poll::Pending
            }
        }
    }
}

impl<T, S> Drop for Sender<T, S> {
    fn drop(&mut self) {
        let ready = {
            let mut inner = lock(&self.shared);
            inner.sender_alive = false;
            inner.ready.take()
        };
        if let Some(waker) = ready {
            waker.wake();
        }
    }
}

impl<T, S> fmt::Debug for Sender<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_end(f, "Sender", &self.shared, "receiver_alive", |i| {
            i.receiver_alive
        })
    }
}

/// `Debug` of one end: the queue's length and capacity, and whether the other end lives.
fn debug_end<T, S>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    shared: &Shared<T, S>,
    peer: &str,
    peer_alive: fn(&Inner<T, S>) -> bool,
) -> fmt::Result {
    let inner = lock(shared);
    f.debug_struct(name)
        .field("queued", &inner.items.len())
        .field("capacity", &inner.capacity)
        .field(peer, &peer_alive(&inner))
        .finish_non_exhaustive()
}

/// A waker to wake when dropped.
struct WakeOnDrop(Option<Waker>);

impl Drop for WakeOnDrop {
    fn drop(&mut self) {
        if let Some(waker) = self.0.take() {
            waker.wake();
        }
    }
}

/// The held lock of a queue: the shared state (`Deref`/`DerefMut` to `S`) and
/// [`try_push`](Self::try_push). A receiver woken by a push is woken when the guard is dropped,
/// after the lock is released.
pub(crate) struct SendGuard<'a, T, S> {
    inner: MutexGuard<'a, Inner<T, S>>,
    /// Declared after `inner`, so dropped after it: the wake comes once the lock is released.
    wake: WakeOnDrop,
}

impl<T, S> SendGuard<'_, T, S> {
    /// Queues `item` when there is room, without waiting; hands it back when the queue is full
    /// or the receiver is gone.
    pub(crate) fn try_push(&mut self, item: T) -> Result<(), TryPushError<T>> {
        let inner = &mut *self.inner;
        if !inner.receiver_alive {
            return Err(TryPushError::Closed(item));
        }
        let len = inner.items.len();
        if len >= inner.capacity {
            return Err(TryPushError::Full(item));
        }
        if len == inner.items.capacity() {
            // Grow by doubling from a few slots, never past `capacity`.
            let target = (len * 2).max(FIRST_ALLOCATION).min(inner.capacity);
            inner.items.reserve_exact(target - len);
        }
        inner.items.push_back(item);
        if let Some(waker) = inner.ready.take() {
            // The slot was empty: a receiver registers only under this lock, and its waker is
            // taken by the first push after that.
            self.wake.0 = Some(waker);
        }
        Ok(())
    }
}

impl<T, S> Deref for SendGuard<'_, T, S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.inner.state
    }
}

impl<T, S> DerefMut for SendGuard<'_, T, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.inner.state
    }
}

impl<T, S> fmt::Debug for SendGuard<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendGuard")
            .field("queued", &self.inner.items.len())
            .field("capacity", &self.inner.capacity)
            .finish_non_exhaustive()
    }
}

/// The taking end. Dropping it closes the queue: pushes fail from then on.
pub(crate) struct Receiver<T, S> {
    shared: Shared<T, S>,
}

impl<T, S> Receiver<T, S> {
    /// Takes the oldest item without waiting and without registering a waker.
    pub(crate) fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.take(None)
    }

    /// Takes the oldest item, or registers `cx`'s waker for the next push; `Ready(None)` once
    /// the queue is empty and the sender is gone.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.take(Some(cx.waker())) {
            Ok(item) => Poll::Ready(Some(item)),
            Err(TryRecvError::Disconnected) => Poll::Ready(None),
            Err(TryRecvError::Empty) => Poll::Pending,
        }
    }

    /// Pops the oldest item (waking a sender that waits for room), or — when `waiter` is given
    /// and the sender still lives — registers it for the next push. Wakers are woken after the
    /// lock is released.
    fn take(&mut self, waiter: Option<&Waker>) -> Result<T, TryRecvError> {
        let (item, wake) = {
            let mut inner = lock(&self.shared);
            match inner.items.pop_front() {
                Some(item) => (Ok(item), inner.room.take()),
                None if !inner.sender_alive => return Err(TryRecvError::Disconnected),
                None => (
                    Err(TryRecvError::Empty),
                    waiter.and_then(|w| register(&mut inner.ready, w)),
                ),
            }
        };
        if let Some(waker) = wake {
            waker.wake();
        }
        item
    }
}

impl<T, S> Drop for Receiver<T, S> {
    fn drop(&mut self) {
        let (items, room) = {
            let mut inner = lock(&self.shared);
            inner.receiver_alive = false;
            (std::mem::take(&mut inner.items), inner.room.take())
        };
        // The queued items are dropped outside the lock.
        drop(items);
        if let Some(waker) = room {
            waker.wake();
        }
    }
}

impl<T, S> fmt::Debug for Receiver<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_end(f, "Receiver", &self.shared, "sender_alive", |i| {
            i.sender_alive
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "tests: a missing value is a failed test"
    )]

    use super::*;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;
    use std::time::Duration;

    use proptest::prelude::*;

    /// A waker counting its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (Arc::clone(&count), Waker::from(Arc::clone(&count)))
    }

    fn wakes(count: &Count) -> usize {
        count.0.load(Ordering::SeqCst)
    }

    type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Closed<u32>>> + 'a>>;

    fn push(tx: &Sender<u32, ()>, item: u32) -> Result<(), TryPushError<u32>> {
        tx.lock().try_push(item)
    }

    fn slots(tx: &Sender<u32, ()>) -> (usize, usize) {
        let inner = lock(&tx.shared);
        (inner.items.len(), inner.items.capacity())
    }

    #[test]
    fn items_come_out_in_push_order() {
        let (tx, mut rx) = bounded::<u32, ()>(8, ());
        for i in 1..=5 {
            push(&tx, i).unwrap();
        }
        let got: Vec<u32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(got, vec![1, 2, 3, 4, 5]);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }

    #[test]
    fn nothing_is_allocated_before_the_first_item_and_never_past_the_capacity() {
        let (tx, mut rx) = bounded::<u32, ()>(16, ());
        assert_eq!(slots(&tx), (0, 0), "an unused buffer allocates no slot");
        push(&tx, 1).unwrap();
        assert_eq!(slots(&tx), (1, FIRST_ALLOCATION), "a few slots first");
        rx.try_recv().unwrap();
        for i in 0..16 {
            push(&tx, i).unwrap();
        }
        assert_eq!(slots(&tx), (16, 16));
        assert_eq!(push(&tx, 99), Err(TryPushError::Full(99)));

        let (small, _rx) = bounded::<u32, ()>(1, ());
        push(&small, 1).unwrap();
        assert_eq!(
            slots(&small),
            (1, 1),
            "a capacity below the first allocation caps it"
        );
    }

    #[test]
    fn a_zero_capacity_means_one() {
        let (tx, _rx) = bounded::<u32, ()>(0, ());
        push(&tx, 1).unwrap();
        assert_eq!(push(&tx, 2), Err(TryPushError::Full(2)));
    }

    #[test]
    fn d32_a_send_into_a_full_queue_pends_until_the_receiver_takes_one() {
        let (tx, mut rx) = bounded::<u32, ()>(2, ());
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        push(&tx, 1).unwrap();
        push(&tx, 2).unwrap();
        let mut send: SendFuture<'_> = Box::pin(tx.send(3));
        assert!(
            send.as_mut().poll(&mut cx).is_pending(),
            "full: the send waits"
        );
        assert!(send.as_mut().poll(&mut cx).is_pending(), "still full");
        assert_eq!(wakes(&count), 0);
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(wakes(&count), 1, "taking one wakes the waiting sender once");
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(wakes(&count), 1, "nobody waits any more");
        assert_eq!(send.as_mut().poll(&mut cx), Poll::Ready(Ok(())));
        assert_eq!(rx.try_recv(), Ok(3));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    }

    #[test]
    fn pushes_fail_once_the_receiver_is_gone_and_a_waiting_send_is_released() {
        let (tx, rx) = bounded::<u32, ()>(1, ());
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        push(&tx, 1).unwrap();
        let mut send: SendFuture<'_> = Box::pin(tx.send(2));
        assert!(send.as_mut().poll(&mut cx).is_pending());
        drop(rx);
        assert_eq!(
            wakes(&count),
            1,
            "the receiver's drop wakes the waiting sender"
        );
        assert_eq!(send.as_mut().poll(&mut cx), Poll::Ready(Err(Closed(2))));
        assert_eq!(
            slots(&tx).0,
            0,
            "the queued item was dropped with the receiver"
        );
        assert_eq!(push(&tx, 3), Err(TryPushError::Closed(3)));
        let mut late: SendFuture<'_> = Box::pin(tx.send(4));
        assert_eq!(late.as_mut().poll(&mut cx), Poll::Ready(Err(Closed(4))));
    }

    #[test]
    fn the_receiver_drains_then_reads_closed_once_the_sender_is_gone() {
        let (tx, mut rx) = bounded::<u32, ()>(4, ());
        push(&tx, 1).unwrap();
        push(&tx, 2).unwrap();
        drop(tx);
        assert_eq!(rx.try_recv(), Ok(1));
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(2)));
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }

    #[test]
    fn a_waiting_receiver_is_woken_by_a_push_and_by_the_senders_drop() {
        let (tx, mut rx) = bounded::<u32, ()>(4, ());
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_recv(&mut cx).is_pending());
        push(&tx, 7).unwrap();
        assert_eq!(wakes(&count), 1);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(7)));
        push(&tx, 8).unwrap();
        assert_eq!(
            wakes(&count),
            1,
            "a receiver that did not wait is not woken"
        );
        assert_eq!(rx.try_recv(), Ok(8));
        assert!(rx.poll_recv(&mut cx).is_pending());
        drop(tx);
        assert_eq!(wakes(&count), 2);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn the_guard_gives_the_shared_state_under_the_same_lock() {
        let (tx, mut rx) = bounded::<u32, Vec<u32>>(4, Vec::new());
        {
            let mut guard = tx.lock();
            guard.push(10);
            guard.try_push(10).unwrap();
        }
        assert_eq!(*tx.lock(), vec![10]);
        assert_eq!(rx.try_recv(), Ok(10));
    }

    // The back-pressure the gate relies on, on the paused clock: with a consumer taking one item
    // every 10 ms and room for 2, the sender's k-th item (k ≥ 2) goes in at the k-1-th take.
    #[tokio::test(start_paused = true)]
    async fn d32_a_full_queue_paces_the_sender_to_the_consumer() {
        let (tx, mut rx) = bounded::<u32, ()>(2, ());
        let start = tokio::time::Instant::now();
        let producer = async move {
            let mut sent_at = Vec::new();
            for i in 0..6 {
                tx.send(i).await.unwrap();
                sent_at.push(start.elapsed());
            }
            sent_at
        };
        let consumer = async {
            let mut got = Vec::new();
            loop {
                tokio::time::sleep(Duration::from_millis(10)).await;
                match poll_fn(|cx| rx.poll_recv(cx)).await {
                    Some(item) => got.push(item),
                    None => break got,
                }
            }
        };
        let (sent_at, got) = tokio::join!(producer, consumer);
        assert_eq!(got, vec![0, 1, 2, 3, 4, 5]);
        let ms: Vec<u128> = sent_at.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, vec![0, 0, 10, 20, 30, 40]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// `try_push` (skipped while a send waits, as the gate never pushes past its own send).
        Push(u32),
        /// Start a send (when none waits) and poll it once.
        Send(u32),
        /// Poll the waiting send again.
        PollSend,
        Take,
        DropReceiver,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u32>().prop_map(Op::Push),
            3 => any::<u32>().prop_map(Op::Send),
            2 => Just(Op::PollSend),
            5 => Just(Op::Take),
            1 => Just(Op::DropReceiver),
        ]
    }

    proptest! {
        // Random push/send/take sequences against a `VecDeque` model of a bounded FIFO: same
        // items in the same order, never more than `capacity` queued or allocated, a waiting
        // send resumes exactly when room appears, everything fails once the receiver is gone.
        #[test]
        fn d32_the_queue_behaves_as_a_bounded_fifo(
            capacity in 1usize..7,
            ops in proptest::collection::vec(op(), 0..80),
        ) {
            let (tx, rx) = bounded::<u32, ()>(capacity, ());
            let mut rx = Some(rx);
            let (count, waker) = counting();
            let mut cx = Context::from_waker(&waker);
            let mut model: VecDeque<u32> = VecDeque::new();
            let mut waiting: Option<(u32, SendFuture<'_>)> = None;
            let mut woken = 0;
            // A send waits and its waker sits in the room slot (not yet woken).
            let mut armed = false;
            for op in ops {
                let alive = rx.is_some();
                match op {
                    Op::Push(item) if waiting.is_none() => {
                        let expect = if !alive {
                            Err(TryPushError::Closed(item))
                        } else if model.len() == capacity {
                            Err(TryPushError::Full(item))
                        } else {
                            model.push_back(item);
                            Ok(())
                        };
                        prop_assert_eq!(push(&tx, item), expect);
                    }
                    Op::Push(_) => {}
                    Op::Send(item) if waiting.is_none() => {
                        let mut send: SendFuture<'_> = Box::pin(tx.send(item));
                        let got = send.as_mut().poll(&mut cx);
                        if !alive {
                            prop_assert_eq!(got, Poll::Ready(Err(Closed(item))));
                        } else if model.len() < capacity {
                            prop_assert_eq!(got, Poll::Ready(Ok(())));
                            model.push_back(item);
                        } else {
                            prop_assert!(got.is_pending());
                            waiting = Some((item, send));
                            armed = true;
                        }
                    }
                    Op::Send(_) => {}
                    Op::PollSend => {
                        if let Some((item, mut send)) = waiting.take() {
                            let got = send.as_mut().poll(&mut cx);
                            if !alive {
                                prop_assert_eq!(got, Poll::Ready(Err(Closed(item))));
                            } else if model.len() < capacity {
                                prop_assert_eq!(got, Poll::Ready(Ok(())));
                                model.push_back(item);
                            } else {
                                prop_assert!(got.is_pending());
                                waiting = Some((item, send));
                                armed = true;
                            }
                        }
                    }
                    Op::Take => {
                        if let Some(rx) = rx.as_mut() {
                            let expect = model.pop_front().ok_or(TryRecvError::Empty);
                            let took = expect.is_ok();
                            prop_assert_eq!(rx.try_recv(), expect);
                            if took && armed {
                                // The take that made room wakes the waiting send.
                                woken += 1;
                                armed = false;
                            }
                        }
                    }
                    Op::DropReceiver => {
                        if rx.take().is_some() {
                            if armed {
                                woken += 1;
                                armed = false;
                            }
                            model.clear();
                        }
                    }
                }
                prop_assert_eq!(wakes(&count), woken);
                let (len, allocated) = slots(&tx);
                prop_assert_eq!(len, model.len());
                prop_assert!(allocated <= capacity, "{} slots for {}", allocated, capacity);
            }
            drop(waiting);
            if let Some(mut rx) = rx {
                let rest: Vec<u32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
                prop_assert_eq!(rest, Vec::from(model));
            }
        }
    }
}
