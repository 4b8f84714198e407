//! One or more tests per framing rule of 40 §3 (S-14…S-30), 05 R-26 and README D18; test names
//! cite the rule ids.

use adapter_openai::sse::{
    DEFAULT_MAX_FRAME_BYTES, SseEvent, SseFramer, SseKeepAlive, SseNotice,
    UNRECOGNIZED_EXCERPT_BUDGET_BYTES,
};
use serde_json::json;

fn frame_reads_with(max: usize, reads: &[&[u8]]) -> Vec<SseEvent> {
    let mut framer = SseFramer::new(max);
    let mut out = Vec::new();
    for read in reads {
        framer.push(read, &mut out);
    }
    framer.finish(&mut out);
    out
}

fn frame_reads(reads: &[&[u8]]) -> Vec<SseEvent> {
    frame_reads_with(DEFAULT_MAX_FRAME_BYTES, reads)
}

fn frame(input: &[u8]) -> Vec<SseEvent> {
    frame_reads(&[input])
}

fn chunk(value: serde_json::Value) -> SseEvent {
    SseEvent::Chunk(value.into())
}

fn error_event(data: &str) -> SseEvent {
    SseEvent::ErrorEvent { data: data.into() }
}

fn unrecognized(excerpt: &str) -> SseEvent {
    SseEvent::Unrecognized {
        excerpt: excerpt.into(),
    }
}

const COMMENT: SseEvent = SseEvent::KeepAlive(SseKeepAlive::Comment);
const EMPTY_DATA: SseEvent = SseEvent::KeepAlive(SseKeepAlive::EmptyData);
const SPLIT: SseEvent = SseEvent::Notice(SseNotice::SplitDataLines);

// ---- S-14 BOM --------------------------------------------------------------------------------

#[test]
fn s_14_bom_stripped_once_only() {
    assert_eq!(
        frame(b"\xef\xbb\xbfdata: 1\n\n"),
        vec![chunk(json!(1)), SseEvent::End]
    );
    // A second BOM is data: here part of the field name, so the line is unrecognized.
    assert_eq!(
        frame(b"\xef\xbb\xbf\xef\xbb\xbfdata: 1\n\n"),
        vec![unrecognized("\u{feff}data: 1"), SseEvent::End]
    );
}

#[test]
fn s_14_bom_only_at_stream_start() {
    assert_eq!(
        frame(b"data: 1\n\n\xef\xbb\xbfdata: 2\n\n"),
        vec![
            chunk(json!(1)),
            unrecognized("\u{feff}data: 2"),
            SseEvent::End
        ]
    );
}

#[test]
fn s_14_bom_split_byte_by_byte() {
    assert_eq!(
        frame_reads(&[b"\xef", b"\xbb", b"\xbf", b"data: 1\n\n"]),
        vec![chunk(json!(1)), SseEvent::End]
    );
    // Empty reads while the BOM is pending change nothing.
    assert_eq!(
        frame_reads(&[b"", b"\xef", b"", b"\xbb\xbfdata: 1\n\n"]),
        vec![chunk(json!(1)), SseEvent::End]
    );
}

#[test]
fn s_14_escaped_feff_inside_json_is_data() {
    assert_eq!(
        frame(b"data: \"\\ufeffx\"\n\n"),
        vec![chunk(json!("\u{feff}x")), SseEvent::End]
    );
}

// ---- S-15 line terminators -------------------------------------------------------------------

#[test]
fn s_15_lf_crlf_and_cr_terminators() {
    let expected = vec![chunk(json!(1)), chunk(json!(2)), SseEvent::End];
    assert_eq!(frame(b"data: 1\n\ndata: 2\n\n"), expected);
    assert_eq!(frame(b"data: 1\r\n\r\ndata: 2\r\n\r\n"), expected);
    assert_eq!(frame(b"data: 1\r\rdata: 2\r\r"), expected);
    assert_eq!(frame(b"data: 1\r\n\rdata: 2\n\r\n"), expected);
}

