//! The production chat transport of a client: which key a transport is built for, and the
//! OpenAI-compatible transport or the placeholder when a source has none.

#[cfg(feature = "openai")]
use std::sync::Arc;

use gateway_ports::ConfigError;

#[cfg(feature = "openai")]
use crate::assembly::ClientPlan;

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
