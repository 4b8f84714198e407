//! Selectors (30 §6.2 G-61, G-90; 05 ).

use std::sync::Arc;
use std::time::Duration;

use gateway_core::clock::FakeClock;
use gateway_core::select::{
    HealthAwareSelector, LeastInflightSelector, RoundRobinSelector, Selector, SourceId, SourceLoad,
    StaticSelector, StatsView,
};
use proptest::prelude::*;

fn ids(names: &[&str]) -> Vec<SourceId> {
    names.iter().map(|n| SourceId::from(*n)).collect()
}

fn names(v: &[SourceId]) -> Vec<&str> {
    v.iter().map(SourceId::as_str).collect()
}

fn load(inflight: u32, max_concurrency: u32) -> SourceLoad {
    SourceLoad {
        inflight,
        max_concurrency,
    }
}

/// G-61: `StaticSelector` is the configured order, always.
#[test]
fn g_61_static_keeps_order() {
    let s = StaticSelector;
    let src = ids(&["s1", "s2", "s3"]);
    for _ in 0..3 {
        assert_eq!(names(&s.order(&src, &StatsView::new())), ["s1", "s2", "s3"]);
    }
    assert!(!s.needs_stats());
}

/// G-61: round robin rotates left by `k mod n`, k incremented once per pick.
#[test]
fn g_61_round_robin_rotates() {
    let s = RoundRobinSelector::new();
    let src = ids(&["a", "b", "c"]);
    let v = StatsView::new();
    assert_eq!(names(&s.order(&src, &v)), ["a", "b", "c"]);
    assert_eq!(names(&s.order(&src, &v)), ["b", "c", "a"]);
    assert_eq!(names(&s.order(&src, &v)), ["c", "a", "b"]);
    assert_eq!(names(&s.order(&src, &v)), ["a", "b", "c"]);
    assert!(s.order(&[], &v).is_empty());
}

/// G-61: least in-flight ascending; ties keep the rotated configured order.
#[test]
fn g_61_least_inflight() {
    let s = LeastInflightSelector::new();
    assert!(s.needs_stats());
    let src = ids(&["a", "b", "c"]);
    let v = StatsView::new()
        .with("a", load(3, 0))
        .with("b", load(1, 0))
        .with("c", load(1, 0));
    assert_eq!(names(&s.order(&src, &v)), ["b", "c", "a"]); // k = 0
    assert_eq!(names(&s.order(&src, &v)), ["b", "c", "a"]); // k = 1: b, c, a
    assert_eq!(names(&s.order(&src, &v)), ["c", "b", "a"]); // k = 2: c, a, b
}

/// G-61, G-90: health-aware orders by health bucket, then utilisation, then rotated order; EWMA
/// α = 0.2.
#[test]
fn g_61_health_aware_buckets_then_utilisation() {
    let clock = Arc::new(FakeClock::new());
    let s = HealthAwareSelector::new(clock);
    assert!(s.needs_stats());
    assert_eq!(s.health("a"), Some(1.0));
    s.feed_outcome("a", false);
    assert!((s.health("a").expect("h") - 0.8).abs() < 1e-12);
    s.feed_outcome("a", true);
    assert!((s.health("a").expect("h") - 0.84).abs() < 1e-12);
    let src = ids(&["a", "b", "c"]);
    // a is in bucket 8; b and c in bucket 10; c less utilised than b.
    let v = StatsView::new()
        .with("b", load(2, 4))
        .with("c", load(1, 4))
        .with("a", load(0, 0));
    assert_eq!(names(&s.order(&src, &v)), ["c", "b", "a"]);
    // Equal health and utilisation: the rotated configured order (k = 1).
    let s2 = HealthAwareSelector::new(Arc::new(FakeClock::new()));
    let _ = s2.order(&src, &StatsView::new());
    assert_eq!(names(&s2.order(&src, &StatsView::new())), ["b", "c", "a"]);
}

/// the health deficit halves every 60 s of the injected clock.
#[test]
fn r_36_health_recovers_with_half_life() {
    let clock = Arc::new(FakeClock::new());
    let s = HealthAwareSelector::new(clock.clone());
    for _ in 0..10 {
        s.feed_outcome("flaky", false);
    }
    let h0 = s.health("flaky").expect("h");
    assert!(h0 < 0.11);
    clock.advance(Duration::from_secs(60));
    let h1 = s.health("flaky").expect("h");
    assert!(((1.0 - h1) - (1.0 - h0) / 2.0).abs() < 1e-9, "{h0} → {h1}");
    clock.advance(Duration::from_secs(600));
    assert!(s.health("flaky").expect("h") > 0.99);
    let src = ids(&["flaky", "ok"]);
    assert_eq!(
        names(&s.order(&src, &StatsView::new())),
        ["flaky", "ok"],
        "no longer starved"
    );
    // A new observation starts from the decayed value.
    s.feed_outcome("flaky", false);
    assert!(s.health("flaky").expect("h") > 0.79);
}

/// `SourceId` borrows as `str` and prints as the name.
#[test]
fn source_id_basics() {
    let a = SourceId::new("a");
    assert_eq!(format!("{a} {a:?}"), "a \"a\"");
    assert_eq!(SourceId::from(String::from("a")), a);
    assert_eq!(StatsView::new().get("missing"), SourceLoad::default());
    assert_eq!(load(1, 4).utilisation(), 0.25);
    assert_eq!(load(9, 0).utilisation(), 0.0);
}

proptest! {
    /// G-61: every selector returns a permutation of its input; health stays in [0, 1].
    #[test]
    fn g_61_order_is_permutation(
        n in 0usize..8,
        feeds in proptest::collection::vec((0usize..8, any::<bool>(), 0u64..200), 0..50),
        loads in proptest::collection::vec((0u32..10, 0u32..5), 8),
    ) {
        let clock = Arc::new(FakeClock::new());
        let src: Vec<SourceId> = (0..n).map(|i| SourceId::from(format!("s{i}"))).collect();
        let mut view = StatsView::new();
        for (i, (inf, max)) in loads.iter().enumerate() {
            view.insert(SourceId::from(format!("s{i}")), load(*inf, *max));
        }
        let h = HealthAwareSelector::new(clock.clone());
        for (i, ok, dt) in feeds {
            clock.advance(Duration::from_secs(dt));
            h.feed_outcome(&format!("s{i}"), ok);
            let score = h.health(&format!("s{i}")).unwrap_or(-1.0);
            prop_assert!((0.0..=1.0).contains(&score));
        }
        let selectors: Vec<Box<dyn Selector>> = vec![
            Box::new(StaticSelector),
            Box::new(RoundRobinSelector::new()),
            Box::new(LeastInflightSelector::new()),
            Box::new(h),
        ];
        for s in &selectors {
            for _ in 0..3 {
                let mut got = s.order(&src, &view);
                got.sort();
                let mut want = src.clone();
                want.sort();
                prop_assert_eq!(got, want);
            }
        }
    }
}
