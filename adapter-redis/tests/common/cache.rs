//! The Redis half of the response-cache contract suite (05 R-31; 10 §8.6 CT-CACHE-01..07):
//! every `cache()` is a `RedisCache` on a fresh scope (its own key prefix) of the real Redis on
//! 127.0.0.1:6379; `TimeControl::advance` shortens the remaining `PX` lifetime of every entry
//! of those caches by the same amount (`RedisCache::advance_ttls`, test builds only), so the
//! server's own expiry makes a TTL elapse — no test sleeps.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use adapter_redis::{RedisCache, RedisConnection, RedisOptions};
use async_trait::async_trait;
use contract_tests::TimeControl;
use contract_tests::cache::CacheBackend;
use gateway_ports::ResponseCache;

use super::{connection, fresh_scope, require_redis};

/// Moves the TTLs of every cache registered with it.
#[derive(Debug, Default)]
pub struct RedisCacheTime {
    caches: Mutex<Vec<RedisCache>>,
}

#[async_trait]
impl TimeControl for RedisCacheTime {
    async fn advance(&self, d: Duration) {
        let caches = self.caches.lock().unwrap().clone();
        for c in caches {
            c.advance_ttls(d).await.expect("advance cache TTLs");
        }
    }
}

/// The Redis backend of `contract_tests::cache_contract!`.
#[derive(Debug)]
pub struct RedisCacheBackend {
    conn: RedisConnection,
    time: RedisCacheTime,
}

impl RedisCacheBackend {
    /// A backend over the shared test Redis; fails loudly if Redis is down.
    pub async fn new() -> Self {
        let conn = connection();
        require_redis(&conn).await;
        Self {
            conn,
            time: RedisCacheTime::default(),
        }
    }
}

#[async_trait]
impl CacheBackend for RedisCacheBackend {
    async fn cache(&self) -> Arc<dyn ResponseCache> {
        let c = RedisCache::new(&fresh_scope("ctc"), self.conn.clone());
        self.time.caches.lock().unwrap().push(c.clone());
        Arc::new(c)
    }

    async fn unavailable_cache(&self) -> Arc<dyn ResponseCache> {
        let dead = RedisConnection::new(
            "redis://:hunter2@127.0.0.1:1",
            RedisOptions {
                op_timeout: Duration::from_millis(200),
                ..RedisOptions::default()
            },
        )
        .expect("url");
        Arc::new(RedisCache::new(&fresh_scope("ctc-down"), dead))
    }

    /// Redis bounds by `maxmemory`, not by entry count: CT-CACHE-06 is a memory-only row.
    async fn bounded_cache(&self, _max_entries: usize) -> Option<Arc<dyn ResponseCache>> {
        None
    }

    fn time(&self) -> &dyn TimeControl {
        &self.time
    }
}
