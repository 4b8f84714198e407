//! Serde round-trips of the round-trip types (05 R-15): vocabularies (see `vocab.rs`), `Usage`,
//! `CallStats`, `OpenAiChatCompletion`, `LlmResponse`, embedding and OCR results; plus the
//! snapshot shape check of 10 §4.2.

use gateway_ports::*;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("test helper takes objects"),
    }
}

/// Floats that survive a JSON round-trip exactly (quarters).
fn quarter() -> impl Strategy<Value = f64> {
    (0u32..1_000_000).prop_map(|q| f64::from(q) * 0.25)
}

fn usage() -> impl Strategy<Value = Usage> {
    (
        any::<u64>(),
        any::<u64>(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(p, c, cached, reasoning)| Usage {
            prompt_tokens: p,
            completion_tokens: c,
            cached_prompt_tokens: cached,
            reasoning_tokens: reasoning,
        })
}

fn call_stats() -> impl Strategy<Value = CallStats> {
    (
        "[a-f0-9-]{0,36}",
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<u64>(),
        any::<bool>(),
        proptest::option::of((any::<u64>(), any::<u32>())),
    )
        .prop_map(|(id, attempts, total, hedges, generation, won, stall)| {
            let mut stats = CallStats::new(id, attempts, total);
            stats.hedges = hedges;
            stats.generation_ms = generation;
            stats.hedge_won = won;
            stats.stall_ms = stall.map(|s| s.0);
            stats.stall_count = stall.map(|s| s.1);
            stats
        })
}

fn completion() -> impl Strategy<Value = OpenAiChatCompletion> {
    (
        proptest::option::of(proptest::option::of(".{0,20}")),
        proptest::collection::vec(("[a-z_]{1,8}", ".{0,12}"), 0..3),
        proptest::option::of("[a-z_]{0,12}"),
        proptest::option::of("[a-z0-9-]{0,12}"),
        proptest::option::of((any::<u32>(), any::<u32>())),
    )
        .prop_filter_map(
            "generated snapshots are valid",
            |(content, tools, finish, id, usage)| {
                let mut message = Map::new();
                message.insert("role".into(), json!("assistant"));
                if let Some(content) = content {
                    message.insert("content".into(), json!(content));
                }
                if !tools.is_empty() {
                    let calls: Vec<Value> = tools
                        .iter()
                        .enumerate()
                        .map(|(i, (name, args))| {
                            json!({"id": format!("call_{i}"), "type": "function",
                               "function": {"name": name, "arguments": args}})
                        })
                        .collect();
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                let usage =
                    usage.map(|(p, c)| obj(json!({"prompt_tokens": p, "completion_tokens": c})));
                OpenAiChatCompletion::try_new(message, finish, id, usage).ok()
            },
        )
}

fn effort() -> impl Strategy<Value = Option<Effort>> {
    proptest::option::of(proptest::sample::select(Effort::ALL.to_vec()))
}

fn llm_response() -> impl Strategy<Value = LlmResponse> {
    (
        (".{0,30}", ".{0,30}", "[a-z-]{0,10}", usage(), any::<u64>()),
        (
            proptest::option::of(quarter()),
            proptest::option::of(quarter()),
            any::<bool>(),
            proptest::sample::select(UsageSource::ALL.to_vec()),
            effort(),
        ),
        (
            proptest::option::of(call_stats()),
            proptest::option::of(completion()),
            proptest::option::of("[a-z_]{1,12}"),
            proptest::option::of(proptest::sample::select(StreamEnd::ALL.to_vec())),
            proptest::sample::select(ThinkingObservation::ALL.to_vec()),
        ),
    )
        .prop_map(
            |(
                (content, thinking, model, usage, latency),
                (ttft, gap, hit, usage_source, applied),
                (stats, completion, finish, end, observation),
            )| {
                let mut r = LlmResponse::default();
                r.content = content;
                r.thinking = thinking;
                r.model = model;
                r.provider = "openai".into();
                r.usage = usage;
                r.latency_ms = latency;
                r.ttft_ms = ttft;
                r.max_inter_token_ms = gap;
                r.cache_hit = hit;
                r.call_id = "c-1".into();
                r.source_name = "openai_1".into();
                r.usage_source = usage_source;
                r.structured_data = Some(json!({"a": [1, "x", null]}));
                r.model_reported = Some("gpt-x-2024".into());
                r.thinking_observation = observation;
                r.applied_effort = applied;
                r.call_stats = stats;
                r.completion = completion;
                r.finish_reason = finish.and_then(FinishReason::new);
                r.stream_end = end;
                r
            },
        )
}

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failed round-trip must fail the test"
)]
fn roundtrip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = serde_json::to_string(value).unwrap();
    serde_json::from_str(&text).unwrap()
}

