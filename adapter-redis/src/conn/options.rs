//! The connection's knobs and its one construction error: [`RedisOptions`] with its defaults,
//! and [`RedisConfigError`].
//!
//! Separate so the options read on their own, apart from the connection's machinery.

use std::fmt;
use std::time::Duration;

/// Default bound of one Redis round trip (500 ms): a slower answer is treated as an outage.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_millis(500);

/// Default time a process trusts its local copy of a source's closed breaker (250 ms).
pub const DEFAULT_BREAKER_MIRROR: Duration = Duration::from_millis(250);

/// Default bound after which a buffered success sample or progress mark is in Redis (100 ms).
pub const DEFAULT_WRITE_BEHIND: Duration = Duration::from_millis(100);

/// Tuning of a [`RedisConnection`](super::RedisConnection).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedisOptions {
    /// Bound of every round trip (default [`DEFAULT_OP_TIMEOUT`]). An operation that does not
    /// answer in time fails with `Unavailable` and is never sent later.
    pub op_timeout: Duration,
    /// Delay between reconnect attempts after the connection dropped (default 100 ms; retried
    /// forever).
    pub reconnect_delay: Duration,
    /// Bound of one TCP connect (and TLS handshake) attempt (default 2 s).
    pub connect_timeout: Duration,
    /// How long a breaker trusts the closed state it last read from Redis for a source (default
    /// [`DEFAULT_BREAKER_MIRROR`]): within it, `try_enter` on a closed source answers without a
    /// round trip, so an open made by another process is seen at the latest this long after
    /// it happened. This process's own failures and any reply showing a state change drop the
    /// copy at once. `Duration::ZERO`: every `try_enter` asks Redis.
    pub breaker_mirror: Duration,
    /// Bound for buffered writes (default [`DEFAULT_WRITE_BEHIND`]): a breaker success outside
    /// a probe and a progress mark made while a permit is in flight are not sent on their own;
    /// the next script of the scope on this connection carries them (normally the next
    /// call's admission), and a background flush sends what is left after this long. While it
    /// is non-zero a finished call's settle/release is buffered too
    /// (`RedisPermit::settle_and_release_now`) and sent within 2 ms (or this bound if shorter)
    /// when no script carries it sooner.
    /// `Duration::ZERO`: every success and mark is written at once (one round trip each) and
    /// the caller waits for every settle/release.
    pub write_behind: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            op_timeout: DEFAULT_OP_TIMEOUT,
            reconnect_delay: Duration::from_millis(100),
            connect_timeout: Duration::from_secs(2),
            breaker_mirror: DEFAULT_BREAKER_MIRROR,
            write_behind: DEFAULT_WRITE_BEHIND,
        }
    }
}

/// The Redis URL could not be turned into a client configuration. The message names the
/// setting (`REDIS_URL`) and never contains the URL or its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfigError {
    /// Secret-free reason.
    pub detail: String,
}

impl fmt::Display for RedisConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "REDIS_URL is not a usable Redis URL: {}", self.detail)
    }
}

impl std::error::Error for RedisConfigError {}
