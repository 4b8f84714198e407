//! Tier 1 (05 R-30) of the structured-output re-ask ladder (70 C-10…C-17; 30 G-43; 50 V-50):
//! `structured::ladder::run` over `Governor::begin_ladder_call`, every round a `ChatExecutor`
//! over a `ScriptedWire`, on the paused clock. Conformance rows CF-297…CF-302, CF-311, CF-012.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use exec::{USAGE, delta, done, response, wire_of};
use gateway_core::executor::ChatExecutor;
use gateway_core::governor::CallOptions;
use gateway_core::structured::ladder::{self, LadderOptions};
use gateway_core::structured::{JsonSchemaStrategy, Ladder};
use gateway_core::telemetry::RowInput;
use gateway_ports::request::{ChatRequest, StructuredSpec};
use gateway_ports::{GatewayError, ReasonCode, ResponseMode, StructuredOutputStrategy};
use gateway_testkit::ScriptedWire;
use serde_json::{Value, json};
use support::{Fx, FxBuilder};
use upstream_sim::script::{End, Response};

/// A streamed 200 whose one content delta arrives after `delay_ms`, then finish + usage + DONE.
fn answer(delay_ms: u64, text: &str) -> Response {
    let delta_json = json!({"role": "assistant", "content": text}).to_string();
    response(
        vec![
            delta(delay_ms, &delta_json, None, None),
            delta(0, "{}", Some("stop"), Some(USAGE)),
            done(0),
        ],
        End::Eof,
    )
}

fn structured_request(spec: StructuredSpec) -> ChatRequest {
    let mut r = (*exec::request(ResponseMode::Text, true)).clone();
    r.structured = Some(spec);
    r
}

fn answer_schema() -> StructuredSpec {
    StructuredSpec::Schema {
        name: "answer".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "integer"}},
                       "required": ["answer"]}),
        strict: true,
    }
}

struct Outcome {
    result: Result<ladder::LadderSuccess, GatewayError>,
    stats: Option<gateway_ports::CallStats>,
}

async fn run_ladder(
    fx: &Fx,
    wire: &Arc<ScriptedWire>,
    request: &ChatRequest,
    options: LadderOptions,
) -> Outcome {
    let call = CallOptions::default().with_row_input(Arc::new(RowInput::chat(request)));
    let mut handle = fx.gov.begin_ladder_call(call).unwrap();
    let mut state = Ladder::new(request, options);
    let result = ladder::run(&mut handle, &mut state, |round| {
        ChatExecutor::new(wire.clone(), round)
    })
    .await;
    let stats = result.is_ok().then(|| handle.finish());
    Outcome { result, stats }
}

fn options(max_retries: u32) -> LadderOptions {
    LadderOptions {
        max_retries,
        ..LadderOptions::default()
    }
}

fn body_messages(wire: &ScriptedWire, i: usize) -> Vec<Value> {
    wire.requests()[i].body["messages"]
        .as_array()
        .cloned()
        .unwrap()
}

// covers: C-10, C-15, C-18, G-43, CF-012 (the re-ask round shares the call context: one
// logical_call_id, attempts registered by either round visible in the call's statistics)
#[tokio::test(start_paused = true)]
async fn cf_297_reask_repairs_and_generation_is_the_last_round() {
    let fx = FxBuilder::default().build();
    let wire = wire_of(vec![
        answer(1000, "not json at all"),
        answer(250, r#"{"answer": 1}"#),
    ]);
    let out = run_ladder(&fx, &wire, &structured_request(answer_schema()), options(1)).await;
    let success = out.result.unwrap();
    assert_eq!(success.value, json!({"answer": 1}));
    assert_eq!(success.reasks_used, 1);
    let stats = out.stats.unwrap();
    assert_eq!(stats.attempts, 2, "attempts accumulate across rounds");
    assert_eq!(
        stats.generation_ms, 250,
        "overwritten by the last round, not summed"
    );
    assert_eq!(wire.request_count(), 2);
    fx.gov.quiesce().await;
    let rows = fx.sink.attempts();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r.call.logical_call_id == stats.logical_call_id)
    );
    assert!(fx.sink.terminals().is_empty(), "no terminal row on success");
}

