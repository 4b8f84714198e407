//! The structured-output part of `pgw demo`: one call whose first answer is not
//! valid JSON for the schema, repaired by one re-ask. It runs on its own simulator and client
//! (telemetry off), so the main workload's rows check is unaffected; the result goes to stderr.

use polygateway::{ChatOptions, EnvMap, GatewayClient, StructuredSpec};
use serde_json::json;
use upstream_sim::Sim;
use upstream_sim::script::Script;

use crate::out;

/// Runs the showcase and prints two lines on stderr; never fails the demo.
pub async fn showcase() {
    match run().await {
        Ok(line) => out::stderr_line(&line),
        Err(e) => out::stderr_line(&format!("pgw demo: structured showcase skipped: {e}")),
    }
}

async fn run() -> Result<String, String> {
    let script = json!({"version": 1, "responses": [
        {"completion": {"content": "Sure! The answer is {\"city\": \"Paris\", \"population\": \"two million\"}"}},
        {"completion": {"content": "{\"city\": \"Paris\", \"population\": 2102650}"}}
    ]});
    let script = Script::from_json(&script.to_string()).map_err(|e| e.to_string())?;
    let sim = Sim::start(script).map_err(|e| e.to_string())?;
    let mut map = EnvMap::new();
    for (key, value) in [
        ("PGW_TELEMETRY_BACKEND", "none".to_owned()),
        ("LLM__DEMO__1__BASE_URL", sim.base_url()),
        ("LLM__DEMO__1__API_KEY", "sk-demo-not-a-secret".to_owned()),
        (
            "LLM__DEMO__1__MODEL",
            crate::demo_args::DEMO_MODEL.to_owned(),
        ),
    ] {
        map.insert(key.to_owned(), value);
    }
    let client = GatewayClient::from_env_map("LLM", &map).map_err(|e| e.to_string())?;
    let spec = StructuredSpec::Schema {
        name: "CityFact".into(),
        schema: json!({"type": "object", "required": ["city", "population"],
            "properties": {"city": {"type": "string"}, "population": {"type": "integer"}}}),
        strict: true,
    };
    let outcome = client
        .chat_outcome(
            "Largest city of France?",
            ChatOptions::new().structured(spec),
        )
        .await;
    client.close().await;
    sim.shutdown();
    let response = outcome.result.map_err(|e| e.to_string())?;
    let data = response.structured_data.unwrap_or_default();
    Ok(format!(
        "pgw demo: structured output: first answer failed the schema (/population), re-asked once; \
         {} upstream requests; value {data}",
        outcome.attempts
    ))
}
