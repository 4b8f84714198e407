//! Conformance rows of 95 §14 on the error, operation and stream fields: HTTP status, empty
//! messages, scrubbed bodies, OCR operations, stream end, stall, hedge losers, effort and
//! sampling, image digests and text caps.
//!
//! Separate from the cost rows so each file is one group of the conformance table.

use super::*;

#[test]
fn cf_358_t_24_http_status_as_received() {
    for status in [503u16, 529] {
        let mut f = AttemptFailure::new(format!("HTTP {status}"), ErrorOperation::Chat);
        f.http_status = Some(status);
        let row = priced().attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(AttemptError::transient(f)),
        ));
        assert_eq!(row.http_status_code, Some(i32::from(status)));
    }
}

// covers: T-22
#[test]
fn cf_359_t_21_t_23_empty_message_falls_back_to_type_name() {
    for cause in [
        CauseKind::ConnectTimeout,
        CauseKind::ReadTimeout,
        CauseKind::WriteTimeout,
        CauseKind::PoolTimeout,
    ] {
        let mut f = AttemptFailure::new("", ErrorOperation::Chat);
        f.cause = Some(cause);
        let row = priced().attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(AttemptError::transient(f)),
        ));
        assert_eq!(row.error.as_deref(), Some("TransientError"));
        assert_eq!(row.error_type, Some("TransientError"));
        assert_eq!(row.cause_type, Some(cause));
    }
}

#[test]
fn cf_360_t_25_error_body_is_scrubbed_summary() {
    let mut s = SourceConfig::new("openai_1", "openai", "http://127.0.0.1:9", None, "m");
    s.api_key = Some(Secret::new("key-12345".to_owned()));
    let long = format!(
        "{}  Authorization: Bearer abc.def key-12345 from 10.0.0.1 {}",
        "x".repeat(3000),
        "tail"
    );
    let mut f = AttemptFailure::new("HTTP 500", ErrorOperation::Chat);
    f.body_text = Some(long);
    let row = priced().attempt_row(&attempt(
        chat_call(),
        Arc::new(s),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    let body = row.error_body.unwrap();
    assert!(body.chars().count() <= 2048);
    assert!(body.ends_with("tail"));
    for secret in ["abc.def", "key-12345", "10.0.0.1"] {
        assert!(!body.contains(secret), "{secret} leaked");
    }
    assert_eq!(row.error.as_deref(), Some("HTTP 500"), "never raw_text");
    // Empty body → NULL.
    let mut f = AttemptFailure::new("HTTP 500", ErrorOperation::Chat);
    f.body_text = Some("   ".into());
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    assert_eq!(row.error_body, None);
}

#[test]
fn cf_361_t_20_success_row_error_fields_null() {
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", ok_result(1, 1)));
    assert_eq!(
        (
            row.http_status_code,
            row.error_type,
            row.cause_type,
            row.error_body,
            row.error
        ),
        (None, None, None, None, None)
    );
}

#[test]
fn cf_362_t_27_ocr_operation_from_call_site() {
    let mut f = AttemptFailure::new("result archive missing", ErrorOperation::DownloadResult);
    f.http_status = Some(200);
    let call = call_with(
        CallOperation::ParseLayout,
        RowInput::ocr(&OcrRequest::new(vec![0u8; 7])),
    );
    let row = priced().attempt_row(&attempt(
        call.clone(),
        src("ocr"),
        AttemptRowOutcome::Failed(AttemptError::transient(f)),
    ));
    assert_eq!(row.operation, CallOperation::ParseLayout);
    assert_eq!(
        row.error.as_deref(),
        Some("TransientError: result archive missing")
    );
    assert_eq!(row.http_status_code, Some(200));
    assert_eq!(
        row.messages,
        r#"[{"role":"user","content":"<ocr:layout image_bytes=7>"}]"#
    );
    let term = priced().terminal_row(&terminal(call, TerminalOutcome::Error(exhausted())));
    assert!(term.error.unwrap().starts_with("AllSourcesExhausted: "));
}

#[test]
fn cf_365_t_29_stream_end_from_response() {
    let mut r = ok_result(1, 1);
    r.stream_end = Some(StreamEnd::EofAfterFinish);
    let row = priced().attempt_row(&success(chat_call(), "m", r));
    assert_eq!(row.stream_end, Some(StreamEnd::EofAfterFinish));
}

#[test]
fn cf_366_t_29_stream_end_null_on_failed_cache_terminal() {
    let s = priced();
    let rows = [
        s.attempt_row(&attempt(
            chat_call(),
            src("m"),
            AttemptRowOutcome::Failed(transient("x")),
        )),
        s.cache_hit_row(&cache_hit(chat_call(), historic())),
        s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted()))),
    ];
    assert_eq!(rows.map(|r| r.stream_end), [None, None, None]);
}

