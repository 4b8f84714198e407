//! Stage D of the assembly guards, `check_hedge_assembly` (20 §11.4 D2–D14; 60 H-10, H-111),
//! stage E3 (`hedge.non_chat_scope`, 20 §11.5; 60 H-2), and the hedge simulator scripts
//! (`upstream-sim/scripts/hedge-*.json`, 15). Tests assert stable codes and origins, never
//! message text (05 R-19).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fns panic on failure by design"
)]

use std::time::Duration;

use gateway_core::hedge::{
    HedgeAssembly, HedgeAssemblyInput, check_hedge_assembly, non_chat_hedge_warning,
};
use gateway_ports::{ConfigError, ScopeKind, SourceConfig};

const AFTER: &str = "GatewayClientBuilder::hedge_after_s";
const STALL: &str = "GatewayClientBuilder::hedge_stall_after_s";
const MAX: &str = "LLM__HEDGE__MAX_EXTRA";

fn src(name: &str, timeout_s: f64) -> SourceConfig {
    let mut s = SourceConfig::new(name, "test", "http://127.0.0.1:9", None, "m");
    s.timeout_s = timeout_s;
    s
}

fn with_watchdogs(name: &str, ttft: f64, inter: f64, timeout_s: f64) -> SourceConfig {
    let mut s = src(name, timeout_s);
    s.ttft_timeout_s = Some(ttft);
    s.inter_token_timeout_s = Some(inter);
    s
}

fn input(after: Option<f64>, stall: Option<f64>) -> HedgeAssemblyInput<'static> {
    HedgeAssemblyInput {
        scope: "LLM",
        hedge_after_s: after,
        hedge_max_extra: 1,
        stall_after_s: stall,
        call_deadline_s: None,
        after_origin: AFTER,
        stall_origin: STALL,
        max_extra_origin: MAX,
    }
}

fn two() -> Vec<SourceConfig> {
    vec![src("s1", 120.0), src("s2", 120.0)]
}

fn check(
    i: &HedgeAssemblyInput<'_>,
    sources: &[SourceConfig],
) -> Result<HedgeAssembly, ConfigError> {
    check_hedge_assembly(i, sources)
}

fn codes(a: &HedgeAssembly) -> Vec<&'static str> {
    a.warnings.iter().map(|w| w.code).collect()
}

fn err(i: &HedgeAssemblyInput<'_>, sources: &[SourceConfig]) -> (&'static str, String) {
    match check(i, sources) {
        Err(e) => (e.code, e.origin),
        Ok(a) => panic!("expected a ConfigError, got {a:?}"),
    }
}

#[test]
fn h_111_d13_after_and_max_extra_two_warns_single_leg() {
    let i = HedgeAssemblyInput {
        hedge_max_extra: 2,
        ..input(Some(8.0), None)
    };
    let sources = two();
    let a = check(&i, &sources).unwrap();
    assert_eq!(
        (a.after_s, a.stall_after_s, a.max_extra),
        (Some(8.0), None, 2)
    );
    assert_eq!(codes(&a), ["hedge.multi_leg_unsupported"]);
    let c = a.config();
    assert_eq!(c.after, Some(Duration::from_secs(8)));
    assert_eq!(c.legs_per_round(), 1, "D1: acts as 1");
    // Sources unaffected (the guard only reads them).
    assert_eq!(sources, two());
}

// covers: H-9, H-10
#[test]
fn h_111_d5_unset_is_off_with_no_warning_and_no_further_checks() {
    let a = check(&input(None, None), &[]).unwrap();
    assert_eq!((a.after_s, a.stall_after_s, a.max_extra), (None, None, 1));
    assert!(a.warnings.is_empty());
    assert!(!a.config().is_enabled());
    // max_extra 2 without thresholds: no warning either (D13 only after D5).
    let i = HedgeAssemblyInput {
        hedge_max_extra: 2,
        ..input(None, None)
    };
    assert!(check(&i, &[src("only", 90.0)]).unwrap().warnings.is_empty());
}