// covers: C-11, C-12, C-8
#[tokio::test(start_paused = true)]
async fn cf_301_cf_302_round_messages_and_feedback() {
    let fx = FxBuilder::default().build();
    let wire = wire_of(vec![
        answer(0, r#"{"answer": "one"}"#),
        answer(0, r#"{"answer": 1}"#),
    ]);
    let request = structured_request(answer_schema());
    run_ladder(&fx, &wire, &request, options(2))
        .await
        .result
        .unwrap();
    // CF-301: round 0 sends the caller's messages unchanged.
    let first = body_messages(&wire, 0);
    assert_eq!(first, vec![json!({"role": "user", "content": "hi"})]);
    // C-8: the injected response_format is in every round's body.
    for i in 0..2 {
        assert_eq!(
            wire.requests()[i].body["response_format"]["type"],
            "json_schema"
        );
    }
    // CF-302: round 1 ends with the bad content exactly and the feedback.
    let second = body_messages(&wire, 1);
    assert_eq!(second.len(), 3);
    assert_eq!(
        second[1],
        json!({"role": "assistant", "content": r#"{"answer": "one"}"#})
    );
    let feedback = second[2]["content"].as_str().unwrap();
    assert_eq!(second[2]["role"], "user");
    assert!(feedback.starts_with(
        "Your previous reply was not valid JSON matching the required schema. Errors: /answer: "
    ));
    assert!(feedback.ends_with(". Reply with ONLY the corrected JSON object."));
}

// covers: C-13, C-17, T-26
#[tokio::test(start_paused = true)]
async fn cf_298_exhaustion_is_result_invalid_with_one_terminal_row() {
    let fx = FxBuilder::default().build();
    let secret_text = "SECRET-MODEL-TEXT not json";
    let wire = wire_of(vec![answer(0, secret_text)]);
    let out = run_ladder(&fx, &wire, &structured_request(answer_schema()), options(2)).await;
    let error = out.result.unwrap_err();
    let Some(details) = error.result_invalid_details() else {
        panic!("expected ResultInvalid, got {error:?}");
    };
    assert_eq!(error.to_string(), "structured output ladder exhausted");
    assert!(details.repair_error.is_some());
    assert_eq!(details.raw_text, secret_text);
    assert_eq!(wire.request_count(), 3, "1 + max_retries rounds");
    fx.gov.quiesce().await;
    let terminals = fx.sink.terminals();
    assert_eq!(terminals.len(), 1, "exactly one terminal row");
    assert_eq!(terminals[0].error_type(), Some("ResultInvalidError"));
    assert_eq!(terminals[0].stats.attempts, 3);
    let fields = gateway_core::telemetry::shape::error_fields(
        gateway_core::telemetry::shape::ErrorInput::Terminal(&error),
        gateway_ports::CallOperation::Chat,
    );
    let text = fields.error.unwrap();
    assert!(text.contains("repair="), "{text}");
    assert!(text.chars().count() < 1200);
    assert!(!text.contains("SECRET-MODEL-TEXT"), "never the raw text");
    assert!(
        fx.sink.attempt_error_types().iter().all(Option::is_none),
        "every round's transport succeeded: attempt rows carry no error"
    );
}

// covers: C-14, V-50
#[tokio::test(start_paused = true)]
async fn c_14_loop_errors_propagate_without_reask() {
    let fx = FxBuilder::default().build();
    // A verdict ResultInvalid (thinking only, cut by length) is not re-asked.
    let think = r#"{"role":"assistant","reasoning_content":"long thought"}"#;
    let wire = wire_of(vec![response(
        vec![delta(0, think, Some("length"), None), done(0)],
        End::Eof,
    )]);
    let out = run_ladder(
        &fx,
        &wire,
        &structured_request(StructuredSpec::Json),
        options(3),
    )
    .await;
    let error = out.result.unwrap_err();
    assert_eq!(error.reason_code(), Some(ReasonCode::LengthWithoutContent));
    assert_eq!(wire.request_count(), 1, "no re-ask, no retry");
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.terminals().len(), 1);
}

// covers: C-15, G-94
#[tokio::test(start_paused = true)]
async fn cf_311_one_deadline_for_the_whole_ladder() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_millis(50)),
        ..FxBuilder::default()
    }
    .build();
    let hang = Response {
        head: upstream_sim::script::Head::Hang,
        ..Response::default()
    };
    let wire = wire_of(vec![answer(0, "bad"), answer(0, "bad"), hang]);
    let out = run_ladder(
        &fx,
        &wire,
        &structured_request(StructuredSpec::Json),
        options(5),
    )
    .await;
    let error = out.result.unwrap_err();
    assert!(
        matches!(error, GatewayError::CallDeadlineExceeded(_)),
        "{error:?}"
    );
    assert_eq!(wire.request_count(), 3, "two bad rounds, then the hang");
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.terminals().len(), 1);
}