#[test]
fn cf_367_t_28_non_stream_and_cancelled_have_no_stall_or_stream_end() {
    let s = priced();
    let ok = s.attempt_row(&success(chat_call(), "m", ok_result(1, 1)));
    let mut streamed = ok_result(1, 1);
    streamed.stall_ms = Some(3200.9);
    streamed.stall_count = Some(2);
    let cancelled = s.attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Cancelled(CancelLabel::Cancelled),
    ));
    for row in [&ok, &cancelled] {
        assert_eq!(
            (row.stream_end, row.stall_ms, row.stall_count),
            (None, None, None)
        );
    }
    assert_eq!(cancelled.error.as_deref(), Some("cancelled"));
    assert_eq!(cancelled.error_type, None);
    let stalled = s.attempt_row(&success(chat_call(), "m", streamed));
    assert_eq!(
        (stalled.stall_ms, stalled.stall_count),
        (Some(3200), Some(2))
    );
}

#[test]
fn cf_384_t_16_hedge_cancelled_loser_row() {
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Cancelled(CancelLabel::HedgeCancelled),
    ));
    assert_eq!(row.error.as_deref(), Some("hedge_cancelled"));
    assert_eq!(
        (
            row.stall_ms,
            row.stall_count,
            row.http_status_code,
            row.cost
        ),
        (None, None, None, None)
    );
    assert_eq!(row.thinking_observation, Some(ThinkingObservation::Unknown));
}

#[test]
fn cf_368_embed_and_ocr_rows_have_no_effort_or_sampling() {
    let mut s = SourceConfig::new("e_1", "openai", "http://127.0.0.1:9", None, "emb");
    s.enable_thinking = Some(true);
    s.reasoning_effort = Some(Effort::High);
    s.extra_body = obj(json!({"dimensions": 8}));
    let s = Arc::new(s);
    let embed = call_with(
        CallOperation::Embed,
        RowInput::embed(&EmbedRequest::new(vec!["a".into(), "b".into()]), 1),
    );
    let ocr = call_with(
        CallOperation::RecognizeText,
        RowInput::ocr(&OcrRequest::new(vec![1u8; 3])),
    );
    for call in [embed, ocr] {
        let ok = priced().attempt_row(&attempt(
            call.clone(),
            s.clone(),
            AttemptRowOutcome::Success(Box::new(ok_result(3, 0))),
        ));
        let failed = priced().attempt_row(&attempt(
            call.clone(),
            s.clone(),
            AttemptRowOutcome::Failed(transient("x")),
        ));
        let term = priced().terminal_row(&terminal(call, TerminalOutcome::Error(exhausted())));
        for row in [&ok, &failed, &term] {
            assert_eq!(
                (row.reasoning_effort, row.sampling.as_deref()),
                (None, None)
            );
            assert_eq!((row.stall_ms, row.stall_count), (None, None));
        }
        assert!(failed.error.is_some() && term.error.is_some());
    }
}

#[test]
fn cf_369_effort_applied_on_attempt_request_level_elsewhere() {
    let mut r = ok_result(1, 1);
    r.applied_effort = Some(Effort::Low);
    let s = priced();
    assert_eq!(
        s.attempt_row(&success(chat_call(), "m", r))
            .reasoning_effort,
        Some(Effort::Low)
    );
    assert_eq!(
        s.cache_hit_row(&cache_hit(chat_call(), historic()))
            .reasoning_effort,
        Some(Effort::Medium)
    );
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(term.reasoning_effort, Some(Effort::Medium));
}

#[test]
fn cf_370_c_47_image_part_is_digested() {
    let msg = obj(json!({"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAABBBB"}}
    ]}));
    let call = call_with(
        CallOperation::Chat,
        RowInput::chat(&ChatRequest::new(vec![msg])),
    );
    let row = priced().attempt_row(&success(call, "m", ok_result(1, 1)));
    assert!(!row.messages.contains("AAAABBBB"));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    assert_eq!(v[0]["content"][0], json!({"type": "text", "text": "look"}));
    assert_eq!(v[0]["content"][1]["type"], "image_url");
    assert_eq!(v[0]["content"][1]["sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn cf_371_t_35_t_36_text_cap_10_on_25_chars() {
    let content = "abcdefghijklmnopqrstuvwxy";
    let req = ChatRequest::new(vec![obj(json!({"role": "user", "content": content}))]);
    let input = RowInput::chat(&req);
    let call = call_with(CallOperation::Chat, input);
    let s = RowShaper::new(None, Some(10), true).unwrap();
    let mut r = ok_result(1, 1);
    r.content = content.into();
    let row = s.attempt_row(&success(call.clone(), "m", r));
    let v: Value = serde_json::from_str(&row.messages).unwrap();
    assert_eq!(v[0]["content"], "abcdefghij…(+15 chars)");
    assert_eq!(row.response, "abcdefghij…(+15 chars)");
    assert_eq!(row.thinking, "thought");
    assert_eq!(
        req.messages[0]["content"], content,
        "caller's message unchanged"
    );
}
