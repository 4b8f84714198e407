//! The sans-IO framer ([`SseFramer`]): BOM stripping, line splitting across reads, the field
//! rules, event dispatch and interpretation, the end-of-body flush, the frame cap and the
//! excerpt budget.

use super::event::{SseEvent, SseKeepAlive, SseNotice};
use super::recover::{Piece, excerpt, split_recovery};

use std::fmt;

use gateway_ports::ports::ChunkReader;
use gateway_ports::ports::transport::lossy_utf8;
use serde_json::Value;

/// Default cap on one SSE line and on one event's data, in bytes: 16 MiB = 16 777 216.
/// Implements 40 §0 `max_frame_bytes`, S-17; 10 §8.1.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Total bytes of `Unrecognized` excerpt text reported per stream: 4 096. Excess is dropped
/// silently. Implements 40 S-30.
pub const UNRECOGNIZED_EXCERPT_BUDGET_BYTES: usize = 4096;

/// The UTF-8 byte-order mark, stripped once at the start of the body.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// A line / data buffer whose capacity grew beyond this is released after use, so one large event
/// does not pin its allocation for the rest of the stream.
const RETAINED_BUFFER_BYTES: usize = 64 * 1024;

/// BOM detection at the very start of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BomState {
    /// Still at the start; this many bytes of the BOM have been seen (0..=2) and held back.
    Checking(usize),
    /// The BOM was stripped, or the body did not start with one.
    Resolved,
}

/// Incremental SSE framer for one stream (one attempt; state is never shared).
///
/// Feed every read to [`push`](Self::push) in order and call [`finish`](Self::finish) at a clean
/// end of body. Events are appended to `out` as soon as each is complete: a dispatched
/// event at its blank line or at the end-of-body flush; a comment, an `Unrecognized`
/// line or a non-SSE error line at its own line end. Splitting the same bytes into different reads
/// never changes the events. No input panics.
///
/// Implements 40 S-14…S-31, 05 R-26, README D18.
pub struct SseFramer {
    /// `max_frame_bytes`.
    max_frame_bytes: usize,
    bom: BomState,
    /// The previous read ended with a CR that ended a line; an LF next is part of it.
    after_cr: bool,
    /// The unterminated line cut by a read boundary (never longer than `max_frame_bytes`).
    line: Vec<u8>,
    /// The event's data buffer: data values joined with LF, without the trailing LF.
    data: Vec<u8>,
    /// Number of `data` (and D18 `error`) lines in the pending event; 0 = nothing to dispatch.
    data_lines: usize,
    /// The event-type buffer is exactly `error` (`event`).
    event_is_error: bool,
    /// An SSE field line named `error` occurred in this block.
    error_field: bool,
    /// Remaining `Unrecognized` excerpt budget in bytes.
    excerpt_left: usize,
    /// A terminal event was yielded; everything afterwards is ignored.
    finished: bool,
    /// Checks each event's data as JSON, reusing the previous chunk's reading when only its
    /// content string changed (one stream's chunks repeat everything else byte for byte).
    reader: ChunkReader,
}

impl fmt::Debug for SseFramer {
    // Lengths only: buffered payload is never echoed (S-26, CT-CHAT-08).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseFramer")
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("bom", &self.bom)
            .field("after_cr", &self.after_cr)
            .field("line_len", &self.line.len())
            .field("data_len", &self.data.len())
            .field("data_lines", &self.data_lines)
            .field("event_is_error", &self.event_is_error)
            .field("error_field", &self.error_field)
            .field("excerpt_left", &self.excerpt_left)
            .field("finished", &self.finished)
            .finish()
    }
}

