//! Stage A — the environment path (20 §2, §3, §4, §6, §11.1; 05 R-33, R-41, R-44):
//! key grammar, parsing by type, origin discipline, unknown keys, aliases and legacy keys.
//! Every error assertion checks the stable `code` and the key, never message text.

use crate::support;

use std::io::Write;

use gateway_ports::{AuthStyle, SelectorKind};
use polygateway::GatewaySettings;
use support::*;

fn names(m: &polygateway::EnvMap) -> Vec<String> {
    match from_env(m) {
        Ok(v) => v.sources.iter().map(|s| s.name.clone()).collect(),
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn cf_026_four_segment_keys_make_sources_qwen_1_qwen_2() {
    assert_eq!(names(&env2_with(&[])), ["qwen_1", "qwen_2"]);
}

#[test]
fn cf_027_reserved_segments_never_make_sources() {
    let m = env2_with(&[
        ("LLM__HEDGE__1__BASE_URL", "https://h.example/v1"),
        ("LLM__HEDGE__1__API_KEY", "sk-h"),
        ("LLM__HEDGE__1__MODEL", "h"),
        ("LLM__HEDGE__1__TIMEOUT_S", "10"),
        ("LLM__STREAM__1__BASE_URL", "https://s.example/v1"),
        ("LLM__STREAM__1__API_KEY", "sk-s"),
        ("LLM__STREAM__1__MODEL", "s"),
        ("LLM__CALL_DEADLINE_S", "60"),
        ("LLM__HEDGE__AFTER_S", "8"),
        ("LLM__STREAM__STALL_THRESHOLD_MS", "500"),
    ]);
    let v = from_env(&m).unwrap();
    let names: Vec<_> = v.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["qwen_1", "qwen_2"]);
    assert_eq!(v.policy.call_deadline_s, Some(60.0));
    assert_eq!(v.policy.hedge_after_s, Some(8.0));
    assert_eq!(v.policy.stall_threshold_ms, Some(500));
    // A four-segment key under a reserved segment is an unknown key (20 §3.2, §2.5).
    let unknown = v
        .warnings()
        .iter()
        .filter(|w| w.code == "config.unknown_key")
        .count();
    assert_eq!(unknown, 7);
}

#[test]
fn cf_028_default_timeout_is_120() {
    assert_eq!(
        from_env(&env_with(&[])).unwrap().sources[0].timeout_s,
        120.0
    );
}

#[test]
fn cf_029_hedge_max_extra_not_a_number_names_the_key() {
    let e = env_err(&env2_with(&[("LLM__HEDGE__MAX_EXTRA", "x")]));
    assert_err(&e, "config.parse", "LLM__HEDGE__MAX_EXTRA");
}

#[test]
fn cf_030_call_deadline_unset_is_none() {
    assert_eq!(
        from_env(&env_with(&[])).unwrap().policy.call_deadline_s,
        None
    );
}

#[test]
fn cf_031_call_deadline_30() {
    let v = from_env(&env_with(&[("LLM__CALL_DEADLINE_S", "30")])).unwrap();
    assert_eq!(v.policy.call_deadline_s, Some(30.0));
}

#[test]
fn cf_032_bad_call_deadlines_name_the_key() {
    for (raw, code) in [
        ("0", "config.domain"),
        ("-1", "config.domain"),
        ("nan", "config.domain"),
        ("inf", "config.domain"),
        ("1e999", "config.domain"),
        ("abc", "config.parse"),
    ] {
        let e = env_err(&env_with(&[("LLM__CALL_DEADLINE_S", raw)]));
        assert_err(&e, code, "LLM__CALL_DEADLINE_S");
    }
    // Finite but too large for a Duration: the deadline domain check (C10) names the key too.
    let e = env_err(&env_with(&[("LLM__CALL_DEADLINE_S", "1e300")]));
    assert_err(&e, "deadline.domain", "LLM__CALL_DEADLINE_S");
}

#[test]
fn cf_034_deadline_shorter_than_timeout_is_legal() {
    let v = from_env(&env_with(&[("LLM__CALL_DEADLINE_S", "1")])).unwrap();
    assert_eq!(
        (v.policy.call_deadline_s, v.sources[0].timeout_s),
        (Some(1.0), 120.0)
    );
}

#[test]
fn parsing_by_type_float_forms() {
    for (raw, want) in [
        ("+2", 2.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        (" 7 ", 7.0),
    ] {
        let v = from_env(&env_with(&[("LLM__QWEN__1__TIMEOUT_S", raw)])).unwrap();
        assert_eq!(v.sources[0].timeout_s, want, "{raw}");
    }
    let e = env_err(&env_with(&[("LLM__QWEN__1__TIMEOUT_S", "1_0")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__TIMEOUT_S");
    let e = env_err(&env_with(&[("LLM__QWEN__1__TIMEOUT_S", "abc")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__TIMEOUT_S");
}

#[test]
fn parsing_by_type_int_bool_json_choice() {
    let e = env_err(&env_with(&[("LLM__RETRY__MAX_ATTEMPTS", "3.0")]));
    assert_err(&e, "config.parse", "LLM__RETRY__MAX_ATTEMPTS");
    let e = env_err(&env_with(&[("LLM__QWEN__1__RPM", "true")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__RPM");
    let e = env_err(&env_with(&[("LLM__QWEN__1__MAX_CONCURRENCY", "-1")]));
    assert_err(&e, "config.domain", "LLM__QWEN__1__MAX_CONCURRENCY");
    let e = env_err(&env_with(&[("LLM__QWEN__1__RPM", "99999999999")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__RPM");
    let v = from_env(&env_with(&[
        ("LLM__RETRY__MAX_ATTEMPTS", "+5"),
        ("LLM__QWEN__1__TRUST_ENV", "OFF"),
        ("LLM__SELECTOR", "Round_Robin"),
        ("LLM__QWEN__1__EXTRA_BODY", r#"{"temperature": 0}"#),
    ]))
    .unwrap();
    assert_eq!(v.policy.retry.max_attempts, 5);
    assert!(!v.sources[0].trust_env);
    assert_eq!(v.policy.selector, SelectorKind::RoundRobin);
    assert_eq!(v.sources[0].extra_body["temperature"], 0);
    let e = env_err(&env_with(&[("LLM__QWEN__1__TRUST_ENV", "maybe")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__TRUST_ENV");
    for raw in ["[1]", "{", "3"] {
        let e = env_err(&env_with(&[("LLM__QWEN__1__EXTRA_BODY", raw)]));
        assert_err(&e, "config.parse", "LLM__QWEN__1__EXTRA_BODY");
    }
    let e = env_err(&env_with(&[("LLM__QUOTA_FULL", "sometimes")]));
    assert_err(&e, "config.parse", "LLM__QUOTA_FULL");
    let e = env_err(&env_with(&[("LLM__QWEN__1__MISSING_DONE", "ignore")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__MISSING_DONE");
    let e = env_err(&env_with(&[("LLM__QWEN__1__EFFORT_FALLBACK", "maybe")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__EFFORT_FALLBACK");
}

#[test]
fn a2_domain_errors_name_the_key() {
    for (key, raw) in [
        ("LLM__HEDGE__AFTER_S", "0"),
        ("LLM__HEDGE__MAX_EXTRA", "0"),
        ("LLM__HEDGE__MAX_EXTRA", "4"),
        ("LLM__STREAM__STALL_THRESHOLD_MS", "0"),
        ("PGW_TELEMETRY_TEXT_CAP", "0"),
        ("LLM__MAX_WAITERS", "0"),
        ("LLM__QWEN__1__MAX_RESPONSE_BYTES", "0"),
        ("LLM__QWEN__1__EST_TOKENS", "0"),
        ("LLM__RETRY__MAX_HINT_S", "0"),
        ("LLM__RETRY__BUDGET_RATIO", "-1"),
        ("LLM__BREAKER__FAIL_RATE", "1.5"),
        ("LLM__BREAKER__MIN_CALLS", "0"),
        ("LLM__BACKPRESSURE__STALL_WINDOW_S", "inf"),
    ] {
        let e = env_err(&env_with(&[(key, raw)]));
        assert_err(&e, "config.domain", key);
    }
}

#[test]
fn r_35_r_37_r_29_keys_parse() {
    let v = from_env(&env_with(&[
        ("LLM__RETRY__MAX_HINT_S", "30"),
        ("LLM__RETRY__BUDGET_RATIO", "0.2"),
        ("LLM__MAX_WAITERS", "5"),
        ("LLM__QWEN__1__MAX_RESPONSE_BYTES", "1024"),
    ]))
    .unwrap();
    assert_eq!(v.policy.retry.max_hint_s, Some(30.0));
    assert_eq!(v.policy.retry.budget_ratio, Some(0.2));
    assert_eq!(v.policy.max_waiters, 5);
    assert_eq!(v.sources[0].max_response_bytes, 1024);
    let d = from_env(&env_with(&[])).unwrap();
    assert_eq!(
        (
            d.policy.retry.max_hint_s,
            d.policy.retry.budget_ratio,
            d.policy.max_waiters
        ),
        (None, None, 10_000)
    );
    assert_eq!(d.sources[0].max_response_bytes, 64 * 1024 * 1024);
}

#[test]
fn a3_missing_required_field_names_the_key() {
    let mut m = env2_with(&[]);
    m.remove("LLM__QWEN__2__API_KEY");
    assert_err(
        &env_err(&m),
        "source.missing_field",
        "LLM__QWEN__2__API_KEY",
    );
    let mut m = env_with(&[]);
    m.remove("LLM__QWEN__1__BASE_URL");
    assert_err(
        &env_err(&m),
        "source.missing_field",
        "LLM__QWEN__1__BASE_URL",
    );
    let mut m = env_with(&[]);
    m.insert("LLM__QWEN__1__MODEL".into(), "   ".into()); // empty after trimming = unset
    assert_err(&env_err(&m), "source.missing_field", "LLM__QWEN__1__MODEL");
}

#[test]
fn r_33_auth_style_none_needs_no_key() {
    let mut m = env_with(&[("LLM__QWEN__1__AUTH_STYLE", "none")]);
    m.remove("LLM__QWEN__1__API_KEY");
    let v = from_env(&m).unwrap();
    assert_eq!(v.sources[0].auth_style, AuthStyle::None);
    assert!(v.sources[0].api_key.is_none());
    let v = from_env(&env_with(&[("LLM__QWEN__1__AUTH_STYLE", "API_KEY_HEADER")])).unwrap();
    assert_eq!(v.sources[0].auth_style, AuthStyle::ApiKeyHeader);
    let e = env_err(&env_with(&[("LLM__QWEN__1__AUTH_STYLE", "basic")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__AUTH_STYLE");
}

#[test]
fn a4_provider_case_variants_address_one_source() {
    let v = from_env(&env_with(&[("LLM__Qwen__1__TIMEOUT_S", "30")])).unwrap();
    assert_eq!(v.sources.len(), 1);
    assert_eq!(v.sources[0].timeout_s, 30.0);
    let e = env_err(&env_with(&[("LLM__Qwen__1__MODEL", "other")]));
    assert_err(&e, "config.duplicate_field", "LLM__Qwen__1__MODEL");
}

#[test]
fn a5_legacy_cooldown_alias() {
    let v = from_env(&env_with(&[("LLM_CIRCUIT_BREAKER_COOLDOWN", "45")])).unwrap();
    assert_eq!(v.policy.breaker.cooldown_s, 45.0);
    let v = from_env(&env_with(&[
        ("LLM_CIRCUIT_BREAKER_COOLDOWN", "60"),
        ("LLM__BREAKER__COOLDOWN_S", "60.0"),
    ]))
    .unwrap();
    assert_eq!(v.policy.breaker.cooldown_s, 60.0);
    let e = env_err(&env_with(&[
        ("LLM_CIRCUIT_BREAKER_COOLDOWN", "60"),
        ("LLM__BREAKER__COOLDOWN_S", "30"),
    ]));
    assert_err(&e, "config.alias_conflict", "LLM__BREAKER__COOLDOWN_S");
    // A later guard on the legacy value names the key that actually matched (20 §2.4).
    let e = env_err(&env_with(&[
        ("LLM_CIRCUIT_BREAKER_COOLDOWN", "700"),
        ("LLM__BREAKER__COOLDOWN_MAX_S", "600"),
    ]));
    assert_err(&e, "settings.policy", "LLM__BREAKER__COOLDOWN_MAX_S");
    let e = env_err(&env_with(&[("LLM_CIRCUIT_BREAKER_COOLDOWN", "0")]));
    assert_err(&e, "config.domain", "LLM_CIRCUIT_BREAKER_COOLDOWN");
}

#[test]
fn legacy_scope_timeout_is_the_source_default() {
    let v = from_env(&env2_with(&[
        ("LLM_TIMEOUT", "30"),
        ("LLM__QWEN__2__TIMEOUT_S", "50"),
    ]))
    .unwrap();
    assert_eq!(v.sources[0].timeout_s, 30.0);
    assert_eq!(v.sources[1].timeout_s, 50.0);
    let e = env_err(&env_with(&[("LLM_TIMEOUT", "x")]));
    assert_err(&e, "config.parse", "LLM_TIMEOUT");
}

#[test]
fn a6_telemetry_backend_is_required() {
    let mut m = env_with(&[]);
    m.remove("PGW_TELEMETRY_BACKEND");
    assert_err(
        &env_err(&m),
        "telemetry.backend_missing",
        "PGW_TELEMETRY_BACKEND",
    );
}

#[test]
fn a7_unknown_keys_warn_and_single_underscore_keys_are_ignored() {
    let v = from_env(&env_with(&[
        ("LLM__QWEN__1__WEIGHT", "3"),
        ("LLM__QWEN__1__EFFORT_FALLBAK", "nearest"),
        ("LLM__RETRY__MAX_ATEMPTS", "3"),
        ("LLM__FOO", "1"),
        ("LLM__A__B__C__D", "1"),
        ("LLM__BATCH_SIZE", "8"),
        ("LLM__WHATEVER__X", "1"),
        ("LLM_SOMETHING_ELSE", "1"),
        ("OTHER__QWEN__1__MODEL", "x"),
    ]))
    .unwrap();
    assert_eq!(codes(v.warnings()), vec!["config.unknown_key"; 7]);
    assert_eq!(v.sources.len(), 1);
}

#[test]
fn a8_api_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(b"  sk-from-file-123 \n")
        .unwrap();
    let p = path.to_str().unwrap();
    let mut m = env_with(&[("LLM__QWEN__1__API_KEY_FILE", p)]);
    m.remove("LLM__QWEN__1__API_KEY");
    let v = from_env(&m).unwrap();
    assert_eq!(
        v.sources[0].api_key.as_ref().unwrap().expose_secret(),
        "sk-from-file-123"
    );
    assert!(!format!("{v:?}").contains("sk-from-file-123"));

    let e = env_err(&env_with(&[("LLM__QWEN__1__API_KEY_FILE", p)]));
    assert_err(&e, "source.api_key_conflict", "LLM__QWEN__1__API_KEY_FILE");

    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n").unwrap();
    for file in [empty.to_str().unwrap(), "/nonexistent/pgw/key"] {
        let mut m = env_with(&[("LLM__QWEN__1__API_KEY_FILE", file)]);
        m.remove("LLM__QWEN__1__API_KEY");
        assert_err(
            &env_err(&m),
            "source.api_key_file",
            "LLM__QWEN__1__API_KEY_FILE",
        );
    }
}

#[test]
fn a9_headers_and_query() {
    let v = from_env(&env_with(&[
        ("TEAM", "blue"),
        (
            "LLM__QWEN__1__HEADERS",
            r#"{"X-Team": "${TEAM}-1", "X-Cost": "$5"}"#,
        ),
        ("LLM__QWEN__1__QUERY", r#"{"api-version": "2024-10-21"}"#),
        ("LLM__QWEN__1__CA_FILE", "/etc/ssl/extra.pem"),
    ]))
    .unwrap();
    let src = &v.sources[0];
    assert_eq!(src.headers["X-Team"].expose_secret(), "blue-1");
    assert_eq!(src.headers["X-Cost"].expose_secret(), "$5");
    assert_eq!(src.query["api-version"], "2024-10-21");
    assert_eq!(
        src.ca_file.as_deref(),
        Some(std::path::Path::new("/etc/ssl/extra.pem"))
    );
    assert!(!format!("{v:?}").contains("blue-1"));

    for raw in [
        r#"{"X-Team": 1}"#,
        r#"{"X-Team": "${NOPE}"}"#,
        r#"{"X-Team": "${TEAM"}"#,
        r#"{"Authorization": "Bearer x"}"#,
        r#"{"x-request-id": "1"}"#,
        r#"{"bad header": "1"}"#,
    ] {
        let e = env_err(&env_with(&[("LLM__QWEN__1__HEADERS", raw)]));
        assert_err(&e, "source.headers", "LLM__QWEN__1__HEADERS");
    }
    let e = env_err(&env_with(&[("LLM__QWEN__1__HEADERS", "[]")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__HEADERS");
    let e = env_err(&env_with(&[("LLM__QWEN__1__QUERY", r#"{"v": 1}"#)]));
    assert_err(&e, "config.domain", "LLM__QWEN__1__QUERY");
}

#[test]
fn source_order_is_provider_then_n_as_integer() {
    let m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("LLM__QWEN__10__BASE_URL", "https://a.example"),
        ("LLM__QWEN__10__API_KEY", "k"),
        ("LLM__QWEN__10__MODEL", "m"),
        ("LLM__QWEN__2__BASE_URL", "https://a.example/"),
        ("LLM__QWEN__2__API_KEY", "k"),
        ("LLM__QWEN__2__MODEL", "m"),
        ("LLM__OPEN_ROUTER__1__BASE_URL", "https://o.example/v1/"),
        ("LLM__OPEN_ROUTER__1__API_KEY", "k"),
        ("LLM__OPEN_ROUTER__1__MODEL", "m"),
    ]);
    let v = from_env(&m).unwrap();
    let names: Vec<_> = v.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["open_router_1", "qwen_2", "qwen_10"]);
    assert_eq!(v.sources[0].base_url, "https://o.example/v1");
    assert_eq!(v.sources[0].provider, "open_router");
}

#[test]
fn bad_source_segments_and_urls() {
    let e = env_err(&env_with(&[("LLM__QWEN__X__MODEL", "m")]));
    assert_err(&e, "source.name", "LLM__QWEN__X__MODEL");
    let e = env_err(&env_with(&[("LLM__QW-EN__1__MODEL", "m")]));
    assert_err(&e, "source.name", "LLM__QW-EN__1__MODEL");
    let e = env_err(&env_with(&[("LLM__QWEN__1__BASE_URL", "a.example/v1")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__BASE_URL");
}

// 70 C-21, C-22: the source keys parse; a contradictory pair is refused naming both keys.
#[test]
fn c_22_source_level_effort_keys() {
    let e = env_err(&env_with(&[
        ("LLM__QWEN__1__REASONING_EFFORT", "low"),
        ("LLM__QWEN__1__ENABLE_THINKING", "false"),
    ]));
    assert_err(&e, "effort.conflict", "LLM__QWEN__1__REASONING_EFFORT");
    assert!(e.message.contains("ENABLE_THINKING"), "{e:?}");
    let e = env_err(&env_with(&[
        ("LLM__QWEN__1__REASONING_EFFORT", "none"),
        ("LLM__QWEN__1__ENABLE_THINKING", "true"),
    ]));
    assert_err(&e, "effort.conflict", "LLM__QWEN__1__REASONING_EFFORT");
    let e = env_err(&env_with(&[("LLM__QWEN__1__REASONING_EFFORT", "huge")]));
    assert_err(&e, "config.parse", "LLM__QWEN__1__REASONING_EFFORT");
}

#[test]
fn stage_b_errors_on_the_env_path_name_the_key() {
    let e = env_err(&env_with(&[("LLM__QWEN__1__TTFT_TIMEOUT_S", "30")]));
    assert_err(&e, "source.watchdog", "LLM__QWEN__1__TTFT_TIMEOUT_S");
    // The message says what is missing, not only the rule.
    assert!(
        e.message
            .contains("ttft_timeout_s is set but inter_token_timeout_s is not"),
        "{}",
        e.message
    );
    let e = env_err(&env_with(&[
        ("LLM__QWEN__1__TTFT_TIMEOUT_S", "30"),
        ("LLM__QWEN__1__INTER_TOKEN_TIMEOUT_S", "40"),
    ]));
    assert_err(&e, "source.watchdog", "LLM__QWEN__1__INTER_TOKEN_TIMEOUT_S");
    assert!(
        e.message
            .contains("inter_token_timeout_s (40) is not below ttft_timeout_s (30)"),
        "{}",
        e.message
    );
    let e = env_err(&env_with(&[(
        "LLM__QWEN__1__EXTRA_BODY",
        r#"{"stream": true}"#,
    )]));
    assert_err(&e, "source.extra_body", "LLM__QWEN__1__EXTRA_BODY");
}

#[test]
fn r_44_zero_sources_is_an_error_on_the_env_path() {
    let e = env_err(&map(&[("PGW_TELEMETRY_BACKEND", "none")]));
    assert_eq!(e.code, "settings.no_sources");
    assert!(
        e.message.contains("LLM__OPENAI__1__API_KEY"),
        "{}",
        e.message
    );
    // An OCR scope needs only a base URL: the message does not ask for a key or a model.
    let e =
        polygateway::OcrSettings::from_env_map("OCR", &map(&[("PGW_TELEMETRY_BACKEND", "none")]))
            .unwrap_err();
    assert_eq!(e.code, "settings.no_sources");
    assert!(
        e.message.contains("set OCR__MONKEY__1__BASE_URL (and"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("__MODEL"), "{}", e.message);
}

#[test]
fn scope_names_and_other_scopes() {
    let m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("SOAK_OCR__MONKEY__1__BASE_URL", "http://127.0.0.1:9"),
        ("SOAK_OCR__MONKEY__1__API_KEY", "k"),
        ("SOAK_OCR__MONKEY__1__MODEL", "m"),
        ("SOAK_OCR__GLOBAL__RPM", "60"),
        ("SOAK_OCR_FAULT_SOURCES", "x"),
    ]);
    let v = GatewaySettings::from_env_map("SOAK_OCR", &m).unwrap();
    assert_eq!(v.scope, "soak_ocr");
    assert_eq!(v.policy.global_limits.rpm, 60);
    assert!(v.warnings().is_empty());
    let e = GatewaySettings::from_env_map("SOAK__OCR", &m).unwrap_err();
    assert_eq!(e.code, "settings.scope");
    let e = GatewaySettings::from_env_map("1LLM", &m).unwrap_err();
    assert_eq!(e.code, "settings.scope");
}

#[test]
fn from_map_uses_scope_llm_and_returns_warnings() {
    let (s, w) = GatewaySettings::from_map(&env_with(&[("LLM__FOO", "1")])).unwrap();
    assert_eq!(s.scope, "llm");
    assert_eq!(codes(&w), ["config.unknown_key"]);
}

#[test]
fn secrets_never_in_debug_or_errors() {
    let v = from_env(&env_with(&[(
        "REDIS_URL",
        "redis://:hunter2@127.0.0.1:6379/0",
    )]))
    .unwrap();
    let dbg = format!("{v:?}");
    assert!(!dbg.contains("sk-test-secret-qwen1"));
    assert!(!dbg.contains("hunter2"));
    let e = env_err(&env_with(&[("REDIS_URL", "http://:hunter2@127.0.0.1")]));
    assert_err(&e, "config.parse", "REDIS_URL");
    assert!(!format!("{e:?} {e}").contains("hunter2"));
    let e = env_err(&env_with(&[(
        "LLM__QWEN__1__HEADERS",
        r#"{"X-Secret": "topsecret", "Authorization": "x"}"#,
    )]));
    assert!(!format!("{e:?} {e}").contains("topsecret"));
}

#[test]
fn cf_024_version_is_the_crate_version() {
    assert_eq!(polygateway::VERSION, env!("CARGO_PKG_VERSION"));
}
