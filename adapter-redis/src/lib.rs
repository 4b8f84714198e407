//! `adapter-redis`: the governance ports shared by every process of a deployment through Redis
//! (10 §8.4–§8.6; 30 §6.4, §6.6 G-74; README D2).
//!
//! - [`RedisRateLimiter`] + [`RedisPermit`]: the six gates, sliding 60 s RPM/TPM windows of
//!   per-permit entries, reserve-then-settle, concurrency slots held by leases.
//! - [`RedisCircuitBreaker`]: both channels, doubling cooldown, one half-open probe under a
//!   lease, epoch fencing.
//! - [`RedisCache`]: the response cache port over `SET … PX` / `GET`.
//!
//! Every limiter or breaker operation is at most **one** `EVALSHA` of an atomic Lua script
//! (scripts are loaded once and reloaded on `NOSCRIPT`); the script reads the time from Redis
//! `TIME`, so every process shares one clock. A governed success costs **one** script: `try_enter`
//! on a closed source is answered by the breaker mirror ([`RedisOptions::breaker_mirror`]);
//! `record_success`, `mark_progress` and the permit's exit (`settle_and_release_now`: settle and
//! release) are buffered on the connection and carried by the next limiter script of the scope
//! — normally the next call's admission — or sent within 2 ms (exits) and
//! [`RedisOptions::write_behind`] (successes, marks). All keys of a scope carry the hash tag
//! `{pgw:<scope>}` so every
//! script touches one slot and works unchanged on Redis Cluster. Any Redis error or timeout is a
//! `BackendError` of kind `Unavailable` (the core fails closed); the connection reconnects on its
//! own. The connection is opened lazily at the first operation: an unreachable Redis is not a
//! construction error.
//!
//! With the cargo feature `test-time` (test builds only) every script adds a per-scope offset
//! (microseconds, key `{pgw:<scope>}:test_time_offset_us`) to `TIME`, or reads the scope's
//! frozen clock from that key after `RedisConnection::freeze_time`; `RedisConnection::advance_time`
//! moves either, so the contract suites never sleep; `RedisCache::advance_ttls` likewise
//! shortens the remaining `PX` lifetime of a cache's entries for the cache contract suite.

mod breaker;
mod cache;
mod conn;
mod keys;
mod limiter;
mod scripts;

pub use breaker::RedisCircuitBreaker;
pub use cache::RedisCache;
pub use conn::{
    DEFAULT_BREAKER_MIRROR, DEFAULT_OP_TIMEOUT, DEFAULT_WRITE_BEHIND, RedisConfigError,
    RedisConnection, RedisOptions,
};
pub use keys::scope_tag;
pub use limiter::{RedisPermit, RedisRateLimiter};
