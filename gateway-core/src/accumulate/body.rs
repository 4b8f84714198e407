//! The non-stream body: one 200
//! JSON body parsed into the same [`Accumulated`] result as a stream.
//!
//! Order: size cap, BOM, UTF-8 with replacement, empty → `empty_response`, JSON →
//! `invalid_json`; admission (object, in-band `error` key → D15 classifier, usage type); the
//! envelope per mode; null tool elements stripped and ids synthesized for id-less tool calls
//! (key = body id else call_id); projection and `finalize_text`; warnings. The message
//! is otherwise kept verbatim.

use std::borrow::Cow;

use gateway_ports::{FinishReason, ResponseMode, body_text};
use serde_json::{Map, Value};

use super::accumulated::{Accumulated, finalize_text, push_finish_warning, summarize_tools};
use super::error::{AccumulateError, ProtocolViolation};
use super::fast::TextBody;
use super::machine::{model_of, model_text};
use super::options::AccumulateOptions;
use super::parts::read_content_parts;
use super::tools::{synthesized_tool_id, with_id_first};
use super::warnings::DialectWarning;

fn violation<T>(v: ProtocolViolation) -> Result<T, AccumulateError> {
    Err(AccumulateError::Protocol(v))
}

/// Parses a non-stream 200 body (40 S-111 steps 1–6; 05 R-27 for a JSON body answering a
/// streamed request). Errors: `ResponseTooLarge` when `bytes` is longer than
/// `max_response_bytes`; `EmptyResponse`; `InvalidJson` (the body is never echoed);
/// `ErrorFrame` for a top-level `error` key; `Protocol` for envelope defects, including a
/// role other than `assistant` in openai mode, checked before the verdict.
pub fn parse_non_stream_body(
    bytes: &[u8],
    mode: ResponseMode,
    options: &AccumulateOptions,
) -> Result<Accumulated, AccumulateError> {
    if bytes.len() > options.max_response_bytes {
        return Err(AccumulateError::ResponseTooLarge {
            limit_bytes: options.max_response_bytes,
        });
    }
    let text = body_text(bytes);
    if text.trim().is_empty() {
        return Err(AccumulateError::EmptyResponse);
    }
    if mode == ResponseMode::Text
        && let Some(body) = TextBody::read(&text)
    {
        // The common text-mode shapes without building a `Value` (05 R-56); same results.
        let message = body.message;
        let thinking = match &message.reasoning_content {
            Some(r) if !r.is_empty() => r,
            _ => message.reasoning.as_deref().unwrap_or_default(),
        };
        let content = message.content.as_deref().unwrap_or_default();
        let finish = body
            .finish_reason
            .filter(|f| !f.is_empty())
            .map(Cow::into_owned);
        return Ok(assemble(
            Parts {
                mode,
                response_id: body
                    .envelope
                    .id
                    .filter(|id| !id.is_empty())
                    .map(Cow::into_owned),
                model_reported: body.envelope.model.as_deref().and_then(model_text),
                usage_raw: body.envelope.usage,
                message: None,
                synthesized: Vec::new(),
            },
            content,
            thinking,
            finish,
            options,
        ));
    }
    let body: Value = match serde_json::from_str(&text) {
        Ok(body) => body,
        Err(_) => {
            // README D20: a complete JSON answer with `data: [DONE]` appended is that answer.
            let prefix = gateway_ports::json_before_trailing_sse(&text)
                .ok_or(AccumulateError::InvalidJson)?;
            let body: Value =
                serde_json::from_str(prefix).map_err(|_| AccumulateError::InvalidJson)?;
            let mut acc = parse_non_stream_value(&body, mode, options)?;
            acc.warnings.insert(0, DialectWarning::TrailingSse);
            return Ok(acc);
        }
    };
    parse_non_stream_value(&body, mode, options)
}

