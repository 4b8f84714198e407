//! Rendering: a [`Response`] and the facts of a request become a [`Plan`] — status, headers and a
//! list of timed writes — with no I/O. Completions follow what real OpenAI-compatible upstreams
//! send (spec 40 §2–3): `data: {json}\n\n` frames of `chat.completion.chunk` objects, a finish
//! frame, an optional `choices: []` usage frame and `data: [DONE]\n\n`.
//!
//! Every byte is a function of the script and the request facts (the `created` stamp is the
//! constant [`SIM_CREATED`], ids derive from the request index), so the server and the in-memory
//! wire produce identical bodies.

use std::fmt::Write as _;

use bytes::Bytes;
use serde_json::Value;

use super::plan::push_json_str;
pub use super::plan::{Plan, PlannedWrite, render_error};
use super::types::{Completion, Framing, Response, UsageFrame, UsageSpec};

/// The `created` timestamp written in every generated object (seconds since the epoch).
pub const SIM_CREATED: u64 = 1_700_000_000;

/// The model named when neither the script nor the request names one.
pub const DEFAULT_MODEL: &str = "sim-model";

/// Dimensions of the default embeddings response (spec 15: "a default of 8 dimensions").
pub const DEFAULT_EMBEDDING_DIM: u32 = 8;

/// Which API a request addresses. Paths are accepted with or without the `/v1` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Endpoint {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `POST /v1/embeddings`.
    Embeddings,
    /// `GET /v1/models`.
    Models,
    /// MonkeyOCR `POST /ocr/text`.
    OcrText,
    /// MonkeyOCR `POST /parse`.
    OcrParse,
    /// MonkeyOCR result download `GET /static/sim-r{i}.zip`.
    OcrResult,
    /// MonkeyOCR `GET /health`.
    Health,
    /// Anything else; answered only by responses whose `match.path` names it.
    Other,
}

/// What the simulator needs to know about a request to pick and render a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFacts {
    /// The addressed API.
    pub endpoint: Endpoint,
    /// The request path without the query string, as received.
    pub path: String,
    /// The body's `model`, if it is a string.
    pub model: Option<String>,
    /// Whether the body has `"stream": true`.
    pub stream: bool,
    /// Number of embedding inputs (`input`: a string or a token list is 1, an array of strings or
    /// of token lists is its length); 0 when absent.
    pub input_count: usize,
    /// Characters of prompt text (message contents, or embedding inputs; a token counts as 4
    /// characters), used for computed usage.
    pub prompt_chars: usize,
}

