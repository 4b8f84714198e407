//! Row shaping: facts → the 39-field `TelemetryRow`.
//!
//! Owns every value decision a row carries — per-kind values, the error columns (one pure
//! function), cost, caller dimensions, `sampling`, the text cap,
//! the message digest and the terminal input summary. Everything here
//! is synchronous, allocation-bounded and never fails or panics on any input, so the
//! emitter can build rows on the call path and hand them off without awaiting I/O.
//!
//! Call-level inputs (messages, sampling intent, tenant, meta, session) reach the emitter as a
//! [`RowInput`] in the opaque `RowCall::input`: governance never reads them.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use gateway_ports::{
    AttemptError, CallOperation, CauseKind, ChatRequest, ConfigError, Effort, EmbedRequest,
    EventKind, GatewayError, JsonObject, Meta, MetaValue, OcrRequest, PricingTable, TelemetryRow,
    ThinkingObservation, Usage, UsageSource,
};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::json;

use crate::redact::{ScrubOptions, scrubbed_summary};
use crate::rows::{
    AttemptRowFacts, AttemptRowOutcome, CacheHitRowFacts, RowCall, TerminalOutcome,
    TerminalRowFacts,
};

/// The environment key of the text cap.
pub const TEXT_CAP_KEY: &str = "PGW_TELEMETRY_TEXT_CAP";

/// Characters kept of each embedding text in `messages`.
pub const EMBED_TEXT_CHARS: usize = 200;

/// Validation errors kept by [`format_bounded_errors`].
pub const MAX_FEEDBACK_ERRORS: usize = 3;

/// Characters kept of each validation error and of the repair error.
pub const MAX_ERROR_CHARS: usize = 200;

/// Validates the text cap (20 §11.3 C6, §11.6 F4): `Some(0)` is
/// `ConfigError telemetry.text_cap` "text_cap must be > 0 (leave it unset for no truncation)";
/// `None` = no truncation.
pub fn validate_text_cap(cap: Option<usize>) -> Result<Option<usize>, ConfigError> {
    match cap {
        Some(0) => Err(ConfigError::new(
            "telemetry.text_cap",
            TEXT_CAP_KEY,
            "text_cap must be > 0 (leave it unset for no truncation)",
        )),
        other => Ok(other),
    }
}

/// The first `n` characters (Unicode scalar values) of `text`, never splitting a character.
pub fn cut_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => text.get(..at).unwrap_or(text),
        None => text,
    }
}

/// The text cap: a text longer than `cap` characters keeps its first `cap`
/// characters followed by `…(+N chars)`, N = characters removed; `None` or a short text is
/// returned unchanged (borrowed).
pub fn cap_text(text: &str, cap: Option<usize>) -> Cow<'_, str> {
    let Some(cap) = cap else {
        return Cow::Borrowed(text);
    };
    match text.char_indices().nth(cap) {
        None => Cow::Borrowed(text),
        Some((at, _)) => {
            let (head, rest) = text.split_at(at);
            Cow::Owned(format!("{head}…(+{} chars)", rest.chars().count()))
        }
    }
}

/// Canonical JSON: object keys sorted by code point at every depth, no whitespace,
/// numbers as `serde_json` prints them. Equal values give byte-identical text. Written straight
/// from the borrowed value (no sorted copy is built).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    json::write_canonical(&mut out, value);
    out
}

/// `digest_messages`: a new value, the input untouched. Every message keeps all
/// fields; an array `content` keeps its `text` parts and replaces every other part with
/// `{"type": <type>, "sha256": <hex of canonical_json(part)>}`. No raw image is ever stored.
pub fn digest_messages(messages: &[JsonObject]) -> Vec<JsonObject> {
    messages
        .iter()
        .map(|message| {
            let mut out = message.clone();
            if let Some(Value::Array(parts)) = out.get_mut("content") {
                for part in parts.iter_mut() {
                    if part.get("type").and_then(Value::as_str) == Some("text") {
                        continue;
                    }
                    let hash = hex::encode(Sha256::digest(canonical_json(part).as_bytes()));
                    let kind = part.get("type").cloned().unwrap_or(Value::Null);
                    let mut digest = Map::new();
                    digest.insert("type".to_owned(), kind);
                    digest.insert("sha256".to_owned(), Value::String(hash));
                    *part = Value::Object(digest);
                }
            }
            out
        })
        .collect()
}

