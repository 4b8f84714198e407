//! Shared fixtures of the tier-1 executor tests (05 R-30): a `ChatExecutor` over a
//! `ScriptedWire` playing raw SSE writes on the paused tokio clock.
#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test fixtures: a failed setup is a failed test"
)]

use std::sync::Arc;

use gateway_core::accumulate::WarningThrottle;
use gateway_core::attempt::AttemptRunner as _;
use gateway_core::attempt::{AttemptCtx, AttemptOutcome, LegControl, LegSignals, TransportResult};
use gateway_core::executor::{ChatExecutor, ExecutorOptions};
use gateway_ports::{
    AttemptError, Category, ChatRequest, MissingDone, ReasonCode, ResponseMode, SourceConfig,
};
use gateway_testkit::ScriptedWire;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use upstream_sim::script::{End, Head, Headers, RawChunk, Response, Script};

/// `_USAGE` of 95.
pub const USAGE: &str = r#"{"prompt_tokens": 11, "completion_tokens": 7}"#;

/// A source `s1` with these budgets in seconds (`None` = inherit `timeout_s`).
pub fn source_with(timeout_s: f64, ttft_s: Option<f64>, inter_s: Option<f64>) -> SourceConfig {
    let mut s = SourceConfig::new("s1", "test", "http://127.0.0.1:9", None, "m-1");
    s.timeout_s = timeout_s;
    s.ttft_timeout_s = ttft_s;
    s.inter_token_timeout_s = inter_s;
    s
}

/// A source with the default 120 s budgets.
pub fn source() -> SourceConfig {
    source_with(120.0, None, None)
}

/// `data: {frame}\n\n` after `delay_ms`.
pub fn frame(delay_ms: u64, json_text: &str) -> RawChunk {
    RawChunk::text(format!("data: {json_text}\n\n")).after_ms(delay_ms)
}

/// A raw write after `delay_ms`.
pub fn raw(delay_ms: u64, text: &str) -> RawChunk {
    RawChunk::text(text).after_ms(delay_ms)
}

/// `data: [DONE]\n\n`.
pub fn done(delay_ms: u64) -> RawChunk {
    raw(delay_ms, "data: [DONE]\n\n")
}

/// A chunk frame with this delta (and optional finish / usage JSON texts).
pub fn delta(delay_ms: u64, delta: &str, finish: Option<&str>, usage: Option<&str>) -> RawChunk {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    let mut text = format!(
        r#"{{"id":"upstream-1","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]"#
    );
    if let Some(u) = usage {
        text.push_str(&format!(r#","usage":{u}"#));
    }
    text.push('}');
    frame(delay_ms, &text)
}

/// A content delta.
pub fn content(delay_ms: u64, text: &str) -> RawChunk {
    delta(delay_ms, &json!({"content": text}).to_string(), None, None)
}

/// A usage-only frame `{"choices": [], "usage": _USAGE}`.
pub fn usage_only(delay_ms: u64) -> RawChunk {
    frame(delay_ms, &format!(r#"{{"choices":[],"usage":{USAGE}}}"#))
}

/// A 200 response with these raw writes and this end.
pub fn response(chunks: Vec<RawChunk>, end: End) -> Response {
    Response {
        chunks: Some(chunks),
        end,
        ..Response::default()
    }
}

/// A wire answering every request with this response.
pub fn wire_of(responses: Vec<Response>) -> Arc<ScriptedWire> {
    Arc::new(ScriptedWire::new(Script::new(responses)).expect("valid script"))
}

/// A wire answering with these SSE writes then a clean end.
pub fn sse(chunks: Vec<RawChunk>) -> Arc<ScriptedWire> {
    wire_of(vec![response(chunks, End::Eof)])
}

/// A wire that never sends the status line.
pub fn hang_head() -> Arc<ScriptedWire> {
    wire_of(vec![Response {
        head: Head::Hang,
        ..Response::default()
    }])
}

/// A JSON body (non-stream answer), after `delay_ms`.
pub fn json_body(delay_ms: u64, body: &str) -> Arc<ScriptedWire> {
    wire_of(vec![Response {
        headers: Some(Headers::from_pairs([("content-type", "application/json")])),
        chunks: Some(vec![raw(delay_ms, body)]),
        ..Response::default()
    }])
}

/// A chat request in this mode and wire mode.
pub fn request(mode: ResponseMode, stream: bool) -> Arc<ChatRequest> {
    let mut message = Map::new();
    message.insert("role".to_owned(), Value::from("user"));
    message.insert("content".to_owned(), Value::from("hi"));
    let mut r = ChatRequest::new(vec![message]);
    r.stream = stream;
    r.response_mode = mode;
    Arc::new(r)
}

/// One attempt's outcome with what the test observes around it.
pub struct Run {
    pub outcome: AttemptOutcome,
    /// Runtime time the attempt took (paused clock: exact).
    pub elapsed_ms: u128,
    /// The progress counter at the end (05 R-12).
    pub progress: u64,
    pub wire: Arc<ScriptedWire>,
    pub warnings: Arc<WarningThrottle>,
}

impl Run {
    pub fn ok(&self) -> &TransportResult {
        match &self.outcome {
            AttemptOutcome::Success(r) => r,
            other => panic!("expected success, got {other:?}"),
        }
    }

    pub fn err(&self) -> &AttemptError {
        match &self.outcome {
            AttemptOutcome::Failed(e) => e,
            other => panic!("expected failure, got {other:?}"),
        }
    }

    /// Asserts the failure's category and reason code.
    pub fn assert_fails(&self, category: Category, code: ReasonCode) {
        let e = self.err();
        assert_eq!(e.category(), category, "category of {e:?}");
        assert_eq!(e.reason_code(), Some(code), "reason code of {e:?}");
    }

    pub fn message(&self) -> String {
        self.err().to_string()
    }
}

/// Runs one attempt of `request` on `source` over `wire` with a progress receiver.
pub async fn run_on(
    wire: Arc<ScriptedWire>,
    source: SourceConfig,
    request: Arc<ChatRequest>,
) -> Run {
    let warnings = Arc::new(WarningThrottle::new());
    let executor = ChatExecutor::new(wire.clone(), request)
        .with_options(ExecutorOptions::default().with_warnings(warnings.clone()));
    let (signals, rx) = LegSignals::new();
    let ctx = AttemptCtx::new("call-0001", Arc::new(source));
    let start = Instant::now();
    let outcome = executor.run(ctx, Some(signals), LegControl::new()).await;
    Run {
        outcome,
        elapsed_ms: start.elapsed().as_millis(),
        progress: *rx.borrow(),
        wire,
        warnings,
    }
}

/// Text-mode streamed attempt on the default source.
pub async fn run_text(wire: Arc<ScriptedWire>) -> Run {
    run_on(wire, source(), request(ResponseMode::Text, true)).await
}

/// openai-mode streamed attempt on the default source.
pub async fn run_openai(wire: Arc<ScriptedWire>) -> Run {
    run_on(wire, source(), request(ResponseMode::OpenAi, true)).await
}

/// A source with `MISSING_DONE=salvage`.
pub fn salvage_source() -> SourceConfig {
    let mut s = source();
    s.missing_done = MissingDone::Salvage;
    s
}
