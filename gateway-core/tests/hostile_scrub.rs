//! Issue 22 (secrets in upstream error bodies, 05 R-34 extended): every configured secret of the
//! source — `API_KEY`, `HEADERS` values, `QUERY` values, the `BASE_URL` password — is scrubbed
//! from an echoed body, also when the upstream JSON-escaped it (`sk\u002d…`), and also when the
//! body was cut inside it.

#![allow(clippy::unwrap_used, reason = "test assertions")]

use std::collections::BTreeMap;

use gateway_core::classify::{ClassifyContext, classify_http};
use gateway_core::redact::{ScrubOptions, scrub, scrubbed_summary};
use gateway_ports::{ErrorOperation, Secret, SourceConfig};
use proptest::prelude::*;

const HEADER_SECRET: &str = "hdr-canary-91c2e0";
const QUERY_SECRET: &str = "qry-canary-77ab31";
const URL_PASSWORD: &str = "pw-canary-5e6f70";
const API_KEY: &str = "key-canary-0a1b2c3d";

fn source() -> SourceConfig {
    let mut headers = BTreeMap::new();
    headers.insert(
        "x-tenant-token".to_owned(),
        Secret::from(HEADER_SECRET.to_owned()),
    );
    let mut query = BTreeMap::new();
    query.insert("key".to_owned(), QUERY_SECRET.to_owned());
    query.insert("api-version".to_owned(), "v1".to_owned());
    SourceConfig {
        name: "qwen_1".into(),
        base_url: format!("https://user:{URL_PASSWORD}@a.example/v1"),
        api_key: Some(Secret::from(API_KEY.to_owned())),
        headers,
        query,
        ..SourceConfig::default()
    }
}

fn opts(source: &SourceConfig) -> ScrubOptions<'_> {
    ScrubOptions {
        source_key: source.api_key.as_ref().map(|k| k.expose_secret().as_str()),
        redact_ips: true,
        source: Some(source),
    }
}

fn assert_clean(text: &str) {
    for secret in [HEADER_SECRET, QUERY_SECRET, URL_PASSWORD, API_KEY, "canary"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[test]
fn issue_22_headers_query_and_url_password_echoes_are_scrubbed() {
    let src = source();
    let body = format!(
        "{{\"error\":{{\"message\":\"bad token {HEADER_SECRET} for ?key={QUERY_SECRET} at \
         https://user:{URL_PASSWORD}@a.example with {API_KEY}\"}}}}"
    );
    let out = scrub(&body, &opts(&src));
    assert_clean(&out);
    // Short, ordinary values (`v1`) are not treated as secrets.
    assert!(scrub("api v1 failed", &opts(&src)).contains("v1"));
    // The classifier's message and body text too.
    let wall = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_735_689_600);
    let cx = ClassifyContext::new("qwen_1", ErrorOperation::Chat, wall).with_scrub(opts(&src));
    let c = classify_http(401, &[], &body, &cx);
    assert_clean(&format!("{:?}", c.into_error()));
}

#[test]
fn issue_22_json_escaped_echoes_are_scrubbed() {
    let src = source();
    let escaped_key = "sk\\u002dabcdefghijklmnop";
    let body = format!(
        "{{\"echo\":\"{escaped_key} hdr\\u002dcanary\\u002d91c2e0 {}\"}}",
        API_KEY.replace('-', "\\u002d")
    );
    let out = scrub(&body, &opts(&src));
    assert_clean(&out);
    assert!(!out.contains("abcdefghijklmnop"), "{out}");
    // `\/` escapes too.
    let out = scrub(
        "{\"u\":\"https:\\/\\/user:pw-canary-5e6f70@a.example\"}",
        &opts(&src),
    );
    assert_clean(&out);
}

#[test]
fn issue_22_body_cut_inside_a_header_secret_leaves_no_prefix() {
    let src = source();
    let body = format!("echo: {}", &HEADER_SECRET[..12]);
    let out = scrubbed_summary(&body, &opts(&src));
    assert!(!out.contains(&HEADER_SECRET[..12]), "{out}");
}

proptest! {
    /// Any configured secret echoed anywhere in any text, plain or with `-` escaped, is gone.
    #[test]
    fn issue_22_any_configured_secret_is_scrubbed(
        prefix in ".{0,40}",
        suffix in ".{0,40}",
        secret in "[a-z0-9]{3}-[a-z0-9]{4,20}",
        which in 0usize..3,
        escape in any::<bool>(),
    ) {
        let mut src = source();
        match which {
            0 => { src.headers.insert("x-h".into(), Secret::from(secret.clone())); }
            1 => { src.query.insert("token".into(), secret.clone()); }
            _ => { src.base_url = format!("https://u:{secret}@h.example/v1"); }
        }
        let shown = if escape { secret.replace('-', "\\u002d") } else { secret.clone() };
        let out = scrub(&format!("{prefix}{shown}{suffix}"), &opts(&src));
        prop_assert!(!out.contains(&secret), "{}", out);
    }
}
