//! Reasoning effort (70 C-20…C-38): levels, intent, the capability table and its evidence,
//! resolution (`nearest` / `error`), managed roots, the per-attempt plan, the contradiction
//! throttle and the telemetry level.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use gateway_core::effort::table::builtin_entries;
use gateway_core::effort::{
    CONTRADICTION_THROTTLE_MAX, CapabilityEntry, ContradictionThrottle, Evidence, LevelOrigin,
    ThinkingWire, cheapest_usable, check_source, effective_effort, glob_match, lookup,
    managed_root_in, nearest, parse_effort, plan_attempt, resolve, row_effort, source_intent,
};
use gateway_core::thinking::{ProviderProfile, ProviderRegistry};
use gateway_ports::request::ChatRequest;
use gateway_ports::{
    AttemptError, EFFORT_ORDER, Effort, EffortFallback, GatewayError, SourceConfig,
    ThinkingObservation,
};
use serde_json::json;

use Effort::{Auto, High, Low, Max, Medium, Minimal, Off, Xhigh};

fn source(provider: &str, model: &str) -> SourceConfig {
    SourceConfig::new(
        format!("{provider}_1"),
        provider,
        "http://127.0.0.1:9",
        None,
        model,
    )
}

fn profile(provider: &str) -> ProviderProfile {
    ProviderRegistry::builtin().profile_for(provider)
}

// covers: C-20 (eight levels, total order, wire names)
#[test]
fn c_20_levels_and_order() {
    let names: Vec<&str> = EFFORT_ORDER.iter().map(|e| e.as_str()).collect();
    assert_eq!(
        names,
        [
            "none", "auto", "minimal", "low", "medium", "high", "xhigh", "max"
        ]
    );
    assert_ne!(None, Some(Off), "no opinion is not explicitly none");
}

// covers: C-21 (trimmed, ASCII case-insensitive; anything else refused)
#[test]
fn c_21_parse() {
    for (text, level) in [
        (" HIGH ", High),
        ("None", Off),
        ("xHigh", Xhigh),
        ("max\n", Max),
    ] {
        assert_eq!(parse_effort(text, "--effort").unwrap(), level);
    }
    match parse_effort("huge", "--effort") {
        Err(GatewayError::InvalidArgument(d)) => {
            assert_eq!(d.origin, "--effort");
            assert!(
                d.message
                    .contains("none, auto, minimal, low, medium, high, xhigh, max")
            );
            assert!(!d.message.contains("huge"), "no echo needed");
        }
        other => panic!("{other:?}"),
    }
}

// covers: C-22, C-23 (sugar, precedence, request wins, None inherits)
#[test]
fn c_22_c_23_intent() {
    let mut s = source("qwen", "qwen3-8b");
    assert_eq!(source_intent(&s), None);
    s.enable_thinking = Some(true);
    assert_eq!(source_intent(&s), Some(Auto));
    s.enable_thinking = Some(false);
    assert_eq!(source_intent(&s), Some(Off));
    s.reasoning_effort = Some(Off);
    assert_eq!(source_intent(&s), Some(Off));
    s.enable_thinking = Some(true);
    s.reasoning_effort = Some(High);
    assert_eq!(source_intent(&s), Some(High), "REASONING_EFFORT wins");
    assert_eq!(effective_effort(None, &s), Some(High), "None inherits");
    assert_eq!(effective_effort(Some(Low), &s), Some(Low), "request wins");
    assert_eq!(effective_effort(Some(Off), &s), Some(Off));
}

// covers: C-22 (contradictory pair is an assembly error naming both keys)
#[test]
fn c_22_contradictory_pair_names_both_keys() {
    let registry = ProviderRegistry::builtin();
    let key = |f: &str| format!("LLM__QWEN__1__{f}");
    let mut s = source("qwen", "qwen3-8b");
    s.enable_thinking = Some(false);
    s.reasoning_effort = Some(Low);
    let e = check_source(&s, &registry, &key).unwrap_err();
    assert_eq!(e.code, "effort.conflict");
    assert!(e.message.contains("LLM__QWEN__1__ENABLE_THINKING"));
    assert!(e.message.contains("LLM__QWEN__1__REASONING_EFFORT"));
    s.enable_thinking = Some(false);
    s.reasoning_effort = Some(Off);
    assert!(check_source(&s, &registry, &key).is_ok());
}

