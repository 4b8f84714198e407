//! Embedding and OCR scopes (20 §7, §11.5, §11.6 F7; 90 E-1, E-2, E-3, O-1, O-2; CF-054, CF-056).

mod support;

use polygateway::ScopePolicy;
use polygateway::{EmbeddingPlan, EmbeddingSettings, GatewaySettings, OcrSettings};
use support::*;

fn embed_env(extra: &[(&str, &str)]) -> polygateway::EnvMap {
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("EMBED__QWEN__1__BASE_URL", "https://a.example/v1"),
        ("EMBED__QWEN__1__API_KEY", "sk-e"),
        ("EMBED__QWEN__1__MODEL", "text-embedding-v3"),
        ("EMBED__QWEN__2__BASE_URL", "https://b.example/v1"),
        ("EMBED__QWEN__2__API_KEY", "sk-e2"),
        ("EMBED__QWEN__2__MODEL", "text-embedding-v3"),
    ]);
    m.extend(map(extra));
    m
}

fn ocr_env(extra: &[(&str, &str)]) -> polygateway::EnvMap {
    let mut m = map(&[
        ("PGW_TELEMETRY_BACKEND", "none"),
        ("OCR__MONKEY__1__BASE_URL", "http://127.0.0.1:9/"),
        ("OCR__MONKEY__2__BASE_URL", "http://127.0.0.1:10"),
    ]);
    m.extend(map(extra));
    m
}

fn non_chat(warnings: &[polygateway::ConfigWarning]) -> usize {
    warnings
        .iter()
        .filter(|w| w.code == "hedge.non_chat_scope")
        .count()
}

#[test]
fn e_1_embedding_keys_and_defaults() {
    let v = EmbeddingSettings::from_env_map("EMBED", &embed_env(&[])).unwrap();
    assert_eq!(
        (v.batch_size, v.normalize, v.expected_dim),
        (64, false, None)
    );
    assert_eq!(v.gateway.scope, "embed");
    let v = EmbeddingSettings::from_env_map(
        "EMBED",
        &embed_env(&[
            ("EMBED__BATCH_SIZE", "32"),
            ("EMBED__NORMALIZE", "true"),
            ("EMBED__EXPECTED_DIM", "1024"),
            ("EMBED__RETRY__MAX_ATTEMPTS", "2"),
        ]),
    )
    .unwrap();
    assert_eq!(
        (v.batch_size, v.normalize, v.expected_dim),
        (32, true, Some(1024))
    );
    assert_eq!(v.gateway.policy.retry.max_attempts, 2);
    assert!(v.warnings().is_empty());
    for (key, raw, code) in [
        ("EMBED__BATCH_SIZE", "0", "config.domain"),
        ("EMBED__EXPECTED_DIM", "0", "config.domain"),
        ("EMBED__NORMALIZE", "sure", "config.parse"),
    ] {
        let e = EmbeddingSettings::from_env_map("EMBED", &embed_env(&[(key, raw)])).unwrap_err();
        assert_err(&e, code, key);
    }
    // Embedding keys are unknown in a chat scope (20 §7).
    let v = from_env(&env_with(&[("LLM__EXPECTED_DIM", "3")])).unwrap();
    assert_eq!(codes(v.warnings()), ["config.unknown_key"]);
}

