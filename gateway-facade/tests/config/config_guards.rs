//! The guard matrix (20 §11.2–§11.6): each guard run through every assembly path that has it —
//! environment map (path 1), settings struct (path 2: `validate` / `ClientPlan::from_settings`)
//! and builder with injected components (path 3: `GatewayClientBuilder::plan`). Same
//! configuration, same `code`; each origin is spelt the path's way (20 §2.4, 05 R-19).

use crate::support;

use std::time::Duration;

use gateway_ports::{Effort, RetryPolicy, SourceConfig};
use polygateway::ScopePolicy;
use polygateway::{ClientPlan, GatewayClientBuilder, GatewaySettings};
use support::*;

/// Runs paths 2 and 3 over `sources` and asserts `code` with each path's origin for `field`.
#[track_caller]
fn struct_and_builder(sources: Vec<SourceConfig>, code: &str, field: &str) {
    let s = settings(sources.clone());
    assert_err(
        &err(s.validate()),
        code,
        &format!("GatewaySettings.{field}"),
    );
    assert_err(
        &err(ClientPlan::from_settings(&s)),
        code,
        &format!("GatewaySettings.{field}"),
    );
    assert_err(
        &err(build(builder(sources))),
        code,
        &format!("GatewayClientBuilder::{field}"),
    );
}

#[test]
fn guard_b1_identity() {
    let mut s = source("qwen_1", 120.0);
    s.api_key = None;
    struct_and_builder(vec![s], "source.identity", "sources[qwen_1].api_key");
    let mut m = env_with(&[]);
    m.remove("LLM__QWEN__1__API_KEY");
    assert_err(
        &env_err(&m),
        "source.missing_field",
        "LLM__QWEN__1__API_KEY",
    );

    let mut s = source("qwen_1", 120.0);
    s.base_url = "ftp://x".into();
    struct_and_builder(vec![s], "source.identity", "sources[qwen_1].base_url");
    let mut s = source("qwen_1", 120.0);
    s.model.clear();
    struct_and_builder(vec![s], "source.identity", "sources[qwen_1].model");
    let mut s = source("qwen_1", 120.0);
    s.api_key = Some("".into());
    struct_and_builder(vec![s], "source.identity", "sources[qwen_1].api_key");
    // 05 R-33: auth_style none needs no key, on every path.
    let mut s = source("qwen_1", 120.0);
    s.api_key = None;
    s.auth_style = gateway_ports::AuthStyle::None;
    settings(vec![s.clone()]).validate().unwrap();
    build(builder(vec![s])).unwrap();
}

#[test]
fn guard_b2_est_tokens_and_b2w_est_exceeds_tpm() {
    let mut s = source("qwen_1", 120.0);
    s.est_tokens = Some(0);
    struct_and_builder(vec![s], "source.est_tokens", "sources[qwen_1].est_tokens");
    let e = env_err(&env_with(&[("LLM__QWEN__1__EST_TOKENS", "0")]));
    assert_err(&e, "config.domain", "LLM__QWEN__1__EST_TOKENS");

    let mut s = source("qwen_1", 120.0);
    s.tpm = 500;
    let v = settings(vec![s.clone()]).validate().unwrap();
    assert_eq!(codes(v.warnings()), ["source.est_exceeds_tpm"]);
    assert_eq!(v.warnings()[0].source.as_deref(), Some("qwen_1"));
    assert_eq!(
        codes(&build(builder(vec![s])).unwrap().warnings),
        ["source.est_exceeds_tpm"]
    );
    let v = from_env(&env_with(&[("LLM__QWEN__1__TPM", "500")])).unwrap();
    assert_eq!(codes(v.warnings()), ["source.est_exceeds_tpm"]);
}

