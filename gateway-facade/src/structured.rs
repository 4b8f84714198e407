//! Structured output and reasoning-effort configuration of a chat client (70 Parts A and B).
//!
//! [`StructuredConfig`] holds the strategy, the escalation strategy and the number of re-asks
//! (`PGW_STRUCTURED_MAX_RETRIES`, default 2 on every path); the builder sets them with
//! `structured_strategy`, `escalation_strategy`, `structured_max_retries`, and extends the
//! reasoning capability table with `register_provider`. With the `schemars` feature,
//! `SchemaOf::of` turns a Rust type into a `StructuredSpec`.

use std::fmt;
use std::sync::Arc;

use gateway_ports::StructuredOutputStrategy;
#[cfg(feature = "schemars")]
use gateway_ports::StructuredSpec;

pub use crate::settings::DEFAULT_STRUCTURED_MAX_RETRIES;

/// The structured-output configuration of one chat client.
#[derive(Clone)]
pub struct StructuredConfig {
    /// The round-0 strategy; `None` = the built-in `JsonRepairStrategy` (cargo feature
    /// `structured`).
    pub strategy: Option<Arc<dyn StructuredOutputStrategy>>,
    /// The strategy of every round after a failed one; `None` = unchanged.
    pub escalation: Option<Arc<dyn StructuredOutputStrategy>>,
    /// Re-asks after a reply that does not parse or validate (total rounds = 1 + this).
    pub max_retries: u32,
}

impl Default for StructuredConfig {
    fn default() -> Self {
        Self {
            strategy: None,
            escalation: None,
            max_retries: DEFAULT_STRUCTURED_MAX_RETRIES,
        }
    }
}

impl fmt::Debug for StructuredConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StructuredConfig")
            .field("strategy", &self.strategy.as_ref().map(|s| s.name()))
            .field("escalation", &self.escalation.as_ref().map(|s| s.name()))
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

#[cfg(feature = "structured")]
impl StructuredConfig {
    /// The core ladder options: the configured strategy or the built-in default.
    pub(crate) fn ladder(&self) -> gateway_core::structured::LadderOptions {
        gateway_core::structured::LadderOptions {
            strategy: self
                .strategy
                .clone()
                .unwrap_or_else(gateway_core::structured::default_strategy),
            escalation: self.escalation.clone(),
            max_retries: self.max_retries,
        }
    }
}

/// Builds a [`StructuredSpec`] from a Rust type (cargo feature `schemars`).
///
/// ```
/// # #[cfg(feature = "schemars")] {
/// use polygateway::{SchemaOf, StructuredSpec};
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Answer { city: String, population: u64 }
/// let spec = StructuredSpec::of::<Answer>();
/// assert!(matches!(spec, StructuredSpec::Schema { strict: true, .. }));
/// # }
/// ```
#[cfg(feature = "schemars")]
pub trait SchemaOf {
    /// `Schema { name, schema, strict: true }` with the type's JSON Schema (draft 2020-12) and
    /// its name cut to the `^[A-Za-z0-9_-]{1,64}$` rule (other characters become `_`).
    fn of<T: schemars::JsonSchema>() -> StructuredSpec;
}

#[cfg(feature = "schemars")]
impl SchemaOf for StructuredSpec {
    fn of<T: schemars::JsonSchema>() -> StructuredSpec {
        let schema = schemars::schema_for!(T).to_value();
        let mut name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if name.is_empty() {
            name.push_str("answer");
        }
        StructuredSpec::Schema {
            name,
            schema,
            strict: true,
        }
    }
}
