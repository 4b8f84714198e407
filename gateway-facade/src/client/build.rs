//! Assembly of a [`GatewayClient`] from a builder: [`GatewayClientBuilder::build`], the
//! transport of a settings path and the key an assembly error names.
//!
//! Separate from the client's call methods: this runs once, at construction.

#[cfg(feature = "openai")]
use std::sync::Arc;

use gateway_core::cache::namespace_problem;
use gateway_ports::ConfigError;

#[cfg(feature = "openai")]
use crate::assembly::ClientPlan;
use crate::assembly::GatewayClientBuilder;
use crate::wiring::{Assembly, GovernanceComponents};

use super::{ChatExtras, GatewayClient};

/// Where a settings-path assembly error names a transport field.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyStyle {
    /// `{SCOPE}__{PROVIDER}__{N}__{FIELD}` (path 1).
    Env,
    /// `GatewaySettings.sources[{name}].{field}` (path 2).
    Settings,
}

/// The key naming a transport-build error of `source` (F9).
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn transport_key(
    style: KeyStyle,
    scope: &str,
    source: &str,
    field: Option<&str>,
) -> String {
    match style {
        KeyStyle::Env => {
            let (provider, n) = source.rsplit_once('_').unwrap_or((source, "1"));
            let base = format!(
                "{}__{}__{}",
                scope.to_ascii_uppercase(),
                provider.to_ascii_uppercase(),
                n
            );
            match field {
                Some(f) => format!("{base}__{f}"),
                None => base,
            }
        }
        KeyStyle::Settings => match field {
            Some(f) => format!(
                "GatewaySettings.sources[{source}].{}",
                f.to_ascii_lowercase()
            ),
            None => format!("GatewaySettings.sources[{source}]"),
        },
    }
}

/// The OpenAI transport of a settings path (feature `openai`; F9 errors name the key).
#[cfg(feature = "openai")]
pub(crate) fn openai_transport(
    plan: &ClientPlan,
    style: KeyStyle,
) -> Result<Arc<adapter_openai::OpenAiTransport>, ConfigError> {
    adapter_openai::OpenAiTransport::new(&plan.sources, adapter_openai::TransportOptions::default())
        .map(Arc::new)
        .map_err(|e| {
            e.to_config_error(transport_key(
                style,
                &plan.scope,
                e.source_name(),
                e.field(),
            ))
        })
}

#[cfg(not(feature = "openai"))]
pub(crate) fn no_transport(origin: &str) -> ConfigError {
    ConfigError::new(
        "backend.unavailable",
        origin,
        "the OpenAI transport is not in this build: cargo feature `openai` (off); use the builder with a transport",
    )
}
impl GatewayClientBuilder {
    /// Stage F and assembly of the client: the injected components are used and
    /// never closed by the client; missing ones default to the in-memory limiter and breaker
    /// (owned), the AIMD pacer, the selector of `selector(..)`, the tokio clock; without an
    /// injected recorder there is no telemetry.
    ///
    /// Errors: the `ConfigError`s of [`GatewayClientBuilder::plan`]; `runtime.missing` outside
    /// a tokio runtime.
    pub fn build(self) -> Result<GatewayClient, ConfigError> {
        self.build_with(GovernanceComponents::default())
    }

    /// [`build`](Self::build) with an injected pacer, selector or jitter source.
    pub fn build_with(
        self,
        governance: GovernanceComponents,
    ) -> Result<GatewayClient, ConfigError> {
        let extras = ChatExtras {
            structured: self.structured.clone(),
            profiles: self.profiles.clone(),
        };
        let (plan, transport, components) = self.plan()?;
        for (field, value) in [
            ("cache_namespace", &components.cache_options.namespace),
            ("cache_salt", &components.cache_options.salt),
        ] {
            if let Some(problem) = value.as_deref().and_then(namespace_problem) {
                return Err(ConfigError::new(
                    "settings.backend",
                    format!("GatewayClientBuilder::{field}"),
                    format!("{field} {problem}"),
                ));
            }
        }
        if components.cache_options.ttl.is_some_and(|t| t.is_zero()) {
            return Err(ConfigError::new(
                "settings.backend",
                "GatewayClientBuilder::cache_ttl",
                "cache_ttl must be greater than zero",
            ));
        }
        let assembly = Assembly::from_injected(
            plan,
            components,
            governance,
            true,
            "GatewayClientBuilder::build",
        );
        GatewayClient::start(assembly, transport, extras, KeyStyle::Settings)
    }
}
