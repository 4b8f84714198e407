//! Structured output, pure parts (70 C-1…C-13): the strategies' overlay and parse, the repair
//! steps, validation, the entry check, the feedback message, the ladder state machine, and the
//! no-invention / identity properties of repair (proptest).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use gateway_core::structured::ladder::{LadderOptions, exhausted_error};
use gateway_core::structured::repair::{
    balanced_span, drop_trailing_commas, first_fence, repair_candidates, strip_think,
};
use gateway_core::structured::{
    JsonRepairStrategy, JsonSchemaStrategy, Ladder, LadderStep, check_spec, feedback_message,
    inject, validate,
};
use gateway_ports::request::{ChatRequest, StructuredSpec};
use gateway_ports::{GatewayError, StructuredFailure, StructuredOutputStrategy};
use proptest::prelude::*;
use serde_json::{Value, json};

fn schema(schema: Value) -> StructuredSpec {
    StructuredSpec::Schema {
        name: "answer".into(),
        schema,
        strict: true,
    }
}

fn answer_spec() -> StructuredSpec {
    schema(
        json!({"type": "object", "properties": {"answer": {"type": "integer"}},
                  "required": ["answer"]}),
    )
}

// covers: C-5 (the overlay of both strategies)
#[test]
fn c_5_overlays() {
    for strategy in [
        &JsonRepairStrategy as &dyn StructuredOutputStrategy,
        &JsonSchemaStrategy,
    ] {
        assert_eq!(
            Value::Object(strategy.request_overlay(&StructuredSpec::Json)),
            json!({"response_format": {"type": "json_object"}})
        );
        let spec = StructuredSpec::Schema {
            name: "n_1".into(),
            schema: json!({"type": "object"}),
            strict: false,
        };
        assert_eq!(
            Value::Object(strategy.request_overlay(&spec)),
            json!({"response_format": {"type": "json_schema", "json_schema":
                {"name": "n_1", "schema": {"type": "object"}, "strict": false}}})
        );
    }
    assert_eq!(JsonRepairStrategy.name(), "json_repair");
    assert_eq!(JsonSchemaStrategy.name(), "json_schema");
}

// covers: C-5 (JsonSchemaStrategy is strict: no repair; the first parse error is reported)
#[test]
fn c_5_schema_strategy_is_strict() {
    let fenced = "```json\n{\"answer\": 1}\n```";
    let failure = JsonSchemaStrategy
        .parse(fenced, &answer_spec())
        .unwrap_err();
    assert!(failure.validation_errors.is_empty());
    assert!(failure.repair_error.unwrap().contains("line 1"));
    assert_eq!(
        JsonRepairStrategy.parse(fenced, &answer_spec()).unwrap(),
        json!({"answer": 1})
    );
    assert_eq!(
        JsonSchemaStrategy
            .parse("  {\"answer\": 2}\n", &answer_spec())
            .unwrap(),
        json!({"answer": 2})
    );
}

