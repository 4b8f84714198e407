//! Reasoning effort end to end (tier 2, 05 R-30): every capability-table entry's fragment for
//! every level, checked in the body `upstream-sim` records (70 C-24, C-25, C-27, C-29, C-34),
//! and the managed-root refusals CF-251 / CF-252 (C-30, C-31), over real sockets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::client_support;

use std::sync::Arc;

use client_support::{KEY, chat_env, map, sim_completion};
use gateway_core::effort::{CapabilityEntry, lookup};
use polygateway::{
    CapabilityEntry as PublicEntry, ChatOptions, EFFORT_ORDER, Effort, Evidence, GatewayClient,
    GatewayError, ProviderProfile, ProviderRegistry, ResponseMode, SourceConfig, ThinkingWire,
};
use serde_json::{Value, json};
use upstream_sim::SimHandle;

fn source(sim: &SimHandle, provider: &str, model: &str) -> SourceConfig {
    let mut s = SourceConfig::new(
        format!("{provider}_1"),
        provider,
        sim.base_url(),
        Some(polygateway::Secret::new(KEY.to_owned())),
        model,
    );
    s.timeout_s = 10.0;
    s
}

fn client_for(s: SourceConfig, profile: Option<ProviderProfile>) -> GatewayClient {
    let transport: Arc<dyn gateway_ports::ChatTransport> = Arc::new(
        polygateway::OpenAiTransport::new(
            std::slice::from_ref(&s),
            polygateway::TransportOptions::default(),
        )
        .unwrap(),
    );
    let mut builder = GatewayClient::builder()
        .scope("LLM")
        .sources(vec![s])
        .transport(transport);
    if let Some(p) = profile {
        builder = builder.register_provider(p);
    }
    builder.build().unwrap()
}

/// A model name the entry's glob matches: every `*` → `x`, every `?` → `1`.
fn sample_model(entry: &CapabilityEntry) -> String {
    entry.model_pattern.replace('*', "x").replace('?', "1")
}

fn last_body(sim: &SimHandle) -> Value {
    sim.requests().last().unwrap().body.clone().unwrap()
}

