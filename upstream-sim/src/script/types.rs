//! Script types of format version 1 (spec 15 "Script (JSON)") and their strict JSON parser.
//!
//! Every struct rejects unknown fields, so a typo in a fixture fails loudly instead of silently
//! falling back to a default. The `version` field is read before anything else so that a script
//! of another version gets [`ScriptError::UnsupportedVersion`], not a confusing field error.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The only script format version this crate reads and writes (spec 15).
pub const SCRIPT_VERSION: u32 = 1;

/// Why a script was refused. Messages name the offending field (`responses[2].status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The top-level field `version` is absent.
    #[error("script field `version` is missing; this simulator reads version 1")]
    MissingVersion,
    /// The top-level field `version` is present but is not `1`.
    #[error("script field `version` is {found}; this simulator reads only version 1")]
    UnsupportedVersion {
        /// The value found, as JSON text.
        found: String,
    },
    /// The text is not valid JSON or does not fit the format (unknown field, wrong type, …);
    /// the message is serde's, with line and column.
    #[error("invalid script: {message}")]
    Json {
        /// serde_json's description of the problem.
        message: String,
    },
    /// A value is well-typed but out of its domain (probability above 1, two body kinds, …).
    #[error("script field `{field}` is invalid: {reason}")]
    Invalid {
        /// Path of the field, e.g. `responses[0].completion.chunks`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ScriptError {
    fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// A whole script: the responses, how they are picked, and optional load faults (spec 15).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Format version; must be [`SCRIPT_VERSION`] (checked by [`Script::validate`]).
    pub version: u32,
    /// How a response is picked among those that match the request; default `sequence`.
    #[serde(default)]
    pub order: Order,
    /// The scripted responses, in script order.
    pub responses: Vec<Response>,
    /// Per-request fault injection for load runs; absent means no faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// Keep-alive idle timeout in milliseconds (case 041): a request that arrives on
    /// a kept-alive connection which stayed idle at least this long is dropped unanswered and
    /// the connection closed — the race a client sees when it reuses a pooled connection the
    /// server has just closed. The request is neither recorded nor counted (the server "never
    /// saw it"). `0` drops every request on a reused connection. Absent: no timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_idle_ms: Option<u64>,
}

impl Script {
    /// A version-1 script with `order: sequence`, no faults and these responses.
    pub fn new(responses: Vec<Response>) -> Self {
        Self {
            version: SCRIPT_VERSION,
            order: Order::Sequence,
            responses,
            faults: None,
            keep_alive_idle_ms: None,
        }
    }

