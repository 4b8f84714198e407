//! The Rust snippets of `docs/guide.md`, compiled: each snippet appears here verbatim (up to
//! indentation) inside a function that supplies what the page assumes (`client`, `messages`,
//! `my_sources`). `tests/guide_snippets.rs` fails when a snippet of the page is missing here, so
//! the guide cannot drift from code that compiles.
//!
//! `main` is the guide's first program: it needs `LLM__…` sources in the environment (point them
//! at `pgw sim` to try it): `cargo run -p polygateway --example guide`.
#![allow(
    dead_code,
    unused_variables,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::needless_pass_by_value
)]

use std::error::Error;

use polygateway::{ChatOptions, GatewayClient};

#[rustfmt::skip]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = GatewayClient::from_env("LLM")?;          // ConfigError names the exact key
    let answer = client.chat("Say hello in French.", ChatOptions::new()).await?;
    println!("{} (from {}, {} attempt(s))",
        answer.content, answer.source_name, answer.call_stats.as_ref().map_or(0, |s| s.attempts));
    client.close().await;
    Ok(())
}

/// Section 2: the settings path and the builder path.
#[rustfmt::skip]
async fn three_paths(my_sources: Vec<polygateway::SourceConfig>) -> Result<(), Box<dyn Error>> {
    use std::sync::Arc;
    use polygateway::{GatewayClient, GatewaySettings, OpenAiTransport, TransportOptions};

    let settings = GatewaySettings { sources: my_sources.clone(), ..GatewaySettings::default() };
    let a = GatewayClient::from_settings(&settings)?;                        // owns its components

    let transport = OpenAiTransport::new(&my_sources, TransportOptions::default())?;
    let b = GatewayClient::builder()                                         // you inject components;
        .sources(my_sources)                                                 // the client never closes them
        .transport(Arc::new(transport))
        .build()?;
    Ok(())
}

/// Section 2: one scope policy on both paths.
#[rustfmt::skip]
async fn one_policy(my_sources: Vec<polygateway::SourceConfig>) -> Result<(), Box<dyn Error>> {
    use std::sync::Arc;
    use polygateway::{GatewayClient, GatewaySettings, OpenAiTransport, RetryPolicy, ScopePolicy, TransportOptions};

    let policy = ScopePolicy {
        call_deadline_s: Some(30.0),                                         // seconds, as in the env
        retry: RetryPolicy::new(4, 0.5, 8.0, None, None)?,                   // checked: ConfigError names the field
        ..GatewaySettings::default().policy
    };
    let settings = GatewaySettings { sources: my_sources.clone(), policy, ..GatewaySettings::default() };
    let a = GatewayClient::from_settings(&settings)?;

    let transport = OpenAiTransport::new(&my_sources, TransportOptions::default())?;
    let b = GatewayClient::builder()
        .sources(my_sources)
        .policy(policy)                                                      // every knob at once,
        .max_waiters(100)                                                    // or one at a time
        .transport(Arc::new(transport))
        .build()?;
    Ok(())
}

/// Section 2: sources from the environment.
#[rustfmt::skip]
fn sources_from_env() -> Result<(), Box<dyn Error>> {
    use polygateway::GatewaySettings;
    let my_sources = GatewaySettings::from_env("LLM")?.sources.clone();
    Ok(())
}

/// Section 3: messages.
#[rustfmt::skip]
fn messages() -> Vec<polygateway::JsonObject> {
    use polygateway::JsonObject;
    use serde_json::json;

    let to_object = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    let messages: Vec<JsonObject> = vec![
        to_object(json!({"role": "system", "content": "Answer briefly."})),
        to_object(json!({"role": "user", "content": "Say hello in French."})),
    ];
    messages
}

/// Section 3: text mode.
#[rustfmt::skip]
async fn text_mode(
    client: &GatewayClient,
    messages: Vec<polygateway::JsonObject>,
) -> Result<(), Box<dyn Error>> {
    let r = client.chat(messages, ChatOptions::new()
            .temperature(0.2)
            .max_tokens(512)
            .tenant_id("acme")                 // telemetry only
            .meta("feature", "search")         // telemetry only
            .call_deadline(std::time::Duration::from_secs(20)))
        .await?;
    Ok(())
}

/// Section 3: OpenAI fidelity mode.
#[rustfmt::skip]
async fn fidelity_mode(
    client: &GatewayClient,
    messages: Vec<polygateway::JsonObject>,
) -> Result<(), Box<dyn Error>> {
    use polygateway::ResponseMode;
    use serde_json::json;

    let r = client.chat(messages, ChatOptions::new()
            .response_mode(ResponseMode::OpenAi)
            .sampling("tools", json!([{"type": "function", "function": {"name": "get_weather",
                                       "parameters": {"type": "object"}}}])))
        .await?;
    let completion = r.completion.expect("always Some in OpenAi mode");
    if let Some(calls) = completion.message().get("tool_calls") { /* run the tools */ }
    println!("finish: {:?}", completion.finish_reason());
    Ok(())
}

/// Section 4: errors.
#[rustfmt::skip]
async fn errors(client: &GatewayClient) {
    match client.chat("hi", ChatOptions::new()).await {
        Ok(r) => println!("{}", r.content),
        Err(e) if e.is_retryable_later() => {
            // AllSourcesExhausted / CircuitOpen / GovernanceBackend: the scope is unavailable now.
            let wait_s = e.retry_after_s().unwrap_or(1.0);
            eprintln!("{e}; try again in {wait_s} s");
        }
        Err(e) => eprintln!("{} ({}): {e}", e.type_name(), e.category().map_or("-", |c| c.as_str())),
    }
}

/// Section 4: matching a call error.
#[rustfmt::skip]
async fn match_errors(client: &GatewayClient) {
    use polygateway::{AttemptError, GatewayError};

    match client.chat("hi", ChatOptions::new()).await {
        Ok(answer) => println!("{}", answer.content),
        Err(GatewayError::RequestRejected(rejected)) => {
            eprintln!("fix the request: {} (HTTP {:?})", rejected.failure().message, rejected.failure().http_status);
        }
        Err(error) if error.is_retryable_later() => {
            // The last failure the retries absorbed, e.g. the 401 that opened the last breaker.
            let last = error.last_failure().map(AttemptError::to_string);
            eprintln!("ask again in {:?} s ({last:?}, {} requests sent)", error.retry_after_s(), error.attempts());
        }
        Err(error) => eprintln!("{error}"),
    }
}

/// Section 4: the error report.
#[rustfmt::skip]
async fn error_report(client: &GatewayClient) -> Result<(), Box<dyn Error>> {
    let outcome = client.chat_outcome("hi", ChatOptions::new()).await;
    if let Some(report) = outcome.error_report() {
        println!("{}", serde_json::to_string(&report)?);   // {"type":…,"category":…,"attempts":3,"last_failure":{…}}
    }
    Ok(())
}

/// Section 6: embeddings.
#[rustfmt::skip]
async fn embeddings() -> Result<(), Box<dyn Error>> {
    use polygateway::{EmbedRequest, EmbeddingClient};

    let embed = EmbeddingClient::from_env("EMBED")?;         // EMBED__OPENAI__1__…, EMBED__BATCH_SIZE=64
    let r = embed.embed(EmbedRequest::new(vec!["first".into(), "second".into()])).await?;
    assert_eq!(r.vectors.len(), 2);                         // in input order, merged over batches
    Ok(())
}
