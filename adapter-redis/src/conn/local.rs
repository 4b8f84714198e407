//! The process-local shared state of a connection: the per-scope and per-source buffers of
//! breaker samples and marks, the mirrored breaker state, what a script carries from them, and
//! the scheduling of their write-behind flush.
//!
//! Separate from the connection's Redis round trips: this state never leaves the process except
//! through `flush`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use fred::types::Value;
use tokio::task::AbortHandle;

use super::{RedisConnection, flusher};

/// Buffered success samples per source before `record_success` writes them at once.
const MAX_PENDING_SAMPLES: usize = 64;
/// A buffered breaker success: decision epoch, counted in the window, local time recorded.
pub(super) struct Sample {
    pub(super) epoch: u64,
    pub(super) count: bool,
    pub(super) at: Duration,
}

/// Process-local state of one source of one scope.
#[derive(Default)]
pub(super) struct SourceLocal {
    /// Closed at this epoch, as read by a script sent at this local time.
    pub(super) mirror: Option<(u64, Duration)>,
    /// Replies of scripts sent before this sequence number never set the mirror.
    pub(super) floor_seq: u64,
    pub(super) samples: Vec<Sample>,
}

/// Process-local state of one scope (by hash tag).
#[derive(Default)]
pub(super) struct ScopeLocal {
    /// Script arguments of the breaker config of this scope on this connection (if any).
    pub(super) breaker_cfg: Option<Arc<[Value]>>,
    /// Local time of the latest buffered progress mark.
    pub(super) mark_at: Option<Duration>,
    /// Buffered exits of finished calls (`permit_id:actual_tokens,…`): settle and release,
    /// carried by the next limiter script of the scope on this connection.
    pub(super) exits: String,
    pub(super) sources: HashMap<String, SourceLocal>,
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
    /// Buffered exits of the scope (`permit_id:actual_tokens,…`; empty = none), only for a
    /// limiter script ([`RedisConnection::send_carrying`]).
    pub exits: String,
    /// Send order and local send time (mirror refresh).
    pub seq: u64,
    pub sent_at: Duration,
}

impl RedisConnection {
    pub(super) fn local(&self) -> MutexGuard<'_, HashMap<String, ScopeLocal>> {
        self.inner
            .local
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn lock_flusher(&self) -> MutexGuard<'_, Option<AbortHandle>> {
        self.inner
            .flusher
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The local clock reading.
    pub(crate) fn now(&self) -> Duration {
        self.inner.clock.monotonic()
    }

    pub(super) fn next_seq(&self) -> u64 {
        self.inner.seq.fetch_add(1, Ordering::AcqRel)
    }

    /// Records that a breaker with these script config arguments works on `tag`.
    pub(crate) fn register_breaker(&self, tag: &str, cfg: Arc<[Value]>) {
        scope_local(&mut self.local(), tag).breaker_cfg = Some(cfg);
    }

    /// Takes what the next script of `tag` carries, under the caller's lock of the local
    /// state: the buffered mark (if `mark`), the buffered exits (if `exits`), and — when a
    /// breaker works on `tag` and `source` is given — the breaker config and the buffered
    /// samples of `source`.
    pub(super) fn carry_locked(
        &self,
        local: &mut HashMap<String, ScopeLocal>,
        tag: &str,
        source: Option<&str>,
        mark: bool,
        exits: bool,
    ) -> Carry {
        let seq = self.next_seq();
        let now = self.now();
        let mut c = Carry {
            mark_age: None,
            breaker: None,
            exits: String::new(),
            seq,
            sent_at: now,
        };
        let Some(scope) = local.get_mut(tag) else {
            return c;
        };
        if exits {
            c.exits = std::mem::take(&mut scope.exits);
        }
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

    /// Buffers the exit of a finished call (settle `actual` tokens, release) of permit
    /// `member` in scope `tag`; the next limiter script of the scope carries it, the exit
    /// flusher sends it within [`exit_bound`] at the latest.
    pub(crate) fn push_exit(&self, tag: &str, member: &str, actual: u64) {
        use std::fmt::Write as _;
        {
            let mut local = self.local();
            let exits = &mut scope_local(&mut local, tag).exits;
            if !exits.is_empty() {
                exits.push(',');
            }
            // Writing into a String cannot fail.
            let _ = write!(exits, "{member}:{actual}");
        }
        self.schedule_exit_flush();
    }

    /// Puts `exits` (taken by a script whose reply was never seen) back at the front of the
    /// buffer of `tag`, ahead of any exit buffered since.
    pub(super) fn requeue_exits(&self, tag: &str, mut exits: String) {
        {
            let mut local = self.local();
            let buf = &mut scope_local(&mut local, tag).exits;
            if !buf.is_empty() {
                exits.push(',');
                exits.push_str(buf);
            }
            *buf = exits;
        }
        self.schedule_exit_flush();
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
    pub(super) fn schedule_flush(&self) {
        self.wake_flusher(false);
    }

    /// Wakes the exit flusher (as [`Self::schedule_flush`], with the bound [`exit_bound`]).
    pub(super) fn schedule_exit_flush(&self) {
        self.wake_flusher(true);
    }

    fn wake_flusher(&self, exits: bool) {
        let (slot, notify, bound) = if exits {
            (
                &self.inner.exit_flusher,
                &self.inner.exit_notify,
                exit_bound(self.inner.opts.write_behind),
            )
        } else {
            (
                &self.inner.flusher,
                &self.inner.notify,
                self.inner.opts.write_behind,
            )
        };
        let mut f = slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if f.is_none() {
            let Ok(rt) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let weak = Arc::downgrade(&self.inner);
            *f = Some(
                rt.spawn(flusher(weak, Arc::clone(notify), bound, exits))
                    .abort_handle(),
            );
        }
        drop(f);
        notify.notify_one();
    }
}

/// The latest a buffered exit reaches Redis with no script of its scope to carry it: 2 ms, or
/// the write-behind bound if that is shorter. A freed slot stays held for other processes at
/// most this long after the call returned (plus one round trip).
pub(super) fn exit_bound(write_behind: Duration) -> Duration {
    write_behind.min(Duration::from_millis(2))
}

pub(super) fn age_us(now: Duration, at: Duration) -> u64 {
    u64::try_from(now.saturating_sub(at).as_micros()).unwrap_or(u64::MAX)
}

/// `epoch:count:age_us,…` (drains `samples`).
pub(super) fn encode(samples: &mut Vec<Sample>, now: Duration) -> String {
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
