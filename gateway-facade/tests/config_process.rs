//! Process-wide keys and stage C6–C9 (20 §8, §11.3; 05 R-34, R-43): backends, Redis URL,
//! telemetry, cache, pricing file, lease and probe TTLs.

mod support;

use std::path::PathBuf;

use polygateway::ScopePolicy;
use polygateway::{CacheBackend, SchemaMode, StateBackend, TelemetryBackend};
use support::*;

#[test]
fn process_wide_defaults() {
    let v = from_env(&env_with(&[])).unwrap();
    assert_eq!(v.limiter_backend, StateBackend::Memory);
    assert_eq!(v.breaker_backend, StateBackend::Memory);
    assert_eq!(v.cache_backend, CacheBackend::None);
    assert_eq!(v.telemetry_backend, TelemetryBackend::None);
    assert_eq!(v.telemetry_sqlite_path, PathBuf::from("telemetry.db"));
    assert_eq!(v.telemetry_pg_pool_max, 4);
    assert_eq!(v.telemetry_pg_write_timeout_s, 5.0);
    assert_eq!(v.telemetry_schema_mode, None);
    assert_eq!(v.policy.telemetry_text_cap, None);
    assert_eq!(v.structured_max_retries, 2);
    assert_eq!(v.cache_ttl_s, 86_400.0);
    assert_eq!(v.cache_memory_max_entries, 10_000);
    assert_eq!(v.cache_namespace.as_deref(), Some("llm"));
    assert!(v.redact_ips);
    // D7: lease = max timeout + 30, probe = max timeout + 5.
    assert_eq!(v.lease_ttl_s, Some(150.0));
    assert_eq!(v.policy.breaker.probe_ttl_s, Some(125.0));
    assert_eq!((v.lease_ttl_s(), v.probe_ttl_s()), (150.0, 125.0));
}

#[test]
fn process_wide_values_parse() {
    let v = from_env(&env_with(&[
        ("PGW_TELEMETRY_SCHEMA_MODE", "AUTO"),
        ("PGW_TELEMETRY_TEXT_CAP", "100"),
        ("PGW_REDACT_IPS", "false"),
        ("PGW_STRUCTURED_MAX_RETRIES", "0"),
        ("PGW_CACHE_NAMESPACE", "team-a"),
        ("PGW_CACHE_SALT", "v2"),
        ("PGW_CACHE_TTL_S", "60"),
        ("PGW_LEASE_TTL_S", "200"),
    ]))
    .unwrap();
    assert_eq!(v.telemetry_schema_mode, Some(SchemaMode::Auto));
    assert_eq!(v.policy.telemetry_text_cap, Some(100));
    assert!(!v.redact_ips);
    assert_eq!(v.structured_max_retries, 0);
    assert_eq!(v.cache_namespace.as_deref(), Some("team-a"));
    assert_eq!(
        v.cache_salt
            .as_ref()
            .map(|salt| salt.expose_secret().as_str()),
        Some("v2")
    );
    assert!(
        !format!("{v:?}").contains("v2\""),
        "the salt never prints in Debug"
    );
    assert_eq!(v.cache_ttl_s, 60.0);
    assert_eq!(v.lease_ttl_s, Some(200.0));
    let e = env_err(&env_with(&[("PGW_REDACT_IPS", "maybe")]));
    assert_err(&e, "config.parse", "PGW_REDACT_IPS");
}