impl RequestFacts {
    /// Facts of a request from its method, path (query allowed) and JSON body (`None` when the
    /// body is empty or not JSON).
    pub fn from_parts(method: &str, path: &str, body: Option<&Value>) -> Self {
        let path = path.split('?').next().unwrap_or_default();
        let endpoint = match (method, normalize_path(path)) {
            ("POST", "/chat/completions") => Endpoint::ChatCompletions,
            ("POST", "/embeddings") => Endpoint::Embeddings,
            ("GET", "/models") => Endpoint::Models,
            ("POST", "/ocr/text") => Endpoint::OcrText,
            ("POST", "/parse") => Endpoint::OcrParse,
            ("GET", "/health") => Endpoint::Health,
            ("GET", p) if super::archive::archive_index(p).is_some() => Endpoint::OcrResult,
            _ => Endpoint::Other,
        };
        let model = body
            .and_then(|b| b.get("model"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let stream = body
            .and_then(|b| b.get("stream"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let input = body.and_then(|b| b.get("input"));
        let input_count = match input {
            Some(Value::String(_)) => 1,
            Some(Value::Array(items))
                if !items.is_empty() && items.iter().all(Value::is_number) =>
            {
                1
            }
            Some(Value::Array(items)) => items.len(),
            _ => 0,
        };
        let mut prompt_chars = 0;
        if let Some(input) = input {
            prompt_chars += text_chars(input);
        }
        if let Some(Value::Array(messages)) = body.and_then(|b| b.get("messages")) {
            for m in messages {
                if let Some(c) = m.get("content") {
                    prompt_chars += text_chars(c);
                }
            }
        }
        Self {
            endpoint,
            path: path.to_owned(),
            model,
            stream,
            input_count,
            prompt_chars,
        }
    }

    /// Facts of a chat completion request for `model` (path `/v1/chat/completions`).
    pub fn chat(model: &str, stream: bool) -> Self {
        Self {
            endpoint: Endpoint::ChatCompletions,
            path: "/v1/chat/completions".to_owned(),
            model: Some(model.to_owned()),
            stream,
            input_count: 0,
            prompt_chars: 0,
        }
    }

    /// Facts of an embeddings request for `model` with `input_count` inputs
    /// (path `/v1/embeddings`).
    pub fn embeddings(model: &str, input_count: usize) -> Self {
        Self {
            endpoint: Endpoint::Embeddings,
            path: "/v1/embeddings".to_owned(),
            model: Some(model.to_owned()),
            stream: false,
            input_count,
            prompt_chars: 0,
        }
    }
}

/// Characters of text in a content value: a string, an array of strings / token lists /
/// `{"text": …}` parts. A token counts as 4 characters.
fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Number(_) => 4,
        Value::Array(items) => items.iter().map(text_chars).sum(),
        Value::Object(part) => part.get("text").map_or(0, text_chars),
        _ => 0,
    }
}

/// A path with the query removed and one leading `/v1` segment stripped (`/v1/models` and
/// `/models` both give `/models`).
pub(crate) fn normalize_path(path: &str) -> &str {
    let path = path.split('?').next().unwrap_or_default();
    match path.strip_prefix("/v1") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    }
}

/// The `GET /v1/models` answer listing these model ids.
pub fn render_models(models: &[String]) -> Plan {
    let mut body = String::from("{\"object\":\"list\",\"data\":[");
    for (i, m) in models.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str("{\"id\":");
        push_json_str(&mut body, m);
        let _ = write!(
            body,
            ",\"object\":\"model\",\"created\":{SIM_CREATED},\"owned_by\":\"upstream-sim\"}}"
        );
    }
    body.push_str("]}");
    Plan::simple(200, "application/json", body)
}

/// Most bytes reserved up front for a generated embeddings body (the body may still grow).
const MAX_BODY_RESERVE_BYTES: usize = 16 * 1024 * 1024;

/// An embeddings body: one `dim`-dimensional vector per input (`facts.input_count`), named after
/// the request's model. Vector values are `((7i + 3j) mod 20 − 10) / 20` for input `i`,
/// dimension `j`. Usage: `prompt_tokens = total_tokens = ceil(prompt_chars / 4)`.
pub fn render_embedding(dim: u32, facts: &RequestFacts) -> Plan {
    let model = facts.model.as_deref().unwrap_or(DEFAULT_MODEL);
    // Saturating and capped: the reservation is a hint, never an allocation failure.
    let per_input = (dim as usize).saturating_mul(6).saturating_add(48);
    let mut body = String::with_capacity(
        facts
            .input_count
            .saturating_mul(per_input)
            .saturating_add(64)
            .min(MAX_BODY_RESERVE_BYTES),
    );
    body.push_str("{\"object\":\"list\",\"data\":[");
    for i in 0..facts.input_count {
        if i > 0 {
            body.push(',');
        }
        let _ = write!(
            body,
            "{{\"object\":\"embedding\",\"index\":{i},\"embedding\":["
        );
        for j in 0..dim as usize {
            if j > 0 {
                body.push(',');
            }
            let k = ((i * 7 + j * 3) % 20) as f64;
            push_json_f64(&mut body, (k - 10.0) / 20.0);
        }
        body.push_str("]}");
    }
    body.push_str("],\"model\":");
    push_json_str(&mut body, model);
    let tokens = facts.prompt_chars.div_ceil(4);
    let _ = write!(
        body,
        ",\"usage\":{{\"prompt_tokens\":{tokens},\"total_tokens\":{tokens}}}}}"
    );
    Plan::simple(200, "application/json", body)
}

