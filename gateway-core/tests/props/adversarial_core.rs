//! Adversarial tests of the core's pure layers: accumulation, non-stream bodies, classification,
//! redaction, Retry-After and backoff fed hostile input (arbitrary JSON chunks, absurd indexes,
//! huge numbers, deep nesting, NaN-ish hints, secrets in bodies).
//!
//! Every test asserts the brief's rules: no panic, a typed error, bounded work and memory, and no
//! secret in any Display / Debug / message string (40 S-31, S-34; 05; README D4).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed setup is a failed test"
)]

use std::time::{Duration, SystemTime};

use gateway_core::accumulate::{
    AccumulateError, AccumulateOptions, Accumulator, MAX_TOOL_SLOTS, ProtocolViolation,
    parse_non_stream_body,
};
use gateway_core::backoff::{RetryPolicy, backoff_delay, seconds_to_duration_saturating};
use gateway_core::classify::{ClassifyContext, classify_error_event, classify_http};
use gateway_core::redact::{ScrubOptions, scrub, scrubbed_summary};
use gateway_core::retry_after::parse_retry_after;
use gateway_ports::{ErrorOperation, ResponseMode};
use proptest::prelude::*;
use serde_json::{Value, json};

const KEY: &str = "azk9Q7mZpL2xW8vR4tY6uJ3hN5bC1dF0";

fn options(max_response_bytes: usize) -> AccumulateOptions {
    let mut o = AccumulateOptions::new("call-adv", "src_1");
    o.max_response_bytes = max_response_bytes;
    o
}

fn ctx() -> ClassifyContext<'static> {
    ClassifyContext::new("src_1", ErrorOperation::Chat, SystemTime::UNIX_EPOCH).with_scrub(
        ScrubOptions {
            source_key: Some(KEY),
            redact_ips: true,
            source: None,
        },
    )
}

/// Any JSON value, nested a few levels, biased towards the keys the accumulator reads.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    let keys = prop_oneof![
        Just("index".to_owned()),
        Just("id".to_owned()),
        Just("type".to_owned()),
        Just("content".to_owned()),
        Just("reasoning".to_owned()),
        Just("reasoning_content".to_owned()),
        Just("tool_calls".to_owned()),
        Just("function".to_owned()),
        Just("arguments".to_owned()),
        Just("name".to_owned()),
        Just("role".to_owned()),
        Just("finish_reason".to_owned()),
        Just("usage".to_owned()),
        Just("delta".to_owned()),
        Just("choices".to_owned()),
        Just("error".to_owned()),
        "[a-z]{1,6}",
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// A chunk shaped like a stream chunk, with hostile values inside.
fn chunk() -> impl Strategy<Value = Value> {
    prop_oneof![
        json_value(),
        (json_value(), json_value(), json_value()).prop_map(|(index, delta, finish)| {
            json!({"id": "r1", "choices": [{"index": index, "delta": delta, "finish_reason": finish}]})
        }),
        (json_value(), json_value()).prop_map(|(index, tool)| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "function": tool}
            ]}}]})
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// S-31, S-34: any sequence of JSON chunks, in both modes, never panics — not while pushing,
    /// not at assembly, not in the snapshot — and an error is sticky and typed.
    #[test]
    fn s_34_arbitrary_chunks_never_panic(chunks in prop::collection::vec(chunk(), 0..12), openai in any::<bool>()) {
        let mode = if openai { ResponseMode::OpenAi } else { ResponseMode::Text };
        let mut acc = Accumulator::new(mode, options(1 << 20));
        let mut first_error: Option<AccumulateError> = None;
        for c in &chunks {
            match acc.push_chunk(c) {
                Ok(_) => prop_assert!(first_error.is_none()),
                Err(e) => {
                    if let Some(first) = &first_error {
                        prop_assert_eq!(first, &e);
                    }
                    // The typed error classifies without panicking.
                    let _ = e.classify(&ctx());
                    first_error.get_or_insert(e);
                }
            }
        }
        let _ = acc.raw_message();
        let accumulated = acc.finish();
        if let Some(Err(e)) = accumulated.completion() {
            let _ = e.classify(&ctx());
        }
        let _ = accumulated.usage(false);
    }

    /// S-111: any body bytes never panic; the result is a typed error or an accumulation.
    #[test]
    fn s_111_arbitrary_body_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), openai in any::<bool>()) {
        let mode = if openai { ResponseMode::OpenAi } else { ResponseMode::Text };
        let _ = parse_non_stream_body(&bytes, mode, &options(1 << 20));
    }

    /// S-111: any JSON body never panics.
    #[test]
    fn s_111_arbitrary_json_body_never_panics(body in json_value(), openai in any::<bool>()) {
        let mode = if openai { ResponseMode::OpenAi } else { ResponseMode::Text };
        let bytes = serde_json::to_vec(&body).unwrap();
        if let Ok(acc) = parse_non_stream_body(&bytes, mode, &options(1 << 20)) {
            let _ = acc.completion();
        }
    }

    /// D4, G-33, G-36: any header value never panics and a hint is always finite and > 0.
    #[test]
    fn d4_retry_after_any_value_is_finite_positive_or_none(value in "\\PC{0,40}", ms in "\\PC{0,20}") {
        let headers = vec![
            ("retry-after-ms".to_owned(), ms),
            ("retry-after".to_owned(), value),
        ];
        if let Some(s) = parse_retry_after(&headers, "src_1", SystemTime::UNIX_EPOCH) {
            prop_assert!(s.is_finite() && s > 0.0, "{}", s);
            let _ = seconds_to_duration_saturating(s);
        }
    }

    /// G-36, G-38: any policy, round count, hint and jitter never panic.
    #[test]
    fn g_38_backoff_any_input_never_panics(
        base in any::<f64>(), max in any::<f64>(), rounds in any::<u32>(),
        hint in proptest::option::of(any::<f64>()), jitter in any::<f64>(),
    ) {
        let policy = RetryPolicy { backoff_base_s: base, backoff_max_s: max, ..RetryPolicy::default() };
        let _ = backoff_delay(&policy, rounds, hint, || jitter);
    }

    /// the key never appears in a classified HTTP failure, whole or cut at the end of a
    /// retained body (the adapter keeps `max_error_body_bytes` and may cut inside the key).
    #[test]
    fn r_34_key_never_leaks_from_an_http_failure(pre in "\\PC{0,64}", cut in 6usize..32, status in 100u16..600) {
        let cut_key = &KEY[..cut];
        let body = format!("{pre} Authorization: Bearer {KEY} api-key={KEY} tail {cut_key}");
        let c = classify_http(status, &[], &body, &ctx());
        let text = format!("{} {:?} {:?}", c.failure.message, c.failure, c.clone().into_error());
        prop_assert!(!text.contains(cut_key), "{}", text);
    }
}

