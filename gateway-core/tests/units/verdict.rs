//! The completion verdict kernel, spec 50: finish classes (V-2), stream completeness and
//! truncation (V-8..V-19), output summaries (V-20..V-29), failures and messages (V-39..V-41),
//! the reason-code registry (V-43..V-45), usage resolution (40 S-105) and the V-70 invariants.
//! Conformance rows CF-158..CF-162, CF-188, CF-200 (kernel) and the fact-level part of
//! CF-201..CF-234, CF-246..CF-249 (the wire framing itself is the accumulator's).

use gateway_core::verdict::{
    AttemptFacts, COMPLETENESS_CODES, Completeness, OutputSummary, StreamFacts, StreamTerminal,
    TERMINAL_CODES, VERDICT_CODES, Verdict, VerdictFailure, classify_finish, classify_finish_value,
    effective_finish, fill_null_arguments, has_string, judge_attempt, judge_completeness,
    judge_truncation, reason_category, resolve_usage_source, stream_is_complete, summarize_message,
    summarize_text, tool_snapshot_ok,
};
use gateway_ports::{
    AttemptError, Category, FailureReason, FinishClass, MissingDone, OpenAiChatCompletion,
    ReasonCode, ResponseMode, StreamEnd, UsageSource,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const SRC: &str = "qwen_1";
const TEXT: ResponseMode = ResponseMode::Text;
const OPENAI: ResponseMode = ResponseMode::OpenAi;

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn tool_ok() -> Value {
    json!({"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}})
}

fn completion(finish: Option<&str>) -> OpenAiChatCompletion {
    OpenAiChatCompletion::try_new(
        obj(json!({"role":"assistant","content":"a"})),
        finish.map(str::to_owned),
        None,
        None,
    )
    .unwrap_or_else(|e| panic!("valid completion: {e}"))
}

fn stream(terminal: StreamTerminal, usage_after_finish: bool, any_fragment: bool) -> StreamFacts {
    StreamFacts {
        terminal,
        usage_after_finish,
        any_fragment,
    }
}

// ---------------------------------------------------------------- V-2 finish classes

// covers: V-77
#[test]
fn cf_158_v_2_classify_finish_table() {
    let rows: [(Option<&str>, FinishClass); 15] = [
        (Some("stop"), FinishClass::Natural),
        (Some("tool_calls"), FinishClass::Natural),
        (Some("function_call"), FinishClass::Natural),
        (Some("length"), FinishClass::Truncated),
        (Some("content_filter"), FinishClass::Filtered),
        (Some("sensitive"), FinishClass::Filtered),
        (Some("network_error"), FinishClass::UpstreamError),
        (Some("error"), FinishClass::UpstreamError),
        (None, FinishClass::Absent),
        (Some("STOP"), FinishClass::Unknown),
        (Some("end_turn"), FinishClass::Unknown),
        (Some("stop_sequence"), FinishClass::Unknown),
        (Some("eos_token"), FinishClass::Unknown),
        (Some("network-error"), FinishClass::Unknown),
        (Some("end"), FinishClass::Unknown),
    ];
    for (value, class) in rows {
        assert_eq!(classify_finish(value), class, "{value:?}");
    }
    // Non-string values found in cache entries (e.g. 5) are unknown; null is absent.
    assert_eq!(classify_finish_value(Some(&json!(5))), FinishClass::Unknown);
    assert_eq!(
        classify_finish_value(Some(&json!(null))),
        FinishClass::Absent
    );
    assert_eq!(classify_finish_value(None), FinishClass::Absent);
    assert_eq!(
        classify_finish_value(Some(&json!("stop"))),
        FinishClass::Natural
    );
}

#[test]
fn d12_v_2_empty_finish_is_absent() {
    assert_eq!(classify_finish(Some("")), FinishClass::Absent);
    assert_eq!(classify_finish_value(Some(&json!(""))), FinishClass::Absent);
}

// covers: V-3
#[test]
fn cf_200_v_59_effective_finish() {
    let length = completion(Some("length"));
    assert_eq!(effective_finish(Some("stop"), Some(&length)), Some("stop"));
    assert_eq!(effective_finish(None, Some(&length)), Some("length"));
    assert_eq!(effective_finish(None, None), None);
    // D12: an empty string is none at the top level.
    assert_eq!(effective_finish(Some(""), Some(&length)), Some("length"));
    assert_eq!(effective_finish(Some(""), None), None);
    assert_eq!(effective_finish(None, Some(&completion(None))), None);
}

// ---------------------------------------------------------------- V-8, V-11 completeness

/// (done, finish, usage after finish, measured, result).
type CompleteRow<'a> = (bool, Option<&'a str>, bool, bool, Option<StreamEnd>);

#[test]
fn cf_159_v_11_stream_is_complete_truth_table() {
    let rows: [CompleteRow<'_>; 7] = [
        (true, None, false, false, Some(StreamEnd::Done)),
        (true, Some("stop"), true, true, Some(StreamEnd::Done)),
        (
            false,
            Some("stop"),
            true,
            true,
            Some(StreamEnd::EofAfterFinish),
        ),
        (
            false,
            Some("length"),
            true,
            true,
            Some(StreamEnd::EofAfterFinish),
        ),
        (false, None, true, true, None),
        (false, Some("stop"), false, true, None),
        (false, Some("stop"), true, false, None),
    ];
    for (done, finish, after, measured, expected) in rows {
        assert_eq!(
            stream_is_complete(done, finish, after, measured),
            expected,
            "{done} {finish:?} {after} {measured}"
        );
    }
    // D12: an empty finish is no finish.
    assert_eq!(stream_is_complete(false, Some(""), true, true), None);
}

#[test]
fn v_14_truncation_order() {
    use Completeness::{Continue, Truncated};
    for any in [false, true] {
        for md in [MissingDone::Retry, MissingDone::Salvage] {
            // Step 1: fidelity never salvages, zero output or not.
            assert_eq!(
                judge_truncation(OPENAI, md, any),
                Truncated(ReasonCode::MissingDone)
            );
            // Step 2: text, zero output → early_eof whatever MISSING_DONE says.
            if !any {
                assert_eq!(
                    judge_truncation(TEXT, md, any),
                    Truncated(ReasonCode::EarlyEof)
                );
            }
        }
    }
    // Steps 3 and 4.
    assert_eq!(
        judge_truncation(TEXT, MissingDone::Retry, true),
        Truncated(ReasonCode::MissingDone)
    );
    assert_eq!(
        judge_truncation(TEXT, MissingDone::Salvage, true),
        Continue(StreamEnd::Salvaged)
    );
}

#[test]
fn v_7_terminal_faults_fail_before_completeness() {
    // A finish, a measured usage after it and then a broken body: never a clean end (V-73).
    for (terminal, code) in [
        (StreamTerminal::ReadError, ReasonCode::ReadError),
        (StreamTerminal::FrameTooLarge, ReasonCode::ResponseTooLarge),
        (StreamTerminal::WatchdogExpired, ReasonCode::LivenessTimeout),
    ] {
        for mode in [TEXT, OPENAI] {
            let facts = stream(terminal, true, true);
            assert_eq!(
                judge_completeness(mode, MissingDone::Salvage, &facts, Some("stop"), true),
                Completeness::TransportFailed(code)
            );
        }
        assert_eq!(terminal.failure_code(), Some(code));
    }
    assert_eq!(StreamTerminal::Done.failure_code(), None);
    assert_eq!(StreamTerminal::End.failure_code(), None);
}

/// The completeness matrix: terminal × finish × usage position × measured × mode × MISSING_DONE
/// × output, against V-8 and V-14 written out independently.
#[test]
fn v_8_v_14_completeness_matrix() {
    for terminal in [StreamTerminal::Done, StreamTerminal::End] {
        for finish in [None, Some("stop"), Some("length"), Some("")] {
            for after in [false, true] {
                for measured in [false, true] {
                    for mode in [TEXT, OPENAI] {
                        for md in [MissingDone::Retry, MissingDone::Salvage] {
                            for any in [false, true] {
                                let facts = stream(terminal, after, any);
                                let got = judge_completeness(mode, md, &facts, finish, measured);
                                let finish_present = finish.is_some_and(|f| !f.is_empty());
                                let expected = if terminal == StreamTerminal::Done {
                                    Completeness::Continue(StreamEnd::Done)
                                } else if finish_present && after && measured {
                                    Completeness::Continue(StreamEnd::EofAfterFinish)
                                } else if mode == OPENAI {
                                    Completeness::Truncated(ReasonCode::MissingDone)
                                } else if !any {
                                    Completeness::Truncated(ReasonCode::EarlyEof)
                                } else if md == MissingDone::Retry {
                                    Completeness::Truncated(ReasonCode::MissingDone)
                                } else {
                                    Completeness::Continue(StreamEnd::Salvaged)
                                };
                                assert_eq!(
                                    got, expected,
                                    "{terminal:?} {finish:?} {after} {measured} {mode} {md} {any}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- V-21..V-29 summaries

// covers: V-20, V-21
#[test]
fn cf_161_v_28_summarize_text() {
    let rows = [
        (("", ""), (false, false, false, true)),
        (("  ", ""), (true, false, false, true)),
        (("", "think"), (true, false, false, true)),
        (("hi", ""), (true, true, false, true)),
    ];
    for ((content, thinking), (a, b, p, ok)) in rows {
        assert_eq!(
            summarize_text(content, thinking),
            OutputSummary::new(a, b, p, ok),
            "{content:?} {thinking:?}"
        );
    }
}

// covers: V-20, V-22
#[test]
fn cf_162_v_29_summarize_message() {
    let rows = [
        (json!({"role":"assistant"}), "", (false, false, false, true)),
        (
            json!({"role":"assistant","content":null}),
            "",
            (false, false, false, true),
        ),
        (
            json!({"role":"assistant","refusal":"no"}),
            "",
            (true, false, false, true),
        ),
        (
            json!({"role":"assistant","reasoning_content":"r"}),
            "",
            (true, false, false, true),
        ),
        (
            json!({"role":"assistant","content":" "}),
            " ",
            (true, false, false, true),
        ),
        (
            json!({"role":"assistant","x":{"y":["","z"]}}),
            "",
            (true, false, false, true),
        ),
        (
            json!({"role":"assistant","tool_calls":[null]}),
            "",
            (false, false, false, true),
        ),
        (
            json!({"role":"assistant","tool_calls":[tool_ok()]}),
            "",
            (true, true, true, true),
        ),
        (
            json!({"role":"assistant","tool_calls":[{"id":"t"}]}),
            "",
            (true, false, true, false),
        ),
        (
            json!({"role":"assistant","content":"a"}),
            "a",
            (true, true, false, true),
        ),
    ];
    for (message, projected, (a, b, p, ok)) in rows {
        let summary = summarize_message(&obj(message.clone()), projected);
        assert_eq!(
            (
                summary.any_output,
                summary.body_output,
                summary.tools_present,
                summary.tools_ok
            ),
            (a, b, p, ok),
            "{message}"
        );
    }
}

#[test]
fn v_23_has_string() {
    assert!(has_string(&json!("x")));
    assert!(has_string(&json!(" ")));
    assert!(!has_string(&json!("")));
    assert!(has_string(&json!({"a":{"b":["","z"]}})));
    assert!(!has_string(&json!({"a":{"b":["",null, 1, true]}})));
    assert!(!has_string(&json!(5)));
    assert!(!has_string(&json!(null)));
}

#[test]
fn cf_160_v_24_tool_snapshot_ok() {
    let rows = [
        (json!({"role":"assistant"}), true),
        (json!({"role":"assistant","tool_calls":null}), true),
        (
            json!({"role":"assistant","tool_calls":[null, tool_ok()]}),
            true,
        ),
        (json!({"role":"assistant","tool_calls":{}}), false),
        (
            json!({"role":"assistant","tool_calls":[{"id":"t1","type":"function"}]}),
            false,
        ),
        (
            json!({"role":"assistant","tool_calls":[tool_ok(), tool_ok()]}),
            false,
        ),
    ];
    for (message, ok) in rows {
        assert_eq!(tool_snapshot_ok(&obj(message.clone())), ok, "{message}");
    }
}

#[test]
fn v_24_tool_snapshot_field_rules() {
    let with = |tool: Value| obj(json!({"role":"assistant","tool_calls":[tool]}));
    // Empty arguments are fine; a non-string id, an empty id, a wrong type, a missing or empty
    // name, non-string arguments and a non-object element are not.
    assert!(tool_snapshot_ok(&with(
        json!({"id":"a","type":"function","function":{"name":"f","arguments":""}})
    )));
    for bad in [
        json!({"id":5,"type":"function","function":{"name":"f","arguments":"{}"}}),
        json!({"id":"","type":"function","function":{"name":"f","arguments":"{}"}}),
        json!({"id":"a","type":"tool","function":{"name":"f","arguments":"{}"}}),
        json!({"id":"a","type":"function","function":{"arguments":"{}"}}),
        json!({"id":"a","type":"function","function":{"name":"","arguments":"{}"}}),
        json!({"id":"a","type":"function","function":{"name":"f","arguments":{}}}),
        json!({"id":"a","type":"function","function":{"name":"f"}}),
        json!({"id":"a","type":"function","function":"f"}),
        json!("tool"),
    ] {
        assert!(!tool_snapshot_ok(&with(bad.clone())), "{bad}");
    }
}

#[test]
fn cf_188_v_37_null_arguments_only_tool() {
    let null_args = obj(json!({"role":"assistant","tool_calls":[
        {"id":"t1","type":"function","function":{"name":"f","arguments":null}}]}));
    let summary = summarize_message(&null_args, "");
    assert!(summary.null_arguments);
    assert!(!summary.tools_ok);
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        finish_reason: Some("tool_calls"),
        message: Some(&null_args),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::ToolArgumentsNull));
    assert_eq!(verdict.category(), Some(Category::ResultInvalid));

    // The same tool also missing its name: other defects exist → tool_incomplete.
    let nameless = obj(json!({"role":"assistant","tool_calls":[
        {"id":"t1","type":"function","function":{"arguments":null}}]}));
    let summary = summarize_message(&nameless, "");
    assert!(!summary.null_arguments);
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        finish_reason: Some("stop"),
        message: Some(&nameless),
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::ToolIncomplete));
    assert_eq!(verdict.category(), Some(Category::Transient));
}

#[test]
fn v_25_fill_null_arguments_is_for_classification_only() {
    let message = obj(json!({"role":"assistant","tool_calls":[
        {"id":"t1","type":"function","function":{"name":"f","arguments":null}},
        {"id":"t2","type":"function","function":{"name":"g"}}, null]}));
    let filled = fill_null_arguments(&message);
    assert_eq!(filled["tool_calls"][0]["function"]["arguments"], json!(""));
    // A missing key is not filled; the original is untouched.
    assert!(
        filled["tool_calls"][1]["function"]
            .get("arguments")
            .is_none()
    );
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        json!(null)
    );
}

// ---------------------------------------------------------------- registry, V-43..V-45

// covers: V-44
#[test]
fn v_45_registry_covers_every_reason_code() {
    use Category::{RequestRejected as RR, ResultInvalid as RI, Transient as T};
    let expected = [
        (ReasonCode::UpstreamFinishError, T),
        (ReasonCode::ToolTruncated, RI),
        (ReasonCode::ToolArgumentsNull, RI),
        (ReasonCode::ToolIncomplete, T),
        (ReasonCode::LengthWithoutContent, RI),
        (ReasonCode::FilteredWithoutContent, RI),
        (ReasonCode::EmptyCompletion, T),
        (ReasonCode::MissingDone, T),
        (ReasonCode::EarlyEof, T),
        (ReasonCode::UpstreamErrorFrame, T),
        (ReasonCode::RateLimited, T),
        (ReasonCode::ContextLengthExceeded, RR),
        (ReasonCode::MalformedJson, T),
        (ReasonCode::ProtocolError, T),
        (ReasonCode::ReadError, T),
        (ReasonCode::LivenessTimeout, T),
        (ReasonCode::EmptyResponse, T),
        (ReasonCode::InvalidJson, T),
        (ReasonCode::ResponseTooLarge, RI),
        (ReasonCode::Refused, RI),             // README D22
        (ReasonCode::ToolCallsInTextMode, RI), // README D27
        (ReasonCode::MalformedItem, RI),       // README D30
    ];
    assert_eq!(
        expected.len(),
        ReasonCode::ALL.len(),
        "a new code needs a registry row"
    );
    for (code, category) in expected {
        assert_eq!(reason_category(code), Some(category), "{code}");
    }
    for code in ReasonCode::ALL {
        assert!(
            reason_category(*code).is_some(),
            "{code} missing from the registry"
        );
    }
}

#[test]
fn v_43_verdict_codes_are_exactly_the_seven() {
    let names: Vec<&str> = VERDICT_CODES.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        names,
        [
            "upstream_finish_error",
            "tool_truncated",
            "tool_arguments_null",
            "tool_incomplete",
            "length_without_content",
            "filtered_without_content",
            "empty_completion"
        ]
    );
    assert_eq!(
        COMPLETENESS_CODES,
        [ReasonCode::MissingDone, ReasonCode::EarlyEof]
    );
    assert_eq!(
        TERMINAL_CODES,
        [
            ReasonCode::ReadError,
            ReasonCode::ResponseTooLarge,
            ReasonCode::LivenessTimeout
        ]
    );
}

/// Every code `judge_attempt` can produce, over an exhaustive grid of facts, is one of the
/// registry's verdict, completeness or terminal codes, and the verdict's category is the
/// registry's.
// covers: V-41, V-44
#[test]
fn v_45_every_produced_code_maps_to_its_registry_category() {
    let messages = [
        json!({"role":"assistant"}),
        json!({"role":"assistant","content":"a"}),
        json!({"role":"assistant","reasoning_content":"r"}),
        json!({"role":"assistant","tool_calls":[tool_ok()]}),
        json!({"role":"assistant","content":"a","tool_calls":[{"id":"t"}]}),
        json!({"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":null}}]}),
    ]
    .map(obj);
    let mut seen = std::collections::BTreeSet::new();
    for mode in [TEXT, OPENAI] {
        for finish in [
            None,
            Some("stop"),
            Some("length"),
            Some("sensitive"),
            Some("error"),
            Some("end_turn"),
        ] {
            for (content, thinking) in [("", ""), ("a", ""), ("", "t"), (" ", "")] {
                for message in messages.iter().map(Some).chain([None]) {
                    for terminal in [
                        None,
                        Some(StreamTerminal::Done),
                        Some(StreamTerminal::End),
                        Some(StreamTerminal::ReadError),
                        Some(StreamTerminal::FrameTooLarge),
                        Some(StreamTerminal::WatchdogExpired),
                    ] {
                        for md in [MissingDone::Retry, MissingDone::Salvage] {
                            let facts = AttemptFacts {
                                mode,
                                missing_done: md,
                                stream: terminal.map(|t| stream(t, false, !content.is_empty())),
                                finish_reason: finish,
                                content,
                                thinking,
                                message,
                                usage_measured: false,
                                ..AttemptFacts::default()
                            };
                            let verdict = judge_attempt(&facts);
                            if let Some(code) = verdict.reason_code() {
                                assert!(
                                    VERDICT_CODES.contains(&code)
                                        || COMPLETENESS_CODES.contains(&code)
                                        || TERMINAL_CODES.contains(&code),
                                    "{code}"
                                );
                                assert_eq!(verdict.category(), reason_category(code));
                                if let Verdict::Fail(failure) = &verdict {
                                    assert_eq!(Some(failure.category), reason_category(code));
                                }
                                seen.insert(code);
                            }
                        }
                    }
                }
            }
        }
    }
    // The grid reaches every code the verdict owns.
    for code in VERDICT_CODES
        .iter()
        .chain(&COMPLETENESS_CODES)
        .chain(&TERMINAL_CODES)
    {
        assert!(seen.contains(code), "{code} unreachable in the grid");
    }
}

// ---------------------------------------------------------------- V-39..V-41 failures

// covers: V-34, V-41, V-42
#[test]
fn v_39_v_40_outcome_failure_message_and_category() {
    let facts = AttemptFacts {
        finish_reason: Some("stop"),
        thinking: "дума", // 4 scalar values, 8 bytes
        ..AttemptFacts::default()
    };
    let Verdict::Fail(failure) = judge_attempt(&facts) else {
        panic!("thinking only + stop must fail in text mode (V-34)");
    };
    assert_eq!(failure.code, ReasonCode::EmptyCompletion);
    assert_eq!(
        failure.message(SRC),
        "qwen_1 empty_completion: finish_reason=\"stop\", thinking_len=4"
    );
    let error = failure.into_error(SRC);
    assert!(matches!(error, AttemptError::Transient(_)));
    assert_eq!(error.reason_code(), Some(ReasonCode::EmptyCompletion));
    assert_eq!(error.source_name(), Some(SRC));
    assert!(
        !error.to_string().contains("дума"),
        "reasoning is never echoed (V-42)"
    );

    // No finish → null.
    let failure = VerdictFailure::new(ReasonCode::EmptyCompletion, &AttemptFacts::default());
    assert_eq!(
        failure.message(SRC),
        "qwen_1 empty_completion: finish_reason=null, thinking_len=0"
    );
}

#[test]
fn v_40_result_invalid_is_unwrapped_with_empty_raw_text() {
    let facts = AttemptFacts {
        finish_reason: Some("length"),
        thinking: "long thought",
        ..AttemptFacts::default()
    };
    let Verdict::Fail(failure) = judge_attempt(&facts) else {
        panic!("text thinking-only + length is RI (V-36 row 18)");
    };
    let classification = failure.clone().into_classification(SRC);
    assert_eq!(classification.category, Category::ResultInvalid);
    assert_eq!(
        classification.failure_reason, None,
        "V-48: a neutral breaker success"
    );
    let error = failure.into_error(SRC);
    let details = error
        .result_invalid_details()
        .expect("ResultInvalid, not wrapped");
    assert_eq!(details.raw_text, "");
    assert!(details.validation_errors.is_empty());
    assert_eq!(
        details.failure.reason_code,
        Some(ReasonCode::LengthWithoutContent)
    );
    assert_eq!(
        details.failure.message,
        "qwen_1 length_without_content: finish_reason=\"length\", thinking_len=12"
    );
    assert_eq!(details.failure.http_status, None);
    assert_eq!(details.failure.body_text, None);
}

#[test]
fn v_45_completeness_messages() {
    let text = AttemptFacts {
        stream: Some(stream(StreamTerminal::End, false, true)),
        content: "partial",
        ..AttemptFacts::default()
    };
    let Verdict::Fail(failure) = judge_attempt(&text) else {
        panic!("text retry truncation fails");
    };
    assert_eq!(
        failure.message(SRC),
        "qwen_1: SSE stream truncated without [DONE] (missing_done)"
    );
    let classification = failure.into_classification(SRC);
    assert_eq!(classification.category, Category::Transient);
    // README D27: a truncated answer is `bad_response` (was `network_error`).
    assert_eq!(
        classification.failure_reason,
        Some(FailureReason::BadResponse)
    );

    let openai = AttemptFacts {
        mode: OPENAI,
        missing_done: MissingDone::Salvage,
        ..text
    };
    let Verdict::Fail(failure) = judge_attempt(&openai) else {
        panic!("openai truncation fails");
    };
    assert_eq!(
        failure.message(SRC),
        "qwen_1: fidelity stream truncated, salvage not allowed (missing_done)"
    );

    let empty = AttemptFacts {
        stream: Some(stream(StreamTerminal::End, false, false)),
        missing_done: MissingDone::Salvage,
        ..AttemptFacts::default()
    };
    let Verdict::Fail(failure) = judge_attempt(&empty) else {
        panic!("zero output truncation fails");
    };
    assert_eq!(failure.code, ReasonCode::EarlyEof);
    assert_eq!(
        failure.message(SRC),
        "qwen_1: SSE stream ended with zero output (early_eof)"
    );
}

// ---------------------------------------------------------------- S-105 usage resolution

#[test]
fn s_105_usage_resolution() {
    let rows = [
        (Some(StreamEnd::Done), true, UsageSource::Measured),
        (Some(StreamEnd::Done), false, UsageSource::Unavailable),
        (Some(StreamEnd::EofAfterFinish), true, UsageSource::Measured),
        (None, true, UsageSource::Measured),
        (None, false, UsageSource::Unavailable),
        (Some(StreamEnd::Salvaged), true, UsageSource::Estimated),
        (Some(StreamEnd::Salvaged), false, UsageSource::Unavailable),
    ];
    for (end, measured, source) in rows {
        assert_eq!(
            resolve_usage_source(end, measured),
            source,
            "{end:?} {measured}"
        );
    }
}

// ---------------------------------------------------------------- fact-level wire rows

fn text_stream<'a>(
    terminal: StreamTerminal,
    finish: Option<&'a str>,
    content: &'a str,
) -> AttemptFacts<'a> {
    AttemptFacts {
        stream: Some(stream(terminal, false, !content.is_empty())),
        finish_reason: finish,
        content,
        ..AttemptFacts::default()
    }
}

