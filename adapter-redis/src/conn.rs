//! The shared Redis connection: a `fred` client opened lazily, every round trip bounded by the
//! operation timeout, every error mapped to `BackendError` `Unavailable` (fail closed).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fred::prelude::{
    ClientLike, Config, Error as FredError, KeysInterface, LuaInterface, ReconnectPolicy,
};
use fred::types::scripts::Script;
use gateway_ports::BackendError;

/// Default bound of one Redis round trip (500 ms): a slower answer is treated as an outage.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_millis(500);

/// Tuning of a [`RedisConnection`].
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
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            op_timeout: DEFAULT_OP_TIMEOUT,
            reconnect_delay: Duration::from_millis(100),
            connect_timeout: Duration::from_secs(2),
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

struct Inner {
    client: fred::clients::Client,
    opts: RedisOptions,
    started: AtomicBool,
}

/// One Redis client shared by the limiter, breaker and cache of an assembly (cheap to clone).
/// Built without I/O; the connection opens at the first operation and reconnects on its own.
/// `Debug` never prints the URL.
#[derive(Clone)]
pub struct RedisConnection {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConnection")
            .field("op_timeout", &self.inner.opts.op_timeout)
            .field("connected", &self.inner.client.is_connected())
            .finish_non_exhaustive()
    }
}

fn backend_error(e: &FredError) -> BackendError {
    BackendError::unavailable(format!("redis {:?}: {}", e.kind(), e.details()))
}

fn millis_u32(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

impl RedisConnection {
    /// A client for `url` (`redis://[user:password@]host[:port][/db]`, `rediss://…` for TLS
    /// with rustls and the system roots; `redis-cluster://host:port?node=host:port` for Cluster).
    /// Does no I/O. Errors: the URL cannot be parsed (the error never repeats the URL).
    pub fn new(url: &str, opts: RedisOptions) -> Result<Self, RedisConfigError> {
        let mut config = Config::from_url(url).map_err(|e| RedisConfigError {
            detail: format!("{:?}", e.kind()),
        })?;
        // Initial connection failures follow the reconnect policy too (lazy, F8).
        config.fail_fast = false;
        let mut builder = fred::types::Builder::from_config(config);
        builder
            .with_performance_config(|p| {
                p.default_command_timeout = opts.op_timeout;
            })
            .with_connection_config(|c| {
                c.connection_timeout = opts.connect_timeout;
                c.internal_command_timeout = opts.connect_timeout;
                // A script is not idempotent: never re-send one after the connection dropped.
                c.max_command_attempts = 1;
            })
            .set_policy(ReconnectPolicy::new_constant(
                0,
                millis_u32(opts.reconnect_delay).max(1),
            ));
        let client = builder.build().map_err(|e| RedisConfigError {
            detail: format!("{:?}", e.kind()),
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                client,
                opts,
                started: AtomicBool::new(false),
            }),
        })
    }

    /// The options this connection was built with.
    pub fn options(&self) -> RedisOptions {
        self.inner.opts
    }

    fn ensure_started(&self) {
        if !self.inner.started.swap(true, Ordering::AcqRel) {
            // The connection task runs (and reconnects) until `quit`.
            drop(self.inner.client.connect());
        }
    }

    /// Runs `fut` bounded by the operation timeout (plus a small margin over the client's own
    /// per-command timeout, which is the one that keeps a late command from being sent).
    async fn bounded<T>(
        &self,
        fut: impl Future<Output = Result<T, FredError>>,
    ) -> Result<T, BackendError> {
        self.ensure_started();
        let limit = self
            .inner
            .opts
            .op_timeout
            .saturating_add(Duration::from_millis(100));
        match tokio::time::timeout(limit, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(backend_error(&e)),
            Err(_) => Err(BackendError::unavailable(format!(
                "redis did not answer within {} ms",
                limit.as_millis()
            ))),
        }
    }

    /// One `EVALSHA` of `script` (loaded on `NOSCRIPT` and retried once). The reply is a flat
    /// array of strings.
    pub(crate) async fn eval(
        &self,
        script: &Script,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> Result<Vec<String>, BackendError> {
        let client = &self.inner.client;
        self.bounded(async {
            match client
                .evalsha::<Vec<String>, _, _, _>(script.sha1().clone(), keys.clone(), args.clone())
                .await
            {
                Err(e) if e.details().starts_with("NOSCRIPT") => {
                    script.load(client).await?;
                    client.evalsha(script.sha1().clone(), keys, args).await
                }
                r => r,
            }
        })
        .await
    }

    /// `GET key`.
    pub(crate) async fn get(&self, key: &str) -> Result<Option<String>, BackendError> {
        let client = &self.inner.client;
        self.bounded(client.get::<Option<String>, _>(key)).await
    }

    /// `SET key value PX ttl_ms`.
    pub(crate) async fn set_px(
        &self,
        key: &str,
        value: String,
        ttl_ms: i64,
    ) -> Result<(), BackendError> {
        let client = &self.inner.client;
        self.bounded(client.set::<(), _, _>(
            key,
            value,
            Some(fred::types::Expiration::PX(ttl_ms)),
            None,
            false,
        ))
        .await
    }

    /// Moves the time every script of `scope` reads by `d` (test builds only, 05 R-31).
    #[cfg(feature = "test-time")]
    pub async fn advance_time(&self, scope: &str, d: Duration) -> Result<(), BackendError> {
        let key = crate::keys::time_offset_key(&crate::keys::scope_tag(scope));
        let us = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let client = &self.inner.client;
        self.bounded(client.incr_by::<i64, _>(key, us)).await?;
        Ok(())
    }

    /// Closes the connection (pending commands fail); idempotent.
    pub async fn quit(&self) {
        if self.inner.started.load(Ordering::Acquire) {
            let _ = self.inner.client.quit().await;
        }
    }
}
