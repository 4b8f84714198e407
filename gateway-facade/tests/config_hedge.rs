//! Stage D through the assembly paths (20 §11.4, §5.6; CF-037…CF-053; README D1). Stage D itself
//! is `gateway_core::hedge::check_hedge_assembly`; these tests pin that every path reaches it
//! with its own origins and that env parsing reports A1/A2 first.

mod support;

use gateway_ports::SourceConfig;
use polygateway::ScopePolicy;
use polygateway::{ClientPlan, GatewaySettings};
use support::*;

fn two(timeout_a: f64, timeout_b: f64) -> Vec<SourceConfig> {
    vec![source("qwen_1", timeout_a), source("qwen_2", timeout_b)]
}

/// Stage D on paths 2 and 3 with the same values; asserts the code on both.
#[track_caller]
fn both_paths(
    sources: Vec<SourceConfig>,
    after: Option<f64>,
    stall: Option<f64>,
    deadline: Option<f64>,
    code: &str,
    field: &str,
) {
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: after,
            hedge_stall_after_s: stall,
            call_deadline_s: deadline,
            ..settings(sources.clone()).policy
        },
        ..settings(sources.clone())
    };
    assert_err(
        &err(s.validate()),
        code,
        &format!("GatewaySettings.{field}"),
    );
    let mut b = builder(sources);
    if let Some(a) = after {
        b = b.hedge_after_s(a);
    }
    if let Some(st) = stall {
        b = b.hedge_stall_after_s(st);
    }
    if let Some(d) = deadline {
        b = b.call_deadline(std::time::Duration::from_millis((d * 1000.0) as u64));
    }
    assert_err(
        &err(build(b)),
        code,
        &format!("GatewayClientBuilder::{field}"),
    );
}

#[test]
fn cf_037_env_hedge_keys_with_multi_leg_warning() {
    let v = from_env(&env2_with(&[
        ("LLM__HEDGE__AFTER_S", "8"),
        ("LLM__HEDGE__MAX_EXTRA", "2"),
    ]))
    .unwrap();
    assert_eq!(
        (v.policy.hedge_after_s, v.policy.hedge_max_extra),
        (Some(8.0), 2)
    );
    assert_eq!(codes(v.warnings()), ["hedge.multi_leg_unsupported"]);
    let names: Vec<_> = v.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["qwen_1", "qwen_2"]);
    // Client assembly does not repeat the warning.
    let plan = ClientPlan::from_settings(&v).unwrap();
    assert_eq!(codes(&plan.warnings), ["hedge.multi_leg_unsupported"]);
}

#[test]
fn cf_038_no_hedge_keys_no_warning() {
    let v = from_env(&env2_with(&[])).unwrap();
    assert_eq!(
        (
            v.policy.hedge_after_s,
            v.policy.hedge_max_extra,
            v.policy.hedge_stall_after_s
        ),
        (None, 1, None)
    );
    assert!(v.warnings().is_empty());
    assert!(ClientPlan::from_settings(&v).unwrap().warnings.is_empty());
}

#[test]
fn cf_039_hedge_after_domain_on_four_paths() {
    let e = env_err(&env2_with(&[("LLM__HEDGE__AFTER_S", "0")]));
    assert_err(&e, "config.domain", "LLM__HEDGE__AFTER_S");
    let e = env_err(&env2_with(&[("LLM__HEDGE__AFTER_S", "abc")]));
    assert_err(&e, "config.parse", "LLM__HEDGE__AFTER_S");
    let direct = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(f64::NAN),
            ..settings(two(120.0, 120.0)).policy
        },
        ..settings(two(120.0, 120.0))
    };
    assert_err(
        &err(direct.validate()),
        "hedge.after_domain",
        "GatewaySettings.hedge_after_s",
    );
    let valid = settings(two(120.0, 120.0)).validate().unwrap().into_inner();
    let updated = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(-1.0),
            ..valid.policy
        },
        ..valid
    };
    assert_err(
        &err(updated.validate()),
        "hedge.after_domain",
        "GatewaySettings.hedge_after_s",
    );
    let b = builder(two(120.0, 120.0)).hedge_after_s(0.0);
    assert_err(
        &err(build(b)),
        "hedge.after_domain",
        "GatewayClientBuilder::hedge_after_s",
    );
}

