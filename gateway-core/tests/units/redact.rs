//! Secret scrubbing (05 R-34) and the body summary (30 G-26, G-27).

use gateway_core::redact::{
    REDACTED, SUMMARY_MAX_CHARS, ScrubOptions, scrub, scrubbed_summary, summarize_body,
};
use proptest::prelude::*;

fn opts(key: Option<&str>) -> ScrubOptions<'_> {
    ScrubOptions {
        source_key: key,
        redact_ips: true,
        source: None,
    }
}

// ── R-34: the source's own key ───────────────────────────────────────────────────────────────

#[test]
fn r_34_source_key_exact_substring_everywhere() {
    let key = "my-secret-key-42";
    let text =
        "invalid key my-secret-key-42 (prefix xmy-secret-key-42y) and again my-secret-key-42";
    let out = scrub(text, &opts(Some(key)));
    assert!(!out.contains(key), "{out}");
    assert_eq!(out.matches(REDACTED).count(), 3);
    assert!(out.contains("x<redacted>y"));
}

#[test]
fn r_34_empty_or_absent_key_changes_nothing_else() {
    let text = "plain body, nothing secret";
    assert_eq!(scrub(text, &opts(Some(""))), text);
    assert_eq!(scrub(text, &opts(None)), text);
}

#[test]
fn r_34_debug_never_prints_the_key() {
    let o = opts(Some("hunter2-very-secret"));
    let dbg = format!("{o:?}");
    assert!(!dbg.contains("hunter2"), "{dbg}");
    assert!(dbg.contains(REDACTED));
}

// ── R-34: Bearer tokens and sk- keys ─────────────────────────────────────────────────────────

#[test]
fn r_34_bearer_token() {
    let out = scrub(
        r#"{"error":"bad header Authorization: Bearer abc.DEF-123_~+/xyz== end"}"#,
        &opts(None),
    );
    assert_eq!(
        out,
        r#"{"error":"bad header Authorization: Bearer <redacted> end"}"#
    );
    assert_eq!(scrub("bearer\ttok123", &opts(None)), "bearer\t<redacted>");
    assert_eq!(scrub("BEARER tok", &opts(None)), "BEARER <redacted>");
    // Not a word start, no whitespace, or no token: kept.
    assert_eq!(scrub("xbearer tok", &opts(None)), "xbearer tok");
    assert_eq!(scrub("Bearer", &opts(None)), "Bearer");
    assert_eq!(scrub("Bearer: tok", &opts(None)), "Bearer: tok");
}

#[test]
fn r_34_sk_keys_of_eight_or_more() {
    assert_eq!(
        scrub(
            "Incorrect API key provided: sk-proj-AbC_12345678.",
            &opts(None)
        ),
        "Incorrect API key provided: <redacted>."
    );
    assert_eq!(scrub("sk-12345678", &opts(None)), "<redacted>");
    assert_eq!(
        scrub("sk-1234567", &opts(None)),
        "sk-1234567",
        "7 chars: kept"
    );
    assert_eq!(scrub("\"sk-abcdefgh\"", &opts(None)), "\"<redacted>\"");
}

// ── R-34: IP addresses, unless PGW_REDACT_IPS=false ──────────────────────────────────────────

#[test]
fn r_34_ipv4_addresses() {
    let cases = [
        ("Your IP: 203.0.113.57 &bull;", "Your IP: <redacted> &bull;"),
        ("from 10.0.0.1.", "from <redacted>."),
        (
            "upstream 192.168.1.20:8080 refused",
            "upstream <redacted>:8080 refused",
        ),
        ("0.0.0.0", "<redacted>"),
        ("255.255.255.255", "<redacted>"),
        ("ip=127.0.0.1,", "ip=<redacted>,"),
    ];
    for (text, want) in cases {
        assert_eq!(scrub(text, &opts(None)), want, "{text}");
    }
}

#[test]
fn r_34_ipv4_lookalikes_kept() {
    for text in [
        "version 1.3.10",
        "1.2.3.4.5",
        "256.1.1.1",
        "1.2.3",
        "1234.1.1.1",
        "price 3.50",
    ] {
        assert_eq!(scrub(text, &opts(None)), text);
    }
}

