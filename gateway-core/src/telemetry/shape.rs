//! Row shaping: facts → the 39-field `TelemetryRow`.
//!
//! [`RowShaper`] owns every value decision a row carries — per-kind values (attempt, terminal,
//! cache hit), cost from the price table, caller dimensions, `sampling` and effort — and
//! composes the pieces kept in sibling files:
//! - `super::text`: the text cap, message digests, `messages` writers, canonical JSON;
//! - `super::error_columns`: the five error columns from one pure function;
//! - `super::input`: the call-level [`RowInput`] the facade attaches to a call.
//!
//! Everything here is synchronous, allocation-bounded and never fails or panics on any input,
//! so the emitter can build rows on the call path and hand them off without awaiting I/O.
//! The items of those files are re-exported here, so `telemetry::shape::…` paths stay as they
//! were before the split (issue 14).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use gateway_ports::{
    CallOperation, ConfigError, EventKind, PricingTable, TelemetryRow, ThinkingObservation, Usage,
    UsageSource,
};

pub use super::error_columns::{ErrorFields, ErrorInput, error_fields, error_text};
use super::error_columns::{apply_errors, is_ocr};
pub use super::input::{ChatRowRequest, RowInput, RowSubject};
pub use super::text::{
    EMBED_TEXT_CHARS, MAX_ERROR_CHARS, MAX_FEEDBACK_ERRORS, TEXT_CAP_KEY, canonical_json,
    cap_messages, cap_text, cut_chars, digest_messages, embed_response_placeholder,
    format_bounded_errors, ocr_layout_placeholder, validate_text_cap,
};
use super::text::{
    canonical_merged, canonical_meta, canonical_object, chat_messages_json, embed_text,
    messages_json, ocr_marker, user_message,
};
use crate::redact::ScrubOptions;
use crate::rows::{
    AttemptRowFacts, AttemptRowOutcome, CacheHitRowFacts, RowCall, TerminalOutcome,
    TerminalRowFacts,
};

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

/// The input of a call that carries none: every field empty.
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
    call.input.as_deref().unwrap_or(&EMPTY_INPUT)
}

#[cfg(test)]
mod tests {
    use gateway_ports::{ChatRequest, JsonObject};
    use serde_json::{Value, json};

    use super::*;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
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
}
