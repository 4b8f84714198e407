//! The OpenAI wire shapes of `pgw serve`: request validation (OpenAI-shaped 400s naming the
//! field), `chat.completion`, `chat.completion.chunk`, embeddings lists and error bodies.

use std::borrow::Cow;

use base64::Engine as _;
use polygateway::{EmbeddingResponse, ErrorReport, GatewayError, JsonObject, LlmResponse};
use serde_json::{Map, Value, json};

/// An HTTP error in OpenAI's shape: `{"error":{"message","type","code","param",
/// "reason_code","retry_after_s"}}` plus the status and an optional `Retry-After`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// The `error` object.
    pub body: Value,
    /// Seconds for `Retry-After` (rounded up), when the error has a hint.
    pub retry_after_s: Option<f64>,
}

impl ApiError {
    /// A request problem (`invalid_request_error`) naming `param`.
    pub fn invalid(param: Option<&str>, message: impl Into<String>) -> Self {
        Self::plain(
            400,
            "invalid_request_error",
            "invalid_request",
            param,
            message,
        )
    }

    /// An error with a fixed OpenAI `type` and `code`.
    pub fn plain(
        status: u16,
        kind: &str,
        code: &str,
        param: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            body: json!({"error": {
                "message": message.into(),
                "type": kind,
                "code": code,
                "param": param,
                "reason_code": null,
                "retry_after_s": null,
            }}),
            retry_after_s: None,
        }
    }

    /// The gateway's error: `type` is the gateway type name, `code` its reason code (or the
    /// scope reason), `retry_after_s` the hint.
    /// `attempts`: the upstream requests the call made, when known.
    pub fn gateway(error: &GatewayError, attempts: Option<u32>) -> Self {
        let mut report = ErrorReport::from(error);
        if let Some(n) = attempts {
            report = report.with_attempts(n);
        }
        let s = &report.error;
        let status = status_for(error, s.scope_reason);
        let retry_after_s = s.retry_after_s.filter(|v| v.is_finite() && *v >= 0.0);
        let code = s.reason_code.or(s.scope_reason);
        Self {
            status,
            body: json!({"error": {
                "message": s.message,
                "type": s.error_type,
                "code": code,
                "param": null,
                "reason_code": s.reason_code,
                "scope_reason": s.scope_reason,
                "retry_after_s": retry_after_s,
                "http_status": s.http_status,
                "attempts": attempts,
            }}),
            retry_after_s,
        }
    }
}

/// The HTTP status of a gateway error.
fn status_for(error: &GatewayError, scope_reason: Option<&str>) -> u16 {
    match error {
        GatewayError::InvalidArgument(_) => 400,
        GatewayError::RequestRejected(_) => match error.http_status() {
            Some(s @ 400..=499) if s != 401 && s != 403 && s != 429 => s,
            _ => 400,
        },
        GatewayError::AllSourcesExhausted(_)
        | GatewayError::CircuitOpen(_)
        | GatewayError::GovernanceBackend(_) => {
            if scope_reason == Some("quota_full") {
                429
            } else {
                503
            }
        }
        GatewayError::CallDeadlineExceeded(_) => 504,
        GatewayError::ClientClosed => 503,
        GatewayError::ResultInvalid(_) | GatewayError::Committed(_) => 502,
        _ => 500,
    }
}

/// A validated chat request.
#[derive(Debug, Clone)]
pub struct ChatBody {
    /// The `model` as sent.
    pub model: String,
    /// The messages.
    pub messages: Vec<JsonObject>,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// Everything else (sampling, tools, …), passed to the upstream as the overlay.
    pub overlay: JsonObject,
}

/// Keys the server consumes itself or never forwards (`user` identifies the end user to
/// OpenAI; the tenant comes from the caller key here).
const NOT_FORWARDED: &[&str] = &["model", "messages", "stream", "stream_options", "n", "user"];

fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid(
            None,
            "the request body must be a JSON object",
        )),
        // serde_json's message says what is wrong and where (`expected value at line 1 column
        // 2`, `recursion limit exceeded …`, `invalid unicode code point …`); it quotes none of
        // the body.
        Err(e) => Err(ApiError::invalid(
            None,
            format!("the request body is not valid JSON: {e}"),
        )),
    }
}