// covers: C-6 (each step, and the order)
#[test]
fn c_6_repair_steps() {
    assert_eq!(strip_think("<think>a { b</think>{\"x\":1}"), "{\"x\":1}");
    assert_eq!(strip_think("reasoning</think> {\"x\":1}"), " {\"x\":1}");
    assert_eq!(strip_think("<think>open"), "<think>open");
    assert_eq!(
        first_fence("see ```json\n{\"a\":1}\n``` and ```{\"b\":2}```"),
        "{\"a\":1}\n"
    );
    assert_eq!(first_fence("```{\"a\":1}```"), "{\"a\":1}");
    assert_eq!(first_fence("```\n[1]"), "[1]");
    assert_eq!(first_fence("no fence"), "no fence");
    assert_eq!(
        balanced_span(r#"Sure: {"a": "}{", "b": {"c": [1]}} trailing }"#, '{'),
        r#"{"a": "}{", "b": {"c": [1]}}"#
    );
    assert_eq!(balanced_span(r#"x {"a": "\"}"} y"#, '{'), r#"{"a": "\"}"}"#);
    assert_eq!(balanced_span("{ never closed", '{'), "{ never closed");
    assert_eq!(balanced_span("pre [1, [2]] post", '['), "[1, [2]]");
    assert_eq!(
        drop_trailing_commas(r#"{"a": [1, 2, ], "b": ",}",}"#),
        r#"{"a": [1, 2 ], "b": ",}"}"#
    );
    // All four, in order.
    let text = "<think>{\"no\": 1}</think>Here:\n```json\nnote {\"answer\": 1,}\n```";
    assert_eq!(
        JsonRepairStrategy.parse(text, &answer_spec()).unwrap(),
        json!({"answer": 1})
    );
    assert_eq!(repair_candidates("{\"a\":1}", false), Vec::<String>::new());
}

// covers: C-6 (an array root looks for `[`), C-7 (`Json` needs an object; `Schema` may be an array)
#[test]
fn c_6_c_7_array_root() {
    let spec = schema(json!({"type": "array", "items": {"type": "integer"}}));
    assert_eq!(
        JsonRepairStrategy
            .parse("The list: [1, 2, 3]. Done {x}", &spec)
            .unwrap(),
        json!([1, 2, 3])
    );
    let failure = JsonRepairStrategy
        .parse("[1, 2]", &StructuredSpec::Json)
        .unwrap_err();
    assert_eq!(
        failure.validation_errors,
        ["/: expected a JSON object, got an array"]
    );
}

// covers: C-5 (no JSON anywhere → repair_error = the first parse error, no validation errors)
#[test]
fn c_5_unrepairable_reports_first_parse_error() {
    let failure = JsonRepairStrategy
        .parse("not json at all", &StructuredSpec::Json)
        .unwrap_err();
    assert!(failure.validation_errors.is_empty());
    assert_eq!(
        failure.repair_error.as_deref(),
        Some("expected ident at line 1 column 2")
    );
}

// covers: C-7 (instance path or '/', validator order; draft 2020-12 and draft-07)
#[test]
fn c_7_validation_errors_render_path_and_message() {
    let spec = schema(json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["answer", "name"]
    }));
    let errors = validate(&json!({"answer": "x", "tags": ["a", 2]}), &spec).unwrap_err();
    assert!(
        errors.iter().any(|e| e.starts_with("/answer: ")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("/tags/1: ")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("/: ") && e.contains("name")),
        "{errors:?}"
    );
    let draft7 = schema(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "exclusiveMinimum": 0}},
        "additionalProperties": false
    }));
    assert!(validate(&json!({"n": 1}), &draft7).is_ok());
    assert!(validate(&json!({"n": 0}), &draft7).is_err());
    assert!(validate(&json!({"n": 1, "m": 2}), &draft7).is_err());
    let draft2020 = schema(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "array",
        "prefixItems": [{"type": "string"}],
        "items": false
    }));
    assert!(validate(&json!(["a"]), &draft2020).is_ok());
    assert!(validate(&json!(["a", 1]), &draft2020).is_err());
}

