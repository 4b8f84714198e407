//! Who owns the response cache of a client (built here, shared, or none).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::time::Duration;

use super::*;

fn env(backend: &str) -> EnvMap {
    [
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("PGW_CACHE_BACKEND", backend),
        ("LLM__SIM__1__BASE_URL", "http://127.0.0.1:9/v1"),
        ("LLM__SIM__1__API_KEY", "sk-test-0123456789"),
        ("LLM__SIM__1__MODEL", "m"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The memory cache built from `PGW_CACHE_BACKEND=memory` is owned and
/// closed by `close()` (a closed memory cache answers `Err`); `none` builds no cache.
#[cfg(feature = "openai")]
#[tokio::test]
async fn c_64_cf_308_factory_cache_closed_by_close() {
    let client = GatewayClient::from_env_map("LLM", &env("memory")).unwrap();
    let cache = client
        .inner
        .runtime
        .cache
        .as_ref()
        .expect("memory cache built");
    assert_eq!(cache.namespace(), "llm", "default namespace = scope name");
    let backend = Arc::clone(cache.backend());
    backend
        .set("k", "v".to_owned(), Duration::from_secs(60))
        .await
        .unwrap();
    client.close().await;
    client.close().await;
    assert!(backend.get("k").await.is_err(), "closed by the client");
    let none = GatewayClient::from_env_map("LLM", &env("none")).unwrap();
    assert!(none.inner.runtime.cache.is_none());
    none.close().await;
}