/// Applies the text cap to messages: each string `content` and the `text` of
/// each `type == "text"` part; other fields (tool arguments, names) are untouched. Builds new
/// values; `None` returns a plain copy.
pub fn cap_messages(messages: &[JsonObject], cap: Option<usize>) -> Vec<JsonObject> {
    let mut out = messages.to_vec();
    if cap.is_none() {
        return out;
    }
    let cap_value = |v: &mut Value| {
        if let Value::String(s) = v
            && let Cow::Owned(capped) = cap_text(s, cap)
        {
            *s = capped;
        }
    };
    for message in &mut out {
        match message.get_mut("content") {
            Some(Value::Array(parts)) => {
                for part in parts.iter_mut() {
                    if part.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(text) = part.get_mut("text")
                    {
                        cap_value(text);
                    }
                }
            }
            Some(content) => cap_value(content),
            None => {}
        }
    }
    out
}

/// `format_bounded_errors`: the first 3 errors, each cut to 200 characters, joined
/// with `"; "`; an empty list renders `output could not be parsed`. Shared with the terminal-row
/// detail.
pub fn format_bounded_errors(errors: &[String]) -> String {
    if errors.is_empty() {
        return "output could not be parsed".to_owned();
    }
    errors
        .iter()
        .take(MAX_FEEDBACK_ERRORS)
        .map(|e| cut_chars(e, MAX_ERROR_CHARS))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a row's error columns are derived from.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ErrorInput<'a> {
    /// No error (success, cache hit).
    None,
    /// A label (`cancelled`, `hedge_cancelled`): never parsed for diagnostics.
    Label(&'a str),
    /// A failed attempt's error; `scrub` removes secrets from its body.
    Attempt(&'a AttemptError, ScrubOptions<'a>),
    /// The error that ended the call (terminal row): no status, cause or body.
    Terminal(&'a GatewayError),
}

/// The five error columns of one row.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ErrorFields {
    /// `error`.
    pub error: Option<String>,
    /// `error_type`.
    pub error_type: Option<&'static str>,
    /// `cause_type`: attempt rows only.
    pub cause_type: Option<CauseKind>,
    /// `http_status_code`: attempt rows only, as received.
    pub http_status_code: Option<i32>,
    /// `error_body`: the scrubbed body summary, empty → `None`; attempt rows only.
    pub error_body: Option<String>,
}

/// The one pure function of 80 T-20: error columns from the row's error input. `operation` is
/// the call site's; OCR rows use the class-prefixed `"<type name>: <message>"`.
pub fn error_fields(input: ErrorInput<'_>, operation: CallOperation) -> ErrorFields {
    match input {
        ErrorInput::None => ErrorFields::default(),
        ErrorInput::Label(label) => ErrorFields {
            error: Some(label.to_owned()),
            ..ErrorFields::default()
        },
        ErrorInput::Attempt(error, scrub) => {
            let failure = error.failure();
            ErrorFields {
                error: Some(error_text(error, error.type_name(), operation)),
                error_type: Some(error.type_name()),
                cause_type: failure.cause,
                http_status_code: failure.http_status.map(i32::from),
                error_body: failure
                    .body_text
                    .as_deref()
                    .map(|body| scrubbed_summary(body, &scrub))
                    .filter(|body| !body.is_empty()),
            }
        }
        ErrorInput::Terminal(error) => {
            let mut text = error_text(error, error.type_name(), operation);
            if let Some(details) = error.result_invalid_details() {
                if let Some(repair) = &details.repair_error {
                    text.push_str(" | repair=");
                    text.push_str(cut_chars(repair, MAX_ERROR_CHARS));
                }
                if !details.validation_errors.is_empty() {
                    text.push_str(" | validation=");
                    text.push_str(&format_bounded_errors(&details.validation_errors));
                }
            }
            ErrorFields {
                error: Some(text),
                error_type: Some(error.type_name()),
                ..ErrorFields::default()
            }
        }
    }
}

/// The `error` text of 80 T-21: the display message, or the type name when it is empty; OCR
/// operations use `"<type name>: <message>"`.
pub fn error_text(
    error: &dyn std::fmt::Display,
    type_name: &'static str,
    operation: CallOperation,
) -> String {
    let message = error.to_string();
    match (is_ocr(operation), message.is_empty()) {
        (_, true) => type_name.to_owned(),
        (true, false) => format!("{type_name}: {message}"),
        (false, false) => message,
    }
}

const fn is_ocr(operation: CallOperation) -> bool {
    matches!(
        operation,
        CallOperation::RecognizeText | CallOperation::ParseLayout
    )
}

/// What the call was about, for the `messages` column.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum RowSubject {
    /// No input recorded: `messages = "[]"`.
    #[default]
    Unknown,
    /// Chat: the call's messages (digested and capped when written).
    Chat {
        /// The request messages.
        messages: Vec<JsonObject>,
    },
    /// Chat over the call's shared request: its `messages`, without a copy (what
    /// [`RowInput::chat`] builds from an `&Arc<ChatRequest>`; issue 9 follow-up).
    SharedChat {
        /// The call's request (immutable once shared).
        request: Arc<ChatRequest>,
    },
    /// Embedding: the texts and the batch size (attempt rows: the texts; terminal rows:
    /// `<embed texts=N batches=M>` and the first batch).
    Embed {
        /// The input texts.
        texts: Vec<String>,
        /// Texts per batch (≥ 1).
        batch_size: usize,
    },
    /// OCR: only the image size is recorded (`<ocr:{kind} image_bytes={len}>`).
    Ocr {
        /// Image size in bytes.
        image_bytes: usize,
    },
}

/// A chat request [`RowInput::chat`] accepts: `&ChatRequest` (the messages are copied into
/// [`RowSubject::Chat`]) or `&Arc<ChatRequest>` (the `Arc` is kept in
/// [`RowSubject::SharedChat`], no copy). Sealed in spirit: only these two shapes are meant.
pub trait ChatRowRequest<'a> {
    /// The request to read the call-level columns from, and the row subject.
    fn chat_subject(self) -> (&'a ChatRequest, RowSubject);
}

impl<'a> ChatRowRequest<'a> for &'a ChatRequest {
    fn chat_subject(self) -> (&'a ChatRequest, RowSubject) {
        (
            self,
            RowSubject::Chat {
                messages: self.messages.clone(),
            },
        )
    }
}

