//! `adapter-openai`: the OpenAI-compatible transport of PolyGateway.
//!
//! It reports wire facts only (40 S-1): HTTP status, headers and error bodies, the SSE events of
//! a 200 event stream, clean end of body and read failures. Judgement lives in `gateway-core`.
//!
//! - [`OpenAiTransport`]: `ChatTransport` + `EmbeddingTransport` over reqwest, one client per
//!   source (10 §8.1, §8.2; 05 R-25… ), and the `pgw doctor` probe.
//! - [`TransportOptions`] / [`TransportBuildError`]: the size options (20 §8.6) and the typed
//!   construction error.
//! - [`sse`]: the incremental SSE framer (40 §3, S-14…S-31; 05 R-26; README D18).
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