#[test]
fn cf_201_v_73_eof_after_finish_both_modes() {
    let message = obj(json!({"role":"assistant","content":"hello"}));
    for finish in ["stop", "length"] {
        for (mode, msg) in [(TEXT, None), (OPENAI, Some(&message))] {
            let verdict = judge_attempt(&AttemptFacts {
                mode,
                stream: Some(stream(StreamTerminal::End, true, true)),
                finish_reason: Some(finish),
                content: "hello",
                message: msg,
                usage_measured: true,
                ..AttemptFacts::default()
            });
            let delivery = verdict.delivery().expect("delivered");
            assert_eq!(delivery.stream_end, Some(StreamEnd::EofAfterFinish));
            assert_eq!(delivery.usage_source, UsageSource::Measured);
        }
    }
}

#[test]
fn cf_202_cf_247_v_76_tool_frames_then_usage_only_frame() {
    let message = obj(json!({"role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\": 1}"}}]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::End, true, false)),
        finish_reason: Some("tool_calls"),
        message: Some(&message),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    let delivery = verdict.delivery().expect("delivered");
    assert_eq!(delivery.stream_end, Some(StreamEnd::EofAfterFinish));
    assert_eq!(delivery.usage_source, UsageSource::Measured);
    assert!(delivery.cacheable);
}