#[test]
fn s_15_cr_lf_split_across_reads_is_one_terminator() {
    // If CR | LF made two terminators, the empty line between would dispatch `1` on its own.
    // As one terminator, both data lines belong to one event (recovered by S-26).
    let out = frame_reads(&[b"data: 1\r", b"\ndata: 2\n\n"]);
    assert_eq!(
        out,
        vec![SPLIT, chunk(json!(1)), chunk(json!(2)), SseEvent::End]
    );
    assert_eq!(out, frame(b"data: 1\r\ndata: 2\n\n"));
}

#[test]
fn s_15_cr_at_read_end_then_cr_or_other_byte() {
    // CR | CR: two terminators = a line end and an empty line.
    assert_eq!(
        frame_reads(&[b"data: 1\r", b"\rdata: 2\r\r"]),
        vec![chunk(json!(1)), chunk(json!(2)), SseEvent::End]
    );
    // CR | text: the CR alone ended the line.
    assert_eq!(
        frame_reads(&[b"data: 1\r", b"data: 2\r\r"]),
        vec![SPLIT, chunk(json!(1)), chunk(json!(2)), SseEvent::End]
    );
    // CR, empty read, LF: still one terminator.
    assert_eq!(
        frame_reads(&[b"data: 1\r", b"", b"\n", b"\r\n"]),
        vec![chunk(json!(1)), SseEvent::End]
    );
}

#[test]
fn s_15_no_cr_left_in_values() {
    assert_eq!(
        frame_reads(&[b"event: error\r", b"\ndata: x\r", b"\n\r", b"\n"]),
        vec![error_event("x"), SseEvent::End]
    );
}

// ---- S-16 UTF-8 ------------------------------------------------------------------------------

#[test]
fn s_16_character_split_byte_by_byte_is_reassembled() {
    let body = "data: \"修🌍\"\n\n".as_bytes();
    let reads: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(
        frame_reads(&reads),
        vec![chunk(json!("修🌍")), SseEvent::End]
    );
}

#[test]
fn s_16_invalid_utf8_decodes_to_replacement_never_fails() {
    assert_eq!(
        frame(b"event: error\ndata: a\xffb\n\n"),
        vec![error_event("a\u{fffd}b"), SseEvent::End]
    );
    // A sequence still incomplete at the end of body.
    assert_eq!(
        frame(b"event: error\ndata: a\xe4\xbf"),
        vec![error_event("a\u{fffd}"), SseEvent::End]
    );
}

// ---- S-17 max_frame_bytes --------------------------------------------------------------------

#[test]
fn s_17_line_over_cap_fails_as_soon_as_passed() {
    let mut framer = SseFramer::new(16);
    let mut out = Vec::new();
    framer.push(b"data: 1234567890", &mut out); // 16 bytes: at the cap, still fine
    assert!(out.is_empty());
    assert_eq!(framer.buffered_bytes(), 16);
    framer.push(b"0", &mut out); // 17: passed, without waiting for the line end
    assert_eq!(out, vec![SseEvent::FrameTooLarge { limit: 16 }]);
    assert!(framer.is_finished());
    assert_eq!(framer.buffered_bytes(), 0);
    framer.push(b"\n\ndata: 1\n\n", &mut out);
    framer.finish(&mut out);
    assert_eq!(out, vec![SseEvent::FrameTooLarge { limit: 16 }]);
}

#[test]
fn s_17_line_at_cap_passes_in_one_read_too() {
    assert_eq!(
        frame_reads_with(16, &[b"data: 1234567890\n\n"]),
        vec![chunk(json!(1234567890)), SseEvent::End]
    );
    assert_eq!(
        frame_reads_with(15, &[b"data: 1234567890\n\n"]),
        vec![SseEvent::FrameTooLarge { limit: 15 }]
    );
}

#[test]
fn s_17_comment_and_unknown_lines_are_capped_too() {
    assert_eq!(
        frame_reads_with(8, &[b": 1234567\n"]),
        vec![SseEvent::FrameTooLarge { limit: 8 }]
    );
    assert_eq!(
        frame_reads_with(8, &[b"<html>...\n"]),
        vec![SseEvent::FrameTooLarge { limit: 8 }]
    );
}