fn model_of(map: &Map<String, Value>) -> Result<String, ApiError> {
    match map.get("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => Ok(m.clone()),
        Some(_) => Err(ApiError::invalid(
            Some("model"),
            "`model` must be a non-empty string",
        )),
        None => Err(ApiError::invalid(
            Some("model"),
            "you must provide a model parameter",
        )),
    }
}

/// Validates a `/v1/chat/completions` body.
pub fn parse_chat(body: &[u8]) -> Result<ChatBody, ApiError> {
    let mut map = object(body)?;
    let model = model_of(&map)?;
    // Taken out of the body, not copied: the messages move into the request as they are.
    let messages = match map.remove("messages") {
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut out = Vec::with_capacity(items.len());
            for (i, m) in items.into_iter().enumerate() {
                let Value::Object(m) = m else {
                    let param = format!("messages[{i}]");
                    return Err(ApiError::invalid(
                        Some(&param),
                        format!("`{param}` must be an object"),
                    ));
                };
                match m.get("role") {
                    Some(Value::String(r)) if !r.is_empty() => {}
                    _ => {
                        let param = format!("messages[{i}]");
                        return Err(ApiError::invalid(
                            Some(&format!("{param}.role")),
                            format!("`{param}.role` must be a non-empty string"),
                        ));
                    }
                }
                out.push(m);
            }
            out
        }
        Some(Value::Array(_)) => {
            return Err(ApiError::invalid(
                Some("messages"),
                "`messages` must not be empty",
            ));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some("messages"),
                "`messages` must be an array",
            ));
        }
        None => {
            return Err(ApiError::invalid(
                Some("messages"),
                "missing required parameter: `messages`",
            ));
        }
    };
    let stream = match map.get("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ApiError::invalid(
                Some("stream"),
                "`stream` must be a boolean",
            ));
        }
    };
    let include_usage = match map.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => {
            if !stream {
                return Err(ApiError::invalid(
                    Some("stream_options"),
                    "`stream_options` is only allowed when `stream` is true",
                ));
            }
            match o.get("include_usage") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => {
                    return Err(ApiError::invalid(
                        Some("stream_options.include_usage"),
                        "`stream_options.include_usage` must be a boolean",
                    ));
                }
            }
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some("stream_options"),
                "`stream_options` must be an object",
            ));
        }
    };
    match map.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {}
        Some(_) => return Err(ApiError::invalid(Some("n"), "only `n` = 1 is supported")),
    }
    for key in [
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
    ] {
        if let Some(v) = map.get(key).filter(|v| !v.is_null())
            && !v.is_number()
        {
            return Err(ApiError::invalid(
                Some(key),
                format!("`{key}` must be a number"),
            ));
        }
    }
    for key in ["max_tokens", "max_completion_tokens"] {
        if let Some(v) = map.get(key).filter(|v| !v.is_null())
            && v.as_u64().is_none_or(|n| n == 0)
        {
            return Err(ApiError::invalid(
                Some(key),
                format!("`{key}` must be a positive integer"),
            ));
        }
    }
    let overlay = map
        .into_iter()
        .filter(|(k, _)| !NOT_FORWARDED.contains(&k.as_str()))
        .collect();
    Ok(ChatBody {
        model,
        messages,
        stream,
        include_usage,
        overlay,
    })
}

/// A validated embeddings request.
#[derive(Debug, Clone)]
pub struct EmbedBody {
    /// The `model` as sent.
    pub model: String,
    /// The texts.
    pub texts: Vec<String>,
    /// `encoding_format` is `base64`.
    pub base64: bool,
}

/// Validates a `/v1/embeddings` body (`input`: a string or an array of strings).
pub fn parse_embed(body: &[u8]) -> Result<EmbedBody, ApiError> {
    let map = object(body)?;
    let model = model_of(&map)?;
    let texts = match map.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                match v {
                    Value::String(s) => out.push(s.clone()),
                    _ => {
                        return Err(ApiError::invalid(
                            Some("input"),
                            format!(
                                "`input[{i}]` must be a string (token arrays are not supported)"
                            ),
                        ));
                    }
                }
            }
            out
        }
        Some(Value::Array(_)) => {
            return Err(ApiError::invalid(
                Some("input"),
                "`input` must not be empty",
            ));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                Some("input"),
                "`input` must be a string or an array of strings",
            ));
        }
        None => {
            return Err(ApiError::invalid(
                Some("input"),
                "missing required parameter: `input`",
            ));
        }
    };
    let base64 = match map.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(_) => {
            return Err(ApiError::invalid(
                Some("encoding_format"),
                "`encoding_format` must be `float` or `base64`",
            ));
        }
    };
    Ok(EmbedBody {
        model,
        texts,
        base64,
    })
}

