//! `adapter-openai`: the OpenAI-compatible transport of PolyGateway.
//!
//! It reports wire facts only (40 S-1): HTTP status, headers and error bodies, the SSE events of
//! a 200 event stream, clean end of body and read failures. Judgement lives in `gateway-core`.
//!
//! - [`sse`]: the incremental SSE framer (40 §3, S-14…S-31; 05 R-26; README D18).

pub mod sse;
