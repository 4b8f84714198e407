//! Backoff: README D3; 30 G-35, G-36, G-38..G-40; conformance rows CF-083, CF-094.

use std::cell::Cell;
use std::time::{Duration, UNIX_EPOCH};

use gateway_core::backoff::{
    RetryPolicy, backoff_delay, backoff_delay_s, exponential_s, seconds_to_duration_saturating,
};
use gateway_core::retry_after::parse_retry_after;
use proptest::prelude::*;

/// `RetryPolicy(max_attempts, base, max)` as the conformance rows write it (05 R-21).
fn policy(max_attempts: u32, backoff_base_s: f64, backoff_max_s: f64) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff_base_s,
        backoff_max_s,
        ..RetryPolicy::default()
    }
}

#[expect(clippy::unwrap_used, reason = "test helper on constant inputs")]
fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap()
}

#[test]
fn d3_g_39_default_policy() {
    let p = RetryPolicy::default();
    assert_eq!(p.max_attempts, 3);
    assert_eq!(p.backoff_base_s, 1.0);
    assert_eq!(p.backoff_max_s, 10.0);
    assert_eq!(p.max_hint_s, None, "R-35: unset = no cap");
}

#[test]
fn g_40_cf_094_hint_wins_exactly() {
    let p = policy(3, 0.001, 0.01);
    assert_eq!(backoff_delay_s(&p, 1, Some(2.5), || 0.5), 2.5);
    assert_eq!(backoff_delay(&p, 1, Some(2.5), || 0.5), secs(2.5));
}

#[test]
fn g_40_cf_094_inf_header_is_dropped_so_backoff_is_tiny() {
    let p = policy(3, 0.001, 0.01);
    let headers = vec![("retry-after".to_owned(), "inf".to_owned())];
    let hint = parse_retry_after(&headers, "qwen_1", UNIX_EPOCH);
    assert_eq!(hint, None);
    let delay = backoff_delay_s(&p, 1, hint, || 0.5);
    assert!(delay < 1.0);
    assert_eq!(delay, 0.001);
}

#[test]
fn g_40_cf_083_rng_is_applied_literally() {
    // base 2.0, n = 1, rng → 2.0: 2.0 · (0.5 + 2.0) = 5.0 (a value outside [0, 1) on purpose).
    let p = policy(3, 2.0, 10.0);
    assert_eq!(backoff_delay_s(&p, 1, None, || 2.0), 5.0);
    assert_eq!(backoff_delay(&p, 1, None, || 2.0), secs(5.0));
}

#[test]
fn g_38_exponential_growth_capped_by_max() {
    let p = RetryPolicy::default();
    let got: Vec<f64> = (1..=6)
        .map(|n| backoff_delay_s(&p, n, None, || 0.5))
        .collect();
    assert_eq!(got, vec![1.0, 2.0, 4.0, 8.0, 10.0, 10.0]);
    // Jitter bounds: U(0.5, 1.5) around the capped exponential.
    assert_eq!(backoff_delay_s(&p, 5, None, || 0.0), 5.0);
    assert!(backoff_delay_s(&p, 5, None, || 0.999_999) < 15.0);
}

#[test]
fn g_38_attempt_zero_is_treated_as_one() {
    let p = RetryPolicy::default();
    assert_eq!(exponential_s(&p, 0), 1.0);
    assert_eq!(exponential_s(&p, 1), 1.0);
}

#[test]
fn g_35_d3_hint_never_clamped_by_max() {
    let p = RetryPolicy::default();
    assert_eq!(backoff_delay(&p, 1, Some(3600.0), || 0.5), secs(3600.0));
    assert_eq!(backoff_delay(&p, 1, Some(86400.0), || 0.99), secs(86400.0));
    // The hint is a floor: a larger jittered delay wins.
    assert_eq!(backoff_delay_s(&p, 4, Some(0.5), || 0.5), 8.0);
}

