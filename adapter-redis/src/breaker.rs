//! `RedisCircuitBreaker`: the `CircuitBreaker` port over Redis (G-75,
//! G-76; D7; 05 R-45). The state machine mirrors `gateway_core::memory::MemoryCircuitBreaker`
//! exactly (see its module doc for the choices where the port leaves room); the state of each
//! source lives in two Redis hashes under the scope's tag, shared by every process.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use fred::types::Value;
use gateway_ports::{
    BackendError, BreakerConfig, BreakerSnapshot, BreakerState, CircuitBreaker, FailureReason,
    GateDecision,
};

use crate::conn::RedisConnection;
use crate::keys::{breaker_keys, scope_tag};
use crate::scripts::BREAKER;

/// Probe lease in seconds used when `BreakerConfig::probe_ttl_s` is `None`: the default source
/// `timeout_s` (120) + 5, as in the memory breaker.
pub const DEFAULT_PROBE_TTL_S: f64 = 125.0;

/// Config as script arguments (ARGV[2..8]), normalised like the memory breaker.
fn config_args(c: &BreakerConfig) -> Vec<Value> {
    let finite_pos = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let window = finite_pos(c.window_s).ceil();
    let window_secs = if window >= 1.0 { window as u64 } else { 1 };
    let cooldown = finite_pos(c.cooldown_s);
    let cooldown_max = finite_pos(c.cooldown_max_s).max(cooldown);
    let probe = c.probe_ttl_s.unwrap_or(DEFAULT_PROBE_TTL_S);
    let probe_us = if probe.is_nan() || probe <= 0.0 {
        0.0
    } else {
        (probe * 1e6).min(1e15).floor()
    };
    [
        c.fail_threshold.max(1).to_string(),
        format!("{:?}", c.fail_rate),
        c.min_calls.max(1).to_string(),
        window_secs.to_string(),
        format!("{cooldown:?}"),
        format!("{cooldown_max:?}"),
        format!("{probe_us:.0}"),
    ]
    .into_iter()
    .map(Value::from)
    .collect()
}

/// Does `reason` count as a failure in the breaker's channels?
fn counts(reason: FailureReason) -> bool {
    matches!(
        reason,
        FailureReason::Timeout | FailureReason::NetworkError | FailureReason::SourceDead
    )
}

struct Inner {
    scope: String,
    tag: String,
    conn: RedisConnection,
    config: Arc<[Value]>,
    closed: AtomicBool,
    /// `close()` also quits the connection (the assembly built it for this port).
    owns_conn: bool,
}

