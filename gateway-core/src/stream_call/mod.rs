//! Streaming to the caller: the per-call [`CommitGate`] between the attempts'
//! accumulators and the caller's bounded event buffer.
//!
//! Every attempt of a streamed call hands each merged frame ([`StreamDelta`]) to the gate.
//! Before the commit point the gate only buffers, per attempt: retries, the first-token hedge
//! and failover stay invisible. The first attempt whose frame carries a content token (or a
//! reasoning token when the caller opted in, or a tool-call fragment) **commits**: its buffered
//! frames and every later one are forwarded, in order, into a bounded buffer; frames of any
//! other attempt are dropped from then on. An attempt that succeeds without ever reaching the
//! commit point (a tool-call-only answer) commits at its success. The hedged round cancels the other leg as the loser
//! once a commit is observed, and the retry loop never retries a committed call: the committed
//! attempt's failure ends the call, marked with [`GatewayError::into_committed`].
//!
//! Back-pressure: [`CommitGate::forward`] awaits room in the bounded buffer, so a slow consumer
//! slows the upstream read of the committed attempt. The executor excludes the time spent
//! waiting there from its watchdogs (the inter-token watchdog measures the upstream).
//!
//! The buffer is the gate's own small queue (`queue`), read through [`DeltaReceiver`]: it
//! allocates nothing until the first forwarded delta and at most `capacity` slots, and it
//! shares one lock with the gate's state, so forwarding a frame takes that lock once.

mod queue;

use std::collections::HashMap;
use std::fmt;
use std::task::{Context, Poll};

use gateway_ports::{AttemptError, GatewayError, LlmResponse, PartialOutput};
use serde_json::Value;
use tokio::sync::Notify;

use queue::TryPushError;
pub use queue::TryRecvError;

/// Default capacity, in events, of the buffer between the upstream read and the consumer.
pub const DEFAULT_STREAM_BUFFER: usize = 16;

/// One tool-call fragment as the upstream streamed it (openai mode).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolCallFragment {
    /// The call's `index` in the message's `tool_calls` list.
    pub index: u32,
    /// The call's `id`, when this fragment carries it (usually the first one).
    pub id: Option<String>,
    /// The function name fragment, when present.
    pub name: Option<String>,
    /// The arguments fragment (JSON text, possibly partial).
    pub arguments: String,
}

/// What one upstream frame added to the answer, as the accumulator merged it.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StreamDelta {
    /// Content fragment (may be empty).
    pub content: String,
    /// Reasoning fragment (`reasoning_content` or `reasoning`); empty unless the caller opted
    /// in to reasoning deltas.
    pub reasoning: String,
    /// Tool-call fragments (openai mode).
    pub tool_calls: Vec<ToolCallFragment>,
    /// The raw upstream chunk (openai mode only).
    pub raw: Option<Value>,
}

impl StreamDelta {
    /// A content-only delta.
    pub fn content(text: impl Into<String>) -> Self {
        Self {
            content: text.into(),
            ..Self::default()
        }
    }

    /// `true` when the delta carries nothing a caller can show.
    pub fn is_empty(&self) -> bool {
        self.content.is_empty()
            && self.reasoning.is_empty()
            && self.tool_calls.is_empty()
            && self.raw.is_none()
    }

    /// `true` when this delta reaches the commit point: a content token or a
    /// reasoning token (only present when the caller opted in). Tool-call fragments do not
    /// commit (a stall hedge may still replace a tool-calling leg, as in `chat`); they are
    /// forwarded once the attempt commits or succeeds.
    pub fn commits(&self) -> bool {
        !(self.content.is_empty() && self.reasoning.is_empty())
    }