#[test]
fn r_43_backends_not_in_the_build_are_unavailable() {
    let url = ("REDIS_URL", "redis://127.0.0.1:6379/0");
    // The Redis limiter, breaker and cache exist behind the `redis` feature (adapter-redis).
    for key in [
        "PGW_LIMITER_BACKEND",
        "PGW_BREAKER_BACKEND",
        "PGW_CACHE_BACKEND",
    ] {
        let r = from_env(&env_with(&[(key, "redis"), url]));
        assert_eq!(r.is_ok(), cfg!(feature = "redis"), "{key}=redis: {r:?}");
        if let Err(e) = r {
            assert_err(&e, "backend.unavailable", key);
        }
    }
    // Issue 23: without REDIS_URL / the DSN a build without the backend still reports the
    // missing backend (not the URL); a build with it asks for the URL.
    let e = env_err(&env_with(&[("PGW_LIMITER_BACKEND", "redis")]));
    if cfg!(feature = "redis") {
        assert_err(&e, "settings.backend", "REDIS_URL");
    } else {
        assert_err(&e, "backend.unavailable", "PGW_LIMITER_BACKEND");
    }
    let e = env_err(&env_with(&[("PGW_TELEMETRY_BACKEND", "postgres")]));
    if cfg!(feature = "postgres") {
        assert_err(&e, "telemetry.pg_dsn", "PGW_TELEMETRY_PG_DSN");
    } else {
        assert_err(&e, "backend.unavailable", "PGW_TELEMETRY_BACKEND");
    }
    // The in-memory response cache is built in (70 C-61).
    assert!(from_env(&env_with(&[("PGW_CACHE_BACKEND", "memory")])).is_ok());
    // Postgres is opt-in (cargo feature `postgres`; a workspace build enables it through the CLI).
    let pg = env_with(&[
        ("PGW_TELEMETRY_BACKEND", "postgres"),
        (
            "PGW_TELEMETRY_PG_DSN",
            "postgresql+asyncpg://u:p@127.0.0.1/db",
        ),
    ]);
    if cfg!(feature = "postgres") {
        assert!(from_env(&pg).is_ok());
    } else {
        assert_err(
            &env_err(&pg),
            "backend.unavailable",
            "PGW_TELEMETRY_BACKEND",
        );
    }
    // The default build has SQLite.
    let v = from_env(&env_with(&[("PGW_TELEMETRY_BACKEND", "sqlite")]));
    assert_eq!(v.is_ok(), cfg!(feature = "sqlite"));
    // The struct path names the field.
    let s = polygateway::GatewaySettings {
        cache_backend: CacheBackend::Redis,
        redis_url: Some("redis://127.0.0.1:6379/0".to_owned().into()),
        ..settings(vec![source("qwen_1", 120.0)])
    };
    let r = s.validate();
    assert_eq!(r.is_ok(), cfg!(feature = "redis"));
    if let Err(e) = r {
        assert_err(&e, "backend.unavailable", "GatewaySettings.cache_backend");
    }
    let s = polygateway::GatewaySettings {
        cache_backend: CacheBackend::Memory,
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert!(s.validate().is_ok());
}

#[test]
fn c6_redis_url_and_postgres_dsn() {
    // A backend missing from the build is reported before its own settings (issue 23); with
    // the backend in the build, its missing URL / DSN is.
    let e = env_err(&env_with(&[("PGW_LIMITER_BACKEND", "redis")]));
    if e.code == "backend.unavailable" {
        assert_err(&e, "backend.unavailable", "PGW_LIMITER_BACKEND");
    } else {
        assert_err(&e, "settings.backend", "REDIS_URL");
    }
    let e = env_err(&env_with(&[("PGW_TELEMETRY_BACKEND", "postgres")]));
    if e.code == "backend.unavailable" {
        assert_err(&e, "backend.unavailable", "PGW_TELEMETRY_BACKEND");
    } else {
        assert_err(&e, "telemetry.pg_dsn", "PGW_TELEMETRY_PG_DSN");
    }
    let e = env_err(&env_with(&[("PGW_TELEMETRY_PG_DSN", "mysql://x")]));
    assert_err(&e, "config.domain", "PGW_TELEMETRY_PG_DSN");
    let e = env_err(&env_with(&[("PGW_TELEMETRY_PG_POOL_MAX", "0")]));
    assert_err(&e, "config.domain", "PGW_TELEMETRY_PG_POOL_MAX");
    let s = polygateway::GatewaySettings {
        policy: ScopePolicy {
            telemetry_text_cap: Some(0),
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(s.validate()),
        "telemetry.text_cap",
        "GatewaySettings.telemetry_text_cap",
    );
}

#[test]
fn c7_lease_ttl_must_exceed_max_timeout() {
    let e = env_err(&env_with(&[("PGW_LEASE_TTL_S", "120")]));
    assert_err(&e, "settings.lease_ttl", "PGW_LEASE_TTL_S");
}

#[test]
fn c8_stall_window_below_ttft_warns() {
    let v = from_env(&env_with(&[
        ("LLM__QWEN__1__TTFT_TIMEOUT_S", "30"),
        ("LLM__QWEN__1__INTER_TOKEN_TIMEOUT_S", "10"),
        ("LLM__BACKPRESSURE__STALL_WINDOW_S", "20"),
        ("LLM__BACKPRESSURE__POLL_INTERVAL_S", "0.1"),
    ]))
    .unwrap();
    assert_eq!(codes(v.warnings()), ["backpressure.window_below_ttft"]);
}

#[test]
fn c9_probe_ttl_at_least_timeout_plus_grace() {
    let e = env_err(&env_with(&[("LLM__BREAKER__PROBE_TTL_S", "124")]));
    assert_err(&e, "breaker.probe_ttl", "LLM__BREAKER__PROBE_TTL_S");
    let v = from_env(&env_with(&[("LLM__BREAKER__PROBE_TTL_S", "125")])).unwrap();
    assert_eq!(v.policy.breaker.probe_ttl_s, Some(125.0));
}

#[test]
fn c5_cross_field_policies_on_the_env_path() {
    let e = env_err(&env_with(&[("LLM__RETRY__BACKOFF_MAX_S", "0.5")]));
    assert_err(&e, "settings.policy", "LLM__RETRY__BACKOFF_MAX_S");
    let e = env_err(&env_with(&[("LLM__BACKPRESSURE__POLL_INTERVAL_S", "300")]));
    assert_err(&e, "settings.policy", "LLM__BACKPRESSURE__POLL_INTERVAL_S");
}

#[test]
fn pricing_file_loaded_validated_and_warned() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("prices.json");
    std::fs::write(
        &good,
        r#"{"qwen-max": {"input_per_1m": 1.0, "output_per_1m": 8.0, "note": "x"},
            "deepseek-chat": {"input_per_1m": 2, "output_per_1m": 8, "cached_input_per_1m": 0.5}}"#,
    )
    .unwrap();
    let v = from_env(&env_with(&[("PGW_PRICING_PATH", good.to_str().unwrap())])).unwrap();
    let table = v.pricing().unwrap();
    assert_eq!(table.prices["deepseek-chat"].cached_input_per_1m, Some(0.5));
    assert_eq!(codes(v.warnings()), ["pricing.unknown_member"]);

    for (i, body) in [
        "[]",
        "{",
        r#"{"m": {"input_per_1m": 1}}"#,
        r#"{"m": {"input_per_1m": -1, "output_per_1m": 1}}"#,
        r#"{"m": 3}"#,
    ]
    .iter()
    .enumerate()
    {
        let bad = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&bad, body).unwrap();
        let e = env_err(&env_with(&[("PGW_PRICING_PATH", bad.to_str().unwrap())]));
        assert_err(&e, "pricing.invalid", "PGW_PRICING_PATH");
    }
    let e = env_err(&env_with(&[(
        "PGW_PRICING_PATH",
        "/nonexistent/prices.json",
    )]));
    assert_err(&e, "pricing.invalid", "PGW_PRICING_PATH");
    let v = from_env(&env_with(&[])).unwrap();
    assert!(v.pricing().is_none());
}