/// [`parse_non_stream_body`] from step 3 on, for a body already parsed as JSON.
pub fn parse_non_stream_value(
    body: &Value,
    mode: ResponseMode,
    options: &AccumulateOptions,
) -> Result<Accumulated, AccumulateError> {
    let Value::Object(body) = body else {
        return violation(ProtocolViolation::NotObject);
    };
    if let Some(error) = body.get("error") {
        return Err(AccumulateError::ErrorFrame(Box::new(error.clone())));
    }
    let usage_raw = match body.get("usage") {
        None | Some(Value::Null) => None,
        Some(Value::Object(usage)) => Some(usage.clone()),
        Some(_) => return violation(ProtocolViolation::UsageNotObject),
    };
    let response_id = body
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_owned);

    let (mut message, finish) = match mode {
        ResponseMode::Text => text_envelope(body)?,
        ResponseMode::OpenAi => openai_envelope(body)?,
    };

    let mut synthesized = Vec::new();
    if mode == ResponseMode::OpenAi {
        let key = response_id.as_deref().unwrap_or(&options.call_id);
        synthesized = strip_and_synthesize(&mut message, key);
    }
    // README D21: `content` as an array of parts (fidelity mode keeps the raw array).
    let mut part_warnings = Vec::new();
    let parts = match message.get("content") {
        Some(Value::Array(parts)) => {
            let read = read_content_parts(parts).ok_or(AccumulateError::Protocol(
                ProtocolViolation::MessageMalformed,
            ))?;
            for kind in &read.skipped {
                part_warnings.push(DialectWarning::UnknownContentPart { kind: kind.clone() });
            }
            Some(read)
        }
        _ => None,
    };
    for key in ["content", "reasoning_content"] {
        match message.get(key) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(Value::Array(_)) if key == "content" => {}
            Some(_) => return violation(ProtocolViolation::MessageMalformed),
        }
    }

    let content = match &parts {
        Some(read) => read.text.as_str(),
        None => message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    };
    let thinking = match message.get("reasoning_content") {
        Some(Value::String(r)) if !r.is_empty() => r.as_str(),
        _ => match &parts {
            Some(read) if !read.thinking.is_empty() => read.thinking.as_str(),
            _ => message
                .get("reasoning")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        },
    };
    let (content, thinking) = (content.to_owned(), thinking.to_owned());
    // README D22, D27: the refusal text and (text mode) whether tool calls came.
    let refusal = match message.get("refusal") {
        Some(Value::String(refusal)) => refusal.clone(),
        _ => String::new(),
    };
    let tool_calls_in_text = mode == ResponseMode::Text
        && matches!(
            message.get("tool_calls"),
            Some(Value::Array(tools)) if tools.iter().any(|t| !t.is_null())
        );
    let mut acc = assemble(
        Parts {
            mode,
            response_id,
            model_reported: model_of(body),
            usage_raw,
            message: (mode == ResponseMode::OpenAi).then_some(message),
            synthesized,
        },
        &content,
        &thinking,
        finish,
        options,
    );
    acc.warnings.extend(part_warnings);
    acc.refusal = refusal;
    acc.tool_calls_in_text = tool_calls_in_text;
    Ok(acc)
}

/// What both readings of a body hand to [`assemble`].
struct Parts {
    mode: ResponseMode,
    response_id: Option<String>,
    model_reported: Option<String>,
    usage_raw: Option<Map<String, Value>>,
    /// The message (openai mode only).
    message: Option<Map<String, Value>>,
    /// Per tool element, whether its id was synthesized (openai mode only).
    synthesized: Vec<bool>,
}

