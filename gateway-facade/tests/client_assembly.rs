//! The three assembly paths of 20 §9.2 give the same client for the same configuration:
//! environment (`from_env_map`), settings struct (`from_settings`, raw and validated), builder
//! with injected components (`GatewayClient::builder()…build()`). Same plan, same behaviour
//! against the same upstream; plus the assembly-time errors of the client step (F9, runtime).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod client_support;

use std::sync::Arc;

use client_support::{chat_env, sim_completion};
use gateway_core::select::StaticSelector;
use polygateway::ScopePolicy;
use polygateway::{
    ChatOptions, ClientPlan, ConfigError, EmbeddingClient, EmbeddingSettings, GatewayClient,
    GatewaySettings, GovernanceComponents, OpenAiTransport, TransportOptions,
};

#[tokio::test]
async fn section_9_2_three_paths_give_the_same_client() {
    let sim = sim_completion(r#"{"content":"same"}"#);
    let env = chat_env(&sim, &[("LLM__CALL_DEADLINE_S", "30")]);

    // Path 1: environment.
    let by_env = GatewayClient::from_env_map("LLM", &env).unwrap();
    // Path 2: settings struct, built by hand from the same values (raw, then validated).
    let parsed = GatewaySettings::from_env_map("LLM", &env).unwrap();
    let raw = GatewaySettings {
        policy: ScopePolicy {
            retry: parsed.policy.retry,
            call_deadline_s: Some(30.0),
            ..GatewaySettings::default().policy
        },
        scope: "LLM".into(),
        sources: parsed.sources.clone(),
        ..GatewaySettings::default()
    };
    let by_raw_settings = GatewayClient::from_settings(&raw).unwrap();
    let validated = raw.validate().unwrap();
    let by_settings = GatewayClient::from_settings(&validated).unwrap();
    // Path 3: builder with an injected transport and the same values.
    let transport = OpenAiTransport::new(&parsed.sources, TransportOptions::default()).unwrap();
    let by_builder = GatewayClient::builder()
        .scope("LLM")
        .sources(parsed.sources.clone())
        .retry(parsed.policy.retry)
        .breaker_config(validated.policy.breaker)
        .call_deadline(std::time::Duration::from_secs(30))
        .transport(Arc::new(transport))
        .build()
        .unwrap();

    let plans: Vec<&ClientPlan> = [&by_env, &by_raw_settings, &by_settings, &by_builder]
        .iter()
        .map(|c| c.plan())
        .collect();
    for plan in &plans[1..] {
        assert_eq!(*plan, plans[0]);
    }
    assert_eq!(plans[0].scope, "llm");
    for client in [&by_env, &by_raw_settings, &by_settings, &by_builder] {
        let r = client.chat("hi", ChatOptions::new()).await.unwrap();
        assert_eq!(
            (r.content.as_str(), r.source_name.as_str()),
            ("same", "sim_1")
        );
        assert!(client.assembly_warnings().is_empty());
        assert_eq!(client.telemetry_status().backend, "none");
        client.close().await;
    }
    assert_eq!(sim.request_count(), 4);
}

#[tokio::test]
async fn section_9_2_three_paths_for_embedding() {
    let sim = client_support::sim(r#"{"version":1,"responses":[{"embedding":{"dim":3}}]}"#);
    let mut env = client_support::map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("EMBED__BATCH_SIZE", "2"),
    ]);
    env.extend(client_support::source_keys("EMBED", "EMB", &sim, "e-1"));
    let by_env = EmbeddingClient::from_env_map("EMBED", &env).unwrap();
    let parsed = EmbeddingSettings::from_env_map("EMBED", &env).unwrap();
    let raw = EmbeddingSettings {
        gateway: GatewaySettings {
            scope: "EMBED".into(),
            sources: parsed.gateway.sources.clone(),
            ..GatewaySettings::default()
        },
        batch_size: 2,
        ..EmbeddingSettings::default()
    };
    let by_settings = EmbeddingClient::from_settings(&raw).unwrap();
    let transport =
        OpenAiTransport::new(&parsed.gateway.sources, TransportOptions::default()).unwrap();
    let by_builder = EmbeddingClient::builder()
        .scope("EMBED")
        .sources(parsed.gateway.sources.clone())
        .breaker_config(parsed.gateway.policy.breaker)
        .batch_size(2)
        .transport(Arc::new(transport))
        .build()
        .unwrap();
    for client in [&by_settings, &by_builder] {
        assert_eq!(client.plan(), by_env.plan());
        assert_eq!(client.batch_size(), 2);
    }
    for client in [&by_env, &by_settings, &by_builder] {
        let r = client
            .embed(gateway_ports::EmbedRequest::new(vec![
                "a".into(),
                "b".into(),
                "c".into(),
            ]))
            .await
            .unwrap();
        assert_eq!((r.vectors.len(), r.dim), (3, 3));
        assert_eq!(r.call_stats.unwrap().attempts, 2);
    }
    assert_eq!(sim.request_count(), 6);
}

#[tokio::test]
async fn r_5_builder_accepts_injected_selector() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let parsed = GatewaySettings::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    let transport = OpenAiTransport::new(&parsed.sources, TransportOptions::default()).unwrap();
    let client = GatewayClient::builder()
        .sources(parsed.sources.clone())
        .transport(Arc::new(transport))
        .build_with(GovernanceComponents::default().selector(Arc::new(StaticSelector)))
        .unwrap();
    assert!(client.chat("hi", ChatOptions::new()).await.is_ok());
    assert_eq!(client.sources_status().await[0].health_score, None);
}

#[tokio::test]
async fn f9_bad_header_names_the_environment_key() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let env = chat_env(&sim, &[("LLM__SIM__1__HEADERS", r#"{"bad header":"x"}"#)]);
    let error: ConfigError = GatewayClient::from_env_map("LLM", &env).unwrap_err();
    assert_eq!(
        (error.code, error.origin.as_str()),
        ("source.headers", "LLM__SIM__1__HEADERS")
    );
}

#[test]
fn runtime_missing_is_a_config_error_not_a_panic() {
    let env = client_support::map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__SIM__1__BASE_URL", "http://127.0.0.1:9/v1"),
        ("LLM__SIM__1__API_KEY", "sk-test-x"),
        ("LLM__SIM__1__MODEL", "m"),
    ]);
    let error = GatewayClient::from_env_map("LLM", &env).unwrap_err();
    assert_eq!(error.code, "runtime.missing");
    // The error names the constructor the caller used, not the internal settings path.
    assert_eq!(error.origin, "GatewayClient::from_env_map");
    assert!(error.message.contains("tokio"), "{}", error.message);
}

#[tokio::test]
async fn r_44_builder_without_sources_fails_calls_with_no_sources() {
    let transport = OpenAiTransport::new(std::iter::empty(), TransportOptions::default()).unwrap();
    let client = GatewayClient::builder()
        .transport(Arc::new(transport))
        .build()
        .unwrap();
    let codes: Vec<&str> = client.assembly_warnings().iter().map(|w| w.code).collect();
    assert_eq!(codes, ["builder.no_sources"]);
    let error = client.chat("hi", ChatOptions::new()).await.unwrap_err();
    assert_eq!(
        error.unavailable().map(|u| u.reason),
        Some(gateway_ports::ScopeReason::NoSources)
    );
}
