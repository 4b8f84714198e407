//! Structured output end to end (tier 2, 05 R-30): `GatewayClient::chat` with
//! `ChatOptions::structured` against `upstream-sim` on 127.0.0.1 — the re-ask ladder over real
//! sockets (70 C-2, C-3, C-8, C-10…C-19), `chat_json`, and the builder options.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::client_support;

use std::sync::Arc;

use client_support::{chat_env, sim, sim_completion};
use polygateway::{
    ChatOptions, GatewayClient, GatewayError, JsonSchemaStrategy, ResponseMode, SourceConfig,
    StructuredSpec,
};
use serde_json::{Value, json};
use upstream_sim::SimHandle;

fn answer_spec() -> StructuredSpec {
    StructuredSpec::Schema {
        name: "Answer".into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "integer"}},
                       "required": ["answer"], "additionalProperties": false}),
        strict: true,
    }
}

/// A sequence of completions with these contents (the last repeats).
fn sim_contents(contents: &[&str]) -> SimHandle {
    let responses: Vec<Value> = contents
        .iter()
        .map(|c| json!({"completion": {"content": c, "chunks": 2}}))
        .collect();
    sim(&json!({"version": 1, "responses": responses}).to_string())
}

fn bodies(sim: &SimHandle) -> Vec<Value> {
    sim.requests()
        .into_iter()
        .map(|r| r.body.unwrap_or(Value::Null))
        .collect()
}

// covers: C-10, C-11, C-15, C-18, CF-297 (tier 2)
#[tokio::test]
async fn c_10_ladder_repairs_by_reask_over_the_simulator() {
    let sim = sim_contents(&["not json at all", r#"{"answer": 1}"#]);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    let response = client
        .chat("what is one?", ChatOptions::new().structured(answer_spec()))
        .await
        .unwrap();
    assert_eq!(response.structured_data, Some(json!({"answer": 1})));
    assert_eq!(response.content, r#"{"answer": 1}"#);
    let stats = response.call_stats.as_ref().unwrap();
    assert_eq!(stats.attempts, 2);
    let sent = bodies(&sim);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "Answer",
            "schema": answer_spec_schema(), "strict": true}})
    );
    let second = sent[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 3);
    assert_eq!(second[1]["content"], "not json at all");
    assert!(
        second[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("Your previous reply was not valid JSON")
    );
    client.close().await;
}

fn answer_spec_schema() -> Value {
    match answer_spec() {
        StructuredSpec::Schema { schema, .. } => schema,
        StructuredSpec::Json => Value::Null,
    }
}

// covers: C-13, C-16 (PGW_STRUCTURED_MAX_RETRIES on the env path)
#[tokio::test]
async fn c_13_exhaustion_over_the_simulator() {
    let sim = sim_contents(&["{\"answer\": \"one\"}"]);
    let env = chat_env(&sim, &[("PGW_STRUCTURED_MAX_RETRIES", "1")]);
    let client = GatewayClient::from_env_map("LLM", &env).unwrap();
    let outcome = client
        .chat_outcome("q", ChatOptions::new().structured(answer_spec()))
        .await;
    assert_eq!(outcome.attempts, 2);
    let error = outcome.result.unwrap_err();
    assert_eq!(error.to_string(), "structured output ladder exhausted");
    let details = error.result_invalid_details().unwrap();
    assert!(details.validation_errors[0].starts_with("/answer: "));
    assert_eq!(details.raw_text, "{\"answer\": \"one\"}");
    assert_eq!(sim.request_count(), 2);
    client.close().await;
}

