//! PolyGateway — the crate applications depend on (library name `polygateway`).
//!
//! This crate assembles the governed clients from configuration (`docs/configuration.md`):
//! [`GatewaySettings`] / [`EmbeddingSettings`] / [`OcrSettings`] parsed from the environment
//! (`from_env`, which reads the process environment once and never a `.env` file) or from a map
//! (`from_env_map`), or built as structs; the builders [`GatewayClientBuilder`] and
//! [`EmbeddingClientBuilder`] for injected components. All three paths run the same guard
//! stages A–F and end in a [`ClientPlan`]; invalid values are a [`ConfigError`] with a stable
//! `code` and the exact key, doubtful ones a [`ConfigWarning`] returned as data and logged once.
//!
//! The clients: [`GatewayClient`] (chat) and [`EmbeddingClient`], both
//! `Clone + Send + Sync` wrappers of the core's `Governor`, with
//! [`ErrorReport`] / [`ConfigErrorReport`] for the JSON shape of errors and
//! [`gather_bounded`] for bounded fan-out. The five-minute guide is `docs/guide.md`.
//!
//! `polygateway` is the only crate of ours an application or a backend author names:
//! [`ports`] re-exports the traits a custom component implements (and the types they speak),
//! the policy types the builders take are at the root, and the optional `contract` cargo
//! feature exposes the per-port contract suites as `contract` (see `docs/adapters.md`).

mod assembly;
mod client;
mod embedding;
mod ocr;
mod report;
mod settings;
mod status;
mod stream;
mod structured;
mod wiring;

/// The ports (SPI) a custom backend implements or a caller injects through
/// [`GatewayClientBuilder`]: rate limiter and its permit, circuit breaker, response cache,
/// telemetry recorder, chat and embedding transports, and the clock — with every domain,
/// error and telemetry type they use (the whole `gateway-ports` crate).
pub mod ports {
    pub use gateway_ports::*;
}

/// The per-port contract suites (`limiter_contract!`, `breaker_contract!`,
/// `telemetry_contract!`, …) a backend author runs against an implementation, from one
/// dev-dependency: `polygateway = { version = "…", features = ["contract"] }`.
/// See `docs/adapters.md`.
#[cfg(feature = "contract")]
pub use contract_tests as contract;

pub use gateway_ports::{
    BreakerConfig, BreakerState, ChatTransport, CircuitBreaker, Clock, EmbeddingTransport, Permit,
    RateLimiter, ResponseCache, RetryPolicy, SelectorKind, TelemetryRecorder, WaitPolicy,
};

/// The tenant-prefixed namespace helper and the in-process cache backend (see docs/cache.md).
pub use gateway_core::cache::{CacheNamespace, MemoryCache};

pub use client::{
    CHAT_DEADLINE_ORIGIN, ChatInput, ChatOptions, ChatOutcome, GatewayClient, META_MAX_ENTRIES,
    META_MAX_STR_CHARS, TENANT_MAX_CHARS,
};
pub use embedding::{EMBED_DEADLINE_ORIGIN, EmbeddingClient, gather_bounded};
pub use ocr::{OCR_LAYOUT_DEADLINE_ORIGIN, OCR_TEXT_DEADLINE_ORIGIN, OcrClient};
pub use report::{ConfigErrorReport, ErrorReport, ErrorSummary};
pub use status::SourceStatus;
pub use stream::{ChatStream, StreamDelta, StreamEvent, StreamOptions, ToolCallFragment};
pub use wiring::GovernanceComponents;

pub use gateway_core::effort::{
    CapabilityEntry, Evidence, EvidenceKind, ThinkingWire, parse_effort,
};
#[cfg(feature = "structured")]
pub use gateway_core::structured::{JsonRepairStrategy, JsonSchemaStrategy};
pub use gateway_core::thinking::{ProviderProfile, ProviderRegistry};
pub use gateway_ports::{StructuredFailure, StructuredOutputStrategy, StructuredSpec};
#[cfg(feature = "schemars")]
pub use structured::SchemaOf;
pub use structured::{DEFAULT_STRUCTURED_MAX_RETRIES, StructuredConfig};

#[cfg(feature = "openai")]
pub use adapter_openai::{OpenAiTransport, ProbeAnswer, TransportOptions};
pub use gateway_ports::schema::telemetry_schema_sql;
pub use gateway_ports::{
    CachePolicy, CallStats, ChatRequest, EFFORT_ORDER, Effort, EmbedRequest, EmbeddingResponse,
    GatewayError, JsonObject, LlmResponse, Meta, MetaValue, OpenAiChatCompletion, ResponseMode,
    Secret, SourceConfig, StreamEnd, TelemetryStatus, Usage, UsageSource,
};

#[cfg(feature = "monkeyocr")]
pub use adapter_monkeyocr::MonkeyOcrTransport;
pub use assembly::MIN_PACER_CEILING;
pub use assembly::{
    ClientPlan, EmbeddingClientBuilder, EmbeddingPlan, EmbeddingSettingsRef, GatewayClientBuilder,
    InjectedComponents, OcrClientBuilder, SettingsRef, log_warnings, ocr_plan_from_validated,
};
/// The error payloads and vocabulary a caller matches on (see [`GatewayError`]).
pub use gateway_ports::{
    AttemptError, AttemptFailure, CallFailure, Category, DeadlineExceededDetails, FailureReason,
    InvalidArgumentDetails, PartialOutput, ReasonCode, ResultInvalidDetails, ScopeReason,
    SourceNotConfiguredDetails, Unavailable,
};
pub use gateway_ports::{ConfigError, ConfigWarning};
pub use gateway_ports::{
    OcrLayoutElement, OcrLayoutResult, OcrRequest, OcrTextResult, OcrTransport, PageSize,
};
pub use settings::{
    CacheBackend, DEFAULT_BATCH_SIZE, DEFAULT_CACHE_MEMORY_MAX_ENTRIES, DEFAULT_CACHE_TTL_S,
    DEFAULT_CHAT_SCOPE, DEFAULT_EMBED_SCOPE, DEFAULT_MAX_WAITERS, DEFAULT_OCR_MODEL,
    DEFAULT_OCR_SCOPE, DEFAULT_TELEMETRY_PG_POOL_MAX, DEFAULT_TELEMETRY_PG_WRITE_TIMEOUT_S,
    EmbeddingSettings, EnvMap, GatewaySettings, LEASE_GRACE_S, NON_UTF8_VALUE, OcrSettings,
    PROBE_GRACE_S, SOURCE_FIELDS, SchemaMode, ScopePolicy, StateBackend, TelemetryBackend,
    ValidatedEmbeddingSettings, ValidatedSettings, is_scope_name, process_env,
};

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
