//! Tier-1 tests of the script format (spec 15 "Script (JSON)") and of the pure planning layer
//! shared with gateway-core's ScriptedWire (05 R-30): parsing, validation, rendering, selection
//! and faults, without sockets.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failing unwrap is a failing test"
)]

use serde_json::{Value, json};
use upstream_sim::script::{
    Completion, End, Fault, FaultRng, Faults, Framing, Head, Headers, Order, Plan, RawChunk,
    RequestFacts, Response, Script, ScriptError, ScriptRunner, ToolCall, UsageFrame, UsageSpec,
    render,
};

fn parse(v: Value) -> Result<Script, ScriptError> {
    Script::from_json(&v.to_string())
}

/// The SSE frames of a plan, each parsed (`[DONE]` as the string "[DONE]").
fn frames(plan: &Plan) -> Vec<Value> {
    plan.writes
        .iter()
        .map(|w| {
            let text = std::str::from_utf8(&w.bytes).unwrap();
            let data = text
                .strip_prefix("data: ")
                .and_then(|t| t.strip_suffix("\n\n"))
                .unwrap_or_else(|| panic!("not one SSE frame: {text:?}"));
            if data == "[DONE]" {
                Value::String("[DONE]".into())
            } else {
                serde_json::from_str(data).unwrap()
            }
        })
        .collect()
}

fn body_json(plan: &Plan) -> Value {
    serde_json::from_slice(&plan.body()).unwrap()
}

#[test]
fn s15_version_missing_or_unsupported_is_a_typed_error_naming_the_field() {
    let missing = parse(json!({"responses": []})).unwrap_err();
    assert_eq!(missing, ScriptError::MissingVersion);
    assert!(missing.to_string().contains("`version`"));
    let v2 = parse(json!({"version": 2, "responses": [], "new_thing": 1})).unwrap_err();
    assert_eq!(
        v2,
        ScriptError::UnsupportedVersion {
            found: "2".to_owned()
        }
    );
    assert!(v2.to_string().contains("`version`"));
    assert!(matches!(
        parse(json!({"version": "1", "responses": []})),
        Err(ScriptError::UnsupportedVersion { .. })
    ));
}

#[test]
fn s15_unknown_fields_are_rejected_everywhere() {
    for bad in [
        json!({"version": 1, "responses": [], "extra": true}),
        json!({"version": 1, "responses": [{"stauts": 200}]}),
        json!({"version": 1, "responses": [{"completion": {"contnet": "x"}}]}),
        json!({"version": 1, "responses": [{"chunks": [{"text": "a", "delay": 5}]}]}),
        json!({"version": 1, "responses": [], "faults": {"p_500": 0.1}}),
    ] {
        let err = parse(bad.clone()).unwrap_err();
        assert!(
            matches!(&err, ScriptError::Json { message } if message.contains("unknown field")),
            "{bad}: {err}"
        );
    }
}

#[test]
fn s15_defaults_follow_the_tables() {
    let s = parse(json!({"version": 1, "responses": [{"completion": {}}]})).unwrap();
    assert_eq!(s.order, Order::Sequence);
    let r = &s.responses[0];
    assert_eq!(
        (r.status, r.framing, r.head, r.end, r.head_delay_ms),
        (200, Framing::Chunked, Head::Send, End::Eof, 0)
    );
    let c = r.completion.as_ref().unwrap();
    assert_eq!(c, &Completion::default());
    assert_eq!(c.finish_reason.as_deref(), Some("stop"));
    assert_eq!(c.usage, UsageSpec::Computed);
    assert_eq!(c.usage_frame, UsageFrame::Separate);
    assert_eq!((c.chunks, c.done), (8, true));
    let f = parse(json!({"version": 1, "responses": [], "faults": {}}))
        .unwrap()
        .faults
        .unwrap();
    assert_eq!(f, Faults::default());
    assert_eq!((f.retry_after.as_str(), f.status_5xx), ("1", 503));
}

