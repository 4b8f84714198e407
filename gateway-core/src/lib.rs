//! PolyGateway governance core: every decision about one logical call — classification,
//! Retry-After, backoff, the retry loop, admission, the completion verdict, hedging — as pure
//! logic over the ports of `gateway-ports`, plus the in-memory backends (the embedded default).
//!
//! Adapters report wire facts; this crate judges them (spec README, "adapters report wire facts,
//! the core judges"). It never depends on reqwest, hyper, fred, tokio-postgres or rusqlite.
//!
//! A governed call reads top-down one file per layer: [`governor`] (the public boundary) →
//! [`retry_loop`] (the loop) → [`hedge`] (the hedged round) → `leg` (the attempt step) →
//! `scope` (the per-scope state and the loop's environment) → [`admission`]. Imports point one
//! way (`python3 tools/module_graph.py` reports any cycle between files).

#![warn(unreachable_pub)]

pub mod accumulate;
pub mod admission;
pub mod attempt;
pub mod backoff;
pub mod budget;
pub mod cache;
pub mod call_context;
pub mod classify;
pub mod cleanup;
pub mod clock;
pub mod config;
pub mod deadline;
pub mod effort;
pub mod executor;
pub mod governor;
pub mod hedge;
mod leg;
pub mod memory;
pub mod ocr;
pub mod pacer;
pub mod policy;
pub mod redact;
pub mod request;
pub mod retry_after;
pub mod retry_loop;
pub mod rows;
mod scope;
pub mod select;
pub mod stall;
pub mod stream_call;
#[cfg(feature = "structured")]
pub mod structured;
pub mod telemetry;
pub mod thinking;
pub mod verdict;
