//! Incremental SSE framing: the bytes of a 200 `text/event-stream` body become [`SseEvent`]s.
//!
//! Owns 40 §3 together with 05 R-26 and README D18: BOM stripping, line splitting on
//! CR / LF / CRLF (also across reads), per-line UTF-8 decoding, the WHATWG field rules with the
//! spec's tolerances, event dispatch and interpretation (`[DONE]`, JSON, split recovery,
//! keep-alives, error events), the end-of-body flush, the `max_frame_bytes` cap and the
//! `Unrecognized` excerpt budget.
//!
//! Why a hand-written framer: the spec's tolerances (D18 `error` fields, R-26 raw JSON lines, the
//! split recovery, the S-28 flush, the S-17 cap) are not what any general SSE crate does, and
//! the framer must never panic and never buffer more than the cap for any byte sequence.
//!
//! The framer is sans-IO: the transport pushes each read into [`SseFramer::push`] and calls
//! [`SseFramer::finish`] at a clean end of body; it maps [`SseEvent`] 1:1 onto the port's
//! `WireEvent` and adds `ReadError` itself when the body breaks (the framer never sees that).
//!
//! Memory: a complete line that lies inside one read is processed in place; only a line cut by a
//! read boundary is copied, into a line buffer capped at `max_frame_bytes`, and an event's data
//! buffer is capped at `max_frame_bytes` too. Nothing else grows with the stream.
//!
//! Files: `event` (the facts yielded), `framer` (the state machine over bytes and lines),
//! `recover` (split recovery and excerpts).

mod event;
mod framer;
mod recover;

pub use event::{SseEvent, SseKeepAlive, SseNotice};
pub use framer::{DEFAULT_MAX_FRAME_BYTES, SseFramer, UNRECOGNIZED_EXCERPT_BUDGET_BYTES};

#[cfg(test)]
mod tests;