#[test]
fn s_17_event_data_buffer_over_cap() {
    // Each line is 12 bytes (under 16); the joined data grows past 16 on the third line.
    let out = frame_reads_with(16, &[b"data: [1111,\ndata: 2222,\ndata: 3333]\n\n"]);
    assert_eq!(out, vec![SseEvent::FrameTooLarge { limit: 16 }]);
}

#[test]
fn s_17_two_megabyte_line_passes_with_default() {
    let payload = "x".repeat(2 * 1024 * 1024);
    let body = format!("data: \"{payload}\"\n\n");
    let out = frame(body.as_bytes());
    assert_eq!(out, vec![chunk(json!(payload)), SseEvent::End]);
}

#[test]
fn s_17_default_cap_is_16_mib() {
    assert_eq!(DEFAULT_MAX_FRAME_BYTES, 16_777_216);
    assert_eq!(SseFramer::default().max_frame_bytes(), 16_777_216);
    let mut framer = SseFramer::default();
    let mut out = Vec::new();
    framer.push(b"data: ", &mut out);
    let block = vec![b'7'; 1024 * 1024];
    for _ in 0..16 {
        framer.push(&block, &mut out);
    }
    // 6 + 16 MiB bytes buffered would pass the cap: failed on the last block, never held.
    assert_eq!(out, vec![SseEvent::FrameTooLarge { limit: 16_777_216 }]);
    assert_eq!(framer.buffered_bytes(), 0);
}

// ---- S-18 / S-21 dispatch --------------------------------------------------------------------

#[test]
fn s_18_event_dispatched_at_blank_line_not_before() {
    let mut framer = SseFramer::new(1024);
    let mut out = Vec::new();
    framer.push(b"data: 1\n", &mut out);
    assert!(out.is_empty(), "no dispatch before the blank line");
    framer.push(b"\n", &mut out);
    assert_eq!(out, vec![chunk(json!(1))]);
}

#[test]
fn s_21_blocks_without_data_produce_nothing() {
    assert_eq!(
        frame(b"retry: 3000\n\nid: 7\n\nevent: ping\n\nevent: error\nid: 1\nretry: 5\n\n\n\n"),
        vec![SseEvent::End]
    );
}

#[test]
fn s_21_event_type_reset_after_dispatch() {
    // The `event: error` of a data-less block does not leak into the next block.
    assert_eq!(
        frame(b"event: error\n\ndata: 1\n\n"),
        vec![chunk(json!(1)), SseEvent::End]
    );
    assert_eq!(
        frame(b"event: error\ndata: x\n\ndata: 1\n\n"),
        vec![error_event("x"), chunk(json!(1)), SseEvent::End]
    );
}

// ---- S-19 comments ---------------------------------------------------------------------------

#[test]
fn s_19_comment_with_or_without_space_anywhere() {
    assert_eq!(
        frame(b":ping\n: keep-alive\n:\n\n"),
        vec![COMMENT, COMMENT, COMMENT, SseEvent::End]
    );
}

#[test]
fn s_19_comment_inside_event_does_not_end_it() {
    assert_eq!(
        frame(b"data: {\"a\":\n: ping\ndata: 1}\n\n"),
        vec![COMMENT, chunk(json!({"a": 1})), SseEvent::End]
    );
}

#[test]
fn s_19_comment_never_json_decoded() {
    assert_eq!(frame(b": {\"error\":1}\n"), vec![COMMENT, SseEvent::End]);
}

// ---- S-20 fields -----------------------------------------------------------------------------

#[test]
fn s_20_exactly_one_leading_space_removed() {
    assert_eq!(
        frame(b"event: error\ndata:  two\n\n"),
        vec![error_event(" two"), SseEvent::End]
    );
    assert_eq!(
        frame(b"event: error\ndata:x \n\n"),
        vec![error_event("x "), SseEvent::End]
    );
}

