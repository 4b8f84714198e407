//! `ScriptedWire`: the tier-1 in-memory [`ChatTransport`] (05 R-30) that executes the
//! simulator's own [`Plan`]s on `tokio::time`, so one `upstream-sim` script drives both test
//! tiers.
//!
//! Each `send` asks the [`ScriptRunner`] for the next plan and plays it on the runtime clock
//! (a paused runtime makes every delay exact):
//! - `head_delay_ms`, then `head: hang` never answers (the future stays pending until dropped);
//! - status ≠ 200 → every write after its `delay_ms`, then `WireFailure::Http` with the
//!   lower-cased headers and the body decoded as UTF-8 with replacement (`end: reset` →
//!   `WireFailure::Network(read)`, `end: hang` → pending);
//! - `stream = false` → every write after its delay, then `WireResponse::Body`
//!   (`end: reset` → `WireFailure::ReadError`, `end: hang` → pending);
//! - `stream = true` → `WireResponse::Events` at once; each write is released after its delay
//!   and split into [`WireEvent`]s by a **minimal** SSE reading: LF or CRLF lines, `:` comments
//!   → `KeepAlive(Comment)`, `data:` lines joined with LF and dispatched on a blank line
//!   (empty → `KeepAlive(EmptyData)`, `[DONE]` → `Done`, JSON → `Chunk`, else
//!   `MalformedFrame`), `event: error` / an `error:` field / a `{…"error"…}` line →
//!   `ErrorEvent`, other lines → `Unrecognized`; after `Done` nothing more is read (40 S-9);
//!   `end: eof` flushes a pending event then yields `End`, `end: reset` yields
//!   `ReadError(read)`, `end: hang` never ends;
//! - `stream = true` answered by a JSON content type (05 R-27): the whole body is read, then
//!   exactly one event (`Chunk`, `KeepAlive(EmptyData)` when blank, `MalformedFrame` when not
//!   JSON) and `End` — the shape `adapter-openai` delivers.
//!
//! Byte-exact framing (CR-only line ends, BOM, split UTF-8, split-data-line recovery, frame
//! caps) is tier 2's job and lives in `adapter-openai`; tier 1 is about timing.
//!
//! Dropping the event stream releases it at once ([`ScriptedWire::open_streams`] observes
//! that, 40 S-10). [`ScriptedWire::push_failure`] injects a `send` failure (e.g. a network
//! fault) that no script can express.

use std::collections::VecDeque;
use std::fmt;
use std::future::pending;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use gateway_ports::{
    ChatTransport, ChunkJson, KeepAliveKind, NetworkFault, NetworkFaultKind, WireBody, WireEvent,
    WireFailure, WireRequest, WireResponse, is_json_content_type,
};
use serde_json::Value;
use tokio::sync::Notify;
use upstream_sim::script::{
    End, Head, Plan, PlannedWrite, RequestFacts, Script, ScriptError, ScriptRunner,
};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The tier-1 scripted chat transport (05 R-30). See the module docs for how a plan is played.
pub struct ScriptedWire {
    runner: Mutex<ScriptRunner>,
    failures: Mutex<VecDeque<WireFailure>>,
    requests: Mutex<Vec<WireRequest>>,
    arrived: Notify,
    open_streams: Arc<AtomicUsize>,
}

impl fmt::Debug for ScriptedWire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedWire")
            .field("requests", &lock(&self.requests).len())
            .field("open_streams", &self.open_streams())
            .finish_non_exhaustive()
    }
}

