//! The side-by-side summary of the naive and governed runs: percentiles, error counts, the
//! [`Summary`] / [`NaiveSummary`] figures and their printed lines.
//!
//! Separate from the run: pure arithmetic and formatting over the collected facts.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::demo_args::DemoArgs;
use crate::out;

use super::readback::TelemetryTotals;
use super::{CallFacts, Phase};

/// p50 / p99 of a sample (nearest rank); `None` fields for an empty sample.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Percentiles {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

pub(super) fn percentiles(mut values: Vec<f64>) -> Percentiles {
    values.sort_by(f64::total_cmp);
    let at = |p: f64| -> Option<f64> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let rank = (p / 100.0 * n).ceil().max(1.0) as usize;
        values.get(rank.min(values.len()) - 1).copied()
    };
    Percentiles {
        p50: at(50.0),
        p99: at(99.0),
    }
}
/// The naive run's figures, for the side-by-side comparison.
#[derive(Debug, Clone, Serialize)]
pub struct NaiveSummary {
    /// Wall time of the naive workload in seconds.
    pub elapsed_s: f64,
    /// Calls that returned a response.
    pub succeeded: u64,
    /// Calls that returned an error.
    pub failed: u64,
    /// Failed calls by error type.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Latency over all calls (failed calls: their wall time).
    pub latency_ms: Percentiles,
    /// TTFT over successful streams.
    pub ttft_ms: Percentiles,
    /// Σ cost from the naive telemetry file.
    pub cost: Option<f64>,
    /// The naive run's telemetry file.
    pub telemetry_path: String,
}

fn errors_by_type(facts: &[CallFacts]) -> BTreeMap<String, u64> {
    let mut errors = BTreeMap::new();
    for f in facts {
        if let Some(t) = f.error_type {
            *errors.entry(t.to_owned()).or_insert(0u64) += 1;
        }
    }
    errors
}

pub(super) fn summarize_naive(
    facts: &[CallFacts],
    elapsed_s: f64,
    telemetry_path: &std::path::Path,
    totals: &TelemetryTotals,
) -> NaiveSummary {
    let failed = facts.iter().filter(|f| f.error_type.is_some()).count() as u64;
    NaiveSummary {
        elapsed_s,
        succeeded: facts.len() as u64 - failed,
        failed,
        errors_by_type: errors_by_type(facts),
        latency_ms: percentiles(facts.iter().map(|f| f.latency_ms as f64).collect()),
        ttft_ms: percentiles(facts.iter().filter_map(|f| f.ttft_ms).collect()),
        cost: totals.cost,
        telemetry_path: telemetry_path.to_string_lossy().into_owned(),
    }
}

/// The R-55 summary of the governed run, with the naive run beside it (the `--json` object
/// without `schema_version`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Calls made.
    pub calls: u32,
    /// Concurrency.
    pub concurrency: u32,
    /// Fault seed.
    pub seed: u64,
    /// Wall time of the workload in seconds.
    pub elapsed_s: f64,
    /// Calls that returned a response.
    pub succeeded: u64,
    /// Calls that returned an error.
    pub failed: u64,
    /// Failed calls by error type.
    pub errors_by_type: BTreeMap<String, u64>,
    /// Σ upstream requests over all calls.
    pub attempts: u64,
    /// Σ (attempts − 1 − hedges) over all calls.
    pub retries: u64,
    /// Σ hedges.
    pub hedges_sent: u64,
    /// Calls won by the hedge leg.
    pub hedges_won: u64,
    /// Calls served from the response cache (no upstream request).
    pub cache_hits: u64,
    /// Breaker opens per source (`sources_status()`).
    pub breaker_opens: BTreeMap<String, u32>,
    /// `total_latency_ms` over all calls (failed calls: their wall time).
    pub latency_ms: Percentiles,
    /// TTFT over successful streams.
    pub ttft_ms: Percentiles,
    /// Σ tokens from the telemetry file.
    pub tokens: Value,
    /// Σ cost from the telemetry file.
    pub cost: Option<f64>,
    /// The telemetry file and the rows check.
    pub telemetry: Value,
    /// The same batch sent naively (one source per call, one attempt, no hedging, no cache).
    pub naive: NaiveSummary,
}