#[test]
fn s_20_line_without_colon_is_name_with_empty_value() {
    assert_eq!(frame(b"data\n\n"), vec![EMPTY_DATA, SseEvent::End]);
    assert_eq!(
        frame(b"event: error\ndata\ndata\n\n"),
        vec![error_event("\n"), SseEvent::End]
    );
}

#[test]
fn s_20_id_and_retry_ignored() {
    assert_eq!(
        frame(b"id: 1\nretry: x\ndata: 1\nid\nretry\n\n"),
        vec![chunk(json!(1)), SseEvent::End]
    );
}

#[test]
fn s_20_unknown_field_names_are_unrecognized_and_case_sensitive() {
    assert_eq!(
        frame(b"Data: 1\nfoo: bar\ndata : 2\n\n"),
        vec![
            unrecognized("Data: 1"),
            unrecognized("foo: bar"),
            unrecognized("data : 2"),
            SseEvent::End
        ]
    );
}

#[test]
fn s_20_unrecognized_line_does_not_disturb_the_pending_event() {
    assert_eq!(
        frame(b"data: [1,\n<b>oops</b>\ndata: 2]\n\n"),
        vec![
            unrecognized("<b>oops</b>"),
            chunk(json!([1, 2])),
            SseEvent::End
        ]
    );
}

#[test]
fn d18_error_field_is_an_error_event() {
    assert_eq!(
        frame(b"error: {\"code\":500,\"message\":\"boom\"}\n\n"),
        vec![
            error_event("{\"code\":500,\"message\":\"boom\"}"),
            SseEvent::End
        ]
    );
    // Without its blank line, flushed at end of body (S-28).
    assert_eq!(
        frame(b"error: boom"),
        vec![error_event("boom"), SseEvent::End]
    );
    // Empty value: still an error event.
    assert_eq!(frame(b"error:\n\n"), vec![error_event(""), SseEvent::End]);
}

#[test]
fn d18_error_field_type_is_not_overridden_by_a_later_event_line() {
    // Decision: the block that held an `error` field is of type `error` (D18 "the block is
    // dispatched as an event of type error"), whatever `event:` says.
    assert_eq!(
        frame(b"error: boom\nevent: message\n\n"),
        vec![error_event("boom"), SseEvent::End]
    );
}

#[test]
fn r_26_raw_json_line_with_error_key_is_an_error_event() {
    let line = r#"{"error":{"message":"Rate limit","code":429}}"#;
    assert_eq!(
        frame(format!("{line}\n").as_bytes()),
        vec![error_event(line), SseEvent::End]
    );
    // Leading whitespace: the first non-whitespace byte decides; the whole line is carried.
    let spaced = format!("  \t{line} ");
    assert_eq!(
        frame(format!("{spaced}\n").as_bytes()),
        vec![error_event(&spaced), SseEvent::End]
    );
    // `error: null` still has the key.
    assert_eq!(
        frame(b"{\"error\":null}"),
        vec![error_event("{\"error\":null}"), SseEvent::End]
    );
}

#[test]
fn r_26_raw_json_line_without_error_key_is_unrecognized() {
    assert_eq!(
        frame(b"{\"choices\":[]}\n[{\"error\":1}]\n{not json\n{\"error\":1} trailing\n"),
        vec![
            unrecognized("{\"choices\":[]}"),
            unrecognized("[{\"error\":1}]"),
            unrecognized("{not json"),
            unrecognized("{\"error\":1} trailing"),
            SseEvent::End
        ]
    );
}

#[test]
fn r_26_raw_error_line_yielded_at_once_and_pending_event_kept() {
    let mut framer = SseFramer::new(1024);
    let mut out = Vec::new();
    framer.push(b"data: 1\n{\"error\":\"x\"}\n", &mut out);
    assert_eq!(out, vec![error_event("{\"error\":\"x\"}")]);
    framer.push(b"\n", &mut out);
    assert_eq!(out, vec![error_event("{\"error\":\"x\"}"), chunk(json!(1))]);
}

// ---- S-22 / S-27 event types -----------------------------------------------------------------