/// The `usage` object of a response (the upstream's snapshot, else built from the counts), as a
/// value for a streamed chunk.
pub fn usage_json(response: &LlmResponse) -> Value {
    // Numbers and a borrowed JSON map always serialise; `Null` is never reached.
    serde_json::to_value(UsageOut::of(response)).unwrap_or(Value::Null)
}

/// The `finish_reason` of a response (`stop` when none was reported).
pub fn finish_of(response: &LlmResponse) -> &str {
    response
        .completion
        .as_ref()
        .and_then(|c| c.finish_reason())
        .or_else(|| response.finish_reason.as_ref().map(|f| f.as_str()))
        .unwrap_or("stop")
}

/// The response `id`: the upstream's, else one derived from the call id.
pub fn response_id(response: &LlmResponse) -> Cow<'_, str> {
    match response.completion.as_ref().and_then(|c| c.response_id()) {
        Some(id) => Cow::Borrowed(id),
        None => Cow::Owned(format!("chatcmpl-{}", response.call_id)),
    }
}

/// The `model` reported back: the upstream's, else the configured one.
pub fn model_of_response(response: &LlmResponse) -> &str {
    response
        .model_reported
        .as_deref()
        .unwrap_or(&response.model)
}

/// A `chat.completion` body, serialised in one pass from borrowed parts of the response (no
/// `Value` tree and no copy of the message: building one was about a tenth of a request's
/// instructions in `pgw serve`).
///
/// Errors: only if `serde_json` cannot write the body, which borrowed strings, numbers and
/// JSON maps never cause; the caller answers 500 then.
pub fn completion_body(response: &LlmResponse, created: u64) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&CompletionOut {
        id: response_id(response),
        object: "chat.completion",
        created,
        model: model_of_response(response),
        choices: [ChoiceOut {
            index: 0,
            message: MessageOut::of(response),
            logprobs: None,
            finish_reason: finish_of(response),
        }],
        usage: UsageOut::of(response),
        system_fingerprint: None,
    })
}

#[derive(serde::Serialize)]
struct CompletionOut<'a> {
    id: Cow<'a, str>,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [ChoiceOut<'a>; 1],
    usage: UsageOut<'a>,
    system_fingerprint: Option<()>,
}

#[derive(serde::Serialize)]
struct ChoiceOut<'a> {
    index: u32,
    message: MessageOut<'a>,
    logprobs: Option<()>,
    finish_reason: &'a str,
}

/// The assistant message: the upstream's snapshot, or built from the text.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum MessageOut<'a> {
    Upstream(&'a Map<String, Value>),
    Text {
        role: &'static str,
        content: &'a str,
    },
}

impl<'a> MessageOut<'a> {
    fn of(response: &'a LlmResponse) -> Self {
        match &response.completion {
            Some(c) => Self::Upstream(c.message()),
            None => Self::Text {
                role: "assistant",
                content: &response.content,
            },
        }
    }
}

/// The usage object: the upstream's snapshot, or built from the counts.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum UsageOut<'a> {
    Upstream(&'a Map<String, Value>),
    Counted {
        prompt_tokens: u64,
        completion_tokens: u64,
        total_tokens: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        completion_tokens_details: Option<ReasoningOut>,
    },
}

impl<'a> UsageOut<'a> {
    fn of(response: &'a LlmResponse) -> Self {
        if let Some(u) = response.completion.as_ref().and_then(|c| c.usage()) {
            return Self::Upstream(u);
        }
        let u = &response.usage;
        Self::Counted {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.prompt_tokens.saturating_add(u.completion_tokens),
            completion_tokens_details: u
                .reasoning_tokens
                .map(|reasoning_tokens| ReasoningOut { reasoning_tokens }),
        }
    }
}

#[derive(serde::Serialize)]
struct ReasoningOut {
    reasoning_tokens: u64,
}

