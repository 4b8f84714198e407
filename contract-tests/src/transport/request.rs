//! The request side (10 §8.1 CT-CHAT-01, CT-CHAT-10, §8.2 CT-EMB-01; 05 R-14, R-33): path,
//! method, headers, authentication styles, `X-Request-Id`, `HEADERS`, `QUERY`, the body sent
//! verbatim, redirects not followed, independent sources.

use gateway_ports::{AuthStyle, Endpoint, Secret, SourceConfig, WireFailure, WireResponse};
use serde_json::json;

use super::{
    CALL_ID, KEY, TransportHarness, WireLimits, chat, chat_plain, chat_stream, collect, embed,
    raw_script, request, sim, source,
};

const COMPLETION: &str =
    r#"{"version":1,"responses":[{"completion":{"content":"hello","chunks":2}}]}"#;

/// CT-CHAT-01 (R-14, R-33): a streamed send is one `POST {base_url}/chat/completions` with
/// bearer authentication, `Content-Type: application/json`, `X-Request-Id: <call_id>` and the
/// core's body serialised by `serde_json`, nothing added or removed.
pub async fn ct_chat_01_stream_request_shape(h: &dyn TransportHarness) {
    let sim = sim(COMPLETION);
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let req = chat_stream(&src);
    let sent = req.body.clone();
    let resp = t.send(req).await.expect("200");
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
    assert_eq!(r.header("x-request-id"), Some(CALL_ID), "R-33 X-Request-Id");
    // R-14: the body is the core's bytes, nothing added or removed.
    let wire = std::str::from_utf8(sent.bytes()).expect("UTF-8 JSON");
    assert_eq!(r.body_len, wire.len());
    assert_eq!(
        serde_json::to_string(r.body.as_ref().expect("a JSON body")).expect("serialise"),
        wire
    );
}

/// CT-CHAT-01: a non-stream send posts the same path and body and answers `Body`.
pub async fn ct_chat_01_non_stream_request_shape(h: &dyn TransportHarness) {
    let sim = sim(COMPLETION);
    let src = source(&sim.base_url());
    let t = chat(h, &src);
    let req = chat_plain(&src);
    let sent = req.body.clone();
    let resp = t.send(req).await.expect("200");
    assert!(matches!(resp, WireResponse::Body(_)));
    let r = &sim.wait_for_requests(1).await[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.body.as_ref(), Some(sent.value()));
}

/// CT-CHAT-01 (covers G-42): a redirect is not followed; it is an `Http` failure with its
/// `location` header, and the upstream saw exactly one request.
// covers: G-42
pub async fn ct_chat_01_redirects_not_followed(h: &dyn TransportHarness) {
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
    let t = chat(h, &src);
    let err = t.send(chat_plain(&src)).await.expect_err("307");
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

/// CT-CHAT-01 as amended by R-33: `AUTH_STYLE = api_key_header` sends `api-key: <key>` and no
/// `Authorization`.
pub async fn r_33_auth_style_api_key_header(h: &dyn TransportHarness) {
    let sim = sim(COMPLETION);
    let src = SourceConfig {
        auth_style: AuthStyle::ApiKeyHeader,
        ..source(&sim.base_url())
    };
    let t = chat(h, &src);
    t.send(chat_plain(&src)).await.expect("200");
    let r = &sim.wait_for_requests(1).await[0];
    assert!(r.header("authorization").is_none());
    assert!(r.header("api-key").is_some());
    assert!(r.auth_matches(KEY), "api-key carries the key");
}

/// R-33: `AUTH_STYLE = none` sends no credentials at all.
pub async fn r_33_auth_style_none_sends_no_credentials(h: &dyn TransportHarness) {
    let sim = sim(COMPLETION);
    let src = SourceConfig {
        auth_style: AuthStyle::None,
        api_key: None,
        ..source(&sim.base_url())
    };
    let t = chat(h, &src);
    t.send(chat_plain(&src)).await.expect("200");
    let r = &sim.wait_for_requests(1).await[0];
    assert!(r.header("authorization").is_none());
    assert!(r.header("api-key").is_none());
}

/// R-33: the source's `HEADERS` and `QUERY` go with every chat and embedding request.
pub async fn r_33_headers_and_query_sent(h: &dyn TransportHarness) {
    let sim = sim(COMPLETION);
    let mut src = source(&sim.base_url());
    src.headers
        .insert("X-Tenant".to_owned(), Secret::from("tenant-7"));
    src.headers
        .insert("OpenAI-Organization".to_owned(), Secret::from("org-1"));
    src.query
        .insert("api-version".to_owned(), "2024-10-21".to_owned());
    chat(h, &src).send(chat_plain(&src)).await.expect("200");
    let body = json!({"model": "m-1", "input": ["x"]});
    embed(h, &src)
        .send(request(&src, Endpoint::Embeddings, body, false))
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

/// CT-CHAT-10: one transport serving two sources sends to each independently and concurrently.
pub async fn ct_chat_10_one_client_per_source_independent_sends(h: &dyn TransportHarness) {
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
    let t = h.chat(&[a.clone(), b.clone()], WireLimits::default());
    let (ra, rb) = tokio::join!(t.send(chat_plain(&a)), t.send(chat_plain(&b)));
    assert!(ra.is_ok() && rb.is_ok());
    assert_eq!(sim_a.wait_for_requests(1).await.len(), 1);
    assert_eq!(sim_b.wait_for_requests(1).await.len(), 1);
}

/// CT-EMB-01: CT-CHAT-01 for `POST {base_url}/embeddings`, non-stream; the 200 body unjudged.
pub async fn ct_emb_01_embeddings_request_shape(h: &dyn TransportHarness) {
    let sim = sim(r#"{"version":1,"responses":[{"embedding":{"dim":4}}]}"#);
    let src = source(&sim.base_url());
    let t = embed(h, &src);
    let body = json!({"model": "m-1", "input": ["a", "b"]});
    let req = request(&src, Endpoint::Embeddings, body.clone(), false);
    let got = t.send(req).await.expect("200");
    let parsed: serde_json::Value = serde_json::from_slice(&got.bytes).expect("JSON");
    assert_eq!(parsed["data"].as_array().map(Vec::len), Some(2));
    let r = &sim.wait_for_requests(1).await[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/embeddings");
    assert!(sim.auth_matches(KEY));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-request-id"), Some(CALL_ID));
    assert_eq!(
        serde_json::to_string(r.body.as_ref().expect("a JSON body")).expect("serialise"),
        r#"{"model":"m-1","input":["a","b"]}"#
    );
}
