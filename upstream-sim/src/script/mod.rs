//! The simulator's script format, version 1 (spec 15), and everything that turns a script into
//! wire behaviour without touching a socket.
//!
//! This module owns the script types ([`Script`], [`Response`], [`Completion`], [`Faults`], …),
//! their JSON form (a strict parser: unknown fields are errors, the `version` is checked first),
//! and the pure planning layer: [`ScriptRunner::next_plan`] picks the response for a request
//! (`order`, `match`), draws the request's fault ([`FaultRng`]) and renders a [`Plan`] — status,
//! headers, the list of timed writes and how the body ends. Both the real server (feature
//! `server`) and the in-memory `gateway_testkit::ScriptedWire` execute the same plan,
//! so one fixture produces identical bytes in both test tiers. The module needs only serde,
//! serde_json, base64, bytes and thiserror, so it builds with `default-features = false`.

mod archive;
mod faults;
mod http1;
pub mod ocr;
mod plan;
mod render;
mod runner;
mod types;

pub use faults::{Fault, FaultRng};
pub use http1::{CHUNKED_TERMINATOR, encode_chunk, reason_phrase};
pub use render::{
    DEFAULT_EMBEDDING_DIM, DEFAULT_MODEL, Endpoint, Plan, PlannedWrite, RequestFacts, SIM_CREATED,
    render, render_at, render_embedding, render_error, render_models,
};
pub use runner::ScriptRunner;
pub use types::{
    Completion, Embedding, End, Faults, Framing, Head, Headers, MAX_EMBEDDING_DIM, Match, Ocr,
    OcrArchive, OcrLocation, Order, RawChunk, ReasoningField, Response, SCRIPT_VERSION, Script,
    ScriptError, ToolCall, UsageFrame, UsageSpec,
};
