//! Clocks (10 §8.8; CT-CLK-01, CT-CLK-02; 05 R-18).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use gateway_core::clock::{FakeClock, TokioClock};
use gateway_ports::Clock;

/// 10 §8.8: `TokioClock` reads the tokio clock, so a paused runtime advances it with timers.
#[tokio::test(start_paused = true)]
async fn tokio_clock_follows_paused_runtime() {
    let c = TokioClock::new();
    let t0 = c.monotonic();
    tokio::time::sleep(Duration::from_secs(90)).await;
    assert_eq!(c.monotonic() - t0, Duration::from_secs(90));
    tokio::time::advance(Duration::from_millis(250)).await;
    assert_eq!(c.monotonic() - t0, Duration::from_millis(90_250));
    assert!(c.wall() > SystemTime::UNIX_EPOCH);
}

/// CT-CLK-01: never decreases across threads.
#[test]
fn ct_clk_01_tokio_clock_monotonic_across_threads() {
    let c = Arc::new(TokioClock::default());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut last = c.monotonic();
                for _ in 0..10_000 {
                    let now = c.monotonic();
                    assert!(now >= last);
                    last = now;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
}

/// CT-CLK-02: `advance(d)` moves monotonic and wall by exactly `d` and fires no tokio timer.
#[tokio::test(start_paused = true)]
async fn ct_clk_02_fake_advance_exact_no_timer() {
    let c = FakeClock::new();
    let (m0, w0) = (c.monotonic(), c.wall());
    assert_eq!(m0, Duration::ZERO);
    let rt_before = tokio::time::Instant::now();
    c.advance(Duration::from_millis(1234));
    assert_eq!(c.monotonic(), Duration::from_millis(1234));
    assert_eq!(
        c.wall().duration_since(w0).expect("forward"),
        Duration::from_millis(1234)
    );
    assert_eq!(
        tokio::time::Instant::now(),
        rt_before,
        "runtime clock untouched"
    );
    // Readings only: a set to an earlier time is ignored (never decreases).
    c.set_monotonic(Duration::from_secs(1));
    assert_eq!(c.monotonic(), Duration::from_millis(1234));
    c.set_monotonic(Duration::from_secs(5));
    assert_eq!(c.monotonic(), Duration::from_secs(5));
}

/// `FakeClock::starting_at` sets both readings; huge advances saturate instead of panicking.
#[test]
fn fake_clock_origin_and_saturation() {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let c = FakeClock::starting_at(Duration::from_secs(10), wall);
    assert_eq!(c.monotonic(), Duration::from_secs(10));
    assert_eq!(c.wall(), wall);
    c.advance(Duration::MAX);
    assert_eq!(c.monotonic(), Duration::MAX);
    let _ = c.wall();
}
