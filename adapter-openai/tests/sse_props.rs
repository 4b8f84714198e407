//! Property tests of the SSE framer (40 S-14…S-31, CT-CHAT-05/06):
//! - a generated valid stream yields exactly its events, however it is split into reads;
//! - any bytes, split anywhere, yield the same events as one read, never panic, end in exactly one
//!   terminal event, and respect the `max_frame_bytes` and excerpt caps (S-17, S-30, S-31).

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failing unwrap is a failing test"
)]

use adapter_openai::sse::{
    SseEvent, SseFramer, SseKeepAlive, SseNotice, UNRECOGNIZED_EXCERPT_BUDGET_BYTES,
};
use proptest::prelude::*;
use serde_json::Value;

/// Cuts `bytes` at the given positions (taken modulo `len + 1`, any order, duplicates allowed).
fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut reads = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for point in points {
        reads.push(&bytes[start..point]);
        start = point;
    }
    reads.push(&bytes[start..]);
    reads
}

/// Frames the reads and checks the per-push invariants: buffers bounded by the cap (S-17), nothing
/// after a terminal event (S-9).
fn run(max: usize, reads: &[&[u8]]) -> Vec<SseEvent> {
    let mut framer = SseFramer::new(max);
    let mut out = Vec::new();
    for read in reads {
        framer.push(read, &mut out);
        assert!(
            framer.buffered_bytes() <= max.saturating_mul(2),
            "buffered {} > 2 x {max}",
            framer.buffered_bytes()
        );
    }
    framer.finish(&mut out);
    out
}

/// Invariants every output satisfies, for any input.
fn check_invariants(max: usize, out: &[SseEvent]) {
    // CT-CHAT-06: exactly one terminal event, and it is the last one.
    let terminals = out.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "{out:?}");
    assert!(out.last().is_some_and(SseEvent::is_terminal));
    // S-30: at most 4 096 bytes of excerpt per stream, never an empty excerpt.
    let mut excerpt_total = 0;
    for event in out {
        match event {
            SseEvent::Unrecognized { excerpt } => {
                assert!(!excerpt.is_empty());
                excerpt_total += excerpt.len();
            }
            // S-17: no dispatched data is longer than the cap.
            SseEvent::MalformedFrame { len } => assert!(*len <= max),
            SseEvent::FrameTooLarge { limit } => assert_eq!(*limit, max),
            _ => {}
        }
    }
    assert!(excerpt_total <= UNRECOGNIZED_EXCERPT_BUDGET_BYTES);
}

/// Byte soup biased towards SSE syntax, so every framing path is reached.
fn sse_soup() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(b"data:".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"event: error".to_vec()),
        Just(b"event:".to_vec()),
        Just(b"error: ".to_vec()),
        Just(b"id: 1".to_vec()),
        Just(b"retry: 5".to_vec()),
        Just(b":".to_vec()),
        Just(b": ping".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"]".to_vec()),
        Just(b",".to_vec()),
        Just(b"\"error\":".to_vec()),
        Just(b"{\"error\":{}}".to_vec()),
        Just(b"{\"a\":1}".to_vec()),
        Just(b"[DONE]".to_vec()),
        Just(b"1".to_vec()),
        Just(b"\"x\"".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\xef\xbb\xbf".to_vec()),
        Just("修".as_bytes().to_vec()),
        Just(b"\xf0\x9f".to_vec()),
        Just(b"\xff".to_vec()),
        Just(b"<html>".to_vec()),
        any::<u8>().prop_map(|b| vec![b]),
    ];
    proptest::collection::vec(token, 0..64).prop_map(|tokens| tokens.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::from("[DONE]")),
        Just(Value::from("a\r\nb\u{feff}")),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One block of a valid stream and the event it must yield.