// covers: C-24, C-25, C-27, C-29, C-34 — every entry × every level, the recorded wire body
#[tokio::test]
async fn c_29_every_entry_renders_each_level_on_the_wire() {
    let sim = sim_completion(r#"{"content":"ok","chunks":1}"#);
    let registry = ProviderRegistry::builtin();
    let mut checked = 0;
    for profile in registry.profiles() {
        for entry in &profile.entries {
            let model = sample_model(entry);
            assert_eq!(
                lookup(profile, &model),
                Some(entry),
                "{model} selects its own entry"
            );
            let client = client_for(source(&sim, &profile.name, &model), None);
            for level in EFFORT_ORDER {
                let before = sim.request_count();
                let r = client
                    .chat("hi", ChatOptions::new().reasoning_effort(level))
                    .await;
                match entry.fragment(level) {
                    Some(fragment) => {
                        let response = r.unwrap_or_else(|e| panic!("{model} {level}: {e}"));
                        assert_eq!(response.applied_effort, Some(level), "C-34");
                        let body = last_body(&sim);
                        for (key, value) in fragment {
                            assert_eq!(&body[key], value, "{model} {level} {key}");
                        }
                        for root in [
                            "reasoning_effort",
                            "enable_thinking",
                            "thinking",
                            "reasoning",
                        ] {
                            if !fragment.contains_key(root) {
                                assert!(body.get(root).is_none(), "{model} {level}: stray {root}");
                            }
                        }
                        checked += 1;
                    }
                    None => {
                        assert!(
                            matches!(r, Err(GatewayError::RequestRejected(_))),
                            "{model} {level}: {r:?}"
                        );
                        assert_eq!(sim.request_count(), before, "refused before any byte");
                    }
                }
            }
            client.close().await;
        }
    }
    assert!(checked >= 50, "{checked} level renderings checked");
}

// covers: C-27 (nearest, silent), C-34 (applied after mapping), C-23 (None inherits the source)
#[tokio::test]
async fn c_27_nearest_and_source_intent_over_the_wire() {
    let sim = sim_completion(r#"{"content":"ok","chunks":1}"#);
    let env = {
        let mut m = chat_env(&sim, &[]);
        m.extend(map(&[
            ("LLM__OPENAI__1__BASE_URL", &sim.base_url()),
            ("LLM__OPENAI__1__API_KEY", KEY),
            ("LLM__OPENAI__1__MODEL", "o3-mini"),
            ("LLM__OPENAI__1__REASONING_EFFORT", "low"),
            ("LLM__OPENAI__1__EFFORT_FALLBACK", "nearest"),
        ]));
        m.retain(|k, _| !k.starts_with("LLM__SIM__"));
        m
    };
    let client = GatewayClient::from_env_map("LLM", &env).unwrap();
    let r = client.chat("hi", ChatOptions::new()).await.unwrap();
    assert_eq!(
        r.applied_effort,
        Some(Effort::Low),
        "source intent inherited"
    );
    assert_eq!(last_body(&sim)["reasoning_effort"], "low");
    let r = client
        .chat("hi", ChatOptions::new().reasoning_effort(Effort::Max))
        .await
        .unwrap();
    assert_eq!(r.applied_effort, Some(Effort::High), "max → high (nearest)");
    assert_eq!(last_body(&sim)["reasoning_effort"], "high");
    client.close().await;
}

// covers: C-27 (a source level its model cannot hit is an assembly error naming the key)
#[tokio::test]
async fn c_27_source_level_refused_at_assembly() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let mut env = chat_env(&sim, &[]);
    env.retain(|k, _| !k.starts_with("LLM__SIM__"));
    env.extend(map(&[
        ("LLM__OPENAI__1__BASE_URL", &sim.base_url()),
        ("LLM__OPENAI__1__API_KEY", KEY),
        ("LLM__OPENAI__1__MODEL", "o3-mini"),
        ("LLM__OPENAI__1__REASONING_EFFORT", "minimal"),
    ]));
    let e = GatewayClient::from_env_map("LLM", &env).unwrap_err();
    assert_eq!(e.code, "effort.unsupported");
    assert_eq!(e.origin, "LLM__OPENAI__1__REASONING_EFFORT");
    assert!(
        e.message.contains("LLM__OPENAI__1__REASONING_EFFORT=low"),
        "{e}"
    );
    assert!(
        e.message
            .contains("LLM__OPENAI__1__EFFORT_FALLBACK=nearest"),
        "{e}"
    );
}

// covers: CF-251, C-31 rule 2 (fidelity mode does not bypass it)
#[tokio::test]
async fn cf_251_overlay_root_with_source_intent_is_rejected_without_http() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let mut s = source(&sim, "openai", "o3-mini");
    s.enable_thinking = None;
    s.reasoning_effort = Some(Effort::High);
    let client = client_for(s, None);
    let mut overlay = serde_json::Map::new();
    overlay.insert("reasoning_effort".into(), json!("max"));
    let r = client
        .chat(
            "hi",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .overlay(overlay),
        )
        .await;
    assert!(matches!(r, Err(GatewayError::RequestRejected(_))), "{r:?}");
    assert_eq!(sim.request_count(), 0, "no HTTP");
    client.close().await;
    // The seed's exact shape: ENABLE_THINKING=true on a qwen hybrid model.
    let mut s = source(&sim, "qwen", "qwen3-32b");
    s.enable_thinking = Some(true);
    let client = client_for(s, None);
    let mut overlay = serde_json::Map::new();
    overlay.insert("reasoning_effort".into(), json!("max"));
    let r = client
        .chat(
            "hi",
            ChatOptions::new()
                .response_mode(ResponseMode::OpenAi)
                .overlay(overlay),
        )
        .await;
    assert!(matches!(r, Err(GatewayError::RequestRejected(_))), "{r:?}");
    assert_eq!(sim.request_count(), 0, "no HTTP");
    client.close().await;
}

