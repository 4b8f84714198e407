//! Unit tests of stage A: source keys never print their values.

use super::source::resolve_refs;
use super::*;

#[test]
fn r_15_source_keys_debug_never_shows_values() {
    // Adversarial: the raw values of one source include its API key and header values.
    let mut keys = SourceKeys::default();
    keys.fields.insert(
        "API_KEY",
        ("LLM__OPENAI__1__API_KEY", "sk-adversarial-secret"),
    );
    keys.fields.insert(
        "HEADERS",
        ("LLM__OPENAI__1__HEADERS", r#"{"x-token":"hdr-secret"}"#),
    );
    let text = format!("{keys:?}");
    assert!(text.contains("LLM__OPENAI__1__API_KEY"), "{text}");
    assert!(!text.contains("sk-adversarial-secret"), "{text}");
    assert!(!text.contains("hdr-secret"), "{text}");
}

#[test]
fn headers_invalid_reference_is_not_echoed() {
    let vals = BTreeMap::new();
    let err = resolve_refs("x${not a name: hdr-secret}", &vals).unwrap_err();
    assert!(!err.contains("hdr-secret"), "{err}");
}
