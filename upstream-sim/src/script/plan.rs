//! A rendered answer: the timed writes of one response ([`Plan`], [`PlannedWrite`]) and the
//! OpenAI-style error body. A leaf: the chat renderer (`render.rs`) and the OCR renderer
//! (`ocr.rs`) both build plans, and the chat renderer dispatches to the OCR one, so the plan
//! type lives apart from both.

use bytes::Bytes;

use super::faults::Fault;
use super::types::{End, Framing, Head};

/// One timed write of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    /// Delay before this write, in milliseconds, counted from the previous write (the first one
    /// from the head).
    pub delay_ms: u64,
    /// The body bytes of this write (before HTTP chunk framing).
    pub bytes: Bytes,
}

/// Everything the wire does for one request: an executable, I/O-free description.
///
/// Execute it as: wait `head_delay_ms`; if `head` is `Hang`, never answer; else send the status
/// line with [`Plan::wire_headers`]; for each write wait `delay_ms` then send its bytes (one
/// HTTP chunk under chunked framing, skipped when empty); then apply `end`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// HTTP status.
    pub status: u16,
    /// Headers in wire order, without the framing header (see [`Plan::wire_headers`]).
    pub headers: Vec<(String, String)>,
    /// Body delimitation.
    pub framing: Framing,
    /// Whether the status line is sent.
    pub head: Head,
    /// Delay before the status line, in milliseconds.
    pub head_delay_ms: u64,
    /// The body writes, in order.
    pub writes: Vec<PlannedWrite>,
    /// What happens after the last write.
    pub end: End,
    /// How many leading writes come before the finish frame (all writes for raw bodies); the
    /// `truncate` fault keeps at most this many.
    pub frames_before_finish: usize,
    /// Index of the scripted response rendered, `None` for built-in answers (404, default
    /// embeddings, models list, 429/5xx faults).
    pub response_index: Option<usize>,
    /// The fault applied to this request, if any.
    pub fault: Option<Fault>,
}

impl Plan {
    pub(crate) fn simple(status: u16, content_type: &str, body: String) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            framing: Framing::ContentLength,
            head: Head::Send,
            head_delay_ms: 0,
            writes: vec![PlannedWrite {
                delay_ms: 0,
                bytes: Bytes::from(body),
            }],
            end: End::Eof,
            frames_before_finish: 1,
            response_index: None,
            fault: None,
        }
    }

    /// The concatenated body bytes (for in-memory wires and assertions).
    pub fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body_len());
        for w in &self.writes {
            out.extend_from_slice(&w.bytes);
        }
        out
    }

    /// Sum of the write delays plus `head_delay_ms`, in milliseconds.
    pub fn total_delay_ms(&self) -> u64 {
        self.writes
            .iter()
            .fold(self.head_delay_ms, |acc, w| acc.saturating_add(w.delay_ms))
    }

    /// Applies a fault drawn for this request (spec 15 "Faults"):
    /// 429 and 5xx replace the plan by a JSON error; `HangBeforeHead` sets `head: hang`;
    /// `Stall` adds `stall_ms` before the write in the middle of the pre-finish frames (at
    /// index max(1, n/2)); `Truncate` keeps half the writes (at most the pre-finish ones), or
    /// half the bytes of a single-write body. Records the fault in [`Plan::fault`].
    pub fn apply_fault(&mut self, fault: Fault) {
        match &fault {
            Fault::TooManyRequests { retry_after } => {
                *self = render_error(
                    429,
                    "rate_limit_exceeded",
                    "Rate limit reached (simulated fault).",
                );
                self.headers
                    .push(("retry-after".to_owned(), retry_after.clone()));
            }
            Fault::ServerError { status } => {
                *self = render_error(*status, "server_error", "Upstream error (simulated fault).");
            }
            Fault::HangBeforeHead => self.head = Head::Hang,
            Fault::Stall { stall_ms } => {
                if !self.writes.is_empty() {
                    let idx = (self.frames_before_finish / 2)
                        .max(1)
                        .min(self.writes.len() - 1);
                    self.writes[idx].delay_ms = self.writes[idx].delay_ms.saturating_add(*stall_ms);
                }
            }
            Fault::Truncate => {
                if self.writes.len() == 1 {
                    let b = &self.writes[0].bytes;
                    self.writes[0].bytes = b.slice(..b.len() / 2);
                } else {
                    let keep = (self.writes.len() / 2).min(self.frames_before_finish);
                    self.writes.truncate(keep);
                }
                self.frames_before_finish = self.frames_before_finish.min(self.writes.len());
            }
        }
        self.fault = Some(fault);
    }
}

/// An OpenAI-style JSON error plan: `{"error": {"message", "type", "code"}}` with
/// `content-length` framing. `code` is also used to choose the `type`
/// (`rate_limit_exceeded` → `rate_limit_error`, `sim_no_match` → `invalid_request_error`,
/// anything else → `server_error`).
pub fn render_error(status: u16, code: &str, message: &str) -> Plan {
    let kind = match code {
        "rate_limit_exceeded" => "rate_limit_error",
        "sim_no_match" => "invalid_request_error",
        _ => "server_error",
    };
    let mut body = String::with_capacity(96 + message.len());
    body.push_str("{\"error\":{\"message\":");
    push_json_str(&mut body, message);
    body.push_str(",\"type\":");
    push_json_str(&mut body, kind);
    body.push_str(",\"code\":");
    push_json_str(&mut body, code);
    body.push_str("}}");
    Plan::simple(status, "application/json", body)
}

/// Appends `s` as a JSON string literal.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    // Serialising a &str cannot fail.
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}