// covers: CF-252, C-30 (custom profile roots), C-31 rule 2
#[tokio::test]
async fn cf_252_custom_profile_roots_are_managed() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let entry = PublicEntry::new(
        "acme",
        "acme-*",
        ThinkingWire::ReasoningEffort,
        vec![(Effort::Low, json!({"effort_level": 1}))],
        Evidence::documented("https://acme.example/docs/reasoning", "2026-01-15"),
    );
    let profile = ProviderProfile::new("acme", false)
        .with_entries([entry])
        .with_managed_root("effort_level")
        .with_managed_root("think_mode");
    let mut s = source(&sim, "acme", "acme-1");
    s.reasoning_effort = Some(Effort::Low);
    let client = client_for(s, Some(profile));
    for root in ["effort_level", "think_mode", "reasoning_effort", "thinking"] {
        let mut overlay = serde_json::Map::new();
        overlay.insert(root.into(), json!(2));
        let r = client.chat("hi", ChatOptions::new().overlay(overlay)).await;
        assert!(
            matches!(r, Err(GatewayError::RequestRejected(_))),
            "{root}: {r:?}"
        );
    }
    assert_eq!(sim.request_count(), 0, "nothing sent for any root");
    // Without a raw root the custom fragment is sent.
    let r = client.chat("hi", ChatOptions::new()).await.unwrap();
    assert_eq!(r.applied_effort, Some(Effort::Low));
    assert_eq!(last_body(&sim)["effort_level"], 1);
    client.close().await;
}

// covers: C-31 rule 1 (overlay root + request level → InvalidArgument at entry), C-32 raw-only
#[tokio::test]
async fn c_31_c_32_raw_overlays() {
    let sim = sim_completion(r#"{"content":"ok","reasoning":"thought"}"#);
    let client = client_for(source(&sim, "openai", "o3-mini"), None);
    let mut overlay = serde_json::Map::new();
    overlay.insert(
        "chat_template_kwargs".into(),
        json!({"enable_thinking": true}),
    );
    let r = client
        .chat(
            "hi",
            ChatOptions::new()
                .overlay(overlay.clone())
                .reasoning_effort(Effort::Off),
        )
        .await;
    assert!(matches!(r, Err(GatewayError::InvalidArgument(_))), "{r:?}");
    assert_eq!(sim.request_count(), 0);
    // Raw-only: sent verbatim, applied None, observation still computed.
    let r = client
        .chat("hi", ChatOptions::new().overlay(overlay))
        .await
        .unwrap();
    assert_eq!(r.applied_effort, None);
    assert_eq!(
        r.thinking_observation,
        gateway_ports::ThinkingObservation::Observed
    );
    assert_eq!(
        last_body(&sim)["chat_template_kwargs"],
        json!({"enable_thinking": true})
    );
    client.close().await;
}

// covers: C-23 (a retry on another source re-resolves the call's level in that source's
// dialect), C-24
#[tokio::test]
async fn c_23_failover_re_resolves_per_source() {
    let failing = client_support::sim(
        r#"{"version":1,"responses":[{"status":500,"chunks":[{"text":"{\"error\":{\"message\":\"boom\"}}"}]}]}"#,
    );
    let healthy = sim_completion(r#"{"content":"ok","chunks":1}"#);
    let a = source(&failing, "openai", "o3-mini");
    let b = source(&healthy, "qwen", "qwen3-8b");
    let sources = vec![a, b];
    let transport: Arc<dyn gateway_ports::ChatTransport> = Arc::new(
        polygateway::OpenAiTransport::new(&sources, polygateway::TransportOptions::default())
            .unwrap(),
    );
    let client = GatewayClient::builder()
        .scope("LLM")
        .sources(sources)
        .selector(gateway_ports::SelectorKind::RoundRobin)
        .retry(gateway_ports::RetryPolicy {
            backoff_base_s: 0.001,
            backoff_max_s: 0.002,
            ..gateway_ports::RetryPolicy::default()
        })
        .transport(transport)
        .build()
        .unwrap();
    for _ in 0..4 {
        let r = client
            .chat("hi", ChatOptions::new().reasoning_effort(Effort::Low))
            .await
            .unwrap();
        assert_eq!(r.source_name, "qwen_1");
        assert_eq!(r.applied_effort, Some(Effort::Low));
    }
    assert!(failing.request_count() >= 1, "the failing source was tried");
    for request in failing.requests() {
        let body = request.body.unwrap();
        assert_eq!(body["reasoning_effort"], "low");
        assert!(body.get("enable_thinking").is_none());
    }
    for request in healthy.requests() {
        let body = request.body.unwrap();
        assert_eq!(body["enable_thinking"], true);
        assert_eq!(body["thinking_budget"], 1024);
        assert!(body.get("reasoning_effort").is_none());
    }
    client.close().await;
}