#[test]
fn s15_nullable_finish_reason_and_usage() {
    let s = parse(json!({"version": 1, "responses": [
        {"completion": {"finish_reason": null, "usage": null}},
        {"completion": {"usage": {"prompt_tokens": 3, "completion_tokens": 4, "extra": 1}}}
    ]}))
    .unwrap();
    let c0 = s.responses[0].completion.as_ref().unwrap();
    assert_eq!(c0.finish_reason, None);
    assert_eq!(c0.usage, UsageSpec::Omitted);
    let c1 = s.responses[1].completion.as_ref().unwrap();
    assert!(matches!(&c1.usage, UsageSpec::Given(m) if m["extra"] == 1));
}

#[test]
fn s15_headers_map_and_list_forms_list_keeps_duplicates_in_order() {
    let s = parse(json!({"version": 1, "responses": [
        {"headers": {"content-type": "text/html", "server": "nginx"}},
        {"headers": [["retry-after", "1"], ["x-a", "b"], ["Retry-After", "2"]]}
    ]}))
    .unwrap();
    assert_eq!(
        s.responses[0].headers,
        Some(Headers::from_pairs([
            ("content-type", "text/html"),
            ("server", "nginx")
        ]))
    );
    assert_eq!(
        s.responses[1].headers,
        Some(Headers::from_pairs([
            ("retry-after", "1"),
            ("x-a", "b"),
            ("Retry-After", "2")
        ]))
    );
    let plan = render(&s.responses[1], &RequestFacts::chat("m", false), 0);
    let mut head = Vec::new();
    plan.encode_head(&mut head);
    let head = String::from_utf8(head).unwrap();
    assert!(
        head.contains("retry-after: 1\r\nx-a: b\r\nRetry-After: 2\r\n"),
        "{head}"
    );
}

#[test]
fn s15_chunks_text_and_base64_with_delays() {
    let s = parse(json!({"version": 1, "responses": [{"chunks": [
        {"text": "data: a"},
        {"base64": "5L+u", "delay_ms": 40}
    ]}]}))
    .unwrap();
    let chunks = s.responses[0].chunks.as_ref().unwrap();
    assert_eq!(chunks[0], RawChunk::text("data: a"));
    assert_eq!(
        chunks[1],
        RawChunk::bytes("修".as_bytes().to_vec()).after_ms(40)
    );
    for bad in [
        json!([{"text": "a", "base64": "YQ=="}]),
        json!([{}]),
        json!([{"base64": "!!"}]),
    ] {
        let err = parse(json!({"version": 1, "responses": [{"chunks": bad}]})).unwrap_err();
        assert!(matches!(err, ScriptError::Json { .. }), "{err}");
    }
}

#[test]
fn s15_domain_checks_name_the_field() {
    let err =
        parse(json!({"version": 1, "responses": [{"chunks": [], "completion": {}}]})).unwrap_err();
    assert!(matches!(&err, ScriptError::Invalid { field, .. } if field == "responses[0]"));
    let err = parse(json!({"version": 1, "responses": [], "faults": {"p_429": 1.5}})).unwrap_err();
    assert!(matches!(&err, ScriptError::Invalid { field, .. } if field == "faults.p_429"));
    let err =
        parse(json!({"version": 1, "responses": [{"completion": {"chunks": 0}}]})).unwrap_err();
    assert!(
        matches!(&err, ScriptError::Invalid { field, .. } if field == "responses[0].completion.chunks")
    );
    let err = parse(json!({"version": 1, "responses": [{"headers": {"a b": "x"}}]})).unwrap_err();
    assert!(matches!(&err, ScriptError::Invalid { field, .. } if field == "responses[0].headers"));
}

