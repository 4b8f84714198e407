//! `RedisRateLimiter`: the `RateLimiter` port over Redis (D11;
//! 05 R-46). The arithmetic mirrors `gateway_core::memory::MemoryRateLimiter` exactly; the state
//! lives in Redis under the scope's tag, so every process of the scope shares it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use fred::types::{Key, Value};
use gateway_ports::{
    Acquire, BackendError, GlobalLimits, LimitGate, Permit, RateLimiter, SourceConfig, SourceStats,
};

use crate::conn::{RedisConnection, empty, exits_arg, uint};
use crate::keys::{breaker_source_keys, limiter_keys, scope_tag, time_offset_key};
use crate::scripts::LIMITER;

/// Largest token count sent to the scripts (2^53): Lua numbers are doubles, and a larger
/// count would not survive the permit record's integer formatting.
const MAX_TOKENS: u64 = 1 << 53;

/// Upper bound of a lease in microseconds (~31 years): larger TTLs mean "never reclaim".
const MAX_LEASE_US: u64 = 1_000_000_000_000_000;

#[derive(Debug, Clone, Copy)]
struct Limits {
    max_concurrency: u32,
    rpm: u32,
    tpm: u64,
}

/// One configured source with its script arguments and breaker keys built once (no key or
/// number is formatted on the call path).
struct SourceEntry {
    name: String,
    /// The source name as a script argument.
    name_arg: Value,
    /// `max_concurrency`, `rpm`, `tpm` as script arguments.
    limit_args: [Value; 3],
    /// The breaker state and bucket keys of this source (carried breaker writes).
    brk_keys: [Key; 2],
}

fn limit_args(l: Limits) -> [Value; 3] {
    [
        uint(u64::from(l.max_concurrency)),
        uint(u64::from(l.rpm)),
        uint(l.tpm),
    ]
}

struct Inner {
    scope: String,
    tag: String,
    conn: RedisConnection,
    /// Permits granted by this limiter and not yet released (or dropped).
    live: AtomicUsize,
    sources: Vec<SourceEntry>,
    /// Global `max_concurrency`, `rpm`, `tpm` as script arguments.
    global_args: [Value; 3],
    /// State, permits, window, leases, progress.
    keys: Vec<Key>,
    offset_key: Key,
    lease_ttl_us: u64,
    lease_ttl_arg: Value,
    closed: AtomicBool,
    /// `close()` also quits the connection (the assembly built it for this port).
    owns_conn: bool,
}

impl Inner {
    /// One script: `op` with `op_args`, carrying the scope's buffered exits and progress mark
    /// (or, with `mark_now`, a mark made now) and — for an op on `source` when a breaker works
    /// on this scope and connection — the buffered breaker successes of `source`; the reply's
    /// breaker phase and epoch refresh the breaker mirror and are removed from the returned
    /// reply.
    async fn run(
        &self,
        op: &'static str,
        source: Option<&SourceEntry>,
        mark_now: bool,
        op_args: impl IntoIterator<Item = Value>,
    ) -> Result<Vec<String>, BackendError> {
        let mut brk_source = None;
        let (carry, reply) = self.conn.send_carrying(
            &LIMITER,
            &self.tag,
            source.map(|e| e.name.as_str()),
            true,
            |carry| {
                let mut keys = Vec::with_capacity(self.keys.len() + 3);
                keys.extend(self.keys.iter().cloned());
                let mut args = Vec::with_capacity(16);
                args.push(Value::from_static_str(op));
                args.push(self.lease_ttl_arg.clone());
                args.push(if mark_now {
                    Value::from_static_str("0")
                } else {
                    carry.mark_age.map_or_else(empty, uint)
                });
                match (carry.breaker.take(), source) {
                    (Some((cfg, list)), Some(src)) => {
                        keys.extend(src.brk_keys.iter().cloned());
                        args.push(
                            cfg.get(3)
                                .cloned()
                                .unwrap_or_else(|| Value::from_static_str("60")),
                        );
                        args.push(if list.is_empty() {
                            empty()
                        } else {
                            Value::from(list)
                        });
                        brk_source = Some(src);
                    }
                    _ => {
                        args.push(empty());
                        args.push(empty());
                    }
                }
                keys.push(self.offset_key.clone());
                args.extend(op_args);
                // Always the last argument, whatever the op's own arguments.
                args.push(exits_arg(&mut carry.exits));
                (keys, args)
            },
        );
        let mut r = reply.await?;
        if let Some(src) = brk_source {
            let (Some(ep), Some(ph)) = (r.pop(), r.pop()) else {
                return Err(BackendError::protocol("redis limiter: malformed reply"));
            };
            self.conn
                .mirror_update(&self.tag, &src.name, carry.seq, carry.sent_at, &ph, &ep);
        }
        Ok(r)
    }