#[test]
fn r_34_ipv6_addresses() {
    let cases = [
        (
            "client 2001:db8::8a2e:370:7334 denied",
            "client <redacted> denied",
        ),
        ("[::1]:443", "[<redacted>]:443"),
        ("fe80::1%eth0", "<redacted>%eth0"),
        ("mapped ::ffff:192.0.2.1 ok", "mapped <redacted> ok"),
        ("at 2001:db8:0:0:0:0:2:1.", "at <redacted>."),
        ("host fe80::1: refused", "host <redacted>: refused"),
    ];
    for (text, want) in cases {
        assert_eq!(scrub(text, &opts(None)), want, "{text}");
    }
}

#[test]
fn r_34_ipv6_lookalikes_kept() {
    for text in [
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "std::vector::new",
        "a :: b",
        "Foo::bar",
        "cafe:babe",
        "ratio 1:2:3",
    ] {
        assert_eq!(scrub(text, &opts(None)), text);
    }
}

#[test]
fn r_34_redact_ips_false_keeps_addresses_but_not_keys() {
    let o = ScrubOptions {
        source_key: Some("k-0123456789"),
        redact_ips: false,
        source: None,
    };
    let out = scrub(
        "ip 10.1.2.3 and ::1, key k-0123456789, sk-abcdefghij, Bearer xyz",
        &o,
    );
    assert_eq!(
        out,
        "ip 10.1.2.3 and ::1, key <redacted>, <redacted>, Bearer <redacted>"
    );
}

#[test]
fn r_34_key_is_scrubbed_before_patterns() {
    // A key that starts inside what would be an IP match must still vanish entirely.
    let key = "3.4secretvalue";
    let out = scrub("x 1.2.3.4secretvalue y", &opts(Some(key)));
    assert!(!out.contains("secretvalue"), "{out}");
}

#[test]
fn r_34_multibyte_text_is_kept_intact() {
    let text = "错误：密钥 sk-中文不是密钥 和 IP 10.0.0.1 — 完";
    let out = scrub(text, &opts(None));
    assert_eq!(out, "错误：密钥 sk-中文不是密钥 和 IP <redacted> — 完");
}

// ── G-26: the body summary ───────────────────────────────────────────────────────────────────

#[test]
fn g_26_collapses_unicode_whitespace_and_trims() {
    assert_eq!(
        summarize_body("  <html>\n\t<head>\u{3000}\u{a0}x \r\n</html>  "),
        "<html> <head> x </html>"
    );
    assert_eq!(summarize_body(""), "");
    assert_eq!(summarize_body(" \n\t "), "");
}

#[test]
fn g_26_exactly_2048_chars_is_kept() {
    let body = "é".repeat(2048);
    assert_eq!(summarize_body(&body), body);
}

#[test]
fn g_26_long_body_keeps_head_and_tail_with_marker() {
    let body = format!("{}{}{}", "h".repeat(1400), "m".repeat(649), "t".repeat(600));
    let total = 1400 + 649 + 600; // 2649 → N = 649
    let out = summarize_body(&body);
    let want = format!(
        "{} …[{} chars omitted]… {}",
        "h".repeat(1400),
        total - 2000,
        "t".repeat(600)
    );
    assert_eq!(out, want);
    assert!(out.chars().count() <= SUMMARY_MAX_CHARS);
}

#[test]
fn g_26_long_multibyte_body_never_splits_a_char() {
    let body = "日本語🙂".repeat(1000); // 4000 chars, 3- and 4-byte chars
    let out = summarize_body(&body);
    assert!(out.chars().count() <= SUMMARY_MAX_CHARS);
    assert!(out.starts_with("日本語🙂"));
    assert!(out.ends_with("日本語🙂"));
    assert!(out.contains("…[2000 chars omitted]…"));
}

#[test]
fn g_26_trailing_request_id_survives() {
    let body = format!(
        "{{\"error\":{{\"message\":\"{}\",\"code\":\"server_error\",\"request_id\":\"req_42\"}}}}",
        "x".repeat(5000)
    );
    let out = summarize_body(&body);
    assert!(out.ends_with("\"code\":\"server_error\",\"request_id\":\"req_42\"}}"));
}

