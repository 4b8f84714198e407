//! The failure reason that feeds breaker, health and pacer, derived from a category and a
//! failure payload.

use gateway_ports::{AttemptError, AttemptFailure, Category, CauseKind, FailureReason, ReasonCode};

use super::markers::TIMEOUT_STATUSES;

/// The failure reason of a classified attempt: `SourceDead` → `source_dead`;
/// `Transient` with status 429 or reason code `rate_limited` → `rate_limited`; `Transient` with
/// a timeout cause (`ConnectTimeout`, `ReadTimeout`, `WriteTimeout`, `PoolTimeout`,
/// `StreamLivenessTimeout`) or status 408/504/522/524 → `timeout`; a malformed
/// answer ([`is_bad_response_code`]) → `bad_response`; every other `Transient` →
/// `network_error`; `RequestRejected` and `ResultInvalid` → `None`.
pub fn failure_reason(category: Category, failure: &AttemptFailure) -> Option<FailureReason> {
    match category {
        Category::SourceDead => Some(FailureReason::SourceDead),
        Category::Transient => Some(
            if failure.http_status == Some(429)
                || failure.reason_code == Some(ReasonCode::RateLimited)
            {
                FailureReason::RateLimited
            } else if matches!(
                failure.cause,
                Some(
                    CauseKind::ConnectTimeout
                        | CauseKind::ReadTimeout
                        | CauseKind::WriteTimeout
                        | CauseKind::PoolTimeout
                        | CauseKind::StreamLivenessTimeout
                )
            ) || failure
                .http_status
                .is_some_and(|status| TIMEOUT_STATUSES.contains(&status))
            {
                FailureReason::Timeout
            } else if failure.reason_code.is_some_and(is_bad_response_code) {
                FailureReason::BadResponse
            } else {
                FailureReason::NetworkError
            },
        ),
        Category::RequestRejected | Category::ResultInvalid => None,
    }
}

/// `true` for the reason codes of a malformed answer: the verdict's and the
/// stream's `Transient` failures — empty completion or response, protocol error, invalid or
/// malformed JSON, truncation (`missing_done`, `early_eof`), an incomplete tool call. Their
/// failure reason is `bad_response`, which breaker and health treat like `network_error`.
pub fn is_bad_response_code(code: ReasonCode) -> bool {
    matches!(
        code,
        ReasonCode::EmptyCompletion
            | ReasonCode::EmptyResponse
            | ReasonCode::ProtocolError
            | ReasonCode::InvalidJson
            | ReasonCode::MalformedJson
            | ReasonCode::MissingDone
            | ReasonCode::EarlyEof
            | ReasonCode::ToolIncomplete
    )
}

/// [`failure_reason`] of an `AttemptError`.
pub fn failure_reason_of(error: &AttemptError) -> Option<FailureReason> {
    failure_reason(error.category(), error.failure())
}