    fn entry(&self, source: &str) -> Option<&SourceEntry> {
        self.sources.iter().find(|e| e.name == source)
    }

    fn check_open(&self) -> Result<(), BackendError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(BackendError::unavailable("redis limiter is closed"));
        }
        Ok(())
    }

    async fn finish(
        &self,
        source: &str,
        id: &str,
        settle: Option<u64>,
        release: bool,
    ) -> Result<(), BackendError> {
        let entry = self.entry(source);
        let args = [
            Value::from(id.to_owned()),
            settle.map_or_else(empty, |t| uint(t.min(MAX_TOKENS))),
            Value::from_static_str(if release { "1" } else { "0" }),
            entry.map_or_else(empty, |e| e.name_arg.clone()),
        ];
        self.run("finish", entry, false, args).await.map(|_| ())
    }

    async fn stats(&self, source: &str) -> Result<(SourceStats, usize), BackendError> {
        let r = self
            .run("stats", None, false, [Value::from(source.to_owned())])
            .await?;
        let n = |i: usize| -> Result<u64, BackendError> {
            r.get(i)
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| BackendError::protocol("redis limiter: malformed stats reply"))
        };
        let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Ok((
            SourceStats::new(n(0)?, clamp(n(1)?), clamp(n(2)?)),
            usize::try_from(n(3)?).unwrap_or(usize::MAX),
        ))
    }
}

/// The rate limiter shared through Redis.
///
/// Built from `(scope, &[SourceConfig], GlobalLimits, lease_ttl_s, RedisConnection)`; only the
/// sources it was built with are known (others → `SourceNotConfigured`, checked without I/O).
/// Every process of a scope must be built with the same limits: each grant checks the limits of
/// the process that asks. Each operation is at most one `EVALSHA`; any Redis error or timeout is
/// `Unavailable` (never a grant). After `close()` the entry points answer `Unavailable` while
/// permit `settle`/`release` keep working so cleanup never fails.
#[derive(Clone)]
pub struct RedisRateLimiter {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("scope", &self.inner.scope)
            .field("sources", &self.inner.sources.len())
            .field("lease_ttl_us", &self.inner.lease_ttl_us)
            .finish_non_exhaustive()
    }
}

fn lease_us(lease_ttl_s: f64) -> u64 {
    if lease_ttl_s.is_nan() || lease_ttl_s <= 0.0 {
        return 0;
    }
    let us = lease_ttl_s * 1e6;
    if us >= MAX_LEASE_US as f64 {
        MAX_LEASE_US
    } else {
        us as u64
    }
}

impl RedisRateLimiter {
    /// Builds a limiter for `sources` (`max_concurrency`, `rpm`, `tpm`; `0` = unlimited) and the
    /// scope-wide `global` limits over `conn`. `lease_ttl_s` (seconds; default at assembly
    /// `max timeout_s + 30`) bounds how long a permit holds its concurrency slots without
    /// `release` — also when its process died. A duplicate source name keeps the first
    /// configuration. No I/O.
    pub fn new(
        scope: &str,
        sources: &[SourceConfig],
        global: GlobalLimits,
        lease_ttl_s: f64,
        conn: RedisConnection,
    ) -> Self {
        let tag = scope_tag(scope);
        let mut list: Vec<SourceEntry> = Vec::new();
        for s in sources {
            if list.iter().any(|e| e.name == s.name) {
                continue;
            }
            list.push(SourceEntry {
                name: s.name.clone(),
                name_arg: Value::from(s.name.clone()),
                limit_args: limit_args(Limits {
                    max_concurrency: s.max_concurrency,
                    rpm: s.rpm,
                    tpm: s.tpm,
                }),
                brk_keys: breaker_source_keys(&tag, &s.name),
            });
        }
        let lease_ttl_us = lease_us(lease_ttl_s);
        Self {
            inner: Arc::new(Inner {
                scope: scope.to_owned(),
                tag: tag.clone(),
                conn,
                live: AtomicUsize::new(0),
                sources: list,
                global_args: limit_args(Limits {
                    max_concurrency: global.max_concurrency,
                    rpm: global.rpm,
                    tpm: global.tpm,
                }),
                keys: limiter_keys(&tag),
                offset_key: time_offset_key(&tag),
                lease_ttl_us,
                lease_ttl_arg: uint(lease_ttl_us),
                closed: AtomicBool::new(false),
                owns_conn: false,
            }),
        }
    }

