//! PolyGateway — the crate applications depend on (library name `polygateway`).
//!
//! This crate assembles the governed clients from configuration (20-config.md, 05 ):
//! [`GatewaySettings`] / [`EmbeddingSettings`] / [`OcrSettings`] parsed from the environment
//! (`from_env`, which reads the process environment once and never a `.env` file) or from a map
//! (`from_env_map`), or built as structs; the builders [`GatewayClientBuilder`] and
//! [`EmbeddingClientBuilder`] for injected components. All three paths run the same guard
//! stages A–F and end in a [`ClientPlan`]; invalid values are a [`ConfigError`] with a stable
//! `code` and the exact key, doubtful ones a [`ConfigWarning`] returned as data and logged once.
//!
//! The client types (`GatewayClient`, `EmbeddingClient`) are built from a plan once the
//! streaming executor exists (issue 7, client part).

pub mod assembly;
pub mod settings;

pub use assembly::{
    ClientPlan, EmbeddingClientBuilder, EmbeddingPlan, EmbeddingSettingsRef, GatewayClientBuilder,
    InjectedComponents, SettingsRef, log_warnings,
};
pub use gateway_ports::{ConfigError, ConfigWarning};
pub use settings::{
    CacheBackend, EmbeddingSettings, EnvMap, GatewaySettings, OcrSettings, SchemaMode,
    StateBackend, TelemetryBackend, ValidatedEmbeddingSettings, ValidatedSettings,
};

/// The crate version (95 CF-024).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
