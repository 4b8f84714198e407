//! Every public wire case (`shared/cases/NNN-*.md`) end to end: `pgw sim` replays the case's
//! bytes (copied into `tests/fixtures/case_NNN_*.json`; nothing is read from `shared` at test
//! time) and `pgw chat --json` asserts the specification's outcome (05 R-60), its exit code
//! (R-51) and its JSON (R-50).
//!
//! The outcome is the specification's, not the case file's "Expected" section; where they
//! differ the test says why. `pgw chat` runs in fidelity (openai) mode and streams unless the
//! test says otherwise; the scope has one source, so a failure that the retry loop absorbs
//! surfaces as `AllSourcesExhausted` (exit 7) with the absorbed failure in `last_failure`.
//! In fixture 034 A the placeholders `<RAY_ID>` / `<CLIENT_IP>` are concrete values so that the
//! redaction of the IP can be asserted.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::support::chat_case;
use serde_json::Value;

fn ok(case: &str, extra: &[&str]) -> Value {
    let (code, value) = chat_case(case, extra);
    assert_eq!(code, 0, "{case}: {value}");
    assert_eq!(value["ok"], true);
    value["response"].clone()
}

/// Asserts `AllSourcesExhausted` (exit 7) whose last failure is Transient with `reason`.
fn exhausted(case: &str, extra: &[&str], reason: Option<&str>) -> Value {
    let (code, value) = chat_case(case, extra);
    assert_eq!(code, 7, "{case}: {value}");
    let error = &value["error"];
    assert_eq!(error["type"], "AllSourcesExhausted", "{case}: {value}");
    assert_eq!(error["scope_reason"], "retry_exhausted");
    let last = &error["last_failure"];
    assert_eq!(last["type"], "TransientError", "{case}: {value}");
    assert_eq!(last["category"], "transient");
    if let Some(reason) = reason {
        assert_eq!(last["reason_code"], reason, "{case}: {value}");
    }
    value["error"].clone()
}

fn message(response: &Value) -> &Value {
    &response["completion"]["message"]
}

fn tool(response: &Value, i: usize) -> (&str, &str, &str) {
    let t = &message(response)["tool_calls"][i];
    (
        t["id"].as_str().unwrap(),
        t["function"]["name"].as_str().unwrap(),
        t["function"]["arguments"].as_str().unwrap(),
    )
}

fn assert_complete(response: &Value, content: &str) {
    assert_eq!(response["content"], content);
    assert_eq!(response["finish_reason"], "stop");
    assert_eq!(response["stream_end"], "done");
}

// ------------------------------------------------------------------ 001, 002, 015 B: termination

#[test]
fn case_001_a_stream_ends_without_done_is_truncated() {
    // Spec wins (R-60, 50 V-12): a finish chunk then EOF without [DONE] and without usage is
    // truncated → Transient missing_done, retried; the case expected "complete".
    exhausted("case_001_a", &[], Some("missing_done"));
}

#[test]
fn case_001_a_salvage_delivers_in_text_mode() {
    // R-60: such servers are configured with MISSING_DONE=salvage (text mode).
    let r = ok(
        "case_001_a",
        &["--missing-done", "salvage", "--mode", "text"],
    );
    assert_eq!(r["content"], "Hello there.");
    assert_eq!(r["stream_end"], "salvaged");
}

#[test]
fn case_001_b_done_without_trailing_newline_is_complete() {
    assert_complete(&ok("case_001_b", &[]), "Hello there.");
}

#[test]
fn case_002_a_clean_close_after_partial_content_is_truncated() {
    exhausted("case_002_a", &[], Some("missing_done"));
}

#[test]
fn case_002_b_reset_after_partial_content_is_transient() {
    // Same classification as A (Transient, retried); B carries the transport detail.
    exhausted("case_002_b", &[], None);
}

#[test]
fn case_015_a_empty_finish_reason_is_absent() {
    assert_complete(&ok("case_015_a", &[]), " Hello there!");
}

#[test]
fn case_015_b_cut_after_empty_finish_reasons_is_truncated() {
    exhausted("case_015_b", &[], Some("missing_done"));
}

// ------------------------------------------------------------------ 004, 005, 007, 008: chunks

