//! What one admission pass yields: the admitted attempt ([`Admitted`]), the rejection
//! bookkeeping ([`Rejections`]), the pick ([`Pick`]) and "nothing runnable" ([`NoRunnable`]),
//! and the governance-backend error ([`backend_error`]).

use std::sync::Arc;

use gateway_ports::{
    BackendError, BackendErrorKind, GatewayError, ScopeReason, SourceConfig, Unavailable,
};

use crate::cleanup::AttemptGuard;

/// `GovernanceBackend.retry_after_s`.
pub const GOVERNANCE_BACKEND_RETRY_AFTER_S: f64 = 5.0;

/// An admitted candidate (`Picked`): the source, the attempt id the breaker saw as the
/// probe owner, and the guard holding the acquisitions.
#[derive(Debug)]
pub struct Admitted {
    /// The admitted source.
    pub source: Arc<SourceConfig>,
    /// The attempt's `call_id` (the breaker owner).
    pub call_id: String,
    /// The acquisitions (breaker decision, pacer slot, permit).
    pub guard: AttemptGuard,
}

/// Why a pick found nothing runnable.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Rejections {
    /// Candidates considered (excluded sources are not candidates).
    pub candidates: u32,
    /// Breaker-class rejections (memo and breaker).
    pub gate_rejections: u32,
    /// Pacer rejections.
    pub paced: u32,
    /// Quota-gate rejections.
    pub quota: u32,
    /// Remaining cooldowns reported by memo hits and breaker denials (0.0 for half-open).
    pub breaker_hints_s: Vec<f64>,
    /// Limiter wait hints of the denied sources.
    pub quota_hints_s: Vec<f64>,
    /// Candidates that can never be admitted: their token estimate is above their own `TPM`
    /// or the scope's `GLOBAL__TPM` (issue 22). Counted in `quota` too.
    pub never: u32,
    /// The limit the first such candidate can never fit, for the error and the log.
    pub never_detail: Option<String>,
}

/// The result of one pick.
#[derive(Debug)]
pub enum Pick {
    /// A candidate passed every gate (boxed: the guard is large).
    Picked(Box<Admitted>),
    /// No candidate is runnable now.
    NothingRunnable(Rejections),
}

/// What to do after a `NothingRunnable` pick.
#[derive(Debug)]
pub enum NoRunnable {
    /// Fail the call with this error (`CircuitOpen` or `AllSourcesExhausted{quota_full}`).
    Fail(GatewayError),
    /// Nap (after the death check) and pick again.
    Nap,
}

/// Maps a limiter/breaker backend error to the caller-facing error.
pub fn backend_error(scope: &str, err: &BackendError) -> GatewayError {
    match err.kind {
        BackendErrorKind::SourceNotConfigured => {
            GatewayError::source_not_configured(scope, err.detail.clone())
        }
        _ => {
            let mut u = Unavailable::new(
                scope,
                ScopeReason::BackendUnavailable,
                GOVERNANCE_BACKEND_RETRY_AFTER_S,
            );
            u.detail = Some(format!("governance backend failed: {err}"));
            GatewayError::governance_backend(u)
        }
    }
}