/// The circuit breaker shared through Redis.
///
/// Built from `(scope, BreakerConfig, RedisConnection)`; any source name is accepted. Every
/// process of a scope must use the same `BreakerConfig`. Each operation is at most one
/// `EVALSHA`; any Redis error or timeout is `Unavailable` (never `allowed`). Denied decisions
/// and `release_probe` of a non-probe write nothing and cost no round trip. Two more cost none
/// in the common case (see [`crate::RedisOptions`]): `try_enter` on a source whose closed state
/// this process read less than `breaker_mirror` ago, and `record_success` outside a probe,
/// which is buffered and carried by the next script of the scope on this connection (the
/// limiter's settle/release when both ports share it). After `close()` `try_enter` and
/// `snapshot` answer `Unavailable`; write-backs keep working.
#[derive(Clone)]
pub struct RedisCircuitBreaker {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisCircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCircuitBreaker")
            .field("scope", &self.inner.scope)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl RedisCircuitBreaker {
    /// Builds a breaker for `scope` with `config` over `conn`. Out-of-domain values (validated
    /// at assembly) are clamped as in the memory breaker. No I/O.
    pub fn new(scope: &str, config: BreakerConfig, conn: RedisConnection) -> Self {
        let tag = scope_tag(scope);
        let config: Arc<[Value]> = config_args(&config).into();
        conn.register_breaker(&tag, Arc::clone(&config));
        Self {
            inner: Arc::new(Inner {
                scope: scope.to_owned(),
                tag,
                conn,
                config,
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

    /// The scope this breaker was built for.
    pub fn scope(&self) -> &str {
        &self.inner.scope
    }

    async fn run(
        &self,
        source: &str,
        op: &'static str,
        extra: &[&str],
    ) -> Result<Vec<String>, BackendError> {
        let tag = &self.inner.tag;
        let conn = &self.inner.conn;
        let (carry, reply) = conn.send_carrying(&BREAKER, tag, Some(source), false, |carry| {
            let mut args = Vec::with_capacity(9 + extra.len());
            args.push(Value::from_static_str(op));
            args.extend(self.inner.config.iter().cloned());
            args.push(Value::from(
                carry
                    .breaker
                    .take()
                    .map(|(_, list)| list)
                    .unwrap_or_default(),
            ));
            args.extend(extra.iter().map(|s| Value::from((*s).to_owned())));
            (breaker_keys(tag, source), args)
        });
        let r = reply.await?;
        match r.as_slice() {
            [state, epoch, ..] if op == "snap" => {
                let phase = match state.as_str() {
                    "closed" => "c",
                    "open" => "o",
                    _ => "h",
                };
                conn.mirror_update(tag, source, carry.seq, carry.sent_at, phase, epoch);
            }
            [.., phase, epoch] => {
                conn.mirror_update(tag, source, carry.seq, carry.sent_at, phase, epoch);
            }
            _ => return Err(malformed(op)),
        }
        Ok(r)
    }

    fn check_open(&self) -> Result<(), BackendError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(BackendError::unavailable("redis breaker is closed"));
        }
        Ok(())
    }
}

fn malformed(what: &str) -> BackendError {
    BackendError::protocol(format!("redis breaker: malformed {what} reply"))
}

fn flag(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

#[async_trait]
impl CircuitBreaker for RedisCircuitBreaker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        self.check_open()?;
        if let Some(epoch) = self.inner.conn.mirror_closed(&self.inner.tag, source) {
            return Ok(GateDecision {
                source: source.to_owned(),
                owner: owner.to_owned(),
                allowed: true,
                is_probe: false,
                epoch,
                retry_after_s: None,
            });
        }
        let r = self.run(source, "enter", &[owner]).await?;
        let [allowed, probe, epoch, retry, _, _] = r.as_slice() else {
            return Err(malformed("enter"));
        };
        Ok(GateDecision {
            source: source.to_owned(),
            owner: owner.to_owned(),
            allowed: allowed == "1",
            is_probe: probe == "1",
            epoch: epoch.parse().map_err(|_| malformed("enter"))?,
            retry_after_s: if retry.is_empty() {
                None
            } else {
                Some(retry.parse().map_err(|_| malformed("enter"))?)
            },
        })
    }

    async fn record_success(
        &self,
        entry: &GateDecision,
        count_attempt: bool,
    ) -> Result<(), BackendError> {
        if !entry.allowed {
            return Ok(());
        }
        let conn = &self.inner.conn;
        if !entry.is_probe
            && !conn.options().write_behind.is_zero()
            && !conn.push_sample(&self.inner.tag, &entry.source, entry.epoch, count_attempt)
        {
            return Ok(());
        }
        if !entry.is_probe && !conn.options().write_behind.is_zero() {
            // The buffer of this source is full: this script carries all of it.
            return self.run(&entry.source, "flush", &[]).await.map(|_| ());
        }
        let epoch = entry.epoch.to_string();
        self.run(
            &entry.source,
            "success",
            &[
                &epoch,
                flag(entry.is_probe),
                &entry.owner,
                flag(count_attempt),
            ],
        )
        .await
        .map(|_| ())
    }

    async fn record_failure(
        &self,
        entry: &GateDecision,
        reason: FailureReason,
        force_open: bool,
    ) -> Result<(), BackendError> {
        if !entry.allowed {
            return Ok(());
        }
        // This process's failure may open the breaker: stop trusting the mirror at once.
        self.inner.conn.mirror_drop(&self.inner.tag, &entry.source);
        let epoch = entry.epoch.to_string();
        self.run(
            &entry.source,
            "failure",
            &[
                &epoch,
                flag(entry.is_probe),
                &entry.owner,
                flag(force_open || counts(reason)),
                flag(force_open),
            ],
        )
        .await
        .map(|_| ())
    }

    async fn release_probe(&self, entry: &GateDecision) -> Result<(), BackendError> {
        if !entry.is_probe {
            return Ok(());
        }
        let epoch = entry.epoch.to_string();
        self.run(&entry.source, "release", &[&epoch, &entry.owner])
            .await
            .map(|_| ())
    }

    async fn snapshot(&self, source: &str) -> Result<BreakerSnapshot, BackendError> {
        self.check_open()?;
        let r = self.run(source, "snap", &[]).await?;
        let [state, epoch, cf, calls, fails, until, cooldown, opens] = r.as_slice() else {
            return Err(malformed("snapshot"));
        };
        let bad = || malformed("snapshot");
        let mut s = BreakerSnapshot::default();
        s.state = BreakerState::from_wire(state).ok_or_else(bad)?;
        s.epoch = epoch.parse().map_err(|_| bad())?;
        s.consecutive_failures = cf.parse().map_err(|_| bad())?;
        s.window_calls = calls.parse().map_err(|_| bad())?;
        s.window_failures = fails.parse().map_err(|_| bad())?;
        s.open_until_s = if until.is_empty() {
            None
        } else {
            Some(until.parse().map_err(|_| bad())?)
        };
        s.current_cooldown_s = cooldown.parse().map_err(|_| bad())?;
        // Lua numbers past 2^53 lose precision; a count past u32::MAX saturates.
        s.open_count = opens
            .parse::<u64>()
            .map_err(|_| bad())?
            .try_into()
            .unwrap_or(u32::MAX);
        Ok(s)
    }

    /// Sends the buffered writes of the connection (success samples, and the limiter's exits
    /// and marks when it shares the connection).
    async fn flush(&self) {
        self.inner.conn.flush().await;
    }

    /// Sends the buffered writes of the connection; quits it if this breaker owns it.
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
