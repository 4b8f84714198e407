//! The `Clock` port (10 §8.8; 05 ): every *reading* of time goes through it (latency,
//! stall metering, windows, leases, TTLs); every *wait* goes through `tokio::time`. The
//! implementations (`TokioClock`, `FakeClock`) live in `gateway-core`, which may use tokio.

use std::time::{Duration, SystemTime};

/// Injected time source (10 §8.8). Object-safe.
pub trait Clock: Send + Sync + 'static {
    /// Monotonic time since an arbitrary fixed origin. Never decreases (CT-CLK-01).
    fn monotonic(&self) -> Duration;
    /// Wall-clock time; only for HTTP-date Retry-After values and logs.
    fn wall(&self) -> SystemTime;
}