/// `PGW_REDIS_BREAKER_MIRROR_MS` / `PGW_REDIS_WRITE_BEHIND_MS` (issue 15, chosen names): integers
/// of milliseconds in [0, 60 000], 0 = off; defaults 250 and 100; a bad value names its key.
#[test]
fn redis_mirror_and_write_behind_keys() {
    let v = from_env(&env_with(&[])).unwrap();
    assert_eq!(
        (v.redis_breaker_mirror_ms, v.redis_write_behind_ms),
        (250, 100)
    );
    let v = from_env(&env_with(&[
        ("PGW_REDIS_BREAKER_MIRROR_MS", "0"),
        ("PGW_REDIS_WRITE_BEHIND_MS", "60000"),
    ]))
    .unwrap();
    assert_eq!(
        (v.redis_breaker_mirror_ms, v.redis_write_behind_ms),
        (0, 60_000)
    );
    let v = from_env(&env_with(&[
        ("PGW_REDIS_BREAKER_MIRROR_MS", " 1000 "),
        ("PGW_REDIS_WRITE_BEHIND_MS", "0"),
    ]))
    .unwrap();
    assert_eq!(
        (v.redis_breaker_mirror_ms, v.redis_write_behind_ms),
        (1000, 0)
    );
    for key in ["PGW_REDIS_BREAKER_MIRROR_MS", "PGW_REDIS_WRITE_BEHIND_MS"] {
        for bad in ["0.5", "250ms", "x", "true"] {
            let e = env_err(&env_with(&[(key, bad)]));
            assert_err(&e, "config.parse", key);
        }
        for bad in ["-1", "60001", "99999999999"] {
            let e = env_err(&env_with(&[(key, bad)]));
            assert!(
                e.code == "config.domain" || e.code == "config.parse",
                "{key}={bad}: {e:?}"
            );
            assert_eq!(e.origin, key, "{key}={bad}");
        }
        let e = env_err(&env_with(&[(key, "60001")]));
        assert_err(&e, "config.domain", key);
        assert!(e.message.contains(key), "{e:?}");
    }
    // The struct path names the field.
    let s = polygateway::GatewaySettings {
        redis_write_behind_ms: 60_001,
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(s.validate()),
        "settings.backend",
        "GatewaySettings.redis_write_behind_ms",
    );
    let s = polygateway::GatewaySettings {
        redis_breaker_mirror_ms: u32::MAX,
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(s.validate()),
        "settings.backend",
        "GatewaySettings.redis_breaker_mirror_ms",
    );
}