#[test]
fn r_34_body_cut_inside_the_key_redacts_the_cut_prefix() {
    let opts = ScrubOptions {
        source_key: Some(KEY),
        redact_ips: false,
        source: None,
    };
    let body = format!("{{\"echo\":\"{}", &KEY[..20]);
    let out = scrub(&body, &opts);
    assert_eq!(out, "{\"echo\":\"<redacted>");
    // Too short to be a key fragment: kept.
    assert_eq!(scrub("ends azk9", &opts), "ends azk9");
    // The summary (head + tail) keeps no fragment either.
    let long = format!("{} {}", "x".repeat(5000), &KEY[..31]);
    assert!(!scrubbed_summary(&long, &opts).contains(&KEY[..8]));
}

#[test]
fn r_34_error_event_with_secrets_is_scrubbed() {
    let data = format!(
        "{{\"error\":{{\"message\":\"bad key {KEY} sk-abcdefghijkl from 10.1.2.3\",\"code\":401}}}}"
    );
    let c = classify_error_event(&data, &ctx());
    let text = format!("{:?} {}", c, c.clone().into_error());
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("sk-abcdefghijkl"), "{text}");
    assert!(!text.contains("10.1.2.3"), "{text}");
}

#[test]
fn d4_nan_ish_retry_after_values() {
    let hint = |v: &str| {
        parse_retry_after(
            &[("retry-after".to_owned(), v.to_owned())],
            "src_1",
            SystemTime::UNIX_EPOCH,
        )
    };
    for v in [
        "NaN",
        "nan",
        "-NaN",
        "inf",
        "-inf",
        "Infinity",
        "1e999",
        "-1e999",
        "0",
        "-0",
        "-5",
        "0x10",
        "1_0",
        "",
        " ",
        "\u{0}",
        "5s",
        "Wed, 99 Oct 2015 07:28:00 GMT",
        "١٢",
    ] {
        assert_eq!(hint(v), None, "{v:?}");
    }
    assert_eq!(hint(" 2.5 "), Some(2.5));
    assert_eq!(hint("1e300"), Some(1e300));
    // A huge hint saturates instead of panicking (G-36).
    assert_eq!(seconds_to_duration_saturating(1e300), Duration::MAX);
}

#[test]
fn r_29_absurd_tool_indexes_are_typed_errors() {
    for (index, expected) in [
        (json!(u64::MAX), ProtocolViolation::TooManyToolCalls),
        (json!(MAX_TOOL_SLOTS), ProtocolViolation::TooManyToolCalls),
        (json!(-1), ProtocolViolation::ToolIndex),
        (json!(1.5), ProtocolViolation::ToolIndex),
        (json!(1e300), ProtocolViolation::ToolIndex),
        (json!("0"), ProtocolViolation::ToolIndex),
        (json!(true), ProtocolViolation::ToolIndex),
    ] {
        let mut acc = Accumulator::new(ResponseMode::OpenAi, options(1 << 20));
        let c = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": "a"}]}}]});
        assert_eq!(
            acc.push_chunk(&c),
            Err(AccumulateError::Protocol(expected)),
            "{index}"
        );
    }
    // The last valid slot works.
    let mut acc = Accumulator::new(ResponseMode::OpenAi, options(1 << 20));
    let c = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": MAX_TOOL_SLOTS - 1, "id": "a"}]}}]});
    assert!(acc.push_chunk(&c).is_ok());
    // Text mode: an absurd index fails on the slot bound only.
    let mut acc = Accumulator::new(ResponseMode::Text, options(1 << 20));
    let c = json!({"choices": [{"delta": {"tool_calls": [{"index": u64::MAX}]}}]});
    assert_eq!(
        acc.push_chunk(&c),
        Err(AccumulateError::Protocol(
            ProtocolViolation::TooManyToolCalls
        ))
    );
}

