//! Adversarial configuration: arbitrary environment maps (unknown keys, odd unicode, empty
//! values, huge numbers, negative / NaN / inf durations, duplicate sources, endless key files,
//! secrets in values) through stage A and validation (20 §2, §10, §11; 05 ).
//!
//! Asserts the brief's rules: no panic; an error names a key (an environment-key shaped origin);
//! no API key, header value, Redis password or DSN password in any Display / Debug output of an
//! error, of the validated settings or of the client plan.

use crate::support;

use polygateway::ClientPlan;
use polygateway::GatewaySettings;
use proptest::prelude::*;
use support::*;

const KEY_SECRET: &str = "sk-prop-SECRET-0001";
const HEADER_SECRET: &str = "hdr-SECRET-0002";
const REDIS_SECRET: &str = "pw-SECRET-0003";
const PG_SECRET: &str = "pg-SECRET-0004";
const SECRETS: [&str; 4] = [KEY_SECRET, HEADER_SECRET, REDIS_SECRET, PG_SECRET];

const SCOPE_KEYS: [&str; 26] = [
    "LLM__RETRY__MAX_ATTEMPTS",
    "LLM__RETRY__BACKOFF_BASE_S",
    "LLM__RETRY__BACKOFF_MAX_S",
    "LLM__RETRY__MAX_HINT_S",
    "LLM__RETRY__BUDGET_RATIO",
    "LLM__BREAKER__FAIL_THRESHOLD",
    "LLM__BREAKER__COOLDOWN_S",
    "LLM__BREAKER__COOLDOWN_MAX_S",
    "LLM__BREAKER__FAIL_RATE",
    "LLM__BREAKER__MIN_CALLS",
    "LLM__BREAKER__WINDOW_S",
    "LLM__BREAKER__PROBE_TTL_S",
    "LLM__BACKPRESSURE__STALL_WINDOW_S",
    "LLM__BACKPRESSURE__POLL_INTERVAL_S",
    "LLM__GLOBAL__MAX_CONCURRENCY",
    "LLM__SELECTOR",
    "LLM__QUOTA_FULL",
    "LLM__MAX_WAITERS",
    "LLM__CALL_DEADLINE_S",
    "LLM__HEDGE__AFTER_S",
    "LLM__HEDGE__MAX_EXTRA",
    "LLM__HEDGE__STALL_AFTER_S",
    "LLM__STREAM__STALL_THRESHOLD_MS",
    "LLM_TIMEOUT",
    "LLM_CIRCUIT_BREAKER_COOLDOWN",
    "LLM__BATCH_SIZE",
];

const PROCESS_KEYS: [&str; 10] = [
    "PGW_LIMITER_BACKEND",
    "PGW_CACHE_BACKEND",
    "PGW_CACHE_NAMESPACE",
    "PGW_CACHE_TTL_S",
    "PGW_TELEMETRY_BACKEND",
    "PGW_TELEMETRY_PG_WRITE_TIMEOUT_S",
    "PGW_TELEMETRY_TEXT_CAP",
    "PGW_LEASE_TTL_S",
    "PGW_REDACT_IPS",
    "PGW_STRUCTURED_MAX_RETRIES",
];

/// Hostile values for keys that do not hold secrets.
const VALUES: [&str; 34] = [
    "",
    "   ",
    "0",
    "-0",
    "-1",
    "1",
    "3",
    "1.5",
    "1e309",
    "-1e309",
    "1e300",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "18446744073709551616",
    "99999999999999999999999999999999999999999",
    "+7",
    "1_000",
    "٣",
    "ｔｒｕｅ",
    "true",
    "\u{202e}evil",
    "none",
    "memory",
    "redis",
    "{}",
    "[]",
    "{\"a\":",
    "https://x.example/v1",
    "http://",
    "ftp://x.example",
    "/dev/zero",
    "/nonexistent/key",
];

fn source_key() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("QWEN"),
            Just("Qwen"),
            Just("OPEN_AI"),
            Just("ÅÄ"),
            Just("A__B")
        ],
        prop_oneof![
            Just("1"),
            Just("01"),
            Just("2"),
            Just("99999999999999999999999"),
            Just("x")
        ],
        prop::sample::select(polygateway::SOURCE_FIELDS.to_vec()),
    )
        .prop_map(|(p, n, f)| format!("LLM__{p}__{n}__{f}"))
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => source_key(),
        2 => prop::sample::select(SCOPE_KEYS.to_vec()).prop_map(str::to_owned),
        2 => prop::sample::select(PROCESS_KEYS.to_vec()).prop_map(str::to_owned),
        1 => "LLM__[A-Z_]{0,12}",
        1 => "\\PC{0,12}",
    ]
}

/// The value of `key`: secrets only in the keys that hold secrets (a numeric key may echo its
/// value in the error, which is allowed).
fn value_for(key: &str, pick: usize) -> String {
    let hostile = VALUES[pick % VALUES.len()].to_owned();
    if key.ends_with("__API_KEY") {
        return match pick % 3 {
            0 => KEY_SECRET.to_owned(),
            1 => format!("{KEY_SECRET}\n"),
            _ => format!("{KEY_SECRET}\u{1}"),
        };
    }
    if key.ends_with("__HEADERS") {
        return match pick % 5 {
            0 => format!("{{\"x-tenant\":\"{HEADER_SECRET}\"}}"),
            1 => format!("{{\"x-tenant\":\"{HEADER_SECRET}\\u0001\"}}"),
            2 => format!("{{\"authorization\":\"{HEADER_SECRET}\"}}"),
            3 => format!("{{\"x-t\":\"${{{HEADER_SECRET}}}\"}}"),
            _ => format!("{{\"x-tenant\":\"{HEADER_SECRET}"),
        };
    }
    match key {
        "REDIS_URL" => format!("redis://:{REDIS_SECRET}@h.example:6379"),
        "PGW_TELEMETRY_PG_DSN" => format!("postgres://u:{PG_SECRET}@h.example/db"),
        _ => hostile,
    }
}

