//! The framing facts the framer yields ([`SseEvent`]) and their keep-alive and notice
//! payloads.

use gateway_ports::ports::transport::ChunkJson;

/// One framing fact, in wire order. Maps 1:1 onto the port's `WireEvent`, except
/// `ReadError`, which only the transport can observe.
///
/// Terminal events ([`SseEvent::is_terminal`]): `Done`, `FrameTooLarge`, `End`; after one of them
/// the framer yields nothing more.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SseEvent {
    /// The data of one dispatched event, parsed as one JSON text of any type. The framer
    /// never looks inside it.
    Chunk(ChunkJson),
    /// The `[DONE]` sentinel. Terminal: bytes after it are never parsed.
    Done,
    /// A comment line or an event whose data is empty / whitespace only. Never
    /// progress.
    KeepAlive(SseKeepAlive),
    /// An event of type `error`, an SSE field line named `error`, or a non-SSE
    /// line that is a JSON object with a top-level `error` key, carried whole. `data` is
    /// the event data (or the line), decoded as UTF-8 with replacement.
    ErrorEvent {
        /// The event data, or the whole non-SSE line.
        data: String,
    },
    /// Dispatched data that is not JSON and was not recovered by S-26. Carries the data length in
    /// bytes only; the payload is never echoed.
    MalformedFrame {
        /// Length of the event data in bytes (as received, trailing LF removed).
        len: usize,
    },
    /// A framing notice; the recovered events follow it.
    Notice(SseNotice),
    /// A line with an unknown field name or no SSE syntax. `excerpt` is the line
    /// text (UTF-8 with replacement), cut so that all excerpts of a stream total at most
    /// [`UNRECOGNIZED_EXCERPT_BUDGET_BYTES`](super::UNRECOGNIZED_EXCERPT_BUDGET_BYTES); once the budget is spent no more are yielded.
    Unrecognized {
        /// The line text, possibly cut to the remaining budget; never empty.
        excerpt: String,
    },
    /// A line, or one event's data, exceeded `max_frame_bytes`. Terminal; the core turns
    /// it into `ResultInvalid(response_too_large)`.
    FrameTooLarge {
        /// The configured `max_frame_bytes`, in bytes.
        limit: usize,
    },
    /// Clean end of body, after the S-28 flush. Terminal.
    End,
}

impl SseEvent {
    /// True for `Done`, `FrameTooLarge` and `End`: nothing follows them.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            SseEvent::Done | SseEvent::FrameTooLarge { .. } | SseEvent::End
        )
    }
}

/// Which keep-alive a [`SseEvent::KeepAlive`] was (the port's `KeepAliveKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SseKeepAlive {
    /// A comment line, `:` with or without a following space.
    Comment,
    /// A dispatched event whose data is empty or ASCII whitespace only, e.g. `data:`.
    EmptyData,
}

/// A framing notice (the port's `WireNotice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SseNotice {
    /// One event held several JSON chunks on separate `data` lines; they follow one by one.
    SplitDataLines,
}
