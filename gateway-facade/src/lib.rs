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
//! The clients: [`GatewayClient`] (chat, 10 §10) and [`EmbeddingClient`] (90 Part E), both
//! `Clone + Send + Sync` wrappers of the core's `Governor` (05 ), with
//! [`ErrorReport`] / [`ConfigErrorReport`] for the JSON shape of errors (05 R-50) and
//! [`gather_bounded`] for bounded fan-out. The five-minute guide is `docs/guide.md`.

pub mod assembly;
mod client;
mod embedding;
mod report;
pub mod settings;
mod status;
mod wiring;

pub use client::{
    CHAT_DEADLINE_ORIGIN, ChatInput, ChatOptions, ChatOutcome, GatewayClient, META_MAX_ENTRIES,
    META_MAX_STR_CHARS, TENANT_MAX_CHARS,
};
pub use embedding::{EMBED_DEADLINE_ORIGIN, EmbeddingClient, gather_bounded};
pub use report::{ConfigErrorReport, ErrorReport, ErrorSummary};
pub use status::SourceStatus;
pub use wiring::GovernanceComponents;

#[cfg(feature = "openai")]
pub use adapter_openai::{OpenAiTransport, ProbeAnswer, TransportOptions};
pub use gateway_core::telemetry::telemetry_schema_sql;
pub use gateway_ports::{
    CachePolicy, CallStats, ChatRequest, EFFORT_ORDER, Effort, EmbedRequest, EmbeddingResponse,
    GatewayError, JsonObject, LlmResponse, Meta, MetaValue, OpenAiChatCompletion, ResponseMode,
    Secret, SourceConfig, StreamEnd, TelemetryStatus, Usage, UsageSource,
};

pub use assembly::{
    ClientPlan, EmbeddingClientBuilder, EmbeddingPlan, EmbeddingSettingsRef, GatewayClientBuilder,
    InjectedComponents, SettingsRef, log_warnings,
};
pub use gateway_ports::{ConfigError, ConfigWarning};
pub use settings::{
    CacheBackend, EmbeddingSettings, EnvMap, GatewaySettings, OcrSettings, SOURCE_FIELDS,
    SchemaMode, StateBackend, TelemetryBackend, ValidatedEmbeddingSettings, ValidatedSettings,
};

/// The crate version (95 CF-024).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
