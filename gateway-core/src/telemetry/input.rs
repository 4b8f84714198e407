//! Call-level row inputs: what the facade hands the emitter for "the call's" columns
//! (80 T-12): the subject (`messages`), sampling intent, effort, tenant, meta and caller ids.
//!
//! A [`RowInput`] travels typed, as `Arc<RowInput>`, in `CallOptions::row_input` and
//! `RowCall::input`: governance carries it without reading it, and a value of another type does
//! not compile (before issue 14 it was an `Arc<dyn Any>` and a wrong type silently gave rows with
//! empty messages). It depends on nothing but the port types, so `crate::rows` can name it
//! without a cycle.

use std::sync::{Arc, OnceLock};

use gateway_ports::{ChatRequest, Effort, EmbedRequest, JsonObject, Meta, OcrRequest};

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
///
/// The input is typed: a call carries an `Arc<RowInput>` or nothing.
///
/// ```
/// use std::sync::Arc;
/// use gateway_core::governor::CallOptions;
/// use gateway_core::telemetry::RowInput;
/// let _ = CallOptions::default().with_row_input(Arc::new(RowInput::default()));
/// ```
///
/// A value of any other type does not compile (it used to be accepted as `Arc<dyn Any>` and
/// gave rows with empty messages):
///
/// ```compile_fail
/// use std::sync::Arc;
/// use gateway_core::governor::CallOptions;
/// let _ = CallOptions::default().with_row_input(Arc::new(7_usize));
/// ```
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
    /// `messages` JSON of attempt rows, computed once per cap (the shaper's cache).
    pub(super) attempt_messages: OnceLock<(Option<usize>, String)>,
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