#[test]
fn s15_script_round_trips_through_json() {
    let script = Script::new(vec![
        Response::raw(
            520,
            vec![
                RawChunk::text("<html>"),
                RawChunk::bytes(vec![0xe4_u8]).after_ms(5),
            ],
        ),
        Response {
            headers: Some(Headers::from_pairs([("a", "1"), ("a", "2")])),
            framing: Framing::Close,
            end: End::Reset,
            ..Response::completion(Completion {
                reasoning: Some("think".into()),
                tool_calls: vec![ToolCall {
                    id: None,
                    name: "f".into(),
                    arguments: "{}".into(),
                }],
                finish_reason: None,
                usage: UsageSpec::Omitted,
                ..Completion::text("hi")
            })
        },
    ])
    .with_order(Order::Cycle)
    .with_faults(Faults {
        seed: 9,
        p_stall: 0.5,
        ..Faults::default()
    });
    let back = Script::from_json(&script.to_json()).unwrap();
    assert_eq!(back, script);
}

#[test]
fn s15_completion_stream_shape_reasoning_tools_finish_usage_done() {
    let c = Completion {
        content: "Hello".into(),
        reasoning: Some("hmm".into()),
        reasoning_field: upstream_sim::script::ReasoningField::Reasoning,
        tool_calls: vec![ToolCall {
            id: Some("call_1".into()),
            name: "get".into(),
            arguments: "{\"a\":1}".into(),
        }],
        chunks: 2,
        model: Some("scripted".into()),
        ..Completion::default()
    };
    let plan = render(
        &Response::completion(c),
        &RequestFacts::chat("asked", true),
        3,
    );
    assert_eq!(plan.status, 200);
    assert_eq!(
        plan.headers,
        vec![("content-type".to_owned(), "text/event-stream".to_owned())]
    );
    let f = frames(&plan);
    // 2 reasoning + 2 content + identity + 2 argument fragments + finish + usage + [DONE]
    assert_eq!(f.len(), 10, "{f:#?}");
    for frame in &f[..9] {
        assert_eq!(frame["id"], "chatcmpl-sim-3");
        assert_eq!(frame["object"], "chat.completion.chunk");
        assert_eq!(frame["model"], "scripted");
    }
    assert_eq!(f[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(f[0]["choices"][0]["delta"]["reasoning"], "h");
    assert_eq!(f[1]["choices"][0]["delta"]["reasoning"], "mm");
    assert_eq!(f[2]["choices"][0]["delta"]["content"], "He");
    assert_eq!(f[3]["choices"][0]["delta"]["content"], "llo");
    assert!(f[2]["choices"][0]["delta"].get("role").is_none());
    let ident = &f[4]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(
        ident,
        &json!({"index": 0, "id": "call_1", "type": "function",
                "function": {"name": "get", "arguments": ""}})
    );
    let frag: String = f[5..7]
        .iter()
        .map(|x| {
            let tc = &x["choices"][0]["delta"]["tool_calls"][0];
            assert!(tc.get("id").is_none());
            tc["function"]["arguments"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(frag, "{\"a\":1}");
    for x in &f[..7] {
        assert_eq!(x["choices"][0]["finish_reason"], Value::Null);
    }
    assert_eq!(f[7]["choices"][0]["finish_reason"], "stop");
    assert_eq!(f[7]["choices"][0]["delta"], json!({}));
    assert!(f[7].get("usage").is_none());
    assert_eq!(f[8]["choices"], json!([]));
    assert_eq!(f[8]["usage"]["completion_tokens"], 5); // ceil((5+3+3+7)/4)
    assert_eq!(
        f[8]["usage"]["completion_tokens_details"]["reasoning_tokens"],
        1
    );
    assert_eq!(f[9], "[DONE]");
    assert_eq!(plan.frames_before_finish, 7);
}

#[test]
fn s15_usage_frame_variants_and_done_false() {
    let base = Completion {
        chunks: 1,
        usage: UsageSpec::Given(
            json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})
                .as_object()
                .unwrap()
                .clone(),
        ),
        ..Completion::text("x")
    };
    let facts = RequestFacts::chat("m", true);
    let in_finish = frames(&render(
        &Response::completion(Completion {
            usage_frame: UsageFrame::InFinish,
            ..base.clone()
        }),
        &facts,
        0,
    ));
    assert_eq!(in_finish.len(), 3);
    assert_eq!(in_finish[1]["choices"][0]["finish_reason"], "stop");
    assert_eq!(in_finish[1]["usage"]["total_tokens"], 3);
    let none = frames(&render(
        &Response::completion(Completion {
            usage_frame: UsageFrame::None,
            ..base.clone()
        }),
        &facts,
        0,
    ));
    assert_eq!(none.len(), 3);
    assert!(none.iter().all(|f| f.get("usage").is_none()));
    let no_done = frames(&render(
        &Response::completion(Completion {
            done: false,
            finish_reason: None,
            ..base
        }),
        &facts,
        0,
    ));
    // content frame + usage frame; no finish frame, no [DONE]
    assert_eq!(no_done.len(), 2);
    assert_eq!(no_done[1]["choices"], json!([]));
    assert!(no_done.iter().all(|f| f != "[DONE]"));
}

#[test]
fn s15_completion_timing_ttft_then_inter_chunk() {
    let plan = render(
        &Response::completion(Completion {
            chunks: 3,
            ttft_ms: 100,
            inter_chunk_ms: 10,
            ..Completion::text("abc")
        }),
        &RequestFacts::chat("m", true),
        0,
    );
    let delays: Vec<u64> = plan.writes.iter().map(|w| w.delay_ms).collect();
    // content ×3, finish, usage, [DONE]
    assert_eq!(delays, vec![100, 10, 10, 10, 0, 0]);
    let non_stream = render(
        &Response::completion(Completion {
            chunks: 3,
            ttft_ms: 100,
            inter_chunk_ms: 10,
            ..Completion::text("abc")
        }),
        &RequestFacts::chat("m", false),
        0,
    );
    assert_eq!(non_stream.writes.len(), 1);
    assert_eq!(non_stream.writes[0].delay_ms, 130);
}

#[test]
fn s15_completion_non_stream_body() {
    let body =
        serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "12345678"}]});
    let facts = RequestFacts::from_parts("POST", "/v1/chat/completions", Some(&body));
    let plan = render(
        &Response::completion(Completion {
            reasoning: Some("r".into()),
            ..Completion::text("Hello world")
        }),
        &facts,
        0,
    );
    assert_eq!(
        plan.headers,
        vec![("content-type".to_owned(), "application/json".to_owned())]
    );
    assert_eq!(
        body_json(&plan),
        json!({
            "id": "chatcmpl-sim-0", "object": "chat.completion", "created": 1_700_000_000,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello world",
                          "reasoning_content": "r"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5,
                      "completion_tokens_details": {"reasoning_tokens": 1}}
        })
    );
    let tools = render(
        &Response::completion(Completion {
            tool_calls: vec![ToolCall {
                id: Some("c".into()),
                name: "f".into(),
                arguments: "{}".into(),
            }],
            finish_reason: Some("tool_calls".into()),
            usage: UsageSpec::Omitted,
            ..Completion::default()
        }),
        &facts,
        1,
    );
    let v = body_json(&tools);
    assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"],
        json!([{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    );
    assert!(v.get("usage").is_none());
}

#[test]
fn s15_embedding_one_vector_per_input() {
    let body = json!({"model": "emb", "input": ["a", "b", "c"]});
    let facts = RequestFacts::from_parts("POST", "/v1/embeddings", Some(&body));
    let v = body_json(&render(&Response::embedding(4), &facts, 0));
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "emb");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["index"], i);
        assert_eq!(d["embedding"].as_array().unwrap().len(), 4);
    }
}