#[derive(Debug, Clone)]
enum Item {
    /// `data` line(s) holding one JSON value; pretty-printed values span several `data` lines.
    Chunk {
        value: Value,
        pretty: bool,
        space: bool,
        meta: bool,
    },
    Comment(String),
    EmptyData,
    /// `event: error` + `data:`, or the D18 `error:` field.
    Error {
        text: String,
        field: bool,
    },
    /// A block with only `retry:` / `id:` / `event:` lines: no event.
    MetaOnly,
    /// An unknown field name.
    Unknown(String),
    /// A raw JSON error object line (R-26).
    RawError(String),
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        4 => (json_value(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(value, pretty, space, meta)| Item::Chunk { value, pretty, space, meta }),
        1 => "[a-z {}]{0,10}".prop_map(Item::Comment),
        1 => Just(Item::EmptyData),
        1 => ("[a-z {}:\"]{0,20}", any::<bool>()).prop_map(|(text, field)| Item::Error { text, field }),
        1 => Just(Item::MetaOnly),
        1 => "x[a-z]{0,5}: [a-z]{0,8}".prop_map(Item::Unknown),
        1 => "[a-z]{0,8}".prop_map(|m| Item::RawError(format!("{{\"error\":{{\"message\":\"{m}\"}}}}"))),
    ]
}

/// Serializes items into SSE lines (each without terminator) plus the expected events.
fn render(items: &[Item], done: Option<bool>) -> (Vec<String>, Vec<SseEvent>) {
    let mut lines = Vec::new();
    let mut expected = Vec::new();
    for item in items {
        match item {
            Item::Chunk {
                value,
                pretty,
                space,
                meta,
            } => {
                if *meta {
                    lines.push("id: 42".to_owned());
                    lines.push("event: message".to_owned());
                }
                let text = if *pretty {
                    serde_json::to_string_pretty(value).unwrap()
                } else {
                    serde_json::to_string(value).unwrap()
                };
                let prefix = if *space { "data: " } else { "data:" };
                for part in text.split('\n') {
                    lines.push(format!("{prefix}{part}"));
                }
                lines.push(String::new());
                expected.push(SseEvent::Chunk(value.clone().into()));
            }
            Item::Comment(text) => {
                lines.push(format!(":{text}"));
                expected.push(SseEvent::KeepAlive(SseKeepAlive::Comment));
            }
            Item::EmptyData => {
                lines.push("data:".to_owned());
                lines.push(String::new());
                expected.push(SseEvent::KeepAlive(SseKeepAlive::EmptyData));
            }
            Item::Error { text, field } => {
                if *field {
                    lines.push(format!("error: {text}"));
                } else {
                    lines.push("event: error".to_owned());
                    lines.push(format!("data: {text}"));
                }
                lines.push(String::new());
                expected.push(SseEvent::ErrorEvent { data: text.clone() });
            }
            Item::MetaOnly => {
                lines.push("retry: 100".to_owned());
                lines.push("id: 5".to_owned());
                lines.push("event: ping".to_owned());
                lines.push(String::new());
            }
            Item::Unknown(line) => {
                lines.push(line.clone());
                expected.push(SseEvent::Unrecognized {
                    excerpt: line.clone(),
                });
            }
            Item::RawError(line) => {
                lines.push(line.clone());
                expected.push(SseEvent::ErrorEvent { data: line.clone() });
            }
        }
    }
    match done {
        Some(with_blank_line) => {
            lines.push("data: [DONE]".to_owned());
            if with_blank_line {
                lines.push(String::new());
            }
            expected.push(SseEvent::Done);
        }
        None => expected.push(SseEvent::End),
    }
    (lines, expected)
}

