//! `GatewayError` predicates, type names, messages and size (30 §1.2–§1.4; 05 ).

use std::error::Error as _;

use gateway_ports::*;

fn failure(status: Option<u16>, code: Option<ReasonCode>) -> AttemptFailure {
    let mut f = AttemptFailure::new("openai_1: HTTP 503", ErrorOperation::Chat);
    f.source_name = Some("openai_1".into());
    f.http_status = status;
    f.reason_code = code;
    f.retry_after_s = Some(2.0);
    f
}

fn all_variants() -> Vec<GatewayError> {
    let mut exhausted = Unavailable::new("LLM", ScopeReason::RetryExhausted, 3.0);
    exhausted.last_failure = Some(Box::new(AttemptError::transient(failure(Some(503), None))));
    let mut backend = Unavailable::new("LLM", ScopeReason::BackendUnavailable, 5.0);
    backend.detail = Some("rate-limiter backend try_acquire failed: down".into());
    vec![
        // A streamed call's post-commit failures: the only call-level errors that carry a
        // `Transient` or `SourceDead` cause.
        GatewayError::committed(
            AttemptError::transient(failure(Some(503), None)),
            PartialOutput::new("par", ""),
        ),
        GatewayError::committed(
            AttemptError::source_dead(failure(Some(401), None)),
            PartialOutput::new("", ""),
        ),
        GatewayError::request_rejected(failure(Some(500), Some(ReasonCode::ContextLengthExceeded))),
        GatewayError::result_invalid(ResultInvalidDetails::new(failure(
            None,
            Some(ReasonCode::LengthWithoutContent),
        ))),
        GatewayError::all_sources_exhausted(exhausted),
        GatewayError::circuit_open(Unavailable::new("LLM", ScopeReason::CircuitOpen, 0.25)),
        GatewayError::governance_backend(backend),
        GatewayError::source_not_configured("LLM", "ghost_1"),
        GatewayError::call_deadline_exceeded("LLM", 30.0),
        GatewayError::invalid_argument("ChatRequest::call_deadline", "must be positive"),
        GatewayError::ClientClosed,
        GatewayError::from(ConfigError::new(
            "config.parse",
            "LLM__HEDGE__MAX_EXTRA",
            "not an integer",
        )),
    ]
}

#[test]
fn r_16_result_stays_small() {
    assert!(std::mem::size_of::<GatewayError>() <= 16);
    assert!(std::mem::size_of::<Result<(), GatewayError>>() <= 24);
    assert!(std::mem::size_of::<Result<u64, GatewayError>>() <= 24);
}

#[test]
fn g_14_type_names() {
    let names: Vec<&str> = all_variants().iter().map(GatewayError::type_name).collect();
    assert_eq!(
        names,
        [
            "TransientError",
            "SourceDeadError",
            "RequestRejectedError",
            "ResultInvalidError",
            "AllSourcesExhausted",
            "CircuitOpenError",
            "GovernanceBackendError",
            "SourceNotConfiguredError",
            "CallDeadlineExceeded",
            "InvalidArgument",
            "ClientClosed",
            "ConfigError",
        ]
    );
}

#[test]
fn g_2_category_only_for_the_errors_an_attempt_ended() {
    let categories: Vec<Option<Category>> =
        all_variants().iter().map(GatewayError::category).collect();
    assert_eq!(
        &categories[..4],
        [
            Some(Category::Transient),
            Some(Category::SourceDead),
            Some(Category::RequestRejected),
            Some(Category::ResultInvalid)
        ]
    );
    assert!(categories[4..].iter().all(Option::is_none));
}

