//! The shared Redis connection: a `fred` client opened lazily, every round trip bounded by the
//! operation timeout, every error mapped to `BackendError` `Unavailable` (fail closed).
//!
//! The connection also holds the process-local state the limiter and breaker built on it share
//! (docs/decisions.md "Redis round trips per call"): the write-behind buffer (breaker success
//! samples, progress marks) that the next script of the scope carries, the mirror of each
//! source's closed breaker, and the flusher task that writes a buffered item within the
//! write-behind bound when no script carries it.

use std::collections::HashMap;
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fred::prelude::{
    ClientLike, Config, Error as FredError, KeysInterface, LuaInterface, ReconnectPolicy,
};
use fred::types::config::TcpConfig;
use fred::types::scripts::Script;
use fred::types::{Key, Value};
use gateway_ports::{BackendError, Clock};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::keys::{breaker_keys, limiter_keys};
use crate::scripts::{BREAKER, LIMITER};

mod local;
mod options;

use local::{Carry, ScopeLocal, encode};
pub use options::{
    DEFAULT_BREAKER_MIRROR, DEFAULT_OP_TIMEOUT, DEFAULT_WRITE_BEHIND, RedisConfigError,
    RedisOptions,
};

/// Reads the clock of the tokio runtime (the default local clock).
struct TokioMonotonic {
    origin: tokio::time::Instant,
}

impl Clock for TokioMonotonic {
    fn monotonic(&self) -> Duration {
        self.origin.elapsed()
    }
    fn wall(&self) -> std::time::SystemTime {
        std::time::SystemTime::now()
    }
}

struct Inner {
    client: fred::clients::Client,
    opts: RedisOptions,
    started: AtomicBool,
    /// `quit` ran (later calls do nothing).
    quit: AtomicBool,
    clock: Arc<dyn Clock>,
    local: Mutex<HashMap<String, ScopeLocal>>,
    seq: AtomicU64,
    notify: Arc<Notify>,
    flusher: Mutex<Option<AbortHandle>>,
    flush_lock: tokio::sync::Mutex<()>,
    /// Wakes the exit flusher (a call's exit was buffered).
    exit_notify: Arc<Notify>,
    exit_flusher: Mutex<Option<AbortHandle>>,
    /// Scripts carrying exits whose reply has not been seen yet (`flush` waits for them).
    carriers: AtomicUsize,
    /// Woken when `carriers` drops to 0.
    carriers_idle: Notify,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for f in [&mut self.flusher, &mut self.exit_flusher] {
            if let Some(h) = f.get_mut().ok().and_then(Option::take) {
                h.abort();
            }
        }
    }
}