pub(super) fn summarize(
    args: &DemoArgs,
    governed: &Phase,
    telemetry_path: &std::path::Path,
    naive: NaiveSummary,
) -> (Summary, bool) {
    let (facts, elapsed_s, totals) = (&governed.facts, governed.elapsed_s, &governed.totals);
    let breaker_opens = governed.breaker_opens.clone();
    let errors_by_type = errors_by_type(facts);
    let failed = facts.iter().filter(|f| f.error_type.is_some()).count() as u64;
    let attempts: u64 = facts.iter().map(|f| u64::from(f.attempts)).sum();
    let retries: u64 = facts
        .iter()
        .map(|f| u64::from(f.attempts.saturating_sub(1).saturating_sub(f.hedges)))
        .sum();
    let cache_hits = facts.iter().filter(|f| f.cache_hit).count() as u64;
    let expected_rows = attempts + failed + cache_hits;
    let holds = totals.rows == expected_rows;
    let summary = Summary {
        calls: args.calls,
        concurrency: args.concurrency,
        seed: args.seed,
        elapsed_s,
        succeeded: facts.len() as u64 - failed,
        failed,
        errors_by_type,
        attempts,
        retries,
        hedges_sent: facts.iter().map(|f| u64::from(f.hedges)).sum(),
        hedges_won: facts.iter().filter(|f| f.hedge_won).count() as u64,
        cache_hits,
        breaker_opens,
        latency_ms: percentiles(facts.iter().map(|f| f.latency_ms as f64).collect()),
        ttft_ms: percentiles(facts.iter().filter_map(|f| f.ttft_ms).collect()),
        tokens: json!({
            "prompt": totals.prompt_tokens,
            "completion": totals.completion_tokens,
            "total": totals.prompt_tokens + totals.completion_tokens,
        }),
        cost: totals.cost,
        telemetry: json!({
            "path": telemetry_path.to_string_lossy(),
            "rows": totals.rows,
            "attempts": attempts,
            "failed_calls": failed,
            "cache_hits": cache_hits,
            "check": "rows = attempts + failed calls + cache hits",
            "check_holds": holds,
        }),
        naive,
    };
    (summary, holds)
}

fn fmt_ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

fn fmt_cost(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |c| format!("{c:.6}"))
}

fn fmt_errors(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        "none".to_owned()
    } else {
        errors
            .iter()
            .map(|(t, n)| format!("{t} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The summary lines: the side-by-side table, then the governed run's details.
fn summary_lines(s: &Summary, holds: bool) -> Vec<String> {
    let n = &s.naive;
    let row = |label: &str, naive: String, governed: String| {
        format!("  {label:<18} {naive:<16} {governed}")
    };
    let opens = s
        .breaker_opens
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    vec![
        format!(
            "pgw demo: {} calls at concurrency {} (seed {}), sent naively then governed",
            s.calls, s.concurrency, s.seed
        ),
        row("", "naive".into(), "governed".into()),
        row(
            "succeeded",
            format!("{}/{}", n.succeeded, s.calls),
            format!("{}/{}", s.succeeded, s.calls),
        ),
        row(
            "latency p50 ms",
            fmt_ms(n.latency_ms.p50),
            fmt_ms(s.latency_ms.p50),
        ),
        row(
            "latency p99 ms",
            fmt_ms(n.latency_ms.p99),
            fmt_ms(s.latency_ms.p99),
        ),
        row("TTFT p50 ms", fmt_ms(n.ttft_ms.p50), fmt_ms(s.ttft_ms.p50)),
        row("TTFT p99 ms", fmt_ms(n.ttft_ms.p99), fmt_ms(s.ttft_ms.p99)),
        row("cost", fmt_cost(n.cost), fmt_cost(s.cost)),
        row(
            "wall time s",
            format!("{:.2}", n.elapsed_s),
            format!("{:.2}", s.elapsed_s),
        ),
        "  naive: one source per call in turn, one attempt, no hedging, no breaker, no cache"
            .to_owned(),
        format!("  naive errors       {}", fmt_errors(&n.errors_by_type)),
        "governed run:".to_owned(),
        format!("  errors by type   {}", fmt_errors(&s.errors_by_type)),
        format!("  retries          {}", s.retries),
        format!(
            "  hedges           sent {}, won {}",
            s.hedges_sent, s.hedges_won
        ),
        format!("  cache hits       {}", s.cache_hits),
        format!(
            "  breaker opens    {}",
            if opens.is_empty() { "none" } else { &opens }
        ),
        format!(
            "  tokens           prompt {}, completion {}",
            s.tokens["prompt"], s.tokens["completion"]
        ),
        format!(
            "  telemetry        {} (naive: {})",
            s.telemetry["path"].as_str().unwrap_or_default(),
            n.telemetry_path
        ),
        format!(
            "  check            rows = attempts + failed calls + cache hits: {} = {} + {} + {} {}",
            s.telemetry["rows"],
            s.attempts,
            s.failed,
            s.cache_hits,
            if holds { "(holds)" } else { "(FAILS)" }
        ),
    ]
}

pub(super) fn print_summary(s: &Summary, holds: bool) {
    for line in summary_lines(s, holds) {
        out::stdout_line(&line);
    }
}