#[test]
fn s15_order_sequence_last_repeats_cycle_wraps_by_model_first_match() {
    let statuses = |order: Order, n: usize| {
        let script = Script::new(vec![Response::raw(429, vec![]), Response::raw(200, vec![])])
            .with_order(order);
        let mut runner = ScriptRunner::new(script).unwrap();
        (0..n)
            .map(|_| runner.next_plan(&RequestFacts::chat("m", false)).status)
            .collect::<Vec<_>>()
    };
    assert_eq!(statuses(Order::Sequence, 4), vec![429, 200, 200, 200]);
    assert_eq!(statuses(Order::Cycle, 4), vec![429, 200, 429, 200]);
    assert_eq!(statuses(Order::ByModel, 3), vec![429, 429, 429]);

    let script = parse(json!({"version": 1, "order": "by_model", "responses": [
        {"match": {"model": "a"}, "status": 201},
        {"match": {"model": "b"}, "status": 202},
        {"match": {"model": "b"}, "status": 203}
    ]}))
    .unwrap();
    let mut runner = ScriptRunner::new(script).unwrap();
    let mut status = |m: &str| runner.next_plan(&RequestFacts::chat(m, false)).status;
    assert_eq!((status("b"), status("a"), status("b")), (202, 201, 202));
    let nomatch = runner.next_plan(&RequestFacts::chat("zzz", false));
    assert_eq!(nomatch.status, 404);
    assert_eq!(body_json(&nomatch)["error"]["code"], "sim_no_match");
}