#[test]
fn s_22_event_error_whatever_the_data() {
    assert_eq!(
        frame(b"event: error\ndata: {\"message\":\"x\"}\n\nevent: error\ndata: [DONE]\n\nevent: error\ndata:\n\n"),
        vec![
            error_event("{\"message\":\"x\"}"),
            error_event("[DONE]"),
            error_event(""),
            SseEvent::End
        ]
    );
}

#[test]
fn s_22_event_type_must_be_exactly_error() {
    assert_eq!(
        frame(b"event: Error\ndata: 1\n\nevent: error \ndata: 2\n\n"),
        vec![chunk(json!(1)), chunk(json!(2)), SseEvent::End]
    );
}

#[test]
fn s_27_other_event_types_interpret_normally() {
    assert_eq!(
        frame(b"event: ping\ndata: {}\n\nevent: message\ndata: [DONE]\n\n"),
        vec![chunk(json!({})), SseEvent::Done]
    );
}

// ---- S-23 empty data -------------------------------------------------------------------------

#[test]
fn s_23_empty_or_whitespace_data_is_keepalive() {
    assert_eq!(
        frame(b"data:\n\ndata: \n\ndata:  \t \n\ndata:\ndata:\n\n"),
        vec![
            EMPTY_DATA,
            EMPTY_DATA,
            EMPTY_DATA,
            EMPTY_DATA,
            SseEvent::End
        ]
    );
}

// ---- S-24 [DONE] -----------------------------------------------------------------------------

// covers: S-120, CF-097
#[test]
fn s_24_done_forms() {
    for body in [
        &b"data: [DONE]\n\n"[..],
        b"data:[DONE]\n\n",
        b"data:  [DONE]  \n\n",
        b"data: [DONE]",
        b"data:\ndata: [DONE]\n\n",
    ] {
        assert_eq!(frame(body), vec![SseEvent::Done], "{body:?}");
    }
}

#[test]
fn s_24_done_is_case_sensitive() {
    assert_eq!(
        frame(b"data: [done]\n\n"),
        vec![SseEvent::MalformedFrame { len: 6 }, SseEvent::End]
    );
}

#[test]
fn s_9_nothing_parsed_after_done() {
    let mut framer = SseFramer::new(1024);
    let mut out = Vec::new();
    framer.push(b"data: [DONE]\n\ndata: 1\n\n", &mut out);
    assert_eq!(out, vec![SseEvent::Done]);
    assert!(framer.is_finished());
    framer.push(b"data: 2\n\n", &mut out);
    framer.finish(&mut out);
    assert_eq!(out, vec![SseEvent::Done], "no End after Done (CT-CHAT-06)");
}

// ---- S-25 JSON -------------------------------------------------------------------------------

#[test]
fn s_25_any_json_type_is_a_chunk() {
    assert_eq!(
        frame(b"data: 1\n\ndata: \"s\"\n\ndata: [1]\n\ndata: null\n\ndata: true\n\n"),
        vec![
            chunk(json!(1)),
            chunk(json!("s")),
            chunk(json!([1])),
            chunk(json!(null)),
            chunk(json!(true)),
            SseEvent::End
        ]
    );
}

#[test]
fn s_25_multiline_data_joined_with_lf_is_one_json_text() {
    assert_eq!(
        frame(b"data: {\"a\":\ndata: 1,\ndata: \"b\": 2}\n\n"),
        vec![chunk(json!({"a": 1, "b": 2})), SseEvent::End]
    );
}

// ---- S-26 malformed and split recovery -------------------------------------------------------

#[test]
fn s_26_malformed_frame_carries_length_only() {
    let out = frame(b"data: {not-json\n\n");
    assert_eq!(
        out,
        vec![SseEvent::MalformedFrame { len: 9 }, SseEvent::End]
    );
    assert!(!format!("{out:?}").contains("not-json"));
}

#[test]
fn s_26_split_data_lines_recovered_in_order() {
    assert_eq!(
        frame(b"data: {\"a\":1}\ndata:  [2] \ndata: \"s\"\n\n"),
        vec![
            SPLIT,
            chunk(json!({"a": 1})),
            chunk(json!([2])),
            chunk(json!("s")),
            SseEvent::End
        ]
    );
}