/// A strategy that records its use: the escalation of C-11.
struct Named(&'static str, JsonSchemaStrategy);

impl StructuredOutputStrategy for Named {
    fn name(&self) -> &'static str {
        self.0
    }
    fn request_overlay(&self, spec: &StructuredSpec) -> serde_json::Map<String, Value> {
        let mut overlay = self.1.request_overlay(spec);
        overlay.insert("x_strategy".into(), json!(self.0));
        overlay
    }
    fn parse(
        &self,
        text: &str,
        spec: &StructuredSpec,
    ) -> Result<Value, gateway_ports::StructuredFailure> {
        self.1.parse(text, spec)
    }
}

// covers: C-11
#[tokio::test(start_paused = true)]
async fn c_11_escalation_strategy_for_every_later_round() {
    let fx = FxBuilder::default().build();
    let wire = wire_of(vec![
        answer(0, "nope"),
        answer(0, "still nope"),
        answer(0, r#"{"ok": true}"#),
    ]);
    let opts = LadderOptions {
        strategy: Arc::new(Named("first", JsonSchemaStrategy)),
        escalation: Some(Arc::new(Named("escalated", JsonSchemaStrategy))),
        max_retries: 2,
    };
    run_ladder(&fx, &wire, &structured_request(StructuredSpec::Json), opts)
        .await
        .result
        .unwrap();
    let used: Vec<Value> = wire
        .requests()
        .iter()
        .map(|r| r.body["x_strategy"].clone())
        .collect();
    assert_eq!(
        used,
        [json!("first"), json!("escalated"), json!("escalated")]
    );
}

// covers: C-9, C-17 (each round's rows carry that round's messages; sampling never holds the
// injected response_format)
#[tokio::test(start_paused = true)]
async fn c_9_c_17_rows_carry_round_messages_and_caller_sampling() {
    let fx = FxBuilder::default().build();
    let wire = wire_of(vec![answer(0, "x"), answer(0, r#"{"a": 1}"#)]);
    let mut request = structured_request(StructuredSpec::Json);
    request.overlay.insert("temperature".into(), json!(0.5));
    request
        .overlay
        .insert("response_format".into(), json!({"type": "text"}));
    run_ladder(&fx, &wire, &request, options(1))
        .await
        .result
        .unwrap();
    // C-8: the caller's response_format is replaced by the injection.
    assert_eq!(
        wire.requests()[0].body["response_format"],
        json!({"type": "json_object"})
    );
    fx.gov.quiesce().await;
    let rows = fx.sink.attempts();
    let inputs: Vec<&RowInput> = rows
        .iter()
        .map(|r| r.call.input.as_deref().unwrap())
        .collect();
    assert_eq!(
        inputs[0].sampling["response_format"],
        json!({"type": "text"})
    );
    assert_eq!(inputs[0].sampling["temperature"], json!(0.5));
    let messages = |i: &RowInput| match &i.subject {
        gateway_core::telemetry::RowSubject::SharedChat { request } => request.messages.len(),
        gateway_core::telemetry::RowSubject::Chat { messages } => messages.len(),
        _ => 0,
    };
    assert_eq!((messages(inputs[0]), messages(inputs[1])), (1, 3));
}

// covers: C-16 (structured_max_retries = 0: no re-ask), C-7 (`Json` requires an object)
#[tokio::test(start_paused = true)]
async fn c_16_zero_retries_means_one_round() {
    let fx = FxBuilder::default().build();
    let wire = wire_of(vec![answer(0, "[1, 2]"), answer(0, r#"{"a": 1}"#)]);
    let out = run_ladder(
        &fx,
        &wire,
        &structured_request(StructuredSpec::Json),
        options(0),
    )
    .await;
    let error = out.result.unwrap_err();
    let details = error.result_invalid_details().unwrap();
    assert_eq!(
        details.validation_errors,
        ["/: expected a JSON object, got an array"]
    );
    assert_eq!(wire.request_count(), 1);
}
