//! Transport ports: `ChatTransport`, `EmbeddingTransport`, `OcrTransport` and the wire facts
//! they exchange with the core.
//!
//! A transport performs one HTTP exchange and reports what happened — status, headers, body
//! bytes or SSE events — without judging completeness, category or retry (adapters report wire
//! facts, the core judges). The core builds every request body and sends it verbatim.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_core::Stream;
use serde_json::Value;

use crate::config::SourceConfig;
use crate::error::{ArchiveFault, NetworkFault, WireFailure};
use crate::ports::request_body::RequestBody;
use crate::ports::text_read::{KeptFrame, TextFrame};
use crate::vocab::wire_enum;

wire_enum! {
    /// The OpenAI-compatible endpoint of a request.
    pub enum Endpoint {
        /// `POST {base_url}/chat/completions`.
        ChatCompletions => "chat_completions",
        /// `POST {base_url}/embeddings`.
        Embeddings => "embeddings",
    }
}

impl Endpoint {
    /// The path appended to `base_url`, with a leading `/`.
    pub const fn path(self) -> &'static str {
        match self {
            Self::ChatCompletions => "/chat/completions",
            Self::Embeddings => "/embeddings",
        }
    }
}

/// One request for a chat or embedding transport. `Debug` is secret-free because
/// `SourceConfig` redacts its key and headers and a [`RequestBody`] holds no credential.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// The source (base_url, key, auth style, headers, query, trust_env, timeouts).
    pub source: Arc<SourceConfig>,
    /// This attempt's id; sent as `X-Request-Id`.
    pub call_id: String,
    /// Which endpoint.
    pub endpoint: Endpoint,
    /// Final payload built and serialised by the core; the transport sends these bytes
    /// verbatim, it never re-serialises or edits them.
    // Spec: 05 R-14.
    pub body: RequestBody,
    /// `true` = request an event stream.
    pub stream: bool,
}

/// A whole 200 response body with its headers; the core parses it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireBody {
    /// Response headers, names lower-cased, values as received.
    pub headers: Vec<(String, String)>,
    /// The raw (decoded) body bytes.
    pub bytes: Bytes,
}

/// A boxed stream of wire events, ending with exactly one terminal event.
pub type WireEventStream = Pin<Box<dyn Stream<Item = WireEvent> + Send>>;

/// A 200 response of a chat transport.
pub enum WireResponse {
    /// Status 200 and `stream = true`: the event stream plus the response headers and content
    /// type, so the core can judge a JSON body sent to a streamed request.
    Events {
        /// Response headers, names lower-cased, values as received.
        headers: Vec<(String, String)>,
        /// The `content-type` header value, if any.
        content_type: Option<String>,
        /// The events in wire order.
        events: WireEventStream,
    },
    /// Status 200 and `stream = false`: the whole body.
    Body(WireBody),
}

impl fmt::Debug for WireResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Events {
                headers,
                content_type,
                ..
            } => f
                .debug_struct("Events")
                .field("headers", headers)
                .field("content_type", content_type)
                .finish_non_exhaustive(),
            Self::Body(body) => f.debug_tuple("Body").field(body).finish(),
        }
    }
}

/// Keep-alive kinds; never progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeepAliveKind {
    /// An SSE comment line.
    Comment,
    /// An event with empty data.
    EmptyData,
}

/// Framing notices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireNotice {
    /// The split-data-lines recovery happened; the recovered events follow.
    SplitDataLines,
}

/// `true` for a JSON media type: `application/json` or any `+json` suffix, whatever the
/// top-level type; parameters (`; charset=utf-8`) and ASCII case are ignored. The one
/// test both the transport (whether to SSE-frame a body) and the core (whether to judge it as a
/// non-stream body) use, so they never disagree.
pub fn is_json_content_type(content_type: &str) -> bool {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .as_bytes();
    media.eq_ignore_ascii_case(b"application/json")
        || media
            .len()
            .checked_sub(5)
            .and_then(|at| media.get(at..))
            .is_some_and(|suffix| suffix.eq_ignore_ascii_case(b"+json"))
}

/// `bytes` as text, invalid UTF-8 replaced by U+FFFD, never an error. The strict
/// check runs first: on valid text it is several times cheaper than the lossy scan and borrows.
pub fn lossy_utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The text of a whole body: one leading UTF-8 BOM removed, then [`lossy_utf8`].
pub fn body_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    lossy_utf8(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes))
}

