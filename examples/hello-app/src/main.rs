//! The README's small application: one governed chat call, sources from the environment.

use polygateway::{ChatOptions, GatewayClient};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = GatewayClient::from_env("LLM")?; // ConfigError names the exact key
    let answer = client
        .chat("Say hello in French.", ChatOptions::new())
        .await?;
    println!(
        "{} (from {}, {} attempt(s))",
        answer.content,
        answer.source_name,
        answer.call_stats.as_ref().map_or(0, |s| s.attempts)
    );
    client.close().await;
    Ok(())
}
