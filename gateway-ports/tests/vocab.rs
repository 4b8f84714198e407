//! Exact wire strings of every vocabulary (10 §1, 30 §1.3, 50 V-45) and the finish classes.

use gateway_ports::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Checks `as_str`, `Display`, serde and `from_wire` against the expected table, and that the
/// table covers every variant.
#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failed conversion must fail the test"
)]
fn check<T>(all: &[T], expected: &[(T, &str)], as_str: fn(T) -> &'static str)
where
    T: Copy + PartialEq + std::fmt::Debug + std::fmt::Display + Serialize + DeserializeOwned,
{
    assert_eq!(all.len(), expected.len(), "table must cover every variant");
    for (value, wire) in expected {
        assert_eq!(as_str(*value), *wire);
        assert_eq!(value.to_string(), *wire);
        assert_eq!(
            serde_json::to_value(value).unwrap(),
            serde_json::json!(wire)
        );
        let back: T = serde_json::from_value(serde_json::json!(wire)).unwrap();
        assert_eq!(back, *value);
        assert!(all.contains(value));
    }
}

#[test]
fn s10_1_response_mode_wire_strings() {
    check(
        ResponseMode::ALL,
        &[
            (ResponseMode::Text, "text"),
            (ResponseMode::OpenAi, "openai"),
        ],
        ResponseMode::as_str,
    );
    assert_eq!(ResponseMode::default(), ResponseMode::Text);
    assert_eq!(ResponseMode::from_wire("TEXT"), None);
}

#[test]
fn s10_1_stream_end_wire_strings() {
    check(
        StreamEnd::ALL,
        &[
            (StreamEnd::Done, "done"),
            (StreamEnd::EofAfterFinish, "eof_after_finish"),
            (StreamEnd::Salvaged, "salvaged"),
        ],
        StreamEnd::as_str,
    );
}

#[test]
fn s10_1_usage_source_wire_strings_and_weakest_order() {
    check(
        UsageSource::ALL,
        &[
            (UsageSource::Unavailable, "unavailable"),
            (UsageSource::Estimated, "estimated"),
            (UsageSource::Measured, "measured"),
        ],
        UsageSource::as_str,
    );
    // 90 E-13: Unavailable < Estimated < Measured.
    assert!(UsageSource::Unavailable < UsageSource::Estimated);
    assert!(UsageSource::Estimated < UsageSource::Measured);
    assert_eq!(UsageSource::default(), UsageSource::Unavailable);
}

#[test]
fn s10_1_thinking_observation_wire_strings() {
    check(
        ThinkingObservation::ALL,
        &[
            (ThinkingObservation::Observed, "observed"),
            (ThinkingObservation::Absent, "absent"),
            (ThinkingObservation::Unknown, "unknown"),
        ],
        ThinkingObservation::as_str,
    );
    assert_eq!(ThinkingObservation::default(), ThinkingObservation::Unknown);
}

#[test]
fn r_19_effort_off_is_none_on_the_wire() {
    check(
        Effort::ALL,
        &[
            (Effort::Off, "none"),
            (Effort::Auto, "auto"),
            (Effort::Minimal, "minimal"),
            (Effort::Low, "low"),
            (Effort::Medium, "medium"),
            (Effort::High, "high"),
            (Effort::Xhigh, "xhigh"),
            (Effort::Max, "max"),
        ],
        Effort::as_str,
    );
    assert_eq!(EFFORT_ORDER.as_slice(), Effort::ALL);
    assert!(EFFORT_ORDER.windows(2).all(|w| w[0] < w[1]));
    // `Some(Off)` and `None` stay distinct through serde.
    let some_off: Option<Effort> = serde_json::from_str("\"none\"").unwrap();
    assert_eq!(some_off, Some(Effort::Off));
    let absent: Option<Effort> = serde_json::from_str("null").unwrap();
    assert_eq!(absent, None);
}

#[test]
fn s10_1_small_choice_vocabularies() {
    check(
        EffortFallback::ALL,
        &[
            (EffortFallback::Error, "error"),
            (EffortFallback::Nearest, "nearest"),
        ],
        EffortFallback::as_str,
    );
    assert_eq!(EffortFallback::default(), EffortFallback::Error);
    check(
        MissingDone::ALL,
        &[
            (MissingDone::Retry, "retry"),
            (MissingDone::Salvage, "salvage"),
        ],
        MissingDone::as_str,
    );
    assert_eq!(MissingDone::default(), MissingDone::Retry);
    check(
        WaitPolicy::ALL,
        &[
            (WaitPolicy::Wait, "wait"),
            (WaitPolicy::FailFast, "fail_fast"),
        ],
        WaitPolicy::as_str,
    );
    check(
        CachePolicy::ALL,
        &[
            (CachePolicy::Use, "use"),
            (CachePolicy::Refresh, "refresh"),
            (CachePolicy::Bypass, "bypass"),
        ],
        CachePolicy::as_str,
    );
    assert_eq!(CachePolicy::default(), CachePolicy::Use);
    check(
        SelectorKind::ALL,
        &[
            (SelectorKind::RoundRobin, "round_robin"),
            (SelectorKind::LeastInflight, "least_inflight"),
            (SelectorKind::HealthAware, "health_aware"),
        ],
        SelectorKind::as_str,
    );
    assert_eq!(SelectorKind::default(), SelectorKind::HealthAware);
    check(
        AuthStyle::ALL,
        &[
            (AuthStyle::Bearer, "bearer"),
            (AuthStyle::ApiKeyHeader, "api_key_header"),
            (AuthStyle::None, "none"),
        ],
        AuthStyle::as_str,
    );
    assert_eq!(AuthStyle::default(), AuthStyle::Bearer);
    check(
        ScopeKind::ALL,
        &[
            (ScopeKind::Chat, "chat"),
            (ScopeKind::Embedding, "embedding"),
            (ScopeKind::Ocr, "ocr"),
        ],
        ScopeKind::as_str,
    );
    check(
        BreakerState::ALL,
        &[
            (BreakerState::Closed, "closed"),
            (BreakerState::Open, "open"),
            (BreakerState::HalfOpen, "half_open"),
        ],
        BreakerState::as_str,
    );
}

#[test]
fn t_27_call_operation_and_event_kind_wire_strings() {
    check(
        CallOperation::ALL,
        &[
            (CallOperation::Chat, "chat"),
            (CallOperation::Embed, "embed"),
            (CallOperation::RecognizeText, "recognize_text"),
            (CallOperation::ParseLayout, "parse_layout"),
        ],
        CallOperation::as_str,
    );
    check(
        EventKind::ALL,
        &[
            (EventKind::Attempt, "attempt"),
            (EventKind::CacheHit, "cache_hit"),
            (EventKind::TerminalFailure, "terminal_failure"),
        ],
        EventKind::as_str,
    );
}

#[test]
fn g_9_scope_reason_wire_strings() {
    check(
        ScopeReason::ALL,
        &[
            (ScopeReason::NoSources, "no_sources"),
            (ScopeReason::RetryExhausted, "retry_exhausted"),
            (ScopeReason::Stalled, "stalled"),
            (ScopeReason::QuotaFull, "quota_full"),
            (ScopeReason::CircuitOpen, "circuit_open"),
            (ScopeReason::BackendUnavailable, "backend_unavailable"),
        ],
        ScopeReason::as_str,
    );
}

#[test]
fn g_10_failure_reason_wire_strings() {
    check(
        FailureReason::ALL,
        &[
            (FailureReason::RateLimited, "rate_limited"),
            (FailureReason::Timeout, "timeout"),
            (FailureReason::NetworkError, "network_error"),
            (FailureReason::SourceDead, "source_dead"),
            (FailureReason::BadResponse, "bad_response"),
            (FailureReason::CircuitOpen, "circuit_open"),
            (FailureReason::QuotaFull, "quota_full"),
            (FailureReason::Paced, "paced"),
        ],
        FailureReason::as_str,
    );
    let attempt: Vec<_> = FailureReason::ALL
        .iter()
        .copied()
        .filter(|r| r.is_attempt_failure())
        .collect();
    assert_eq!(
        attempt,
        [
            FailureReason::RateLimited,
            FailureReason::Timeout,
            FailureReason::NetworkError,
            FailureReason::SourceDead,
            FailureReason::BadResponse, // README D27
        ]
    );
}

#[test]
fn g_11_error_operation_wire_strings() {
    check(
        ErrorOperation::ALL,
        &[
            (ErrorOperation::Chat, "chat"),
            (ErrorOperation::Embedding, "embedding"),
            (ErrorOperation::OcrText, "ocr_text"),
            (ErrorOperation::Parse, "parse"),
            (ErrorOperation::DownloadResult, "download_result"),
        ],
        ErrorOperation::as_str,
    );
}

#[test]
fn g_2_category_wire_strings() {
    check(
        Category::ALL,
        &[
            (Category::Transient, "transient"),
            (Category::SourceDead, "source_dead"),
            (Category::RequestRejected, "request_rejected"),
            (Category::ResultInvalid, "result_invalid"),
        ],
        Category::as_str,
    );
}

#[test]
fn g_28_v_45_reason_code_registry() {
    check(
        ReasonCode::ALL,
        &[
            (ReasonCode::UpstreamFinishError, "upstream_finish_error"),
            (ReasonCode::ToolTruncated, "tool_truncated"),
            (ReasonCode::ToolArgumentsNull, "tool_arguments_null"),
            (ReasonCode::ToolIncomplete, "tool_incomplete"),
            (ReasonCode::LengthWithoutContent, "length_without_content"),
            (
                ReasonCode::FilteredWithoutContent,
                "filtered_without_content",
            ),
            (ReasonCode::EmptyCompletion, "empty_completion"),
            (ReasonCode::MissingDone, "missing_done"),
            (ReasonCode::EarlyEof, "early_eof"),
            (ReasonCode::UpstreamErrorFrame, "upstream_error_frame"),
            (ReasonCode::RateLimited, "rate_limited"),
            (ReasonCode::ContextLengthExceeded, "context_length_exceeded"),
            (ReasonCode::MalformedJson, "malformed_json"),
            (ReasonCode::ProtocolError, "protocol_error"),
            (ReasonCode::ReadError, "read_error"),
            (ReasonCode::LivenessTimeout, "liveness_timeout"),
            (ReasonCode::EmptyResponse, "empty_response"),
            (ReasonCode::InvalidJson, "invalid_json"),
            (ReasonCode::ResponseTooLarge, "response_too_large"),
            (ReasonCode::Refused, "refused"),
            (ReasonCode::ToolCallsInTextMode, "tool_calls_in_text_mode"),
            (ReasonCode::MalformedItem, "malformed_item"),
        ],
        ReasonCode::as_str,
    );
}

#[test]
fn g_15_cause_kind_has_exactly_ten_names() {
    check(
        CauseKind::ALL,
        &[
            (CauseKind::ConnectTimeout, "ConnectTimeout"),
            (CauseKind::ConnectError, "ConnectError"),
            (CauseKind::WriteTimeout, "WriteTimeout"),
            (CauseKind::WriteError, "WriteError"),
            (CauseKind::ReadTimeout, "ReadTimeout"),
            (CauseKind::ReadError, "ReadError"),
            (CauseKind::PoolTimeout, "PoolTimeout"),
            (CauseKind::RemoteProtocolError, "RemoteProtocolError"),
            (CauseKind::NetworkError, "NetworkError"),
            (CauseKind::StreamLivenessTimeout, "StreamLivenessTimeout"),
        ],
        CauseKind::as_str,
    );
}

#[test]
fn g_15_network_fault_kind_maps_to_cause_kind() {
    use NetworkFaultKind as K;
    let table = [
        (K::ConnectTimeout, CauseKind::ConnectTimeout),
        (K::Connect, CauseKind::ConnectError),
        (K::Tls, CauseKind::ConnectError),
        (K::WriteTimeout, CauseKind::WriteTimeout),
        (K::Write, CauseKind::WriteError),
        (K::ReadTimeout, CauseKind::ReadTimeout),
        (K::Read, CauseKind::ReadError),
        (K::PoolTimeout, CauseKind::PoolTimeout),
        (K::Protocol, CauseKind::RemoteProtocolError),
        (K::Other, CauseKind::NetworkError),
    ];
    assert_eq!(table.len(), K::ALL.len());
    for (kind, cause) in table {
        assert_eq!(kind.cause_kind(), cause, "{kind:?}");
    }
}

#[test]
fn port_vocabularies_wire_strings() {
    check(
        LimitGate::ALL,
        &[
            (LimitGate::SourceConcurrency, "source_concurrency"),
            (LimitGate::SourceRpm, "source_rpm"),
            (LimitGate::SourceTpm, "source_tpm"),
            (LimitGate::GlobalConcurrency, "global_concurrency"),
            (LimitGate::GlobalRpm, "global_rpm"),
            (LimitGate::GlobalTpm, "global_tpm"),
        ],
        LimitGate::as_str,
    );
    check(
        Endpoint::ALL,
        &[
            (Endpoint::ChatCompletions, "chat_completions"),
            (Endpoint::Embeddings, "embeddings"),
        ],
        Endpoint::as_str,
    );
    assert_eq!(Endpoint::ChatCompletions.path(), "/chat/completions");
    assert_eq!(Endpoint::Embeddings.path(), "/embeddings");
    check(
        BackendErrorKind::ALL,
        &[
            (BackendErrorKind::Unavailable, "unavailable"),
            (
                BackendErrorKind::SourceNotConfigured,
                "source_not_configured",
            ),
            (BackendErrorKind::Protocol, "protocol"),
        ],
        BackendErrorKind::as_str,
    );
    check(
        RecordErrorKind::ALL,
        &[
            (RecordErrorKind::Unavailable, "unavailable"),
            (RecordErrorKind::Timeout, "timeout"),
            (RecordErrorKind::Rejected, "rejected"),
            (RecordErrorKind::Dropped, "dropped"),
        ],
        RecordErrorKind::as_str,
    );
}

#[test]
fn d12_empty_finish_reason_is_absent() {
    assert_eq!(FinishReason::new(""), None);
    assert_eq!(FinishClass::of(None), FinishClass::Absent);
    assert!(serde_json::from_str::<FinishReason>("\"\"").is_err());
}

#[test]
fn v_2_finish_classes() {
    let table = [
        ("stop", FinishClass::Natural),
        ("tool_calls", FinishClass::Natural),
        ("function_call", FinishClass::Natural),
        ("length", FinishClass::Truncated),
        ("content_filter", FinishClass::Filtered),
        ("sensitive", FinishClass::Filtered),
        ("network_error", FinishClass::UpstreamError),
        ("error", FinishClass::UpstreamError),
        // Case-sensitive and never normalised (V-5): these are Unknown.
        ("STOP", FinishClass::Unknown),
        ("end_turn", FinishClass::Unknown),
        ("Length", FinishClass::Unknown),
        (" stop", FinishClass::Unknown),
    ];
    for (raw, class) in table {
        let reason = FinishReason::new(raw).unwrap();
        assert_eq!(reason.as_str(), raw, "byte-exact");
        assert_eq!(reason.class(), class, "{raw}");
        assert_eq!(FinishClass::of(Some(&reason)), class);
        let json = serde_json::to_string(&reason).unwrap();
        assert_eq!(serde_json::from_str::<FinishReason>(&json).unwrap(), reason);
    }
}
