//! Timing of one streamed attempt (40 §7–§8; 60 §10): the progress clock (`ttft_ms`,
//! `max_inter_token_ms`, progress timestamps), the watchdog deadlines (TTFT, inter-token,
//! total) and stall metering (`stall_from_times`).
//!
//! Clock discipline: *measured* instants come from the injected `Clock` port; the
//! instants that *fire* are `tokio::time::Instant`s. Both are read at the same points, so in
//! production (and under a paused runtime with `TokioClock`) they agree.

use std::sync::Arc;
use std::time::Duration;

use gateway_ports::{Clock, SourceConfig};
use tokio::time::Instant;

use crate::attempt::LegSignals;
use crate::classify::LivenessKind;

/// `d` in milliseconds, from whole seconds and nanoseconds, so a round number of µs prints as
/// such (`31.6`, not the `31.599999999999998` of `as_secs_f64() * 1000.0`).
fn duration_ms(d: Duration) -> f64 {
    // u64 seconds → f64 is exact up to 2^53 s, far beyond any watchdog.
    #[allow(clippy::cast_precision_loss, reason = "exact below 2^53 s")]
    let secs = d.as_secs() as f64;
    secs * 1000.0 + f64::from(d.subsec_nanos()) / 1_000_000.0
}

/// `stall_from_times(times, threshold_ms)` of 60 H-51 over the progress timestamps of one
/// attempt (any common origin):
/// 1. fewer than 2 timestamps → `(None, None)` ("cannot observe");
/// 2. every adjacent gap strictly above `threshold_ms` (equal is not a stall) adds its
///    length in ms to the total and 1 to the count;
/// 3. no such gap → `(Some(0.0), Some(0))` ("observed, no stall", H-56: distinct from `None`).
///
/// `stall_ms` is unrounded; only gaps *between* progress events exist here, so the TTFT
/// and the tail are never stalls. Pinned: `[0.0, 0.3, 2.0, 2.1] s`, 1000 →
/// `(≈1700.0, 1)`.
pub fn stall_from_times(times: &[Duration], threshold_ms: u32) -> (Option<f64>, Option<u32>) {
    if times.len() < 2 {
        return (None, None);
    }
    let threshold = f64::from(threshold_ms);
    let mut total_ms = 0.0_f64;
    let mut count = 0_u32;
    for pair in times.windows(2) {
        let gap_ms = duration_ms(pair[1].saturating_sub(pair[0]));
        if gap_ms > threshold {
            total_ms += gap_ms;
            count = count.saturating_add(1);
        }
    }
    if count == 0 {
        (Some(0.0), Some(0))
    } else {
        (Some(total_ms), Some(count))
    }
}

/// The three watchdog budgets of a source: `ttft_timeout_s` or else
/// `timeout_s`; `inter_token_timeout_s` or else `timeout_s`; `timeout_s`. A budget that is not
/// a finite non-negative number of seconds (validation rejects those) disables that
/// watchdog rather than panicking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// TTFT budget, from `started` to the first progress event.
    pub ttft: Option<Duration>,
    /// Inter-token budget, from each progress event to the next (or to the end of stream).
    pub inter_token: Option<Duration>,
    /// Total budget, from `started` to the end of the stream or body.
    pub total: Option<Duration>,
}

impl Budgets {
    /// The budgets of `source`.
    pub fn of(source: &SourceConfig) -> Self {
        let secs = |s: f64| Duration::try_from_secs_f64(s).ok();
        let total = secs(source.timeout_s);
        Self {
            ttft: source.ttft_timeout_s.map_or(total, secs),
            inter_token: source.inter_token_timeout_s.map_or(total, secs),
            total,
        }
    }
}

/// The armed watchdogs of one attempt, as runtime deadlines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watchdogs {
    ttft_at: Option<Instant>,
    inter_token: Option<Duration>,
    total_at: Option<Instant>,
    /// `false` for a non-stream body and a JSON body on a stream: total only.
    streaming: bool,
}

impl Watchdogs {
    /// Watchdogs started at `t0` (the runtime instant of `started`).
    pub(crate) fn start(budgets: Budgets, t0: Instant, streaming: bool) -> Self {
        let at = |d: Option<Duration>| d.and_then(|d| t0.checked_add(d));
        Self {
            ttft_at: at(budgets.ttft),
            inter_token: budgets.inter_token,
            total_at: at(budgets.total),
            streaming,
        }
    }