// covers: C-2 step 3 (schema compiles; name pattern), naming the field
#[test]
fn c_2_entry_check_names_the_field() {
    assert!(check_spec(&StructuredSpec::Json).is_ok());
    assert!(check_spec(&answer_spec()).is_ok());
    let origin = |r: Result<(), GatewayError>| match r {
        Err(GatewayError::InvalidArgument(d)) => d.origin.clone(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    for bad in ["", "has space", "ü", &"x".repeat(65)] {
        let spec = StructuredSpec::Schema {
            name: bad.to_owned(),
            schema: json!({}),
            strict: true,
        };
        assert_eq!(origin(check_spec(&spec)), "ChatRequest::structured.name");
    }
    let ok = StructuredSpec::Schema {
        name: "A-z_09".repeat(10).chars().take(64).collect(),
        schema: json!({}),
        strict: true,
    };
    assert!(check_spec(&ok).is_ok());
    assert_eq!(
        origin(check_spec(&schema(json!({"type": "no-such-type"})))),
        "ChatRequest::structured.schema"
    );
    assert_eq!(
        origin(check_spec(&schema(
            json!({"$ref": "https://example.invalid/s.json"})
        ))),
        "ChatRequest::structured.schema",
        "remote references are never fetched"
    );
}

// covers: C-8 (injection wins over the caller overlay; other keys kept)
#[test]
fn c_8_injection_precedence() {
    let mut request = ChatRequest::default();
    request
        .overlay
        .insert("response_format".into(), json!({"type": "text"}));
    request.overlay.insert("temperature".into(), json!(0));
    let injected = inject(&request, &JsonRepairStrategy, &StructuredSpec::Json);
    assert_eq!(
        injected.overlay["response_format"],
        json!({"type": "json_object"})
    );
    assert_eq!(injected.overlay["temperature"], json!(0));
    assert_eq!(request.overlay["response_format"], json!({"type": "text"}));
}

// covers: C-11, C-12 (exact text, 3 × 200 characters, repair error fallback, empty list)
#[test]
fn c_11_c_12_feedback_message() {
    let prefix = "Your previous reply was not valid JSON matching the required schema. Errors: ";
    let suffix = ". Reply with ONLY the corrected JSON object.";
    let failure = StructuredFailure {
        validation_errors: vec![
            "/a: x".into(),
            "é".repeat(300),
            "/c: z".into(),
            "/d: dropped".into(),
        ],
        repair_error: Some("ignored".into()),
    };
    let expected = format!("{prefix}/a: x; {}; /c: z{suffix}", "é".repeat(200));
    assert_eq!(feedback_message(&failure), expected);
    let repair = StructuredFailure {
        validation_errors: vec![],
        repair_error: Some("expected value at line 1 column 1".into()),
    };
    assert_eq!(
        feedback_message(&repair),
        format!("{prefix}expected value at line 1 column 1{suffix}")
    );
    assert_eq!(
        feedback_message(&StructuredFailure::default()),
        format!("{prefix}output could not be parsed{suffix}")
    );
}

// covers: C-13 (the message carries none of the details)
#[test]
fn c_13_exhausted_error() {
    let e = exhausted_error(
        StructuredFailure {
            validation_errors: vec!["/a: bad".into()],
            repair_error: Some("rep".into()),
        },
        "RAW",
    );
    assert_eq!(e.to_string(), "structured output ladder exhausted");
    let d = e.result_invalid_details().unwrap();
    assert_eq!(d.validation_errors, ["/a: bad"]);
    assert_eq!(d.repair_error.as_deref(), Some("rep"));
    assert_eq!(d.raw_text, "RAW");
    assert_eq!(e.type_name(), "ResultInvalidError");
}

// covers: C-10, C-11, C-16 (the state machine: messages appended, re-asks counted)
#[test]
fn c_10_c_11_ladder_state_machine() {
    let request = ChatRequest {
        structured: Some(StructuredSpec::Json),
        ..ChatRequest::default()
    };
    let mut ladder = Ladder::new(&request, LadderOptions::default());
    assert_eq!(LadderOptions::default().max_retries, 2, "C-16 default");
    assert!(matches!(ladder.judge("nope"), LadderStep::Reask));
    assert_eq!(ladder.plain_request().messages.len(), 2);
    assert_eq!(ladder.plain_request().messages[0]["content"], "nope");
    assert!(matches!(ladder.judge("nope 2"), LadderStep::Reask));
    assert!(matches!(ladder.judge("nope 3"), LadderStep::Exhausted(_)));
    assert_eq!(ladder.reasks_used(), 2);
    let mut ok = Ladder::new(&request, LadderOptions::default());
    match ok.judge("{\"a\": 1}") {
        LadderStep::Done(v) => assert_eq!(v, json!({"a": 1})),
        other => panic!("{other:?}"),
    }
    assert!(ok.round_request().overlay.contains_key("response_format"));
    assert!(!ok.plain_request().overlay.contains_key("response_format"));
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                collect_strings(v, out);
            }
        }
        _ => {}
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z0-9 ,{}\\[\\]\"]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn noise() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[A-Za-z .:!\\n]{0,20}",
        Just("<think>{\"thought\": \"x\"}</think>".to_owned()),
        Just("```json\n".to_owned()),
    ]
}

proptest! {
    // covers: C-6 (no invention): every string of a repaired value occurs in the input.
    #[test]
    fn c_6_repair_never_invents_content(
        value in json_value(),
        before in noise(),
        after in "[A-Za-z .:!\\n`]{0,20}",
        trailing_comma in any::<bool>(),
    ) {
        let mut body = serde_json::to_string(&value).unwrap();
        if trailing_comma && body.ends_with('}') && body.len() > 2 {
            body.insert(body.len() - 1, ',');
        }
        let text = format!("{before}{body}{after}");
        if let Ok(parsed) = JsonRepairStrategy.parse(&text, &StructuredSpec::Json) {
            let mut strings = Vec::new();
            collect_strings(&parsed, &mut strings);
            for s in strings {
                let encoded = serde_json::to_string(&s).unwrap();
                prop_assert!(text.contains(&encoded[1..encoded.len() - 1]),
                    "{s:?} not in {text:?}");
            }
        }
    }

    // covers: C-5, C-6 (a valid input comes back unchanged)
    #[test]
    fn c_6_valid_input_is_unchanged(value in json_value()) {
        let object = json!({"v": value});
        let text = serde_json::to_string_pretty(&object).unwrap();
        prop_assert_eq!(JsonRepairStrategy.parse(&text, &StructuredSpec::Json).unwrap(), object.clone());
        prop_assert_eq!(JsonSchemaStrategy.parse(&text, &StructuredSpec::Json).unwrap(), object);
    }

    // Arbitrary text never panics either strategy.
    #[test]
    fn c_5_parse_is_total(text in "\\PC{0,64}") {
        let _ = JsonRepairStrategy.parse(&text, &StructuredSpec::Json);
        let _ = JsonSchemaStrategy.parse(&text, &StructuredSpec::Json);
    }
}
