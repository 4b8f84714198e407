//! Shared helpers of the governance tests: the fixture of `gateway-testkit` (`Fx`,
//! `FxBuilder`, `fx()`, `source`, `retry`: a `Governor` over the memory backends, a
//! `ScriptedRunner`, a `RecordingRowSink` and the spawned cleanup worker; common values per 95:
//! `tpm = 1000`, `est_tokens = 400`, `max_concurrency = 1`) plus the classified errors the tests
//! script.
#![allow(dead_code)]

use gateway_ports::{
    AttemptError, AttemptFailure, ErrorOperation, GatewayError, ResultInvalidDetails,
};
#[allow(
    unused_imports,
    reason = "each test binary uses a subset of the helpers"
)]
pub use gateway_testkit::fixture::{Fx, FxBuilder, fx, retry, source};

pub fn failure(source: &str, msg: &str) -> AttemptFailure {
    let mut f = AttemptFailure::new(format!("{source}: {msg}"), ErrorOperation::Chat);
    f.source_name = Some(source.to_owned());
    f
}

/// `Transient(status)`.
pub fn transient(status: u16) -> AttemptError {
    let mut f = failure("s", &format!("HTTP {status}"));
    f.http_status = Some(status);
    AttemptError::transient(f)
}

/// A 429 `Transient` with an optional hint.
pub fn rate_limited(hint_s: Option<f64>) -> AttemptError {
    let mut f = failure("s", "rate limited: 429");
    f.http_status = Some(429);
    f.retry_after_s = hint_s;
    AttemptError::transient(f)
}

/// `SourceDead("401", status 401)`.
pub fn dead() -> AttemptError {
    let mut f = failure("s", "HTTP 401");
    f.http_status = Some(401);
    AttemptError::source_dead(f)
}

/// `RequestRejected` 400.
pub fn rejected() -> AttemptError {
    let mut f = failure("s", "HTTP 400 | bad");
    f.http_status = Some(400);
    f.body_text = Some("{\"error\":{\"message\":\"bad\"}}".to_owned());
    AttemptError::request_rejected(f)
}

/// `ResultInvalid`.
pub fn invalid() -> AttemptError {
    AttemptError::result_invalid(ResultInvalidDetails::new(failure("s", "empty_completion")))
}

/// The unavailable payload of an error (panics otherwise; test support).
pub fn unavailable(e: &GatewayError) -> &gateway_ports::Unavailable {
    e.unavailable()
        .unwrap_or_else(|| panic!("expected the unavailable family, got {e:?}"))
}