#[test]
fn h_111_d3_d4_invalid_thresholds_name_the_origin() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300] {
        for origin in [
            AFTER,
            "LLM__HEDGE__AFTER_S",
            "GatewaySettings.hedge_after_s",
        ] {
            let i = HedgeAssemblyInput {
                after_origin: origin,
                ..input(Some(bad), None)
            };
            assert_eq!(
                err(&i, &two()),
                ("hedge.after_domain", origin.to_owned()),
                "{bad}"
            );
        }
        assert_eq!(
            err(&input(None, Some(bad)), &two()),
            ("hedge.stall_domain", STALL.to_owned()),
            "{bad}"
        );
    }
}

#[test]
fn h_111_d2_max_extra_range_checked_even_when_off() {
    for bad in [0, 4, 100] {
        let i = HedgeAssemblyInput {
            hedge_max_extra: bad,
            ..input(None, None)
        };
        assert_eq!(err(&i, &two()), ("hedge.max_extra_range", MAX.to_owned()));
    }
    for good in 1..=3 {
        let i = HedgeAssemblyInput {
            hedge_max_extra: good,
            ..input(Some(1.0), None)
        };
        assert!(check(&i, &two()).is_ok());
    }
}

#[test]
fn h_111_d6_empty_sources_names_hedging() {
    assert_eq!(
        err(&input(Some(1.0), None), &[]),
        ("hedge.no_sources", AFTER.to_owned())
    );
    // A stall-only configuration runs the guards too (D5 note).
    assert_eq!(
        err(&input(None, Some(1.0)), &[]),
        ("hedge.no_sources", STALL.to_owned())
    );
}

#[test]
fn h_111_d7_after_must_be_below_min_timeout() {
    let sources = [src("s1", 90.0), src("s2", 200.0)];
    assert_eq!(
        err(&input(Some(90.0), None), &sources),
        ("hedge.after_ge_min_timeout", AFTER.to_owned())
    );
    assert!(check(&input(Some(89.0), None), &sources).is_ok());
}

// covers: G-95, H-4
#[test]
fn h_111_d8_after_must_be_below_deadline_equality_fails() {
    for after in [35.0, 30.0] {
        let i = HedgeAssemblyInput {
            call_deadline_s: Some(30.0),
            ..input(Some(after), None)
        };
        assert_eq!(
            err(&i, &two()),
            ("hedge.after_ge_deadline", AFTER.to_owned())
        );
    }
    let i = HedgeAssemblyInput {
        call_deadline_s: Some(30.0),
        ..input(Some(29.0), None)
    };
    assert!(check(&i, &two()).is_ok());
}

#[test]
fn h_111_d9_after_at_or_above_ttft_only_warns() {
    let sources = [with_watchdogs("s1", 30.0, 10.0, 120.0), src("s2", 120.0)];
    let a = check(&input(Some(35.0), None), &sources).unwrap();
    assert_eq!(codes(&a), ["hedge.after_ge_ttft"]);
    assert_eq!(a.warnings[0].source.as_deref(), Some("s1"));
    let a = check(&input(Some(30.0), None), &sources).unwrap();
    assert_eq!(codes(&a), ["hedge.after_ge_ttft"], "equality warns too");
    let a = check(&input(Some(25.0), None), &sources).unwrap();
    assert!(a.warnings.is_empty());
}

#[test]
fn h_111_d10_stall_must_be_below_min_inter_token_or_timeout() {
    // inter-token 15 on one source, timeout 90 on the other: 15 fails, 14 passes.
    let sources = [with_watchdogs("s1", 30.0, 15.0, 120.0), src("s2", 90.0)];
    assert_eq!(
        err(&input(None, Some(15.0)), &sources),
        ("hedge.stall_ge_min_inter_token", STALL.to_owned())
    );
    assert!(check(&input(None, Some(14.0)), &sources).is_ok());
    // No watchdogs: the minimum is timeout_s (90 fails, 89 passes).
    let sources = [src("s1", 90.0), src("s2", 120.0)];
    assert_eq!(
        err(&input(None, Some(90.0)), &sources).0,
        "hedge.stall_ge_min_inter_token"
    );
    assert!(check(&input(None, Some(89.0)), &sources).is_ok());
}