    /// The tool-call fragments of the first choice of a raw openai chunk.
    pub fn tool_calls_of(chunk: &Value) -> Vec<ToolCallFragment> {
        let Some(calls) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .and_then(|c| c.get("delta"))
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        calls
            .iter()
            .map(|call| {
                let function = call.get("function");
                ToolCallFragment {
                    index: call
                        .get("index")
                        .and_then(Value::as_u64)
                        .and_then(|i| u32::try_from(i).ok())
                        .unwrap_or(0),
                    id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: function
                        .and_then(|f| f.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    arguments: function
                        .and_then(|f| f.get("arguments"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                }
            })
            .collect()
    }
}

/// One event of a streamed call: deltas, then exactly one `Done` (or an error).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// What the committed attempt's accumulator merged from one frame.
    Delta(StreamDelta),
    /// The final response, identical to what `chat` returns for the same wire bytes.
    Done(Box<LlmResponse>),
}

/// Which attempt committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedLeg {
    /// The committed attempt's `call_id`.
    pub call_id: String,
    /// `true` when the committed attempt is a hedge leg.
    pub hedge_leg: bool,
}

#[derive(Default)]
struct GateState {
    committed: Option<CommittedLeg>,
    /// Frames of attempts that have not committed (yet), by attempt `call_id`.
    pending: HashMap<String, Vec<StreamDelta>>,
    /// What was forwarded after the commit (the partial output of a later failure).
    forwarded: PartialOutput,
}

/// The per-call commit point of a streamed call; see the module docs.
pub struct CommitGate {
    /// The bounded buffer's pushing end; its lock also guards the gate's state.
    tx: queue::Sender<StreamDelta, GateState>,
    committed: Notify,
    reasoning: bool,
}

/// The consumer's end of a [`CommitGate`]'s bounded buffer: the forwarded deltas, in order.
///
/// Dropping it closes the buffer: the gate's forwarding then fails at once (the caller stopped
/// listening) instead of waiting for room. Once the gate is dropped, the receiver drains what
/// is buffered and then reports the end.
#[derive(Debug)]
pub struct DeltaReceiver {
    rx: queue::Receiver<StreamDelta, GateState>,
}

impl DeltaReceiver {
    /// Takes the oldest buffered delta without waiting. Registers no waker: a consumer that
    /// polls the forwarding call itself is not woken once per delta.
    ///
    /// # Errors
    /// [`TryRecvError::Empty`] when nothing is buffered, [`TryRecvError::Disconnected`] when
    /// nothing is buffered and the gate is gone.
    pub fn try_recv(&mut self) -> Result<StreamDelta, TryRecvError> {
        self.rx.try_recv()
    }

    /// Takes the oldest buffered delta, or registers `cx`'s waker for the next one;
    /// `Ready(None)` once nothing is buffered and the gate is gone.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamDelta>> {
        self.rx.poll_recv(cx)
    }

    /// Waits for the next delta; `None` once nothing is buffered and the gate is gone.
    /// Cancel-safe: a delta is taken only by the poll that returns it.
    pub async fn recv(&mut self) -> Option<StreamDelta> {
        std::future::poll_fn(|cx| self.rx.poll_recv(cx)).await
    }
}

/// What became of a committed frame under the lock.
enum Pushed {
    /// Handled (`true` = forwarded, `false` = the receiver is gone): nothing to wait for.
    Done(bool),
    /// The buffer is full: the frame waits for room.
    Full(StreamDelta),
}

/// What [`CommitGate::forward`] decided under the lock.
enum Decision {
    /// The committed attempt's next frame.
    Next(Pushed),
    /// The commit point was reached: the committing attempt's buffered frames and this one.
    Batch(Vec<StreamDelta>),
}

impl fmt::Debug for CommitGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitGate")
            .field("committed", &self.committed_leg())
            .field("reasoning", &self.reasoning)
            .finish_non_exhaustive()
    }
}

impl CommitGate {
    /// A gate forwarding into a bounded buffer of `capacity` deltas (at least 1), and the
    /// receiving end. `reasoning` = the caller opted in to reasoning deltas (they then count for
    /// the commit point too). Allocates the shared state only; the buffer's slots come with the
    /// first forwarded delta.
    pub fn new(capacity: usize, reasoning: bool) -> (Self, DeltaReceiver) {
        let (tx, rx) = queue::bounded(capacity, GateState::default());
        let gate = Self {
            tx,
            committed: Notify::new(),
            reasoning,
        };
        (gate, DeltaReceiver { rx })
    }

