//! Unit tests of the MonkeyOCR transport: construction errors, headers and body reading.

use gateway_ports::config::Secret;

use super::*;

fn source(base: &str) -> SourceConfig {
    SourceConfig::new("monkey_1", "monkey", base, None, "monkeyocr")
}

fn client(base: &str) -> SourceClient {
    SourceClient::build(&source(base)).unwrap()
}

#[test]
fn o_13_relative_location_joins_base_url() {
    let c = client("http://127.0.0.1:7861");
    assert_eq!(
        c.result_url("/static/a.zip").unwrap().as_str(),
        "http://127.0.0.1:7861/static/a.zip"
    );
    assert_eq!(
        c.result_url("static/a.zip").unwrap().as_str(),
        "http://127.0.0.1:7861/static/a.zip"
    );
    let c = client("http://h.invalid:8000/ocr/");
    assert_eq!(
        c.result_url("/static/a.zip?x=1").unwrap().as_str(),
        "http://h.invalid:8000/ocr/static/a.zip?x=1"
    );
}

#[test]
fn o_13_absolute_location_same_origin_only() {
    let c = client("http://127.0.0.1:7861");
    assert!(c.result_url("http://127.0.0.1:7861/static/a.zip").is_ok());
    for foreign in [
        "http://127.0.0.1:7862/static/a.zip",
        "https://127.0.0.1:7861/static/a.zip",
        "http://evil.invalid:7861/static/a.zip",
        "//evil.invalid/static/a.zip",
        "http://user:pw@127.0.0.1:7861/a.zip",
        "file:///etc/passwd",
    ] {
        assert_eq!(
            c.result_url(foreign),
            Err(ArchiveFault::ForeignLocation),
            "{foreign}"
        );
    }
    // Default port spelt out is the same origin.
    let c = client("http://h.invalid");
    assert!(c.result_url("http://h.invalid:80/a.zip").is_ok());
}

#[test]
fn ct_ocr_03_only_the_location_is_read() {
    assert_eq!(
        result_location(br#"{"success":false,"download_url":"/static/x.zip"}"#).as_deref(),
        Some("/static/x.zip")
    );
    assert_eq!(
        result_location(br#"{"success":true,"download_url":null}"#),
        None
    );
    assert_eq!(result_location(br#"{"download_url":"  "}"#), None);
    assert_eq!(result_location(b"not json"), None);
}

#[test]
fn r_33_query_and_auth_applied_key_optional() {
    let mut src = source("http://h.invalid/base");
    src.query.insert("api-version".to_owned(), "1".to_owned());
    let c = SourceClient::build(&src).unwrap();
    assert_eq!(
        c.url("/parse", &[("return_type", "zip_all")]).as_str(),
        "http://h.invalid/base/parse?api-version=1&return_type=zip_all"
    );
    assert!(c.headers.get("authorization").is_none());
    src.api_key = Some(Secret::from("sk-ocr-secret"));
    let c = SourceClient::build(&src).unwrap();
    assert_eq!(
        c.headers.get("authorization").map(|v| v.as_bytes()),
        Some(&b"Bearer sk-ocr-secret"[..])
    );
    assert!(!format!("{c:?}").contains("sk-ocr-secret"));
}

#[test]
fn f9_bad_base_url_names_the_field() {
    let err = SourceClient::build(&source("ftp://h.invalid")).unwrap_err();
    assert_eq!(err.field(), Some("BASE_URL"));
    assert_eq!(err.code(), "source.identity");
}

proptest::proptest! {
    /// whatever location a server names, the download URL stays on the source's own
    /// scheme, host and port (or the location is refused as foreign).
    #[test]
    fn o_13_download_never_leaves_the_origin(location in "\\PC{0,60}", host in "[a-z]{1,8}", port in 1u16..65535) {
        let c = client("http://127.0.0.1:7861/base");
        for loc in [location.clone(), format!("http://{host}:{port}/{location}"), format!("//{host}/{location}")] {
            if let Ok(url) = c.result_url(&loc) {
                proptest::prop_assert_eq!(url.scheme(), "http");
                proptest::prop_assert_eq!(url.host_str(), Some("127.0.0.1"));
                proptest::prop_assert_eq!(url.port_or_known_default(), Some(7861));
            }
        }
    }

    /// a member name with a `..` component is never accepted.
    #[test]
    fn o_15_dot_dot_component_is_never_safe(a in "[a-z/]{0,10}", b in "[a-z/]{0,10}") {
        let name = format!("{a}/../{b}");
        proptest::prop_assert!(!archive::is_safe_member_name(&name));
    }
}