#[test]
fn g_17_unavailable_family_is_retryable_later_with_hint() {
    let variants = all_variants();
    let later: Vec<bool> = variants
        .iter()
        .map(GatewayError::is_retryable_later)
        .collect();
    assert_eq!(
        later,
        [
            false, false, false, false, true, true, true, false, false, false, false, false
        ]
    );
    let hints: Vec<Option<f64>> = variants.iter().map(GatewayError::retry_after_s).collect();
    assert_eq!(hints[4], Some(3.0));
    assert_eq!(hints[5], Some(0.25));
    assert_eq!(hints[6], Some(5.0));
    // Transient's server hint stays on the failure; CallDeadlineExceeded has none by design.
    assert_eq!(hints[0], None);
    assert_eq!(hints[8], None);
    assert_eq!(
        variants[0].attempt_failure().and_then(|f| f.retry_after_s),
        Some(2.0)
    );
    assert_eq!(
        variants[4].unavailable().map(|u| u.reason),
        Some(ScopeReason::RetryExhausted)
    );
}

#[test]
fn g_12_unavailable_retry_after_is_finite_and_non_negative() {
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        assert_eq!(
            Unavailable::new("LLM", ScopeReason::NoSources, bad).retry_after_s,
            0.0
        );
    }
}

#[test]
fn r_16_reason_code_and_http_status_accessors() {
    let v = all_variants();
    assert_eq!(v[2].reason_code(), Some(ReasonCode::ContextLengthExceeded));
    assert_eq!(v[2].http_status(), Some(500));
    assert_eq!(v[3].reason_code(), Some(ReasonCode::LengthWithoutContent));
    assert_eq!(v[3].http_status(), None);
    assert_eq!(v[0].reason_code(), None);
    assert_eq!(v[0].http_status(), Some(503));
    assert_eq!(v[4].reason_code(), None, "not copied from last_failure");
    assert_eq!(
        v[4].http_status(),
        None,
        "not copied from last_failure (T-20)"
    );
    assert_eq!(v[0].source_name(), Some("openai_1"));
    assert_eq!(v[7].source_name(), Some("ghost_1"));
    assert_eq!(v[7].scope(), Some("LLM"));
    assert_eq!(v[8].scope(), Some("LLM"));
    assert_eq!(v[11].config_error().map(|e| e.code), Some("config.parse"));
}

#[test]
fn g_13_messages() {
    let v = all_variants();
    assert_eq!(v[0].to_string(), "openai_1: HTTP 503");
    assert_eq!(
        v[4].to_string(),
        "LLM gateway temporarily unavailable: retry_exhausted"
    );
    assert_eq!(
        v[5].to_string(),
        "LLM gateway temporarily unavailable: circuit_open"
    );
    assert_eq!(
        v[6].to_string(),
        "rate-limiter backend try_acquire failed: down"
    );
    assert_eq!(
        v[7].to_string(),
        "LLM: source ghost_1 is not configured in the rate-limiter backend"
    );
    assert_eq!(v[8].to_string(), "LLM call deadline 30s expired");
    assert_eq!(
        v[9].to_string(),
        "ChatRequest::call_deadline: must be positive"
    );
    assert_eq!(v[10].to_string(), "client is closed");
    assert_eq!(v[11].to_string(), "LLM__HEDGE__MAX_EXTRA: not an integer");
}

#[test]
fn g_8_last_failure_is_the_error_source() {
    let v = all_variants();
    let source = v[4].source().expect("last_failure exposed via source()");
    assert_eq!(source.to_string(), "openai_1: HTTP 503");
    assert!(v[5].source().is_none());
    assert!(v[0].source().is_none());
}

