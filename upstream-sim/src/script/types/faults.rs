//! Per-request fault injection of a script ([`Faults`]): the probabilities and the answers of
//! each injected failure.
//!
//! Separate from the responses: faults apply on top of whichever response is picked. (The
//! injection itself, with its seeded RNG, is `script::faults`.)

use serde::de::Deserializer;
use serde::{Deserialize, Serialize, de};

/// Per-request fault injection (spec 15 "Faults"). For each scripted request the faults are
/// drawn in table order; the first whose draw falls below its probability applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// RNG seed: the same seed and request order give the same faults.
    #[serde(default)]
    pub seed: u64,
    /// Probability of answering 429 with `Retry-After: retry_after`.
    #[serde(default)]
    pub p_429: f64,
    /// The `Retry-After` value of a 429 fault (a string or a number in JSON); default `"1"`.
    #[serde(default = "default_retry_after", deserialize_with = "string_or_number")]
    pub retry_after: String,
    /// Probability of answering `status_5xx` with a JSON error body.
    #[serde(default)]
    pub p_5xx: f64,
    /// Status of a 5xx fault; default 503.
    #[serde(default = "default_status_5xx")]
    pub status_5xx: u16,
    /// Probability of never sending the status line (`head: hang`).
    #[serde(default)]
    pub p_hang_before_head: f64,
    /// Probability of pausing mid-stream for `stall_ms`.
    #[serde(default)]
    pub p_stall: f64,
    /// Length of a stall, in milliseconds.
    #[serde(default)]
    pub stall_ms: u64,
    /// Probability of ending the stream after half its frames, without finish or `[DONE]`.
    #[serde(default)]
    pub p_truncate: f64,
}

fn default_retry_after() -> String {
    "1".to_owned()
}

fn default_status_5xx() -> u16 {
    503
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(de::Error::custom(format!(
            "`retry_after` must be a string or a number, found {other}"
        ))),
    }
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            seed: 0,
            p_429: 0.0,
            retry_after: default_retry_after(),
            p_5xx: 0.0,
            status_5xx: default_status_5xx(),
            p_hang_before_head: 0.0,
            p_stall: 0.0,
            stall_ms: 0,
            p_truncate: 0.0,
        }
    }
}