/// Renders one scripted response for a request (the shared core of the server and of
/// gateway-core's `ScriptedWire`).
///
/// `request_index` is the 0-based number of the request among those the script answered; it
/// makes completion ids distinct (`chatcmpl-sim-<index>`). The body kind decides the body:
/// `completion` renders SSE when `facts.stream` else a JSON body; `embedding` one vector per
/// input; `chunks` the raw writes; none of them an empty body. The content type defaults to the
/// body kind's (`text/event-stream`, `application/json`) when the script's headers lack one; raw
/// bodies get only the script's headers.
pub fn render(response: &Response, facts: &RequestFacts, request_index: u64) -> Plan {
    render_at(response, facts, request_index, 0)
}

/// [`render`] for the script's response number `response_index` (an `ocr` response's
/// `/parse` answer names its archive by that index).
pub fn render_at(
    response: &Response,
    facts: &RequestFacts,
    request_index: u64,
    response_index: usize,
) -> Plan {
    let mut plan = if let Some(o) = &response.ocr {
        match facts.endpoint {
            Endpoint::OcrParse => super::ocr::render_parse(o, response_index),
            _ => super::ocr::render_text(o),
        }
    } else if let Some(c) = &response.completion {
        render_completion(c, facts, request_index)
    } else if let Some(e) = &response.embedding {
        render_embedding(e.dim, facts)
    } else {
        let writes: Vec<PlannedWrite> = response
            .chunks
            .iter()
            .flatten()
            .map(|c| PlannedWrite {
                delay_ms: c.delay_ms,
                bytes: c.bytes.clone(),
            })
            .collect();
        let n = writes.len();
        Plan {
            headers: Vec::new(),
            writes,
            frames_before_finish: n,
            ..Plan::simple(200, "", String::new())
        }
    };
    let default_ct = plan
        .headers
        .iter()
        .find(|(n, _)| n == "content-type")
        .map(|(_, v)| v.clone());
    plan.headers = match &response.headers {
        Some(h) => h.0.clone(),
        None => Vec::new(),
    };
    if let Some(ct) = default_ct
        && !plan
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        plan.headers.push(("content-type".to_owned(), ct));
    }
    plan.status = response.status;
    plan.framing = response.framing;
    plan.head = response.head;
    plan.head_delay_ms = response.head_delay_ms;
    plan.end = response.end;
    plan
}

/// Splits `s` into at most `n` pieces of (nearly) equal character counts, never inside a
/// character. An empty string gives no pieces.
fn split_even(s: &str, n: u32) -> Vec<&str> {
    let offsets: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    let chars = offsets.len();
    let k = chars.min(n.max(1) as usize);
    (0..k)
        .map(|p| {
            let start = offsets[p * chars / k];
            let end = if p + 1 == k {
                s.len()
            } else {
                offsets[(p + 1) * chars / k]
            };
            &s[start..end]
        })
        .collect()
}

fn push_json_f64(out: &mut String, v: f64) {
    out.push_str(&serde_json::to_string(&v).unwrap_or_default());
}

/// The usage object as JSON text, or `None` when omitted.
fn usage_json(c: &Completion, facts: &RequestFacts) -> Option<String> {
    match &c.usage {
        UsageSpec::Omitted => None,
        UsageSpec::Given(m) => Some(serde_json::to_string(m).unwrap_or_default()),
        UsageSpec::Computed => {
            let prompt = facts.prompt_chars.div_ceil(4);
            let reasoning_chars = c.reasoning.as_deref().map_or(0, |r| r.chars().count());
            let tool_chars: usize = c
                .tool_calls
                .iter()
                .map(|t| t.name.chars().count() + t.arguments.chars().count())
                .sum();
            let completion = (c.content.chars().count() + reasoning_chars + tool_chars).div_ceil(4);
            let mut u = format!(
                "{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{}",
                prompt + completion
            );
            if reasoning_chars > 0 {
                let _ = write!(
                    u,
                    ",\"completion_tokens_details\":{{\"reasoning_tokens\":{}}}",
                    reasoning_chars.div_ceil(4)
                );
            }
            u.push('}');
            Some(u)
        }
    }
}