impl ScriptedWire {
    /// A wire playing `script`. Errors: the script's own validation ([`ScriptError`]).
    pub fn new(script: Script) -> Result<Self, ScriptError> {
        Ok(Self {
            runner: Mutex::new(ScriptRunner::new(script)?),
            failures: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            open_streams: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// A wire from a script in its JSON form (spec 15). Errors: parse or validation.
    pub fn from_json(script_json: &str) -> Result<Self, ScriptError> {
        Self::new(Script::from_json(script_json)?)
    }

    /// Makes the next `send` fail with `failure` before the script is consulted (queued, in
    /// order; the script's request counter does not advance).
    pub fn push_failure(&self, failure: WireFailure) {
        lock(&self.failures).push_back(failure);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<WireRequest> {
        lock(&self.requests).clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        lock(&self.requests).len()
    }

    /// Completes once at least `n` requests were received (event-driven, no polling).
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.request_count() >= n {
                return;
            }
            notified.await;
        }
    }

    /// Event streams handed out and not yet dropped (40 S-10: a dropped stream is released).
    pub fn open_streams(&self) -> usize {
        self.open_streams.load(Ordering::SeqCst)
    }

    fn plan_for(&self, request: &WireRequest) -> Plan {
        let path = format!("/v1{}", request.endpoint.path());
        let facts = RequestFacts::from_parts("POST", &path, Some(request.body.value()));
        lock(&self.runner).next_plan(&facts)
    }
}

#[async_trait]
impl ChatTransport for ScriptedWire {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        let stream = request.stream;
        let injected = lock(&self.failures).pop_front();
        let plan = if injected.is_none() {
            Some(self.plan_for(&request))
        } else {
            None
        };
        lock(&self.requests).push(request);
        self.arrived.notify_waiters();
        if let Some(failure) = injected {
            return Err(failure);
        }
        let Some(plan) = plan else {
            return pending().await;
        };
        sleep_ms(plan.head_delay_ms).await;
        if plan.head == Head::Hang {
            return pending().await;
        }
        let headers: Vec<(String, String)> = plan
            .wire_headers()
            .into_iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v))
            .collect();
        let content_type = headers
            .iter()
            .find(|(n, _)| n == "content-type")
            .map(|(_, v)| v.clone());
        if plan.status != 200 {
            let body = read_all(&plan.writes).await;
            return match plan.end {
                End::Eof => Err(WireFailure::Http {
                    status: plan.status,
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                }),
                End::Reset => Err(WireFailure::Network(reset_fault())),
                End::Hang => pending().await,
            };
        }
        if !stream {
            let body = read_all(&plan.writes).await;
            return match plan.end {
                End::Eof => Ok(WireResponse::Body(WireBody {
                    headers,
                    bytes: Bytes::from(body),
                })),
                End::Reset => Err(WireFailure::ReadError(reset_fault())),
                End::Hang => pending().await,
            };
        }
        // README D20, as the adapter does: the first non-whitespace byte decides the framing,
        // and the reported content type is the effective one.
        let declared_json = content_type.as_deref().is_some_and(is_json_content_type);
        let first = first_significant_byte(&plan.writes);
        let (json_body, content_type) = match first {
            Some(b'{' | b'[') if !declared_json => (true, Some("application/json".to_owned())),
            Some(b) if declared_json && b != b'{' && b != b'[' => {
                (false, Some("text/event-stream".to_owned()))
            }
            _ => (declared_json, content_type),
        };
        let state = StreamState {
            writes: plan.writes.into(),
            end: plan.end,
            json_body,
            reader: MiniSse::default(),
            pending: VecDeque::new(),
            finished: false,
            _open: OpenGuard::new(Arc::clone(&self.open_streams)),
        };
        let events = futures_util::stream::unfold(state, next_event);
        Ok(WireResponse::Events {
            headers,
            content_type,
            events: Box::pin(events),
        })
    }
}

