//! The in-memory response cache (CT-CACHE-01..07): a bounded map key → (value,
//! `expires_at`) on the injected [`Clock`], least-recently-used eviction, per process.
//!
//! Why not `moka`: it keeps time on its own clock (`quanta`/`Instant`), so TTL could not be
//! driven by the injected `Clock` that every other core component and the contract suite use
//! (the suites never sleep). The map here is small: a hash map plus an ordered index of
//! last-use ticks, both under one `std::sync::Mutex` held for a few operations and never across
//! an await — `get` and `set` are O(log n) and allocation-light.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use gateway_ports::{CacheError, Clock, ResponseCache};
use rustc_hash::FxHashMap;

/// One stored value.
struct Slot {
    value: String,
    expires_at: Duration,
    tick: u64,
}

#[derive(Default)]
struct State {
    map: FxHashMap<String, Slot>,
    /// Last-use tick → key; the first entry is the least recently used.
    order: BTreeMap<u64, String>,
    next_tick: u64,
}

impl State {
    fn touch(&mut self, key: &str) -> Option<&Slot> {
        let tick = self.next_tick;
        let slot = self.map.get_mut(key)?;
        self.next_tick += 1;
        let old = std::mem::replace(&mut slot.tick, tick);
        if let Some(k) = self.order.remove(&old) {
            self.order.insert(tick, k);
        }
        self.map.get(key)
    }

    fn remove(&mut self, key: &str) {
        if let Some(slot) = self.map.remove(key) {
            self.order.remove(&slot.tick);
        }
    }
}

/// The memory backend of the response cache: at most `max_entries` live values,
/// TTL measured on the injected clock (an entry with `expires_at ≤ now` is a miss and is
/// removed), the least recently used entry evicted first when full. `get` counts as a use.
/// Per process: two processes never share entries. `close()` empties it and later operations
/// return `CacheError` (the read and write paths turn that into a miss / skipped write).
pub struct MemoryCache {
    max_entries: usize,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    closed: AtomicBool,
}

impl std::fmt::Debug for MemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCache")
            .field("max_entries", &self.max_entries)
            .field("len", &self.len())
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish()
    }
}

impl MemoryCache {
    /// A cache of at most `max_entries` values (`0` is treated as `1`) on `clock`
    /// (`PGW_CACHE_MEMORY_MAX_ENTRIES`, default 10 000).
    pub fn new(max_entries: usize, clock: Arc<dyn Clock>) -> Self {
        Self {
            max_entries: max_entries.max(1),
            clock,
            state: Mutex::new(State::default()),
            closed: AtomicBool::new(false),
        }
    }

    /// Entries held, live or not yet found expired.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// `true` when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check_open(&self) -> Result<(), CacheError> {
        if self.closed.load(Ordering::Acquire) {
            Err(CacheError::new("memory cache closed"))
        } else {
            Ok(())
        }
    }

    /// [`ResponseCache::get`] without the async wrapper.
    pub fn get_now(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.check_open()?;
        let now = self.clock.monotonic();
        let mut state = self.lock();
        let expired = match state.map.get(key) {
            None => return Ok(None),
            Some(slot) => slot.expires_at <= now,
        };
        if expired {
            state.remove(key);
            return Ok(None);
        }
        Ok(state.touch(key).map(|slot| slot.value.clone()))
    }

    /// [`ResponseCache::set`] without the async wrapper.
    pub fn set_now(&self, key: &str, value: String, ttl: Duration) -> Result<(), CacheError> {
        self.check_open()?;
        let expires_at = self.clock.monotonic().saturating_add(ttl);
        let mut state = self.lock();
        let tick = state.next_tick;
        state.next_tick += 1;
        let previous = state.map.insert(
            key.to_owned(),
            Slot {
                value,
                expires_at,
                tick,
            },
        );
        if let Some(previous) = previous {
            state.order.remove(&previous.tick);
        }
        state.order.insert(tick, key.to_owned());
        while state.map.len() > self.max_entries {
            let Some((_, oldest)) = state.order.pop_first() else {
                break;
            };
            state.map.remove(&oldest);
        }
        Ok(())
    }
}

#[async_trait]
impl ResponseCache for MemoryCache {
    async fn get(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.get_now(key)
    }

    async fn set(&self, key: &str, value: String, ttl: Duration) -> Result<(), CacheError> {
        self.set_now(key, value, ttl)
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let mut state = self.lock();
        state.map.clear();
        state.order.clear();
    }
}
