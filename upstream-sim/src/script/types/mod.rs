//! Script types of format version 1 (spec 15 "Script (JSON)") and their strict JSON parser.
//!
//! Every struct rejects unknown fields, so a typo in a fixture fails loudly instead of silently
//! falling back to a default. The `version` field is read before anything else so that a script
//! of another version gets [`ScriptError::UnsupportedVersion`], not a confusing field error.

use serde::{Deserialize, Serialize};

mod completion;
mod faults;
mod framing;
mod ocr;
mod response;

pub use completion::{Completion, Embedding, ReasoningField, ToolCall, UsageFrame, UsageSpec};
pub use faults::Faults;
pub use framing::{End, Framing, Head, RawChunk};
pub use ocr::{Ocr, OcrArchive, OcrLocation};
pub use response::{Headers, Response};

/// The only script format version this crate reads and writes (spec 15).
pub const SCRIPT_VERSION: u32 = 1;

/// Why a script was refused. Messages name the offending field (`responses[2].status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The top-level field `version` is absent.
    #[error("script field `version` is missing; this simulator reads version 1")]
    MissingVersion,
    /// The top-level field `version` is present but is not `1`.
    #[error("script field `version` is {found}; this simulator reads only version 1")]
    UnsupportedVersion {
        /// The value found, as JSON text.
        found: String,
    },
    /// The text is not valid JSON or does not fit the format (unknown field, wrong type, …);
    /// the message is serde's, with line and column.
    #[error("invalid script: {message}")]
    Json {
        /// serde_json's description of the problem.
        message: String,
    },
    /// A value is well-typed but out of its domain (probability above 1, two body kinds, …).
    #[error("script field `{field}` is invalid: {reason}")]
    Invalid {
        /// Path of the field, e.g. `responses[0].completion.chunks`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ScriptError {
    fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// A whole script: the responses, how they are picked, and optional load faults (spec 15).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Format version; must be [`SCRIPT_VERSION`] (checked by [`Script::validate`]).
    pub version: u32,
    /// How a response is picked among those that match the request; default `sequence`.
    #[serde(default)]
    pub order: Order,
    /// The scripted responses, in script order.
    pub responses: Vec<Response>,
    /// Per-request fault injection for load runs; absent means no faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<Faults>,
    /// Keep-alive idle timeout in milliseconds (case 041): a request that arrives on
    /// a kept-alive connection which stayed idle at least this long is dropped unanswered and
    /// the connection closed — the race a client sees when it reuses a pooled connection the
    /// server has just closed. The request is neither recorded nor counted (the server "never
    /// saw it"). `0` drops every request on a reused connection. Absent: no timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_idle_ms: Option<u64>,
}

impl Script {
    /// A version-1 script with `order: sequence`, no faults and these responses.
    pub fn new(responses: Vec<Response>) -> Self {
        Self {
            version: SCRIPT_VERSION,
            order: Order::Sequence,
            responses,
            faults: None,
            keep_alive_idle_ms: None,
        }
    }