#[test]
fn guard_b3_watchdog() {
    let mut s = source("qwen_1", 120.0);
    s.ttft_timeout_s = Some(30.0);
    s.inter_token_timeout_s = Some(40.0);
    struct_and_builder(
        vec![s],
        "source.watchdog",
        "sources[qwen_1].inter_token_timeout_s",
    );
    let e = env_err(&env_with(&[
        ("LLM__QWEN__1__TTFT_TIMEOUT_S", "30"),
        ("LLM__QWEN__1__INTER_TOKEN_TIMEOUT_S", "40"),
    ]));
    assert_err(&e, "source.watchdog", "LLM__QWEN__1__INTER_TOKEN_TIMEOUT_S");

    let mut s = source("qwen_1", 20.0);
    s.ttft_timeout_s = Some(30.0);
    s.inter_token_timeout_s = Some(10.0);
    struct_and_builder(vec![s], "source.watchdog", "sources[qwen_1].ttft_timeout_s");
    let s = source("qwen_1", f64::NAN);
    struct_and_builder(vec![s], "source.watchdog", "sources[qwen_1].timeout_s");
    // A non-positive first-token timeout is named as such, not as an inter-token problem.
    let mut s = source("qwen_1", 120.0);
    s.ttft_timeout_s = Some(-1.0);
    s.inter_token_timeout_s = Some(10.0);
    struct_and_builder(vec![s], "source.watchdog", "sources[qwen_1].ttft_timeout_s");
}

