//! Secrets never appear in Debug, Display or serde output (10 §0.5; 05 ).

use gateway_ports::*;

const KEY: &str = "sk-live-SUPERSECRET-1234567890";
const HEADER_VALUE: &str = "hdr-TOPSECRET-value";

fn source() -> SourceConfig {
    let mut source = SourceConfig::new(
        "openai_1",
        "openai",
        "https://api.example.invalid/v1",
        Some(Secret::from(KEY)),
        "gpt-x",
    );
    source
        .headers
        .insert("x-tenant-token".into(), Secret::from(HEADER_VALUE));
    source
        .query
        .insert("api-version".into(), "2024-10-21".into());
    source
}

fn assert_clean(text: &str) {
    assert!(!text.contains(KEY), "key leaked: {text}");
    assert!(!text.contains("SUPERSECRET"), "key leaked: {text}");
    assert!(!text.contains(HEADER_VALUE), "header leaked: {text}");
}

#[test]
fn r_15_secret_debug_display_serde_are_redacted() {
    let secret: Secret<String> = Secret::from(KEY);
    assert_eq!(format!("{secret:?}"), "<redacted>");
    assert_eq!(format!("{secret}"), "<redacted>");
    assert_eq!(format!("{secret:#?}"), "<redacted>");
    assert_eq!(serde_json::to_string(&secret).unwrap(), "\"<redacted>\"");
    assert_eq!(secret.expose_secret(), KEY);
    let read: Secret<String> = serde_json::from_str("\"abc\"").unwrap();
    assert_eq!(read.expose_secret(), "abc");
}

#[test]
fn r_33_source_config_debug_never_shows_key_or_header_values() {
    let source = source();
    let debug = format!("{source:?}");
    let pretty = format!("{source:#?}");
    assert_clean(&debug);
    assert_clean(&pretty);
    assert!(debug.contains("<redacted>"));
    // Header and query names are not secrets; query values may be (`?key=`), so they are
    // redacted like header values.
    assert!(debug.contains("x-tenant-token"));
    assert!(debug.contains("api-version"));
    assert!(!debug.contains("2024-10-21"));
}

#[test]
fn r_15_source_config_serialises_key_as_redacted() {
    let source = source();
    let json = serde_json::to_value(&source).unwrap();
    assert_clean(&json.to_string());
    assert_eq!(json["api_key"], "<redacted>");
    assert_eq!(json["headers"]["x-tenant-token"], "<redacted>");
    assert_eq!(json["query"]["api-version"], "<redacted>");
    assert_eq!(json["auth_style"], "bearer");
}

#[test]
fn wire_request_debug_is_secret_free() {
    let request = WireRequest {
        source: std::sync::Arc::new(source()),
        call_id: "c1".into(),
        endpoint: Endpoint::ChatCompletions,
        body: serde_json::json!({"model": "gpt-x"}).into(),
        stream: true,
    };
    assert_clean(&format!("{request:?}"));
    let ocr = OcrWireRequest {
        source: std::sync::Arc::new(source()),
        call_id: "c2".into(),
        image: bytes::Bytes::from_static(b"png"),
    };
    assert_clean(&format!("{ocr:?}"));
}

#[test]
fn s10_2_1_source_config_defaults() {
    let source = SourceConfig::default();
    assert_eq!(source.timeout_s, 120.0);
    assert_eq!(source.stall_threshold_ms, 1000);
    assert!(source.trust_env);
    assert_eq!(source.max_response_bytes, 64 * 1024 * 1024);
    assert_eq!(source.auth_style, AuthStyle::Bearer);
    assert_eq!(source.effort_fallback, EffortFallback::Error);
    assert_eq!(source.missing_done, MissingDone::Retry);
    assert_eq!(source.effective_est_tokens(), 1000);
    let with_est = SourceConfig {
        est_tokens: Some(7),
        ..SourceConfig::default()
    };
    assert_eq!(with_est.effective_est_tokens(), 7);
}

#[test]
fn r_33_query_values_never_shown_in_debug_or_serde() {
    let mut s = source();
    s.query.insert("key".into(), "query-secret-value".into());
    s.query.insert("api-version".into(), "2024-06-01".into());
    let debug = format!("{s:?}");
    let json = serde_json::to_string(&s).unwrap();
    for text in [&debug, &json] {
        assert!(!text.contains("query-secret-value"), "{text}");
        assert!(text.contains("api-version"), "names stay visible: {text}");
    }
}

#[test]
fn r_34_wire_failure_debug_never_echoes_the_body_or_header_values() {
    let failure = WireFailure::Http {
        status: 401,
        headers: vec![("x-echo".into(), "header-secret-value".into())],
        body: "invalid key sk-body-secret-value".into(),
    };
    let debug = format!("{failure:?}");
    let display = failure.to_string();
    for text in [&debug, &display] {
        assert!(!text.contains("secret-value"), "{text}");
    }
    assert!(debug.contains("401") && debug.contains("x-echo"), "{debug}");
}