/// A script on its way: queued on the connection, its reply still to come.
pub(crate) type SentScript =
    Pin<Box<dyn Future<Output = Result<Vec<String>, BackendError>> + Send>>;

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
                // Every script is one small write answered by one small reply: never let
                // Nagle's algorithm hold a write back.
                c.tcp = TcpConfig {
                    nodelay: Some(true),
                    ..TcpConfig::default()
                };
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
                quit: AtomicBool::new(false),
                clock: Arc::new(TokioMonotonic {
                    origin: tokio::time::Instant::now(),
                }),
                local: Mutex::new(HashMap::new()),
                seq: AtomicU64::new(1),
                notify: Arc::new(Notify::new()),
                flusher: Mutex::new(None),
                flush_lock: tokio::sync::Mutex::new(()),
                exit_notify: Arc::new(Notify::new()),
                exit_flusher: Mutex::new(None),
                carriers: AtomicUsize::new(0),
                carriers_idle: Notify::new(),
            }),
        })
    }

    /// Makes the breaker mirror and the write-behind ages read `clock` (default: the tokio
    /// runtime's monotonic time). Call it right after `new`, before cloning; later it does
    /// nothing.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.clock = clock;
        }
        self
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
    /// array of strings. Keys and arguments are `fred` values so a caller can build them once
    /// and clone them per call (a clone shares the bytes).
    pub(crate) async fn eval(
        &self,
        script: &Script,
        keys: Vec<Key>,
        args: Vec<Value>,
    ) -> Result<Vec<String>, BackendError> {
        let r = self.eval_quiet(script, keys, args).await;
        if r.is_err() {
            // Redis may be down: no mirror answers for it any more.
            self.drop_all_mirrors();
        }
        r
    }

    /// One script of scope `tag` that carries what the buffer holds for it: a limiter script
    /// (`limiter`) the scope's buffered exits and mark, and any script for `source` that
    /// source's breaker samples. `build` turns the carry into the keys and arguments. The carry
    /// is taken and the script queued on the connection under one lock of the local state, so
    /// a script queued later never runs in Redis before the one carrying what was buffered
    /// before it: every later operation of this connection sees every exit buffered before
    /// it, and a breaker failure keeps its order with the successes buffered before it.
    /// Returns the carry (its send order and time refresh the mirror) and the reply to come.
    pub(crate) fn send_carrying(
        &self,
        script: &'static Script,
        tag: &str,
        source: Option<&str>,
        limiter: bool,
        build: impl FnOnce(&mut Carry) -> (Vec<Key>, Vec<Value>),
    ) -> (Carry, SentScript) {
        let mut local = self.local();
        let mut carry = self.carry_locked(&mut local, tag, source, limiter, limiter);
        let mut carried = (!carry.exits.is_empty()).then(|| {
            self.inner.carriers.fetch_add(1, Ordering::AcqRel);
            CarriedExits {
                conn: self.clone(),
                tag: tag.to_owned(),
                exits: carry.exits.clone(),
            }
        });
        let (keys, args) = build(&mut carry);
        let conn = self.clone();
        let mut sent: SentScript =
            Box::pin(async move { conn.eval_quiet(script, keys, args).await });
        // The first poll queues the command (`fred` queues it before it awaits the reply);
        // nothing can be ready to wake before the caller polls again with its own waker.
        let first = sent.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        drop(local);
        let conn = self.clone();
        let reply: SentScript = Box::pin(async move {
            let r = match first {
                Poll::Ready(r) => r,
                Poll::Pending => sent.await,
            };
            if let Err(e) = &r {
                conn.drop_all_mirrors();
                if let Some(c) = &carried {
                    tracing::warn!(
                        code = "governance.writeback_failed",
                        op = "settle_then_release",
                        exits = c.count(),
                        "governance write-back degraded (not propagated): {e}; the concurrency \
                         slots of these finished calls free when their leases expire"
                    );
                }
            }
            // The reply was seen: nothing to put back (a failure is logged above).
            if let Some(c) = carried.as_mut() {
                c.exits.clear();
            }
            r
        });
        (carry, reply)
    }

    /// Waits until every script carrying exits has its reply (at most twice the operation
    /// timeout: each is bounded by it, so this only guards against a runtime that stopped
    /// polling them).
    async fn wait_carriers(&self) {
        let bound = self
            .inner
            .opts
            .op_timeout
            .saturating_mul(2)
            .saturating_add(Duration::from_millis(200));
        let wait = async {
            loop {
                let mut idle = std::pin::pin!(self.inner.carriers_idle.notified());
                idle.as_mut().enable();
                if self.inner.carriers.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(bound, wait).await;
    }

    /// [`Self::eval`] without dropping the mirrors on an error (the caller does, outside
    /// the local lock).
    async fn eval_quiet(
        &self,
        script: &Script,
        keys: Vec<Key>,
        args: Vec<Value>,
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

    /// Forgets every breaker mirror of this connection (replies of earlier scripts never
    /// restore them).
    fn drop_all_mirrors(&self) {
        let seq = self.next_seq();
        for scope in self.local().values_mut() {
            for s in scope.sources.values_mut() {
                s.mirror = None;
                s.floor_seq = s.floor_seq.max(seq);
            }
        }
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

    /// Moves the time every script of `scope` reads by `d` (test builds only): the offset
    /// added to Redis `TIME`, or the frozen clock of [`Self::freeze_time`]. Buffered writes are
    /// sent first: they happened before the time moved.
    #[cfg(feature = "test-time")]
    pub async fn advance_time(&self, scope: &str, d: Duration) -> Result<(), BackendError> {
        self.flush().await;
        let key = crate::keys::time_offset_key(&crate::keys::scope_tag(scope));
        let us = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        self.eval(
            &crate::scripts::ADVANCE_TIME,
            vec![key],
            vec![Value::Integer(us)],
        )
        .await?;
        Ok(())
    }

    /// Stops the clock of `scope` at its current reading (test builds only): from now on only
    /// [`Self::advance_time`] moves it, so a test that asserts a window edge to the second is
    /// not moved across it by the real time its own round trips take. Idempotent.
    #[cfg(feature = "test-time")]
    pub async fn freeze_time(&self, scope: &str) -> Result<(), BackendError> {
        let key = crate::keys::time_offset_key(&crate::keys::scope_tag(scope));
        self.eval(&crate::scripts::FREEZE_TIME, vec![key], Vec::new())
            .await?;
        Ok(())
    }

    /// Sends everything this connection buffered: the exits of finished calls and the
    /// progress marks (one limiter script per scope that has some), then the breaker success
    /// samples (one breaker script per scope and source that has some). A write that fails is
    /// dropped, as a failed write-back would be (a lost exit's slots free when its lease
    /// expires).
    ///
    /// Also waits for the replies of scripts that carry exits and are still on their way
    /// (another task's admission, the exit flusher), so when it returns every exit buffered
    /// before it is in Redis or was reported lost.
    pub async fn flush(&self) {
        self.flush_buffers().await;
        self.wait_carriers().await;
    }

    /// [`Self::flush`] without waiting for other carriers (the write-behind flusher's work).
    async fn flush_buffers(&self) {
        let _serial = self.inner.flush_lock.lock().await;
        self.send_scope_carries(false).await;
        let mut work = Vec::new();
        {
            let now = self.now();
            let mut local = self.local();
            for (tag, scope) in local.iter_mut() {
                if let Some(cfg) = &scope.breaker_cfg {
                    for (source, s) in &mut scope.sources {
                        if !s.samples.is_empty() {
                            work.push((
                                tag.clone(),
                                source.clone(),
                                Arc::clone(cfg),
                                encode(&mut s.samples, now),
                            ));
                        }
                    }
                }
            }
        }
        for (tag, source, cfg, list) in work {
            let seq = self.next_seq();
            let sent_at = self.now();
            let mut args = Vec::with_capacity(cfg.len() + 2);
            args.push(Value::from_static_str("flush"));
            args.extend(cfg.iter().cloned());
            args.push(Value::from(list));
            if let Ok(r) = self.eval(&BREAKER, breaker_keys(&tag, &source), args).await
                && let [.., ph, ep] = r.as_slice()
            {
                self.mirror_update(&tag, &source, seq, sent_at, ph, ep);
            }
        }
    }

    /// One limiter script (`mark`, which does nothing of its own) per scope with buffered
    /// exits — and, unless `only_exits`, per scope with a buffered progress mark — carrying
    /// them.
    async fn send_scope_carries(&self, only_exits: bool) {
        let tags: Vec<String> = self
            .local()
            .iter()
            .filter(|(_, scope)| {
                !scope.exits.is_empty() || (!only_exits && scope.mark_at.is_some())
            })
            .map(|(tag, _)| tag.clone())
            .collect();
        for tag in tags {
            let (_, reply) = self.send_carrying(&LIMITER, &tag, None, true, |c| {
                let mut keys = limiter_keys(&tag);
                keys.push(crate::keys::time_offset_key(&tag));
                let args = vec![
                    Value::from_static_str("mark"),
                    Value::from_static_str("0"),
                    c.mark_age.map_or_else(empty, uint),
                    empty(),
                    empty(),
                    exits_arg(&mut c.exits),
                ];
                (keys, args)
            });
            let _ = reply.await;
        }
    }

    /// Closes the connection after sending the buffered writes (pending commands fail);
    /// idempotent.
    pub async fn quit(&self) {
        if self.inner.started.load(Ordering::Acquire)
            && !self.inner.quit.swap(true, Ordering::AcqRel)
        {
            self.flush().await;
            if let Some(h) = self.lock_flusher().take() {
                h.abort();
            }
            let exit_flusher = self
                .inner
                .exit_flusher
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(h) = exit_flusher {
                h.abort();
            }
            let _ = self.inner.client.quit().await;
        }
    }
}

/// Sends the buffered writes of `inner` within `bound` of their recording: everything
/// (`flush`), or with `exits_only` the buffered exits (an exit is normally carried sooner by
/// the next limiter script of its scope).
async fn flusher(weak: Weak<Inner>, notify: Arc<Notify>, bound: Duration, exits_only: bool) {
    loop {
        notify.notified().await;
        tokio::time::sleep(bound).await;
        let Some(inner) = weak.upgrade() else {
            return;
        };
        let conn = RedisConnection { inner };
        if exits_only {
            conn.send_scope_carries(true).await;
        } else {
            conn.flush_buffers().await;
        }
    }
}

/// The exits one script carries. Dropped before that script's reply was seen (its caller was
/// cancelled), it puts them back in the buffer: the script may still have run (then applying
/// them again changes nothing: at most one settle, the release idempotent) or not (a
/// `NOSCRIPT` whose retry never ran). Either way it ends the carrier's count for `flush`.
struct CarriedExits {
    conn: RedisConnection,
    tag: String,
    /// Empty once the reply was seen.
    exits: String,
}

impl CarriedExits {
    fn count(&self) -> usize {
        self.exits.bytes().filter(|b| *b == b',').count() + 1
    }
}

impl Drop for CarriedExits {
    fn drop(&mut self) {
        if !self.exits.is_empty() {
            self.conn
                .requeue_exits(&self.tag, std::mem::take(&mut self.exits));
        }
        if self.conn.inner.carriers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.conn.inner.carriers_idle.notify_waiters();
        }
    }
}

/// The carried-exits script argument: `permit_id:actual_tokens,…`, `''` = none (taken out of
/// `exits`).
pub(crate) fn exits_arg(exits: &mut String) -> Value {
    if exits.is_empty() {
        empty()
    } else {
        Value::from(std::mem::take(exits))
    }
}

/// The empty script argument (`''`: "none" in the scripts).
pub(crate) fn empty() -> Value {
    Value::from_static_str("")
}

/// A non-negative integer script argument (decimal on the wire).
pub(crate) fn uint(n: u64) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}
