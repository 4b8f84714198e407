//! Assembly-time configuration errors and warnings.

use std::fmt;

/// An assembly-time configuration error: a stable `code`, the `origin` (the
/// environment key that matched, the settings field or the builder method) and an English
/// message that never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// Stable identifier, e.g. `"hedge.after_ge_min_timeout"`.
    pub code: &'static str,
    /// Env key, settings field or builder method.
    pub origin: String,
    /// English description.
    pub message: String,
}

impl ConfigError {
    /// Builds a configuration error.
    pub fn new(code: &'static str, origin: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            origin: origin.into(),
            message: message.into(),
        }
    }
}

/// An assembly-time warning (carries the source where it has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// Stable identifier, e.g. `"hedge.single_source"`.
    pub code: &'static str,
    /// English description.
    pub message: String,
    /// The source it concerns, if any.
    pub source: Option<String>,
    /// The configuration key it concerns, if one key is at fault (e.g. the unknown key of 20
    /// §2.5), so a strict caller such as `pgw` can turn the warning into a `ConfigError` naming it.
    pub key: Option<String>,
}

impl ConfigWarning {
    /// A warning without a source.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            source: None,
            key: None,
        }
    }

    /// The same warning naming the configuration `key` at fault.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The same warning naming `source`.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}
