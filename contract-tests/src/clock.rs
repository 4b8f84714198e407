//! Clock contract rows CT-CLK-01..02, generic over any `Clock`.

use std::sync::Arc;
use std::time::Duration;

use gateway_core::clock::FakeClock;
use gateway_ports::Clock;

/// CT-CLK-01: `monotonic()` never decreases across calls and threads.
pub async fn ct_clk_01_monotonic_never_decreases(clock: Arc<dyn Clock>) {
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let clock = Arc::clone(&clock);
        tasks.push(tokio::spawn(async move {
            let mut last = clock.monotonic();
            for _ in 0..1000 {
                let now = clock.monotonic();
                assert!(now >= last, "{now:?} < {last:?}");
                last = now;
                tokio::task::yield_now().await;
            }
            last
        }));
    }
    let before = clock.monotonic();
    for t in tasks {
        let _ = t.await.expect("task");
    }
    assert!(clock.monotonic() >= before);
}

/// CT-CLK-02: `FakeClock::advance(d)` increases `monotonic()` by exactly `d` (and `wall()` by the
/// same) and fires no `tokio::time` timer. Run it on a paused runtime.
pub async fn ct_clk_02_fake_advance_exact(clock: Arc<FakeClock>) {
    let (m0, w0) = (clock.monotonic(), clock.wall());
    let d = Duration::from_millis(1500);
    let sleep = tokio::time::sleep(Duration::from_secs(1));
    tokio::pin!(sleep);
    clock.advance(d);
    assert_eq!(clock.monotonic() - m0, d);
    assert_eq!(
        clock.wall().duration_since(w0).expect("wall moved forward"),
        d
    );
    // The timer did not fire: polling it once is still pending.
    assert!(
        futures_poll_once(sleep.as_mut()).await.is_none(),
        "FakeClock::advance fired a tokio timer"
    );
}

async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        out = f => Some(out),
        () = std::future::ready(()) => None,
    }
}