#[test]
fn case_004_a_usage_only_trailing_chunk() {
    let r = ok("case_004_a", &[]);
    assert_complete(&r, "Hi");
    assert_eq!(r["usage"]["prompt_tokens"], 26);
    assert_eq!(r["usage"]["completion_tokens"], 2);
    assert_eq!(r["usage_source"], "measured");
}

#[test]
fn case_004_b_usage_on_a_choice_without_finish_key() {
    let r = ok("case_004_b", &[]);
    assert_complete(&r, "Hi");
    assert_eq!(r["usage"]["prompt_tokens"], 65);
    assert_eq!(r["usage"]["completion_tokens"], 251);
    assert_eq!(r["usage"]["cached_prompt_tokens"], 64);
}

#[test]
fn case_005_azure_filter_annotation_chunks() {
    let r = ok("case_005", &[]);
    assert_complete(&r, "Hi there");
    assert_eq!(r["completion"]["response_id"], "chatcmpl-XXXX");
    assert_eq!(r["model_reported"], "gpt-4o");
}

#[test]
fn case_007_reasoning_field_names() {
    for variant in ["case_007_a", "case_007_b", "case_007_c"] {
        let r = ok(variant, &[]);
        assert_complete(&r, "2");
        assert_eq!(r["thinking"], "1+1 is 2.", "{variant}");
    }
}

