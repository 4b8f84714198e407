//! The verdict's truth tables, one row per table line: the outcome table (50 V-30, pinned 25 rows
//! V-36 = CF-163..CF-187) and the cacheability predicate (50 V-58, V-64..V-67; 70 C-49, C-50;
//! 05 R-23, R-42; CF-189..CF-199).

use gateway_core::verdict::{
    AttemptFacts, Outcome, OutputSummary, StreamFacts, StreamTerminal, is_cacheable,
    is_cacheable_message, is_cacheable_raw, is_cacheable_response, judge_attempt, judge_outcome,
    tool_arguments_parse,
};
use gateway_ports::{
    Category, FinishClass, FinishReason, LlmResponse, OpenAiChatCompletion, ReasonCode,
    ResponseMode, StreamEnd,
};
use serde_json::{Map, Value, json};

use Category::{ResultInvalid as RI, Transient as T};
use FinishClass::{Absent, Filtered, Natural, Truncated, Unknown, UpstreamError};
use ResponseMode::{OpenAi, Text};

const NONE: OutputSummary = OutputSummary::NONE;
const THINK: OutputSummary = OutputSummary::THINK;
const BODY: OutputSummary = OutputSummary::BODY;
const BAD_TOOL: OutputSummary = OutputSummary::BAD_TOOL;

