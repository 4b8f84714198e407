//! Retry-After parsing: 30 G-31..G-37, README D4, 05 R-33 (ms headers), R-35 (hint cap);
//! conformance rows CF-092, CF-093, CF-094.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway_core::retry_after::{
    RETRY_AFTER_NOT_FINITE, hint_exceeds_cap, parse_retry_after, parse_retry_hint,
};
use proptest::prelude::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

// ── a minimal warning recorder (no extra dev-dependency) ────────────────────────────────────

#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    #[expect(
        clippy::unwrap_used,
        reason = "test recorder; a poisoned lock fails the test"
    )]
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() == Level::WARN {
            let mut line = Line(String::new());
            event.record(&mut line);
            self.0.lock().unwrap().push(line.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` with a recording subscriber; returns its result and the warnings logged.
#[expect(
    clippy::unwrap_used,
    reason = "test recorder; a poisoned lock fails the test"
)]
fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let warnings = Warnings::default();
    let out = tracing::subscriber::with_default(warnings.clone(), f);
    let lines = warnings.0.lock().unwrap().clone();
    (out, lines)
}

fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// `Wed, 21 Oct 2026 07:28:00 GMT` as a `SystemTime`.
fn oct_21_2026_0728() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_792_567_680)
}

fn now() -> SystemTime {
    // A fixed wall clock: 2026-01-01T00:00:00Z. Tests never read the real clock.
    UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

fn retry_after(value: &str) -> (Option<f64>, Vec<String>) {
    capture(|| parse_retry_after(&h(&[("retry-after", value)]), "qwen_1", now()))
}

// ── G-32 step 2 / G-37: delta-seconds ────────────────────────────────────────────────────────

#[test]
fn g_37_cf_094_decimal_seconds() {
    let (hint, warnings) = retry_after("2.5");
    assert_eq!(hint, Some(2.5));
    assert!(warnings.is_empty());
}

#[test]
fn g_32_d4_rust_float_forms_and_trimming() {
    for (value, expected) in [
        ("+2", 2.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("  7 \t", 7.0),
        ("33", 33.0),
    ] {
        assert_eq!(retry_after(value).0, Some(expected), "value {value:?}");
    }
}

#[test]
fn g_36_huge_finite_hint_is_kept_unclamped() {
    // G-35/G-36: never clamped here; the backoff saturates the Duration, the deadline bounds it.
    assert_eq!(retry_after("1e300").0, Some(1e300));
    assert_eq!(retry_after("86400").0, Some(86400.0));
}

// ── G-33 / G-37 / CF-092: non-finite → one warning, never echoing the value ─────────────────

#[test]
fn g_37_cf_092_non_finite_warns_once_without_raw_value() {
    for raw in ["inf", "-inf", "1e999", "Infinity"] {
        let (hint, warnings) = retry_after(raw);
        assert_eq!(hint, None, "value {raw:?}");
        assert_eq!(warnings.len(), 1, "value {raw:?}: {warnings:?}");
        let w = &warnings[0];
        assert!(w.contains("qwen_1"), "{w}");
        assert!(w.contains(RETRY_AFTER_NOT_FINITE), "{w}");
        assert!(w.contains("code=\"retry_after_not_finite\""), "{w}");
        assert!(w.contains("retry-after"), "names the header: {w}");
        assert!(!w.contains(raw), "echoes the raw value {raw:?}: {w}");
        assert!(!w.to_ascii_lowercase().contains("inf"), "{w}");
    }
}

#[test]
fn g_32_step4_at_most_one_warning_per_response() {
    let headers = h(&[
        ("retry-after-ms", "inf"),
        ("x-ms-retry-after-ms", "-inf"),
        ("retry-after", "Infinity"),
    ]);
    let (hint, warnings) = capture(|| parse_retry_after(&headers, "azure_1", now()));
    assert_eq!(hint, None);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("azure_1"));
    assert!(
        warnings[0].contains("retry-after-ms"),
        "names the first header"
    );
}

// ── G-33 / CF-093: everything else silent ────────────────────────────────────────────────────

#[test]
fn g_33_cf_093_unusable_values_are_silent() {
    for raw in [
        "nan",
        "NaN",
        "",
        "  ",
        "-1",
        "0",
        "-0",
        "soon",
        "1_0",
        "0x10",
        "Wed, 21 Oct 2015 07:28:00 GMT",
    ] {
        let (hint, warnings) = retry_after(raw);
        assert_eq!(hint, None, "value {raw:?}");
        assert!(warnings.is_empty(), "value {raw:?}: {warnings:?}");
    }
}

#[test]
fn g_37_cf_093_past_http_date_is_silent() {
    let headers = h(&[("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT")]);
    let later = oct_21_2026_0728() + Duration::from_secs(1);
    let (hint, warnings) = capture(|| parse_retry_after(&headers, "qwen_1", later));
    assert_eq!(hint, None);
    assert!(warnings.is_empty());
    // Exactly at the instant: `date − wall_now = 0` → not a hint.
    let at = capture(|| parse_retry_after(&headers, "qwen_1", oct_21_2026_0728()));
    assert_eq!(at, (None, vec![]));
}

// ── D4 / G-32 step 3: HTTP-date relative to the injected wall clock ──────────────────────────

#[test]
fn d4_cf_093_future_http_date_gives_seconds_until_it() {
    let headers = h(&[("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT")]);
    let before = oct_21_2026_0728() - Duration::from_secs(90);
    assert_eq!(parse_retry_after(&headers, "s", before), Some(90.0));
    let sub_second = oct_21_2026_0728() - Duration::from_millis(250);
    assert_eq!(parse_retry_after(&headers, "s", sub_second), Some(0.25));
}

#[test]
fn d4_g_32_three_http_date_formats() {
    let before = oct_21_2026_0728() - Duration::from_secs(60);
    for value in [
        "Wed, 21 Oct 2026 07:28:00 GMT",
        "Wednesday, 21-Oct-26 07:28:00 GMT",
        "Wed Oct 21 07:28:00 2026",
    ] {
        let hint = parse_retry_after(&h(&[("retry-after", value)]), "s", before);
        assert_eq!(hint, Some(60.0), "value {value:?}");
    }
}

#[test]
fn g_32_weekday_is_not_checked() {
    let before = oct_21_2026_0728() - Duration::from_secs(60);
    for value in [
        "Mon, 21 Oct 2026 07:28:00 GMT",
        "Sunday, 21-Oct-26 07:28:00 GMT",
        "Fri Oct 21 07:28:00 2026",
    ] {
        let hint = parse_retry_after(&h(&[("retry-after", value)]), "s", before);
        assert_eq!(hint, Some(60.0), "value {value:?}");
    }
    // An impossible date stays garbage.
    let bad = h(&[("retry-after", "Wed, 31 Feb 2026 07:28:00 GMT")]);
    assert_eq!(parse_retry_after(&bad, "s", before), None);
}

// ── D4 / R-33: millisecond headers ───────────────────────────────────────────────────────────

#[test]
fn d4_retry_after_ms_is_preferred() {
    let headers = h(&[("retry-after", "33"), ("retry-after-ms", "1500")]);
    assert_eq!(parse_retry_after(&headers, "s", now()), Some(1.5));
}

#[test]
fn r_33_x_ms_retry_after_ms_joins_step_1() {
    let headers = h(&[("retry-after", "33"), ("x-ms-retry-after-ms", "250")]);
    assert_eq!(parse_retry_after(&headers, "s", now()), Some(0.25));
    let both = h(&[("x-ms-retry-after-ms", "250"), ("retry-after-ms", "1000")]);
    assert_eq!(
        parse_retry_after(&both, "s", now()),
        Some(1.0),
        "retry-after-ms is consulted first"
    );
}

#[test]
fn d4_unusable_ms_header_falls_through_silently() {
    for raw in ["0", "-5", "nan", "soon", ""] {
        let headers = h(&[("retry-after-ms", raw), ("retry-after", "3")]);
        let (hint, warnings) = capture(|| parse_retry_after(&headers, "s", now()));
        assert_eq!(hint, Some(3.0), "ms value {raw:?}");
        assert!(warnings.is_empty());
    }
}

#[test]
fn d4_non_finite_ms_header_warns_then_falls_through() {
    let headers = h(&[("retry-after-ms", "inf"), ("retry-after", "3")]);
    let (hint, warnings) = capture(|| parse_retry_after(&headers, "s", now()));
    assert_eq!(hint, Some(3.0));
    assert_eq!(warnings.len(), 1);
}

#[test]
fn g_32_header_names_case_insensitive_first_occurrence_wins() {
    let headers = h(&[("Retry-After", "4"), ("retry-after", "9")]);
    assert_eq!(parse_retry_after(&headers, "s", now()), Some(4.0));
    assert_eq!(parse_retry_after(&[], "s", now()), None);
    let other = h(&[("x-ratelimit-reset-requests", "5")]);
    assert_eq!(parse_retry_after(&other, "s", now()), None);
}

// ── R-35: the hint cap is a decision, not a clamp ────────────────────────────────────────────

#[test]
fn r_35_hint_cap_decision() {
    assert!(!hint_exceeds_cap(86400.0, None), "unset = never capped");
    assert!(hint_exceeds_cap(86400.0, Some(120.0)));
    assert!(!hint_exceeds_cap(120.0, Some(120.0)), "equal is allowed");
    assert!(!hint_exceeds_cap(33.0, Some(120.0)));
    assert!(!hint_exceeds_cap(1e300, Some(f64::INFINITY)));
}

// ── invariants ───────────────────────────────────────────────────────────────────────────────

proptest! {
    /// D4: any header value, any name case, any wall clock → no panic; a hint is finite, > 0.
    #[test]
    fn d4_parse_never_panics_and_hint_is_finite_positive(
        ms in ".{0,40}",
        x_ms in proptest::option::of(".{0,40}"),
        ra in prop_oneof![
            ".{0,60}",
            "[A-Za-z]{3,9}, [0-9]{1,2}[ -][A-Za-z]{3}[ -][0-9]{2,4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT",
            "[-+]?[0-9]{0,400}(\\.[0-9]{0,5})?(e[-+]?[0-9]{1,4})?",
        ],
        wall_s in 0u64..400_000_000_000,
    ) {
        let mut headers = vec![("retry-after-ms".to_owned(), ms), ("RETRY-AFTER".to_owned(), ra)];
        if let Some(v) = x_ms {
            headers.push(("x-ms-retry-after-ms".to_owned(), v));
        }
        let wall = UNIX_EPOCH + Duration::from_secs(wall_s);
        if let Some(hint) = parse_retry_after(&headers, "src", wall) {
            prop_assert!(hint.is_finite() && hint > 0.0);
        }
    }
}

/// README D19: the relay and reset hints keep D4's rule — one warning per call, naming the
/// source, never the raw value.
#[test]
fn d19_non_finite_relay_hint_warns_once_without_the_raw_value() {
    let headers = h(&[
        ("llm_provider-retry-after-ms", "1e999"),
        ("llm_provider-retry-after", "Infinity"),
        ("x-ratelimit-reset-requests", "inf"),
    ]);
    let (hint, warnings) = capture(|| parse_retry_hint(&headers, "", "litellm_1", now()));
    assert_eq!(hint, None);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("litellm_1"), "{warnings:?}");
    assert!(warnings[0].contains(RETRY_AFTER_NOT_FINITE), "{warnings:?}");
    assert!(!warnings[0].contains("1e999"), "{warnings:?}");
}