// covers: C-2 step 1, C-3, C-19
#[tokio::test]
async fn c_2_c_3_c_19_modes() {
    let sim = sim_completion(r#"{"content":"{\"a\": 1}"}"#);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    // C-2 step 1: fidelity mode + structured → InvalidArgument before any I/O.
    let r = client
        .chat(
            "q",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .structured(StructuredSpec::Json),
        )
        .await;
    assert!(matches!(r, Err(GatewayError::InvalidArgument(_))), "{r:?}");
    assert_eq!(sim.request_count(), 0);
    // C-3: no structured → pass-through, no response_format, structured_data None.
    let r = client.chat("q", ChatOptions::new()).await.unwrap();
    assert_eq!(r.structured_data, None);
    assert!(bodies(&sim)[0].get("response_format").is_none());
    // C-19: fidelity mode with a raw response_format overlay: no parsing, no re-ask.
    let mut overlay = serde_json::Map::new();
    overlay.insert("response_format".into(), json!({"type": "json_object"}));
    let r = client
        .chat(
            "q",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .overlay(overlay),
        )
        .await
        .unwrap();
    assert_eq!(r.structured_data, None);
    assert_eq!(sim.request_count(), 2);
    assert_eq!(bodies(&sim)[1]["response_format"]["type"], "json_object");
    client.close().await;
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Answer {
    answer: i64,
}

// covers: chat_json (typed answers beyond the original), C-18
#[tokio::test]
async fn chat_json_decodes_the_validated_value() {
    let sim = sim_contents(&["```json\n{\"answer\": 42}\n```"]);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    let (answer, response) = client
        .chat_json::<Answer>("q", ChatOptions::new())
        .await
        .unwrap();
    assert_eq!(answer, Answer { answer: 42 });
    assert_eq!(response.structured_data, Some(json!({"answer": 42})));
    assert_eq!(
        bodies(&sim)[0]["response_format"],
        json!({"type": "json_object"})
    );
    // A value that validates as an object but is not an `Answer` is ResultInvalid.
    let sim2 = sim_contents(&["{\"other\": 1}"]);
    let client2 = GatewayClient::from_env_map("LLM", &chat_env(&sim2, &[])).unwrap();
    let e = client2
        .chat_json::<Answer>("q", ChatOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::ResultInvalid(_)), "{e:?}");
    assert!(!e.to_string().contains("other"));
    client.close().await;
    client2.close().await;
}

fn builder_source(sim: &SimHandle) -> SourceConfig {
    let mut s = SourceConfig::new(
        "sim_1",
        "sim",
        sim.base_url(),
        Some(polygateway::Secret::new(client_support::KEY.to_owned())),
        "sim-model",
    );
    s.timeout_s = 10.0;
    s
}

// covers: C-11 (escalation), C-16 (builder option), C-5 (builder strategy)
#[tokio::test]
async fn builder_strategy_escalation_and_retries() {
    let sim = sim_contents(&["<think>hmm</think>{\"answer\": 1}"]);
    let transport: Arc<dyn gateway_ports::ChatTransport> = Arc::new(
        polygateway::OpenAiTransport::new(
            &[builder_source(&sim)],
            polygateway::TransportOptions::default(),
        )
        .unwrap(),
    );
    // JsonSchemaStrategy is strict: the think block fails it; no re-ask allowed.
    let strict = GatewayClient::builder()
        .sources(vec![builder_source(&sim)])
        .transport(Arc::clone(&transport))
        .structured_strategy(Arc::new(JsonSchemaStrategy))
        .structured_max_retries(0)
        .build()
        .unwrap();
    let e = strict
        .chat("q", ChatOptions::new().structured(answer_spec()))
        .await
        .unwrap_err();
    assert!(e.result_invalid_details().unwrap().repair_error.is_some());
    assert_eq!(sim.request_count(), 1);
    // With a repairing escalation the second round succeeds.
    let escalating = GatewayClient::builder()
        .sources(vec![builder_source(&sim)])
        .transport(transport)
        .structured_strategy(Arc::new(JsonSchemaStrategy))
        .escalation_strategy(Arc::new(polygateway::JsonRepairStrategy))
        .structured_max_retries(1)
        .build()
        .unwrap();
    let r = escalating
        .chat("q", ChatOptions::new().structured(answer_spec()))
        .await
        .unwrap();
    assert_eq!(r.structured_data, Some(json!({"answer": 1})));
    assert_eq!(sim.request_count(), 3);
    strict.close().await;
    escalating.close().await;
}

// covers: C-1 (`StructuredSpec::of::<T>()` behind the `schemars` feature)
#[cfg(feature = "schemars")]
#[test]
fn c_1_spec_of_type() {
    use polygateway::SchemaOf;
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct CityFact {
        city: String,
        population: u64,
    }
    let spec = StructuredSpec::of::<CityFact>();
    let StructuredSpec::Schema {
        name,
        schema,
        strict,
    } = &spec
    else {
        panic!("{spec:?}");
    };
    assert_eq!((name.as_str(), *strict), ("CityFact", true));
    assert_eq!(schema["properties"]["city"]["type"], "string");
    assert!(gateway_core::structured::check_spec(&spec).is_ok());
}
