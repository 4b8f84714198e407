//! Prometheus text metrics of `pgw serve` (`GET /metrics`).
//!
//! Counters and histograms live in one mutex-guarded list (a few hundred series at most: scopes ×
//! sources × error types), searched without allocating on the request path (a label set is
//! copied only when a series is new) and sorted at scrape time; the gauges are read from the
//! clients at scrape time. Labels
//! never carry a token, a tenant's key or content — only scope, source, route, status and the
//! error type name.

use std::fmt::Write as _;
use std::sync::Mutex;

/// Histogram bucket upper bounds, in milliseconds.
pub const BUCKETS_MS: [f64; 14] = [
    1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
];

/// One histogram series.
#[derive(Debug, Clone, Default)]
struct Histogram {
    counts: [u64; BUCKETS_MS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, value_ms: f64) {
        let v = if value_ms.is_finite() && value_ms > 0.0 {
            value_ms
        } else {
            0.0
        };
        for (i, bound) in BUCKETS_MS.iter().enumerate() {
            if v <= *bound {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += v;
    }
}

type Labels = Vec<(&'static str, String)>;

/// One gauge: name, help text, series.
pub type Gauge<'a> = (&'a str, &'a str, Vec<(Labels, f64)>);

#[derive(Debug, Default)]
struct Inner {
    counters: Vec<(&'static str, Labels, f64)>,
    histograms: Vec<(&'static str, Labels, Histogram)>,
}

/// `true` when `labels` equals `pairs` (same order), without allocating.
fn same_labels(labels: &Labels, pairs: &[(&'static str, &str)]) -> bool {
    labels.len() == pairs.len()
        && labels
            .iter()
            .zip(pairs)
            .all(|((k, v), (pk, pv))| k == pk && v == pv)
}

/// The metric registry of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Help text and type of each metric name, in output order.
const HELP: &[(&str, &str, &str)] = &[
    (
        "pgw_http_requests_total",
        "counter",
        "HTTP requests answered, by route and status.",
    ),
    (
        "pgw_calls_total",
        "counter",
        "Governed calls, by scope, winning source and outcome.",
    ),
    (
        "pgw_errors_total",
        "counter",
        "Failed governed calls, by scope and error type.",
    ),
    (
        "pgw_retries_total",
        "counter",
        "Upstream attempts beyond the first that were not hedges.",
    ),
    ("pgw_hedges_total", "counter", "Hedge legs dispatched."),
    (
        "pgw_tokens_total",
        "counter",
        "Tokens, by scope, source and kind (prompt, completion).",
    ),
    (
        "pgw_cost_total",
        "counter",
        "Cost of successful upstream attempts, by scope and source, in the currency of the price table (PGW_PRICING_PATH), priced as the telemetry rows are.",
    ),
    (
        "pgw_cache_hits_total",
        "counter",
        "Calls served from the response cache.",
    ),
    (
        "pgw_call_latency_ms",
        "histogram",
        "Whole governed call latency in milliseconds.",
    ),
    (
        "pgw_ttft_ms",
        "histogram",
        "Time to first token of the winning attempt in milliseconds.",
    ),
];

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn render_labels(out: &mut String, labels: &Labels, extra: Option<(&str, &str)>) {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    if !parts.is_empty() {
        out.push('{');
        out.push_str(&parts.join(","));
        out.push('}');
    }
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the maps inconsistent: keep serving.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `by` to counter `name` with `pairs`.
    pub fn add(&self, name: &'static str, pairs: &[(&'static str, &str)], by: f64) {
        if by <= 0.0 || !by.is_finite() {
            return;
        }
        let mut inner = self.lock();
        match inner
            .counters
            .iter_mut()
            .find(|(n, l, _)| *n == name && same_labels(l, pairs))
        {
            Some((_, _, v)) => *v += by,
            None => inner.counters.push((name, labels(pairs), by)),
        }
    }

    /// Records one observation (ms) in histogram `name`.
    pub fn observe(&self, name: &'static str, pairs: &[(&'static str, &str)], value_ms: f64) {
        let mut inner = self.lock();
        match inner
            .histograms
            .iter_mut()
            .find(|(n, l, _)| *n == name && same_labels(l, pairs))
        {
            Some((_, _, h)) => h.observe(value_ms),
            None => {
                let mut h = Histogram::default();
                h.observe(value_ms);
                inner.histograms.push((name, labels(pairs), h));
            }
        }
    }

    /// The Prometheus text exposition (format 0.0.4), with `gauges` appended
    /// (`name`, help, series).
    pub fn render(&self, gauges: &[Gauge<'_>]) -> String {
        let (mut counters, mut histograms) = {
            let inner = self.lock();
            (inner.counters.clone(), inner.histograms.clone())
        };
        counters.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        histograms.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let mut out = String::new();
        for (name, kind, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (n, l, v) in counters.iter().filter(|(n, _, _)| n == name) {
                out.push_str(n);
                render_labels(&mut out, l, None);
                let _ = writeln!(out, " {v}");
            }
            for (n, l, h) in histograms.iter().filter(|(n, _, _)| n == name) {
                for (i, bound) in BUCKETS_MS.iter().enumerate() {
                    let _ = write!(out, "{n}_bucket");
                    render_labels(&mut out, l, Some(("le", &bound.to_string())));
                    let _ = writeln!(out, " {}", h.counts[i]);
                }
                let _ = write!(out, "{n}_bucket");
                render_labels(&mut out, l, Some(("le", "+Inf")));
                let _ = writeln!(out, " {}", h.count);
                let _ = write!(out, "{n}_sum");
                render_labels(&mut out, l, None);
                let _ = writeln!(out, " {}", h.sum);
                let _ = write!(out, "{n}_count");
                render_labels(&mut out, l, None);
                let _ = writeln!(out, " {}", h.count);
            }
        }
        for (name, help, series) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            for (l, v) in series {
                out.push_str(name);
                render_labels(&mut out, l, None);
                let _ = writeln!(out, " {v}");
            }
        }
        out
    }
}

/// A label set for a gauge series.
pub fn gauge_labels(pairs: &[(&'static str, &str)]) -> Labels {
    labels(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d33_histogram_buckets_are_cumulative_and_labels_escaped() {
        let m = Metrics::default();
        m.observe("pgw_call_latency_ms", &[("scope", "llm")], 7.0);
        m.observe("pgw_call_latency_ms", &[("scope", "llm")], 70_000.0);
        m.add("pgw_errors_total", &[("scope", "a\"b"), ("type", "X")], 1.0);
        let text = m.render(&[]);
        assert!(
            text.contains("pgw_call_latency_ms_bucket{scope=\"llm\",le=\"5\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("pgw_call_latency_ms_bucket{scope=\"llm\",le=\"10\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("pgw_call_latency_ms_bucket{scope=\"llm\",le=\"+Inf\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("pgw_call_latency_ms_count{scope=\"llm\"} 2"),
            "{text}"
        );
        assert!(text.contains("scope=\"a\\\"b\""), "{text}");
    }
}