#[test]
fn cf_203_v_19_incomplete_eof_still_fails() {
    // (a) usage-only, no finish; (b) finish, no usage; (c) usage before finish; (d) usage {}.
    let cases: [(Option<&str>, bool, bool); 4] = [
        (None, true, true),
        (Some("stop"), false, false),
        (Some("stop"), false, true),
        (Some("stop"), true, false),
    ];
    let message = obj(json!({"role":"assistant","content":"partial"}));
    for (finish, after, measured) in cases {
        let base = AttemptFacts {
            stream: Some(stream(StreamTerminal::End, after, true)),
            finish_reason: finish,
            content: "partial",
            usage_measured: measured,
            ..AttemptFacts::default()
        };
        let openai = AttemptFacts {
            mode: OPENAI,
            missing_done: MissingDone::Salvage,
            message: Some(&message),
            ..base
        };
        assert_eq!(
            judge_attempt(&openai).reason_code(),
            Some(ReasonCode::MissingDone)
        );
        assert_eq!(
            judge_attempt(&base).reason_code(),
            Some(ReasonCode::MissingDone)
        );
    }
}

#[test]
fn cf_204_v_17_salvaged_with_usage_is_estimated_and_not_cached() {
    let verdict = judge_attempt(&AttemptFacts {
        missing_done: MissingDone::Salvage,
        stream: Some(stream(StreamTerminal::End, false, true)),
        content: "partial",
        usage_measured: true,
        ..AttemptFacts::default()
    });
    let delivery = verdict.delivery().expect("salvaged is delivered");
    assert_eq!(delivery.stream_end, Some(StreamEnd::Salvaged));
    assert_eq!(delivery.usage_source, UsageSource::Estimated);
    assert!(!delivery.cacheable);
}

