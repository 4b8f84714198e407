//! 70 C-2 step 2: without the cargo feature `structured` a structured call is `InvalidArgument`
//! before any I/O. Runs only in that build:
//! `cargo test -p gateway-facade --no-default-features --features openai,sqlite --test structured_off`.

#![cfg(not(feature = "structured"))]
#![allow(clippy::unwrap_used, reason = "tests")]

use crate::client_support;

use client_support::{chat_env, sim_completion};
use polygateway::{ChatOptions, GatewayClient, GatewayError, StructuredSpec};

// covers: C-2 (step 2)
#[tokio::test]
async fn c_2_structured_not_enabled_without_the_feature() {
    let sim = sim_completion(r#"{"content":"{}"}"#);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    let r = client
        .chat("q", ChatOptions::new().structured(StructuredSpec::Json))
        .await;
    match r {
        Err(GatewayError::InvalidArgument(d)) => {
            assert_eq!(d.origin, "ChatRequest::structured");
            assert!(d.message.contains("structured output not enabled"));
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(sim.request_count(), 0);
    client.close().await;
}