#[test]
fn case_008_null_valued_delta_fields() {
    let r = ok("case_008_stream", &[]);
    assert_complete(&r, "Sure, done.");
    assert_eq!(r["thinking"], "");
    assert_eq!(message(&r)["role"], "assistant");
    assert!(
        message(&r)["tool_calls"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
}

#[test]
fn case_008_non_stream_tool_answer_with_null_content() {
    let r = ok("case_008_non_stream", &["--no-stream"]);
    assert_eq!(r["content"], "");
    assert_eq!(r["finish_reason"], "tool_calls");
    assert_eq!(tool(&r, 0), ("call_1", "lookup", r#"{"q":"x"}"#));
}

// ------------------------------------------------------------------ 009, 011, 012, 013: tools

#[test]
fn case_009_a_tool_call_without_index_finish_stop_kept_raw() {
    // 50 V-72: delivered, `stop` kept raw (no normalisation to tool_calls, as 013).
    let r = ok("case_009_a", &[]);
    assert_eq!(r["finish_reason"], "stop");
    let (id, name, args) = tool(&r, 0);
    assert_eq!((id, name), ("call_0001", "read_file"));
    assert_eq!(
        args,
        r#"{"offset":1,"limit":100,"path":"/app/docs/GUIDE.md"}"#
    );
}

#[test]
fn case_009_a_text_mode_is_tool_calls_in_text_mode() {
    // README D27 (was 50 V-72 empty_completion): in text mode a tool-only turn is
    // ResultInvalid `tool_calls_in_text_mode`, not retried (exit 6, one attempt).
    let (code, value) = chat_case("case_009_a", &["--mode", "text"]);
    assert_eq!(code, 6, "{value}");
    assert_eq!(value["error"]["reason_code"], "tool_calls_in_text_mode");
    assert_eq!(value["error"]["attempts"], 1);
}

#[test]
fn case_009_b_index_null_two_calls() {
    let r = ok("case_009_b", &[]);
    assert_eq!(r["finish_reason"], "tool_calls");
    assert_eq!(
        tool(&r, 0),
        ("call_A", "get_weather", r#"{"city":"Paris"}"#)
    );
    assert_eq!(tool(&r, 1), ("call_B", "get_time", r#"{"tz":"CET"}"#));
}

#[test]
fn case_011_tool_call_arguments_null() {
    let r = ok("case_011", &[]);
    assert_eq!(r["finish_reason"], "tool_calls");
    assert_eq!(
        tool(&r, 0),
        (
            "call_1",
            "get_current_weather",
            r#"{"location":"Boston, MA"}"#
        )
    );
    assert_eq!(tool(&r, 1), ("call_2", "get_time", r#"{"tz":"EST"}"#));
}

#[test]
fn case_012_tool_call_without_id_gets_a_synthesized_id() {
    let r = ok("case_012", &[]);
    assert_eq!(r["finish_reason"], "tool_calls");
    let (id, name, args) = tool(&r, 0);
    assert!(!id.is_empty());
    assert_eq!(
        (name, args),
        ("read_file", r#"{"filepath":"convex/schema.ts"}"#)
    );
    assert_eq!(r["content"], "");
    // Stable: the same bytes give the same id.
    assert_eq!(tool(&ok("case_012", &[]), 0).0, id);
}

#[test]
fn case_013_tool_calls_with_finish_stop_not_normalised() {
    // Spec wins (R-60, V-5): `stop` is kept raw; the case suggested normalising to tool_calls.
    let r = ok("case_013", &[]);
    assert_complete(&r, "");
    assert_eq!(
        tool(&r, 0),
        ("call_1", "get_weather", r#"{"location":"Seoul"}"#)
    );
}

// ------------------------------------------------------------------ 016: finish reasons

#[test]
fn case_016_a_non_stream_eos_token_kept_raw() {
    // Spec wins (R-60, V-5): `eos_token` is not normalised to `stop`.
    let r = ok("case_016_a", &["--no-stream"]);
    assert_eq!(
        r["content"],
        "Hugging Face is a company that builds open-source ML tools."
    );
    assert_eq!(r["finish_reason"], "eos_token");
    assert_eq!(r["usage"]["prompt_tokens"], 17);
    assert_eq!(r["usage"]["completion_tokens"], 14);
}

#[test]
fn case_016_b_stream_end_kept_raw() {
    let r = ok("case_016_b", &[]);
    assert_eq!(r["content"], "OK.");
    assert_eq!(r["finish_reason"], "end");
}

// ------------------------------------------------------------------ 018, 019: in-band errors

#[test]
fn case_018_a_mid_stream_error_frame_is_transient() {
    exhausted("case_018_a", &[], Some("upstream_error_frame"));
}

#[test]
fn case_018_b_in_band_429_is_a_rate_limited_round() {
    // 40 S-35 / 30 G-46: a rate-limited round is exempt from the retry budget and has no
    // Retry-After, so a single-source call keeps asking until its deadline (set here).
    let (code, value) = chat_case("case_018_b", &["--set", "LLM__CALL_DEADLINE_S=1"]);
    assert_eq!(code, 11, "{value}");
    assert_eq!(value["error"]["type"], "CallDeadlineExceeded");
    assert!(value["error"]["attempts"].as_u64().unwrap() > 3, "{value}");
}

#[test]
fn case_018_c_error_with_empty_choices_is_transient() {
    exhausted("case_018_c", &[], Some("upstream_error_frame"));
}

#[test]
fn case_019_inband_context_error_in_200_stream_is_rejected() {
    let (code, value) = chat_case("case_019", &[]);
    assert_eq!(code, 5, "{value}");
    assert_eq!(value["error"]["type"], "RequestRejectedError");
    assert_eq!(value["error"]["reason_code"], "context_length_exceeded");
    assert_eq!(value["error"]["attempts"], 1, "not retried");
}

// ------------------------------------------------------------------ 021–028: SSE framing, bytes

#[test]
fn case_021_openrouter_processing_comments() {
    assert_complete(&ok("case_021", &[]), "亚");
}

#[test]
fn case_022_dataless_event_after_keepalive() {
    assert_complete(&ok("case_022", &[]), "Hello");
}

#[test]
fn case_024_data_prefix_without_space() {
    assert_complete(&ok("case_024", &[]), "你好  world");
}

#[test]
fn case_025_a_crlf_split_between_cr_and_lf() {
    assert_complete(&ok("case_025_a", &[]), "Hi");
}

#[test]
fn case_025_b_c_bare_cr_and_mixed_terminators() {
    // The framing is fine in both modes; these streams never send `role`, so fidelity mode
    // fails them (40 S-76: `role must be assistant`, Transient protocol_error) where the case
    // expected "complete". Text mode ignores `role` (S-54) and completes.
    for variant in ["case_025_b", "case_025_c"] {
        assert_complete(&ok(variant, &["--mode", "text"]), "Hi");
        exhausted(variant, &[], Some("protocol_error"));
    }
}

#[test]
fn case_027_utf8_split_across_reads() {
    assert_complete(&ok("case_027_a", &[]), "修复方法");
    assert_complete(&ok("case_027_b", &[]), "ok 🌍");
}

#[test]
fn case_028_leading_bom() {
    assert_complete(&ok("case_028_a", &[]), "AB\u{feff}");
    assert_complete(&ok("case_028_b", &[]), "AB\u{feff}");
}

// ------------------------------------------------------------------ 030–032: Retry-After

#[test]
fn case_030_a_hint_above_the_cap_fails_fast_with_the_hint() {
    // The ms header wins (33 s). The test caps hints at 5 s (RETRY__MAX_HINT_S, 05 R-35): the
    // call fails at once carrying retry_after_s 33 instead of sleeping.
    let (code, value) = chat_case("case_030_a", &["--set", "LLM__RETRY__MAX_HINT_S=5"]);
    assert_eq!(code, 7, "{value}");
    let error = &value["error"];
    assert_eq!(error["retry_after_s"], 33.0);
    assert_eq!(error["attempts"], 1);
    assert_eq!(error["last_failure"]["http_status"], 429);
    assert_eq!(error["last_failure"]["category"], "transient");
}

#[test]
fn case_030_b_fractional_ms_header_then_success() {
    let started = std::time::SystemTime::now();
    let r = ok("case_030_b", &[]);
    assert_eq!(r["content"], "recovered");
    assert_eq!(r["call_stats"]["attempts"], 2);
    assert!(
        started.elapsed().unwrap().as_secs_f64() >= 1.5,
        "slept the 1.5 s hint"
    );
}

#[test]
fn case_030_c_no_header_backoff_applies() {
    // Spec wins (R-60, G-19): no phrase search for "retry after 45 seconds"; plain backoff.
    let started = std::time::SystemTime::now();
    let r = ok("case_030_c", &[]);
    assert_eq!(r["call_stats"]["attempts"], 2);
    assert!(
        started.elapsed().unwrap().as_secs_f64() < 10.0,
        "no 45 s sleep"
    );
}

#[test]
fn case_031_429_retry_after_http_date() {
    // Spec wins (R-60): the hint is computed from the local clock, not the `Date` header; the
    // 2015 date is in the past → no hint, backoff, then the next response succeeds.
    let r = ok("case_031", &[]);
    assert_eq!(r["content"], "recovered");
    assert_eq!(r["call_stats"]["attempts"], 2);
}

#[test]
fn case_032_429_retry_after_huge() {
    // R-60: slept in full unless a deadline or RETRY__MAX_HINT_S is set, so the test sets one.
    let (code, value) = chat_case("case_032", &["--set", "LLM__RETRY__MAX_HINT_S=60"]);
    assert_eq!(code, 7, "{value}");
    assert_eq!(value["error"]["retry_after_s"], 86400.0);
    assert_eq!(value["error"]["attempts"], 1);
    let (code, value) = chat_case("case_032", &["--set", "LLM__CALL_DEADLINE_S=1"]);
    assert_eq!(code, 11, "{value}");
    assert_eq!(value["error"]["type"], "CallDeadlineExceeded");
}

// ------------------------------------------------------------------ 034, 035: error bodies

#[test]
fn case_034_html_error_page_5xx() {
    for (variant, status) in [("case_034_a", 520), ("case_034_b", 502)] {
        let error = exhausted(variant, &[], None);
        assert_eq!(error["last_failure"]["http_status"], status);
        // The spec keeps a whitespace-collapsed body excerpt in the message with addresses
        // scrubbed (30 G-26); the case's "<title> only" summary is not specified.
        let text = error.to_string();
        assert!(!text.contains("203.0.113.7"), "client IP redacted: {text}");
    }
}

#[test]
fn case_035_context_length_exceeded_400() {
    for variant in ["a", "b", "c", "d", "e"] {
        let (code, value) = chat_case(&format!("case_035_{variant}"), &[]);
        assert_eq!(code, 5, "{variant}: {value}");
        assert_eq!(value["error"]["type"], "RequestRejectedError");
        assert_eq!(value["error"]["reason_code"], "context_length_exceeded");
        assert_eq!(value["error"]["attempts"], 1, "{variant}: not retried");
    }
}
