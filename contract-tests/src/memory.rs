//! The memory backend of the contract suites: `MemoryRateLimiter`, `MemoryCircuitBreaker` and
//! `MemoryCache` reading one shared `FakeClock`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gateway_core::cache::MemoryCache;
use gateway_core::clock::FakeClock;
use gateway_core::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use gateway_ports::{
    BreakerConfig, CircuitBreaker, GlobalLimits, RateLimiter, ResponseCache, SourceConfig,
};

use crate::cache::CacheBackend;
use crate::{Backend, TimeControl};

/// `TimeControl` over a [`FakeClock`]: `advance` moves only the readings.
#[derive(Debug, Default)]
pub struct FakeTime {
    clock: Arc<FakeClock>,
}

impl FakeTime {
    /// The clock the ports read.
    pub fn clock(&self) -> Arc<FakeClock> {
        Arc::clone(&self.clock)
    }
}

#[async_trait]
impl TimeControl for FakeTime {
    async fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }
}

/// The in-memory backends on a fresh [`FakeClock`] at monotonic zero.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    time: FakeTime,
}

impl MemoryBackend {
    /// A backend with its own fake clock.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn limiter(
        &self,
        sources: &[SourceConfig],
        global: GlobalLimits,
        lease_ttl_s: f64,
    ) -> Arc<dyn RateLimiter> {
        Arc::new(MemoryRateLimiter::new(
            "ct",
            sources,
            global,
            lease_ttl_s,
            self.time.clock(),
        ))
    }

    async fn unavailable_limiter(&self, sources: &[SourceConfig]) -> Arc<dyn RateLimiter> {
        // The memory backend is never down; a closed one answers `Unavailable` (fail closed).
        let l = MemoryRateLimiter::new(
            "ct",
            sources,
            GlobalLimits::default(),
            100.0,
            self.time.clock(),
        );
        l.close().await;
        Arc::new(l)
    }

    async fn breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker> {
        Arc::new(MemoryCircuitBreaker::new("ct", config, self.time.clock()))
    }

    async fn unavailable_breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker> {
        let b = MemoryCircuitBreaker::new("ct", config, self.time.clock());
        b.close().await;
        Arc::new(b)
    }

    fn time(&self) -> &dyn TimeControl {
        &self.time
    }
}

#[async_trait]
impl CacheBackend for MemoryBackend {
    async fn cache(&self) -> Arc<dyn ResponseCache> {
        Arc::new(MemoryCache::new(10_000, self.time.clock()))
    }

    async fn unavailable_cache(&self) -> Arc<dyn ResponseCache> {
        // The memory cache is never down; a closed one answers `Err` to every operation.
        let c = MemoryCache::new(10, self.time.clock());
        c.close().await;
        Arc::new(c)
    }

    async fn bounded_cache(&self, max_entries: usize) -> Option<Arc<dyn ResponseCache>> {
        Some(Arc::new(MemoryCache::new(max_entries, self.time.clock())))
    }

    fn time(&self) -> &dyn TimeControl {
        &self.time
    }
}
