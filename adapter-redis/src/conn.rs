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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
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

/// Default bound of one Redis round trip (500 ms): a slower answer is treated as an outage.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_millis(500);

/// Default time a process trusts its local copy of a source's closed breaker (250 ms).
pub const DEFAULT_BREAKER_MIRROR: Duration = Duration::from_millis(250);

/// Default bound after which a buffered success sample or progress mark is in Redis (100 ms).
pub const DEFAULT_WRITE_BEHIND: Duration = Duration::from_millis(100);

/// Buffered success samples per source before `record_success` writes them at once.
const MAX_PENDING_SAMPLES: usize = 64;

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
    /// How long a breaker trusts the closed state it last read from Redis for a source (default
    /// [`DEFAULT_BREAKER_MIRROR`]): within it, `try_enter` on a closed source answers without a
    /// round trip, so an open made by another process is seen at the latest this long after
    /// it happened. This process's own failures and any reply showing a state change drop the
    /// copy at once. `Duration::ZERO`: every `try_enter` asks Redis.
    pub breaker_mirror: Duration,
    /// Bound for buffered writes (default [`DEFAULT_WRITE_BEHIND`]): a breaker success outside
    /// a probe and a progress mark made while a permit is in flight are not sent on their own;
    /// the next script of the scope on this connection carries them (normally the permit's
    /// settle/release), and a background flush sends what is left after this long.
    /// `Duration::ZERO`: every success and mark is written at once (one round trip each).
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

/// A buffered breaker success: decision epoch, counted in the window, local time recorded.
struct Sample {
    epoch: u64,
    count: bool,
    at: Duration,
}

/// Process-local state of one source of one scope.
#[derive(Default)]
struct SourceLocal {
    /// Closed at this epoch, as read by a script sent at this local time.
    mirror: Option<(u64, Duration)>,
    /// Replies of scripts sent before this sequence number never set the mirror.
    floor_seq: u64,
    samples: Vec<Sample>,
}

/// Process-local state of one scope (by hash tag).
#[derive(Default)]
struct ScopeLocal {
    /// Script arguments of the breaker config of this scope on this connection (if any).
    breaker_cfg: Option<Arc<[Value]>>,
    /// Local time of the latest buffered progress mark.
    mark_at: Option<Duration>,
    sources: HashMap<String, SourceLocal>,
}

/// The local state of scope `tag`, created on first use. Looks up before it inserts, so the
/// common case (the entry exists) allocates no key string on the call path.
fn scope_local<'a>(local: &'a mut HashMap<String, ScopeLocal>, tag: &str) -> &'a mut ScopeLocal {
    if !local.contains_key(tag) {
        local.insert(tag.to_owned(), ScopeLocal::default());
    }
    local
        .get_mut(tag)
        .unwrap_or_else(|| unreachable!("inserted above"))
}

/// The local state of `source` in scope `tag`, created on first use; like [`scope_local`], no
/// allocation when it exists (every script reply refreshes the mirror through it).
fn source_local<'a>(
    local: &'a mut HashMap<String, ScopeLocal>,
    tag: &str,
    source: &str,
) -> &'a mut SourceLocal {
    let sources = &mut scope_local(local, tag).sources;
    if !sources.contains_key(source) {
        sources.insert(source.to_owned(), SourceLocal::default());
    }
    sources
        .get_mut(source)
        .unwrap_or_else(|| unreachable!("inserted above"))
}