#[test]
fn r_34_g_26_scrubbed_summary_scrubs_before_cutting() {
    // An IP straddling the head/tail cut would leak in part if the summary were cut first.
    let body = format!("{} 203.0.113.57 {}", "a".repeat(1395), "b".repeat(3000));
    let out = scrubbed_summary(&body, &opts(None));
    assert!(!out.contains("203.0") && !out.contains(".113.") && !out.contains("13.57"));
    assert!(out.chars().count() <= SUMMARY_MAX_CHARS);
}

// ── invariants ───────────────────────────────────────────────────────────────────────────────

proptest! {
    /// R-34: the scrubber never panics, on any text and any key.
    #[test]
    fn r_34_scrub_never_panics(text in "\\PC{0,300}", key in proptest::option::of("\\PC{0,12}"), ips in any::<bool>()) {
        let o = ScrubOptions { source_key: key.as_deref(), redact_ips: ips, source: None };
        let _ = scrub(&text, &o);
    }

    /// R-34: scrubbing works on the ASCII soup where the scanners' edge cases live.
    #[test]
    fn r_34_scrub_never_panics_on_scanner_alphabet(text in "[0-9a-fA-F:.\\[\\] sSkK\\-bBeErR_=\n]{0,200}") {
        let _ = scrub(&text, &ScrubOptions::default());
    }

    /// R-34: the source's key never survives (keys of 12+ alphanumerics cannot overlap `<redacted>`).
    #[test]
    fn r_34_key_never_survives(pre in "\\PC{0,80}", post in "\\PC{0,80}", key in "[A-Za-z0-9]{12,24}") {
        let text = format!("{pre}{key}{post}{key}");
        let out = scrub(&text, &opts(Some(&key)));
        prop_assert!(!out.contains(&key));
    }

    /// R-34: an sk- key between separators never survives.
    #[test]
    fn r_34_sk_key_never_survives(pre in "\\PC{0,40}", body in "[A-Za-z0-9_-]{8,40}", post in "\\PC{0,40}") {
        let secret = format!("sk-{body}");
        let text = format!("{pre} {secret} {post}");
        let out = scrub(&text, &ScrubOptions { source_key: None, redact_ips: false, source: None });
        prop_assert!(!out.contains(&secret));
    }

    /// R-34: dotted-quad IPv4 between spaces is always redacted.
    #[test]
    fn r_34_ipv4_never_survives(a in 0u8..=255, b in 0u8..=255, c in 0u8..=255, d in 0u8..=255) {
        let ip = format!("{a}.{b}.{c}.{d}");
        let out = scrub(&format!("addr {ip} here"), &opts(None));
        prop_assert_eq!(out, "addr <redacted> here");
    }

    /// R-34: any IPv6 address in its canonical text form between spaces is redacted.
    #[test]
    fn r_34_ipv6_never_survives(segs in any::<[u16; 8]>()) {
        let ip = std::net::Ipv6Addr::from(segs);
        let text = format!("addr {ip} here");
        let out = scrub(&text, &opts(None));
        prop_assert_eq!(out, "addr <redacted> here", "{}", ip);
    }

    /// G-26: the summary has ≤ 2048 chars, is trimmed, and is the collapsed text when short.
    #[test]
    fn g_26_summary_bounded_and_char_safe(text in "\\PC{0,3000}|(\\PC|\\s){0,3000}") {
        let out = summarize_body(&text);
        prop_assert!(out.chars().count() <= SUMMARY_MAX_CHARS);
        prop_assert_eq!(out.trim(), out.as_str());
        let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if collapsed.chars().count() <= SUMMARY_MAX_CHARS {
            prop_assert_eq!(out, collapsed);
        } else {
            let head: String = collapsed.chars().take(1400).collect();
            prop_assert!(out.starts_with(&head));
        }
    }

    /// G-26 + R-34: the scrubbed summary is bounded too, for long bodies.
    #[test]
    fn r_34_g_26_scrubbed_summary_bounded(unit in "\\PC{1,8}", reps in 0usize..1200) {
        let text = unit.repeat(reps);
        let out = scrubbed_summary(&text, &ScrubOptions::default());
        prop_assert!(out.chars().count() <= SUMMARY_MAX_CHARS);
    }
}
