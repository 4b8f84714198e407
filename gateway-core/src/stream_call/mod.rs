//! Streaming to the caller: the per-call [`CommitGate`] between the attempts'
//! accumulators and the caller's bounded event buffer.
//!
//! Every attempt of a streamed call hands each merged frame ([`StreamDelta`]) to the gate.
//! Before the commit point the gate only buffers, per attempt: retries, the first-token hedge
//! and failover stay invisible. The first attempt whose frame carries a content token (or a
//! reasoning token when the caller opted in, or a tool-call fragment) **commits**: its buffered
//! frames and every later one are forwarded, in order, into a bounded channel; frames of any
//! other attempt are dropped from then on. An attempt that succeeds without ever reaching the
//! commit point (a tool-call-only answer) commits at its success. The hedged round cancels the other leg as the loser
//! once a commit is observed, and the retry loop never retries a committed call: the committed
//! attempt's failure ends the call, marked with [`GatewayError::into_committed`].
//!
//! Back-pressure: [`CommitGate::forward`] awaits room in the bounded channel, so a slow consumer
//! slows the upstream read of the committed attempt. The executor excludes the time spent
//! waiting there from its watchdogs (the inter-token watchdog measures the upstream).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use gateway_ports::{AttemptError, GatewayError, LlmResponse, PartialOutput};
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

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
    state: Mutex<GateState>,
    committed: Notify,
    tx: mpsc::Sender<StreamDelta>,
    reasoning: bool,
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
    /// A gate forwarding into a bounded channel of `capacity` deltas (at least 1), and the
    /// receiving end. `reasoning` = the caller opted in to reasoning deltas (they then count for
    /// the commit point too).
    pub fn new(capacity: usize, reasoning: bool) -> (Self, mpsc::Receiver<StreamDelta>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let gate = Self {
            state: Mutex::new(GateState::default()),
            committed: Notify::new(),
            tx,
            reasoning,
        };
        (gate, rx)
    }

    /// `true` when reasoning fragments are forwarded (caller opt-in).
    pub fn forwards_reasoning(&self) -> bool {
        self.reasoning
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        // A poisoned lock only means another holder panicked; the state stays usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        let batch = {
            let mut state = self.lock();
            match &state.committed {
                Some(leg) if leg.call_id == call_id => {
                    // The committed attempt's next frame (every frame after the first): one
                    // lock, no batch.
                    state.forwarded.content.push_str(&delta.content);
                    state.forwarded.reasoning.push_str(&delta.reasoning);
                    Ok(delta)
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
                    Err(batch)
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
        // `Ok`: the committed attempt's next frame; `Err`: the commit point's batch.
        let batch = match batch {
            Ok(delta) if delta.is_empty() => return true,
            Ok(delta) => return self.tx.send(delta).await.is_ok(),
            Err(batch) => batch,
        };
        for delta in batch {
            {
                let mut state = self.lock();
                state.forwarded.content.push_str(&delta.content);
                state.forwarded.reasoning.push_str(&delta.reasoning);
            }
            if delta.is_empty() {
                continue;
            }
            // The receiver lives as long as the call; a closed channel only means the caller
            // stopped listening, and the call is being dropped.
            if self.tx.send(delta).await.is_err() {
                return false;
            }
        }
        true
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
        for delta in batch {
            {
                let mut state = self.lock();
                state.forwarded.content.push_str(&delta.content);
                state.forwarded.reasoning.push_str(&delta.reasoning);
            }
            if self.tx.send(delta).await.is_err() {
                return;
            }
        }
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