#[test]
fn cf_040_hedge_without_sources() {
    let b = builder(vec![]).hedge_after_s(8.0);
    assert_err(
        &err(build(b)),
        "hedge.no_sources",
        "GatewayClientBuilder::hedge_after_s",
    );
    let b = builder(vec![]).hedge_stall_after_s(8.0);
    assert_err(
        &err(build(b)),
        "hedge.no_sources",
        "GatewayClientBuilder::hedge_stall_after_s",
    );
    // Both unset: no cross-guards with empty sources (only the R-44 builder warning).
    let plan = build(builder(vec![])).unwrap();
    assert_eq!(
        (plan.policy.hedge_after_s, plan.policy.hedge_stall_after_s),
        (None, None)
    );
    assert_eq!(codes(&plan.warnings), ["builder.no_sources"]);
}

#[test]
fn cf_041_after_must_be_below_min_timeout() {
    both_paths(
        two(90.0, 120.0),
        Some(90.0),
        None,
        None,
        "hedge.after_ge_min_timeout",
        "hedge_after_s",
    );
    let e = env_err(&env2_with(&[
        ("LLM__QWEN__1__TIMEOUT_S", "90"),
        ("LLM__HEDGE__AFTER_S", "90"),
    ]));
    assert_err(&e, "hedge.after_ge_min_timeout", "LLM__HEDGE__AFTER_S");
    let v = from_env(&env2_with(&[
        ("LLM__QWEN__1__TIMEOUT_S", "90"),
        ("LLM__HEDGE__AFTER_S", "89"),
    ]))
    .unwrap();
    assert_eq!(v.policy.hedge_after_s, Some(89.0));
    assert!(v.warnings().is_empty());
}

#[test]
fn cf_042_after_at_or_above_min_ttft_only_warns() {
    let with_ttft = || {
        let mut a = source("qwen_1", 120.0);
        a.ttft_timeout_s = Some(30.0);
        a.inter_token_timeout_s = Some(10.0);
        vec![a, source("qwen_2", 120.0)]
    };
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(35.0),
            ..settings(with_ttft()).policy
        },
        ..settings(with_ttft())
    };
    assert_eq!(
        codes(s.validate().unwrap().warnings()),
        ["hedge.after_ge_ttft"]
    );
    let plan = build(builder(with_ttft()).hedge_after_s(35.0)).unwrap();
    assert_eq!(codes(&plan.warnings), ["hedge.after_ge_ttft"]);
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(25.0),
            ..settings(with_ttft()).policy
        },
        ..settings(with_ttft())
    };
    assert!(s.validate().unwrap().warnings().is_empty());
}

#[test]
fn cf_043_single_source_warns() {
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(8.0),
            ..settings(vec![source("qwen_1", 120.0)]).policy
        },
        ..settings(vec![source("qwen_1", 120.0)])
    };
    let v = s.validate().unwrap();
    assert_eq!(codes(v.warnings()), ["hedge.single_source"]);
    assert_eq!(v.warnings()[0].source.as_deref(), Some("qwen_1"));
    let plan = build(builder(vec![source("qwen_1", 120.0)]).hedge_after_s(8.0)).unwrap();
    assert_eq!(codes(&plan.warnings), ["hedge.single_source"]);
}

#[test]
fn cf_044_after_must_be_below_deadline() {
    for after in [35.0, 30.0] {
        both_paths(
            two(120.0, 120.0),
            Some(after),
            None,
            Some(30.0),
            "hedge.after_ge_deadline",
            "hedge_after_s",
        );
    }
    let e = env_err(&env2_with(&[
        ("LLM__HEDGE__AFTER_S", "30"),
        ("LLM__CALL_DEADLINE_S", "30"),
    ]));
    assert_err(&e, "hedge.after_ge_deadline", "LLM__HEDGE__AFTER_S");
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(29.0),
            call_deadline_s: Some(30.0),
            ..settings(two(120.0, 120.0)).policy
        },
        ..settings(two(120.0, 120.0))
    };
    s.validate().unwrap();
}

