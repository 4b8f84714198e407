//! Tracing spans of one governed call (05 R-38): `pgw.call`, `pgw.round`, `pgw.attempt` with
//! their field names, never content. Its own test binary: a thread-local subscriber races with
//! the callsite interest cache when other tests run in the same process, which made this test
//! flaky inside `e2e_chat.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod client_support;

use client_support::{chat_env, sim_completion};
use polygateway::{ChatOptions, GatewayClient};

fn client(env: &polygateway::EnvMap) -> GatewayClient {
    GatewayClient::from_env_map("LLM", env).expect("client assembles")
}

/// A minimal subscriber recording span names and field names (no content is ever recorded in
/// spans, 05 R-38).
#[derive(Default)]
struct SpanRecorder {
    spans: std::sync::Mutex<Vec<(String, Vec<String>)>>,
    next: std::sync::atomic::AtomicU64,
}

impl tracing::Subscriber for SpanRecorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let fields = span
            .metadata()
            .fields()
            .iter()
            .map(|f| f.name().to_owned())
            .collect();
        self.spans
            .lock()
            .unwrap()
            .push((span.metadata().name().to_owned(), fields));
        tracing::span::Id::from_u64(
            self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        )
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn r_38_call_round_attempt_spans() {
    let recorder = std::sync::Arc::new(SpanRecorder::default());
    let _guard = tracing::subscriber::set_default(std::sync::Arc::clone(&recorder));
    // Callsites seen before this subscriber existed may have cached "never"; this binary runs
    // no other test, so nothing can cache it again while the call runs.
    tracing::callsite::rebuild_interest_cache();
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let client = client(&chat_env(&sim, &[]));
    client
        .chat("secret prompt", ChatOptions::new())
        .await
        .unwrap();
    let spans = recorder.spans.lock().unwrap().clone();
    let find = |name: &str| {
        spans
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f.clone())
    };
    let call = find("pgw.call").expect("pgw.call span");
    for field in ["logical_call_id", "scope", "operation"] {
        assert!(call.contains(&field.to_owned()), "{call:?}");
    }
    assert!(find("pgw.round").is_some(), "{spans:?}");
    let attempt = find("pgw.attempt").expect("pgw.attempt span");
    for field in ["call_id", "source", "attempt", "outcome"] {
        assert!(attempt.contains(&field.to_owned()), "{attempt:?}");
    }
}