    /// `true` when reasoning fragments are forwarded (caller opt-in).
    pub fn forwards_reasoning(&self) -> bool {
        self.reasoning
    }

    /// The one lock of the gate's state and its buffer.
    fn lock(&self) -> queue::SendGuard<'_, StreamDelta, GateState> {
        self.tx.lock()
    }

    /// Records a committed frame as forwarded and queues it when there is room. An empty
    /// delta is only recorded: it carries nothing to show.
    fn push_locked(
        state: &mut queue::SendGuard<'_, StreamDelta, GateState>,
        delta: StreamDelta,
    ) -> Pushed {
        state.forwarded.content.push_str(&delta.content);
        state.forwarded.reasoning.push_str(&delta.reasoning);
        if delta.is_empty() {
            return Pushed::Done(true);
        }
        match state.try_push(delta) {
            Ok(()) => Pushed::Done(true),
            Err(TryPushError::Closed(_)) => Pushed::Done(false),
            Err(TryPushError::Full(delta)) => Pushed::Full(delta),
        }
    }

    /// Waits for room for a frame [`push_locked`](Self::push_locked) found the buffer full for.
    /// `false` when the receiver is gone (also while waiting): the caller stopped listening
    /// and the call is being dropped.
    async fn finish_push(&self, pushed: Pushed) -> bool {
        match pushed {
            Pushed::Done(forwarded) => forwarded,
            Pushed::Full(delta) => self.tx.send(delta).await.is_ok(),
        }
    }

    /// Forwards a committing attempt's frames in order (each recorded, then queued or waiting
    /// for room). `false` as soon as the receiver is gone.
    async fn push_all(&self, batch: Vec<StreamDelta>) -> bool {
        for delta in batch {
            let pushed = Self::push_locked(&mut self.lock(), delta);
            if !self.finish_push(pushed).await {
                return false;
            }
        }
        true
    }

    /// The committed attempt, if the call passed its commit point.
    pub fn committed_leg(&self) -> Option<CommittedLeg> {
        self.lock().committed.clone()
    }

    /// `true` once the call passed its commit point.
    pub fn is_committed(&self) -> bool {
        self.lock().committed.is_some()
    }

    /// Resolves once the call passed its commit point (immediately if it already has).
    pub async fn wait_committed(&self) {
        loop {
            let notified = self.committed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_committed() {
                return;
            }
            notified.await;
        }
    }

    /// What was forwarded to the caller so far.
    pub fn forwarded(&self) -> PartialOutput {
        self.lock().forwarded.clone()
    }

    /// Marks `error` as a post-commit failure with the forwarded output, when committed.
    pub fn mark(&self, error: GatewayError) -> GatewayError {
        match self.partial_if_committed() {
            Some(partial) if !error.is_committed() => error.into_committed(partial),
            _ => error,
        }
    }

    /// The call-level error of an attempt failure that ends a streamed call: `Committed` with
    /// the forwarded output once the commit point has passed, else
    /// [`GatewayError::from_attempt`].
    pub fn mark_attempt(&self, scope: &str, error: AttemptError) -> GatewayError {
        match self.partial_if_committed() {
            Some(partial) => GatewayError::committed(error, partial),
            None => GatewayError::from_attempt(scope, error),
        }
    }

    fn partial_if_committed(&self) -> Option<PartialOutput> {
        let state = self.lock();
        state.committed.as_ref().map(|_| state.forwarded.clone())
    }

    /// Hands one frame of attempt `call_id` to the gate. Before the commit point it is buffered
    /// (or commits, see the module docs); after it, it is forwarded when `call_id` is the
    /// committed attempt (awaiting room in the bounded buffer: back-pressure) and dropped
    /// otherwise. Returns `true` when the frame was forwarded.
    pub async fn forward(&self, call_id: &str, hedge_leg: bool, mut delta: StreamDelta) -> bool {
        if !self.reasoning {
            delta.reasoning.clear();
        }
        let next = {
            let mut state = self.lock();
            match &state.committed {
                // The committed attempt's next frame (every frame after the first): one lock,
                // no batch, no wait while there is room.
                Some(leg) if leg.call_id == call_id => {
                    Decision::Next(Self::push_locked(&mut state, delta))
                }
                Some(_) => return false,
                None if delta.commits() => {
                    state.committed = Some(CommittedLeg {
                        call_id: call_id.to_owned(),
                        hedge_leg,
                    });
                    let mut batch = state.pending.remove(call_id).unwrap_or_default();
                    state.pending.clear();
                    batch.push(delta);
                    self.committed.notify_waiters();
                    Decision::Batch(batch)
                }
                None => {
                    if !delta.is_empty() {
                        state
                            .pending
                            .entry(call_id.to_owned())
                            .or_default()
                            .push(delta);
                    }
                    return false;
                }
            }
        };
        match next {
            Decision::Next(pushed) => self.finish_push(pushed).await,
            Decision::Batch(batch) => self.push_all(batch).await,
        }
    }

    /// An attempt succeeded without reaching the commit point (e.g. a tool-call-only answer):
    /// it is the winner, so it commits now and its buffered frames are forwarded.
    pub async fn commit_on_success(&self, call_id: &str, hedge_leg: bool) {
        let batch = {
            let mut state = self.lock();
            if state.committed.is_some() {
                return;
            }
            state.committed = Some(CommittedLeg {
                call_id: call_id.to_owned(),
                hedge_leg,
            });
            let batch = state.pending.remove(call_id).unwrap_or_default();
            state.pending.clear();
            self.committed.notify_waiters();
            batch
        };
        // Buffered frames are never empty (`forward` keeps no empty one before the commit), so
        // each is queued as before.
        self.push_all(batch).await;
    }

    /// Forgets the buffered frames of an attempt that ended without committing.
    pub fn attempt_ended(&self, call_id: &str) {
        let mut state = self.lock();
        if state
            .committed
            .as_ref()
            .is_none_or(|l| l.call_id != call_id)
        {
            state.pending.remove(call_id);
        }
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
    use std::pin::pin;
    use std::task::Waker;

    fn tool_fragment(arguments: &str) -> StreamDelta {
        StreamDelta {
            tool_calls: vec![ToolCallFragment {
                arguments: arguments.to_owned(),
                ..ToolCallFragment::default()
            }],
            ..StreamDelta::default()
        }
    }

    fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn contents(rx: &mut DeltaReceiver) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|d| {
                if d.content.is_empty() {
                    d.tool_calls[0].arguments.clone()
                } else {
                    d.content
                }
            })
            .collect()
    }

    #[test]
    fn d32_the_commit_batch_waits_for_room_in_order() {
        let (gate, mut rx) = CommitGate::new(1, false);
        // Two tool-call fragments buffer before the commit point; the content token commits.
        for args in ["a", "b"] {
            let mut f = pin!(gate.forward("c1", false, tool_fragment(args)));
            assert_eq!(
                poll_once(f.as_mut()),
                Poll::Ready(false),
                "buffered, not forwarded"
            );
        }
        let mut commit = pin!(gate.forward("c1", false, StreamDelta::content("x")));
        assert!(
            poll_once(commit.as_mut()).is_pending(),
            "room for one of three"
        );
        assert!(gate.is_committed());
        assert_eq!(contents(&mut rx), ["a"]);
        assert!(poll_once(commit.as_mut()).is_pending());
        assert_eq!(contents(&mut rx), ["b"]);
        assert_eq!(poll_once(commit.as_mut()), Poll::Ready(true));
        assert_eq!(contents(&mut rx), ["x"]);
        assert_eq!(gate.forwarded().content, "x");
    }

    #[test]
    fn a_committed_frame_waits_only_when_the_buffer_is_full() {
        let (gate, mut rx) = CommitGate::new(2, false);
        for text in ["a", "b"] {
            let mut f = pin!(gate.forward("c1", false, StreamDelta::content(text)));
            assert_eq!(poll_once(f.as_mut()), Poll::Ready(true), "room: no wait");
        }
        let mut third = pin!(gate.forward("c1", false, StreamDelta::content("c")));
        assert!(poll_once(third.as_mut()).is_pending());
        let mut other = pin!(gate.forward("c2", true, StreamDelta::content("z")));
        assert_eq!(
            poll_once(other.as_mut()),
            Poll::Ready(false),
            "another attempt's frame is dropped, full buffer or not"
        );
        assert_eq!(contents(&mut rx), ["a", "b"]);
        assert_eq!(poll_once(third.as_mut()), Poll::Ready(true));
        assert_eq!(contents(&mut rx), ["c"]);
        assert_eq!(gate.forwarded().content, "abc");
    }

    #[test]
    fn d32_every_forwarding_path_fails_fast_once_the_receiver_is_gone() {
        // The committed attempt's next frame, while waiting for room and after.
        let (gate, rx) = CommitGate::new(1, false);
        let mut first = pin!(gate.forward("c1", false, StreamDelta::content("a")));
        assert_eq!(poll_once(first.as_mut()), Poll::Ready(true));
        let mut waiting = pin!(gate.forward("c1", false, StreamDelta::content("b")));
        assert!(poll_once(waiting.as_mut()).is_pending());
        drop(rx);
        assert_eq!(poll_once(waiting.as_mut()), Poll::Ready(false));
        let mut late = pin!(gate.forward("c1", false, StreamDelta::content("c")));
        assert_eq!(poll_once(late.as_mut()), Poll::Ready(false));

        // The commit point's batch.
        let (gate, rx) = CommitGate::new(1, false);
        let mut buffered = pin!(gate.forward("c1", false, tool_fragment("a")));
        assert_eq!(poll_once(buffered.as_mut()), Poll::Ready(false));
        drop(rx);
        let mut commit = pin!(gate.forward("c1", false, StreamDelta::content("x")));
        assert_eq!(poll_once(commit.as_mut()), Poll::Ready(false));

        // A success without a commit point, its buffered frames filling the buffer.
        let (gate, rx) = CommitGate::new(1, false);
        for args in ["a", "b", "c"] {
            let mut f = pin!(gate.forward("c1", false, tool_fragment(args)));
            assert_eq!(poll_once(f.as_mut()), Poll::Ready(false));
        }
        let mut success = pin!(gate.commit_on_success("c1", false));
        assert!(
            poll_once(success.as_mut()).is_pending(),
            "room for one of three"
        );
        drop(rx);
        assert_eq!(poll_once(success.as_mut()), Poll::Ready(()));
        assert_eq!(
            gate.forwarded().content,
            "",
            "tool fragments carry no content"
        );
    }

    #[test]
    fn the_receiver_drains_then_ends_once_the_gate_is_gone() {
        let (gate, mut rx) = CommitGate::new(4, false);
        {
            let mut f = pin!(gate.forward("c1", false, StreamDelta::content("a")));
            assert_eq!(poll_once(f.as_mut()), Poll::Ready(true));
        }
        drop(gate);
        assert_eq!(rx.try_recv().map(|d| d.content), Ok("a".to_owned()));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    }

    /// The sizes issue 24 is about (printed with `--nocapture`): the per-call state is the gate,
    /// its shared queue state, and `capacity` slots of `StreamDelta` at most, allocated as the
    /// deltas come.
    #[test]
    fn sizes() {
        println!(
            "StreamDelta {} B, CommitGate {} B, DeltaReceiver {} B, first allocation {} slots = {} B",
            std::mem::size_of::<StreamDelta>(),
            std::mem::size_of::<CommitGate>(),
            std::mem::size_of::<DeltaReceiver>(),
            queue::FIRST_ALLOCATION,
            queue::FIRST_ALLOCATION * std::mem::size_of::<StreamDelta>(),
        );
        assert_eq!(
            std::mem::size_of::<DeltaReceiver>(),
            std::mem::size_of::<usize>()
        );
    }
}
