//! `RedisCache`: the response cache port over Redis: `SET key value PX ttl`
//! and `GET key`, the key used verbatim under the scope's hash-tagged prefix. Every error is a
//! `CacheError`; the core degrades it to a warning and a miss (the cache never fails a call).

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{CacheError, ResponseCache};

use crate::conn::RedisConnection;
use crate::keys::scope_tag;

/// The response cache shared through Redis. Keys are stored as `{pgw:<scope>}:cache:<key>`.
/// Does not own the connection: `close` is a no-op (the assembly closes the connection).
#[derive(Clone)]
pub struct RedisCache {
    prefix: String,
    conn: RedisConnection,
    /// Whether `close()` ends the connection (a cache the facade built from `REDIS_URL`).
    owns_conn: bool,
}

impl fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCache")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisCache {
    /// A cache for `scope` over `conn`. No I/O.
    pub fn new(scope: &str, conn: RedisConnection) -> Self {
        Self {
            prefix: format!("{}:cache:", scope_tag(scope)),
            conn,
            owns_conn: false,
        }
    }

    /// Makes [`close`](ResponseCache::close) end the connection too: for a cache that owns its
    /// connection (built from `REDIS_URL`), not one sharing a connection with other ports.
    #[must_use]
    pub fn owning_connection(mut self) -> Self {
        self.owns_conn = true;
        self
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Test builds only (cargo feature `test-time`): shortens the remaining lifetime of every
    /// entry of this cache by `d`, deleting those whose lifetime is used up, so a test can make
    /// a `PX` TTL elapse without sleeping (the real server-side expiry still decides; nothing
    /// in the `get` / `set` path changes). Scans this cache's prefix only. Returns the number
    /// of entries touched.
    ///
    /// Errors: any Redis error, as `CacheError`.
    #[cfg(feature = "test-time")]
    pub async fn advance_ttls(&self, d: Duration) -> Result<u64, CacheError> {
        let shift_ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let reply = self
            .conn
            .eval(
                &ADVANCE_TTLS,
                Vec::new(),
                vec![
                    format!("{}*", glob_escape(&self.prefix)).into(),
                    shift_ms.to_string().into(),
                ],
            )
            .await
            .map_err(|e| CacheError::new(e.detail))?;
        Ok(reply.first().and_then(|n| n.parse().ok()).unwrap_or(0))
    }
}

/// Test builds only: `ARGV[1]` = a `SCAN MATCH` pattern, `ARGV[2]` = milliseconds to take off
/// every matching key's remaining `PTTL` (a key whose remaining lifetime is not longer is
/// deleted). Keys without a TTL are left alone.
#[cfg(feature = "test-time")]
static ADVANCE_TTLS: std::sync::LazyLock<fred::types::scripts::Script> =
    std::sync::LazyLock::new(|| {
        fred::types::scripts::Script::from_lua(
            r"
local pattern, shift = ARGV[1], tonumber(ARGV[2])
local cursor, n = '0', 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local ttl = redis.call('PTTL', k)
    if ttl > 0 then
      if ttl <= shift then redis.call('DEL', k) else redis.call('PEXPIRE', k, ttl - shift) end
      n = n + 1
    end
  end
until cursor == '0'
return {tostring(n)}
",
        )
    });

/// Escapes the `SCAN MATCH` glob characters of `s`.
#[cfg(feature = "test-time")]
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[async_trait]
impl ResponseCache for RedisCache {
    async fn get(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.conn
            .get(&self.key(key))
            .await
            .map_err(|e| CacheError::new(e.detail))
    }

    async fn set(&self, key: &str, value: String, ttl: Duration) -> Result<(), CacheError> {
        // PX needs at least 1 ms; a zero TTL stores nothing (the entry would be expired).
        let ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        if ms == 0 {
            return Ok(());
        }
        self.conn
            .set_px(&self.key(key), value, ms)
            .await
            .map_err(|e| CacheError::new(e.detail))
    }

    async fn close(&self) {
        if self.owns_conn {
            self.conn.quit().await;
        }
    }
}