    /// Sets `order` (builder style).
    #[must_use]
    pub fn with_order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Sets `faults` (builder style).
    #[must_use]
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Parses and validates a script from JSON text.
    ///
    /// Errors: [`ScriptError::MissingVersion`] / [`ScriptError::UnsupportedVersion`] when the
    /// `version` field is absent or not 1 (checked before the rest of the text is interpreted),
    /// [`ScriptError::Json`] for syntax errors, unknown fields and wrong types,
    /// [`ScriptError::Invalid`] for out-of-domain values.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        #[derive(Deserialize)]
        struct VersionProbe {
            version: Option<serde_json::Value>,
        }
        let probe: VersionProbe = serde_json::from_str(text).map_err(|e| ScriptError::Json {
            message: e.to_string(),
        })?;
        match probe.version {
            None => return Err(ScriptError::MissingVersion),
            Some(v) if v.as_u64() == Some(u64::from(SCRIPT_VERSION)) => {}
            Some(v) => {
                return Err(ScriptError::UnsupportedVersion {
                    found: v.to_string(),
                });
            }
        }
        let script: Script = serde_json::from_str(text).map_err(|e| ScriptError::Json {
            message: e.to_string(),
        })?;
        script.validate()?;
        Ok(script)
    }

    /// Serialises the script to its JSON form (the list form is used for `headers`).
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks the invariants serde cannot express: the version, one body kind per response,
    /// `completion.chunks >= 1`, `embedding.dim <= 65 536`, statuses in 100..=999, probabilities
    /// in [0, 1].
    pub fn validate(&self) -> Result<(), ScriptError> {
        if self.version != SCRIPT_VERSION {
            return Err(ScriptError::UnsupportedVersion {
                found: self.version.to_string(),
            });
        }
        for (i, r) in self.responses.iter().enumerate() {
            let at = |f: &str| format!("responses[{i}].{f}");
            if !(100..=999).contains(&r.status) {
                return Err(ScriptError::invalid(at("status"), "must be in 100..=999"));
            }
            let kinds = usize::from(r.chunks.is_some())
                + usize::from(r.completion.is_some())
                + usize::from(r.embedding.is_some())
                + usize::from(r.ocr.is_some());
            if kinds > 1 {
                return Err(ScriptError::invalid(
                    format!("responses[{i}]"),
                    "`chunks`, `completion`, `embedding` and `ocr` are mutually exclusive",
                ));
            }
            if let Some(o) = &r.ocr
                && !(100..=999).contains(&o.download_status)
            {
                return Err(ScriptError::invalid(
                    at("ocr.download_status"),
                    "must be in 100..=999",
                ));
            }
            if let Some(c) = &r.completion
                && c.chunks == 0
            {
                return Err(ScriptError::invalid(
                    at("completion.chunks"),
                    "must be >= 1",
                ));
            }
            if let Some(e) = &r.embedding
                && e.dim > MAX_EMBEDDING_DIM
            {
                return Err(ScriptError::invalid(
                    at("embedding.dim"),
                    format!("must be <= {MAX_EMBEDDING_DIM}"),
                ));
            }
            if let Some(headers) = &r.headers {
                for (name, value) in &headers.0 {
                    if name.is_empty() || name.bytes().any(|b| !is_token_byte(b)) {
                        return Err(ScriptError::invalid(
                            at("headers"),
                            format!("`{name}` is not a valid header name"),
                        ));
                    }
                    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                        return Err(ScriptError::invalid(
                            at("headers"),
                            format!("the value of `{name}` contains CR or LF"),
                        ));
                    }
                }
            }
        }
        if let Some(f) = &self.faults {
            for (name, p) in [
                ("p_429", f.p_429),
                ("p_5xx", f.p_5xx),
                ("p_hang_before_head", f.p_hang_before_head),
                ("p_stall", f.p_stall),
                ("p_truncate", f.p_truncate),
            ] {
                if !(0.0..=1.0).contains(&p) {
                    return Err(ScriptError::invalid(
                        format!("faults.{name}"),
                        "must be a probability in [0, 1]",
                    ));
                }
            }
            if !(100..=999).contains(&f.status_5xx) {
                return Err(ScriptError::invalid(
                    "faults.status_5xx",
                    "must be in 100..=999",
                ));
            }
            if f.retry_after.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(ScriptError::invalid(
                    "faults.retry_after",
                    "contains CR or LF",
                ));
            }
        }
        Ok(())
    }
}

/// Largest `embedding.dim` a script may ask for: 65 536 numbers per vector (real models use at
/// most a few thousand). A larger value would make every embeddings answer gigabytes long.
pub const MAX_EMBEDDING_DIM: u32 = 65_536;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// How a response is picked among those matching a request (spec 15 `order`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The n-th matching request gets the n-th matching response; the last one repeats.
    #[default]
    Sequence,
    /// Like `sequence`, but wraps around to the first response.
    Cycle,
    /// The first matching response always wins (no counter).
    ByModel,
}