#[test]
fn g_36_huge_values_saturate_without_panic() {
    let p = RetryPolicy::default();
    assert_eq!(backoff_delay(&p, 1000, None, || 0.5), secs(10.0));
    assert_eq!(backoff_delay(&p, u32::MAX, None, || 0.5), secs(10.0));
    assert_eq!(backoff_delay(&p, 1, Some(1e300), || 0.5), Duration::MAX);
    assert_eq!(
        backoff_delay(&p, 1, Some(f64::INFINITY), || 0.5),
        Duration::MAX
    );
    // A huge base with no max cap still never overflows the exponent.
    let wide = policy(3, 1e300, f64::INFINITY);
    assert_eq!(backoff_delay(&wide, 1000, None, || 0.5), Duration::MAX);
}

#[test]
fn g_38_nan_inputs_never_panic() {
    let p = RetryPolicy::default();
    assert_eq!(backoff_delay(&p, 1, Some(f64::NAN), || 0.5), secs(1.0));
    assert_eq!(backoff_delay(&p, 1, None, || f64::NAN), Duration::ZERO);
    assert_eq!(backoff_delay(&p, 1, None, || -5.0), Duration::ZERO);
}

#[test]
fn r_18_seconds_to_duration_saturating() {
    assert_eq!(seconds_to_duration_saturating(f64::NAN), Duration::ZERO);
    assert_eq!(seconds_to_duration_saturating(-1.0), Duration::ZERO);
    assert_eq!(seconds_to_duration_saturating(0.0), Duration::ZERO);
    assert_eq!(
        seconds_to_duration_saturating(1.5),
        Duration::from_millis(1500)
    );
    assert_eq!(seconds_to_duration_saturating(f64::INFINITY), Duration::MAX);
    assert_eq!(seconds_to_duration_saturating(1e20), Duration::MAX);
}

#[test]
fn g_38_rng_called_exactly_once() {
    let calls = Cell::new(0);
    let p = RetryPolicy::default();
    let _ = backoff_delay(&p, 3, Some(100.0), || {
        calls.set(calls.get() + 1);
        0.25
    });
    assert_eq!(calls.get(), 1);
}

proptest! {
    /// D3: with rng in [0, 1) the delay lies in [0.5·m, 1.5·m) where m = min(base·2^(n−1), max);
    /// with a hint it is exactly max(that, hint) (the hint is never clamped).
    #[test]
    fn d3_delay_within_jitter_band_or_at_least_hint(
        base in 0.001f64..100.0,
        max in 0.001f64..1000.0,
        n in 1u32..2000,
        r in 0.0f64..1.0,
        hint in proptest::option::of(0.000_001f64..1e12),
    ) {
        let p = policy(3, base, max);
        let m = (base * 2f64.powi(i32::try_from((n - 1).min(1023)).unwrap())).min(max);
        let s = backoff_delay_s(&p, n, hint, || r);
        let jittered = m * (0.5 + r);
        prop_assert!(jittered >= 0.5 * m && jittered <= 1.5 * m);
        match hint {
            None => prop_assert!(s >= 0.5 * m && s <= 1.5 * m),
            Some(h) => {
                prop_assert!(s >= h);
                prop_assert_eq!(s, jittered.max(h));
            }
        }
        // The Duration never panics and matches the seconds (within conversion rounding).
        let d = backoff_delay(&p, n, hint, || r);
        prop_assert!((d.as_secs_f64() - s).abs() <= s * 1e-9 + 1e-9);
    }

    /// G-36: any f64 (NaN, ±inf, subnormal, huge) converts without panicking.
    #[test]
    fn g_36_any_seconds_convert_without_panic(bits in any::<u64>()) {
        let s = f64::from_bits(bits);
        let d = seconds_to_duration_saturating(s);
        if s.is_nan() || s <= 0.0 {
            prop_assert_eq!(d, Duration::ZERO);
        }
    }
}