// covers: C-25 (every entry carries evidence: a source and a valid date)
#[test]
fn c_25_every_entry_has_evidence() {
    let entries = builtin_entries();
    assert!(entries.len() >= 20, "{} entries", entries.len());
    for e in &entries {
        assert!(
            e.evidence.is_valid(),
            "{} {}: {:?}",
            e.profile,
            e.model_pattern,
            e.evidence
        );
        assert!(
            e.evidence.source.starts_with("https://"),
            "{:?}",
            e.evidence
        );
        assert!(!e.levels.is_empty());
        if e.wire == ThinkingWire::Fixed {
            assert_eq!(e.levels.len(), 1, "a fixed entry lists one level");
            assert!(e.levels[0].1.is_empty(), "a fixed entry sends nothing");
        } else {
            assert!(e.levels.iter().all(|(_, f)| !f.is_empty()));
        }
    }
    for profile in [
        "openai",
        "deepseek",
        "qwen",
        "vllm",
        "anthropic",
        "gemini",
        "openrouter",
    ] {
        assert!(entries.iter().any(|e| e.profile == profile), "{profile}");
    }
    assert!(!Evidence::documented("", "2025-01-01").is_valid());
    assert!(!Evidence::documented("x", "2025-02-30").is_valid());
    assert!(!Evidence::documented("x", "25-01-01").is_valid());
}

// covers: C-26 (declaration order, glob ASCII case-insensitive, catch-all)
#[test]
fn c_26_lookup() {
    assert!(glob_match("gpt-5*", "GPT-5-mini"));
    assert!(glob_match("*qwen3*", "Qwen/Qwen3-8B"));
    assert!(glob_match("o?-mini", "o3-mini"));
    assert!(!glob_match("o1", "o1-mini"));
    let openai = profile("openai");
    let wire_of = |m: &str| lookup(&openai, m).map(|e| e.model_pattern.clone());
    assert_eq!(wire_of("gpt-5-chat-latest").as_deref(), Some("gpt-5-chat*"));
    assert_eq!(wire_of("gpt-5.1-mini").as_deref(), Some("gpt-5.1*"));
    assert_eq!(wire_of("gpt-5-mini").as_deref(), Some("gpt-5*"));
    assert_eq!(wire_of("o1-mini"), None, "o1-mini has no reasoning_effort");
    assert!(lookup(&profile("openrouter"), "anything/at-all").is_some());
    assert!(lookup(&profile("nobody"), "x").is_none());
}

// covers: C-27 step 2 (nearest: smallest distance, tie → weaker; the spec's examples)
#[test]
fn c_27_nearest_examples() {
    assert_eq!(nearest(Medium, &[Low, High]), Some(Low));
    assert_eq!(nearest(Xhigh, &[Minimal, High, Max]), Some(High));
    assert_eq!(nearest(Off, &[High]), Some(High));
    assert_eq!(nearest(Max, &[Low, Medium, High]), Some(High));
    assert_eq!(nearest(Low, &[]), None);
    assert_eq!(cheapest_usable(&[Off, Auto, Low, High]), Some(Low));
    assert_eq!(cheapest_usable(&[Off, Auto]), Some(Off));
}