/// The `tool_calls` of the response's message (empty when none).
pub fn tool_calls_of(response: &LlmResponse) -> Vec<Value> {
    response
        .completion
        .as_ref()
        .and_then(|c| c.message().get("tool_calls"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// An embeddings list body (`{"object":"list","data":[…],"model":…,"usage":…}`), written
/// straight from the response's vectors in one pass.
///
/// Why not a `serde_json::Value`: a tree of a large batch (1 000 inputs × 3 072 dimensions)
/// held one boxed `f64` per element, about 30 times the upstream body, and its `f64` text of
/// each `f32` (`-0.3499999940395355` for `-0.35`) made the answer three times the upstream's.
/// Each element is written as the shortest text that reads back as the same `f32`, and base64
/// as the little-endian `f32` bytes the OpenAI SDKs decode.
///
/// # Errors
/// A serialisation error (not expected: every value is a finite number or a string).
pub fn embeddings_body(
    response: &EmbeddingResponse,
    model: &str,
    base64: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    use serde::ser::{SerializeMap as _, SerializeSeq as _};

    struct Vector<'a> {
        values: &'a [f32],
        base64: bool,
    }
    impl serde::Serialize for Vector<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            if self.base64 {
                let bytes: Vec<u8> = self.values.iter().flat_map(|x| x.to_le_bytes()).collect();
                s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                let mut seq = s.serialize_seq(Some(self.values.len()))?;
                for x in self.values {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
        }
    }
    struct Item<'a> {
        index: usize,
        vector: Vector<'a>,
    }
    impl serde::Serialize for Item<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(3))?;
            map.serialize_entry("object", "embedding")?;
            map.serialize_entry("index", &self.index)?;
            map.serialize_entry("embedding", &self.vector)?;
            map.end()
        }
    }
    struct Data<'a> {
        vectors: &'a [Vec<f32>],
        base64: bool,
    }
    impl serde::Serialize for Data<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.vectors.len()))?;
            for (index, values) in self.vectors.iter().enumerate() {
                seq.serialize_element(&Item {
                    index,
                    vector: Vector {
                        values,
                        base64: self.base64,
                    },
                })?;
            }
            seq.end()
        }
    }
    let tokens = response.usage.prompt_tokens;
    let mut out =
        Vec::with_capacity(64 + response.vectors.iter().map(Vec::len).sum::<usize>() * 12);
    let mut ser = serde_json::Serializer::new(&mut out);
    let mut map = serde::Serializer::serialize_map(&mut ser, Some(4))?;
    map.serialize_entry("object", "list")?;
    map.serialize_entry(
        "data",
        &Data {
            vectors: &response.vectors,
            base64,
        },
    )?;
    map.serialize_entry("model", model)?;
    map.serialize_entry(
        "usage",
        &json!({"prompt_tokens": tokens, "total_tokens": tokens}),
    )?;
    serde::ser::SerializeMap::end(map)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body is the OpenAI `chat.completion` shape, byte for byte (keys in the SDK's order),
    /// for answers with and without the upstream's snapshot, with and without reasoning tokens.
    #[test]
    fn d33_completion_body_is_the_openai_chat_completion() {
        let mut plain = LlmResponse::default();
        plain.content = "hi \"there\" ✓".to_owned();
        plain.model = "m".to_owned();
        plain.call_id = "c-1".to_owned();
        plain.usage.prompt_tokens = 3;
        plain.usage.completion_tokens = 5;
        let mut reasoning = plain.clone();
        reasoning.usage.reasoning_tokens = Some(2);
        reasoning.model_reported = Some("m-2024".to_owned());
        reasoning.finish_reason = gateway_ports::FinishReason::new("length");
        let message = json!({"role": "assistant", "content": "x", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]});
        let usage = json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3,
                           "prompt_tokens_details": {"cached_tokens": 0}});
        let mut upstream = plain.clone();
        upstream.completion = Some(
            serde_json::from_value(json!({
                "message": message, "finish_reason": "tool_calls",
                "response_id": "chatcmpl-up", "usage": usage,
            }))
            .expect("snapshot"),
        );
        let expected = |id: &str, model: &str, message: Value, finish: &str, usage: Value| {
            json!({
                "id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
                "choices": [{"index": 0, "message": message, "logprobs": null,
                             "finish_reason": finish}],
                "usage": usage, "system_fingerprint": null,
            })
            .to_string()
        };
        let text = json!({"role": "assistant", "content": "hi \"there\" ✓"});
        for (response, want) in [
            (
                &plain,
                expected(
                    "chatcmpl-c-1",
                    "m",
                    text.clone(),
                    "stop",
                    json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}),
                ),
            ),
            (
                &reasoning,
                expected(
                    "chatcmpl-c-1",
                    "m-2024",
                    text,
                    "length",
                    json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8,
                           "completion_tokens_details": {"reasoning_tokens": 2}}),
                ),
            ),
            (
                &upstream,
                expected(
                    "chatcmpl-up",
                    "m",
                    message.clone(),
                    "tool_calls",
                    usage.clone(),
                ),
            ),
        ] {
            let body = completion_body(response, 1_700_000_000).expect("body");
            assert_eq!(String::from_utf8(body).expect("utf-8"), want);
        }
        assert_eq!(
            tool_calls_of(&upstream),
            message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        );
        assert!(tool_calls_of(&plain).is_empty());
    }

    #[test]
    fn d33_bad_chat_bodies_get_openai_shaped_400s_naming_the_field() {
        for (body, param) in [
            (&br#"{"messages":[{"role":"user","content":"x"}]}"#[..], Some("model")),
            (br#"{"model":"llm"}"#, Some("messages")),
            (br#"{"model":"llm","messages":[]}"#, Some("messages")),
            (br#"{"model":"llm","messages":[{"content":"x"}]}"#, Some("messages[0].role")),
            (br#"{"model":"llm","messages":[{"role":"user"}],"stream":"yes"}"#, Some("stream")),
            (br#"{"model":"llm","messages":[{"role":"user"}],"n":2}"#, Some("n")),
            (br#"{"model":"llm","messages":[{"role":"user"}],"temperature":"hot"}"#, Some("temperature")),
            (br#"{"model":"llm","messages":[{"role":"user"}],"stream_options":{"include_usage":true}}"#, Some("stream_options")),
            (br#"[1]"#, None),
            (br#"{"model":"#, None),
        ] {
            let e = parse_chat(body).unwrap_err();
            assert_eq!(e.status, 400);
            assert_eq!(e.body["error"]["type"], "invalid_request_error");
            assert_eq!(e.body["error"]["param"], json!(param), "{}", e.body);
        }
    }

    #[test]
    fn d33_chat_body_overlay_keeps_sampling_and_drops_consumed_keys() {
        let b = parse_chat(
            br#"{"model":"llm","messages":[{"role":"user","content":"x"}],"stream":true,
                "stream_options":{"include_usage":true},"temperature":0.2,"user":"u","n":1}"#,
        )
        .unwrap();
        assert!(b.stream && b.include_usage);
        assert_eq!(b.overlay.keys().collect::<Vec<_>>(), vec!["temperature"]);
    }

    #[test]
    fn d33_embed_body_base64_is_little_endian_f32() {
        let b = parse_embed(br#"{"model":"e","input":"x","encoding_format":"base64"}"#).unwrap();
        assert!(b.base64);
        let mut r = EmbeddingResponse::default();
        r.vectors = vec![vec![1.0, -0.5]];
        let v: Value = serde_json::from_slice(&embeddings_body(&r, "e", true).unwrap()).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v["data"][0]["embedding"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            bytes,
            [1.0f32.to_le_bytes(), (-0.5f32).to_le_bytes()].concat()
        );
        assert!(parse_embed(br#"{"model":"e","input":[[1,2]]}"#).is_err());
    }

    /// The body is the `Value` form's shape, with each `f32` in its shortest text.
    #[test]
    fn d33_embeddings_body_writes_each_f32_in_its_shortest_text() {
        let mut r = EmbeddingResponse::default();
        r.vectors = vec![vec![-0.35, 0.1, 1.0], vec![]];
        r.usage.prompt_tokens = 7;
        let body = embeddings_body(&r, "e", false).unwrap();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[-0.35,0.1,1.0]},{"object":"embedding","index":1,"embedding":[]}],"model":"e","usage":{"prompt_tokens":7,"total_tokens":7}}"#
        );
        let back: Value = serde_json::from_slice(&body).unwrap();
        let first = back["data"][0]["embedding"][0].as_f64().unwrap();
        assert_eq!(first as f32, -0.35f32, "reads back as the same f32");
    }
}
