//! Issue 22: the public deadline knobs at their extremes never panic — `ChatOptions::
//! call_deadline(Duration::MAX)` and `LLM__CALL_DEADLINE_S=1e19` mean "no deadline within the
//! life of the process" (docs/decisions.md).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use std::time::Duration;

use client_support::{chat_env, sim_completion};
use polygateway::{ChatOptions, GatewayClient};

#[tokio::test]
async fn issue_22_g_99_chat_options_duration_max_is_no_deadline() {
    let sim = sim_completion(r#"{"content":"fine","chunks":2}"#);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&sim, &[])).unwrap();
    for d in [
        Duration::MAX,
        Duration::from_secs(u64::MAX),
        Duration::new(u64::MAX, 999_999_999),
    ] {
        let r = client
            .chat("hi", ChatOptions::new().call_deadline(d))
            .await
            .expect("no panic, no deadline");
        assert_eq!(r.content, "fine");
    }
    client.close().await;
}

#[tokio::test]
async fn issue_22_g_96_env_deadline_1e19_is_accepted_and_never_panics() {
    let sim = sim_completion(r#"{"content":"fine","chunks":2}"#);
    let client =
        GatewayClient::from_env_map("LLM", &chat_env(&sim, &[("LLM__CALL_DEADLINE_S", "1e19")]))
            .unwrap();
    let r = client
        .chat("hi", ChatOptions::new())
        .await
        .expect("no panic");
    assert_eq!(r.content, "fine");
    client.close().await;
}