/// Joins lines with per-line terminators (0 = LF, 1 = CRLF, 2 = CR). A bare CR followed by an empty
/// line terminated by LF would merge into one CRLF, so that empty line gets CRLF instead (S-15).
fn join(lines: &[String], terminators: &[u8], bom: bool, last_terminated: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    if bom {
        bytes.extend_from_slice(b"\xef\xbb\xbf");
    }
    let mut previous_cr = false;
    for (i, line) in lines.iter().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        if i + 1 == lines.len() && !last_terminated {
            break;
        }
        let mut terminator: &[u8] = match terminators.get(i).copied().unwrap_or(0) % 3 {
            0 => b"\n",
            1 => b"\r\n",
            _ => b"\r",
        };
        if previous_cr && line.is_empty() && terminator == b"\n" {
            terminator = b"\r\n";
        }
        bytes.extend_from_slice(terminator);
        previous_cr = terminator == b"\r";
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// S-14…S-28: a valid stream yields exactly its events, however it is split into reads.
    #[test]
    fn s_15_s_16_valid_stream_any_split_yields_its_events(
        items in proptest::collection::vec(item(), 0..12),
        done in proptest::option::of(any::<bool>()),
        terminators in proptest::collection::vec(any::<u8>(), 0..128),
        bom in any::<bool>(),
        last_terminated in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
    ) {
        let (lines, expected) = render(&items, done);
        // An unterminated final line is flushed (S-28); only drop the terminator at the very end.
        let bytes = join(&lines, &terminators, bom, last_terminated);
        let one_read = run(1 << 20, &[&bytes]);
        prop_assert_eq!(&one_read, &expected);
        let reads = split(&bytes, &cuts);
        prop_assert_eq!(&run(1 << 20, &reads), &expected);
        // Byte by byte, the worst case for the CR/LF, BOM and UTF-8 carry-over.
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(&run(1 << 20, &bytewise), &expected);
    }

    /// S-26: chunks separated by single newlines are recovered in order after the notice.
    #[test]
    fn s_26_single_newline_separated_chunks_recovered(
        values in proptest::collection::vec(json_value(), 2..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut body = String::new();
        for value in &values {
            body.push_str("data: ");
            body.push_str(&serde_json::to_string(value).unwrap());
            body.push('\n');
        }
        body.push('\n');
        let out = run(1 << 20, &split(body.as_bytes(), &cuts));
        let joined: String = values.iter().map(|v| serde_json::to_string(v).unwrap()).collect::<Vec<_>>().join("\n");
        let mut expected = Vec::new();
        if let Ok(value) = serde_json::from_str::<Value>(&joined) {
            // Rare: the lines happen to form one JSON text (e.g. a single value split oddly).
            expected.push(SseEvent::Chunk(value.into()));
        } else {
            expected.push(SseEvent::Notice(SseNotice::SplitDataLines));
            expected.extend(values.iter().map(|v| SseEvent::Chunk(v.into())));
        }
        expected.push(SseEvent::End);
        prop_assert_eq!(out, expected);
    }

    /// S-31: any SSE-like bytes, split anywhere, give the same events as one read and never panic;
    /// the caps hold (S-17, S-30) and exactly one terminal ends the stream (CT-CHAT-06).
    #[test]
    fn s_31_soup_split_invariant_and_capped(
        bytes in sse_soup(),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
        max in prop_oneof![0usize..64, Just(1usize << 20)],
    ) {
        let one_read = run(max, &[&bytes]);
        check_invariants(max, &one_read);
        prop_assert_eq!(&run(max, &split(&bytes, &cuts)), &one_read);
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(&run(max, &bytewise), &one_read);
    }

    /// S-31: arbitrary bytes never panic and respect the caps.
    #[test]
    fn s_31_arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
        max in prop_oneof![0usize..256, Just(1usize << 20)],
    ) {
        let one_read = run(max, &[&bytes]);
        check_invariants(max, &one_read);
        prop_assert_eq!(&run(max, &split(&bytes, &cuts)), &one_read);
    }

    /// S-30: many unknown lines never report more than 4 096 bytes in total.
    #[test]
    fn s_30_excerpt_budget_holds(
        lines in proptest::collection::vec("[a-z修🌍]{1,300}", 1..60),
    ) {
        let body = lines.join("\n");
        let out = run(1 << 20, &[body.as_bytes()]);
        check_invariants(1 << 20, &out);
    }
}