proptest! {
    #[test]
    fn r_15_usage_roundtrip(u in usage()) {
        prop_assert_eq!(roundtrip(&u), u);
    }

    #[test]
    fn r_15_call_stats_roundtrip(s in call_stats()) {
        prop_assert_eq!(roundtrip(&s), s);
    }

    #[test]
    fn r_15_completion_roundtrip(c in completion()) {
        prop_assert_eq!(roundtrip(&c), c);
    }

    #[test]
    fn r_15_llm_response_roundtrip(r in llm_response()) {
        prop_assert_eq!(roundtrip(&r), r);
    }

    #[test]
    fn r_15_embedding_response_roundtrip(
        vectors in proptest::collection::vec(proptest::collection::vec((-64i32..64).prop_map(|v| v as f32 * 0.5), 3), 0..4),
        u in usage(),
        stats in proptest::option::of(call_stats()),
    ) {
        let mut e = EmbeddingResponse::default();
        e.dim = if vectors.is_empty() { 0 } else { 3 };
        e.vectors = vectors;
        e.usage = u;
        e.call_stats = stats;
        e.source_name = "a_1,b_1".into();
        prop_assert_eq!(roundtrip(&e), e);
    }
}

#[test]
fn r_15_ocr_results_roundtrip() {
    let mut text = OcrTextResult::default();
    text.text = "hello".into();
    text.raw = json!({"success": true, "text": "hello"});
    text.call_stats = Some(CallStats::new("l-1", 1, 500));
    assert_eq!(roundtrip(&text), text);

    let mut layout = OcrLayoutResult::default();
    layout.elements = vec![OcrLayoutElement {
        kind: "text".into(),
        page_index: Some(0),
        text: Some("Title".into()),
        image_path: None,
        raw: json!({"type": "text", "page_idx": 0, "text": "Title"}),
    }];
    layout.page_sizes = vec![PageSize(612.0, 792.0)];
    layout.markdown = "# Title".into();
    assert_eq!(roundtrip(&layout), layout);
    // O-15: a page size is `[width, height]`.
    assert_eq!(
        serde_json::to_value(PageSize(1.5, 2.0)).unwrap(),
        json!([1.5, 2.0])
    );
}

#[test]
fn s10_4_1_defaults_and_old_values_load() {
    let r: LlmResponse = serde_json::from_str("{}").unwrap();
    assert_eq!(r, LlmResponse::default());
    assert_eq!(r.usage_source, UsageSource::Unavailable);
    assert_eq!(r.thinking_observation, ThinkingObservation::Unknown);
    assert_eq!(r.cost, None);
    let e = EmbeddingResponse::default();
    assert_eq!(e.usage_source, UsageSource::Measured);
}