// covers: C-27 (supported → sent; nearest → mapped silently; error → refusal text)
#[test]
fn c_27_resolve() {
    let openai = profile("openai");
    let d = resolve(Some(High), "o3-mini", &openai, EffortFallback::Error).unwrap();
    assert_eq!(d.applied, Some(High));
    assert_eq!(d.fragment["reasoning_effort"], "high");
    let d = resolve(Some(Max), "o3-mini", &openai, EffortFallback::Nearest).unwrap();
    assert_eq!(d.applied, Some(High));
    let r = resolve(Some(Max), "o3-mini", &openai, EffortFallback::Error).unwrap_err();
    assert_eq!(r.supported, [Low, Medium, High]);
    assert_eq!(r.cheapest, Some(Low));
    let text = r.message(
        LevelOrigin::Request,
        "LLM__OPENAI__1__EFFORT_FALLBACK",
        "LLM__OPENAI__1__REASONING_EFFORT",
    );
    for needle in [
        "o3-mini",
        "`max`",
        "low, medium, high",
        "cheapest usable: low",
        "LLM__OPENAI__1__EFFORT_FALLBACK=nearest",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    let text = r.message(LevelOrigin::Source, "K__FALLBACK", "K__REASONING_EFFORT");
    assert!(text.contains("K__REASONING_EFFORT=low"), "{text}");
    assert_eq!(
        resolve(None, "o3-mini", &openai, EffortFallback::Error).unwrap(),
        Default::default(),
        "no level: nothing sent"
    );
}

// covers: C-28 (unknown model with a level refuses; without one sends nothing)
#[test]
fn c_28_unknown_model() {
    let r = resolve(
        Some(Low),
        "my-model",
        &profile("openai"),
        EffortFallback::Nearest,
    )
    .unwrap_err();
    assert!(r.unknown_model);
    assert!(
        r.to_string()
            .contains("no capability entry for model my-model")
    );
    assert!(resolve(None, "my-model", &profile("openai"), EffortFallback::Error).is_ok());
}

// covers: C-29 (each family's fragment shape)
#[test]
fn c_29_wire_family_fragments() {
    let frag = |p: &str, m: &str, l: Effort| {
        serde_json::Value::Object(
            resolve(Some(l), m, &profile(p), EffortFallback::Error)
                .unwrap()
                .fragment,
        )
    };
    assert_eq!(
        frag("openai", "gpt-5", Minimal),
        json!({"reasoning_effort": "minimal"})
    );
    assert_eq!(
        frag("gemini", "gemini-2.5-flash", Off),
        json!({"reasoning_effort": "none"})
    );
    assert_eq!(
        frag("qwen", "qwen3-32b", Off),
        json!({"enable_thinking": false})
    );
    assert_eq!(
        frag("qwen", "qwen-plus", Medium),
        json!({"enable_thinking": true, "thinking_budget": 4096})
    );
    assert_eq!(
        frag("vllm", "Qwen/Qwen3-8B", Auto),
        json!({"chat_template_kwargs": {"enable_thinking": true}})
    );
    assert_eq!(
        frag("anthropic", "claude-sonnet-4-5", Low),
        json!({"thinking": {"type": "enabled", "budget_tokens": 1024}})
    );
    assert_eq!(
        frag("zhipu", "glm-4.5-air", Off),
        json!({"thinking": {"type": "disabled"}})
    );
    assert_eq!(
        frag("openrouter", "x/y", High),
        json!({"reasoning": {"effort": "high"}})
    );
    assert_eq!(
        frag("openrouter", "x/y", Off),
        json!({"reasoning": {"enabled": false}})
    );
    assert_eq!(frag("deepseek", "deepseek-reasoner", Auto), json!({}));
    let d = resolve(
        Some(High),
        "deepseek-reasoner",
        &profile("deepseek"),
        EffortFallback::Nearest,
    )
    .unwrap();
    assert_eq!(
        d.applied,
        Some(Auto),
        "fixed entry: the one level it runs at"
    );
}

// covers: C-29 (register_provider: a custom profile brings entries and managed roots)
#[test]
fn c_29_custom_profile() {
    let mut registry = ProviderRegistry::builtin();
    let entry = CapabilityEntry::new(
        "acme",
        "acme-*",
        ThinkingWire::ReasoningEffort,
        vec![
            (Low, json!({"effort_level": 1})),
            (High, json!({"effort_level": 3})),
        ],
        Evidence::documented("https://acme.example/docs", "2026-01-15"),
    );
    registry.register(
        ProviderProfile::new("acme", false)
            .with_entries([entry])
            .with_managed_root("effort_level"),
    );
    let p = registry.profile_for("ACME");
    let d = resolve(Some(Medium), "acme-1", &p, EffortFallback::Nearest).unwrap();
    assert_eq!(
        (d.applied, d.fragment["effort_level"].clone()),
        (Some(Low), json!(1))
    );
    let overlay = json!({"effort_level": 2}).as_object().cloned().unwrap();
    assert_eq!(
        managed_root_in(&overlay, &p).as_deref(),
        Some("effort_level")
    );
}

// covers: C-30 (the managed roots, including the nested template switch)
#[test]
fn c_30_managed_roots() {
    let plain = ProviderProfile::plain("x");
    for (object, root) in [
        (json!({"reasoning_effort": "low"}), Some("reasoning_effort")),
        (json!({"enable_thinking": true}), Some("enable_thinking")),
        (json!({"thinking": {}}), Some("thinking")),
        (json!({"thinking_budget": 1}), Some("thinking_budget")),
        (json!({"reasoning": {}}), Some("reasoning")),
        (
            json!({"chat_template_kwargs": {"enable_thinking": false}}),
            Some("chat_template_kwargs.enable_thinking"),
        ),
        (
            json!({"chat_template_kwargs": {"other": 1}, "temperature": 0}),
            None,
        ),
    ] {
        assert_eq!(
            managed_root_in(object.as_object().unwrap(), &plain).as_deref(),
            root
        );
    }
}

fn rejected(r: Result<gateway_core::effort::ThinkingDirective, AttemptError>) -> String {
    match r {
        Err(AttemptError::RequestRejected(f)) => f.message.clone(),
        other => panic!("expected RequestRejected, got {other:?}"),
    }
}

// covers: C-31 (rules 2 and 3 per attempt), C-32 (raw-only), C-27 (request refusal is RR)
#[test]
fn c_31_c_32_plan_attempt() {
    let openai = profile("openai");
    // Rule 2 (CF-251 shape): source intent + overlay root → RR.
    let mut s = source("openai", "o3-mini");
    s.enable_thinking = Some(true);
    let mut request = ChatRequest::default();
    request
        .overlay
        .insert("reasoning_effort".into(), json!("max"));
    let text = rejected(plan_attempt(&request, &s, &openai, Some("llm")));
    assert!(
        text.contains("reasoning_effort") && text.contains("LLM__OPENAI__1__ENABLE_THINKING"),
        "{text}"
    );
    // Raw-only: no intent anywhere → sent verbatim, applied None.
    let plain_source = source("openai", "o3-mini");
    let d = plan_attempt(&request, &plain_source, &openai, None).unwrap();
    assert_eq!((d.applied, d.fragment.is_empty()), (None, true));
    // Rule 3 (symmetric): a request level routed to a raw-only source → RR.
    let mut raw_source = source("openai", "o3-mini");
    raw_source
        .extra_body
        .insert("reasoning_effort".into(), json!("low"));
    let mut leveled = ChatRequest {
        reasoning_effort: Some(High),
        ..ChatRequest::default()
    };
    let text = rejected(plan_attempt(&leveled, &raw_source, &openai, Some("llm")));
    assert!(text.contains("LLM__OPENAI__1__EXTRA_BODY"), "{text}");
    // A request level the model cannot hit under `error` → RR naming the key to set.
    leveled.reasoning_effort = Some(Max);
    let text = rejected(plan_attempt(&leveled, &plain_source, &openai, Some("llm")));
    assert!(
        text.contains("LLM__OPENAI__1__EFFORT_FALLBACK=nearest"),
        "{text}"
    );
    // Request level re-resolved per source (C-23): nearest on this one.
    let mut nearest_source = plain_source.clone();
    nearest_source.effort_fallback = EffortFallback::Nearest;
    let d = plan_attempt(&leveled, &nearest_source, &openai, None).unwrap();
    assert_eq!(d.applied, Some(High));
}

// covers: C-31 rule 3 at assembly, C-27 source-level refusal is a configuration error
#[test]
fn c_31_c_27_assembly_checks() {
    let registry = ProviderRegistry::builtin();
    let key = |f: &str| format!("LLM__OPENAI__1__{f}");
    let mut s = source("openai", "o3-mini");
    s.reasoning_effort = Some(Low);
    s.extra_body.insert("reasoning".into(), json!({}));
    let e = check_source(&s, &registry, &key).unwrap_err();
    assert_eq!(
        (e.code, e.origin.as_str()),
        ("effort.raw_conflict", "LLM__OPENAI__1__EXTRA_BODY")
    );
    let mut s = source("openai", "o3-mini");
    s.reasoning_effort = Some(Minimal);
    let e = check_source(&s, &registry, &key).unwrap_err();
    assert_eq!(e.code, "effort.unsupported");
    assert!(
        e.message.contains("LLM__OPENAI__1__REASONING_EFFORT=low"),
        "{}",
        e.message
    );
    s.effort_fallback = EffortFallback::Nearest;
    assert!(check_source(&s, &registry, &key).is_ok());
    let mut unknown = source("openai", "my-finetune");
    unknown.enable_thinking = Some(true);
    assert_eq!(
        check_source(&unknown, &registry, &key).unwrap_err().code,
        "effort.unsupported"
    );
}

// covers: C-36, C-37 (contradictions warn once per key; Unknown / None never warn; bounded)
#[test]
fn c_36_c_37_contradiction_throttle() {
    let t = ContradictionThrottle::new();
    use ThinkingObservation::{Absent, Observed, Unknown};
    assert!(
        t.check("s", "m", Some(Off), Observed)
            .unwrap()
            .contains("`none`")
    );
    assert!(
        t.check("s", "m", Some(Off), Observed).is_none(),
        "throttled"
    );
    assert!(
        t.check("s", "m", Some(High), Absent)
            .unwrap()
            .contains("`high`")
    );
    assert!(
        t.check("s", "m", Some(Max), Absent).is_some(),
        "another level is another key"
    );
    assert!(
        t.check("s", "m", Some(High), Observed).is_none(),
        "no contradiction"
    );
    assert!(t.check("s", "m", Some(Off), Absent).is_none());
    assert!(t.check("s", "m2", Some(Low), Unknown).is_none());
    assert!(t.check("s", "m2", None, Absent).is_none());
    assert_eq!(t.len(), 3);
    for i in 0..(CONTRADICTION_THROTTLE_MAX + 10) {
        t.check("s", &format!("m{i}"), Some(Low), Absent);
    }
    assert_eq!(t.len(), CONTRADICTION_THROTTLE_MAX, "bounded");
}

// covers: C-38 (failed-attempt rows: request level first, then source intent, nearest applied)
#[test]
fn c_38_row_effort() {
    let openai = profile("openai");
    let mut s = source("openai", "o3-mini");
    s.reasoning_effort = Some(Low);
    assert_eq!(
        row_effort(Some(High), &s, &openai),
        Some(High),
        "request first"
    );
    assert_eq!(row_effort(None, &s, &openai), Some(Low));
    s.effort_fallback = EffortFallback::Nearest;
    assert_eq!(
        row_effort(Some(Max), &s, &openai),
        Some(High),
        "nearest applied"
    );
    let mut sugar = source("qwen", "qwen3-8b");
    sugar.enable_thinking = Some(true);
    assert_eq!(
        row_effort(None, &sugar, &profile("qwen")),
        Some(Auto),
        "sugar counted"
    );
    assert_eq!(row_effort(None, &source("openai", "o3"), &openai), None);
}
