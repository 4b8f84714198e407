//! Unit tests of the demo: environment maps, percentiles and the summary lines.

use super::setup::demo_scripts;
use super::summary::percentiles;
use super::*;

#[test]
fn r_55_percentiles_nearest_rank() {
    let p = percentiles((1..=100).map(f64::from).collect());
    assert_eq!((p.p50, p.p99), (Some(50.0), Some(99.0)));
    let empty = percentiles(Vec::new());
    assert_eq!((empty.p50, empty.p99), (None, None));
    let one = percentiles(vec![7.0]);
    assert_eq!((one.p50, one.p99), (Some(7.0), Some(7.0)));
}

#[test]
fn r_54_demo_scripts_are_valid() {
    assert!(demo_scripts(7).is_ok());
}

#[test]
fn r_54_demo_map_is_a_valid_configuration() {
    let map = demo_env_map(
        [
            "http://127.0.0.1:1/v1",
            "http://127.0.0.1:2/v1",
            "http://127.0.0.1:3/v1",
            "http://127.0.0.1:4/v1",
        ],
        std::path::Path::new("demo.db"),
        std::path::Path::new("prices.json"),
    );
    assert_eq!(map["LLM__HANG__1__TTFT_TIMEOUT_S"], "2");
    assert_eq!(map["LLM__CIRCUIT_OPEN"], "wait");
    let mut without_prices = map.clone();
    without_prices.remove("PGW_PRICING_PATH");
    let settings = polygateway::GatewaySettings::from_env_map("LLM", &without_prices)
        .expect("the demo configuration is valid");
    let names: Vec<&str> = settings.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["down_1", "hang_1", "healthy_1", "storm_1"]);
}

#[test]
fn r_54_naive_map_is_a_valid_configuration_without_retries() {
    let mut map = naive_env_map(
        [
            "http://127.0.0.1:1/v1",
            "http://127.0.0.1:2/v1",
            "http://127.0.0.1:3/v1",
            "http://127.0.0.1:4/v1",
        ],
        std::path::Path::new("demo.db"),
        std::path::Path::new("prices.json"),
    );
    map.remove("PGW_PRICING_PATH");
    assert_eq!(map["LLM__RETRY__MAX_ATTEMPTS"], "1");
    assert!(!map.contains_key("LLM__HEDGE__AFTER_S"));
    assert!(polygateway::GatewaySettings::from_env_map("LLM", &map).is_ok());
}

#[test]
fn naive_telemetry_file_sits_next_to_the_governed_one() {
    assert_eq!(
        naive_telemetry_path(std::path::Path::new("./pgw-demo/telemetry.db")),
        std::path::Path::new("./pgw-demo/telemetry-naive.db")
    );
    assert_eq!(
        naive_telemetry_path(std::path::Path::new("demo")),
        std::path::Path::new("demo-naive")
    );
}
