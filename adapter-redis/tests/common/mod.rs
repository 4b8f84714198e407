//! Shared test harness: a `contract_tests::Backend` over the real Redis on 127.0.0.1:6379 (never
//! a mock). Every port gets a fresh scope; `TimeControl::advance` moves the test-time offset key
//! of every scope this backend built (05 R-31). An unreachable Redis fails loudly.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

pub mod cache;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapter_redis::{RedisCircuitBreaker, RedisConnection, RedisOptions, RedisRateLimiter};
use async_trait::async_trait;
use contract_tests::{Backend, TimeControl};
use gateway_ports::{BreakerConfig, CircuitBreaker, GlobalLimits, RateLimiter, SourceConfig};

/// The Redis every test uses (started by the environment / `.ci/run`).
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A scope name no other test (or earlier run) uses.
pub fn fresh_scope(label: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "test-{label}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A connection to the shared test Redis.
pub fn connection() -> RedisConnection {
    RedisConnection::new(REDIS_URL, RedisOptions::default()).expect("redis url")
}

/// Options with no breaker mirror and no write-behind: every operation is its own round trip.
pub fn immediate_options() -> RedisOptions {
    RedisOptions {
        breaker_mirror: Duration::ZERO,
        write_behind: Duration::ZERO,
        ..RedisOptions::default()
    }
}

/// A connection to the shared test Redis with `opts`.
pub fn connection_with(opts: RedisOptions) -> RedisConnection {
    RedisConnection::new(REDIS_URL, opts).expect("redis url")
}

/// Panics (never skips) if the test Redis does not answer.
pub async fn require_redis(conn: &RedisConnection) {
    let l = RedisRateLimiter::new(
        &fresh_scope("ping"),
        &[],
        GlobalLimits::default(),
        1.0,
        conn.clone(),
    );
    l.progress_age_s()
        .await
        .expect("Redis on 127.0.0.1:6379 must be running for these tests");
}

/// Moves the test-time offset of every scope registered with it.
#[derive(Debug)]
pub struct RedisTime {
    conn: RedisConnection,
    scopes: Mutex<Vec<String>>,
}

impl RedisTime {
    /// Registers `scope` so `advance` moves it too.
    pub fn register(&self, scope: &str) {
        self.scopes.lock().unwrap().push(scope.to_owned());
    }
}

#[async_trait]
impl TimeControl for RedisTime {
    async fn advance(&self, d: Duration) {
        let scopes = self.scopes.lock().unwrap().clone();
        for s in scopes {
            self.conn.advance_time(&s, d).await.expect("advance time");
        }
    }
}

/// The Redis backends of the contract suites (one connection for every port they build).
#[derive(Debug)]
pub struct RedisBackend {
    pub conn: RedisConnection,
    pub time: RedisTime,
    label: String,
}

impl RedisBackend {
    /// A backend over the shared test Redis with the default options (breaker mirror and
    /// write-behind on); fails loudly if Redis is down.
    pub async fn new() -> Self {
        Self::with_options(RedisOptions::default()).await
    }

    /// A backend whose every operation is its own round trip ([`immediate_options`]).
    pub async fn immediate() -> Self {
        Self::with_options(immediate_options()).await
    }

    /// A backend over the shared test Redis with `opts`; fails loudly if Redis is down.
    pub async fn with_options(opts: RedisOptions) -> Self {
        let conn = connection_with(opts);
        require_redis(&conn).await;
        Self {
            time: RedisTime {
                conn: conn.clone(),
                scopes: Mutex::new(Vec::new()),
            },
            conn,
            label: "ct".to_owned(),
        }
    }

    /// A fresh scope registered with this backend's time, its Redis clock frozen: as on the
    /// memory backends' manual clock, only `advance` moves it (a window edge asserted to the
    /// second is not crossed by the real time the test's own round trips take).
    pub async fn scope(&self) -> String {
        let s = fresh_scope(&self.label);
        self.time.register(&s);
        self.conn
            .freeze_time(&s)
            .await
            .expect("freeze the scope's clock");
        s
    }

    /// A connection to a port where nothing listens (CT-LIM-09, CT-BRK-10).
    fn dead_connection() -> RedisConnection {
        RedisConnection::new(
            "redis://127.0.0.1:1",
            RedisOptions {
                op_timeout: Duration::from_millis(200),
                ..RedisOptions::default()
            },
        )
        .expect("url")
    }
}

#[async_trait]
impl Backend for RedisBackend {
    async fn limiter(
        &self,
        sources: &[SourceConfig],
        global: GlobalLimits,
        lease_ttl_s: f64,
    ) -> Arc<dyn RateLimiter> {
        Arc::new(RedisRateLimiter::new(
            &self.scope().await,
            sources,
            global,
            lease_ttl_s,
            self.conn.clone(),
        ))
    }

    async fn unavailable_limiter(&self, sources: &[SourceConfig]) -> Arc<dyn RateLimiter> {
        Arc::new(RedisRateLimiter::new(
            &self.scope().await,
            sources,
            GlobalLimits::default(),
            100.0,
            Self::dead_connection(),
        ))
    }

    async fn breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker> {
        Arc::new(RedisCircuitBreaker::new(
            &self.scope().await,
            config,
            self.conn.clone(),
        ))
    }

    async fn unavailable_breaker(&self, config: BreakerConfig) -> Arc<dyn CircuitBreaker> {
        Arc::new(RedisCircuitBreaker::new(
            &self.scope().await,
            config,
            Self::dead_connection(),
        ))
    }

    fn time(&self) -> &dyn TimeControl {
        &self.time
    }
}