impl<'a> ChatRowRequest<'a> for &'a Arc<ChatRequest> {
    fn chat_subject(self) -> (&'a ChatRequest, RowSubject) {
        (
            self,
            RowSubject::SharedChat {
                request: Arc::clone(self),
            },
        )
    }
}

/// Call-level row inputs (80 T-12 "the call's" columns): what the facade puts in
/// `CallOptions::row_input` / `RowCall::input` for the emitter. Validation of tenant
/// and meta happens before the call, not here.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct RowInput {
    /// What the call was about.
    pub subject: RowSubject,
    /// The caller's sampling intent (chat: the overlay before structured injection);
    /// empty for embedding and OCR.
    pub sampling: JsonObject,
    /// The request-level effort (cache-hit and terminal rows; fallback for failed attempts).
    pub reasoning_effort: Option<Effort>,
    /// Caller session.
    pub session_id: Option<String>,
    /// Caller correlation id.
    pub parent_call_id: Option<String>,
    /// Tenant (`''` when absent).
    pub tenant_id: Option<String>,
    /// Caller meta (canonical JSON, `'{}'` when empty).
    pub meta: Meta,
    /// `messages` JSON of attempt rows, computed once per cap.
    attempt_messages: OnceLock<(Option<usize>, String)>,
}

impl RowInput {
    /// Inputs of a chat call: messages, overlay as the sampling intent, effort and dimensions.
    /// From an `&ChatRequest` the messages are copied; from the call's `&Arc<ChatRequest>` the
    /// input keeps the `Arc` instead ([`RowSubject::SharedChat`]; same rows, no copy).
    pub fn chat<'a>(request: impl ChatRowRequest<'a>) -> Self {
        let (request, subject) = request.chat_subject();
        Self {
            subject,
            sampling: request.overlay.clone(),
            reasoning_effort: request.reasoning_effort,
            session_id: request.session_id.clone(),
            parent_call_id: request.parent_call_id.clone(),
            tenant_id: request.tenant_id.clone(),
            meta: request.meta.clone(),
            attempt_messages: OnceLock::new(),
        }
    }

    /// Inputs of an embedding call with `batch_size` texts per batch.
    pub fn embed(request: &EmbedRequest, batch_size: usize) -> Self {
        Self {
            subject: RowSubject::Embed {
                texts: request.texts.clone(),
                batch_size: batch_size.max(1),
            },
            session_id: request.session_id.clone(),
            parent_call_id: request.parent_call_id.clone(),
            tenant_id: request.tenant_id.clone(),
            meta: request.meta.clone(),
            ..Self::default()
        }
    }

    /// Inputs of an OCR call (`recognize_text` or `parse_layout`; the kind comes from the
    /// row's operation).
    pub fn ocr(request: &OcrRequest) -> Self {
        Self {
            subject: RowSubject::Ocr {
                image_bytes: request.image.len(),
            },
            session_id: request.session_id.clone(),
            parent_call_id: request.parent_call_id.clone(),
            tenant_id: request.tenant_id.clone(),
            meta: request.meta.clone(),
            ..Self::default()
        }
    }

    /// Inputs with this subject and no dimensions.
    pub fn with_subject(subject: RowSubject) -> Self {
        Self {
            subject,
            ..Self::default()
        }
    }
}

/// The `response` placeholder of a successful embedding attempt (chosen).
pub fn embed_response_placeholder(vectors: usize, dim: usize) -> String {
    format!("<embed vectors={vectors} dim={dim}>")
}

/// The `response` placeholder of a successful `parse_layout` attempt (chosen).
pub fn ocr_layout_placeholder(elements: usize, pages: usize) -> String {
    format!("<ocr:layout elements={elements} pages={pages}>")
}