/// when `text` is one JSON value followed only by whitespace, blank lines, SSE `:`
/// comment lines and `data: [DONE]` lines (at least one such line), the JSON value's text;
/// otherwise `None` (also when `text` is plain JSON: nothing needed rescuing). Servers that
/// answer a non-stream request with a complete JSON body and then an event-stream trailer send
/// this (seen on relays in front of vLLM and on llama.cpp forks).
pub fn json_before_trailing_sse(text: &str) -> Option<&str> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
    match values.next() {
        Some(Ok(_)) => {}
        _ => return None,
    }
    let end = values.byte_offset();
    let rest = text.get(end..)?;
    let mut trailer = false;
    for line in rest.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(':') {
            trailer = true;
            continue;
        }
        let data = line.strip_prefix("data:")?;
        if data.trim() != "[DONE]" {
            return None;
        }
        trailer = true;
    }
    if trailer { text.get(..end) } else { None }
}

/// The data of one dispatched SSE event (or a whole JSON body): one complete JSON text of
/// any type, checked when built and kept as text.
///
/// The adapter only checks that the data is JSON (a wire fact); the core decides how to read it.
/// Keeping the text rather than a parsed `Value` lets the core read the common chunk shapes
/// without building a map per object (parsing every frame into a `Value` was a third of
/// the stream overhead) and fall back to [`ChunkJson::to_value`] for everything else.
///
/// The check is the same scan that reads the common chunk fields ([`TextFrame::read`]); their
/// positions are kept, so the core reads them without scanning the text again
/// ([`ChunkJson::text_frame`]).
///
/// Equality is JSON equality (`to_value() == to_value()`), so whitespace and key order of the
/// text do not matter; `Debug` prints the text (chunk data is payload, never a secret).
#[derive(Clone)]
pub struct ChunkJson {
    text: Box<str>,
    /// Boxed: keeps `WireEvent` small (events are moved through streams and channels).
    frame: Option<Box<KeptFrame>>,
}

impl ChunkJson {
    /// Checks that `text` is exactly one JSON text (surrounding whitespace allowed) and keeps it.
    /// Errors: the `serde_json` syntax error (the caller reports only the length).
    ///
    /// One scan: the common chunk shapes are read and checked together ([`TextFrame::read`]
    /// accepts only complete JSON texts); any other text is checked on its own.
    pub fn parse(text: &str) -> Result<Self, serde_json::Error> {
        let frame = match TextFrame::read(text) {
            Some(frame) => Some(Box::new(KeptFrame::keep(text, frame))),
            None => {
                serde_json::from_str::<serde::de::IgnoredAny>(text)?;
                None
            }
        };
        Ok(Self {
            text: text.into(),
            frame,
        })
    }

    /// The chunk of `text` with the reading `frame`, without scanning: the caller guarantees
    /// that `text` is one JSON text and that `frame` is exactly what [`Self::parse`] would keep
    /// for it ([`crate::ChunkReader`], whose proptest pins this).
    pub(crate) fn with_reading(text: &str, frame: KeptFrame) -> Self {
        Self {
            text: text.into(),
            frame: Some(Box::new(frame)),
        }
    }

    /// The kept reading, if the text had one of the common chunk shapes.
    pub(crate) fn kept_frame(&self) -> Option<&KeptFrame> {
        self.frame.as_deref()
    }

    /// The JSON text of `value` (for scripted transports and tests).
    pub fn from_value(value: &Value) -> Self {
        let text = value.to_string();
        let frame = TextFrame::read(&text).map(|frame| Box::new(KeptFrame::keep(&text, frame)));
        Self {
            text: text.into(),
            frame,
        }
    }

    /// The common chunk fields as read by the check, borrowing from the text, or `None` when
    /// the text is outside the shapes [`TextFrame::read`] covers (`usage` is a copy).
    pub fn text_frame(&self) -> Option<TextFrame<'_>> {
        self.frame.as_ref().map(|frame| frame.view(&self.text))
    }

    /// The JSON text as received.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text parsed into a `Value`. The text was checked when built, so this cannot fail in
    /// practice; an impossible parse error yields `Value::Null` rather than a panic.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl From<Value> for ChunkJson {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
    }
}

impl From<&Value> for ChunkJson {
    fn from(value: &Value) -> Self {
        Self::from_value(value)
    }
}

impl PartialEq for ChunkJson {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for ChunkJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChunkJson").field(&&*self.text).finish()
    }
}