/// A response's request filter: every field given must equal the request's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Request path; compared with an optional leading `/v1` removed on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The request body's `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One scripted response (spec 15 "Response").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// Only requests matching this filter get this response; absent matches every request.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<Match>,
    /// HTTP status code; default 200.
    #[serde(default = "default_status")]
    pub status: u16,
    /// Response headers in wire order (duplicates kept); absent: a content type chosen from
    /// the body kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Headers>,
    /// How the body is delimited on the wire; default `chunked`.
    #[serde(default)]
    pub framing: Framing,
    /// Whether the status line is ever sent; default `send`.
    #[serde(default)]
    pub head: Head,
    /// Delay before the status line, in milliseconds.
    #[serde(default)]
    pub head_delay_ms: u64,
    /// A raw body: one write per entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<RawChunk>>,
    /// A generated chat completion (SSE when the request streams, else one JSON body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<Completion>,
    /// A generated embeddings response, one vector per input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Embedding>,
    /// A MonkeyOCR answer (`/ocr/text`, `/parse` and its result archive; see [`Ocr`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocr: Option<Ocr>,
    /// What happens after the last write; default `eof`.
    #[serde(default)]
    pub end: End,
}

fn default_status() -> u16 {
    200
}

impl Default for Response {
    fn default() -> Self {
        Self {
            matcher: None,
            status: 200,
            headers: None,
            framing: Framing::default(),
            head: Head::default(),
            head_delay_ms: 0,
            chunks: None,
            completion: None,
            embedding: None,
            ocr: None,
            end: End::default(),
        }
    }
}

impl Response {
    /// A 200 response generating this completion.
    pub fn completion(completion: Completion) -> Self {
        Self {
            completion: Some(completion),
            ..Self::default()
        }
    }

    /// A response with this status and raw body chunks.
    pub fn raw(status: u16, chunks: Vec<RawChunk>) -> Self {
        Self {
            status,
            chunks: Some(chunks),
            ..Self::default()
        }
    }

    /// A 200 embeddings response with vectors of `dim` numbers.
    pub fn embedding(dim: u32) -> Self {
        Self {
            embedding: Some(Embedding { dim }),
            ..Self::default()
        }
    }
}

/// Response headers as ordered `(name, value)` pairs. JSON accepts an object (`{name: value}`,
/// in document order) or a list of pairs (`[[name, value], ...]`, which keeps duplicates);
/// it is always written as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// Builds headers from pairs, keeping order and duplicates.
    pub fn from_pairs<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        )
    }

    /// Whether a header of this name (ASCII case-insensitive) is present.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

impl Serialize for Headers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (n, v) in &self.0 {
            seq.serialize_element(&[n, v])?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeadersVisitor;
        impl<'de> Visitor<'de> for HeadersVisitor {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object {name: value} or a list of [name, value] pairs")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((n, v)) = map.next_entry::<String, String>()? {
                    out.push((n, v));
                }
                Ok(Headers(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((n, v)) = seq.next_element::<(String, String)>()? {
                    out.push((n, v));
                }
                Ok(Headers(out))
            }
        }
        deserializer.deserialize_any(HeadersVisitor)
    }
}

/// A MonkeyOCR answer (docs/simulator.md "MonkeyOCR"). On `POST /ocr/text` it renders
/// `{"success", "task_type": "text", "content", "message"}`; on `POST /parse` it renders
/// `{"success", "message", "download_url", "files"}` whose `download_url` names the result
/// archive `/static/sim-r{i}.zip` (`i` = this response's index), served by `GET` with a real ZIP
/// built from `elements`, `page_sizes` and `markdown` (or one of the faulty archives of
/// [`OcrArchive`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ocr {
    /// The envelope's `success`; default `true`.
    #[serde(default = "default_true")]
    pub success: bool,
    /// The text envelope's `content`; default `""`.
    #[serde(default)]
    pub content: String,
    /// The envelope's `message`; default `null` (text) / `"ok"` (parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The `*_content_list.json` items (any JSON values, in order).
    #[serde(default)]
    pub elements: Vec<serde_json::Value>,
    /// `pdf_info[i].page_size` of `*_middle.json`, as `[width, height]`.
    #[serde(default)]
    pub page_sizes: Vec<[f64; 2]>,
    /// The `.md` member.
    #[serde(default)]
    pub markdown: String,
    /// Which archive the download serves; default `zip`.
    #[serde(default)]
    pub archive: OcrArchive,
    /// Where `download_url` points; default `relative`.
    #[serde(default)]
    pub location: OcrLocation,
    /// Status of the archive download; default 200 (another status answers a JSON error).
    #[serde(default = "default_status")]
    pub download_status: u16,
    /// `hang`: the archive download never answers; default `send`.
    #[serde(default)]
    pub download_head: Head,
}