fn user_message(content: String) -> Value {
    let mut m = Map::new();
    m.insert("role".to_owned(), Value::String("user".to_owned()));
    m.insert("content".to_owned(), Value::String(content));
    Value::Object(m)
}

fn ocr_marker(operation: CallOperation, image_bytes: usize) -> String {
    let kind = if operation == CallOperation::ParseLayout {
        "layout"
    } else {
        "text"
    };
    format!("<ocr:{kind} image_bytes={image_bytes}>")
}

fn embed_text(text: &str, cap: Option<usize>) -> String {
    cap_text(cut_chars(text, EMBED_TEXT_CHARS), cap).into_owned()
}

fn messages_json(items: Vec<Value>) -> String {
    let mut out = String::new();
    json::write_value(&mut out, &Value::Array(items));
    out
}

/// The `messages` JSON of a chat call: byte for byte
/// `cap_messages(&digest_messages(messages), cap)` printed compactly, written in one pass over
/// the borrowed messages (no copy of the messages is built).
fn chat_messages_json(messages: &[JsonObject], cap: Option<usize>) -> String {
    let estimate: usize = messages
        .iter()
        .map(|m| match m.get("content") {
            Some(Value::String(s)) => s.len() + 32,
            _ => 64,
        })
        .sum();
    let mut out = String::with_capacity(estimate + 2);
    out.push('[');
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        for (j, (key, value)) in message.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            json::write_str(&mut out, key);
            out.push(':');
            if key == "content" {
                write_chat_content(&mut out, value, cap);
            } else {
                json::write_value(&mut out, value);
            }
        }
        out.push('}');
    }
    out.push(']');
    out
}

/// One message's `content`: a string is capped; in an array, `text` parts keep their
/// (capped) text and every other part becomes its C-47 digest.
fn write_chat_content(out: &mut String, content: &Value, cap: Option<usize>) {
    match content {
        Value::String(text) => json::write_str(out, &cap_text(text, cap)),
        Value::Array(parts) => {
            out.push('[');
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let is_text = part.get("type").and_then(Value::as_str) == Some("text");
                match part {
                    Value::Object(fields) if is_text && cap.is_some() => {
                        out.push('{');
                        for (j, (key, value)) in fields.iter().enumerate() {
                            if j > 0 {
                                out.push(',');
                            }
                            json::write_str(out, key);
                            out.push(':');
                            match value {
                                Value::String(text) if key == "text" => {
                                    json::write_str(out, &cap_text(text, cap));
                                }
                                other => json::write_value(out, other),
                            }
                        }
                        out.push('}');
                    }
                    _ if is_text => json::write_value(out, part),
                    _ => {
                        let hash = hex::encode(Sha256::digest(canonical_json(part).as_bytes()));
                        out.push_str("{\"type\":");
                        json::write_value(out, part.get("type").unwrap_or(&Value::Null));
                        out.push_str(",\"sha256\":");
                        json::write_str(out, &hash);
                        out.push('}');
                    }
                }
            }
            out.push(']');
        }
        other => json::write_value(out, other),
    }
}

