//! Tests of the telemetry rules of spec 80 on row values: terminal and cache-hit rows,
//! sampling, embedding summaries, result-invalid detail, pricing files, tenant and meta, text
//! caps, and the owned / borrowed row paths.
//!
//! Separate from the conformance rows: these cite the rules, not the table.

use super::*;

#[test]
fn t_12_terminal_row_values() {
    let mut stats = CallStats::new("lcid-1", 3, 1234);
    stats.stall_ms = Some(5);
    let facts = TerminalRowFacts {
        stats,
        ..terminal(chat_call(), TerminalOutcome::Error(exhausted()))
    };
    let row = priced().terminal_row(&facts);
    assert_eq!(
        (
            row.model.as_str(),
            row.provider.as_str(),
            row.source_name.as_str()
        ),
        ("", "", "")
    );
    assert_eq!((row.response.as_str(), row.thinking.as_str()), ("", ""));
    assert_eq!((row.prompt_tokens, row.completion_tokens), (0, 0));
    assert_eq!(
        (row.latency_ms, row.total_latency_ms, row.attempts),
        (1234, Some(1234), Some(3))
    );
    assert_eq!(row.error_type, Some("AllSourcesExhausted"));
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Unknown));
    assert_eq!((row.stall_ms, row.stall_count), (None, None));
    assert_eq!(row.call_id, "term-1");
    let cancelled = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Cancelled));
    assert_eq!(
        (cancelled.error.as_deref(), cancelled.error_type),
        (Some("cancelled"), None)
    );
}

#[test]
fn t_12_cache_hit_row_values() {
    let row = priced().cache_hit_row(&cache_hit(chat_call(), historic()));
    assert!(row.cache_hit);
    assert_eq!((row.latency_ms, row.ttft_ms), (0, None));
    assert_eq!(
        (row.model.as_str(), row.source_name.as_str()),
        ("qwen-max", "openai_1")
    );
    assert_eq!((row.prompt_tokens, row.completion_tokens), (10, 5));
    assert_eq!(row.response, "cached answer");
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Absent));
    assert_eq!(row.operation, CallOperation::Chat);
    assert_eq!(row.call_id, "hit-1");
}

