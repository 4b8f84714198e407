//! The event stream of a streamed 200: body reads → [`SseFramer`] → `WireEvent`s, one read at a
//! time, plus the un-framed variant for a streamed request answered with a JSON body.
//!
//! Owns 40 S-8…S-10, S-29 and CT-CHAT-05/06/09 on the I/O side (the framing rules themselves are
//! `sse.rs`), 05 R-27 (JSON answer to a streamed request) and R-28 (connection reuse after
//! `[DONE]`), and the per-attempt byte cap of R-29.
//!
//! Invariants: events are yielded as soon as each read is framed (never buffered to the end of
//! the body); exactly one terminal event ends the stream and nothing follows it; the body is
//! dropped right after the terminal event (so a half-read connection is closed, never pooled);
//! dropping the stream drops the body, which closes the connection.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use gateway_ports::ports::transport::{KeepAliveKind, WireEvent, WireNotice};

use crate::fault::{Phase, network_fault};
use crate::sse::{SseEvent, SseFramer, SseKeepAlive, SseNotice};

/// A response body as a stream of reads.
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Maps one framer event onto the port's event (the 1:1 mapping of `sse.rs`).
pub(crate) fn to_wire(event: SseEvent) -> WireEvent {
    match event {
        SseEvent::Chunk(value) => WireEvent::Chunk(value),
        SseEvent::Done => WireEvent::Done,
        SseEvent::KeepAlive(SseKeepAlive::Comment) => WireEvent::KeepAlive(KeepAliveKind::Comment),
        SseEvent::KeepAlive(SseKeepAlive::EmptyData) => {
            WireEvent::KeepAlive(KeepAliveKind::EmptyData)
        }
        SseEvent::ErrorEvent { data } => WireEvent::ErrorEvent { data },
        SseEvent::MalformedFrame { len } => WireEvent::MalformedFrame { len },
        SseEvent::Notice(SseNotice::SplitDataLines) => {
            WireEvent::Notice(WireNotice::SplitDataLines)
        }
        SseEvent::Unrecognized { excerpt } => WireEvent::Unrecognized { excerpt },
        SseEvent::FrameTooLarge { limit } => WireEvent::FrameTooLarge { limit },
        SseEvent::End => WireEvent::End,
    }
}

/// `WireEvent`s of a 200 `text/event-stream` (or any non-JSON) body, framed incrementally.
pub(crate) struct SseEventStream {
    /// `None` once a terminal event was queued: the body is gone (closed or pooled).
    body: Option<BodyStream>,
    framer: SseFramer,
    /// Events framed from the last read, not yet yielded.
    queue: VecDeque<WireEvent>,
    /// Scratch for the framer's output.
    scratch: Vec<SseEvent>,
    /// Body bytes read so far, against `max_response_bytes`.
    read_bytes: u64,
    max_response_bytes: u64,
    /// A terminal event was queued; after the queue drains the stream ends.
    terminated: bool,
    /// the one scheduler yield after `Done` was taken.
    yielded_after_done: bool,
}

impl fmt::Debug for SseEventStream {
    // Never echoes payloads (CT-CHAT-08): counts only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseEventStream")
            .field("body_open", &self.body.is_some())
            .field("queued", &self.queue.len())
            .field("read_bytes", &self.read_bytes)
            .field("terminated", &self.terminated)
            .finish_non_exhaustive()
    }
}

impl SseEventStream {
    /// A stream over `body`, framing with `max_frame_bytes` and stopping at
    /// `max_response_bytes` body bytes in total.
    pub(crate) fn new(body: BodyStream, max_frame_bytes: usize, max_response_bytes: u64) -> Self {
        Self {
            body: Some(body),
            framer: SseFramer::new(max_frame_bytes),
            queue: VecDeque::new(),
            scratch: Vec::new(),
            read_bytes: 0,
            max_response_bytes,
            terminated: false,
            yielded_after_done: false,
        }
    }

    /// Moves the framer's output to the queue, stopping at the first terminal event.
    fn drain_scratch(&mut self) {
        for event in self.scratch.drain(..) {
            if self.terminated {
                break;
            }
            let event = to_wire(event);
            self.terminated = event.is_terminal();
            self.queue.push_back(event);
        }
    }

    /// Queues a terminal event the framer did not produce (`ReadError`, the R-29 cap).
    fn terminate(&mut self, event: WireEvent) {
        self.terminated = true;
        self.body = None;
        self.queue.push_back(event);
    }