/// Process-wide set of models already warned about as unpriced (one warning per
/// unknown model per process, chosen).
fn warn_unknown_model(model: &str) {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let warned = WARNED.get_or_init(|| Mutex::new(HashSet::new()));
    let first = warned
        .lock()
        .map(|mut set| set.insert(model.to_owned()))
        .unwrap_or(false);
    if first {
        tracing::warn!(
            code = "telemetry.unknown_model_price",
            model,
            "model {model:?} is not in the price table; its rows have cost NULL"
        );
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The `meta` column: canonical JSON of the caller's meta, `'{}'` when empty. `Meta`
/// is a `BTreeMap`, so its keys are already in canonical order.
fn canonical_meta(meta: &Meta) -> String {
    if meta.is_empty() {
        return "{}".to_owned();
    }
    let mut out = String::with_capacity(16 * meta.len() + 2);
    out.push('{');
    for (i, (key, value)) in meta.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::write_str(&mut out, key);
        out.push(':');
        match value {
            MetaValue::Str(text) => json::write_str(&mut out, text),
            other => json::write_canonical(&mut out, &other.to_json()),
        }
    }
    out.push('}');
    out
}

/// Canonical JSON of `object`, `None` when empty (the `sampling` column).
fn canonical_object(object: &JsonObject) -> Option<String> {
    canonical_merged(&JsonObject::new(), object)
}

/// Canonical JSON of `base` overlaid by `over` (a key of `over` replaces the same key of
/// `base`), `None` when both are empty: the attempt row's `sampling`, without building
/// the merged map.
fn canonical_merged(base: &JsonObject, over: &JsonObject) -> Option<String> {
    if base.is_empty() && over.is_empty() {
        return None;
    }
    let mut entries: Vec<(&str, &Value)> = Vec::with_capacity(base.len() + over.len());
    entries.extend(base.iter().map(|(k, v)| (k.as_str(), v)));
    entries.extend(over.iter().map(|(k, v)| (k.as_str(), v)));
    // Stable: for a key in both maps the overlay entry sorts after the base entry.
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut unique: Vec<(&str, &Value)> = Vec::with_capacity(entries.len());
    for entry in entries {
        match unique.last_mut() {
            Some(last) if last.0 == entry.0 => *last = entry,
            _ => unique.push(entry),
        }
    }
    let mut out = String::with_capacity(16 * unique.len() + 2);
    json::write_canonical_entries(&mut out, &unique);
    Some(out)
}

/// Strings of owned attempt facts moved into the row instead of copied (`None` = copy).
#[derive(Default)]
struct OwnedTexts {
    call_id: Option<String>,
    content: Option<String>,
    thinking: Option<String>,
    model_reported: Option<Option<String>>,
}

/// Turns row facts into `TelemetryRow`s: holds the price table, the text cap and the
/// scrub setting. Cheap to clone; pure and infallible.
#[derive(Debug, Clone)]
pub struct RowShaper {
    pricing: Option<Arc<PricingTable>>,
    text_cap: Option<usize>,
    redact_ips: bool,
}

impl Default for RowShaper {
    /// No price table, no text cap, IP addresses redacted.
    fn default() -> Self {
        Self {
            pricing: None,
            text_cap: None,
            redact_ips: true,
        }
    }
}

impl RowShaper {
    /// A shaper with this price table (`PGW_PRICING_PATH`), text cap
    /// (`PGW_TELEMETRY_TEXT_CAP`, characters) and `PGW_REDACT_IPS` setting.
    ///
    /// Errors: `ConfigError telemetry.text_cap` for `Some(0)`.
    pub fn new(
        pricing: Option<PricingTable>,
        text_cap: Option<usize>,
        redact_ips: bool,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            pricing: pricing.map(Arc::new),
            text_cap: validate_text_cap(text_cap)?,
            redact_ips,
        })
    }

    /// The text cap in characters.
    pub fn text_cap(&self) -> Option<usize> {
        self.text_cap
    }

    /// Cost of a successful attempt (80 T-30 rules 2–4): `None` for `unavailable`
    /// usage, OCR, an empty model, no price table or an unknown model (warned once per model
    /// per process).
    pub fn cost(
        &self,
        operation: CallOperation,
        model: &str,
        usage: &Usage,
        usage_source: UsageSource,
    ) -> Option<f64> {
        if usage_source == UsageSource::Unavailable || is_ocr(operation) || model.is_empty() {
            return None;
        }
        let table = self.pricing.as_ref()?;
        let cost = table.cost(model, usage);
        if cost.is_none() {
            warn_unknown_model(model);
        }
        cost
    }

    /// The `messages` column of attempt rows.
    fn attempt_messages(&self, input: &RowInput, operation: CallOperation) -> String {
        if let Some((cap, json)) = input.attempt_messages.get()
            && *cap == self.text_cap
        {
            return json.clone();
        }
        let json = match &input.subject {
            RowSubject::Unknown => "[]".to_owned(),
            RowSubject::Chat { messages } => chat_messages_json(messages, self.text_cap),
            RowSubject::SharedChat { request } => {
                chat_messages_json(&request.messages, self.text_cap)
            }
            RowSubject::Embed { texts, .. } => messages_json(
                texts
                    .iter()
                    .map(|t| user_message(embed_text(t, self.text_cap)))
                    .collect(),
            ),
            RowSubject::Ocr { image_bytes } => {
                messages_json(vec![user_message(ocr_marker(operation, *image_bytes))])
            }
        };
        let _ = input.attempt_messages.set((self.text_cap, json.clone()));
        json
    }

    /// The `messages` column of terminal rows: the call's input summary.
    fn terminal_messages(&self, input: &RowInput, operation: CallOperation) -> String {
        match &input.subject {
            RowSubject::Embed { texts, batch_size } => {
                let batches = texts.len().div_ceil(*batch_size.max(&1));
                let mut items = vec![user_message(format!(
                    "<embed texts={} batches={batches}>",
                    texts.len()
                ))];
                items.extend(
                    texts
                        .iter()
                        .take(*batch_size)
                        .map(|t| user_message(embed_text(t, self.text_cap))),
                );
                messages_json(items)
            }
            _ => self.attempt_messages(input, operation),
        }
    }

    /// One attempt row (80 T-12 columns "attempt ✓ / ✗ / ⊘"; T-13..T-16).
    pub fn attempt_row(&self, facts: &AttemptRowFacts) -> TelemetryRow {
        self.build_attempt_row(facts, OwnedTexts::default())
    }

    /// [`attempt_row`](Self::attempt_row) from owned facts: the same row, but the attempt's
    /// `call_id`, response text, thinking and reported model are moved into it instead of
    /// copied (the emitter's path, issue 9 follow-up).
    pub fn attempt_row_owned(&self, mut facts: AttemptRowFacts) -> TelemetryRow {
        let mut owned = OwnedTexts {
            call_id: Some(std::mem::take(&mut facts.call_id)),
            ..OwnedTexts::default()
        };
        if let AttemptRowOutcome::Success(result) = &mut facts.outcome {
            owned.content = Some(std::mem::take(&mut result.content));
            owned.thinking = Some(std::mem::take(&mut result.thinking));
            owned.model_reported = Some(result.model_reported.take());
        }
        self.build_attempt_row(&facts, owned)
    }

    /// `text` capped: the owned string itself when the cap keeps it whole.
    fn capped(&self, owned: Option<String>, borrowed: &str) -> String {
        match owned {
            Some(text) => match cap_text(&text, self.text_cap) {
                Cow::Borrowed(_) => text,
                Cow::Owned(capped) => capped,
            },
            None => cap_text(borrowed, self.text_cap).into_owned(),
        }
    }

    fn build_attempt_row(&self, facts: &AttemptRowFacts, owned: OwnedTexts) -> TelemetryRow {
        let call = &*facts.call;
        let operation = call.operation;
        let input = input_or_default(call);
        let source = &*facts.source;
        let chat = operation == CallOperation::Chat;
        let sampling = if chat {
            canonical_merged(&source.extra_body, &input.sampling)
        } else {
            None
        };
        // 70 C-38: the level that was (or would have been) applied on this source — the
        // request level first, then the source intent (with the ENABLE_THINKING sugar), with
        // `nearest` applied (resolved against the built-in capability table).
        let fallback_effort = if chat {
            crate::effort::row_effort(
                input.reasoning_effort,
                source,
                &crate::thinking::builtin_registry().profile_for(&source.provider),
            )
        } else {
            None
        };
        let key = source.api_key.as_ref().map(|k| k.expose_secret().as_str());
        let scrub = ScrubOptions {
            source_key: key,
            redact_ips: self.redact_ips,
            source: Some(source),
        };
        let OwnedTexts {
            call_id,
            content,
            thinking,
            model_reported,
        } = owned;
        let mut row = TelemetryRow {
            model: source.model.clone(),
            provider: source.provider.clone(),
            source_name: source.name.clone(),
            latency_ms: to_i64(facts.latency_ms),
            sampling,
            reasoning_effort: fallback_effort,
            ..call_row(
                call_id.unwrap_or_else(|| facts.call_id.clone()),
                call,
                input,
                self.attempt_messages(input, operation),
                EventKind::Attempt,
            )
        };
        let errors = match &facts.outcome {
            AttemptRowOutcome::Success(result) => {
                row.response = self.capped(content, &result.content);
                row.thinking = self.capped(thinking, &result.thinking);
                row.prompt_tokens = to_i64(result.usage.prompt_tokens);
                row.completion_tokens = to_i64(result.usage.completion_tokens);
                row.usage_source = result.usage_source;
                row.ttft_ms = result.ttft_ms;
                row.max_inter_token_ms = result.max_inter_token_ms;
                row.cost = self.cost(operation, &source.model, &result.usage, result.usage_source);
                row.cached_prompt_tokens = result.usage.cached_prompt_tokens.map(to_i64);
                row.model_reported =
                    model_reported.unwrap_or_else(|| result.model_reported.clone());
                row.reasoning_tokens = result.usage.reasoning_tokens.map(to_i64);
                row.thinking_observation = Some(result.thinking_observation);
                row.reasoning_effort = if chat { result.applied_effort } else { None };
                if chat {
                    // T-28: the loop's integer values (truncated), only for chat.
                    row.stall_ms = result.stall_ms.map(|ms| ms.max(0.0).trunc() as i64);
                    row.stall_count = result.stall_count.map(i64::from);
                }
                row.stream_end = result.stream_end;
                ErrorFields::default()
            }
            AttemptRowOutcome::Failed(error) => {
                error_fields(ErrorInput::Attempt(error, scrub), operation)
            }
            AttemptRowOutcome::Cancelled(label) => {
                error_fields(ErrorInput::Label(label.as_str()), operation)
            }
        };
        apply_errors(&mut row, errors);
        row
    }

    /// The terminal row of a failed or cancelled call (80 T-12 "terminal_failure", T-17..T-20,
    /// T-26): no source (`''`), no usage, cost NULL, `latency_ms == total_latency_ms`.
    pub fn terminal_row(&self, facts: &TerminalRowFacts) -> TelemetryRow {
        let call = &*facts.call;
        let operation = call.operation;
        let input = input_or_default(call);
        let total = to_i64(facts.stats.total_latency_ms);
        let errors = match &facts.outcome {
            TerminalOutcome::Error(error) => error_fields(ErrorInput::Terminal(error), operation),
            TerminalOutcome::Cancelled => error_fields(ErrorInput::Label("cancelled"), operation),
        };
        let chat = operation == CallOperation::Chat;
        let mut row = TelemetryRow {
            latency_ms: total,
            sampling: if chat {
                canonical_object(&input.sampling)
            } else {
                None
            },
            reasoning_effort: if chat { input.reasoning_effort } else { None },
            attempts: Some(i64::from(facts.stats.attempts)),
            total_latency_ms: Some(total),
            ..call_row(
                facts.call_id.clone(),
                call,
                input,
                self.terminal_messages(input, operation),
                EventKind::TerminalFailure,
            )
        };
        // T-20: a terminal row never carries status, cause or body.
        apply_errors(
            &mut row,
            ErrorFields {
                cause_type: None,
                http_status_code: None,
                error_body: None,
                ..errors
            },
        );
        row
    }

    /// One cache-hit row (80 T-12 "cache_hit"): historic values of the stored response,
    /// `latency_ms 0`, `cost 0.0`, `stream_end`/stall NULL, call-level sampling and effort.
    pub fn cache_hit_row(&self, facts: &CacheHitRowFacts) -> TelemetryRow {
        let call = &*facts.call;
        let input = input_or_default(call);
        let r = &*facts.response;
        TelemetryRow {
            model: r.model.clone(),
            provider: r.provider.clone(),
            source_name: r.source_name.clone(),
            response: cap_text(&r.content, self.text_cap).into_owned(),
            thinking: cap_text(&r.thinking, self.text_cap).into_owned(),
            prompt_tokens: to_i64(r.usage.prompt_tokens),
            completion_tokens: to_i64(r.usage.completion_tokens),
            usage_source: r.usage_source,
            cache_hit: true,
            cost: Some(0.0),
            cached_prompt_tokens: r.usage.cached_prompt_tokens.map(to_i64),
            model_reported: r.model_reported.clone(),
            sampling: canonical_object(&input.sampling),
            reasoning_tokens: r.usage.reasoning_tokens.map(to_i64),
            thinking_observation: Some(r.thinking_observation),
            reasoning_effort: input.reasoning_effort,
            operation: CallOperation::Chat,
            ..call_row(
                facts.call_id.clone(),
                call,
                input,
                self.attempt_messages(input, CallOperation::Chat),
                EventKind::CacheHit,
            )
        }
    }
}