#[test]
fn cf_205_v_18_missing_done_governs_only_true_truncation() {
    for md in [MissingDone::Retry, MissingDone::Salvage] {
        // stop + usage + EOF → eof_after_finish under both.
        let complete = AttemptFacts {
            missing_done: md,
            stream: Some(stream(StreamTerminal::End, true, true)),
            finish_reason: Some("stop"),
            content: "ok",
            usage_measured: true,
            ..AttemptFacts::default()
        };
        assert_eq!(
            judge_attempt(&complete).delivery().map(|d| d.stream_end),
            Some(Some(StreamEnd::EofAfterFinish))
        );
        // EOF without finish; finish without usage.
        for (finish, measured) in [(None, true), (Some("stop"), false)] {
            let truncated = AttemptFacts {
                missing_done: md,
                stream: Some(stream(StreamTerminal::End, measured, true)),
                finish_reason: finish,
                content: "ok",
                usage_measured: measured,
                ..AttemptFacts::default()
            };
            let verdict = judge_attempt(&truncated);
            match md {
                MissingDone::Retry => {
                    assert_eq!(verdict.reason_code(), Some(ReasonCode::MissingDone));
                }
                MissingDone::Salvage => assert_eq!(
                    verdict.delivery().map(|d| d.stream_end),
                    Some(Some(StreamEnd::Salvaged))
                ),
            }
        }
    }
}

