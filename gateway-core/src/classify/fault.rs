//! Transport faults before a status line and after a 200 (network, read error), the framing
//! cap, and the core's watchdog expiries.

use gateway_ports::{Category, CauseKind, NetworkFault, ReasonCode};

use crate::redact::scrub;

use super::classification::{Classification, ClassifyContext, LivenessKind, base_failure};

/// Classifies a failure before a status line (DNS, connect, TLS, request write, pool): always
/// `Transient`, cause per 30 G-15, failure reason `timeout` for the timeout kinds else
/// `network_error`, no reason code. Message:
/// `"{source}: network error ({cause}): {detail}"`, the detail scrubbed and replaced by
/// the cause name when empty.
pub fn classify_network_fault(fault: &NetworkFault, ctx: &ClassifyContext<'_>) -> Classification {
    let cause = fault.kind.cause_kind();
    let mut failure = base_failure(ctx, network_message(ctx, cause, &fault.detail));
    failure.cause = Some(cause);
    Classification::new(Category::Transient, failure)
}

/// Classifies a body that broke after a 200 status (mid-stream `WireEvent::ReadError`, or
/// `WireFailure::ReadError` of a non-stream body): `Transient` with reason code `read_error`
/// and the fault's cause (`ReadError`, `RemoteProtocolError`, …) — never a clean end, even after
/// a finish_reason and usage.
pub fn classify_read_error(fault: &NetworkFault, ctx: &ClassifyContext<'_>) -> Classification {
    let cause = fault.kind.cause_kind();
    let mut failure = base_failure(ctx, network_message(ctx, cause, &fault.detail));
    failure.cause = Some(cause);
    failure.reason_code = Some(ReasonCode::ReadError);
    Classification::new(Category::Transient, failure)
}

/// Classifies a frame or 200 body over the framing cap: `ResultInvalid(response_too_large)`.
/// `limit_bytes` is the cap that was exceeded.
pub fn classify_frame_too_large(limit_bytes: usize, ctx: &ClassifyContext<'_>) -> Classification {
    let mut failure = base_failure(
        ctx,
        format!(
            "{}: response too large (response_too_large): over {limit_bytes} bytes",
            ctx.source_name
        ),
    );
    failure.reason_code = Some(ReasonCode::ResponseTooLarge);
    Classification::new(Category::ResultInvalid, failure)
}

/// Classifies a core watchdog expiry: `Transient(liveness_timeout)`, cause
/// `StreamLivenessTimeout`, failure reason `timeout`.
/// Message: `"{source}: stream liveness timeout ({kind})"`.
pub fn classify_liveness_timeout(kind: LivenessKind, ctx: &ClassifyContext<'_>) -> Classification {
    let mut failure = base_failure(
        ctx,
        format!("{}: stream liveness timeout ({kind})", ctx.source_name),
    );
    failure.cause = Some(CauseKind::StreamLivenessTimeout);
    failure.reason_code = Some(ReasonCode::LivenessTimeout);
    Classification::new(Category::Transient, failure)
}

/// `"{source}: network error ({cause}): {detail}"`; an empty detail falls back to the
/// cause name; the detail is scrubbed.
fn network_message(ctx: &ClassifyContext<'_>, cause: CauseKind, detail: &str) -> String {
    let detail = detail.trim();
    let detail = if detail.is_empty() {
        cause.as_str().to_owned()
    } else {
        scrub(detail, &ctx.scrub)
    };
    format!("{}: network error ({cause}): {detail}", ctx.source_name)
}