/// The first byte of the planned body that is not whitespace (space, tab, CR, LF), after one
/// leading UTF-8 BOM (README D20).
fn first_significant_byte(writes: &[PlannedWrite]) -> Option<u8> {
    let mut bytes = writes.iter().flat_map(|w| w.bytes.iter().copied());
    let mut head: Vec<u8> = Vec::new();
    for b in bytes.by_ref() {
        head.push(b);
        if head.len() == 3 || !b"\xEF\xBB\xBF".starts_with(&head) {
            break;
        }
    }
    let skip = if head.as_slice() == b"\xEF\xBB\xBF" {
        3
    } else {
        0
    };
    head.into_iter()
        .skip(skip)
        .chain(bytes)
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

async fn read_all(writes: &[PlannedWrite]) -> Vec<u8> {
    let mut body = Vec::new();
    for w in writes {
        sleep_ms(w.delay_ms).await;
        body.extend_from_slice(&w.bytes);
    }
    body
}

fn reset_fault() -> NetworkFault {
    NetworkFault::new(
        NetworkFaultKind::Read,
        "connection reset by peer (scripted)",
    )
}

/// Counts a live event stream; decrements on drop.
struct OpenGuard(Arc<AtomicUsize>);

impl OpenGuard {
    fn new(counter: Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

struct StreamState {
    writes: VecDeque<PlannedWrite>,
    end: End,
    json_body: bool,
    reader: MiniSse,
    pending: VecDeque<WireEvent>,
    finished: bool,
    _open: OpenGuard,
}

async fn next_event(mut state: StreamState) -> Option<(WireEvent, StreamState)> {
    loop {
        if let Some(event) = state.pending.pop_front() {
            if event.is_terminal() {
                state.pending.clear();
                state.finished = true;
            }
            return Some((event, state));
        }
        if state.finished {
            return None;
        }
        if state.json_body {
            let body = read_all(&Vec::from(std::mem::take(&mut state.writes))).await;
            match state.end {
                End::Eof => {
                    state.pending.push_back(WireEvent::from_json_body(&body));
                    state.pending.push_back(WireEvent::End);
                }
                End::Reset => state.pending.push_back(WireEvent::ReadError(reset_fault())),
                End::Hang => return pending().await,
            }
            continue;
        }
        if let Some(write) = state.writes.pop_front() {
            sleep_ms(write.delay_ms).await;
            state.reader.push(&write.bytes, &mut state.pending);
            continue;
        }
        match state.end {
            End::Eof => {
                state.reader.finish(&mut state.pending);
                state.pending.push_back(WireEvent::End);
            }
            End::Reset => state.pending.push_back(WireEvent::ReadError(reset_fault())),
            End::Hang => return pending().await,
        }
    }
}

/// The minimal SSE reading of tier 1 (see the module docs).
#[derive(Default)]
struct MiniSse {
    buf: Vec<u8>,
    data: Option<String>,
    event: String,
}

impl MiniSse {
    fn push(&mut self, bytes: &[u8], out: &mut VecDeque<WireEvent>) {
        self.buf.extend_from_slice(bytes);
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=pos).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), out);
        }
    }

    fn finish(&mut self, out: &mut VecDeque<WireEvent>) {
        if !self.buf.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            self.line(line.trim_end_matches('\r'), out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &str, out: &mut VecDeque<WireEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            out.push_back(WireEvent::KeepAlive(KeepAliveKind::Comment));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            "event" => value.clone_into(&mut self.event),
            "id" | "retry" => {}
            "error" => out.push_back(WireEvent::ErrorEvent {
                data: value.to_owned(),
            }),
            _ if line.trim_start().starts_with('{')
                && serde_json::from_str::<Value>(line).is_ok_and(|v| v.get("error").is_some()) =>
            {
                out.push_back(WireEvent::ErrorEvent {
                    data: line.to_owned(),
                });
            }
            _ => out.push_back(WireEvent::Unrecognized {
                excerpt: line.to_owned(),
            }),
        }
    }

    fn dispatch(&mut self, out: &mut VecDeque<WireEvent>) {
        let event = std::mem::take(&mut self.event);
        let Some(data) = self.data.take() else {
            return;
        };
        let trimmed = data.trim();
        let wire = if event == "error" {
            WireEvent::ErrorEvent { data }
        } else if trimmed.is_empty() {
            WireEvent::KeepAlive(KeepAliveKind::EmptyData)
        } else if trimmed == "[DONE]" {
            WireEvent::Done
        } else {
            match ChunkJson::parse(&data) {
                Ok(chunk) => WireEvent::Chunk(chunk),
                Err(_) => WireEvent::MalformedFrame { len: data.len() },
            }
        };
        out.push_back(wire);
    }
}