#[test]
fn cf_206_v_73_done_with_stop() {
    let verdict = judge_attempt(&AttemptFacts {
        usage_measured: true,
        ..text_stream(StreamTerminal::Done, Some("stop"), "ok")
    });
    let delivery = verdict.delivery().expect("delivered");
    assert_eq!(delivery.stream_end, Some(StreamEnd::Done));
    assert!(delivery.cacheable);
}

#[test]
fn cf_207_v_32_upstream_finish_error_beats_full_content() {
    let message = obj(json!({"role":"assistant","content":"half"}));
    for terminal in [StreamTerminal::Done, StreamTerminal::End] {
        for (mode, msg) in [(TEXT, None), (OPENAI, Some(&message))] {
            let verdict = judge_attempt(&AttemptFacts {
                mode,
                stream: Some(stream(terminal, true, true)),
                finish_reason: Some("network_error"),
                content: "half",
                message: msg,
                usage_measured: true,
                ..AttemptFacts::default()
            });
            assert_eq!(verdict.reason_code(), Some(ReasonCode::UpstreamFinishError));
            assert_eq!(verdict.category(), Some(Category::Transient));
        }
    }
}

#[test]
fn cf_208_cf_232_v_54_openai_reasoning_only_length_is_delivered() {
    let message = obj(json!({"role":"assistant","reasoning_content":"long thought"}));
    for terminal in [StreamTerminal::Done, StreamTerminal::End] {
        let verdict = judge_attempt(&AttemptFacts {
            mode: OPENAI,
            stream: Some(stream(terminal, true, true)),
            finish_reason: Some("length"),
            thinking: "long thought",
            message: Some(&message),
            usage_measured: true,
            ..AttemptFacts::default()
        });
        let delivery = verdict.delivery().expect("delivered");
        assert!(!delivery.cacheable, "reasoning-only is never cached (C-50)");
        if terminal == StreamTerminal::End {
            assert_eq!(delivery.stream_end, Some(StreamEnd::EofAfterFinish));
        }
    }
}