    /// after `Done`, poll the body without waiting: `Some(true)` it has ended (hyper
    /// returns the connection to the pool), `Some(false)` more bytes came (dropping the body
    /// closes the connection; nothing read here is parsed), `None` nothing is known yet.
    fn poll_end_after_done(&mut self, cx: &mut Context<'_>) -> Option<bool> {
        let body = self.body.as_mut()?;
        match body.as_mut().poll_next(cx) {
            Poll::Ready(None) => Some(true),
            Poll::Ready(Some(_)) => Some(false),
            Poll::Pending => None,
        }
    }
}

impl Stream for SseEventStream {
    type Item = WireEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WireEvent>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.queue.pop_front() {
                if matches!(event, WireEvent::Done) && this.body.is_some() {
                    // hyper's connection task delivers the end of the body only after it
                    // ran once more, so a body that has ended often still reads `Pending` here:
                    // then the stream yields to the scheduler exactly once (a self-wake, like
                    // `tokio::task::yield_now`) and polls a second time. It never waits on I/O
                    // or a timer: whatever the second poll says, `Done` is yielded.
                    match this.poll_end_after_done(cx) {
                        None if !this.yielded_after_done => {
                            this.yielded_after_done = true;
                            this.queue.push_front(event);
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                        ended => tracing::trace!(?ended, "body polled after [DONE]"),
                    }
                }
                if event.is_terminal() {
                    this.body = None;
                    this.queue.clear();
                }
                return Poll::Ready(Some(event));
            }
            if this.terminated {
                return Poll::Ready(None);
            }
            let Some(body) = this.body.as_mut() else {
                return Poll::Ready(None);
            };
            match body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(bytes))) => {
                    this.read_bytes = this.read_bytes.saturating_add(bytes.len() as u64);
                    if this.read_bytes > this.max_response_bytes {
                        // the read that passes the per-attempt cap is not framed.
                        let limit = usize::try_from(this.max_response_bytes).unwrap_or(usize::MAX);
                        this.terminate(WireEvent::FrameTooLarge { limit });
                    } else {
                        this.framer.push(&bytes, &mut this.scratch);
                        this.drain_scratch();
                    }
                }
                Poll::Ready(Some(Err(err))) => {
                    // S-29: a broken body is ReadError, never End — even after finish and usage.
                    this.terminate(WireEvent::ReadError(network_fault(&err, Phase::Body)));
                }
                Poll::Ready(None) => {
                    this.framer.finish(&mut this.scratch);
                    this.drain_scratch();
                    if !this.terminated {
                        this.terminated = true;
                        this.queue.push_back(WireEvent::End);
                    }
                }
            }
        }
    }
}

/// Why reading a whole body stopped early.
#[derive(Debug)]
pub(crate) enum BodyReadError {
    /// More than `limit` bytes.
    TooLarge {
        /// The cap that was passed, in bytes.
        limit: usize,
    },
    /// The body broke.
    Broken(reqwest::Error),
}

