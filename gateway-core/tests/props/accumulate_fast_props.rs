//! The text-mode fast reading of chunks (`Accumulator::push_json`, 05 R-56) is an optimisation,
//! not a second rule set: on any sequence of chunk texts it yields the same per-frame results
//! and the same final `Accumulated` as the `Value` reading (`push_chunk`), in both modes.
//!
//! Frames are generated as JSON *texts* from a tree that allows duplicate keys, odd types at
//! every field the accumulator reads, escapes and whitespace, so both the fast path and each of
//! its fall-backs are exercised.
// covers: S-34, S-35, S-36, S-37, S-38, S-42, S-46, S-47, S-49, S-50, S-55, S-66, S-73

#![allow(clippy::unwrap_used, reason = "test helpers fail loudly on purpose")]

use gateway_core::accumulate::{
    AccumulateOptions, Accumulator, parse_non_stream_body, parse_non_stream_value,
};
use gateway_ports::ports::text_read::TextFrame;
use gateway_ports::{ChunkJson, ResponseMode};
use proptest::prelude::*;

/// A JSON tree whose objects may repeat keys (rendered as written).
#[derive(Debug, Clone)]
enum J {
    Raw(&'static str),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    fn render(&self, out: &mut String, spaced: bool) {
        match self {
            J::Raw(raw) => out.push_str(raw),
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if spaced { ", " } else { "," });
                    }
                    item.render(out, spaced);
                }
                out.push(']');
            }
            J::Obj(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(if spaced { ", " } else { "," });
                    }
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push_str(if spaced { ": " } else { ":" });
                    value.render(out, spaced);
                }
                out.push('}');
            }
        }
    }
}