#[test]
fn h_111_d11_stall_must_be_below_deadline() {
    let i = HedgeAssemblyInput {
        call_deadline_s: Some(30.0),
        ..input(None, Some(30.0))
    };
    assert_eq!(
        err(&i, &two()),
        ("hedge.stall_ge_deadline", STALL.to_owned())
    );
    let i = HedgeAssemblyInput {
        call_deadline_s: Some(30.0),
        ..input(None, Some(29.0))
    };
    assert!(check(&i, &two()).is_ok());
}

#[test]
fn h_111_d12_single_source_warns_and_warning_order() {
    let sources = [with_watchdogs("only", 30.0, 10.0, 120.0)];
    let i = HedgeAssemblyInput {
        hedge_max_extra: 3,
        ..input(Some(35.0), None)
    };
    let a = check(&i, &sources).unwrap();
    assert_eq!(
        codes(&a),
        [
            "hedge.after_ge_ttft",
            "hedge.single_source",
            "hedge.multi_leg_unsupported"
        ]
    );
    assert_eq!(a.warnings[1].source.as_deref(), Some("only"));
}

#[test]
fn h_111_stall_after_accepted_and_idempotent() {
    let a = check(&input(Some(7.0), Some(8.0)), &two()).unwrap();
    assert_eq!((a.after_s, a.stall_after_s), (Some(7.0), Some(8.0)));
    // Re-validating normalized values yields the same values (20 §9 idempotence).
    let again = check(&input(a.after_s, a.stall_after_s), &two()).unwrap();
    assert_eq!(again, a);
    assert_eq!(a.config().stall_after, Some(Duration::from_secs(8)));
}

#[test]
fn h_10_row_13_e3_non_chat_scope_warning() {
    for kind in [ScopeKind::Embedding, ScopeKind::Ocr] {
        for (after, stall) in [(Some(1.0), None), (None, Some(1.0)), (Some(1.0), Some(2.0))] {
            let w = non_chat_hedge_warning(kind, after, stall).expect("a warning");
            assert_eq!(w.code, "hedge.non_chat_scope");
            assert!(w.message.contains(kind.as_str()), "{}", w.message);
        }
        assert!(non_chat_hedge_warning(kind, None, None).is_none());
    }
    assert!(non_chat_hedge_warning(ScopeKind::Chat, Some(1.0), Some(1.0)).is_none());
}

// ---------------------------------------------------------------------------------------------
// The simulator scripts of the hedge scenarios (issue 6; 15)
// ---------------------------------------------------------------------------------------------

#[test]
fn hedge_simulator_scripts_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../upstream-sim/scripts");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("upstream-sim/scripts exists") {
        let path = entry.expect("dir entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !(name.starts_with("hedge-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable script");
        let script = upstream_sim::script::Script::from_json(&text)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Both legs are served by one simulator: a response for each model.
        let models: Vec<_> = script
            .responses
            .iter()
            .filter_map(|r| r.matcher.as_ref().and_then(|m| m.model.clone()))
            .collect();
        assert!(
            models.contains(&"primary-model".to_owned())
                && models.contains(&"hedge-model".to_owned()),
            "{name}: {models:?}"
        );
        names.push(name.to_owned());
    }
    names.sort();
    assert_eq!(
        names,
        [
            "hedge-both-429.json",
            "hedge-both-fail.json",
            "hedge-first-token.json",
            "hedge-mixed-429.json",
            "hedge-primary-late.json",
            "hedge-slow-generation.json",
            "hedge-stall.json",
            "hedge-tool-stall.json",
            "hedge-watchdog-rescue.json",
        ]
    );
}
