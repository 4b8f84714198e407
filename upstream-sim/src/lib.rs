//! `upstream-sim`: a scripted OpenAI-compatible upstream with fault injection and byte-exact
//! replay (spec 15).
//!
//! - [`script`] (always built): the script format, version 1, and the pure planning layer that
//!   turns a script and a request into a [`script::Plan`] of timed writes. The tier-1
//!   `gateway_testkit::ScriptedWire` reuses it with `default-features = false`, so one fixture
//!   drives both test tiers with identical bytes.
//! - `Sim` / `SimHandle` (feature `server`, default): the HTTP/1.1 server on real sockets, with
//!   its own accept loop on a tokio `TcpListener`; it writes responses itself so that chunk
//!   boundaries, TCP resets and close-delimited bodies are exactly as scripted. Recorded requests
//!   keep only a hash of the API key.
//!
//! The format reference with examples is `docs/simulator.md`.

pub mod script;

#[cfg(feature = "server")]
mod server;

#[cfg(feature = "server")]
pub use server::{RecordedRequest, Sim, SimError, SimHandle};
