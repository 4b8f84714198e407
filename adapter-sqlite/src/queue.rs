//! The hand-off queue between `record` and the writer thread (T-51;
//! issue 9 follow-up).
//!
//! A `Mutex<VecDeque>` with one `Condvar`, instead of a tokio channel, for two reasons:
//!
//! - **Few wakes.** A sender wakes the writer only when it must: the writer is idle (waiting for
//!   a first message), a batch just filled while the writer lingers, or a control message
//!   (`Flush`, `Close`) arrives. Rows that arrive while the writer lingers or writes cost a lock
//!   and a push, no system call.
//! - **Linger with an early end.** After its first row the writer waits up to the linger window
//!   for more rows (transactions of up to 256 rows or 50 ms), so a trickle of rows
//!   shares one transaction; a `Flush` or `Close` ends the wait at once, so `flush()` adds no
//!   latency.
//!
//! Only rows count against the capacity; `Flush` and `Close` are always accepted, so
//! `flush().await` never waits for room (the caller awaits only the writer's acknowledgement).
//! Nothing is held across I/O: the writer takes a batch under the lock and writes it after
//! releasing it.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use gateway_ports::TelemetryRow;
use tokio::sync::oneshot;

/// A message to the writer thread: a row, or a flush/close request answered on its channel.
pub(crate) enum Msg {
    Row(Box<TelemetryRow>),
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

/// Why a row was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// `capacity` rows are already queued.
    Full,
    /// The writer has stopped (closed, or it could not start).
    Stopped,
}

#[derive(Default)]
struct State {
    msgs: VecDeque<Msg>,
    /// Rows in `msgs`.
    rows: usize,
    /// `Flush`/`Close` messages in `msgs`.
    controls: usize,
    /// The writer waits for a first message: the next push wakes it.
    idle: bool,
    /// The writer lingers: a push that fills a batch wakes it.
    lingering: bool,
    /// The writer has stopped taking messages: pushes are refused.
    stopped: bool,
    /// The recorder was dropped: the writer drains what is queued and exits.
    disconnected: bool,
}

/// The queue (one per recorder; shared by the recorder and its writer thread).
pub(crate) struct Queue {
    state: Mutex<State>,
    wake: Condvar,
    capacity: usize,
    batch_rows: usize,
    /// Rows per batch when more than `batch_rows` are queued (≥ `batch_rows`).
    backlog_rows: usize,
}