/// (row, message, thinking, finish, openai result, text result).
type StreamRow<'a> = (
    &'a str,
    &'a Map<String, Value>,
    &'a str,
    &'a str,
    Option<ReasonCode>,
    Option<ReasonCode>,
);

/// V-74 `test_outcome_rows_stream`: frames + finish + usage + `[DONE]`; (openai, text).
#[test]
fn cf_209_to_cf_215_v_74_outcome_rows_stream() {
    let think = obj(json!({"role":"assistant","reasoning_content":"long thought"}));
    let role = obj(json!({"role":"assistant"}));
    let refusal = obj(json!({"role":"assistant","refusal":"no"}));
    let rows: [StreamRow<'_>; 7] = [
        (
            "cf_209",
            &think,
            "long thought",
            "length",
            None,
            Some(ReasonCode::LengthWithoutContent),
        ),
        (
            "cf_210",
            &role,
            "",
            "length",
            None,
            Some(ReasonCode::LengthWithoutContent),
        ),
        (
            "cf_211",
            &think,
            "long thought",
            "content_filter",
            None,
            Some(ReasonCode::FilteredWithoutContent),
        ),
        (
            "cf_212",
            &role,
            "",
            "sensitive",
            None,
            Some(ReasonCode::FilteredWithoutContent),
        ),
        (
            "cf_213",
            &think,
            "long thought",
            "stop",
            None,
            Some(ReasonCode::EmptyCompletion),
        ),
        (
            "cf_214",
            &refusal,
            "",
            "stop",
            None,
            Some(ReasonCode::EmptyCompletion),
        ),
        (
            "cf_215",
            &role,
            "",
            "stop",
            Some(ReasonCode::EmptyCompletion),
            Some(ReasonCode::EmptyCompletion),
        ),
    ];
    for (row, message, thinking, finish, openai, text) in rows {
        let base = AttemptFacts {
            stream: Some(stream(StreamTerminal::Done, true, !thinking.is_empty())),
            finish_reason: Some(finish),
            thinking,
            usage_measured: true,
            ..AttemptFacts::default()
        };
        let fidelity = AttemptFacts {
            mode: OPENAI,
            message: Some(message),
            ..base
        };
        assert_eq!(
            judge_attempt(&fidelity).reason_code(),
            openai,
            "{row} openai"
        );
        assert_eq!(judge_attempt(&base).reason_code(), text, "{row} text");
    }
}

#[test]
fn cf_216_cf_217_v_33_zero_output_with_done_is_transient() {
    let think = obj(json!({"role":"assistant","reasoning_content":"long thought"}));
    // _THINK + usage-only + [DONE], no finish (both modes).
    let base = AttemptFacts {
        stream: Some(stream(StreamTerminal::Done, false, true)),
        thinking: "long thought",
        usage_measured: true,
        ..AttemptFacts::default()
    };
    assert_eq!(
        judge_attempt(&base).reason_code(),
        Some(ReasonCode::EmptyCompletion)
    );
    let fidelity = AttemptFacts {
        mode: OPENAI,
        message: Some(&think),
        ..base
    };
    assert_eq!(
        judge_attempt(&fidelity).reason_code(),
        Some(ReasonCode::EmptyCompletion)
    );
    // Zero increments + [DONE], finish stop or none.
    let role = obj(json!({"role":"assistant"}));
    for finish in [Some("stop"), None] {
        for (mode, msg) in [(TEXT, None), (OPENAI, Some(&role))] {
            let verdict = judge_attempt(&AttemptFacts {
                mode,
                stream: Some(stream(StreamTerminal::Done, false, false)),
                finish_reason: finish,
                message: msg,
                ..AttemptFacts::default()
            });
            assert_eq!(verdict.reason_code(), Some(ReasonCode::EmptyCompletion));
            assert_eq!(verdict.category(), Some(Category::Transient));
        }
    }
}

#[test]
fn cf_218_v_73_whitespace_content_openai_delivered() {
    let message = obj(json!({"role":"assistant","content":"  "}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::Done, true, true)),
        finish_reason: Some("stop"),
        content: "  ",
        message: Some(&message),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    let delivery = verdict.delivery().expect("row 5: output + natural finish");
    assert!(!delivery.cacheable, "no body");
}

