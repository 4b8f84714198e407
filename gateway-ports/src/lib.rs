//! PolyGateway ports: the domain types, error types and port traits every other crate shares
//! (spec README "design card", 10-types-and-ports).
//!
//! This crate holds no behaviour beyond small, pure helpers on its own types (wire strings,
//! finish classes, the snapshot shape check, pricing arithmetic, the telemetry column binding).
//! Adapters implement the traits in [`ports`]; `gateway-core` judges the facts they report.
//!
//! Modules:
//! - [`vocab`]: every fieldless vocabulary with its exact wire string;
//! - [`config`]: `SourceConfig`, `Secret`, policies, pricing;
//! - [`request`]: `ChatRequest`, `EmbedRequest`, `OcrRequest`, `MetaValue`;
//! - [`response`]: `LlmResponse`, `OpenAiChatCompletion`, `Usage`, `CallStats`, results;
//! - [`error`]: `GatewayError`, `ConfigError`, port error facts;
//! - [`telemetry`]: `TelemetryRow`, `SqlValue`, `TelemetryStatus` (80);
//! - [`schema`]: the `llm_calls` DDL, backfill and INSERT text for SQLite and Postgres (80);
//! - [`ports`]: the port traits.
//!
//! Everything except [`schema`] is re-exported at the crate root ([`schema`] only by its three
//! most used names: `SchemaMode`, `SqlBackend`, `telemetry_schema_sql`).

pub mod config;
pub mod error;
pub mod files;
pub mod ports;
pub mod request;
pub mod response;
pub mod schema;
pub mod telemetry;
pub mod vocab;

pub use config::*;
pub use error::*;
pub use ports::*;
pub use request::*;
pub use response::*;
pub use schema::{SchemaMode, SqlBackend, telemetry_schema_sql};
pub use telemetry::*;
pub use vocab::*;
