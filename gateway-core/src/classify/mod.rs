//! The one classifier: wire failure facts → category, reason code, failure reason, hint
//! (spec 30 §2).
//!
//! Adapters report facts ([`WireFailure`], [`NetworkFault`], SSE `error` events, 200 bodies with
//! an `error` key); this module alone turns them into one of the four categories,
//! so that every transport, the retry loop, the breaker feed and telemetry agree. It owns:
//!
//! - the HTTP status table, with the two body facts that change a category: the closed
//!   list of context-overflow markers (any status, checked first) and
//!   `insufficient_quota` on a 429;
//! - in-band error objects of a 200 stream or body;
//! - transport faults and their `cause_type`;
//! - the failure reason that feeds breaker, health and pacer;
//! - when a retry hint is parsed (`Transient` 429 and 503; README D23: 522/524, the
//!   capacity markers, and every status but 400/401/403/404 as a deferral; D19 hint sources);
//! - the model-missing and capacity markers and the relayed quota codes;
//! - the message templates.
//!
//! Typing decisions read the **raw** body as retained by the adapter; messages and `body_text`
//! carry the scrubbed summary (`crate::redact`). Classification never
//! depends on configuration or history, except that hints depend on the wall clock.
//!
//! The result is a small [`Classification`] (category + failure reason + the
//! [`AttemptFailure`] payload) that the retry loop consumes; [`Classification::into_error`]
//! builds the [`GatewayError`](gateway_ports::GatewayError). Protocol and verdict facts of a 200 response (malformed JSON,
//! truncated streams, …; G-22) are judged by the streaming and verdict modules with their own
//! reason texts; they use [`failure_reason`] for the breaker feed.
//!
//! Files: `markers` (the closed lists and their matchers), `classification` (context, verdict,
//! message helpers), `http` (the status table and `send` failures), `fault` (network, read,
//! framing and watchdog faults), `in_band` (error objects of a 200), `reason` (the failure
//! reason).
//!
//! [`WireFailure`]: gateway_ports::WireFailure
//! [`NetworkFault`]: gateway_ports::NetworkFault
//! [`AttemptFailure`]: gateway_ports::AttemptFailure

mod classification;
mod fault;
mod http;
mod in_band;
mod markers;
mod reason;

pub use classification::{Classification, ClassifyContext, LivenessKind, compose};
pub use fault::{
    classify_frame_too_large, classify_liveness_timeout, classify_network_fault,
    classify_read_error,
};
pub use http::{classify_http, classify_wire_failure};
pub use in_band::{classify_error_event, classify_error_value, in_band_status};
pub use markers::{
    CAPACITY_MARKERS, CONTEXT_OVERFLOW_MARKERS, INSUFFICIENT_QUOTA, MODEL_MISSING_MARKERS,
    QUOTA_CODES, QUOTA_SENTENCE, TIMEOUT_STATUSES, contains_context_overflow_marker,
    contains_marker, is_insufficient_quota,
};
pub use reason::{failure_reason, failure_reason_of, is_bad_response_code};
