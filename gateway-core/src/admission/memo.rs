//! The cooldown memo ([`CooldownMemo`]): per-source "not before" instants the admission
//! pipeline checks before the breaker gate.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use gateway_ports::Clock;
use rustc_hash::FxHashMap;

use crate::backoff::seconds_to_duration_saturating;

/// `SourceCooldownMemo`: a process-local map `source → cooling_until` on the
/// injected clock, written when the breaker denies with a remaining cooldown > 0, expiring by
/// itself; it never extends the cooldown the breaker reported.
pub struct CooldownMemo {
    clock: Arc<dyn Clock>,
    until: Mutex<FxHashMap<String, Duration>>,
}

impl fmt::Debug for CooldownMemo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CooldownMemo").finish_non_exhaustive()
    }
}

impl CooldownMemo {
    /// An empty memo reading `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            until: Mutex::new(FxHashMap::default()),
        }
    }

    /// Remaining cooldown of `source` in seconds if the memo keeps it out now.
    pub fn remaining_s(&self, source: &str) -> Option<f64> {
        let mut map = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        if map.is_empty() {
            return None; // the common case: no clock read (05 R-56)
        }
        let now = self.clock.monotonic();
        match map.get(source) {
            Some(until) if *until > now => Some((*until - now).as_secs_f64()),
            Some(_) => {
                map.remove(source);
                None
            }
            None => None,
        }
    }

    /// Notes a breaker denial's remaining cooldown; values ≤ 0 or non-finite are ignored
    /// (a half-open denial reports 0.0).
    pub fn note(&self, source: &str, retry_after_s: Option<f64>) {
        let Some(s) = retry_after_s.filter(|s| s.is_finite() && *s > 0.0) else {
            return;
        };
        let until = self
            .clock
            .monotonic()
            .saturating_add(seconds_to_duration_saturating(s));
        self.until
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(source.to_owned(), until);
    }
}