#[test]
fn s15_sequence_counts_per_matching_set_and_embeddings_default() {
    let script = parse(json!({"version": 1, "responses": [
        {"match": {"model": "a"}, "status": 500},
        {"match": {"model": "a"}, "completion": {"content": "ok"}},
        {"match": {"model": "b"}, "status": 502}
    ]}))
    .unwrap();
    let mut runner = ScriptRunner::new(script).unwrap();
    let mut status = |m: &str| runner.next_plan(&RequestFacts::chat(m, false)).status;
    assert_eq!(
        [
            status("a"),
            status("b"),
            status("a"),
            status("b"),
            status("a")
        ],
        [500, 502, 200, 502, 200]
    );
    // Embeddings: completion responses do not apply; no candidate → 8 dimensions.
    let script = Script::new(vec![Response::completion(Completion::text("x"))]);
    let mut runner = ScriptRunner::new(script).unwrap();
    let plan = runner.next_plan(&RequestFacts::embeddings("e", 2));
    let v = body_json(&plan);
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 8);
    // Unknown paths need an explicit match.path.
    let other = runner.next_plan(&RequestFacts::from_parts("POST", "/v1/other", None));
    assert_eq!(other.status, 404);
}

#[test]
fn s15_faults_same_seed_same_plans() {
    let script = parse(json!({"version": 1,
        "responses": [{"completion": {"content": "hello world", "chunks": 4}}],
        "faults": {"seed": 11, "p_429": 0.2, "retry_after": 7, "p_5xx": 0.2, "status_5xx": 502,
                   "p_hang_before_head": 0.1, "p_stall": 0.2, "stall_ms": 900, "p_truncate": 0.2}}))
    .unwrap();
    let run = || {
        let mut runner = ScriptRunner::new(script.clone()).unwrap();
        (0..200)
            .map(|_| runner.next_plan(&RequestFacts::chat("m", true)))
            .collect::<Vec<_>>()
    };
    let a = run();
    assert_eq!(a, run());
    let faults = script.faults.clone().unwrap();
    let mut rng = FaultRng::new(11);
    for plan in &a {
        let expected = rng.next_fault(&faults);
        assert_eq!(plan.fault, expected);
        match &plan.fault {
            Some(Fault::TooManyRequests { .. }) => {
                assert_eq!(plan.status, 429);
                assert!(
                    plan.headers
                        .contains(&("retry-after".to_owned(), "7".to_owned()))
                );
            }
            Some(Fault::ServerError { .. }) => assert_eq!(plan.status, 502),
            Some(Fault::HangBeforeHead) => assert_eq!(plan.head, Head::Hang),
            Some(Fault::Stall { .. }) => {
                assert_eq!(plan.writes[2].delay_ms, 900);
                assert_eq!(plan.total_delay_ms(), 900);
            }
            Some(Fault::Truncate) => {
                // 4 content frames + finish + usage + [DONE] = 7 → 3 content frames.
                assert_eq!(plan.writes.len(), 3);
                let text = String::from_utf8(plan.body()).unwrap();
                assert!(!text.contains("[DONE]") && !text.contains("\"stop\""));
            }
            None => assert_eq!(plan.writes.len(), 7),
            Some(other) => panic!("unexpected {other:?}"),
        }
    }
    // Every kind fired at least once in 200 requests at these rates.
    for kind in 0..5 {
        assert!(
            a.iter().any(|p| matches!(
                (&p.fault, kind),
                (Some(Fault::TooManyRequests { .. }), 0)
                    | (Some(Fault::ServerError { .. }), 1)
                    | (Some(Fault::HangBeforeHead), 2)
                    | (Some(Fault::Stall { .. }), 3)
                    | (Some(Fault::Truncate), 4)
            )),
            "kind {kind} never fired"
        );
    }
}

