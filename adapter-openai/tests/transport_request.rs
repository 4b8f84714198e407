//! The request side of the transport (10 §8.1 CT-CHAT-01, CT-CHAT-10, §8.2 CT-EMB-01; 05 R-14,
//! R-25, R-33): path, method, headers, authentication styles, `X-Request-Id`, `HEADERS`,
//! `QUERY`, the body sent verbatim, redirects not followed.

mod support;

use adapter_openai::{OpenAiTransport, TransportOptions};
use gateway_ports::config::{Secret, SourceConfig};
use gateway_ports::error::WireFailure;
use gateway_ports::ports::transport::{ChatTransport, EmbeddingTransport, Endpoint, WireResponse};
use gateway_ports::vocab::AuthStyle;
use serde_json::json;
use support::*;

const COMPLETION: &str =
    r#"{"version":1,"responses":[{"completion":{"content":"hello","chunks":2}}]}"#;

#[tokio::test]
async fn ct_chat_01_stream_request_shape() {
    let sim = sim(COMPLETION);
    let src = source(&sim.base_url());
    let t = transport(&src);
    let req = chat_stream(&src);
    let sent = req.body.clone();
    let resp = ChatTransport::send(&t, req).await.expect("200");
    let WireResponse::Events { events, .. } = resp else {
        panic!("a streamed 200 gives Events");
    };
    let _ = collect(events).await;

    let recorded = sim.wait_for_requests(1).await;
    assert_eq!(recorded.len(), 1, "one send, one HTTP request");
    let r = &recorded[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert!(sim.auth_matches(KEY), "Authorization: Bearer <key>");
    assert!(
        r.header("authorization")
            .is_some_and(|v| v.starts_with("Bearer ")),
        "bearer scheme"
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.header("x-request-id"),
        Some("call-0001"),
        "R-33 X-Request-Id"
    );
    // R-14: the body is the core's, serialised by serde_json, nothing added or removed.
    let wire = serde_json::to_string(&sent).unwrap();
    assert_eq!(r.body_len, wire.len());
    assert_eq!(
        serde_json::to_string(r.body.as_ref().unwrap()).unwrap(),
        wire
    );
}

#[tokio::test]
async fn ct_chat_01_non_stream_request_shape() {
    let sim = sim(COMPLETION);
    let src = source(&sim.base_url());
    let t = transport(&src);
    let req = chat_plain(&src);
    let sent = req.body.clone();
    let resp = ChatTransport::send(&t, req).await.expect("200");
    assert!(matches!(resp, WireResponse::Body(_)));
    let r = &sim.wait_for_requests(1).await[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.body.as_ref(), Some(&sent));
}

#[tokio::test]
async fn ct_emb_01_embeddings_request_shape() {
    let sim = sim(r#"{"version":1,"responses":[{"embedding":{"dim":4}}]}"#);
    let src = source(&sim.base_url());
    let t = transport(&src);
    let body = json!({"model": "m-1", "input": ["a", "b"]});
    let req = request(&src, Endpoint::Embeddings, body.clone(), false);
    let got = EmbeddingTransport::send(&t, req).await.expect("200");
    let parsed: serde_json::Value = serde_json::from_slice(&got.bytes).unwrap();
    assert_eq!(parsed["data"].as_array().map(Vec::len), Some(2));
    let r = &sim.wait_for_requests(1).await[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/embeddings");
    assert!(sim.auth_matches(KEY));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-request-id"), Some("call-0001"));
    assert_eq!(
        serde_json::to_string(r.body.as_ref().unwrap()).unwrap(),
        r#"{"model":"m-1","input":["a","b"]}"#
    );
}

#[tokio::test]
async fn r_33_auth_style_api_key_header() {
    let sim = sim(COMPLETION);
    let src = SourceConfig {
        auth_style: AuthStyle::ApiKeyHeader,
        ..source(&sim.base_url())
    };
    let t = transport(&src);
    ChatTransport::send(&t, chat_plain(&src))
        .await
        .expect("200");
    let r = &sim.wait_for_requests(1).await[0];
    assert!(r.header("authorization").is_none());
    assert!(r.header("api-key").is_some());
    assert!(r.auth_matches(KEY), "api-key carries the key");
}

#[tokio::test]
async fn r_33_auth_style_none_sends_no_credentials() {
    let sim = sim(COMPLETION);
    let src = SourceConfig {
        auth_style: AuthStyle::None,
        api_key: None,
        ..source(&sim.base_url())
    };
    let t = transport(&src);
    ChatTransport::send(&t, chat_plain(&src))
        .await
        .expect("200");
    let r = &sim.wait_for_requests(1).await[0];
    assert!(r.header("authorization").is_none());
    assert!(r.header("api-key").is_none());
}

#[tokio::test]
async fn r_33_headers_and_query_sent() {
    let sim = sim(COMPLETION);
    let mut src = source(&sim.base_url());
    src.headers
        .insert("X-Tenant".to_owned(), Secret::from("tenant-7"));
    src.headers
        .insert("OpenAI-Organization".to_owned(), Secret::from("org-1"));
    src.query
        .insert("api-version".to_owned(), "2024-10-21".to_owned());
    let t = transport(&src);
    ChatTransport::send(&t, chat_plain(&src))
        .await
        .expect("200");
    let body = json!({"model": "m-1", "input": ["x"]});
    EmbeddingTransport::send(&t, request(&src, Endpoint::Embeddings, body, false))
        .await
        .expect("200");
    let recorded = sim.wait_for_requests(2).await;
    assert_eq!(
        recorded[0].path,
        "/v1/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(recorded[1].path, "/v1/embeddings?api-version=2024-10-21");
    for r in &recorded {
        assert_eq!(r.header("x-tenant"), Some("tenant-7"));
        assert_eq!(r.header("openai-organization"), Some("org-1"));
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
}

// covers: G-42
#[tokio::test]
async fn ct_chat_01_redirects_not_followed() {
    let sim = sim(&raw_script(
        307,
        &[
            ("location", "/v1/elsewhere"),
            ("content-type", "text/plain"),
        ],
        &[b"moved"],
        "eof",
    ));
    let src = source(&sim.base_url());
    let t = transport(&src);
    let err = ChatTransport::send(&t, chat_plain(&src)).await.unwrap_err();
    let WireFailure::Http {
        status, headers, ..
    } = err
    else {
        panic!("a redirect is a non-200 fact: {err:?}");
    };
    assert_eq!(status, 307);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "location" && v == "/v1/elsewhere")
    );
    assert_eq!(sim.wait_for_requests(1).await.len(), 1);
    assert_eq!(sim.request_count(), 1, "the redirect was not followed");
}

#[tokio::test]
async fn ct_chat_10_one_client_per_source_independent_sends() {
    let sim_a = sim(COMPLETION);
    let sim_b = sim(COMPLETION);
    let a = SourceConfig {
        name: "a_1".to_owned(),
        ..source(&sim_a.base_url())
    };
    let b = SourceConfig {
        name: "b_1".to_owned(),
        trust_env: false,
        ..source(&sim_b.base_url())
    };
    let t = OpenAiTransport::new([&a, &b], TransportOptions::default()).unwrap();
    let (ra, rb) = tokio::join!(
        ChatTransport::send(&t, chat_plain(&a)),
        ChatTransport::send(&t, chat_plain(&b)),
    );
    assert!(ra.is_ok() && rb.is_ok());
    assert_eq!(sim_a.wait_for_requests(1).await.len(), 1);
    assert_eq!(sim_b.wait_for_requests(1).await.len(), 1);
}

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