impl Default for Ocr {
    fn default() -> Self {
        Self {
            success: true,
            content: String::new(),
            message: None,
            elements: Vec::new(),
            page_sizes: Vec::new(),
            markdown: String::new(),
            archive: OcrArchive::default(),
            location: OcrLocation::default(),
            download_status: 200,
            download_head: Head::default(),
        }
    }
}

/// The archive a `/parse` answer's download serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OcrArchive {
    /// A real ZIP: `sim/sim_content_list.json`, `sim/sim_middle.json`, `sim/sim.md`.
    #[default]
    Zip,
    /// No archive: `download_url` is `null`.
    None,
    /// Bytes that are not a ZIP.
    Corrupt,
    /// 64 MiB + 1 bytes (over the download cap).
    Oversized,
    /// A small ZIP whose content list inflates to 40 MiB (over the 32 MiB member cap).
    Bomb,
    /// A ZIP with a member named `../sim_content_list.json`.
    Traversal,
}

/// Where a `/parse` answer's `download_url` points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OcrLocation {
    /// A server-relative path, `/static/sim-r{i}.zip`.
    #[default]
    Relative,
    /// An absolute URL on another host (`http://foreign.invalid:9/...`).
    Foreign,
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

/// A generated chat completion (spec 15 "Completion"): SSE frames when the request has
/// `"stream": true`, else one `chat.completion` JSON body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Completion {
    /// Assistant text, split evenly (by characters) across `chunks` content frames.
    #[serde(default)]
    pub content: String,
    /// Reasoning text, sent before the content (split like the content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Which delta/message field carries the reasoning.
    #[serde(default)]
    pub reasoning_field: ReasoningField,
    /// Tool calls, each sent as an identity frame then argument fragments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The finish frame's `finish_reason`; `None` (JSON `null`) sends no finish frame.
    /// Default `"stop"`.
    #[serde(default = "default_finish_reason")]
    pub finish_reason: Option<String>,
    /// The usage object: computed from lengths (field absent), omitted (`null`) or given.
    #[serde(default, skip_serializing_if = "UsageSpec::is_computed")]
    pub usage: UsageSpec,
    /// Where the usage goes in a stream.
    #[serde(default)]
    pub usage_frame: UsageFrame,
    /// Number of content frames (and of reasoning frames, and of argument fragments per tool
    /// call), at most one per character; default 8, must be >= 1.
    #[serde(default = "default_chunks")]
    pub chunks: u32,
    /// Delay before the first frame of the stream, in milliseconds.
    #[serde(default)]
    pub ttft_ms: u64,
    /// Delay before every later reasoning, content, tool and finish frame, in milliseconds.
    #[serde(default)]
    pub inter_chunk_ms: u64,
    /// Whether `data: [DONE]` ends the stream; default true.
    #[serde(default = "default_true")]
    pub done: bool,
    /// The `model` written in the frames; default: the request's model (else `sim-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_finish_reason() -> Option<String> {
    Some("stop".to_owned())
}

fn default_chunks() -> u32 {
    8
}

fn default_true() -> bool {
    true
}

impl Default for Completion {
    fn default() -> Self {
        Self {
            content: String::new(),
            reasoning: None,
            reasoning_field: ReasoningField::default(),
            tool_calls: Vec::new(),
            finish_reason: default_finish_reason(),
            usage: UsageSpec::default(),
            usage_frame: UsageFrame::default(),
            chunks: default_chunks(),
            ttft_ms: 0,
            inter_chunk_ms: 0,
            done: true,
            model: None,
        }
    }
}

