//! Test doubles of PolyGateway (05 ), the way `tower-test` holds tower's:
//! a dev-only crate, never a normal or build dependency of any workspace member (95 CF-025;
//! `contract-tests/tests/graph.rs` checks the dependency graph), so no double ships in a
//! production build.
//!
//! - [`ScriptedRunner`] with [`Script`], [`Step`] and [`StepHandle`]: an `AttemptRunner`
//!   playing one scripted attempt per call (05 R-2: ok / fail / hang / token / sleep /
//!   report-stall / advance-clock / gate / panic steps, entered and release handles); it
//!   records each attempt's source and whether it got a progress signal (60 H-79, H-105).
//! - [`ScriptedWire`]: the tier-1 in-memory `ChatTransport` (05 R-30) playing the simulator's
//!   own plans on `tokio::time`, so one `upstream-sim` script drives both test tiers.
//! - [`RecordingRowSink`] and [`RecordedRow`]: a `RowSink` recording every fact (05 R-3:
//!   counts, kinds, labels, `logical_call_id`, `error_type`), optionally slow or ticking a
//!   `FakeClock` per row (95 CF-292).
//! - [`HangingBreaker`] and [`HangOn`]: a breaker wrapper that parks a chosen write-back so a
//!   test can drop a call inside it (the S4/S5 cells of 30 G-107, G-109).
//! - [`Latch`]: a one-way gate (05 R-30: tests wait on events, never sleep).
//! - [`hooked`]: one forwarding-with-hooks double per port — [`HookedLimiter`],
//!   [`HookedBreaker`] (with [`ProbeLedger`], the half-open probes granted and not resolved),
//!   [`HookedRowSink`], [`HookedChatTransport`], [`HookedCache`]: forward every call to an inner port, and let a
//!   test count, park on a latch, fail or record chosen calls (30 G-107 S1, 95 CF-062, G-83).
//! - [`fixture`]: [`Fx`] / [`FxBuilder`], the governor over the memory backends, the scripted
//!   runner, the recording sink and the cleanup worker, shared by the core's tier-1, hedge
//!   (60 §14 harness) and property tests.
//! - [`WarnCapture`]: a thread-default tracing subscriber recording warning codes.
//!
//! Its `gateway-core` is the one the dependent test links: an integration test of
//! `gateway-core` shares the library instance with this crate, while `gateway-core`'s unit
//! tests under `src/` are a separate instance and cannot use these doubles.

mod breaker;
pub mod fixture;
pub mod hooked;
mod latch;
mod rows;
mod runner;
mod scripted_wire;
mod warn;

pub use breaker::{HangOn, HangingBreaker};
pub use fixture::{Fx, FxBuilder, RecordingSelector, SourceGate};
pub use hooked::{
    Effect, HookedBreaker, HookedCache, HookedChatTransport, HookedLimiter, HookedRowSink,
    ProbeLedger,
};
pub use latch::Latch;
pub use rows::{RecordedRow, RecordingRowSink};
pub use runner::{Script, ScriptedRunner, Step, StepHandle};
pub use scripted_wire::ScriptedWire;
pub use warn::WarnCapture;
