//! Shared helpers of the configuration tests: environment maps, sources, settings and builders
//! for the three assembly paths (20 §9.2). Tests assert codes and origins, never message text.
#![allow(dead_code)]

use std::sync::Arc;

use async_trait::async_trait;
use gateway_ports::{
    ChatTransport, EmbeddingTransport, SourceConfig, WireBody, WireFailure, WireRequest,
    WireResponse,
};
use polygateway::{
    ClientPlan, ConfigError, ConfigWarning, EmbeddingClientBuilder, EnvMap, GatewayClientBuilder,
    GatewaySettings, ValidatedSettings,
};

/// A transport that is never called: the builder only needs one to exist (F5).
pub struct NullTransport;

#[async_trait]
impl ChatTransport for NullTransport {
    async fn send(&self, _request: WireRequest) -> Result<WireResponse, WireFailure> {
        Ok(WireResponse::Body(WireBody::default()))
    }
}

#[async_trait]
impl EmbeddingTransport for NullTransport {
    async fn send(&self, _request: WireRequest) -> Result<WireBody, WireFailure> {
        Ok(WireBody::default())
    }
}

/// A map from key/value pairs.
pub fn map(pairs: &[(&str, &str)]) -> EnvMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The minimal valid chat environment: one source `qwen_1` and telemetry `none`.
pub const BASE: [(&str, &str); 4] = [
    ("PGW_TELEMETRY_BACKEND", "none"),
    ("LLM__QWEN__1__BASE_URL", "https://a.example/v1"),
    ("LLM__QWEN__1__API_KEY", "sk-test-secret-qwen1"),
    ("LLM__QWEN__1__MODEL", "qwen-max"),
];

/// A second source `qwen_2`.
pub const SECOND: [(&str, &str); 3] = [
    ("LLM__QWEN__2__BASE_URL", "https://b.example/v1"),
    ("LLM__QWEN__2__API_KEY", "sk-test-secret-qwen2"),
    ("LLM__QWEN__2__MODEL", "qwen-plus"),
];

/// [`BASE`] plus `extra` (later pairs override earlier ones).
pub fn env_with(extra: &[(&str, &str)]) -> EnvMap {
    let mut m = map(&BASE);
    m.extend(map(extra));
    m
}

/// [`BASE`] + [`SECOND`] plus `extra`.
pub fn env2_with(extra: &[(&str, &str)]) -> EnvMap {
    let mut m = map(&BASE);
    m.extend(map(&SECOND));
    m.extend(map(extra));
    m
}

/// Parses the chat scope `LLM` from `m`.
pub fn from_env(m: &EnvMap) -> Result<ValidatedSettings, ConfigError> {
    GatewaySettings::from_env_map("LLM", m)
}

/// The error of parsing `m`; panics if it parses.
pub fn env_err(m: &EnvMap) -> ConfigError {
    match from_env(m) {
        Ok(v) => panic!(
            "expected an error, got settings with warnings {:?}",
            v.warnings()
        ),
        Err(e) => e,
    }
}

/// Asserts `err` has `code` and `origin`.
#[track_caller]
pub fn assert_err(err: &ConfigError, code: &str, origin: &str) {
    assert_eq!((err.code, err.origin.as_str()), (code, origin), "{err:?}");
}

/// A valid chat source named `{provider}_{n}` with `timeout_s`.
pub fn source(name: &str, timeout_s: f64) -> SourceConfig {
    let provider = name.split('_').next().unwrap_or("p").to_owned();
    SourceConfig {
        timeout_s,
        ..SourceConfig::new(
            name,
            provider,
            "https://up.example/v1",
            Some("sk-test-secret".into()),
            "m",
        )
    }
}

/// Settings over `sources` with every other value at its default.
pub fn settings(sources: Vec<SourceConfig>) -> GatewaySettings {
    GatewaySettings {
        sources,
        ..GatewaySettings::default()
    }
}

/// A chat builder over `sources` with a transport.
pub fn builder(sources: Vec<SourceConfig>) -> GatewayClientBuilder {
    GatewayClientBuilder::new()
        .sources(sources)
        .transport(Arc::new(NullTransport))
}

/// An embedding builder over `sources` with a transport.
pub fn embed_builder(sources: Vec<SourceConfig>) -> EmbeddingClientBuilder {
    EmbeddingClientBuilder::new()
        .sources(sources)
        .transport(Arc::new(NullTransport))
}

/// Plans a chat builder.
pub fn build(b: GatewayClientBuilder) -> Result<ClientPlan, ConfigError> {
    b.plan().map(|(plan, _, _)| plan)
}

/// The error of a result; panics on `Ok`.
#[track_caller]
pub fn err<T>(r: Result<T, ConfigError>) -> ConfigError {
    match r {
        Ok(_) => panic!("expected a ConfigError"),
        Err(e) => e,
    }
}

/// The warning codes, in order.
pub fn codes(warnings: &[ConfigWarning]) -> Vec<&'static str> {
    warnings.iter().map(|w| w.code).collect()
}