    /// Makes `close()` also quit the connection (pending and later operations on it fail
    /// closed). Call it right after `new`, before cloning; the assembly uses it for the ports it
    /// builds from `REDIS_URL`.
    pub fn owning_connection(mut self) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.owns_conn = true;
        }
        self
    }

    /// The scope this limiter was built for.
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    /// Scope-wide usage (all sources and all processes), after ageing the window and reclaiming
    /// expired leases.
    pub async fn global_stats(&self) -> Result<SourceStats, BackendError> {
        Ok(self.inner.stats("").await?.0)
    }

    /// Number of permits the scope still tracks (in the window or holding a slot): a leak check;
    /// 0 once every permit was released or reclaimed and 60 s passed.
    pub async fn tracked_permits(&self) -> Result<usize, BackendError> {
        Ok(self.inner.stats("").await?.1)
    }

    fn entry(&self, source: &str) -> Result<&SourceEntry, BackendError> {
        self.inner
            .entry(source)
            .ok_or_else(|| BackendError::source_not_configured(source))
    }
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn try_acquire(&self, source: &str, est_tokens: u64) -> Result<Acquire, BackendError> {
        let e = self.entry(source)?;
        self.inner.check_open()?;
        let [sc, sr, st] = e.limit_args.clone();
        let [gc, gr, gt] = self.inner.global_args.clone();
        let r = self
            .inner
            .run(
                "acquire",
                Some(e),
                false,
                [
                    e.name_arg.clone(),
                    uint(est_tokens.min(MAX_TOKENS)),
                    sc,
                    sr,
                    st,
                    gc,
                    gr,
                    gt,
                ],
            )
            .await?;
        match (r.first().map(String::as_str), r.get(1)) {
            (Some("ok"), Some(id)) => {
                self.inner.live.fetch_add(1, Ordering::AcqRel);
                Ok(Acquire::Granted(Box::new(RedisPermit {
                    id_text: format!("{}:{id}", self.inner.scope),
                    member: id.clone(),
                    source: source.to_owned(),
                    est_tokens,
                    released: AtomicBool::new(false),
                    inner: Arc::clone(&self.inner),
                })))
            }
            (Some("deny"), Some(gate)) => {
                let gate = LimitGate::from_wire(gate)
                    .ok_or_else(|| BackendError::protocol("redis limiter: unknown gate"))?;
                let wait_hint_s = r
                    .get(2)
                    .and_then(|h| h.parse::<f64>().ok())
                    .filter(|h| h.is_finite() && *h >= 0.0);
                Ok(Acquire::Denied { gate, wait_hint_s })
            }
            _ => Err(BackendError::protocol(
                "redis limiter: malformed acquire reply",
            )),
        }
    }

    async fn source_stats(&self, source: &str) -> Result<SourceStats, BackendError> {
        self.entry(source)?;
        self.inner.check_open()?;
        Ok(self.inner.stats(source).await?.0)
    }

    /// While a permit of this limiter is in flight the mark costs no round trip: the next
    /// script of the scope on this connection (normally that permit's settle/release) carries
    /// it, stamped with the time it was made, and it is in Redis within the write-behind bound
    /// at the latest. With no permit in flight (or write-behind off) it is sent at once.
    async fn mark_progress(&self) -> Result<(), BackendError> {
        self.inner.check_open()?;
        let conn = &self.inner.conn;
        if !conn.options().write_behind.is_zero() && self.inner.live.load(Ordering::Acquire) > 0 {
            conn.push_mark(&self.inner.tag);
            return Ok(());
        }
        self.inner.run("mark", None, true, []).await.map(|_| ())
    }

    /// One round trip, which also writes a buffered mark of this connection first.
    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        self.inner.check_open()?;
        let r = self.inner.run("age", None, false, []).await?;
        r.first()
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| BackendError::protocol("redis limiter: malformed progress reply"))
    }

    /// Sends the buffered writes of the connection (exits, marks, breaker samples).
    async fn flush(&self) {
        self.inner.conn.flush().await;
    }

    /// Sends the buffered writes of the connection; quits it if this limiter owns it.
    async fn close(&self) {
        let was_closed = self.inner.closed.swap(true, Ordering::AcqRel);
        if was_closed {
            return;
        }
        if self.inner.owns_conn {
            self.inner.conn.quit().await;
        } else {
            self.inner.conn.flush().await;
        }
    }
}

