//! In-memory governance backends (the embedded default): the rate limiter and the
//! circuit breaker, process-local, reading time through the injected `Clock`.
//!
//! Both keep their state under a `std::sync::Mutex` held only for a few operations and never
//! across an await, so the 05 R-9 synchronous fast paths (`settle_and_release_now`,
//! `release_probe_now`) return `true`. Their limits are per process; multi-process deployments
//! use the Redis backends.

pub mod breaker;
pub mod limiter;

pub use breaker::MemoryCircuitBreaker;
pub use limiter::{MemoryPermit, MemoryRateLimiter};
