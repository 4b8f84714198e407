//! `gather_bounded` (10 §10): results in input order, bounded concurrency, first error returned,
//! the rest dropped, unstarted futures never start. Paused clock (05 R-30 tier 1).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use polygateway::gather_bounded;

fn n(k: usize) -> NonZeroUsize {
    NonZeroUsize::new(k).unwrap()
}

#[tokio::test(start_paused = true)]
async fn gather_bounded_keeps_input_order_and_bounds_concurrency() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let futures = (0..6_u64).map(|i| {
        let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            // Later inputs finish first.
            tokio::time::sleep(Duration::from_millis(100 * (6 - i))).await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok::<u64, String>(i * 10)
        }
    });
    let out = gather_bounded(n(2), futures).await.unwrap();
    assert_eq!(out, [0, 10, 20, 30, 40, 50]);
    assert_eq!(peak.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn gather_bounded_first_error_drops_the_rest_and_never_starts_unstarted() {
    let started = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let futures = (0..10_u64).map(|i| {
        let (started, finished) = (Arc::clone(&started), Arc::clone(&finished));
        async move {
            started.fetch_add(1, Ordering::SeqCst);
            if i == 1 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                return Err(format!("failed {i}"));
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok(i)
        }
    });
    let error = gather_bounded(n(3), futures).await.unwrap_err();
    assert_eq!(error, "failed 1");
    // Slots 0..3 started, then slot 3 replaced the failure; nothing else started or finished.
    assert!(started.load(Ordering::SeqCst) <= 4);
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn gather_bounded_empty_input() {
    let out: Vec<u8> = gather_bounded(n(1), Vec::<std::future::Ready<Result<u8, ()>>>::new())
        .await
        .unwrap();
    assert!(out.is_empty());
}