#[test]
fn e_1_embedding_accepts_thinking_keys_unused_and_strips_extra_body() {
    let v = EmbeddingSettings::from_env_map(
        "EMBED",
        &embed_env(&[
            ("EMBED__QWEN__1__REASONING_EFFORT", "low"),
            ("EMBED__QWEN__1__EXTRA_BODY", r#"{"dimensions": 256}"#),
        ]),
    )
    .unwrap();
    assert!(v.gateway.sources[0].reasoning_effort.is_some());
    let plan = EmbeddingPlan::from_settings(&v).unwrap();
    assert!(plan.gateway.sources.iter().all(|s| s.extra_body.is_empty()));
    assert_eq!(plan.batch_size, 64);
    let mut m = embed_env(&[]);
    m.remove("EMBED__QWEN__2__API_KEY");
    let e = EmbeddingSettings::from_env_map("EMBED", &m).unwrap_err();
    assert_err(&e, "source.missing_field", "EMBED__QWEN__2__API_KEY");
}

// covers: E-3, O-2
#[test]
fn cf_054_hedge_keys_on_non_chat_scopes_warn_once() {
    for key in ["EMBED__HEDGE__AFTER_S", "EMBED__HEDGE__STALL_AFTER_S"] {
        let v = EmbeddingSettings::from_env_map("EMBED", &embed_env(&[(key, "8")])).unwrap();
        assert_eq!(non_chat(v.warnings()), 1, "{key}");
        let plan = EmbeddingPlan::from_settings(&v).unwrap();
        assert_eq!(non_chat(&plan.gateway.warnings), 1, "{key}");
    }
    let s = EmbeddingSettings {
        gateway: GatewaySettings {
            policy: ScopePolicy {
                hedge_stall_after_s: Some(8.0),
                ..settings(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)]).policy
            },
            scope: "EMBED".into(),
            ..settings(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)])
        },
        batch_size: 64,
        ..EmbeddingSettings::default()
    };
    assert_eq!(non_chat(s.validate().unwrap().warnings()), 1);
    assert_eq!(
        non_chat(&EmbeddingPlan::from_settings(&s).unwrap().gateway.warnings),
        1
    );
    for key in ["OCR__HEDGE__AFTER_S", "OCR__HEDGE__STALL_AFTER_S"] {
        let v = OcrSettings::from_env_map("OCR", &ocr_env(&[(key, "8")])).unwrap();
        assert_eq!(non_chat(v.warnings()), 1, "{key}");
    }
    let p = embed_builder(vec![source("qwen_1", 120.0), source("qwen_2", 120.0)])
        .hedge_after_s(8.0)
        .plan()
        .unwrap()
        .0;
    assert_eq!(non_chat(&p.gateway.warnings), 1);
    // Chat scope: none.
    let v = from_env(&env2_with(&[("LLM__HEDGE__STALL_AFTER_S", "8")])).unwrap();
    assert_eq!(non_chat(v.warnings()), 0);
    assert!(v.warnings().is_empty());
    // Stage D still runs on non-chat scopes (20 §7): cross-guards included.
    let e =
        EmbeddingSettings::from_env_map("EMBED", &embed_env(&[("EMBED__HEDGE__AFTER_S", "120")]))
            .unwrap_err();
    assert_err(&e, "hedge.after_ge_min_timeout", "EMBED__HEDGE__AFTER_S");
}

#[test]
fn cf_056_e_2_batch_size_and_expected_dim() {
    let ok = || EmbeddingSettings {
        gateway: GatewaySettings {
            scope: "EMBED".into(),
            ..settings(vec![source("qwen_1", 120.0)])
        },
        ..EmbeddingSettings::default()
    };
    let s = EmbeddingSettings {
        batch_size: 0,
        ..ok()
    };
    assert_err(
        &err(s.validate()),
        "embed.batch_size",
        "EmbeddingSettings.batch_size",
    );
    assert_err(
        &err(EmbeddingPlan::from_settings(&s)),
        "embed.batch_size",
        "EmbeddingSettings.batch_size",
    );
    let s = EmbeddingSettings {
        expected_dim: Some(0),
        ..ok()
    };
    assert_err(
        &err(s.validate()),
        "embed.expected_dim",
        "EmbeddingSettings.expected_dim",
    );
    let b = embed_builder(vec![source("qwen_1", 120.0)]).batch_size(0);
    assert_err(
        &err(b.plan()),
        "embed.batch_size",
        "EmbeddingClientBuilder::batch_size",
    );
    let b = embed_builder(vec![source("qwen_1", 120.0)]).expected_dim(Some(0));
    assert_err(
        &err(b.plan()),
        "embed.expected_dim",
        "EmbeddingClientBuilder::expected_dim",
    );
    let b = embed_builder(vec![source("qwen_1", 120.0)]).call_deadline(std::time::Duration::ZERO);
    assert_err(
        &err(b.plan()),
        "deadline.domain",
        "EmbeddingClientBuilder::call_deadline",
    );
    let (plan, _, _) = embed_builder(vec![source("qwen_1", 120.0)])
        .batch_size(16)
        .expected_dim(Some(8))
        .plan()
        .unwrap();
    assert_eq!((plan.batch_size, plan.expected_dim), (16, Some(8)));
    assert_eq!(ok().validate().unwrap().batch_size, 64);
}

#[test]
fn o_1_ocr_key_optional_and_model_defaults() {
    let v = OcrSettings::from_env_map("OCR", &ocr_env(&[])).unwrap();
    let names: Vec<_> = v.sources.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["monkey_1", "monkey_2"]);
    assert!(
        v.sources
            .iter()
            .all(|s| s.model == "monkeyocr" && s.api_key.is_none())
    );
    assert_eq!(v.sources[0].base_url, "http://127.0.0.1:9");
    assert_eq!(v.scope_kind(), gateway_ports::ScopeKind::Ocr);
    // Present but empty on an OCR source (struct path) is an identity error (B1).
    let mut src = source("monkey_1", 120.0);
    src.api_key = Some("".into());
    let s = OcrSettings {
        gateway: GatewaySettings {
            scope: "OCR".into(),
            ..settings(vec![src])
        },
    };
    assert_err(
        &err(s.validate()),
        "source.identity",
        "GatewaySettings.sources[monkey_1].api_key",
    );
}