#[test]
fn s10_4_2_completion_shape_checks() {
    let ok = obj(json!({"role": "assistant", "content": null, "refusal": null, "x_vendor": 1}));
    let c =
        OpenAiChatCompletion::try_new(ok.clone(), Some(String::new()), Some(String::new()), None)
            .unwrap();
    // D12: empty finish_reason and id are absent.
    assert_eq!(c.finish_reason(), None);
    assert_eq!(c.response_id(), None);
    // Lossless: null stays null, unknown fields kept.
    assert_eq!(c.message(), &ok);

    let bad = |m: Value| OpenAiChatCompletion::try_new(obj(m), None, None, None).unwrap_err();
    assert_eq!(bad(json!({"role": "user"})), CompletionShapeError::Role);
    assert_eq!(bad(json!({"content": "x"})), CompletionShapeError::Role);
    assert_eq!(
        bad(json!({"role": "assistant", "content": 1})),
        CompletionShapeError::ContentType
    );
    assert_eq!(
        bad(json!({"role": "assistant", "reasoning_content": []})),
        CompletionShapeError::ContentType
    );
    assert_eq!(
        bad(json!({"role": "assistant", "tool_calls": {}})),
        CompletionShapeError::ToolCallsType
    );
    let tool = |t: Value| bad(json!({"role": "assistant", "tool_calls": [t]}));
    let good = json!({"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}});
    assert!(
        OpenAiChatCompletion::try_new(
            obj(json!({"role": "assistant", "tool_calls": [good.clone(), null]})),
            None,
            None,
            None
        )
        .is_ok()
    );
    for t in [
        json!({"type": "function", "function": {"name": "f", "arguments": ""}}),
        json!({"id": "", "type": "function", "function": {"name": "f", "arguments": ""}}),
        json!({"id": "a", "type": "tool", "function": {"name": "f", "arguments": ""}}),
        json!({"id": "a", "type": "function", "function": {"name": "", "arguments": ""}}),
        json!({"id": "a", "type": "function", "function": {"name": "f", "arguments": null}}),
        json!({"id": "a", "type": "function", "function": "f"}),
        json!("not an object"),
    ] {
        assert_eq!(tool(t), CompletionShapeError::ToolShape);
    }
    // Duplicate ids.
    assert_eq!(
        bad(json!({"role": "assistant", "tool_calls": [good.clone(), good]})),
        CompletionShapeError::ToolShape
    );
    // Deserialize goes through try_new: a malformed cache entry is refused.
    let entry = json!({"message": {"role": "user"}, "finish_reason": "stop"});
    assert!(serde_json::from_value::<OpenAiChatCompletion>(entry).is_err());
    assert_eq!(
        CompletionShapeError::Role.to_string(),
        "completion message must have role assistant"
    );
}

#[test]
fn r_18_meta_value_is_a_json_scalar() {
    let values = [
        (MetaValue::from("x"), json!("x")),
        (MetaValue::from(3i64), json!(3)),
        (MetaValue::from_f64(1.5).unwrap(), json!(1.5)),
        (MetaValue::from(true), json!(true)),
        (MetaValue::Null, json!(null)),
    ];
    for (meta, expected) in values {
        assert_eq!(serde_json::to_value(&meta).unwrap(), expected);
        assert_eq!(meta.to_json(), expected);
        assert_eq!(roundtrip(&meta), meta);
    }
    assert_eq!(MetaValue::from_f64(f64::NAN), None);
    assert_eq!(MetaValue::from_f64(f64::INFINITY), None);
    assert!(serde_json::from_value::<MetaValue>(json!({"a": 1})).is_err());
    assert!(serde_json::from_value::<MetaValue>(json!([1])).is_err());
}

#[test]
fn s10_3_request_defaults() {
    let r = ChatRequest::new(vec![obj(json!({"role": "user", "content": "hi"}))]);
    assert!(r.stream, "stream defaults to true (10 §3.1)");
    assert_eq!(r.response_mode, ResponseMode::Text);
    assert_eq!(r.cache, CachePolicy::Use);
    assert_eq!(r.call_deadline, None);
    assert_eq!(EmbedRequest::new(vec!["a".into()]).texts, ["a"]);
    assert_eq!(OcrRequest::new(b"img".to_vec()).image.as_ref(), b"img");
    let spec = StructuredSpec::Schema {
        name: "x".into(),
        schema: json!({"type": "object"}),
        strict: true,
    };
    assert_eq!(roundtrip(&spec), spec);
    assert_eq!(roundtrip(&StructuredSpec::Json), StructuredSpec::Json);
}

#[test]
fn t_31_pricing_cost() {
    let table: PricingTable = serde_json::from_value(json!({
        "qwen-max": {"input_per_1m": 1.0, "output_per_1m": 8.0},
        "deepseek-chat": {"input_per_1m": 2.0, "output_per_1m": 8.0, "cached_input_per_1m": 0.5}
    }))
    .unwrap();
    let mut usage = Usage::new(1_000_000, 500_000);
    assert_eq!(table.cost("qwen-max", &usage), Some(1.0 + 4.0));
    assert_eq!(table.cost("unknown", &usage), None);
    usage.cached_prompt_tokens = Some(400_000);
    // Without a cached price, cached tokens bill at the input price.
    assert_eq!(table.cost("qwen-max", &usage), Some(1.0 + 4.0));
    // 600k·2 + 400k·0.5 + 500k·8 = 1.2 + 0.2 + 4.0
    let cost = table.cost("deepseek-chat", &usage).unwrap();
    assert!((cost - 5.4).abs() < 1e-12, "{cost}");
    // k > p: min(k, p) cached, max(p−k, 0) uncached.
    usage.cached_prompt_tokens = Some(2_000_000);
    let cost = table.cost("deepseek-chat", &usage).unwrap();
    assert!((cost - (0.5 + 4.0)).abs() < 1e-12, "{cost}");
}

#[test]
fn s10_2_2_policy_defaults() {
    let retry = RetryPolicy::default();
    assert_eq!(
        (
            retry.max_attempts,
            retry.backoff_base_s,
            retry.backoff_max_s
        ),
        (3, 1.0, 10.0)
    );
    assert_eq!((retry.max_hint_s, retry.budget_ratio), (None, None));
    let bp = BackpressurePolicy::default();
    assert_eq!((bp.stall_window_s, bp.poll_interval_s), (300.0, 0.25));
    let b = BreakerConfig::default();
    assert_eq!(
        (
            b.fail_threshold,
            b.fail_rate,
            b.min_calls,
            b.window_s,
            b.cooldown_s,
            b.cooldown_max_s
        ),
        (5, 0.5, 20, 60.0, 60.0, 600.0)
    );
    assert_eq!(b.probe_ttl_s, None);
    assert_eq!(
        GlobalLimits::default(),
        GlobalLimits {
            max_concurrency: 0,
            rpm: 0,
            tpm: 0
        }
    );
}