/// What a script carries from the buffer, and what its reply refreshes.
pub(crate) struct Carry {
    /// Age in µs of the buffered progress mark (`None` = none).
    pub mark_age: Option<u64>,
    /// Breaker config and the samples (`epoch:count:age_us,…`) for the script's source.
    pub breaker: Option<(Arc<[Value]>, String)>,
    /// Send order and local send time (mirror refresh).
    pub seq: u64,
    pub sent_at: Duration,
}

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
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(h) = self.flusher.get_mut().ok().and_then(Option::take) {
            h.abort();
        }
    }
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
        let client = &self.inner.client;
        let r = self
            .bounded(async {
                match client
                    .evalsha::<Vec<String>, _, _, _>(
                        script.sha1().clone(),
                        keys.clone(),
                        args.clone(),
                    )
                    .await
                {
                    Err(e) if e.details().starts_with("NOSCRIPT") => {
                        script.load(client).await?;
                        client.evalsha(script.sha1().clone(), keys, args).await
                    }
                    r => r,
                }
            })
            .await;
        if r.is_err() {
            // Redis may be down: no mirror answers for it any more.
            self.drop_all_mirrors();
        }
        r
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

    /// Moves the time every script of `scope` reads by `d` (test builds only). Buffered
    /// writes are sent first: they happened before the time moved.
    #[cfg(feature = "test-time")]
    pub async fn advance_time(&self, scope: &str, d: Duration) -> Result<(), BackendError> {
        self.flush().await;
        let key = crate::keys::time_offset_key(&crate::keys::scope_tag(scope));
        let us = i64::try_from(d.as_micros()).unwrap_or(i64::MAX);
        let client = &self.inner.client;
        self.bounded(client.incr_by::<i64, _>(key, us)).await?;
        Ok(())
    }

    /// Sends every buffered success sample and progress mark now (one script per scope and
    /// source that has some). A write that fails is dropped, as a failed write-back would be.
    pub async fn flush(&self) {
        let _serial = self.inner.flush_lock.lock().await;
        let mut work = Vec::new();
        {
            let now = self.now();
            let mut local = self.local();
            for (tag, scope) in local.iter_mut() {
                let mark = scope.mark_at.take().map(|at| age_us(now, at));
                let mut samples = Vec::new();
                if let Some(cfg) = &scope.breaker_cfg {
                    for (source, s) in &mut scope.sources {
                        if !s.samples.is_empty() {
                            samples.push((
                                source.clone(),
                                Arc::clone(cfg),
                                encode(&mut s.samples, now),
                            ));
                        }
                    }
                }
                if mark.is_some() || !samples.is_empty() {
                    work.push((tag.clone(), mark, samples));
                }
            }
        }
        for (tag, mark, samples) in work {
            if let Some(age) = mark {
                let mut keys = limiter_keys(&tag);
                keys.push(crate::keys::time_offset_key(&tag));
                let args = vec![
                    Value::from_static_str("mark"),
                    Value::from_static_str("0"),
                    uint(age),
                    empty(),
                    empty(),
                ];
                let _ = self.eval(&LIMITER, keys, args).await;
            }
            for (source, cfg, list) in samples {
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
            let _ = self.inner.client.quit().await;
        }
    }

    // ---- process-local shared state ---------------------------------------------------

    fn local(&self) -> MutexGuard<'_, HashMap<String, ScopeLocal>> {
        self.inner
            .local
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock_flusher(&self) -> MutexGuard<'_, Option<AbortHandle>> {
        self.inner
            .flusher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The local clock reading.
    pub(crate) fn now(&self) -> Duration {
        self.inner.clock.monotonic()
    }

    fn next_seq(&self) -> u64 {
        self.inner.seq.fetch_add(1, Ordering::AcqRel)
    }

    /// Records that a breaker with these script config arguments works on `tag`.
    pub(crate) fn register_breaker(&self, tag: &str, cfg: Arc<[Value]>) {
        scope_local(&mut self.local(), tag).breaker_cfg = Some(cfg);
    }

    /// Takes what the next script of `tag` carries: the buffered mark (if `mark`), and — when a
    /// breaker works on `tag` and `source` is given — the breaker config and the buffered
    /// samples of `source`.
    pub(crate) fn carry(&self, tag: &str, source: Option<&str>, mark: bool) -> Carry {
        let seq = self.next_seq();
        let now = self.now();
        let mut local = self.local();
        let mut c = Carry {
            mark_age: None,
            breaker: None,
            seq,
            sent_at: now,
        };
        let Some(scope) = local.get_mut(tag) else {
            return c;
        };
        if mark && let Some(at) = scope.mark_at.take() {
            c.mark_age = Some(age_us(now, at));
        }
        if let (Some(cfg), Some(source)) = (&scope.breaker_cfg, source) {
            let list = match scope.sources.get_mut(source) {
                Some(s) => encode(&mut s.samples, now),
                None => String::new(),
            };
            c.breaker = Some((Arc::clone(cfg), list));
        }
        c
    }

    /// Buffers a breaker success; `true` when the buffer of `source` is full (write it now).
    pub(crate) fn push_sample(&self, tag: &str, source: &str, epoch: u64, count: bool) -> bool {
        let at = self.now();
        let full = {
            let mut local = self.local();
            let s = source_local(&mut local, tag, source);
            s.samples.push(Sample { epoch, count, at });
            s.samples.len() >= MAX_PENDING_SAMPLES
        };
        if !full {
            self.schedule_flush();
        }
        full
    }

    /// Buffers a progress mark of `tag`.
    pub(crate) fn push_mark(&self, tag: &str) {
        let at = self.now();
        scope_local(&mut self.local(), tag).mark_at = Some(at);
        self.schedule_flush();
    }

    /// The epoch of `source`'s closed breaker if the mirror may still be trusted.
    pub(crate) fn mirror_closed(&self, tag: &str, source: &str) -> Option<u64> {
        let ttl = self.inner.opts.breaker_mirror;
        if ttl.is_zero() {
            return None;
        }
        let now = self.now();
        let local = self.local();
        let (epoch, at) = local.get(tag)?.sources.get(source)?.mirror?;
        (now.saturating_sub(at) < ttl).then_some(epoch)
    }

    /// Forgets the mirror of `source`; replies of scripts sent before now never restore it.
    pub(crate) fn mirror_drop(&self, tag: &str, source: &str) {
        let seq = self.next_seq();
        let mut local = self.local();
        let s = source_local(&mut local, tag, source);
        s.mirror = None;
        s.floor_seq = s.floor_seq.max(seq);
    }

    /// Applies a reply reporting `source`'s phase (`c`/`o`/`h`) and epoch, read by a script sent
    /// as `seq` at `sent_at`: anything but closed drops the mirror; closed sets it unless a
    /// later drop or reply came first.
    pub(crate) fn mirror_update(
        &self,
        tag: &str,
        source: &str,
        seq: u64,
        sent_at: Duration,
        phase: &str,
        epoch: &str,
    ) {
        if self.inner.opts.breaker_mirror.is_zero() {
            return;
        }
        let mut local = self.local();
        let s = source_local(&mut local, tag, source);
        match (phase, epoch.parse::<u64>()) {
            ("c", Ok(ep)) if seq > s.floor_seq => {
                s.mirror = Some((ep, sent_at));
                s.floor_seq = seq;
            }
            ("c", Ok(_)) => {}
            _ => {
                s.mirror = None;
                s.floor_seq = s.floor_seq.max(seq);
            }
        }
    }

    /// Wakes the flusher (started on first use, on the current runtime; ended by `quit` or
    /// when the last clone of this connection is dropped).
    fn schedule_flush(&self) {
        let mut f = self.lock_flusher();
        if f.is_none() {
            let Ok(rt) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let weak = Arc::downgrade(&self.inner);
            let notify = Arc::clone(&self.inner.notify);
            let bound = self.inner.opts.write_behind;
            *f = Some(rt.spawn(flusher(weak, notify, bound)).abort_handle());
        }
        drop(f);
        self.inner.notify.notify_one();
    }
}

/// Sends the buffered writes of `inner` within `bound` of their recording.
async fn flusher(weak: Weak<Inner>, notify: Arc<Notify>, bound: Duration) {
    loop {
        notify.notified().await;
        tokio::time::sleep(bound).await;
        let Some(inner) = weak.upgrade() else {
            return;
        };
        RedisConnection { inner }.flush().await;
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

fn age_us(now: Duration, at: Duration) -> u64 {
    u64::try_from(now.saturating_sub(at).as_micros()).unwrap_or(u64::MAX)
}

/// `epoch:count:age_us,…` (drains `samples`).
fn encode(samples: &mut Vec<Sample>, now: Duration) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for s in samples.drain(..) {
        if !out.is_empty() {
            out.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(
            out,
            "{}:{}:{}",
            s.epoch,
            if s.count { '1' } else { '0' },
            age_us(now, s.at)
        );
    }
    out
}