/// The input of a call that carries none (or another type): every field empty.
static EMPTY_INPUT: LazyLock<RowInput> = LazyLock::new(RowInput::default);

/// The call-level part every row shares: ids, tenant, `meta`, scope, operation,
/// `logical_call_id`, `messages` and the row kind; everything measured is empty (no source,
/// usage `unavailable`, latency 0, thinking `unknown`, every nullable column NULL). Each row
/// builder overrides what its kind carries.
fn call_row(
    call_id: String,
    call: &RowCall,
    input: &RowInput,
    messages: String,
    event_kind: EventKind,
) -> TelemetryRow {
    TelemetryRow {
        call_id,
        parent_call_id: input.parent_call_id.clone(),
        session_id: input.session_id.clone(),
        model: String::new(),
        provider: String::new(),
        source_name: String::new(),
        messages,
        response: String::new(),
        thinking: String::new(),
        prompt_tokens: 0,
        completion_tokens: 0,
        usage_source: UsageSource::Unavailable,
        latency_ms: 0,
        ttft_ms: None,
        max_inter_token_ms: None,
        cache_hit: false,
        error: None,
        cost: None,
        cached_prompt_tokens: None,
        model_reported: None,
        sampling: None,
        reasoning_tokens: None,
        tenant_id: input.tenant_id.clone().unwrap_or_default(),
        meta: canonical_meta(&input.meta),
        thinking_observation: Some(ThinkingObservation::Unknown),
        reasoning_effort: None,
        scope: call.scope.clone(),
        operation: call.operation,
        logical_call_id: Some(call.logical_call_id.clone()),
        event_kind,
        http_status_code: None,
        error_type: None,
        cause_type: None,
        error_body: None,
        attempts: None,
        total_latency_ms: None,
        stall_ms: None,
        stall_count: None,
        stream_end: None,
    }
}