fn obj(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

type Expect = Option<(Category, ReasonCode)>;
const DELIVER: Expect = None;

fn check(
    row: &str,
    mode: ResponseMode,
    summary: OutputSummary,
    class: FinishClass,
    expected: Expect,
) {
    let outcome = judge_outcome(mode, &summary, class);
    match expected {
        None => assert_eq!(outcome, Outcome::Deliver, "{row}"),
        Some((category, code)) => {
            assert_eq!(outcome, Outcome::Fail(code), "{row}");
            assert_eq!(outcome.category(), Some(category), "{row}");
        }
    }
}

// ---------------------------------------------------------------- V-36, 25 rows

// covers: V-31, V-77, CF-163, CF-164, CF-165, CF-166, CF-167, CF-168, CF-169, CF-170, CF-171, CF-172, CF-173, CF-174, CF-175, CF-176, CF-177, CF-178, CF-179, CF-180, CF-181, CF-182, CF-183, CF-184, CF-185, CF-186, CF-187
#[test]
fn v_36_judge_outcome_rows() {
    let rows: [(&str, ResponseMode, OutputSummary, FinishClass, Expect); 25] = [
        (
            "cf_163 #1",
            OpenAi,
            BODY,
            UpstreamError,
            Some((T, ReasonCode::UpstreamFinishError)),
        ),
        (
            "cf_164 #2",
            Text,
            BODY,
            UpstreamError,
            Some((T, ReasonCode::UpstreamFinishError)),
        ),
        (
            "cf_165 #3",
            OpenAi,
            BAD_TOOL,
            Truncated,
            Some((RI, ReasonCode::ToolTruncated)),
        ),
        (
            "cf_166 #4",
            OpenAi,
            BAD_TOOL,
            Natural,
            Some((T, ReasonCode::ToolIncomplete)),
        ),
        ("cf_167 #5", Text, BAD_TOOL, Natural, DELIVER),
        ("cf_168 #6", OpenAi, NONE, Truncated, DELIVER),
        ("cf_169 #7", OpenAi, NONE, Filtered, DELIVER),
        (
            "cf_170 #8",
            Text,
            NONE,
            Truncated,
            Some((RI, ReasonCode::LengthWithoutContent)),
        ),
        (
            "cf_171 #9",
            Text,
            NONE,
            Filtered,
            Some((RI, ReasonCode::FilteredWithoutContent)),
        ),
        (
            "cf_172 #10",
            OpenAi,
            NONE,
            Natural,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        (
            "cf_173 #11",
            OpenAi,
            NONE,
            Absent,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        (
            "cf_174 #12",
            OpenAi,
            NONE,
            Unknown,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        (
            "cf_175 #13",
            Text,
            NONE,
            Absent,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        ("cf_176 #14", OpenAi, BODY, Truncated, DELIVER),
        ("cf_177 #15", Text, BODY, Filtered, DELIVER),
        ("cf_178 #16", Text, BODY, Absent, DELIVER),
        ("cf_179 #17", OpenAi, THINK, Truncated, DELIVER),
        (
            "cf_180 #18",
            Text,
            THINK,
            Truncated,
            Some((RI, ReasonCode::LengthWithoutContent)),
        ),
        ("cf_181 #19", OpenAi, THINK, Filtered, DELIVER),
        (
            "cf_182 #20",
            Text,
            THINK,
            Filtered,
            Some((RI, ReasonCode::FilteredWithoutContent)),
        ),
        ("cf_183 #21", OpenAi, THINK, Natural, DELIVER),
        ("cf_184 #22", OpenAi, THINK, Unknown, DELIVER),
        (
            "cf_185 #23",
            Text,
            THINK,
            Natural,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        (
            "cf_186 #24",
            OpenAi,
            THINK,
            Absent,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
        (
            "cf_187 #25",
            Text,
            THINK,
            Absent,
            Some((T, ReasonCode::EmptyCompletion)),
        ),
    ];
    for (row, mode, summary, class, expected) in rows {
        check(row, mode, summary, class, expected);
    }
}

// ---------------------------------------------------------------- V-30, one test per table line

#[test]
fn v_30_row_1_upstream_error_beats_everything() {
    for mode in [Text, OpenAi] {
        for summary in [NONE, THINK, BODY, BAD_TOOL] {
            check(
                "row 1",
                mode,
                summary,
                UpstreamError,
                Some((T, ReasonCode::UpstreamFinishError)),
            );
        }
    }
}

#[test]
fn v_30_row_2_bad_tool_openai_only() {
    let null_args = OutputSummary {
        null_arguments: true,
        ..BAD_TOOL
    };
    check(
        "row 2 truncated",
        OpenAi,
        BAD_TOOL,
        Truncated,
        Some((RI, ReasonCode::ToolTruncated)),
    );
    // Truncation wins over null_arguments.
    check(
        "row 2 truncated+null",
        OpenAi,
        null_args,
        Truncated,
        Some((RI, ReasonCode::ToolTruncated)),
    );
    for class in [Natural, Absent, Unknown, Filtered] {
        check(
            "row 2 null",
            OpenAi,
            null_args,
            class,
            Some((RI, ReasonCode::ToolArgumentsNull)),
        );
        check(
            "row 2 else",
            OpenAi,
            BAD_TOOL,
            class,
            Some((T, ReasonCode::ToolIncomplete)),
        );
    }
    // Never matches in text mode: the body delivers (row 3).
    check("row 2 text", Text, null_args, Natural, DELIVER);
}

#[test]
fn v_30_row_3_body_delivers() {
    for mode in [Text, OpenAi] {
        for class in [Natural, Truncated, Filtered, Unknown, Absent] {
            check("row 3", mode, BODY, class, DELIVER);
        }
    }
}

#[test]
fn v_30_row_4_truncated_or_filtered_without_body() {
    for summary in [NONE, THINK] {
        check(
            "row 4",
            Text,
            summary,
            Truncated,
            Some((RI, ReasonCode::LengthWithoutContent)),
        );
        check(
            "row 4",
            Text,
            summary,
            Filtered,
            Some((RI, ReasonCode::FilteredWithoutContent)),
        );
        check("row 4", OpenAi, summary, Truncated, DELIVER);
        check("row 4", OpenAi, summary, Filtered, DELIVER);
    }
}

#[test]
fn v_30_row_5_openai_output_with_declared_end() {
    check("row 5", OpenAi, THINK, Natural, DELIVER);
    check("row 5", OpenAi, THINK, Unknown, DELIVER);
    check(
        "row 5 absent",
        OpenAi,
        THINK,
        Absent,
        Some((T, ReasonCode::EmptyCompletion)),
    );
    check(
        "row 5 text",
        Text,
        THINK,
        Natural,
        Some((T, ReasonCode::EmptyCompletion)),
    );
    check(
        "row 5 text",
        Text,
        THINK,
        Unknown,
        Some((T, ReasonCode::EmptyCompletion)),
    );
}

#[test]
fn v_30_row_6_everything_else_is_empty_completion() {
    for mode in [Text, OpenAi] {
        for class in [Natural, Unknown, Absent] {
            check(
                "row 6",
                mode,
                NONE,
                class,
                Some((T, ReasonCode::EmptyCompletion)),
            );
        }
    }
}

// ---------------------------------------------------------------- V-65 text cacheability

/// (row, content, finish, stream_end, cacheable).
type CacheRow<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, bool);

// covers: V-77, CF-190, CF-191, CF-192, CF-193, CF-194, CF-195, CF-196
#[test]
fn cf_189_to_cf_197_v_65_is_cacheable_text_rows() {
    let rows: [CacheRow<'_>; 9] = [
        ("cf_189", "a", Some("stop"), Some("done"), true),
        ("cf_190", "a", None, None, true),
        ("cf_191", "a", Some("stop"), Some("eof_after_finish"), true),
        ("cf_192", "a", None, Some("salvaged"), false),
        ("cf_193", " ", Some("stop"), Some("done"), false),
        ("cf_194", "a", Some("length"), None, false),
        ("cf_195", "a", Some("sensitive"), None, false),
        ("cf_196", "a", Some("end_turn"), None, false),
        ("cf_197", "a", Some("stop"), Some("bogus"), false),
    ];
    for (row, content, finish, end, cacheable) in rows {
        // Raw form (05 R-23): the cache DTO's values.
        let raw_finish = finish.map(|f| json!(f));
        let raw_end = end.map(|e| json!(e));
        assert_eq!(
            is_cacheable_raw(Text, content, raw_finish.as_ref(), raw_end.as_ref(), None),
            cacheable,
            "{row} raw"
        );
        // Typed form, where the stream end is representable ("bogus" is a decode miss).
        let typed_end: Option<Option<StreamEnd>> = match end {
            None => Some(None),
            Some(e) => StreamEnd::from_wire(e).map(Some),
        };
        if let Some(end) = typed_end {
            assert_eq!(
                is_cacheable(Text, content, finish, end, None),
                cacheable,
                "{row} typed"
            );
        } else {
            assert_eq!(row, "cf_197");
        }
    }
}

#[test]
fn v_58_non_string_finish_is_not_cacheable() {
    // A cache entry with finish 5 (V-67).
    assert!(!is_cacheable_raw(Text, "a", Some(&json!(5)), None, None));
    assert!(!is_cacheable_raw(Text, "a", None, Some(&json!(1)), None));
    assert!(is_cacheable_raw(
        Text,
        "a",
        Some(&json!(null)),
        Some(&json!(null)),
        None
    ));
    // D12: "" is absent → natural-or-absent passes.
    assert!(is_cacheable_raw(Text, "a", Some(&json!("")), None, None));
    assert!(is_cacheable(Text, "a", Some(""), None, None));
}

// ---------------------------------------------------------------- V-66 openai cacheability

fn completion(message: Value, finish: Option<&str>) -> OpenAiChatCompletion {
    OpenAiChatCompletion::try_new(
        obj(message),
        finish.map(str::to_owned),
        Some("up-1".into()),
        None,
    )
    .unwrap_or_else(|e| panic!("valid completion: {e}"))
}

fn tool(id: &str, arguments: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "lookup", "arguments": arguments}})
}

#[test]
fn cf_198_cf_199_v_66_is_cacheable_openai_rows() {
    let ok = completion(json!({"role":"assistant","content":"a"}), Some("stop"));
    assert!(
        is_cacheable(OpenAi, "a", Some("stop"), Some(StreamEnd::Done), Some(&ok)),
        "complete"
    );
    assert!(
        !is_cacheable(OpenAi, "a", Some("stop"), Some(StreamEnd::Done), None),
        "no completion"
    );
    let empty_raw = completion(json!({"role":"assistant","content":""}), Some("stop"));
    assert!(
        !is_cacheable(OpenAi, "a", Some("stop"), None, Some(&empty_raw)),
        "raw content empty"
    );
    let tool_only = completion(
        json!({"role":"assistant","content":null,"tool_calls":[tool("call_1", json!("{\"q\": 1}"))]}),
        Some("tool_calls"),
    );
    assert!(
        is_cacheable(OpenAi, "", Some("tool_calls"), None, Some(&tool_only)),
        "tool-only"
    );
    let think = completion(
        json!({"role":"assistant","content":"<think>x</think>"}),
        Some("stop"),
    );
    assert!(
        !is_cacheable(OpenAi, "", Some("stop"), None, Some(&think)),
        "cf_199 think-only projection"
    );
}

#[test]
fn v_64_uncacheable_results_are_delivered_but_not_written() {
    // Each: the verdict delivers, the predicate refuses (C-50).
    let salvaged = AttemptFacts {
        missing_done: gateway_ports::MissingDone::Salvage,
        stream: Some(StreamFacts {
            terminal: StreamTerminal::End,
            usage_after_finish: false,
            any_fragment: true,
        }),
        content: "a",
        ..AttemptFacts::default()
    };
    let text_rows = [
        ("salvaged", salvaged),
        (
            "length",
            AttemptFacts {
                content: "a",
                finish_reason: Some("length"),
                ..AttemptFacts::default()
            },
        ),
        (
            "content_filter",
            AttemptFacts {
                content: "a",
                finish_reason: Some("content_filter"),
                ..AttemptFacts::default()
            },
        ),
        (
            "end_turn",
            AttemptFacts {
                content: "a",
                finish_reason: Some("end_turn"),
                ..AttemptFacts::default()
            },
        ),
    ];
    for (row, facts) in text_rows {
        let verdict = judge_attempt(&facts);
        let delivery = verdict
            .delivery()
            .unwrap_or_else(|| panic!("{row} delivered"));
        assert!(!delivery.cacheable, "{row}");
    }
    let reasoning_only = obj(json!({"role":"assistant","reasoning_content":"r"}));
    for finish in ["length", "stop"] {
        let facts = AttemptFacts {
            mode: OpenAi,
            finish_reason: Some(finish),
            thinking: "r",
            message: Some(&reasoning_only),
            ..AttemptFacts::default()
        };
        let verdict = judge_attempt(&facts);
        let delivery = verdict
            .delivery()
            .unwrap_or_else(|| panic!("openai reasoning-only {finish}"));
        assert!(!delivery.cacheable, "openai reasoning-only {finish}");
    }
    // test_fidelity_think_only_projection_not_cached: raw "<think>x</think>", projection "".
    let think = obj(json!({"role":"assistant","content":"<think>x</think>"}));
    let facts = AttemptFacts {
        mode: OpenAi,
        finish_reason: Some("stop"),
        thinking: "x",
        message: Some(&think),
        ..AttemptFacts::default()
    };
    let verdict = judge_attempt(&facts);
    assert!(!verdict.delivery().expect("row 5 delivers").cacheable);
}

#[test]
fn v_67_read_path_rows_representable_in_the_predicate() {
    // A 1.3.9 openai entry without top-level finish whose completion finish is length → miss.
    let length = completion(json!({"role":"assistant","content":"a"}), Some("length"));
    assert!(!is_cacheable_raw(OpenAi, "a", None, None, Some(&length)));
    // An openai entry with eof_after_finish and no top-level finish → hit (finish from completion).
    let stop = completion(json!({"role":"assistant","content":"a"}), Some("stop"));
    assert!(is_cacheable_raw(
        OpenAi,
        "a",
        None,
        Some(&json!("eof_after_finish")),
        Some(&stop)
    ));
    // A 1.3.9 text entry without the two new keys → hit.
    assert!(is_cacheable_raw(Text, "a", None, None, None));
    // Role-only, null/""/whitespace content with empty tools, reasoning-only → miss.
    for message in [
        json!({"role":"assistant"}),
        json!({"role":"assistant","content":null,"tool_calls":[]}),
        json!({"role":"assistant","content":"","tool_calls":[]}),
        json!({"role":"assistant","content":"  ","tool_calls":[]}),
        json!({"role":"assistant","reasoning_content":"r"}),
    ] {
        let c = completion(message.clone(), Some("stop"));
        assert!(
            !is_cacheable_raw(OpenAi, "", Some(&json!("stop")), None, Some(&c)),
            "{message}"
        );
    }
    // Salvaged stored entry → miss even with a clean finish.
    assert!(!is_cacheable_raw(
        Text,
        "a",
        Some(&json!("stop")),
        Some(&json!("salvaged")),
        None
    ));
}

// ---------------------------------------------------------------- R-42

#[test]
fn r_42_fidelity_turn_with_unparsable_tool_arguments_is_not_cacheable() {
    let rows = [
        (json!("{\"q\": 1}"), true),
        (json!("{}"), true),
        (json!("[1, 2]"), true),
        (json!("{\"q"), false),
        (json!("{\"unfinished\":"), false),
        (json!(""), false),
        (json!("not json"), false),
    ];
    for (arguments, cacheable) in rows {
        let message = json!({"role":"assistant","content":null,"tool_calls":[
            tool("call_1", json!("{}")), tool("call_2", arguments.clone())]});
        assert_eq!(
            tool_arguments_parse(&obj(message.clone())),
            cacheable,
            "{arguments}"
        );
        let c = completion(message.clone(), Some("tool_calls"));
        assert_eq!(
            is_cacheable(
                OpenAi,
                "",
                Some("tool_calls"),
                Some(StreamEnd::Done),
                Some(&c)
            ),
            cacheable,
            "{arguments}"
        );
        // Still delivered (V-35): the verdict never parses arguments.
        let msg = obj(message);
        let facts = AttemptFacts {
            mode: OpenAi,
            finish_reason: Some("tool_calls"),
            message: Some(&msg),
            ..AttemptFacts::default()
        };
        let verdict = judge_attempt(&facts);
        let delivery = verdict
            .delivery()
            .expect("delivered whatever the arguments");
        assert_eq!(delivery.cacheable, cacheable, "{arguments}");
    }
    // Text mode has no tool calls: R-42 never applies.
    assert!(tool_arguments_parse(&obj(json!({"role":"assistant"}))));
}

// ---------------------------------------------------------------- V-60 one predicate

#[test]
fn v_60_one_predicate_for_verdict_write_and_read() {
    let messages = [
        json!({"role":"assistant","content":"a"}),
        json!({"role":"assistant","content":""}),
        json!({"role":"assistant","content":"<think>x</think>"}),
        json!({"role":"assistant","content":null,"tool_calls":[tool("c", json!("{}"))]}),
        json!({"role":"assistant","content":null,"tool_calls":[tool("c", json!("{\"q"))]}),
        json!({"role":"assistant","reasoning_content":"r"}),
    ];
    for message in messages {
        for finish in [
            None,
            Some("stop"),
            Some("tool_calls"),
            Some("length"),
            Some("end_turn"),
        ] {
            for end in [
                None,
                Some(StreamEnd::Done),
                Some(StreamEnd::EofAfterFinish),
                Some(StreamEnd::Salvaged),
            ] {
                for content in ["", "a", " "] {
                    let c = completion(message.clone(), finish);
                    let by_completion = is_cacheable(OpenAi, content, finish, end, Some(&c));
                    let by_message =
                        is_cacheable_message(OpenAi, content, finish, end, Some(c.message()));
                    let raw = is_cacheable_raw(
                        OpenAi,
                        content,
                        finish.map(|f| json!(f)).as_ref(),
                        end.map(|e| json!(e.as_str())).as_ref(),
                        Some(&c),
                    );
                    let mut response = LlmResponse::default();
                    response.content = content.to_owned();
                    response.finish_reason = finish.and_then(FinishReason::new);
                    response.stream_end = end;
                    response.completion = Some(c.clone());
                    let by_response = is_cacheable_response(OpenAi, &response);
                    assert_eq!(
                        by_completion, by_message,
                        "{message} {finish:?} {end:?} {content:?}"
                    );
                    assert_eq!(
                        by_completion, raw,
                        "{message} {finish:?} {end:?} {content:?}"
                    );
                    assert_eq!(
                        by_completion, by_response,
                        "{message} {finish:?} {end:?} {content:?}"
                    );
                }
            }
        }
    }
}