impl Completion {
    /// A completion of this text with every other field at its default.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// The field that carries reasoning text in deltas and messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningField {
    /// `reasoning_content` (DeepSeek style).
    #[default]
    ReasoningContent,
    /// `reasoning` (OpenRouter style).
    Reasoning,
}

impl ReasoningField {
    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Self::ReasoningContent => "reasoning_content",
            Self::Reasoning => "reasoning",
        }
    }
}

/// One tool call of a completion.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call id; absent sends a tool call without `id` (case 012).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The function name.
    pub name: String,
    /// The function arguments, as raw text (not necessarily valid JSON).
    #[serde(default)]
    pub arguments: String,
}

/// Where a stream's usage goes (spec 15 `usage_frame`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageFrame {
    /// A trailing `{"choices": [], "usage": …}` frame after the finish frame.
    #[default]
    Separate,
    /// `usage` on the finish frame (not sent when there is no finish frame).
    InFinish,
    /// No usage in the stream.
    None,
}

/// The completion's usage: JSON field absent → [`UsageSpec::Computed`], `null` →
/// [`UsageSpec::Omitted`], an object → [`UsageSpec::Given`].
#[derive(Debug, Clone, Default, PartialEq)]
pub enum UsageSpec {
    /// Computed from lengths: tokens = ceil(characters / 4) of the prompt and of the output.
    #[default]
    Computed,
    /// No usage anywhere (non-stream body without `usage`, no usage frame).
    Omitted,
    /// This object, verbatim (`prompt_tokens`, `completion_tokens`, any extra fields).
    Given(serde_json::Map<String, serde_json::Value>),
}

impl UsageSpec {
    /// Whether this is the default (computed) usage.
    pub fn is_computed(&self) -> bool {
        matches!(self, Self::Computed)
    }
}

impl Serialize for UsageSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Computed | Self::Omitted => serializer.serialize_none(),
            Self::Given(m) => m.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for UsageSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match Option::<serde_json::Map<String, serde_json::Value>>::deserialize(deserializer)? {
                None => Self::Omitted,
                Some(m) => Self::Given(m),
            },
        )
    }
}

/// A generated embeddings response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Embedding {
    /// Dimensions of each vector.
    pub dim: u32,
}

/// Per-request fault injection (spec 15 "Faults"). For each scripted request the faults are
/// drawn in table order; the first whose draw falls below its probability applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// RNG seed: the same seed and request order give the same faults.
    #[serde(default)]
    pub seed: u64,
    /// Probability of answering 429 with `Retry-After: retry_after`.
    #[serde(default)]
    pub p_429: f64,
    /// The `Retry-After` value of a 429 fault (a string or a number in JSON); default `"1"`.
    #[serde(default = "default_retry_after", deserialize_with = "string_or_number")]
    pub retry_after: String,
    /// Probability of answering `status_5xx` with a JSON error body.
    #[serde(default)]
    pub p_5xx: f64,
    /// Status of a 5xx fault; default 503.
    #[serde(default = "default_status_5xx")]
    pub status_5xx: u16,
    /// Probability of never sending the status line (`head: hang`).
    #[serde(default)]
    pub p_hang_before_head: f64,
    /// Probability of pausing mid-stream for `stall_ms`.
    #[serde(default)]
    pub p_stall: f64,
    /// Length of a stall, in milliseconds.
    #[serde(default)]
    pub stall_ms: u64,
    /// Probability of ending the stream after half its frames, without finish or `[DONE]`.
    #[serde(default)]
    pub p_truncate: f64,
}

fn default_retry_after() -> String {
    "1".to_owned()
}

fn default_status_5xx() -> u16 {
    503
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(de::Error::custom(format!(
            "`retry_after` must be a string or a number, found {other}"
        ))),
    }
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            seed: 0,
            p_429: 0.0,
            retry_after: default_retry_after(),
            p_5xx: 0.0,
            status_5xx: default_status_5xx(),
            p_hang_before_head: 0.0,
            p_stall: 0.0,
            stall_ms: 0,
            p_truncate: 0.0,
        }
    }
}