/// steps 5–6: projection, `finalize_text`, warnings, the tool summary.
fn assemble(
    parts: Parts,
    content: &str,
    thinking: &str,
    finish: Option<String>,
    options: &AccumulateOptions,
) -> Accumulated {
    let (content, thinking) = finalize_text(content, thinking, options.inline_think_tags);
    let mut warnings = Vec::new();
    if parts.synthesized.iter().any(|s| *s) {
        warnings.push(DialectWarning::SynthesizedToolId);
    }
    let finish_reason = finish.and_then(FinishReason::new);
    push_finish_warning(&mut warnings, finish_reason.as_ref());
    let tool_calls = parts
        .message
        .as_ref()
        .map(|message| summarize_tools(message, &parts.synthesized))
        .unwrap_or_default();
    Accumulated {
        mode: parts.mode,
        content,
        thinking,
        finish_seen: finish_reason.is_some(),
        finish_reason,
        response_id: parts.response_id,
        model_reported: parts.model_reported,
        usage_raw: parts.usage_raw,
        usage_after_finish: false,
        message: parts.message,
        tool_calls,
        conflicts: Default::default(),
        warnings,
        refusal: String::new(),
        tool_calls_in_text: false,
    }
}

/// Text mode: `choices[0]` only, its index unchecked.
fn text_envelope(
    body: &Map<String, Value>,
) -> Result<(Map<String, Value>, Option<String>), AccumulateError> {
    let choices = match body.get("choices") {
        None | Some(Value::Null) => return violation(ProtocolViolation::NoChoices),
        Some(Value::Array(choices)) if choices.is_empty() => {
            return violation(ProtocolViolation::NoChoices);
        }
        Some(Value::Array(choices)) => choices,
        Some(_) => return violation(ProtocolViolation::ChoicesMalformed),
    };
    let Some(Value::Object(choice)) = choices.first() else {
        return violation(ProtocolViolation::ChoicesMalformed);
    };
    let message = match choice.get("message") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(message)) => message.clone(),
        Some(_) => return violation(ProtocolViolation::MessageMalformed),
    };
    let finish = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
        .map(str::to_owned);
    Ok((message, finish))
}

/// openai mode (`check_completion_body`).
fn openai_envelope(
    body: &Map<String, Value>,
) -> Result<(Map<String, Value>, Option<String>), AccumulateError> {
    let choices = match body.get("choices") {
        None | Some(Value::Null) => return violation(ProtocolViolation::NoChoices),
        Some(Value::Array(choices)) => choices,
        Some(_) => return violation(ProtocolViolation::ChoicesNotArray),
    };
    let [choice] = choices.as_slice() else {
        return violation(ProtocolViolation::SingleChoiceOnly);
    };
    let Value::Object(choice) = choice else {
        return violation(ProtocolViolation::ChoiceNotObject);
    };
    if let Some(index) = choice.get("index")
        && index.as_u64() != Some(0)
    {
        return violation(ProtocolViolation::ChoiceIndexNotZero);
    }
    let finish = match choice.get("finish_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(f.clone()).filter(|f| !f.is_empty()),
        Some(_) => return violation(ProtocolViolation::FinishReasonNotStringOrNull),
    };
    let Some(Value::Object(message)) = choice.get("message") else {
        return violation(ProtocolViolation::MessageMalformed);
    };
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return violation(ProtocolViolation::RoleNotAssistant);
    }
    Ok((message.clone(), finish))
}

/// step 4 (openai): strips `null` tool elements (none left → `tool_calls: null`), then
/// synthesizes ids for object elements whose `id` is absent, `null` or `""`, slot = the
/// position after stripping. Returns, per remaining element, whether its id was synthesized.
fn strip_and_synthesize(message: &mut Map<String, Value>, key: &str) -> Vec<bool> {
    let Some(Value::Array(tools)) = message.get_mut("tool_calls") else {
        return Vec::new();
    };
    if tools.iter().any(Value::is_null) {
        tools.retain(|t| !t.is_null());
        if tools.is_empty() {
            message.insert("tool_calls".to_owned(), Value::Null);
            return Vec::new();
        }
    }
    tools
        .iter_mut()
        .enumerate()
        .map(|(slot, tool)| {
            let Value::Object(object) = tool else {
                return false;
            };
            let missing = match object.get("id") {
                None | Some(Value::Null) => true,
                Some(Value::String(id)) => id.is_empty(),
                Some(_) => false,
            };
            if missing {
                *object = with_id_first(object, synthesized_tool_id(key, slot));
            }
            missing
        })
        .collect()
}
