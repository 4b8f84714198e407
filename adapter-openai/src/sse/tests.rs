//! Unit tests of the framer (40 §3).

use gateway_ports::ports::transport::ChunkJson;

use super::recover::excerpt;
use super::*;

fn frame_reads(max: usize, reads: &[&[u8]]) -> Vec<SseEvent> {
    let mut framer = SseFramer::new(max);
    let mut out = Vec::new();
    for read in reads {
        framer.push(read, &mut out);
    }
    framer.finish(&mut out);
    out
}

fn frame(input: &[u8]) -> Vec<SseEvent> {
    frame_reads(DEFAULT_MAX_FRAME_BYTES, &[input])
}

fn chunk(json: &str) -> SseEvent {
    SseEvent::Chunk(ChunkJson::parse(json).unwrap())
}

#[test]
fn s_14_bom_prefix_that_is_not_a_bom_is_data() {
    // EF BB followed by something else: the held bytes are line content (U+FFFD name).
    let out = frame_reads(1024, &[b"\xef", b"\xbbx\n", b"data: 1\n\n"]);
    assert_eq!(
        out,
        vec![
            SseEvent::Unrecognized {
                excerpt: "\u{fffd}x".into()
            },
            chunk("1"),
            SseEvent::End
        ]
    );
}

#[test]
fn s_14_partial_bom_then_end_of_body() {
    let out = frame_reads(1024, &[b"\xef\xbb"]);
    assert_eq!(
        out,
        vec![
            SseEvent::Unrecognized {
                excerpt: "\u{fffd}".into()
            },
            SseEvent::End
        ]
    );
}

#[test]
fn s_30_excerpt_never_splits_a_character() {
    assert_eq!(excerpt("ab修".as_bytes(), 4), "ab");
    assert_eq!(excerpt("ab修".as_bytes(), 5), "ab修");
    assert_eq!(excerpt(b"\xff\xff\xff", 4), "\u{fffd}");
    assert_eq!(excerpt(b"abc", 0), "");
}

#[test]
fn s_17_data_buffer_cap_counts_separators() {
    // Lines of 7 bytes; three 2-byte values joined with LF = 8 bytes: passes at 8, fails at 7.
    let input = b"data:[1\ndata:,2\ndata:]x\n\n";
    assert_eq!(
        frame_reads(8, &[input]),
        vec![SseEvent::MalformedFrame { len: 8 }, SseEvent::End]
    );
    assert_eq!(
        frame_reads(7, &[input]),
        vec![SseEvent::FrameTooLarge { limit: 7 }]
    );
}

#[test]
fn s_31_debug_never_echoes_payload() {
    let mut framer = SseFramer::new(1024);
    let mut out = Vec::new();
    framer.push(b"data: secret-payload", &mut out);
    let debug = format!("{framer:?}");
    assert!(!debug.contains("secret"), "{debug}");
    assert!(debug.contains("line_len: 20"), "{debug}");
}

#[test]
fn r_26_error_key_check_is_top_level_only() {
    let out = frame(b"{\"detail\":{\"error\":1}}\n");
    assert!(matches!(out.first(), Some(SseEvent::Unrecognized { .. })));
}
