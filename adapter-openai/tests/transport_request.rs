//! This adapter's own construction and probe facts (05 R-25, R-33, R-53): the unknown-source
//! refusal, duplicate sources and `CA_FILE` refused at construction, the `pgw doctor` models
//! probe. The request-side contract rows (CT-CHAT-01, -10, CT-EMB-01: path, headers,
//! authentication styles, `HEADERS`, `QUERY`, the body verbatim, no redirects) run from
//! `contract_tests::transport` in `transport_contract.rs`.

mod support;

use adapter_openai::{OpenAiTransport, TransportOptions};
use gateway_ports::config::SourceConfig;
use gateway_ports::error::WireFailure;
use gateway_ports::ports::transport::ChatTransport;
use support::*;

const COMPLETION: &str =
    r#"{"version":1,"responses":[{"completion":{"content":"hello","chunks":2}}]}"#;

#[tokio::test]
async fn r_25_unknown_source_is_unsupported() {
    let sim = sim(COMPLETION);
    let src = source(&sim.base_url());
    let t = transport(&src);
    let other = SourceConfig {
        name: "other_1".to_owned(),
        ..src.clone()
    };
    let err = ChatTransport::send(&t, chat_plain(&other))
        .await
        .unwrap_err();
    assert!(matches!(err, WireFailure::Unsupported { .. }), "{err:?}");
    assert_eq!(sim.request_count(), 0, "nothing sent");
}

#[tokio::test]
async fn r_25_duplicate_source_refused() {
    let src = source("http://127.0.0.1:9/v1");
    let err = OpenAiTransport::new([&src, &src], TransportOptions::default()).unwrap_err();
    assert_eq!(err.code(), "source.duplicate");
}

#[tokio::test]
async fn r_33_ca_file_unreadable_or_not_pem_is_a_typed_error() {
    let missing = SourceConfig {
        ca_file: Some("/nonexistent/ca.pem".into()),
        ..source("https://127.0.0.1:9/v1")
    };
    let err = OpenAiTransport::new([&missing], TransportOptions::default()).unwrap_err();
    assert_eq!(err.code(), "source.ca_file");
    assert_eq!(err.field(), Some("CA_FILE"));
    assert_eq!(err.source_name(), "test_1");
    let cfg = err.to_config_error("LLM__TEST__1__CA_FILE");
    assert_eq!(cfg.code, "source.ca_file");
    assert_eq!(cfg.origin, "LLM__TEST__1__CA_FILE");

    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("empty.pem", ""),
        ("garbage.pem", "not a certificate"),
        (
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        ),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let src = SourceConfig {
            ca_file: Some(path),
            ..source("https://127.0.0.1:9/v1")
        };
        let err = OpenAiTransport::new([&src], TransportOptions::default()).unwrap_err();
        assert_eq!(err.code(), "source.ca_file", "{name}: {err}");
    }
}

/// A self-signed CA certificate (PEM), generated once with `openssl req -x509` for this test.
const TEST_CA_PEM: &str = include_str!("support/test-ca.pem");

#[tokio::test]
async fn r_33_ca_file_valid_pem_builds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, TEST_CA_PEM).unwrap();
    let src = SourceConfig {
        ca_file: Some(path),
        ..source("https://127.0.0.1:9/v1")
    };
    OpenAiTransport::new([&src], TransportOptions::default()).expect("a valid CA_FILE builds");
}

#[tokio::test]
async fn r_53_probe_models_returns_the_status() {
    let sim = sim(COMPLETION);
    let mut src = source(&sim.base_url());
    src.query.insert("api-version".to_owned(), "1".to_owned());
    let t = transport(&src);
    assert_eq!(t.probe_models(&src).await, Ok(200));
    let r = &sim.wait_for_requests(1).await[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.path, "/v1/models?api-version=1");
    assert!(sim.auth_matches(KEY));

    let refused = source(&refused_base_url());
    let t = transport(&refused);
    assert!(matches!(
        t.probe_models(&refused).await,
        Err(WireFailure::Network(_))
    ));
}