#[test]
fn t_13_sampling_caller_over_extra_body_call_level_elsewhere() {
    let s = priced();
    let att = s.attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    assert_eq!(
        att.sampling.as_deref(),
        Some(r#"{"temperature":0.2,"top_p":0.5}"#)
    );
    let hit = s.cache_hit_row(&cache_hit(chat_call(), historic()));
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(hit.sampling.as_deref(), Some(r#"{"temperature":0.2}"#));
    assert_eq!(term.sampling, hit.sampling);
    // Nothing on either side → NULL.
    let bare = call_with(
        CallOperation::Chat,
        RowInput::chat(&ChatRequest::new(vec![])),
    );
    let plain = Arc::new(SourceConfig::new(
        "s_1",
        "p",
        "http://127.0.0.1:9",
        None,
        "m",
    ));
    let row = s.attempt_row(&attempt(
        bare,
        plain,
        AttemptRowOutcome::Success(Box::new(ok_result(1, 1))),
    ));
    assert_eq!(row.sampling, None);
}

// covers: T-15
#[test]
fn t_19_embed_terminal_summary() {
    let texts: Vec<String> = (0..5).map(|i| format!("{i}{}", "x".repeat(300))).collect();
    let call = call_with(
        CallOperation::Embed,
        RowInput::embed(&EmbedRequest::new(texts), 2),
    );
    let row = priced().terminal_row(&terminal(call.clone(), TerminalOutcome::Error(exhausted())));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["content"], "<embed texts=5 batches=3>");
    assert_eq!(items[1]["content"].as_str().unwrap().chars().count(), 200);
    let att = priced().attempt_row(&attempt(
        call,
        src("e"),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(
        serde_json::from_str::<Value>(&att.messages)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[test]
fn t_20_terminal_never_carries_status_cause_or_body() {
    let mut f = AttemptFailure::new("HTTP 400", ErrorOperation::Chat);
    f.http_status = Some(400);
    f.cause = Some(CauseKind::ReadError);
    f.body_text = Some("bad".into());
    let e = GatewayError::request_rejected(f);
    let row = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Error(e)));
    assert_eq!(
        (row.http_status_code, row.cause_type, row.error_body),
        (None, None, None)
    );
    assert_eq!(row.error_type, Some("RequestRejectedError"));
    assert_eq!(
        error_fields(ErrorInput::Label("cancelled"), CallOperation::Chat),
        ErrorFields {
            error: Some("cancelled".into()),
            ..ErrorFields::default()
        }
    );
    assert_eq!(
        error_fields(ErrorInput::None, CallOperation::Chat),
        ErrorFields::default()
    );
}

#[test]
fn t_26_result_invalid_terminal_detail() {
    let mut d = ResultInvalidDetails::new(AttemptFailure::new(
        "structured output invalid",
        ErrorOperation::Chat,
    ));
    d.repair_error = Some("r".repeat(250));
    d.validation_errors = vec!["e1".into(), "e2".into(), "e3".into(), "e4".into()];
    d.raw_text = "RAW".into();
    let row = priced().terminal_row(&terminal(
        chat_call(),
        TerminalOutcome::Error(GatewayError::result_invalid(d)),
    ));
    let error = row.error.unwrap();
    assert_eq!(
        error,
        format!(
            "structured output invalid | repair={} | validation=e1; e2; e3",
            "r".repeat(200)
        )
    );
    assert!(!error.contains("RAW"));
    assert_eq!(format_bounded_errors(&[]), "output could not be parsed");
}

#[test]
fn t_32_pricing_file_validation() {
    let (t, w) = parse_pricing(
        r#"{"qwen-max": {"input_per_1m": 1.0, "output_per_1m": 8.0},
            "deepseek-chat": {"input_per_1m": 2, "output_per_1m": 8, "cached_input_per_1m": 0.5, "note": "x"}}"#,
        "p.json",
    )
    .unwrap();
    assert_eq!(t.prices["deepseek-chat"].cached_input_per_1m, Some(0.5));
    assert_eq!(t.prices["qwen-max"].cached_input_per_1m, None);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].code, "pricing.unknown_member");
    assert!(parse_pricing("{}", "p.json").unwrap().0.prices.is_empty());
    for bad in [
        "not json",
        "[]",
        r#"{"m": 1}"#,
        r#"{"m": {"input_per_1m": 1}}"#,
        r#"{"m": {"input_per_1m": -1, "output_per_1m": 1}}"#,
        r#"{"m": {"input_per_1m": "1", "output_per_1m": 1}}"#,
    ] {
        let e = parse_pricing(bad, "p.json").unwrap_err();
        assert_eq!(
            (e.code, e.origin.as_str()),
            ("pricing.invalid", "PGW_PRICING_PATH"),
            "{bad}"
        );
        assert!(e.message.contains("p.json"));
    }
    let e = parse_pricing(r#"{"m": {"input_per_1m": 1}}"#, "p.json").unwrap_err();
    assert!(e.message.contains("\"m\""));
    let e = load_pricing("/nonexistent/pricing.json").unwrap_err();
    assert_eq!(e.code, "pricing.invalid");
}

#[test]
fn t_34_tenant_sentinel_and_canonical_meta() {
    let row = priced().attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    assert_eq!(
        (row.tenant_id.as_str(), row.meta.as_str()),
        ("tenant-a", r#"{"a":"x","b":1}"#)
    );
    let bare = call_with(CallOperation::Chat, RowInput::default());
    let row = priced().attempt_row(&success(bare, "m", ok_result(1, 1)));
    assert_eq!(
        (
            row.tenant_id.as_str(),
            row.meta.as_str(),
            row.messages.as_str()
        ),
        ("", "{}", "[]")
    );
    let none = Arc::new(RowCall::new("l", CallOperation::Chat, "llm"));
    let row = priced().terminal_row(&terminal(none, TerminalOutcome::Cancelled));
    assert_eq!((row.tenant_id.as_str(), row.meta.as_str()), ("", "{}"));
}

#[test]
fn t_35_cap_applies_to_text_parts_not_tool_arguments() {
    let msgs = vec![obj(
        json!({"role": "assistant", "content": [{"type": "text", "text": "0123456789abc"}],
        "tool_calls": [{"function": {"arguments": "0123456789abc"}}]}),
    )];
    let capped = cap_messages(&msgs, Some(4));
    assert_eq!(capped[0]["content"][0]["text"], "0123…(+9 chars)");
    assert_eq!(
        capped[0]["tool_calls"][0]["function"]["arguments"],
        "0123456789abc"
    );
    assert_eq!(cap_text("日本語テキスト", Some(3)), "日本語…(+4 chars)");
    assert_eq!(cap_text("short", Some(10)), "short");
    assert_eq!(cap_text("anything", None), "anything");
}

#[test]
fn ct_tel_02_shaped_none_stays_null_zero_stays_zero() {
    let mut r = ok_result(0, 0);
    r.usage.cached_prompt_tokens = Some(0);
    r.stall_ms = Some(0.0);
    r.stall_count = Some(0);
    let row = RowShaper::default().attempt_row(&success(chat_call(), "m", r));
    let cols = row.columns();
    let get = |n: &str| cols.iter().find(|(k, _)| *k == n).unwrap().1;
    assert_eq!(get("cached_prompt_tokens"), SqlValue::Int(0));
    assert_eq!(get("stall_ms"), SqlValue::Int(0));
    assert_eq!(get("reasoning_tokens"), SqlValue::Null);
    assert_eq!(get("cost"), SqlValue::Null);
}

/// The owned path moves the texts but builds exactly the borrowed path's row.
// covers: T-12, T-35
#[test]
fn t_12_owned_attempt_row_equals_borrowed_row() {
    let mut r = ok_result(3, 4);
    r.content = "a fairly long answer".into();
    r.thinking = "some thinking".into();
    r.model_reported = Some("m-0919".into());
    for cap in [None, Some(5)] {
        let shaper = RowShaper::new(None, cap, true).unwrap();
        let facts = success(chat_call(), "qwen-max", r.clone());
        assert_eq!(
            shaper.attempt_row_owned(facts.clone()),
            shaper.attempt_row(&facts)
        );
        let failed = attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(transient("boom from 10.0.0.1")),
        );
        assert_eq!(
            shaper.attempt_row_owned(failed.clone()),
            shaper.attempt_row(&failed)
        );
    }
}

/// 70 C-38 (the row-shaper fix of issue 17): a failed chat attempt records the level that would
/// have been applied on its source — the request level first (it used to be the source level),
/// then the source intent including the `ENABLE_THINKING` sugar.
#[test]
fn c_38_failed_chat_row_request_level_first() {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "o3-mini");
    s.reasoning_effort = Some(Effort::Low);
    let failed = priced().attempt_row(&attempt(
        chat_call(),
        Arc::new(s),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(
        failed.reasoning_effort,
        Some(Effort::Medium),
        "request first"
    );
    let mut sugar = SourceConfig::new("qwen_1", "qwen", "http://127.0.0.1:9", None, "qwen3-8b");
    sugar.enable_thinking = Some(true);
    let call = call_with(CallOperation::Chat, RowInput::chat(&ChatRequest::default()));
    let failed = priced().attempt_row(&attempt(
        call,
        Arc::new(sugar),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    assert_eq!(failed.reasoning_effort, Some(Effort::Auto), "sugar counted");
}
