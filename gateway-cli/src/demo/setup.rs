//! What a demo run starts from: the simulator scripts, the four upstreams (three simulators
//! and a refused port), the naive and governed environment maps, the telemetry paths and the
//! price file.
//!
//! Separate from the run: this is configuration only, no call is made here.

use std::path::PathBuf;

use polygateway::EnvMap;
use serde_json::{Value, json};
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

use crate::demo_args::DEMO_MODEL;

use super::{
    DEMO_DIR, DEMO_KEY, DEMO_PRICES, DEMO_PROVIDERS, DEMO_SCOPE_KEYS, DEMO_SOURCE_KEYS, DEMO_TEXT,
    NAIVE_SCOPE_KEYS,
};

pub(super) fn script(value: &Value) -> Result<Script, String> {
    Script::from_json(&value.to_string()).map_err(|e| e.to_string())
}

/// The three simulator scripts of R-54: healthy, hang, storm (fault seed `seed`).
pub(super) fn demo_scripts(seed: u64) -> Result<[Script; 3], String> {
    let completion = json!({
        "content": DEMO_TEXT, "ttft_ms": 30, "chunks": 20, "inter_chunk_ms": 5
    });
    let healthy = json!({ "version": 1, "responses": [ { "completion": completion } ] });
    let hang = json!({ "version": 1, "responses": [ {
        "headers": [["content-type", "text/event-stream"]], "end": "hang" } ] });
    let storm = json!({ "version": 1, "responses": [ { "completion": completion } ],
        "faults": { "seed": seed, "p_429": 0.8, "retry_after": "1" } });
    Ok([script(&healthy)?, script(&hang)?, script(&storm)?])
}

/// The governed run's environment map: four sources, the scope keys, the memory
/// cache, SQLite telemetry at `telemetry` and the price table at `pricing`.
pub fn demo_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = sources_env_map(base_urls, telemetry, pricing);
    for (key, value) in DEMO_SCOPE_KEYS {
        map.insert((*key).to_owned(), (*value).to_owned());
    }
    map.insert("PGW_CACHE_BACKEND".into(), "memory".into());
    map
}

/// The naive run's environment map: the same sources, telemetry and prices, the
/// [`NAIVE_SCOPE_KEYS`], no cache.
pub fn naive_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = sources_env_map(base_urls, telemetry, pricing);
    for (key, value) in NAIVE_SCOPE_KEYS {
        map.insert((*key).to_owned(), (*value).to_owned());
    }
    map.insert("PGW_CACHE_BACKEND".into(), "none".into());
    map
}

fn sources_env_map(
    base_urls: [&str; 4],
    telemetry: &std::path::Path,
    pricing: &std::path::Path,
) -> EnvMap {
    let mut map = EnvMap::new();
    for (provider, base_url) in DEMO_PROVIDERS.into_iter().zip(base_urls) {
        let key = |field: &str| format!("LLM__{provider}__1__{field}");
        map.insert(key("BASE_URL"), base_url.to_owned());
        map.insert(key("API_KEY"), DEMO_KEY.to_owned());
        map.insert(key("MODEL"), DEMO_MODEL.to_owned());
        for (field, value) in DEMO_SOURCE_KEYS {
            map.insert(key(field), (*value).to_owned());
        }
    }
    map.insert("PGW_TELEMETRY_BACKEND".into(), "sqlite".into());
    map.insert(
        "PGW_TELEMETRY_SQLITE_PATH".into(),
        telemetry.to_string_lossy().into_owned(),
    );
    map.insert(
        "PGW_PRICING_PATH".into(),
        pricing.to_string_lossy().into_owned(),
    );
    map
}

pub(super) fn default_telemetry_path() -> PathBuf {
    PathBuf::from(".").join(DEMO_DIR).join("telemetry.db")
}

/// The naive run's telemetry file: `telemetry` with `-naive` added to its stem
/// (`telemetry.db` → `telemetry-naive.db`).
pub fn naive_telemetry_path(telemetry: &std::path::Path) -> PathBuf {
    let stem = telemetry
        .file_stem()
        .map_or_else(|| "telemetry".into(), |s| s.to_string_lossy().into_owned());
    let name = match telemetry.extension() {
        Some(ext) => format!("{stem}-naive.{}", ext.to_string_lossy()),
        None => format!("{stem}-naive"),
    };
    telemetry.with_file_name(name)
}
/// The three simulators and the refused address of `down_1`.
pub(super) struct Sims {
    handles: [SimHandle; 3],
    down_url: String,
}

impl Sims {
    pub(super) fn urls(&self) -> [String; 4] {
        let [healthy, hang, storm] = &self.handles;
        [
            healthy.base_url(),
            hang.base_url(),
            storm.base_url(),
            self.down_url.clone(),
        ]
    }

    pub(super) fn shutdown(&self) {
        for sim in &self.handles {
            sim.shutdown();
        }
    }
}

/// A loopback URL whose port refuses connections: bound to an ephemeral port, then released.
fn refused_url() -> Result<String, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    drop(listener);
    Ok(format!("http://127.0.0.1:{port}/v1"))
}

pub(super) fn start_sims(seed: u64) -> Result<Sims, String> {
    let [healthy, hang, storm] = demo_scripts(seed)?;
    let start = |s| Sim::start(s).map_err(|e| e.to_string());
    Ok(Sims {
        handles: [start(healthy)?, start(hang)?, start(storm)?],
        down_url: refused_url()?,
    })
}
pub(super) fn write_prices() -> std::io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new()
        .prefix("pgw-demo-prices-")
        .suffix(".json")
        .tempfile()?;
    std::io::Write::write_all(&mut file, DEMO_PRICES.as_bytes())?;
    Ok(file)
}