    /// Sets `order` (builder style).
    #[must_use]
    pub fn with_order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Sets `faults` (builder style).
    #[must_use]
    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Parses and validates a script from JSON text.
    ///
    /// Errors: [`ScriptError::MissingVersion`] / [`ScriptError::UnsupportedVersion`] when the
    /// `version` field is absent or not 1 (checked before the rest of the text is interpreted),
    /// [`ScriptError::Json`] for syntax errors, unknown fields and wrong types,
    /// [`ScriptError::Invalid`] for out-of-domain values.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        #[derive(Deserialize)]
        struct VersionProbe {
            version: Option<serde_json::Value>,
        }
        let probe: VersionProbe = serde_json::from_str(text).map_err(|e| ScriptError::Json {
            message: e.to_string(),
        })?;
        match probe.version {
            None => return Err(ScriptError::MissingVersion),
            Some(v) if v.as_u64() == Some(u64::from(SCRIPT_VERSION)) => {}
            Some(v) => {
                return Err(ScriptError::UnsupportedVersion {
                    found: v.to_string(),
                });
            }
        }
        let script: Script = serde_json::from_str(text).map_err(|e| ScriptError::Json {
            message: e.to_string(),
        })?;
        script.validate()?;
        Ok(script)
    }

    /// Serialises the script to its JSON form (the list form is used for `headers`).
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks the invariants serde cannot express: the version, one body kind per response,
    /// `completion.chunks >= 1`, `embedding.dim <= 65 536`, statuses in 100..=999, probabilities
    /// in [0, 1].
    pub fn validate(&self) -> Result<(), ScriptError> {
        if self.version != SCRIPT_VERSION {
            return Err(ScriptError::UnsupportedVersion {
                found: self.version.to_string(),
            });
        }
        for (i, r) in self.responses.iter().enumerate() {
            let at = |f: &str| format!("responses[{i}].{f}");
            if !(100..=999).contains(&r.status) {
                return Err(ScriptError::invalid(at("status"), "must be in 100..=999"));
            }
            let kinds = usize::from(r.chunks.is_some())
                + usize::from(r.completion.is_some())
                + usize::from(r.embedding.is_some())
                + usize::from(r.ocr.is_some());
            if kinds > 1 {
                return Err(ScriptError::invalid(
                    format!("responses[{i}]"),
                    "`chunks`, `completion`, `embedding` and `ocr` are mutually exclusive",
                ));
            }
            if let Some(o) = &r.ocr
                && !(100..=999).contains(&o.download_status)
            {
                return Err(ScriptError::invalid(
                    at("ocr.download_status"),
                    "must be in 100..=999",
                ));
            }
            if let Some(c) = &r.completion
                && c.chunks == 0
            {
                return Err(ScriptError::invalid(
                    at("completion.chunks"),
                    "must be >= 1",
                ));
            }
            if let Some(e) = &r.embedding
                && e.dim > MAX_EMBEDDING_DIM
            {
                return Err(ScriptError::invalid(
                    at("embedding.dim"),
                    format!("must be <= {MAX_EMBEDDING_DIM}"),
                ));
            }
            if let Some(headers) = &r.headers {
                for (name, value) in &headers.0 {
                    if name.is_empty() || name.bytes().any(|b| !is_token_byte(b)) {
                        return Err(ScriptError::invalid(
                            at("headers"),
                            format!("`{name}` is not a valid header name"),
                        ));
                    }
                    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                        return Err(ScriptError::invalid(
                            at("headers"),
                            format!("the value of `{name}` contains CR or LF"),
                        ));
                    }
                }
            }
        }
        if let Some(f) = &self.faults {
            for (name, p) in [
                ("p_429", f.p_429),
                ("p_5xx", f.p_5xx),
                ("p_hang_before_head", f.p_hang_before_head),
                ("p_stall", f.p_stall),
                ("p_truncate", f.p_truncate),
            ] {
                if !(0.0..=1.0).contains(&p) {
                    return Err(ScriptError::invalid(
                        format!("faults.{name}"),
                        "must be a probability in [0, 1]",
                    ));
                }
            }
            if !(100..=999).contains(&f.status_5xx) {
                return Err(ScriptError::invalid(
                    "faults.status_5xx",
                    "must be in 100..=999",
                ));
            }
            if f.retry_after.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(ScriptError::invalid(
                    "faults.retry_after",
                    "contains CR or LF",
                ));
            }
        }
        Ok(())
    }
}

/// Largest `embedding.dim` a script may ask for: 65 536 numbers per vector (real models use at
/// most a few thousand). A larger value would make every embeddings answer gigabytes long.
pub const MAX_EMBEDDING_DIM: u32 = 65_536;

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// How a response is picked among those matching a request (spec 15 `order`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The n-th matching request gets the n-th matching response; the last one repeats.
    #[default]
    Sequence,
    /// Like `sequence`, but wraps around to the first response.
    Cycle,
    /// The first matching response always wins (no counter).
    ByModel,
}

/// A response's request filter: every field given must equal the request's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Request path; compared with an optional leading `/v1` removed on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The request body's `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}