/// A permit of [`RedisRateLimiter`]. Dropping it without `release` is a cancellation:
/// its slots stay held until its lease expires, in every process. `Debug` prints ids only.
pub struct RedisPermit {
    id_text: String,
    member: String,
    source: String,
    est_tokens: u64,
    /// Counted out of the limiter's in-flight permits (release sent or permit dropped).
    released: AtomicBool,
    inner: Arc<Inner>,
}

impl RedisPermit {
    fn leave_flight(&self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.inner.live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for RedisPermit {
    fn drop(&mut self) {
        self.leave_flight();
    }
}

impl fmt::Debug for RedisPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisPermit")
            .field("id", &self.id_text)
            .field("source", &self.source)
            .field("est_tokens", &self.est_tokens)
            .finish()
    }
}

#[async_trait]
impl Permit for RedisPermit {
    fn id(&self) -> &str {
        &self.id_text
    }

    fn source(&self) -> &str {
        &self.source
    }

    fn est_tokens(&self) -> u64 {
        self.est_tokens
    }

    async fn settle(&self, actual_tokens: u64) -> Result<(), BackendError> {
        self.inner
            .finish(&self.source, &self.member, Some(actual_tokens), false)
            .await
    }

    async fn release(&self) -> Result<(), BackendError> {
        let r = self
            .inner
            .finish(&self.source, &self.member, None, true)
            .await;
        self.leave_flight();
        r
    }

    /// One `EVALSHA` for both, which also carries the buffered exits, progress mark and breaker
    /// successes of this source (the awaited exit: write-behind off, or no runtime at the
    /// core's exit).
    async fn settle_then_release(&self, actual_tokens: u64) -> Result<(), BackendError> {
        let r = self
            .inner
            .finish(&self.source, &self.member, Some(actual_tokens), true)
            .await;
        self.leave_flight();
        r
    }

    /// The core's exit path without a round trip of its own: buffers the exit (settle
    /// `actual_tokens`, release) on the connection and returns `true`.
    ///
    /// The next limiter script of the scope on this connection — normally the next call's
    /// admission — carries it and applies it first, and every script queued after this call
    /// returns sees it (a new admission for the slot just freed included). With no such
    /// script the exit flusher sends it within 2 ms (or the write-behind bound if shorter);
    /// `close()` sends it before quitting. Other processes see the freed slot and the settled
    /// tokens that much later, as if the call had taken that much longer. If the carrying
    /// script fails (Redis down), the exit is lost like any failed write-back and the slots
    /// free when the permit's lease expires. This makes a governed call one script in Redis
    /// instead of two. `false` (nothing done, use the async path) when write-behind is off
    /// (`RedisOptions::write_behind` 0) or no tokio runtime runs here (the flusher needs
    /// one). After `release` it is `true` at once: settle and release are no-ops then.
    fn settle_and_release_now(&self, actual_tokens: u64) -> bool {
        if self.released.load(Ordering::Acquire) {
            return true;
        }
        if self.inner.conn.options().write_behind.is_zero()
            || tokio::runtime::Handle::try_current().is_err()
        {
            return false;
        }
        self.inner
            .conn
            .push_exit(&self.inner.tag, &self.member, actual_tokens.min(MAX_TOKENS));
        self.leave_flight();
        true
    }
}