/// One SSE fact. Terminal: `Done`, `FrameTooLarge`, `End`, `ReadError`.
#[derive(Debug, Clone, PartialEq)]
pub enum WireEvent {
    /// Data of one dispatched event: one JSON text of any type.
    Chunk(ChunkJson),
    /// `[DONE]`; terminal.
    Done,
    /// A keep-alive; never progress.
    KeepAlive(KeepAliveKind),
    /// An event of type `error`, an SSE `error:` field, or a non-SSE line that is a JSON
    /// object with a top-level `error` key; `data` is the raw text.
    ErrorEvent {
        /// The event data or the whole line.
        data: String,
    },
    /// Data that is not JSON; the length only, never the payload.
    MalformedFrame {
        /// Byte length of the data.
        len: usize,
    },
    /// A framing notice.
    Notice(WireNotice),
    /// A non-SSE line, ≤ 4 096 bytes per stream in total.
    Unrecognized {
        /// Excerpt of the line.
        excerpt: String,
    },
    /// A line or an event's data exceeded `max_frame_bytes`; terminal.
    FrameTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// Clean end of body; terminal.
    End,
    /// The body broke; terminal; never a clean end.
    ReadError(NetworkFault),
}

impl WireEvent {
    /// The one data event of a 200 JSON body answering a streamed request,
    /// interpreted as an SSE event's data would be: [`body_text`]; empty or whitespace only →
    /// `KeepAlive(EmptyData)`; one JSON text → `Chunk`; anything else → `MalformedFrame { len }`
    /// (the length of `bytes`, never the payload).
    pub fn from_json_body(bytes: &[u8]) -> Self {
        let text = body_text(bytes);
        if text.trim().is_empty() {
            return Self::KeepAlive(KeepAliveKind::EmptyData);
        }
        match ChunkJson::parse(&text) {
            Ok(chunk) => Self::Chunk(chunk),
            // README D20: a JSON answer with `data: [DONE]` (or comments) appended.
            Err(_) => match json_before_trailing_sse(&text).map(ChunkJson::parse) {
                Some(Ok(chunk)) => Self::Chunk(chunk),
                _ => Self::MalformedFrame { len: bytes.len() },
            },
        }
    }

    /// `true` for the four terminal events.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Done | Self::FrameTooLarge { .. } | Self::End | Self::ReadError(_)
        )
    }
}

/// The chat transport port.
#[async_trait]
pub trait ChatTransport: Send + Sync + 'static {
    /// One HTTP exchange. Resolves when the status is known: with an event stream
    /// (`stream = true`) or the whole body (`stream = false`). Status ≠ 200 →
    /// `Err(WireFailure::Http)`; failure before a status → `Err(WireFailure::Network)`.
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure>;
}

/// The embedding transport port; always non-stream.
#[async_trait]
pub trait EmbeddingTransport: Send + Sync + 'static {
    /// One `POST {base_url}/embeddings`; the 200 body unjudged.
    async fn send(&self, request: WireRequest) -> Result<WireBody, WireFailure>;
}

/// One OCR request.
#[derive(Debug, Clone)]
pub struct OcrWireRequest {
    /// The source.
    pub source: Arc<SourceConfig>,
    /// This attempt's id.
    pub call_id: String,
    /// Image bytes.
    pub image: Bytes,
}

/// One member of the decoded result archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveEntry {
    /// Member path inside the archive.
    pub path: String,
    /// Member bytes.
    pub bytes: Bytes,
}

/// The layout response: the parse envelope and the fetched archive.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrLayoutWire {
    /// The parse response, unjudged.
    pub envelope: WireBody,
    /// `None`: no result location named; else the decoded entries or why not.
    pub archive: Option<Result<Vec<ArchiveEntry>, ArchiveFault>>,
}

/// The OCR sub-operation that failed (maps to `ErrorOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OcrStage {
    /// The text POST.
    OcrText,
    /// The layout POST.
    Parse,
    /// The archive GET.
    DownloadResult,
}

/// An OCR failure fact with its stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{stage:?}: {failure}")]
pub struct OcrWireFailure {
    /// Which request failed.
    pub stage: OcrStage,
    /// What happened.
    pub failure: WireFailure,
}

/// The OCR transport port.
#[async_trait]
pub trait OcrTransport: Send + Sync + 'static {
    /// Multipart `POST {base_url}/ocr/text`; the 200 body unjudged.
    async fn recognize_text(&self, req: OcrWireRequest) -> Result<WireBody, OcrWireFailure>;
    /// `POST {base_url}/parse`, then the archive GET when a location is named; one attempt.
    async fn parse_layout(&self, req: OcrWireRequest) -> Result<OcrLayoutWire, OcrWireFailure>;
    /// `GET {base_url}/health`, unjudged.
    async fn check_health(&self, source: &SourceConfig) -> Result<WireBody, WireFailure>;
}