impl Default for SseFramer {
    /// A framer with [`DEFAULT_MAX_FRAME_BYTES`].
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl SseFramer {
    /// A framer for one stream whose lines and event data are capped at `max_frame_bytes` bytes
    /// (the default is [`DEFAULT_MAX_FRAME_BYTES`]). Any value is accepted; `0` makes every
    /// non-empty line too large.
    pub fn new(max_frame_bytes: usize) -> Self {
        Self {
            max_frame_bytes,
            bom: BomState::Checking(0),
            after_cr: false,
            line: Vec::new(),
            data: Vec::new(),
            data_lines: 0,
            event_is_error: false,
            error_field: false,
            excerpt_left: UNRECOGNIZED_EXCERPT_BUDGET_BYTES,
            finished: false,
            reader: ChunkReader::new(),
        }
    }

    /// The configured cap, in bytes.
    pub fn max_frame_bytes(&self) -> usize {
        self.max_frame_bytes
    }

    /// True once a terminal event (`Done`, `FrameTooLarge`, `End`) was yielded. The transport then
    /// stops reading (R-28 for what it does with the connection after `Done`).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Bytes currently held: the unterminated line plus the pending event's data. Each part is at
    /// most `max_frame_bytes`. Diagnostic only.
    pub fn buffered_bytes(&self) -> usize {
        self.line.len() + self.data.len()
    }

    /// Frames one read of the body, appending the completed events to `out` in wire order.
    /// Bytes pushed after a terminal event are ignored. Never fails, never panics.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        if self.finished {
            return;
        }
        let mut input = bytes;
        if let BomState::Checking(seen) = self.bom {
            // S-14: the BOM is removed exactly once, also when split across reads.
            let wanted = BOM.get(seen..).unwrap_or(&[]);
            let matched = input
                .iter()
                .zip(wanted)
                .take_while(|(got, want)| got == want)
                .count();
            if seen + matched == BOM.len() {
                self.bom = BomState::Resolved;
                input = input.get(matched..).unwrap_or(&[]);
            } else if matched == input.len() {
                // Still a BOM prefix (or an empty read): hold the bytes back.
                self.bom = BomState::Checking(seen + matched);
                return;
            } else {
                // Not a BOM after all: the held-back bytes are ordinary data.
                self.bom = BomState::Resolved;
                self.feed(BOM.get(..seen).unwrap_or(&[]), out);
            }
        }
        self.feed(input, out);
    }

    /// Clean end of body: a held-back partial BOM and a pending unterminated line are
    /// processed as if terminated, a pending event with data is dispatched as if a blank line
    /// followed, then `End` is yielded — unless the flush itself yielded a terminal event (for
    /// example `Done` from an unterminated `data: [DONE]`, case 001 B). Does nothing after a
    /// terminal event. Not to be called when the body broke: the transport yields `ReadError`.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.finished {
            return;
        }
        if let BomState::Checking(seen) = self.bom {
            self.bom = BomState::Resolved;
            self.feed(BOM.get(..seen).unwrap_or(&[]), out);
        }
        if !self.finished && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
        }
        if !self.finished {
            self.dispatch(out);
        }
        if !self.finished {
            out.push(SseEvent::End);
            self.finish_stream();
        }
    }

    /// Splits bytes into lines and processes each complete line.
    fn feed(&mut self, mut input: &[u8], out: &mut Vec<SseEvent>) {
        while !self.finished {
            if self.after_cr {
                if input.is_empty() {
                    // The CR ended the read: the LF (if any) is at the start of the next one.
                    return;
                }
                self.after_cr = false;
                if input.first() == Some(&b'\n') {
                    // S-15: CR + LF across reads is one terminator, never an extra empty line.
                    input = input.get(1..).unwrap_or(&[]);
                    continue;
                }
            }
            if input.is_empty() {
                return;
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', input) else {
                // A partial line: keep it, S-17 as soon as the cap is passed.
                if self.line.len().saturating_add(input.len()) > self.max_frame_bytes {
                    self.frame_too_large(out);
                } else {
                    self.line.extend_from_slice(input);
                }
                return;
            };
            let (segment, rest) = input.split_at(end);
            let terminator = rest.first().copied();
            input = rest.get(1..).unwrap_or(&[]);
            if self.line.is_empty() {
                if segment.len() > self.max_frame_bytes {
                    self.frame_too_large(out);
                    return;
                }
                // The whole line lies in this read: process it in place, no copy.
                self.process_line(segment, out);
            } else {
                if self.line.len().saturating_add(segment.len()) > self.max_frame_bytes {
                    self.frame_too_large(out);
                    return;
                }
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(segment);
                self.process_line(&line, out);
                line.clear();
                if line.capacity() <= RETAINED_BUFFER_BYTES {
                    self.line = line;
                }
            }
            if terminator == Some(b'\r') {
                // S-15: a CR directly followed by LF is one terminator (handled above, also when
                // the LF starts the next read).
                self.after_cr = true;
            }
        }
    }

    /// Lines to events. `line` has no terminator.
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        // S-18: an empty line dispatches the pending event.
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        // S-19: a comment, wherever it occurs; never decoded, never ends an event.
        if line.first() == Some(&b':') {
            out.push(SseEvent::KeepAlive(SseKeepAlive::Comment));
            return;
        }
        // S-20: name before the first `:`; value after it minus one leading U+0020; no `:` =
        // the whole line is the name and the value is empty.
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = line.get(colon + 1..).unwrap_or(&[]);
                (
                    line.get(..colon).unwrap_or(&[]),
                    value.strip_prefix(b" ").unwrap_or(value),
                )
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => self.append_data(value, out),
            b"event" => self.event_is_error = value == b"error",
            // S-20: accepted and ignored; the gateway never reconnects (case 022).
            b"id" | b"retry" => {}
            // D18: as if `event: error` and `data: value` had been sent.
            b"error" => {
                self.error_field = true;
                self.append_data(value, out);
            }
            _ => self.other_line(line, out),
        }
    }

    /// S-20 `data`: append the value (and the LF separator) to the data buffer, capped.
    fn append_data(&mut self, value: &[u8], out: &mut Vec<SseEvent>) {
        let separator = usize::from(self.data_lines > 0);
        let needed = self
            .data
            .len()
            .saturating_add(separator)
            .saturating_add(value.len());
        if needed > self.max_frame_bytes {
            self.frame_too_large(out);
            return;
        }
        if separator == 1 {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.data_lines += 1;
    }

    /// An unknown field name or a line without SSE syntax.
    fn other_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        // a non-SSE line whose first non-whitespace byte is `{` is parsed whole; an object
        // with a top-level `error` key is an in-band error frame (D18).
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        let is_error_object = first == Some(&b'{')
            && serde_json::from_slice::<Value>(line)
                .is_ok_and(|value| value.as_object().is_some_and(|o| o.contains_key("error")));
        if is_error_object {
            out.push(SseEvent::ErrorEvent {
                data: String::from_utf8_lossy(line).into_owned(),
            });
            return;
        }
        // S-30: anything else is a diagnostic excerpt, at most 4 096 bytes per stream.
        if self.excerpt_left == 0 {
            return;
        }
        let excerpt = excerpt(line, self.excerpt_left);
        if excerpt.is_empty() {
            return;
        }
        self.excerpt_left = self.excerpt_left.saturating_sub(excerpt.len());
        out.push(SseEvent::Unrecognized { excerpt });
    }

    /// dispatch the pending event, or just reset when the data buffer is empty.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let lines = self.data_lines;
        let is_error = self.event_is_error || self.error_field;
        self.data_lines = 0;
        self.event_is_error = false;
        self.error_field = false;
        if lines == 0 {
            // A block with only `retry:` / `id:` / `event:` / comments produces nothing (case 022).
            return;
        }
        let data = std::mem::take(&mut self.data);
        self.interpret(&data, lines, is_error, out);
        if !self.finished && data.capacity() <= RETAINED_BUFFER_BYTES {
            self.data = data;
            self.data.clear();
        }
    }

    /// S-22…S-27: what a dispatched event means. `data` has no trailing LF.
    fn interpret(&mut self, data: &[u8], lines: usize, is_error: bool, out: &mut Vec<SseEvent>) {
        // S-16: decode the complete lines; invalid bytes become U+FFFD, never an error.
        let text = lossy_utf8(data);
        // S-22: type `error` (or a D18 `error` field) whatever the data is.
        if is_error {
            out.push(SseEvent::ErrorEvent {
                data: text.into_owned(),
            });
            return;
        }
        let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
        // S-23: empty or whitespace-only data is a keep-alive, never JSON-decoded.
        if trimmed.is_empty() {
            out.push(SseEvent::KeepAlive(SseKeepAlive::EmptyData));
            return;
        }
        // S-24: `[DONE]` (case-sensitive, ASCII whitespace trimmed) is terminal.
        if trimmed == "[DONE]" {
            out.push(SseEvent::Done);
            self.finish_stream();
            return;
        }
        // S-25: one JSON text, any type; S-27: the event type does not matter.
        match self.reader.parse(&text) {
            Ok(chunk) => out.push(SseEvent::Chunk(chunk)),
            Err(_) => {
                let recovered = if lines >= 2 {
                    split_recovery(&text)
                } else {
                    None
                };
                if let Some(pieces) = recovered {
                    self.emit_recovered(pieces, out);
                    return;
                }
                // S-26: length only, the payload is never echoed.
                out.push(SseEvent::MalformedFrame { len: data.len() });
            }
        }
    }

    /// the notice, then one `Chunk` / `Done` per data line in order; `Done` is terminal.
    fn emit_recovered(&mut self, pieces: Vec<Piece>, out: &mut Vec<SseEvent>) {
        out.push(SseEvent::Notice(SseNotice::SplitDataLines));
        for piece in pieces {
            match piece {
                Piece::Chunk(value) => out.push(SseEvent::Chunk(value)),
                Piece::Done => {
                    out.push(SseEvent::Done);
                    self.finish_stream();
                    return;
                }
            }
        }
    }

    /// terminal `FrameTooLarge`; the buffers are released at once.
    fn frame_too_large(&mut self, out: &mut Vec<SseEvent>) {
        out.push(SseEvent::FrameTooLarge {
            limit: self.max_frame_bytes,
        });
        self.finish_stream();
    }

    /// After a terminal event nothing more is parsed or held.
    fn finish_stream(&mut self) {
        self.finished = true;
        self.line = Vec::new();
        self.data = Vec::new();
        self.data_lines = 0;
        self.after_cr = false;
        // The template holds a copy of a chunk's bytes: not needed after the terminal event.
        self.reader = ChunkReader::new();
    }
}