    /// Switches to the total watchdog only (a JSON body answering a streamed request).
    /// Moves every armed deadline `by` later: time the attempt spent waiting for a slow
    /// streaming consumer is not upstream time.
    pub(crate) fn pause(&mut self, by: Duration) {
        self.ttft_at = self.ttft_at.and_then(|at| at.checked_add(by));
        self.total_at = self.total_at.and_then(|at| at.checked_add(by));
    }

    pub(crate) fn total_only(mut self) -> Self {
        self.streaming = false;
        self
    }

    /// The next deadline and its kind, given the runtime instant of the last progress event
    /// (`None` before the first). When two budgets end at the same instant the kind is `total`.
    /// `None` = no watchdog armed.
    pub(crate) fn next(&self, last_progress: Option<Instant>) -> Option<(Instant, LivenessKind)> {
        let phase = if !self.streaming {
            None
        } else {
            match last_progress {
                None => self.ttft_at.map(|at| (at, LivenessKind::Ttft)),
                Some(last) => self
                    .inter_token
                    .and_then(|d| last.checked_add(d))
                    .map(|at| (at, LivenessKind::InterToken)),
            }
        };
        match (self.total_at, phase) {
            (Some(total), Some((at, kind))) if at < total => Some((at, kind)),
            (Some(total), _) => Some((total, LivenessKind::Total)),
            (None, phase) => phase,
        }
    }
}

/// Sleeps until the deadline, or forever when there is none.
pub(crate) async fn expiry(deadline: Option<(Instant, LivenessKind)>) -> LivenessKind {
    match deadline {
        Some((at, kind)) => {
            tokio::time::sleep_until(at).await;
            kind
        }
        None => std::future::pending().await,
    }
}

/// Progress bookkeeping of one streamed attempt.
pub(crate) struct ProgressClock {
    clock: Arc<dyn Clock>,
    started: Duration,
    times: Vec<Duration>,
    ttft_ms: Option<f64>,
    max_gap_ms: f64,
    last_runtime: Option<Instant>,
}

impl ProgressClock {
    /// `started` is the `Clock` reading taken immediately before the transport was invoked.
    pub(crate) fn new(clock: Arc<dyn Clock>, started: Duration) -> Self {
        Self {
            clock,
            started,
            times: Vec::new(),
            ttft_ms: None,
            max_gap_ms: 0.0,
            last_runtime: None,
        }
    }

    /// One progress event: read the clock, append the timestamp, bump the progress
    /// counter (first-token and content signal in one), set `ttft_ms` on the first event,
    /// else widen the largest gap; restart the inter-token interval.
    pub(crate) fn progress(&mut self, signals: Option<&LegSignals>) {
        let t = self.clock.monotonic();
        if let Some(signals) = signals {
            signals.progress();
        }
        match (self.ttft_ms, self.times.last()) {
            (Some(_), Some(last)) => {
                let gap = duration_ms(t.saturating_sub(*last));
                if gap > self.max_gap_ms {
                    self.max_gap_ms = gap;
                }
            }
            _ => self.ttft_ms = Some(duration_ms(t.saturating_sub(self.started))),
        }
        self.times.push(t);
        self.last_runtime = Some(Instant::now());
    }

    /// The runtime instant of the last progress event (the inter-token interval's start).
    /// Moves the last progress instant `by` later (consumer wait).
    pub(crate) fn pause(&mut self, by: Duration) {
        self.last_runtime = self.last_runtime.and_then(|at| at.checked_add(by));
    }

    pub(crate) fn last_runtime(&self) -> Option<Instant> {
        self.last_runtime
    }

    /// `ttft_ms` (None without progress) and `max_inter_token_ms` (`Some` iff `ttft_ms` is;
    /// `0.0` with exactly one progress event), unrounded.
    pub(crate) fn ttft_and_gap(&self) -> (Option<f64>, Option<f64>) {
        (self.ttft_ms, self.ttft_ms.map(|_| self.max_gap_ms))
    }

    /// The progress timestamps, for stall metering.
    pub(crate) fn times(&self) -> &[Duration] {
        &self.times
    }
}
