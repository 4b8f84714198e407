//! Error types: [`GatewayError`] (the one error of every public call), [`AttemptError`] (how
//! one upstream attempt failed), the assembly-time [`ConfigError`]/[`ConfigWarning`], and the
//! *facts* ports report at their boundary (`WireFailure`, `NetworkFault`, `BackendError`,
//! `CacheError`, `RecordError`, `ArchiveFault`).
//!
//! Ports return facts, never a category: one classifier in `gateway-core` turns facts into an
//! `AttemptError`, and the retry loop turns the call's attempts into one `GatewayError`. Every
//! payload is boxed so `Result<T, GatewayError>` stays two words; payload structs are
//! `#[non_exhaustive]` (fields may be added) and have accessors. No error text ever contains a
//! secret.

mod attempt;
mod call;
mod config;
mod facts;

pub use attempt::{AttemptError, AttemptFailure, ResultInvalidDetails};
pub use call::{
    CallFailure, DeadlineExceededDetails, GatewayError, InvalidArgumentDetails, PartialOutput,
    SourceNotConfiguredDetails, Unavailable,
};
pub use config::{ConfigError, ConfigWarning};
pub use facts::*;