/// The call's [`RowInput`], or [`EMPTY_INPUT`] when the call carries none.
fn input_or_default(call: &RowCall) -> &RowInput {
    call.input
        .as_ref()
        .and_then(|input| (**input).downcast_ref::<RowInput>())
        .unwrap_or(&EMPTY_INPUT)
}

fn apply_errors(row: &mut TelemetryRow, errors: ErrorFields) {
    let ErrorFields {
        error,
        error_type,
        cause_type,
        http_status_code,
        error_body,
    } = errors;
    row.error = error;
    row.error_type = error_type;
    row.cause_type = cause_type;
    row.http_status_code = http_status_code;
    row.error_body = error_body;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    /// The one-pass writer gives exactly the bytes of the composed form (digest, cap, print)
    /// for strings, text parts, image parts, odd parts, escapes and every cap.
    // covers: T-35, T-36, C-47
    #[test]
    fn t_35_c_47_one_pass_messages_equal_composed_form() {
        let messages = vec![
            obj(json!({"role": "system", "content": "short"})),
            obj(
                json!({"role": "user", "name": "n\"q", "content": "a longer text with \"quotes\", a \\ and a\nnewline 漢字 🚀"}),
            ),
            obj(json!({"role": "user", "content": [
                {"type": "text", "text": "first part of the text", "extra": 1},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
                {"type": "text", "text": 7},
                {"type": "text"},
                {"kind": "untyped"},
                "bare string part",
                42,
                {"type": 3, "x": null}
            ]})),
            obj(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "function": {"name": "f", "arguments": "{\"a\": \"a very long argument string\"}"}}]}),
            ),
            obj(
                json!({"role": "tool", "tool_call_id": "t1", "content": {"odd": "object content"}}),
            ),
            obj(json!({"role": "user"})),
        ];
        for cap in [None, Some(1), Some(4), Some(10), Some(1000)] {
            let composed = messages_json(
                cap_messages(&digest_messages(&messages), cap)
                    .into_iter()
                    .map(Value::Object)
                    .collect(),
            );
            assert_eq!(chat_messages_json(&messages, cap), composed, "cap {cap:?}");
        }
        assert_eq!(chat_messages_json(&[], None), "[]");
    }

    /// A row input over the shared request gives the same rows as one over a copy.
    // covers: T-12
    #[test]
    fn t_12_shared_chat_request_gives_the_same_rows() {
        let mut request = ChatRequest::new(vec![
            obj(json!({"role": "user", "content": "hello there"})),
            obj(
                json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
            ),
        ]);
        request.overlay = obj(json!({"temperature": 0.2}));
        request.tenant_id = Some("t".into());
        let shared = Arc::new(request.clone());
        let copied = RowInput::chat(&request);
        let kept = RowInput::chat(&shared);
        assert!(matches!(kept.subject, RowSubject::SharedChat { .. }));
        assert!(matches!(copied.subject, RowSubject::Chat { .. }));
        for cap in [None, Some(3)] {
            let shaper = RowShaper::new(None, cap, true).unwrap_or_default();
            assert_eq!(
                shaper.attempt_messages(&kept, CallOperation::Chat),
                shaper.attempt_messages(&copied, CallOperation::Chat)
            );
            assert_eq!(
                shaper.terminal_messages(&kept, CallOperation::Chat),
                shaper.terminal_messages(&copied, CallOperation::Chat)
            );
        }
        assert_eq!(kept.sampling, copied.sampling);
        assert_eq!(kept.tenant_id, copied.tenant_id);
    }

    /// `sampling`: caller keys override `extra_body` keys, keys sorted, `None` when
    /// both are empty; equal to canonical JSON of the merged map.
    // covers: T-13
    #[test]
    fn t_13_merged_sampling_equals_canonical_of_merged_map() {
        let base = obj(json!({"top_p": 0.5, "temperature": 0.9, "z": {"b": 1, "a": [2]}}));
        let over = obj(json!({"temperature": 0.2, "max_tokens": 512, "a": "x"}));
        let mut merged = base.clone();
        for (k, v) in &over {
            merged.insert(k.clone(), v.clone());
        }
        assert_eq!(
            canonical_merged(&base, &over),
            Some(canonical_json(&Value::Object(merged)))
        );
        assert_eq!(
            canonical_merged(&JsonObject::new(), &JsonObject::new()),
            None
        );
        assert_eq!(
            canonical_object(&over).as_deref(),
            Some(r#"{"a":"x","max_tokens":512,"temperature":0.2}"#)
        );
    }

    /// `meta`: canonical JSON of every value kind, `'{}'` when empty.
    // covers: T-34
    #[test]
    fn t_34_meta_written_canonically() {
        let mut meta = Meta::new();
        assert_eq!(canonical_meta(&meta), "{}");
        meta.insert("b".into(), 1i64.into());
        meta.insert("a".into(), "x\"y".into());
        meta.insert("c".into(), MetaValue::Bool(true));
        meta.insert("d".into(), MetaValue::Null);
        let object: Map<String, Value> =
            meta.iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
        assert_eq!(
            canonical_meta(&meta),
            canonical_json(&Value::Object(object))
        );
    }
}
