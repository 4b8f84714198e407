//! The contract suites against the in-memory backends on a `FakeClock` (05 R-31; 10 §8.4, §8.5,
//! §8.8; CF-429 memory half).

use std::sync::Arc;

use contract_tests::MemoryBackend;
use gateway_core::clock::{FakeClock, TokioClock};

contract_tests::limiter_contract!(MemoryBackend::new());
contract_tests::breaker_contract!(MemoryBackend::new());
contract_tests::cache_contract!(MemoryBackend::new());

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ct_clk_01_tokio_clock_never_decreases() {
    contract_tests::clock::ct_clk_01_monotonic_never_decreases(Arc::new(TokioClock::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ct_clk_01_fake_clock_never_decreases() {
    contract_tests::clock::ct_clk_01_monotonic_never_decreases(Arc::new(FakeClock::new())).await;
}

#[tokio::test(start_paused = true)]
async fn ct_clk_02_fake_advance_exact() {
    contract_tests::clock::ct_clk_02_fake_advance_exact(Arc::new(FakeClock::new())).await;
}