fn opt_field(
    key: &'static str,
    value: impl Strategy<Value = J> + 'static,
) -> BoxedStrategy<Vec<(String, J)>> {
    let value = value.boxed();
    prop_oneof![
        3 => Just(Vec::new()),
        6 => value.clone().prop_map(move |v| vec![(key.to_owned(), v)]),
        1 => (value.clone(), value).prop_map(move |(a, b)| vec![(key.to_owned(), a), (key.to_owned(), b)]),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<J> {
    prop_oneof![
        4 => "[a-d]{0,3}".prop_map(J::Str),
        1 => Just(J::Str(String::new())),
        1 => Just(J::Str("tab\t\"q\"\\ é".to_owned())),
        1 => Just(J::Raw("\"\\u0041\\n\"")),
        1 => any::<String>().prop_map(J::Str),
    ]
    .boxed()
}

fn odd() -> BoxedStrategy<J> {
    prop_oneof![
        Just(J::Raw("null")),
        Just(J::Raw("0")),
        Just(J::Raw("1")),
        Just(J::Raw("0.0")),
        Just(J::Raw("-0")),
        Just(J::Raw("true")),
        Just(J::Raw("{}")),
        Just(J::Raw("[]")),
        Just(J::Raw("\"0\"")),
    ]
    .boxed()
}

fn scalar_text() -> BoxedStrategy<J> {
    prop_oneof![6 => text(), 2 => Just(J::Raw("null")), 1 => odd()].boxed()
}

fn delta() -> BoxedStrategy<J> {
    let keyed = (
        opt_field("role", prop_oneof![Just(J::Str("assistant".into())), odd()]),
        opt_field("content", scalar_text()),
        opt_field("reasoning_content", scalar_text()),
        opt_field("reasoning", scalar_text()),
        prop_oneof![
            8 => Just(Vec::new()),
            1 => Just(vec![("refusal".to_owned(), J::Raw("null"))]),
            1 => Just(vec![("tool_calls".to_owned(), J::Raw(r#"[{"index":0,"id":"t","function":{"name":"f","arguments":"{}"}}]"#))]),
        ],
    )
        .prop_map(|(a, b, c, d, e)| J::Obj([a, b, c, d, e].concat()));
    prop_oneof![8 => keyed, 1 => Just(J::Raw("null")), 1 => odd()].boxed()
}

fn choice(inner: &'static str) -> BoxedStrategy<J> {
    let keyed = (
        opt_field(
            "index",
            prop_oneof![4 => Just(J::Raw("0")), 1 => Just(J::Raw("1")), 1 => odd()],
        ),
        opt_field(inner, delta()),
        opt_field(
            "finish_reason",
            prop_oneof![
                2 => Just(J::Raw("null")),
                1 => Just(J::Str("stop".into())),
                1 => Just(J::Str("length".into())),
                1 => Just(J::Str(String::new())),
                1 => odd(),
            ],
        ),
        opt_field("logprobs", Just(J::Raw("null"))),
    )
        .prop_map(|(a, b, c, d)| J::Obj([a, b, c, d].concat()));
    prop_oneof![9 => keyed, 1 => odd()].boxed()
}

/// A chunk (`inner` = `"delta"`) or a non-stream body (`inner` = `"message"`).
fn frame(inner: &'static str) -> BoxedStrategy<J> {
    let choices = prop_oneof![
        8 => prop::collection::vec(choice(inner), 0..3).prop_map(J::Arr),
        1 => odd(),
    ];
    let usage = prop_oneof![
        3 => Just(J::Raw(r#"{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}"#)),
        1 => Just(J::Raw("null")),
        1 => odd(),
    ];
    let keyed = (
        opt_field("id", prop_oneof![4 => Just(J::Str("c1".into())), 1 => Just(J::Str("c2".into())), 1 => scalar_text()]),
        opt_field("object", Just(J::Str("chat.completion.chunk".into()))),
        opt_field("model", prop_oneof![3 => Just(J::Str("m".into())), 1 => Just(J::Str(" ".into())), 1 => scalar_text()]),
        opt_field("choices", choices),
        opt_field("usage", usage),
        prop_oneof![
            20 => Just(Vec::new()),
            1 => Just(vec![("error".to_owned(), J::Raw(r#"{"message":"x","code":429}"#))]),
            1 => Just(vec![("error".to_owned(), J::Raw("null"))]),
        ],
    )
        .prop_map(|(a, b, c, d, e, f)| J::Obj([a, b, c, d, e, f].concat()));
    prop_oneof![20 => keyed, 1 => odd()].boxed()
}

fn opts(max_response_bytes: usize) -> AccumulateOptions {
    let mut options = AccumulateOptions::new("4f1e2d3c-0000-4000-8000-000000000001", "fast");
    options.max_response_bytes = max_response_bytes;
    options
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// 05 R-56: `push_json` ≡ `push_chunk(parse(text))`, frame by frame and at `finish()`.
    #[test]
    fn r_56_fast_text_reading_matches_the_value_reading(
        frames in prop::collection::vec((frame("delta"), any::<bool>()), 1..8),
        small_cap in any::<bool>(),
    ) {
        let cap = if small_cap { 24 } else { 1 << 20 };
        for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
            let mut fast = Accumulator::new(mode, opts(cap));
            let mut slow = Accumulator::new(mode, opts(cap));
            for (tree, spaced) in &frames {
                let mut text = String::new();
                tree.render(&mut text, *spaced);
                let chunk = ChunkJson::parse(&text).unwrap();
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                let a = fast.push_json(&chunk);
                let b = slow.push_chunk(&value);
                prop_assert_eq!(a, b, "frame {}", text);
            }
            prop_assert_eq!(fast.finish(), slow.finish());
        }
    }

    /// 05 R-56, S-111: `parse_non_stream_body` (fast text-mode reading) ≡
    /// `parse_non_stream_value(parse(text))`, in both modes.
    #[test]
    fn r_56_s_111_fast_body_reading_matches_the_value_reading(
        body in frame("message"),
        spaced in any::<bool>(),
    ) {
        let mut text = String::new();
        body.render(&mut text, spaced);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
            let options = opts(1 << 20);
            prop_assert_eq!(
                parse_non_stream_body(text.as_bytes(), mode, &options),
                parse_non_stream_value(&value, mode, &options),
                "body {}", text
            );
        }
    }
}

/// Junk around and inside frames: cut texts, trailing garbage, two texts, bare scalars.
fn mangled(text: String, how: u8, at: usize) -> String {
    let cut = if text.is_empty() { 0 } else { at % text.len() };
    let cut = (0..=cut)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    match how % 5 {
        0 => text,
        1 => text[..cut].to_owned(),
        2 => format!("{text} x"),
        3 => format!("{text}{text}"),
        _ => format!("  {text}\n"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Issue 21 (05 R-56, 40 S-25): the transport's check and the text-mode reading are one
    /// scan: `ChunkJson::parse` accepts exactly the JSON texts (as the plain check did), and the
    /// fields it keeps are those `TextFrame::read` reads from the text.
    #[test]
    fn r_56_s_25_one_scan_check_keeps_the_text_reading(
        tree in frame("delta"),
        spaced in any::<bool>(),
        how in any::<u8>(),
        at in any::<usize>(),
    ) {
        let mut text = String::new();
        tree.render(&mut text, spaced);
        let text = mangled(text, how, at);
        let is_json = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
        let parsed = ChunkJson::parse(&text);
        prop_assert_eq!(parsed.is_ok(), is_json, "text {}", text);
        if let Ok(chunk) = parsed {
            let kept = chunk.text_frame().map(|f| format!("{f:?}"));
            let read = TextFrame::read(&text).map(|f| format!("{f:?}"));
            prop_assert_eq!(&kept, &read, "text {}", text);
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let rebuilt = ChunkJson::from_value(&value);
            let reread = TextFrame::read(rebuilt.as_str()).map(|f| format!("{f:?}"));
            prop_assert_eq!(rebuilt.text_frame().map(|f| format!("{f:?}")), reread);
        }
    }
}

/// The common OpenAI stream shapes take the fast reading and give the documented results.
#[test]
fn r_56_typical_stream_is_read_in_text_mode() {
    let frames = [
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
    ];
    let mut acc = Accumulator::new(ResponseMode::Text, opts(1 << 20));
    let progress: Vec<bool> = frames
        .iter()
        .map(|f| {
            acc.push_json(&ChunkJson::parse(f).unwrap())
                .unwrap()
                .is_progress()
        })
        .collect();
    assert_eq!(progress, [false, true, true, false, false]);
    let done = acc.finish();
    assert_eq!(done.content, "Hello");
    assert_eq!(
        done.finish_reason.as_ref().map(|f| f.as_str()),
        Some("stop")
    );
    assert_eq!(done.response_id.as_deref(), Some("c"));
    assert_eq!(done.model_reported.as_deref(), Some("m"));
    assert!(done.usage_after_finish);
}