fn env_shaped(origin: &str) -> bool {
    !origin.is_empty()
}

fn check(map: &polygateway::EnvMap) -> Result<(), TestCaseError> {
    match GatewaySettings::from_env_map("LLM", map) {
        Err(e) => {
            prop_assert!(env_shaped(&e.origin), "{:?}", e);
            let text = format!("{e} {e:?}");
            for secret in SECRETS {
                prop_assert!(!text.contains(secret), "{}", text);
            }
        }
        Ok(v) => {
            let mut text = format!("{v:?}");
            if let Ok(plan) = ClientPlan::from_settings(&v) {
                text.push_str(&format!("{plan:?}"));
            } else if let Err(e) = ClientPlan::from_settings(&v) {
                text.push_str(&format!("{e} {e:?}"));
            }
            for secret in SECRETS {
                prop_assert!(!text.contains(secret), "{}", text);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// 20 §2.4, §10; 05 R-15: arbitrary maps never panic, errors carry an origin, and no secret
    /// is ever rendered.
    #[test]
    fn cf_adversarial_env_maps_never_panic_or_leak(
        entries in prop::collection::vec((key(), any::<usize>()), 0..10),
        with_redis in any::<bool>(),
        with_pg in any::<bool>(),
    ) {
        let mut m = map(&BASE);
        m.insert("LLM__QWEN__1__API_KEY".to_owned(), KEY_SECRET.to_owned());
        if with_redis {
            m.insert("REDIS_URL".to_owned(), value_for("REDIS_URL", 0));
        }
        if with_pg {
            m.insert("PGW_TELEMETRY_PG_DSN".to_owned(), value_for("PGW_TELEMETRY_PG_DSN", 0));
        }
        for (k, pick) in entries {
            let v = value_for(&k, pick);
            m.insert(k, v);
        }
        check(&m)?;
    }
}

#[test]
fn r_33_endless_api_key_file_is_a_typed_error() {
    // Adversarial: `/dev/zero` never ends; reading it whole would exhaust memory.
    let mut m = map(&BASE);
    m.remove("LLM__QWEN__1__API_KEY");
    m.insert(
        "LLM__QWEN__1__API_KEY_FILE".to_owned(),
        "/dev/zero".to_owned(),
    );
    let e = env_err(&m);
    assert_eq!(e.code, "source.api_key_file");
    assert_eq!(e.origin, "LLM__QWEN__1__API_KEY_FILE");
}

#[test]
fn a1_non_finite_and_huge_durations_name_their_key() {
    for (key, value) in [
        ("LLM__QWEN__1__TIMEOUT_S", "NaN"),
        ("LLM__QWEN__1__TIMEOUT_S", "-inf"),
        ("LLM__QWEN__1__TIMEOUT_S", "1e309"),
        ("LLM__QWEN__1__TIMEOUT_S", "-3"),
        // Finite but beyond a `Duration`: refused by validation, not later by the transport.
        ("LLM__QWEN__1__TIMEOUT_S", "1e30"),
        ("LLM__CALL_DEADLINE_S", "inf"),
        (
            "LLM__RETRY__MAX_ATTEMPTS",
            "99999999999999999999999999999999999999999",
        ),
        ("LLM__RETRY__MAX_ATTEMPTS", "1.0"),
        ("LLM__QWEN__1__MAX_RESPONSE_BYTES", "18446744073709551616"),
        ("PGW_LEASE_TTL_S", "NaN"),
    ] {
        let e = env_err(&env_with(&[(key, value)]));
        assert_eq!(e.origin, key, "{key}={value}: {e:?}");
    }
    let e = env_err(&env_with(&[("LLM__QWEN__1__TIMEOUT_S", "1e30")]));
    assert_eq!(e.code, "source.watchdog", "{e:?}");
    assert!(e.to_string().contains("at most 1.8e19"), "{e}");
}

#[test]
fn r_15_secret_header_values_never_echoed_in_errors() {
    for headers in [
        format!("{{\"x-tenant\":\"{HEADER_SECRET}\\u0001\"}}"),
        format!("{{\"x-tenant\":\"{HEADER_SECRET}"),
        format!("{{\"x-t\":\"${{{HEADER_SECRET} x}}\"}}"),
        format!("{{\"x-t\":\"${{UNSET_{}}}\"}}", "A"),
        format!("{{\"x-t\":{{\"v\":\"{HEADER_SECRET}\"}}}}"),
    ] {
        let e = env_err(&env_with(&[("LLM__QWEN__1__HEADERS", &headers)]));
        assert_eq!(e.origin, "LLM__QWEN__1__HEADERS", "{e:?}");
        let text = format!("{e} {e:?}");
        assert!(!text.contains(HEADER_SECRET), "{text}");
    }
}