#[test]
fn s15_models_lists_script_models_or_default() {
    let runner = ScriptRunner::new(
        parse(json!({"version": 1, "responses": [
            {"match": {"model": "a"}}, {"completion": {"model": "b"}}, {"match": {"model": "a"}}
        ]}))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(runner.models(), vec!["a".to_owned(), "b".to_owned()]);
    let mut empty = ScriptRunner::new(Script::new(vec![])).unwrap();
    let plan = empty.next_plan(&RequestFacts::from_parts("GET", "/models", None));
    assert_eq!(body_json(&plan)["data"][0]["id"], "sim-model");
}

#[test]
fn s15_framing_headers_are_computed_on_the_wire() {
    let mut r = Response::raw(200, vec![RawChunk::text("abc"), RawChunk::text("de")]);
    let facts = RequestFacts::chat("m", false);
    r.framing = Framing::ContentLength;
    assert_eq!(
        render(&r, &facts, 0).wire_headers(),
        vec![("content-length".to_owned(), "5".to_owned())]
    );
    r.framing = Framing::Close;
    assert_eq!(
        render(&r, &facts, 0).wire_headers(),
        vec![("connection".to_owned(), "close".to_owned())]
    );
    r.framing = Framing::Chunked;
    r.headers = Some(Headers::from_pairs([("Transfer-Encoding", "chunked")]));
    assert_eq!(
        render(&r, &facts, 0).wire_headers(),
        vec![("Transfer-Encoding".to_owned(), "chunked".to_owned())]
    );
    r.status = 204;
    r.headers = None;
    assert!(render(&r, &facts, 0).wire_headers().is_empty());
}

proptest::proptest! {
    /// Invariant: whatever the text and frame count, the content deltas of a stream are valid
    /// JSON frames whose concatenation is the scripted content, in at most `chunks` frames, and
    /// the non-stream body carries the same content.
    #[test]
    fn s15_content_split_reassembles_exactly(content in "\\PC{0,40}", chunks in 1u32..12) {
        let response = Response::completion(Completion { chunks, ..Completion::text(content.clone()) });
        let plan = render(&response, &RequestFacts::chat("m", true), 0);
        let f = frames(&plan);
        let deltas: Vec<&str> = f
            .iter()
            .filter_map(|x| x["choices"][0]["delta"]["content"].as_str())
            .collect();
        proptest::prop_assert!(deltas.len() <= chunks as usize);
        proptest::prop_assert_eq!(deltas.concat(), content.clone());
        let body = body_json(&render(&response, &RequestFacts::chat("m", false), 0));
        proptest::prop_assert_eq!(body["choices"][0]["message"]["content"].as_str(), Some(content.as_str()));
    }
}

#[test]
fn s15_every_json_example_in_the_docs_is_a_valid_script() {
    let doc = include_str!("../../docs/simulator.md");
    let mut count = 0;
    for block in doc.split("```json\n").skip(1) {
        let json = block.split("\n```").next().unwrap();
        if let Err(e) = Script::from_json(json) {
            panic!("docs example does not parse: {e}\n{json}");
        }
        count += 1;
    }
    assert!(count >= 6, "{count}");
}