impl Queue {
    /// A queue holding up to `capacity` rows, handing the writer batches of up to
    /// `batch_rows` rows (both ≥ 1), or of up to `backlog_rows` (at least `batch_rows`) when
    /// more than `batch_rows` rows are queued as the writer takes its batch (the writer is
    /// behind: a larger transaction touches each random `call_id` index page once for more
    /// rows; issue 21).
    pub(crate) fn new(capacity: usize, batch_rows: usize, backlog_rows: usize) -> Self {
        let batch_rows = batch_rows.max(1);
        Self {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            capacity: capacity.max(1),
            batch_rows,
            backlog_rows: backlog_rows.max(batch_rows),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues one row without waiting.
    pub(crate) fn push_row(&self, row: Box<TelemetryRow>) -> Result<(), Refused> {
        let mut st = self.lock();
        if st.stopped {
            return Err(Refused::Stopped);
        }
        if st.rows >= self.capacity {
            return Err(Refused::Full);
        }
        st.msgs.push_back(Msg::Row(row));
        st.rows += 1;
        let wake = if st.idle {
            st.idle = false;
            true
        } else if st.lingering && st.rows >= self.batch_rows {
            st.lingering = false;
            true
        } else {
            false
        };
        drop(st);
        if wake {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Queues a `Flush` or `Close` and wakes the writer. `false` (the message dropped, so its
    /// acknowledgement resolves at once) when the writer has stopped.
    pub(crate) fn push_control(&self, msg: Msg) -> bool {
        let mut st = self.lock();
        if st.stopped {
            return false;
        }
        st.msgs.push_back(msg);
        st.controls += 1;
        st.idle = false;
        st.lingering = false;
        drop(st);
        self.wake.notify_one();
        true
    }

    /// The recorder is gone: the writer drains the queue and exits.
    pub(crate) fn disconnect(&self) {
        self.lock().disconnected = true;
        self.wake.notify_one();
    }

    /// Rows queued now (diagnostics).
    pub(crate) fn len(&self) -> usize {
        self.lock().rows
    }

    /// Writer side: waits for messages, lingers up to `linger` for more rows unless a batch is
    /// full or a control message is queued, then moves the next batch — up to `batch_rows`
    /// rows (`backlog_rows` when more than `batch_rows` are queued) and the control messages
    /// among them, ending after a `Close` — into `out`, in queue order. `false` when the recorder was dropped and nothing is left.
    ///
    /// `idle_wake`: the longest the writer may wait for a first message; when it passes with
    /// nothing queued, `out` stays empty and the result is `true` (the writer then logs pending
    /// drops).
    pub(crate) fn next_batch(
        &self,
        linger: Duration,
        idle_wake: Option<Duration>,
        out: &mut Vec<Msg>,
    ) -> bool {
        let mut st = self.lock();
        while st.msgs.is_empty() {
            if st.disconnected {
                return false;
            }
            st.idle = true;
            match idle_wake {
                None => st = self.wake.wait(st).unwrap_or_else(|p| p.into_inner()),
                Some(wait) => {
                    let (guard, timeout) = self
                        .wake
                        .wait_timeout(st, wait)
                        .unwrap_or_else(|p| p.into_inner());
                    st = guard;
                    if timeout.timed_out() && st.msgs.is_empty() {
                        st.idle = false;
                        return !st.disconnected;
                    }
                }
            }
            st.idle = false;
        }
        let batch = self.batch_rows;
        let keep_waiting = |s: &mut State| s.controls == 0 && s.rows < batch && !s.disconnected;
        if !linger.is_zero() && keep_waiting(&mut st) {
            st.lingering = true;
            st = self
                .wake
                .wait_timeout_while(st, linger, keep_waiting)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|p| p.into_inner().0);
            st.lingering = false;
        }
        let state = &mut *st;
        let limit = if state.rows > batch {
            self.backlog_rows
        } else {
            batch
        };
        let mut rows = 0;
        while let Some(msg) = state.msgs.front() {
            let is_row = matches!(msg, Msg::Row(_));
            let is_close = matches!(msg, Msg::Close(_));
            if is_row && rows == limit {
                break;
            }
            if is_row {
                rows += 1;
            } else {
                state.controls -= 1;
            }
            if let Some(msg) = state.msgs.pop_front() {
                out.push(msg);
            }
            if is_close {
                break;
            }
        }
        state.rows -= rows;
        true
    }

    /// Stops the queue (later pushes are refused) and returns what is still queued.
    pub(crate) fn stop(&self) -> VecDeque<Msg> {
        let mut st = self.lock();
        st.stopped = true;
        st.rows = 0;
        st.controls = 0;
        std::mem::take(&mut st.msgs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Msg {
        Msg::Row(Box::new(contract_tests::telemetry::full_row("x")))
    }

    fn take(q: &Queue) -> (usize, usize) {
        let mut out = Vec::new();
        assert!(q.next_batch(Duration::ZERO, None, &mut out));
        let rows = out.iter().filter(|m| matches!(m, Msg::Row(_))).count();
        (rows, out.len() - rows)
    }

    fn push(q: &Queue, n: usize) {
        for _ in 0..n {
            let Msg::Row(r) = row() else { unreachable!() };
            assert_eq!(q.push_row(r), Ok(()));
        }
    }

    /// Issue 21: up to `batch_rows` rows per batch while the writer keeps up; when more than a
    /// batch is queued, batches of up to `backlog_rows`; every row handed over once, in order,
    /// and the queue's row count follows.
    #[test]
    fn a_backlog_is_taken_in_larger_batches_and_every_row_is_accounted() {
        let q = Queue::new(100, 4, 10);
        push(&q, 3);
        assert_eq!(take(&q), (3, 0));
        push(&q, 4);
        assert_eq!(take(&q), (4, 0), "exactly one batch queued: a normal batch");
        push(&q, 25);
        assert_eq!(q.len(), 25);
        assert_eq!(take(&q), (10, 0));
        assert_eq!(take(&q), (10, 0));
        assert_eq!(q.len(), 5);
        assert_eq!(take(&q), (5, 0), "5 > 4 queued: the rest in one batch");
        assert_eq!(q.len(), 0);
        // a flush among a backlog stays in place
        push(&q, 6);
        let (ack, _done) = oneshot::channel();
        assert!(q.push_control(Msg::Flush(ack)));
        push(&q, 6);
        assert_eq!(take(&q), (10, 1));
        assert_eq!(take(&q), (2, 0));
        assert_eq!(q.len(), 0);
    }

    /// The backlog bound is never below the batch bound.
    #[test]
    fn a_backlog_bound_below_the_batch_is_the_batch() {
        let q = Queue::new(100, 8, 2);
        push(&q, 20);
        assert_eq!(take(&q), (8, 0));
        assert_eq!(take(&q), (8, 0));
        assert_eq!(take(&q), (4, 0));
    }
}