#[test]
fn s_26_split_recovery_done_is_terminal() {
    assert_eq!(
        frame(b"data: {\"a\":1}\ndata: [DONE]\ndata: {\"b\":2}\n\ndata: 3\n\n"),
        vec![SPLIT, chunk(json!({"a": 1})), SseEvent::Done]
    );
}

#[test]
fn s_26_no_recovery_when_any_line_is_not_json() {
    // 7 + 1 + 5 = 13 bytes of data.
    assert_eq!(
        frame(b"data: {\"a\":1}\ndata: {\"b\":\n\n"),
        vec![SseEvent::MalformedFrame { len: 13 }, SseEvent::End]
    );
    // An empty data line among them is not a JSON text either.
    assert_eq!(
        frame(b"data: 1\ndata:\ndata: 2\n\n"),
        vec![SseEvent::MalformedFrame { len: 4 }, SseEvent::End]
    );
}

// ---- S-28 end-of-body flush ------------------------------------------------------------------

#[test]
fn s_28_flush_dispatches_pending_event() {
    assert_eq!(frame(b"data: 1\n"), vec![chunk(json!(1)), SseEvent::End]);
    assert_eq!(frame(b"data: 1"), vec![chunk(json!(1)), SseEvent::End]);
    assert_eq!(frame(b"data: 1\r"), vec![chunk(json!(1)), SseEvent::End]);
}

#[test]
fn s_28_body_ending_mid_data_line_is_malformed() {
    assert_eq!(
        frame(b"data: {\"a\":"),
        vec![SseEvent::MalformedFrame { len: 5 }, SseEvent::End]
    );
}

#[test]
fn s_28_flush_of_pending_comment_and_empty_body() {
    assert_eq!(frame(b": ping"), vec![COMMENT, SseEvent::End]);
    assert_eq!(frame(b""), vec![SseEvent::End]);
    assert_eq!(frame(b"event: x\nid: 1"), vec![SseEvent::End]);
}

#[test]
fn s_28_finish_is_idempotent() {
    let mut framer = SseFramer::new(1024);
    let mut out = Vec::new();
    framer.push(b"data: 1", &mut out);
    framer.finish(&mut out);
    framer.finish(&mut out);
    framer.push(b"\n\ndata: 2\n\n", &mut out);
    assert_eq!(out, vec![chunk(json!(1)), SseEvent::End]);
}

// ---- S-30 excerpt budget ---------------------------------------------------------------------

#[test]
fn s_30_unrecognized_excerpt_total_is_capped_per_stream() {
    let line = "u".repeat(1000);
    let body = format!("{line}\n").repeat(6);
    let out = frame(body.as_bytes());
    let excerpts: Vec<&str> = out
        .iter()
        .filter_map(|e| match e {
            SseEvent::Unrecognized { excerpt } => Some(excerpt.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(excerpts.len(), 5);
    assert_eq!(excerpts[4].len(), 96);
    assert_eq!(
        excerpts.iter().map(|e| e.len()).sum::<usize>(),
        UNRECOGNIZED_EXCERPT_BUDGET_BYTES
    );
    assert_eq!(out.last(), Some(&SseEvent::End));
}

#[test]
fn s_30_budget_spent_drops_silently_but_framing_continues() {
    let body = format!("{}\ndata: 1\n\n", "u".repeat(5000));
    assert_eq!(
        frame(body.as_bytes()),
        vec![
            unrecognized(&"u".repeat(4096)),
            chunk(json!(1)),
            SseEvent::End
        ]
    );
}

// ---- CT-CHAT-06 one terminal -----------------------------------------------------------------

#[test]
fn ct_chat_06_exactly_one_terminal_event() {
    for body in [
        &b"data: 1\n\n"[..],
        b"data: [DONE]\n\ndata: [DONE]\n\n",
        b"data: 1\n\ndata: [DONE]",
    ] {
        let out = frame(body);
        assert_eq!(out.iter().filter(|e| e.is_terminal()).count(), 1);
        assert!(out.last().is_some_and(SseEvent::is_terminal));
    }
}
