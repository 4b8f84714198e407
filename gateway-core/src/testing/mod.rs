//! Test doubles of the governance core (cargo feature `testing`; 05 ).
//!
//! Owns the scripted whole-attempt runner [`ScriptedRunner`] (05 R-2 steps with
//! entered/release handles), the recording row sink [`RecordingRowSink`] (05 R-3: counts, kinds,
//! labels, `logical_call_id`, `error_type`), the tier-1 scripted chat transport
//! [`ScriptedWire`] (05 R-30: the simulator's plans on `tokio::time`) and [`HangingBreaker`], a breaker wrapper that parks
//! chosen write-backs so tests can drop a call inside them (the S4/S5 cells of 30 G-107).
//! Compiled only with the `testing` feature; never part of a production build.

mod breaker;
mod latch;
mod rows;
mod runner;
mod scripted_wire;

pub use breaker::{HangOn, HangingBreaker};
pub use latch::Latch;
pub use rows::{RecordedRow, RecordingRowSink};
pub use runner::{Script, ScriptedRunner, Step, StepHandle};
pub use scripted_wire::ScriptedWire;