#[test]
fn cf_219_cf_230_v_73_truncated_tool_is_tool_truncated() {
    let message = obj(json!({"role":"assistant","tool_calls":[
        {"id":"c","type":"function","function":{"arguments":"{\"q"}}]}));
    for stream_facts in [Some(stream(StreamTerminal::Done, true, false)), None] {
        let verdict = judge_attempt(&AttemptFacts {
            mode: OPENAI,
            stream: stream_facts,
            finish_reason: Some("length"),
            message: Some(&message),
            usage_measured: true,
            ..AttemptFacts::default()
        });
        assert_eq!(verdict.reason_code(), Some(ReasonCode::ToolTruncated));
        assert_eq!(verdict.category(), Some(Category::ResultInvalid));
    }
}

#[test]
fn cf_220_v_32_content_cannot_mask_broken_tool() {
    let message = obj(json!({"role":"assistant","content":"text","tool_calls":[
        {"id":"c","type":"function","function":{"arguments":"{}"}}]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::Done, true, true)),
        finish_reason: Some("stop"),
        content: "text",
        message: Some(&message),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::ToolIncomplete));
}

#[test]
fn cf_221_cf_222_cf_223_v_73_null_fields() {
    // Tool with arguments null only + tool_calls finish + usage → RI tool_arguments_null.
    let null_args = obj(json!({"role":"assistant","tool_calls":[
        {"id":"c","type":"function","function":{"name":"f","arguments":null}}]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::Done, true, false)),
        finish_reason: Some("tool_calls"),
        message: Some(&null_args),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::ToolArgumentsNull));
    // content ok + refusal null + tool_calls null + stop → delivered, stream and non-stream.
    let message = obj(json!({"role":"assistant","content":"ok","refusal":null,"tool_calls":null}));
    for stream_facts in [Some(stream(StreamTerminal::Done, true, true)), None] {
        let verdict = judge_attempt(&AttemptFacts {
            mode: OPENAI,
            stream: stream_facts,
            finish_reason: Some("stop"),
            content: "ok",
            message: Some(&message),
            usage_measured: true,
            ..AttemptFacts::default()
        });
        let delivery = verdict.delivery().expect("delivered");
        assert_eq!(delivery.stream_end, stream_facts.map(|_| StreamEnd::Done));
        assert!(delivery.cacheable);
    }
}

/// V-75 `test_outcome_rows_nonstream` (`_body(message, finish)`; openai; text).
#[test]
fn cf_224_to_cf_229_v_75_outcome_rows_nonstream() {
    type Row<'a> = (
        &'a str,
        Value,
        &'a str,
        &'a str,
        Option<&'a str>,
        Option<ReasonCode>,
        Option<ReasonCode>,
    );
    let rows: [Row<'_>; 6] = [
        (
            "cf_224",
            json!({"role":"assistant","reasoning_content":"t"}),
            "",
            "t",
            Some("length"),
            None,
            Some(ReasonCode::LengthWithoutContent),
        ),
        (
            "cf_225",
            json!({"role":"assistant","content":""}),
            "",
            "",
            Some("content_filter"),
            None,
            Some(ReasonCode::FilteredWithoutContent),
        ),
        (
            "cf_226",
            json!({"role":"assistant","reasoning_content":"t"}),
            "",
            "t",
            Some("stop"),
            None,
            Some(ReasonCode::EmptyCompletion),
        ),
        (
            "cf_227",
            json!({"role":"assistant","reasoning_content":"t"}),
            "",
            "t",
            None,
            Some(ReasonCode::EmptyCompletion),
            Some(ReasonCode::EmptyCompletion),
        ),
        (
            "cf_228",
            json!({"role":"assistant","content":"a"}),
            "a",
            "",
            Some("network_error"),
            Some(ReasonCode::UpstreamFinishError),
            Some(ReasonCode::UpstreamFinishError),
        ),
        (
            "cf_229",
            json!({"role":"assistant","content":"a"}),
            "a",
            "",
            Some("length"),
            None,
            None,
        ),
    ];
    for (row, message, content, thinking, finish, openai, text) in rows {
        let message = obj(message);
        let base = AttemptFacts {
            finish_reason: finish,
            content,
            thinking,
            usage_measured: true,
            ..AttemptFacts::default()
        };
        let fidelity = AttemptFacts {
            mode: OPENAI,
            message: Some(&message),
            ..base
        };
        let (got_openai, got_text) = (judge_attempt(&fidelity), judge_attempt(&base));
        assert_eq!(got_openai.reason_code(), openai, "{row} openai");
        assert_eq!(got_text.reason_code(), text, "{row} text");
        for verdict in [got_openai, got_text] {
            if let Some(delivery) = verdict.delivery() {
                assert_eq!(
                    delivery.stream_end, None,
                    "{row}: non-stream has no stream_end"
                );
            }
        }
    }
}

#[test]
fn cf_234_v_16_salvage_with_length_partial_content_delivered() {
    let verdict = judge_attempt(&AttemptFacts {
        missing_done: MissingDone::Salvage,
        ..text_stream(StreamTerminal::End, Some("length"), "part")
    });
    let delivery = verdict
        .delivery()
        .expect("salvaged, then step 2 delivers the body");
    assert_eq!(delivery.stream_end, Some(StreamEnd::Salvaged));
    assert_eq!(delivery.finish_class, FinishClass::Truncated);
    assert_eq!(delivery.usage_source, UsageSource::Unavailable);
    assert!(!delivery.cacheable);
}