/// Reads a whole body into memory, failing as soon as it passes `limit` bytes (the rest is
/// never read; dropping the response then closes the connection).
pub(crate) async fn read_capped(
    mut body: BodyStream,
    limit: usize,
) -> Result<Bytes, BodyReadError> {
    use futures_util::StreamExt as _;
    let mut first: Option<Bytes> = None;
    let mut buf: Vec<u8> = Vec::new();
    while let Some(next) = body.next().await {
        let bytes = next.map_err(BodyReadError::Broken)?;
        let held = first.as_ref().map_or(buf.len(), Bytes::len);
        if held.saturating_add(bytes.len()) > limit {
            return Err(BodyReadError::TooLarge { limit });
        }
        match first.take() {
            // Common case: the whole body in one read, no copy.
            None if buf.is_empty() => first = Some(bytes),
            Some(prev) => {
                buf.reserve(prev.len() + bytes.len());
                buf.extend_from_slice(&prev);
                buf.extend_from_slice(&bytes);
            }
            None => buf.extend_from_slice(&bytes),
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

/// The events of a streamed request answered by a 200 JSON body: the
/// body is not SSE-framed; it is read whole (capped) and delivered as the data of ONE event,
/// interpreted as S-23/S-25/S-26 would: one leading UTF-8 BOM removed, UTF-8 decoded with
/// replacement; empty or whitespace only → `KeepAlive(EmptyData)`; JSON → `Chunk(value)`;
/// anything else → `MalformedFrame { len }`; then `End`. A body over the cap →
/// `FrameTooLarge { limit }`; a broken body → `ReadError`. The core, seeing the JSON content
/// type, judges the `Chunk` as a non-stream body and maps the other two to
/// `empty_response` / `invalid_json`.
pub(crate) fn json_body_events(result: Result<Bytes, BodyReadError>) -> Vec<WireEvent> {
    match result {
        Err(BodyReadError::TooLarge { limit }) => vec![WireEvent::FrameTooLarge { limit }],
        Err(BodyReadError::Broken(err)) => {
            vec![WireEvent::ReadError(network_fault(&err, Phase::Body))]
        }
        Ok(bytes) => vec![WireEvent::from_json_body(&bytes), WireEvent::End],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;
    use gateway_ports::is_json_content_type;
    use serde_json::json;

    fn body(reads: Vec<reqwest::Result<Bytes>>) -> BodyStream {
        Box::pin(futures_util::stream::iter(reads))
    }

    async fn collect(s: SseEventStream) -> Vec<WireEvent> {
        s.collect().await
    }

    #[tokio::test]
    async fn ct_chat_06_one_terminal_and_nothing_after_done() {
        let reads = vec![
            Ok(Bytes::from_static(
                b"data: {\"a\":1}\n\ndata: [DONE]\n\ndata: {\"b\":2}\n\n",
            )),
            Ok(Bytes::from_static(b"data: {\"c\":3}\n\n")),
        ];
        let events = collect(SseEventStream::new(body(reads), 1024, u64::MAX)).await;
        assert_eq!(
            events,
            vec![WireEvent::Chunk(json!({"a": 1}).into()), WireEvent::Done]
        );
    }

    #[tokio::test]
    async fn s_28_clean_end_flushes_then_end() {
        let reads = vec![Ok(Bytes::from_static(b"data: {\"a\":1}"))];
        let events = collect(SseEventStream::new(body(reads), 1024, u64::MAX)).await;
        assert_eq!(
            events,
            vec![WireEvent::Chunk(json!({"a": 1}).into()), WireEvent::End]
        );
    }

    #[tokio::test]
    async fn r_29_max_response_bytes_is_a_terminal_frame_too_large() {
        let reads = vec![
            Ok(Bytes::from_static(b": ka\n\n")),
            Ok(Bytes::from_static(b": ka\n\n")),
            Ok(Bytes::from_static(b"data: {}\n\n")),
        ];
        let events = collect(SseEventStream::new(body(reads), 1024, 10)).await;
        assert_eq!(
            events,
            vec![
                WireEvent::KeepAlive(KeepAliveKind::Comment),
                WireEvent::FrameTooLarge { limit: 10 },
            ]
        );
    }

    #[test]
    fn r_27_json_content_types() {
        for ct in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/problem+json",
            " application/vnd.api+json ",
        ] {
            assert!(is_json_content_type(ct), "{ct}");
        }
        // Same test as the core's executor: any `+json` suffix, whatever the type.
        assert!(is_json_content_type("text/vnd.x+json"));
        for ct in [
            "text/event-stream",
            "text/json-ish",
            "text/html",
            "",
            "application/jsonl",
        ] {
            assert!(!is_json_content_type(ct), "{ct}");
        }
    }

    #[test]
    fn r_27_json_body_is_one_event() {
        assert_eq!(
            WireEvent::from_json_body(b"\xEF\xBB\xBF {\"id\":\"x\"}\n"),
            WireEvent::Chunk(json!({"id": "x"}).into())
        );
        assert_eq!(
            WireEvent::from_json_body(b" \r\n "),
            WireEvent::KeepAlive(KeepAliveKind::EmptyData)
        );
        assert_eq!(
            WireEvent::from_json_body(b""),
            WireEvent::KeepAlive(KeepAliveKind::EmptyData)
        );
        assert_eq!(
            WireEvent::from_json_body(b"{\"id\":"),
            WireEvent::MalformedFrame { len: 6 }
        );
    }

    #[tokio::test]
    async fn s_12_read_capped_limits() {
        let reads = vec![
            Ok(Bytes::from_static(b"abc")),
            Ok(Bytes::from_static(b"def")),
        ];
        assert_eq!(
            read_capped(body(reads), 6).await.unwrap(),
            Bytes::from_static(b"abcdef")
        );
        let reads = vec![
            Ok(Bytes::from_static(b"abc")),
            Ok(Bytes::from_static(b"defg")),
        ];
        assert!(matches!(
            read_capped(body(reads), 6).await,
            Err(BodyReadError::TooLarge { limit: 6 })
        ));
        assert_eq!(read_capped(body(vec![]), 6).await.unwrap(), Bytes::new());
    }
}