fn render_completion(c: &Completion, facts: &RequestFacts, request_index: u64) -> Plan {
    let model = c
        .model
        .as_deref()
        .or(facts.model.as_deref())
        .unwrap_or(DEFAULT_MODEL);
    let mut id = String::from("\"chatcmpl-sim-");
    let _ = write!(id, "{request_index}\"");
    let mut model_json = String::new();
    push_json_str(&mut model_json, model);
    let usage = usage_json(c, facts);
    let finish_json = match &c.finish_reason {
        Some(f) => {
            let mut s = String::new();
            push_json_str(&mut s, f);
            s
        }
        None => "null".to_owned(),
    };
    let reasoning_key = c.reasoning_field.key();

    if !facts.stream {
        let mut body = String::with_capacity(256 + c.content.len());
        let _ = write!(
            body,
            "{{\"id\":{id},\"object\":\"chat.completion\",\"created\":{SIM_CREATED},\"model\":{model_json},\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":"
        );
        if c.content.is_empty() && !c.tool_calls.is_empty() {
            body.push_str("null");
        } else {
            push_json_str(&mut body, &c.content);
        }
        if let Some(r) = &c.reasoning {
            let _ = write!(body, ",\"{reasoning_key}\":");
            push_json_str(&mut body, r);
        }
        if !c.tool_calls.is_empty() {
            body.push_str(",\"tool_calls\":[");
            for (i, t) in c.tool_calls.iter().enumerate() {
                if i > 0 {
                    body.push(',');
                }
                body.push('{');
                if let Some(tid) = &t.id {
                    body.push_str("\"id\":");
                    push_json_str(&mut body, tid);
                    body.push(',');
                }
                body.push_str("\"type\":\"function\",\"function\":{\"name\":");
                push_json_str(&mut body, &t.name);
                body.push_str(",\"arguments\":");
                push_json_str(&mut body, &t.arguments);
                body.push_str("}}");
            }
            body.push(']');
        }
        let _ = write!(body, "}},\"finish_reason\":{finish_json}}}]");
        if let Some(u) = &usage {
            let _ = write!(body, ",\"usage\":{u}");
        }
        body.push('}');
        // The whole body arrives after the time the stream would have taken.
        let timed = split_even(c.reasoning.as_deref().unwrap_or(""), c.chunks).len()
            + split_even(&c.content, c.chunks).len()
            + c.tool_calls
                .iter()
                .map(|t| 1 + split_even(&t.arguments, c.chunks).len())
                .sum::<usize>()
            + usize::from(c.finish_reason.is_some());
        let delay_ms = c.ttft_ms.saturating_add(
            c.inter_chunk_ms
                .saturating_mul(timed.saturating_sub(1) as u64),
        );
        let mut plan = Plan::simple(200, "application/json", body);
        plan.writes[0].delay_ms = delay_ms;
        return plan;
    }

    // Streaming: build the frames, each `data: {json}\n\n`.
    let head = format!(
        "data: {{\"id\":{id},\"object\":\"chat.completion.chunk\",\"created\":{SIM_CREATED},\"model\":{model_json},\"choices\":["
    );
    let mut writes: Vec<PlannedWrite> = Vec::new();
    let mut first_delta = true;
    let mut push_delta =
        |writes: &mut Vec<PlannedWrite>, delta_body: &str, finish: &str, usage: Option<&str>| {
            let mut f = String::with_capacity(head.len() + delta_body.len() + 64);
            f.push_str(&head);
            f.push_str("{\"index\":0,\"delta\":{");
            if first_delta {
                f.push_str("\"role\":\"assistant\"");
                if !delta_body.is_empty() {
                    f.push(',');
                }
                first_delta = false;
            }
            f.push_str(delta_body);
            let _ = write!(f, "}},\"finish_reason\":{finish}}}]");
            if let Some(u) = usage {
                let _ = write!(f, ",\"usage\":{u}");
            }
            f.push_str("}\n\n");
            let delay_ms = if writes.is_empty() {
                c.ttft_ms
            } else {
                c.inter_chunk_ms
            };
            writes.push(PlannedWrite {
                delay_ms,
                bytes: Bytes::from(f),
            });
        };
    let mut delta = String::new();
    if let Some(r) = &c.reasoning {
        for piece in split_even(r, c.chunks) {
            delta.clear();
            let _ = write!(delta, "\"{reasoning_key}\":");
            push_json_str(&mut delta, piece);
            push_delta(&mut writes, &delta, "null", None);
        }
    }
    for piece in split_even(&c.content, c.chunks) {
        delta.clear();
        delta.push_str("\"content\":");
        push_json_str(&mut delta, piece);
        push_delta(&mut writes, &delta, "null", None);
    }
    for (i, t) in c.tool_calls.iter().enumerate() {
        delta.clear();
        let _ = write!(delta, "\"tool_calls\":[{{\"index\":{i},");
        if let Some(tid) = &t.id {
            delta.push_str("\"id\":");
            push_json_str(&mut delta, tid);
            delta.push(',');
        }
        delta.push_str("\"type\":\"function\",\"function\":{\"name\":");
        push_json_str(&mut delta, &t.name);
        delta.push_str(",\"arguments\":\"\"}}]");
        push_delta(&mut writes, &delta, "null", None);
        for piece in split_even(&t.arguments, c.chunks) {
            delta.clear();
            let _ = write!(
                delta,
                "\"tool_calls\":[{{\"index\":{i},\"function\":{{\"arguments\":"
            );
            push_json_str(&mut delta, piece);
            delta.push_str("}}]");
            push_delta(&mut writes, &delta, "null", None);
        }
    }
    let frames_before_finish = writes.len();
    if c.finish_reason.is_some() {
        let usage_here = match c.usage_frame {
            UsageFrame::InFinish => usage.as_deref(),
            UsageFrame::Separate | UsageFrame::None => None,
        };
        push_delta(&mut writes, "", &finish_json, usage_here);
    }
    if let (UsageFrame::Separate, Some(u)) = (c.usage_frame, &usage) {
        let f = format!(
            "data: {{\"id\":{id},\"object\":\"chat.completion.chunk\",\"created\":{SIM_CREATED},\"model\":{model_json},\"choices\":[],\"usage\":{u}}}\n\n"
        );
        let delay_ms = if writes.is_empty() { c.ttft_ms } else { 0 };
        writes.push(PlannedWrite {
            delay_ms,
            bytes: Bytes::from(f),
        });
    }
    if c.done {
        let delay_ms = if writes.is_empty() { c.ttft_ms } else { 0 };
        writes.push(PlannedWrite {
            delay_ms,
            bytes: Bytes::from_static(b"data: [DONE]\n\n"),
        });
    }
    Plan {
        headers: vec![("content-type".to_owned(), "text/event-stream".to_owned())],
        framing: Framing::Chunked,
        writes,
        frames_before_finish,
        ..Plan::simple(200, "", String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_even_never_splits_characters() {
        assert_eq!(split_even("", 8), Vec::<&str>::new());
        assert_eq!(split_even("ab", 8), vec!["a", "b"]);
        assert_eq!(split_even("修复方法", 2), vec!["修复", "方法"]);
        assert_eq!(split_even("abcdefghij", 3), vec!["abc", "def", "ghij"]);
    }

    #[test]
    fn normalize_path_strips_one_v1_prefix() {
        assert_eq!(normalize_path("/v1/chat/completions"), "/chat/completions");
        assert_eq!(normalize_path("/chat/completions?x=1"), "/chat/completions");
        assert_eq!(normalize_path("/v1x/models"), "/v1x/models");
    }

    #[test]
    fn request_facts_count_inputs() {
        let body = serde_json::json!({"model": "e", "input": ["a", "bb", "ccc"]});
        let f = RequestFacts::from_parts("POST", "/v1/embeddings", Some(&body));
        assert_eq!(f.endpoint, Endpoint::Embeddings);
        assert_eq!(f.input_count, 3);
        assert_eq!(f.prompt_chars, 6);
        let body = serde_json::json!({"input": [1, 2, 3]});
        assert_eq!(
            RequestFacts::from_parts("POST", "/embeddings", Some(&body)).input_count,
            1
        );
        let body = serde_json::json!({"input": [[1, 2], [3]]});
        assert_eq!(
            RequestFacts::from_parts("POST", "/embeddings", Some(&body)).input_count,
            2
        );
    }
}