#[test]
fn r_29_ids_that_never_repeat_hit_the_slot_bound() {
    // Every element has a new id at index 0: D13 opens a new slot each time, up to the bound.
    let mut acc = Accumulator::new(ResponseMode::OpenAi, options(usize::MAX));
    let mut result = Ok(Default::default());
    for i in 0..=MAX_TOOL_SLOTS {
        let c = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": format!("id{i}")}]}}]});
        result = acc.push_chunk(&c);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(
        result,
        Err(AccumulateError::Protocol(
            ProtocolViolation::TooManyToolCalls
        ))
    );
}

#[test]
fn s_67_one_chunk_with_many_indexed_elements_is_linear() {
    // Adversarial: one 16 MiB-capped frame can carry ~10^6 distinct indexes in an unknown array;
    // a linear search per element made that quadratic (minutes of CPU on a runtime worker).
    let n = 20_000;
    let items: Vec<Value> = (0..n).map(|i| json!({"index": i, "t": "x"})).collect();
    let again: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({"index": i, "t": "y"}))
        .collect();
    let mut acc = Accumulator::new(ResponseMode::OpenAi, options(usize::MAX));
    let started = tokio::time::Instant::now();
    let c1 = json!({"choices": [{"index": 0, "delta": {"annotations": items}}]});
    let c2 = json!({"choices": [{"index": 0, "delta": {"annotations": again}}]});
    assert!(acc.push_chunk(&c1).is_ok());
    assert!(acc.push_chunk(&c2).is_ok());
    let message = acc.raw_message().unwrap();
    let merged = message["annotations"].as_array().unwrap();
    assert_eq!(merged.len(), n);
    assert_eq!(merged[7], json!({"index": 7, "t": "xy"}));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn r_29_retained_bytes_cap_is_honoured_for_every_growth_path() {
    let big = "z".repeat(4096);
    let deltas = [
        json!({"content": big}),
        json!({"reasoning_content": big}),
        json!({"reasoning": big}),
        json!({"vendor": {"deep": [big]}}),
        json!({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": big}}]}),
    ];
    for mode in [ResponseMode::OpenAi, ResponseMode::Text] {
        for delta in &deltas {
            let mut acc = Accumulator::new(mode, options(64 * 1024));
            let c = json!({"choices": [{"index": 0, "delta": delta}]});
            let mut failed = None;
            for _ in 0..64 {
                if let Err(e) = acc.push_chunk(&c) {
                    failed = Some(e);
                    break;
                }
            }
            // Text mode retains no unknown fields and no tool calls (S-66, S-73); everything
            // else must hit the cap.
            let unbounded_ok = mode == ResponseMode::Text
                && (delta.get("vendor").is_some() || delta.get("tool_calls").is_some());
            if !unbounded_ok {
                assert_eq!(
                    failed,
                    Some(AccumulateError::ResponseTooLarge {
                        limit_bytes: 64 * 1024
                    }),
                    "{mode:?} {delta}"
                );
            }
        }
    }
}

#[test]
fn s_34_deeply_nested_values_do_not_overflow() {
    // serde_json refuses more than 128 levels when parsing; a value built deeper than the wire
    // allows still merges (recursion is bounded by the value's own depth).
    let mut deep = json!("leaf");
    for _ in 0..120 {
        deep = json!({ "a": deep });
    }
    let mut acc = Accumulator::new(ResponseMode::OpenAi, options(1 << 20));
    let c = json!({"choices": [{"index": 0, "delta": {"vendor": deep}}]});
    assert!(acc.push_chunk(&c).is_ok());
    assert!(acc.push_chunk(&c).is_ok());
    let text = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        parse_non_stream_body(text.as_bytes(), ResponseMode::OpenAi, &options(1 << 20)),
        Err(AccumulateError::InvalidJson)
    );
}

#[test]
fn s_34_huge_numbers_in_usage_are_not_measured_and_never_panic() {
    for usage in [
        json!({"prompt_tokens": 1e300, "completion_tokens": 1}),
        json!({"prompt_tokens": -1, "completion_tokens": 1}),
        json!({"prompt_tokens": u64::MAX, "completion_tokens": u64::MAX}),
        json!({"prompt_tokens": "12", "completion_tokens": 1}),
    ] {
        let mut acc = Accumulator::new(ResponseMode::Text, options(1 << 20));
        assert!(acc.push_chunk(&json!({"usage": usage})).is_ok());
        let accumulated = acc.finish();
        let (u, _) = accumulated.usage(false);
        let _ = u.prompt_tokens.checked_add(u.completion_tokens);
    }
}
