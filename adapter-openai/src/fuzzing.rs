//! Entry points for the long-running wire fuzz harness (`examples/fuzz_wire.rs`, feature
//! `fuzzing`): the chunk reader (the streamed-200 event stream over a body split into reads) and
//! the non-stream body reader (the capped whole-body read and its one-event interpretation),
//! driven over in-memory reads without sockets or a runtime. Not a stable API.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_core::Stream;
use gateway_ports::ports::transport::WireEvent;

use crate::events::{BodyStream, SseEventStream, json_body_events, read_capped};

/// Upper bound on polls of one in-memory future; in-memory reads never wait, so reaching it is a
/// liveness bug the harness reports.
const MAX_POLLS: usize = 1 << 24;

fn body(reads: Vec<Vec<u8>>) -> BodyStream {
    Box::pin(futures_util::stream::iter(
        reads
            .into_iter()
            .map(|r| Ok::<Bytes, reqwest::Error>(Bytes::from(r))),
    ))
}

/// Polls `future` with a no-op waker until it is ready; `None` if it never became ready within
/// the poll bound (in-memory bodies are always ready, so that is a bug).
fn drive<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..MAX_POLLS {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return Some(out);
        }
    }
    None
}

/// The events the streamed-200 reader yields for a body delivered as `reads`, framed with
/// `max_frame_bytes` and capped at `max_response_bytes` body bytes. `None`: the stream stalled
/// (a liveness bug).
pub fn stream_events(
    reads: Vec<Vec<u8>>,
    max_frame_bytes: usize,
    max_response_bytes: u64,
) -> Option<Vec<WireEvent>> {
    let mut stream = SseEventStream::new(body(reads), max_frame_bytes, max_response_bytes);
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    let mut polls = 0usize;
    loop {
        polls += 1;
        if polls > MAX_POLLS {
            return None;
        }
        match std::pin::Pin::new(&mut stream).poll_next(&mut cx) {
            Poll::Ready(Some(event)) => out.push(event),
            Poll::Ready(None) => return Some(out),
            Poll::Pending => {}
        }
    }
}

/// The events of a streamed request answered by a JSON 200 body delivered as `reads`, read whole
/// with the cap `limit`. `None`: the read stalled.
pub fn json_body_read(reads: Vec<Vec<u8>>, limit: usize) -> Option<Vec<WireEvent>> {
    drive(async move { json_body_events(read_capped(body(reads), limit).await) })
}

/// The whole-body read of a non-stream 200 (`Ok(bytes)` or `Err(limit)` when over the cap).
/// `None`: the read stalled.
pub fn whole_body_read(reads: Vec<Vec<u8>>, limit: usize) -> Option<Result<Bytes, usize>> {
    drive(async move {
        read_capped(body(reads), limit).await.map_err(|e| match e {
            crate::events::BodyReadError::TooLarge { limit } => limit,
            crate::events::BodyReadError::Broken(_) => usize::MAX,
        })
    })
}
