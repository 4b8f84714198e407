//! Shared helpers of the client tests (tier 2, 05 R-30): `upstream-sim` in-process on
//! 127.0.0.1, environment maps pointing at it, and small JSON helpers. Event-driven: tests
//! wait on the simulator (`wait_for_requests`), never sleep.

#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers: a failed setup is a failed test"
)]

use polygateway::EnvMap;
use serde_json::Value;
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

/// The test API key (never a real one).
pub const KEY: &str = "sk-test-facade-0123456789";

/// Starts the simulator with a script given as JSON text.
pub fn sim(script_json: &str) -> SimHandle {
    let script = Script::from_json(script_json).expect("valid script");
    Sim::start(script).expect("simulator starts")
}

/// A simulator answering every chat request with `completion` (a JSON object text).
pub fn sim_completion(completion: &str) -> SimHandle {
    sim(&format!(
        r#"{{"version":1,"responses":[{{"completion":{completion}}}]}}"#
    ))
}

/// A map from key/value pairs.
pub fn map(pairs: &[(&str, &str)]) -> EnvMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The keys of one source `{scope}__{provider}__1__*` pointing at `sim`.
pub fn source_keys(scope: &str, provider: &str, sim: &SimHandle, model: &str) -> EnvMap {
    let p = format!("{scope}__{provider}__1__");
    map(&[
        (&format!("{p}BASE_URL"), &sim.base_url()),
        (&format!("{p}API_KEY"), KEY),
        (&format!("{p}MODEL"), model),
        (&format!("{p}TIMEOUT_S"), "10"),
    ])
}

/// A chat scope `LLM` with one source `sim_1` at `sim`, telemetry `none`, fast retries,
/// plus `extra` (later pairs override).
pub fn chat_env(sim: &SimHandle, extra: &[(&str, &str)]) -> EnvMap {
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01"),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02"),
    ]);
    m.extend(source_keys("LLM", "SIM", sim, "sim-model"));
    m.extend(map(extra));
    m
}

/// One user message.
pub fn user(text: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("role".into(), "user".into());
    m.insert("content".into(), text.into());
    m
}