#[test]
fn cf_055_guard_b4_stall_threshold_zero() {
    let mut s = source("qwen_1", 120.0);
    s.stall_threshold_ms = 0;
    // Path 2 validates the source before distributing the settings value.
    let st = settings(vec![s.clone()]);
    assert_err(
        &err(st.validate()),
        "source.stall_threshold",
        "GatewaySettings.sources[qwen_1].stall_threshold_ms",
    );
    assert_err(
        &err(build(builder(vec![s]))),
        "source.stall_threshold",
        "GatewayClientBuilder::sources[qwen_1].stall_threshold_ms",
    );
    assert_err(
        &err(build(
            builder(vec![source("qwen_1", 120.0)]).stall_threshold_ms(Some(0)),
        )),
        "source.stall_threshold",
        "GatewayClientBuilder::stall_threshold_ms",
    );
    let st = GatewaySettings {
        policy: ScopePolicy {
            stall_threshold_ms: Some(0),
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(st.validate()),
        "settings.policy",
        "GatewaySettings.stall_threshold_ms",
    );
    let e = env_err(&env_with(&[("LLM__STREAM__STALL_THRESHOLD_MS", "0")]));
    assert_err(&e, "config.domain", "LLM__STREAM__STALL_THRESHOLD_MS");
}

// 70 C-22: ENABLE_THINKING contradicting REASONING_EFFORT is refused on every path.
#[test]
fn guard_b5_c_22_effort_conflict() {
    let mut s = source("qwen_1", 120.0);
    s.reasoning_effort = Some(Effort::Low);
    s.enable_thinking = Some(false);
    struct_and_builder(
        vec![s],
        "effort.conflict",
        "sources[qwen_1].reasoning_effort",
    );
    let mut s = source("qwen_1", 120.0);
    s.reasoning_effort = Some(Effort::Off);
    s.enable_thinking = Some(true);
    struct_and_builder(
        vec![s],
        "effort.conflict",
        "sources[qwen_1].reasoning_effort",
    );
}

#[test]
fn guard_b6_extra_body_library_keys() {
    for key in ["model", "messages", "stream", "stream_options"] {
        let mut s = source("qwen_1", 120.0);
        s.extra_body.insert(key.into(), serde_json::json!(1));
        struct_and_builder(vec![s], "source.extra_body", "sources[qwen_1].extra_body");
        let raw = format!(r#"{{"{key}": 1}}"#);
        let e = env_err(&env_with(&[("LLM__QWEN__1__EXTRA_BODY", &raw)]));
        assert_err(&e, "source.extra_body", "LLM__QWEN__1__EXTRA_BODY");
    }
}

#[test]
fn guard_headers_and_max_response_bytes_on_every_path() {
    let mut s = source("qwen_1", 120.0);
    s.headers.insert("Content-Type".into(), "text/plain".into());
    struct_and_builder(vec![s], "source.headers", "sources[qwen_1].headers");
    let e = env_err(&env_with(&[(
        "LLM__QWEN__1__HEADERS",
        r#"{"content-type": "x"}"#,
    )]));
    assert_err(&e, "source.headers", "LLM__QWEN__1__HEADERS");
    let mut s = source("qwen_1", 120.0);
    s.max_response_bytes = 0;
    struct_and_builder(
        vec![s],
        "source.max_response_bytes",
        "sources[qwen_1].max_response_bytes",
    );
}

#[test]
fn guard_c2_r_44_zero_sources() {
    assert_err(
        &err(settings(vec![]).validate()),
        "settings.no_sources",
        "GatewaySettings.sources",
    );
    assert_eq!(
        env_err(&map(&[("PGW_TELEMETRY_BACKEND", "none")])).code,
        "settings.no_sources"
    );
    let plan = build(builder(vec![])).unwrap();
    assert_eq!(codes(&plan.warnings), ["builder.no_sources"]);
}

#[test]
fn guard_c3_duplicate_source_names() {
    let sources = vec![source("qwen_1", 120.0), source("qwen_1", 60.0)];
    struct_and_builder(sources, "settings.duplicate_source", "sources[qwen_1]");
}

#[test]
fn guard_c5_policies() {
    let bad_retry = RetryPolicy {
        max_attempts: 0,
        ..RetryPolicy::default()
    };
    let s = GatewaySettings {
        policy: ScopePolicy {
            retry: bad_retry,
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(s.validate()),
        "settings.policy",
        "GatewaySettings.retry.max_attempts",
    );
    assert_err(
        &err(build(
            builder(vec![source("qwen_1", 120.0)]).retry(bad_retry),
        )),
        "settings.policy",
        "GatewayClientBuilder::retry.max_attempts",
    );
    let e = env_err(&env_with(&[("LLM__RETRY__MAX_ATTEMPTS", "0")]));
    assert_err(&e, "config.domain", "LLM__RETRY__MAX_ATTEMPTS");
    for (retry, field) in [
        (
            RetryPolicy {
                max_hint_s: Some(f64::NAN),
                ..RetryPolicy::default()
            },
            "retry.max_hint_s",
        ),
        (
            RetryPolicy {
                budget_ratio: Some(0.0),
                ..RetryPolicy::default()
            },
            "retry.budget_ratio",
        ),
    ] {
        let s = GatewaySettings {
            policy: ScopePolicy {
                retry,
                ..settings(vec![source("qwen_1", 120.0)]).policy
            },
            ..settings(vec![source("qwen_1", 120.0)])
        };
        assert_err(
            &err(s.validate()),
            "settings.policy",
            &format!("GatewaySettings.{field}"),
        );
    }
    let s = GatewaySettings {
        policy: ScopePolicy {
            max_waiters: 0,
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    assert_err(
        &err(s.validate()),
        "settings.policy",
        "GatewaySettings.max_waiters",
    );
    assert_err(
        &err(build(builder(vec![source("qwen_1", 120.0)]).max_waiters(0))),
        "settings.policy",
        "GatewayClientBuilder::max_waiters",
    );
}

#[test]
fn cf_033_settings_deadline_domain_and_idempotence() {
    let base = settings(vec![source("qwen_1", 120.0)]);
    for bad in [0.0, f64::INFINITY, -1.0, f64::NAN] {
        let s = GatewaySettings {
            policy: ScopePolicy {
                call_deadline_s: Some(bad),
                ..base.policy
            },
            ..base.clone()
        };
        assert_err(
            &err(s.validate()),
            "deadline.domain",
            "GatewaySettings.call_deadline_s",
        );
    }
    let direct = GatewaySettings {
        policy: ScopePolicy {
            call_deadline_s: Some(7.0),
            ..base.policy
        },
        ..base.clone()
    };
    let v = direct.validate().unwrap();
    assert_eq!(v.policy.call_deadline_s, Some(7.0));
    let updated = GatewaySettings {
        policy: ScopePolicy {
            call_deadline_s: Some(5.0),
            ..v.policy
        },
        ..v.clone().into_inner()
    };
    let again = updated.validate().unwrap();
    assert_eq!(again.policy.call_deadline_s, Some(5.0));
    // Validating normalized values yields the same values (20 §9.2).
    assert_eq!(v.clone().into_inner().validate().unwrap(), v);
}

#[test]
fn cf_035_settings_deadline_reaches_the_plan() {
    let s = GatewaySettings {
        policy: ScopePolicy {
            call_deadline_s: Some(12.0),
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    let plan = ClientPlan::from_settings(&s).unwrap();
    assert_eq!(plan.call_deadline, Some(Duration::from_secs(12)));
    let v = from_env(&env_with(&[("LLM__CALL_DEADLINE_S", "12")])).unwrap();
    assert_eq!(
        ClientPlan::from_settings(&v).unwrap().call_deadline,
        Some(Duration::from_secs(12))
    );
}

#[test]
fn cf_036_builder_zero_deadline_fails_at_plan() {
    let b = builder(vec![source("qwen_1", 120.0)]).call_deadline(Duration::ZERO);
    assert_err(
        &err(build(b)),
        "deadline.domain",
        "GatewayClientBuilder::call_deadline",
    );
    let b = builder(vec![source("qwen_1", 120.0)]).call_deadline(Duration::from_millis(1500));
    assert_eq!(
        build(b).unwrap().call_deadline,
        Some(Duration::from_millis(1500))
    );
}

#[test]
fn guard_f4_text_cap_and_f5_missing_transport() {
    let b = builder(vec![source("qwen_1", 120.0)]).telemetry_text_cap(Some(0));
    assert_err(
        &err(build(b)),
        "telemetry.text_cap",
        "GatewayClientBuilder::telemetry_text_cap",
    );
    let b = GatewayClientBuilder::new().sources(vec![source("qwen_1", 120.0)]);
    assert_err(
        &err(build(b)),
        "builder.missing_transport",
        "GatewayClientBuilder::transport",
    );
}

#[test]
fn cf_048_env_and_settings_stall_threshold_is_authoritative() {
    let v = from_env(&env2_with(&[("LLM__STREAM__STALL_THRESHOLD_MS", "2500")])).unwrap();
    assert_eq!(v.policy.stall_threshold_ms, Some(2500));
    let plan = ClientPlan::from_settings(&v).unwrap();
    assert!(plan.sources.iter().all(|s| s.stall_threshold_ms == 2500));

    let mut own = source("qwen_1", 120.0);
    own.stall_threshold_ms = 500;
    let mut s = settings(vec![own]);
    s.policy.stall_threshold_ms = Some(800);
    let plan = ClientPlan::from_settings(&s).unwrap();
    assert_eq!(plan.sources[0].stall_threshold_ms, 800);
}

#[test]
fn cf_049_builder_stall_threshold_distribution() {
    let two = || vec![source("qwen_1", 120.0), source("qwen_2", 120.0)];
    let plan = build(builder(two()).stall_threshold_ms(Some(600))).unwrap();
    assert!(plan.sources.iter().all(|s| s.stall_threshold_ms == 600));
    let mut own = source("qwen_1", 120.0);
    own.stall_threshold_ms = 500;
    let plan = build(builder(vec![own]).stall_threshold_ms(None)).unwrap();
    assert_eq!(plan.sources[0].stall_threshold_ms, 500);
    let plan = build(builder(two())).unwrap();
    assert!(plan.sources.iter().all(|s| s.stall_threshold_ms == 1000));
}

#[test]
fn cf_050_stall_keys_are_equal_layers() {
    let v = from_env(&env2_with(&[
        ("LLM__STREAM__STALL_THRESHOLD_MS", "250"),
        ("LLM__HEDGE__STALL_AFTER_S", "8"),
    ]))
    .unwrap();
    assert_eq!(
        (v.policy.stall_threshold_ms, v.policy.hedge_stall_after_s),
        (Some(250), Some(8.0))
    );
    let s = GatewaySettings {
        policy: ScopePolicy {
            stall_threshold_ms: Some(250),
            hedge_stall_after_s: Some(8.0),
            ..settings(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)])
    };
    let p2 = ClientPlan::from_settings(&s).unwrap();
    let p1 = ClientPlan::from_settings(&v).unwrap();
    let p3 = build(
        builder(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)])
            .stall_threshold_ms(Some(250))
            .hedge_stall_after_s(8.0),
    )
    .unwrap();
    for p in [&p1, &p2, &p3] {
        assert_eq!(p.policy.hedge_stall_after_s, Some(8.0));
        assert!(p.sources.iter().all(|s| s.stall_threshold_ms == 250));
        assert_eq!(p.hedge.stall_after, Some(Duration::from_secs(8)));
    }
}

#[test]
fn plan_pacer_ceiling_and_secrets() {
    let mut big = source("qwen_1", 120.0);
    big.max_concurrency = 100;
    let plan = build(builder(vec![big, source("qwen_2", 120.0)])).unwrap();
    assert_eq!(plan.pacer_ceiling, 100);
    assert_eq!(
        build(builder(vec![source("qwen_1", 120.0)]))
            .unwrap()
            .pacer_ceiling,
        64
    );
    let b = builder(vec![source("qwen_1", 120.0)]);
    assert!(!format!("{b:?}").contains("sk-test-secret"));
    let plan = build(b).unwrap();
    assert!(!format!("{plan:?}").contains("sk-test-secret"));
    let s = settings(vec![source("qwen_1", 120.0)]);
    assert!(!format!("{s:?}").contains("sk-test-secret"));
}

/// One scope policy: the builder's `.policy(..)` sets every knob the single setters set, the
/// settings path and the builder give the same plan from the same policy, and the policy rules
/// keep each path's origin spelling (05 R-19).
#[test]
fn r_19_one_scope_policy_on_every_path() {
    let two = || vec![source("qwen_1", 120.0), source("qwen_2", 120.0)];
    let policy = ScopePolicy {
        call_deadline_s: Some(30.0),
        hedge_after_s: Some(8.0),
        max_waiters: 7,
        retry: RetryPolicy::new(4, 0.5, 8.0, None, Some(0.5)).unwrap(),
        stall_threshold_ms: Some(700),
        ..ScopePolicy::default()
    };
    let whole = build(builder(two()).policy(policy)).unwrap();
    let single = build(
        builder(two())
            .call_deadline(Duration::from_secs(30))
            .hedge_after_s(8.0)
            .max_waiters(7)
            .retry(policy.retry)
            .stall_threshold_ms(Some(700)),
    )
    .unwrap();
    assert_eq!(whole, single);
    assert_eq!(whole.call_deadline, Some(Duration::from_secs(30)));
    assert_eq!(whole.hedge.after, Some(Duration::from_secs(8)));
    assert!(whole.sources.iter().all(|s| s.stall_threshold_ms == 700));
    assert_eq!(whole.policy.stall_threshold_ms, None);
    let by_settings = ClientPlan::from_settings(&GatewaySettings {
        policy,
        ..settings(two())
    })
    .unwrap();
    assert_eq!(
        (by_settings.policy.retry, by_settings.policy.max_waiters),
        (whole.policy.retry, 7)
    );
    assert_eq!(by_settings.sources, whole.sources);
    let bad = ScopePolicy {
        max_waiters: 0,
        ..policy
    };
    assert_err(
        &err(build(builder(two()).policy(bad))),
        "settings.policy",
        "GatewayClientBuilder::max_waiters",
    );
    assert_err(
        &err(GatewaySettings {
            policy: bad,
            ..settings(two())
        }
        .validate()),
        "settings.policy",
        "GatewaySettings.max_waiters",
    );
}