#[test]
fn cf_045_max_extra_domain_checked_even_when_off() {
    for (raw, code) in [
        ("0", "config.domain"),
        ("x", "config.parse"),
        ("4", "config.domain"),
    ] {
        // Hedging off: the range is still checked (D1, D2).
        let e = env_err(&env2_with(&[("LLM__HEDGE__MAX_EXTRA", raw)]));
        assert_err(&e, code, "LLM__HEDGE__MAX_EXTRA");
    }
    let valid = settings(two(120.0, 120.0)).validate().unwrap().into_inner();
    for bad in [0, 4] {
        let updated = GatewaySettings {
            policy: ScopePolicy {
                hedge_max_extra: bad,
                ..valid.policy
            },
            ..valid.clone()
        };
        assert_err(
            &err(updated.validate()),
            "hedge.max_extra_range",
            "GatewaySettings.hedge_max_extra",
        );
        let b = builder(two(120.0, 120.0)).hedge_max_extra(bad);
        assert_err(
            &err(build(b)),
            "hedge.max_extra_range",
            "GatewayClientBuilder::hedge_max_extra",
        );
    }
    for n in ["2", "3"] {
        let v = from_env(&env2_with(&[
            ("LLM__HEDGE__AFTER_S", "8"),
            ("LLM__HEDGE__MAX_EXTRA", n),
        ]))
        .unwrap();
        assert_eq!(codes(v.warnings()), ["hedge.multi_leg_unsupported"]);
        // 20 §11.7: 2..3 with hedging off is accepted without warning.
        let v = from_env(&env2_with(&[("LLM__HEDGE__MAX_EXTRA", n)])).unwrap();
        assert!(v.warnings().is_empty());
    }
}

#[test]
fn cf_046_settings_hedge_reaches_the_plan() {
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_after_s: Some(8.0),
            ..settings(two(120.0, 120.0)).policy
        },
        ..settings(two(120.0, 120.0))
    };
    let plan = ClientPlan::from_settings(&s).unwrap();
    assert_eq!(plan.policy.hedge_after_s, Some(8.0));
    assert_eq!(plan.hedge.after, Some(std::time::Duration::from_secs(8)));
}

#[test]
fn cf_047_builder_hedge_options() {
    let b = builder(two(120.0, 120.0)).hedge_after_s(0.0);
    assert_err(
        &err(build(b)),
        "hedge.after_domain",
        "GatewayClientBuilder::hedge_after_s",
    );
    let b = builder(two(120.0, 120.0)).hedge_max_extra(0);
    assert_err(
        &err(build(b)),
        "hedge.max_extra_range",
        "GatewayClientBuilder::hedge_max_extra",
    );
    let b = builder(vec![source("qwen_1", 10.0), source("qwen_2", 10.0)]).hedge_after_s(99.0);
    assert_err(
        &err(build(b)),
        "hedge.after_ge_min_timeout",
        "GatewayClientBuilder::hedge_after_s",
    );
    let plan = build(builder(two(120.0, 120.0)).hedge_after_s(0.05)).unwrap();
    assert_eq!(plan.policy.hedge_after_s, Some(0.05));
    assert_eq!(
        build(builder(two(120.0, 120.0)))
            .unwrap()
            .policy
            .hedge_after_s,
        None
    );
}

#[test]
fn cf_051_stall_after_below_min_effective_inter_token() {
    let watched = || {
        let mut a = source("qwen_1", 120.0);
        a.ttft_timeout_s = Some(20.0);
        a.inter_token_timeout_s = Some(15.0);
        vec![a, source("qwen_2", 90.0)]
    };
    both_paths(
        watched(),
        None,
        Some(15.0),
        None,
        "hedge.stall_ge_min_inter_token",
        "hedge_stall_after_s",
    );
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_stall_after_s: Some(14.0),
            ..settings(watched()).policy
        },
        ..settings(watched())
    };
    s.validate().unwrap();
    both_paths(
        two(90.0, 120.0),
        None,
        Some(90.0),
        None,
        "hedge.stall_ge_min_inter_token",
        "hedge_stall_after_s",
    );
    let e = env_err(&env2_with(&[
        ("LLM__QWEN__1__TIMEOUT_S", "90"),
        ("LLM__HEDGE__STALL_AFTER_S", "90"),
    ]));
    assert_err(
        &e,
        "hedge.stall_ge_min_inter_token",
        "LLM__HEDGE__STALL_AFTER_S",
    );
}

#[test]
fn cf_052_stall_after_below_deadline() {
    both_paths(
        two(120.0, 120.0),
        None,
        Some(30.0),
        Some(30.0),
        "hedge.stall_ge_deadline",
        "hedge_stall_after_s",
    );
    let s = GatewaySettings {
        policy: ScopePolicy {
            hedge_stall_after_s: Some(29.0),
            call_deadline_s: Some(30.0),
            ..settings(two(120.0, 120.0)).policy
        },
        ..settings(two(120.0, 120.0))
    };
    s.validate().unwrap();
}

#[test]
fn cf_053_single_source_stall_hedge_warns() {
    let v = from_env(&env_with(&[("LLM__HEDGE__STALL_AFTER_S", "8")])).unwrap();
    assert_eq!(v.policy.hedge_stall_after_s, Some(8.0));
    assert_eq!(codes(v.warnings()), ["hedge.single_source"]);
}