#[test]
fn s10_7_port_error_facts_do_not_echo_bodies() {
    let http = WireFailure::Http {
        status: 429,
        headers: vec![("retry-after".into(), "2".into())],
        body: "{\"error\":\"PAYLOAD-SECRET\"}".into(),
    };
    assert!(!http.to_string().contains("PAYLOAD-SECRET"));
    assert!(http.to_string().contains("429"));
    let net = WireFailure::Network(NetworkFault::new(NetworkFaultKind::ConnectTimeout, "t"));
    assert_eq!(net.to_string(), "network fault (connect_timeout: t)");
    assert_eq!(
        BackendError::source_not_configured("x_1").kind,
        BackendErrorKind::SourceNotConfigured
    );
    assert_eq!(
        BackendError::unavailable("d").kind,
        BackendErrorKind::Unavailable
    );
    assert_eq!(BackendError::protocol("d").kind, BackendErrorKind::Protocol);
    assert_eq!(CacheError::new("down").to_string(), "cache backend: down");
    assert_eq!(
        RecordError::new(RecordErrorKind::Timeout, "5s").to_string(),
        "telemetry timeout: 5s"
    );
    assert_eq!(
        ArchiveFault::TooLarge { limit: 8 }.to_string(),
        "result archive exceeds 8 bytes"
    );
}

#[test]
fn s20_10_config_warning_shape() {
    let w = ConfigWarning::new("hedge.single_source", "one source").with_source("openai_1");
    assert_eq!(w.code, "hedge.single_source");
    assert_eq!(w.source.as_deref(), Some("openai_1"));
    assert_eq!(w.to_string(), "hedge.single_source: one source");
}

#[test]
fn r_16_attempt_error_is_the_per_attempt_classification() {
    let mut f = failure(Some(429), None);
    f.retry_after_s = Some(2.5);
    let e = AttemptError::transient(f.clone());
    assert_eq!(e.category(), Category::Transient);
    assert_eq!(e.type_name(), "TransientError");
    assert_eq!(e.failure(), &f);
    assert_eq!(
        e.retry_after_s(),
        Some(2.5),
        "an attempt keeps its server hint"
    );
    assert_eq!(e.http_status(), Some(429));
    assert_eq!(e.source_name(), Some("openai_1"));
    assert!(std::mem::size_of::<AttemptError>() <= 16);
    for category in [
        Category::Transient,
        Category::SourceDead,
        Category::RequestRejected,
        Category::ResultInvalid,
    ] {
        assert_eq!(
            AttemptError::of_category(category, f.clone()).category(),
            category
        );
    }
}

#[test]
fn d25_an_attempt_that_ends_the_call_keeps_its_category() {
    let rejected = GatewayError::from_attempt(
        "LLM",
        AttemptError::request_rejected(failure(Some(400), None)),
    );
    assert!(matches!(rejected, GatewayError::RequestRejected(_)));
    assert_eq!(rejected.http_status(), Some(400));
    assert_eq!(
        rejected.attempt_error().map(AttemptError::category),
        Some(Category::RequestRejected)
    );
    // An absorbed category handed to the call boundary becomes retry_exhausted with the cause.
    let absorbed =
        GatewayError::from_attempt("LLM", AttemptError::transient(failure(Some(503), None)));
    let u = absorbed.unavailable().expect("unavailable family");
    assert_eq!(u.reason, ScopeReason::RetryExhausted);
    assert_eq!(
        absorbed.last_failure().and_then(AttemptError::http_status),
        Some(503)
    );
}

#[test]
fn d25_the_attempt_count_travels_with_the_error() {
    for (i, e) in all_variants().into_iter().enumerate() {
        let carried = e.clone().with_attempts(3).attempts();
        let expected = match i {
            // Raised before any request: no count to carry.
            7 | 9 | 10 | 11 => 0,
            _ => 3,
        };
        assert_eq!(carried, expected, "{}", e.type_name());
        assert_eq!(e.attempts(), 0, "0 until the call sets it");
    }
}

#[test]
fn d32_committed_carries_the_partial_output() {
    let v = all_variants();
    assert!(v[0].is_committed());
    assert_eq!(
        v[0].partial_output().map(PartialOutput::content),
        Some("par")
    );
    let rejected = GatewayError::request_rejected(failure(Some(400), None))
        .into_committed(PartialOutput::new("x", ""));
    assert!(rejected.is_committed());
    assert_eq!(rejected.type_name(), "RequestRejectedError");
    assert!(
        !v[4]
            .clone()
            .into_committed(PartialOutput::default())
            .is_committed()
    );
}