#[test]
fn cf_246_v_14_openai_never_salvages_tool_frames_without_usage() {
    let message = obj(json!({"role":"assistant","content":null,"tool_calls":[
        {"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},
        {"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        missing_done: MissingDone::Salvage,
        stream: Some(stream(StreamTerminal::End, false, false)),
        finish_reason: Some("tool_calls"),
        message: Some(&message),
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::MissingDone));
}

#[test]
fn cf_248_cf_249_v_30_tool_only_done_and_empty_stop() {
    let tools = obj(json!({"role":"assistant","content":null,"tool_calls":[tool_ok()]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::Done, false, false)),
        finish_reason: Some("tool_calls"),
        message: Some(&tools),
        ..AttemptFacts::default()
    });
    assert!(verdict.is_deliver(), "tool-only + [DONE] is row 3");
    let empty = obj(json!({"role":"assistant","content":"","tool_calls":[]}));
    let verdict = judge_attempt(&AttemptFacts {
        mode: OPENAI,
        stream: Some(stream(StreamTerminal::Done, false, false)),
        finish_reason: Some("stop"),
        message: Some(&empty),
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::EmptyCompletion));
}

#[test]
fn v_26_text_mode_tool_only_is_no_output() {
    // Cases 009/012 in text mode: the tool calls are not representable → empty_completion.
    let verdict = judge_attempt(&AttemptFacts {
        stream: Some(stream(StreamTerminal::Done, true, false)),
        finish_reason: Some("tool_calls"),
        usage_measured: true,
        ..AttemptFacts::default()
    });
    assert_eq!(verdict.reason_code(), Some(ReasonCode::EmptyCompletion));
}

// ---------------------------------------------------------------- V-70 invariants (proptest)

fn arb_terminal() -> impl Strategy<Value = Option<StreamTerminal>> {
    prop_oneof![
        Just(None),
        Just(Some(StreamTerminal::Done)),
        Just(Some(StreamTerminal::End)),
        Just(Some(StreamTerminal::ReadError)),
        Just(Some(StreamTerminal::FrameTooLarge)),
        Just(Some(StreamTerminal::WatchdogExpired)),
    ]
}

fn arb_finish() -> impl Strategy<Value = Option<&'static str>> {
    prop::sample::select(vec![
        None,
        Some(""),
        Some("stop"),
        Some("tool_calls"),
        Some("length"),
        Some("content_filter"),
        Some("sensitive"),
        Some("network_error"),
        Some("end_turn"),
    ])
}

fn arb_text() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", " ", "a", "<think>x</think>"])
}

fn arb_message() -> impl Strategy<Value = Option<Value>> {
    prop::sample::select(vec![
        None,
        Some(json!({"role":"assistant"})),
        Some(json!({"role":"assistant","content":"a"})),
        Some(json!({"role":"assistant","content":" "})),
        Some(json!({"role":"assistant","reasoning_content":"r"})),
        Some(json!({"role":"assistant","content":null,"tool_calls":[tool_ok()]})),
        Some(json!({"role":"assistant","content":"a","tool_calls":[{"id":"t"}]})),
        Some(
            json!({"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"q"}}]}),
        ),
        Some(
            json!({"role":"assistant","tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":null}}]}),
        ),
    ])
}

proptest! {
    /// 50 V-70, V-14, V-57, V-58 over arbitrary attempt facts.
    // covers: V-69, V-13
    #[test]
    fn v_70_usage_source_and_stream_end_implications(
        openai in any::<bool>(),
        salvage in any::<bool>(),
        terminal in arb_terminal(),
        after in any::<bool>(),
        any_fragment in any::<bool>(),
        finish in arb_finish(),
        content in arb_text(),
        thinking in arb_text(),
        message in arb_message(),
        measured in any::<bool>(),
    ) {
        let mode = if openai { OPENAI } else { TEXT };
        let message = message.map(obj);
        let facts = AttemptFacts {
            mode,
            missing_done: if salvage { MissingDone::Salvage } else { MissingDone::Retry },
            stream: terminal.map(|t| stream(t, after, any_fragment)),
            finish_reason: finish,
            content,
            thinking,
            message: message.as_ref(),
            usage_measured: measured,
            ..AttemptFacts::default()
        };
        let verdict = judge_attempt(&facts);
        match &verdict {
            Verdict::Deliver(d) => {
                // eof_after_finish ⇒ measured.
                if d.stream_end == Some(StreamEnd::EofAfterFinish) {
                    prop_assert_eq!(d.usage_source, UsageSource::Measured);
                }
                // salvaged ⇒ estimated | unavailable.
                if d.stream_end == Some(StreamEnd::Salvaged) {
                    prop_assert!(matches!(d.usage_source, UsageSource::Estimated | UsageSource::Unavailable));
                    // Never in fidelity mode; only under salvage.
                    prop_assert_eq!(mode, TEXT);
                    prop_assert!(salvage);
                }
                // estimated ⇒ salvaged.
                if d.usage_source == UsageSource::Estimated {
                    prop_assert_eq!(d.stream_end, Some(StreamEnd::Salvaged));
                }
                // Streams always end somewhere; non-stream never has a stream_end.
                prop_assert_eq!(d.stream_end.is_some(), terminal.is_some());
                // Cacheable ⊂ deliverable, never salvaged, natural or absent finish (V-57, V-58).
                if d.cacheable {
                    prop_assert_ne!(d.stream_end, Some(StreamEnd::Salvaged));
                    prop_assert!(matches!(d.finish_class, FinishClass::Natural | FinishClass::Absent));
                    prop_assert!(d.summary.body_output || d.summary.tools_present);
                }
                // Row 1 beats everything.
                prop_assert_ne!(d.finish_class, FinishClass::UpstreamError);
            }
            Verdict::Fail(f) => {
                prop_assert_eq!(Some(f.category), reason_category(f.code));
                prop_assert!(matches!(f.category, Category::Transient | Category::ResultInvalid));
            }
            Verdict::TransportFailed(code) => {
                prop_assert!(TERMINAL_CODES.contains(code));
            }
            _ => prop_assert!(false, "unexpected verdict variant"),
        }
    }

    /// V-14 step 1: openai mode never yields a salvaged stream, whatever MISSING_DONE says.
    #[test]
    fn v_14_openai_never_salvages(
        terminal in arb_terminal(),
        after in any::<bool>(),
        any_fragment in any::<bool>(),
        finish in arb_finish(),
        measured in any::<bool>(),
    ) {
        let Some(terminal) = terminal else { return Ok(()); };
        let facts = stream(terminal, after, any_fragment);
        let got = judge_completeness(OPENAI, MissingDone::Salvage, &facts, finish, measured);
        prop_assert_ne!(got, Completeness::Continue(StreamEnd::Salvaged));
        prop_assert_ne!(got, Completeness::Truncated(ReasonCode::EarlyEof));
    }
}
