//! How a response goes on the wire: [`Framing`], [`Head`], [`End`], [`RawChunk`] and the
//! default status.
//!
//! A leaf of its own: the response, OCR and completion types all name these.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub(super) fn default_status() -> u16 {
    200
}
/// How the body is delimited on the wire (spec 15 `framing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// `Transfer-Encoding: chunked`; each write is one HTTP chunk.
    #[default]
    Chunked,
    /// `Content-Length` of the whole body; the writes are sent as they are.
    ContentLength,
    /// `Connection: close`, no length: the body ends when the server closes the connection.
    Close,
}

/// Whether the status line is sent (spec 15 `head`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Head {
    /// Send the status line and headers after `head_delay_ms`.
    #[default]
    Send,
    /// Accept the request and never answer; the connection stays open until the client leaves.
    Hang,
}

/// What happens after the last write (spec 15 `end`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Finish the body cleanly (final chunk, length reached, or close for `framing: close`).
    #[default]
    Eof,
    /// Send a TCP RST (SO_LINGER 0) without finishing the body.
    Reset,
    /// Never finish the body; keep the connection open until the client leaves.
    Hang,
}

/// One raw body write: its bytes and the delay before it, counted from the previous write.
/// JSON: `{"text": str, "delay_ms"?: int}` or `{"base64": str, "delay_ms"?: int}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawChunkRepr", into = "RawChunkRepr")]
pub struct RawChunk {
    /// The bytes written, exactly.
    pub bytes: Bytes,
    /// Delay before this write, in milliseconds, counted from the previous write (or from the
    /// head for the first one).
    pub delay_ms: u64,
}

impl RawChunk {
    /// A chunk of UTF-8 text with no delay.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            bytes: Bytes::from(text.into()),
            delay_ms: 0,
        }
    }

    /// A chunk of arbitrary bytes with no delay (written as `base64` in JSON unless UTF-8).
    pub fn bytes(bytes: impl Into<Bytes>) -> Self {
        Self {
            bytes: bytes.into(),
            delay_ms: 0,
        }
    }

    /// Sets the delay before this write, in milliseconds.
    #[must_use]
    pub fn after_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChunkRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    delay_ms: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl TryFrom<RawChunkRepr> for RawChunk {
    type Error = String;
    fn try_from(r: RawChunkRepr) -> Result<Self, String> {
        let bytes = match (r.text, r.base64) {
            (Some(t), None) => Bytes::from(t),
            (None, Some(b)) => Bytes::from(
                BASE64
                    .decode(b.as_bytes())
                    .map_err(|e| format!("chunk `base64` is not valid base64: {e}"))?,
            ),
            _ => return Err("a chunk has exactly one of `text` or `base64`".to_owned()),
        };
        Ok(Self {
            bytes,
            delay_ms: r.delay_ms,
        })
    }
}

impl From<RawChunk> for RawChunkRepr {
    fn from(c: RawChunk) -> Self {
        match std::str::from_utf8(&c.bytes) {
            Ok(t) => Self {
                text: Some(t.to_owned()),
                base64: None,
                delay_ms: c.delay_ms,
            },
            Err(_) => Self {
                text: None,
                base64: Some(BASE64.encode(&c.bytes)),
                delay_ms: c.delay_ms,
            },
        }
    }
}
