//! `adapter-openai`: the OpenAI-compatible transport of PolyGateway.
//!
//! It reports wire facts only: HTTP status, headers and error bodies, the SSE events of
//! a 200 event stream, clean end of body and read failures. Judgement lives in `gateway-core`.
//!
//! - [`OpenAiTransport`]: `ChatTransport` + `EmbeddingTransport` over reqwest, one client per
//!   source, and the `pgw doctor` probe.
//! - [`TransportOptions`] / [`TransportBuildError`]: the size options and the typed
//!   construction error.
//! - [`sse`]: the incremental SSE framer.
//!
//! Behaviour and decisions: `docs/transport.md`.

mod client;
mod events;
mod fault;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod sse;
mod transport;

pub use client::{
    API_KEY_HEADER, DEFAULT_MAX_ERROR_BODY_BYTES, DEFAULT_MAX_FRAME_BYTES, REQUEST_ID_HEADER,
    TransportBuildError, TransportOptions,
};
pub use transport::{
    CONTENT_TYPE_MISMATCH, OpenAiTransport, PROBE_BODY_MAX_BYTES, PROBE_MAX_S, ProbeAnswer,
    STALE_CONNECTION_RESENT,
};
