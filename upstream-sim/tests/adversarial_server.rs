//! Adversarial tests of the simulator: arbitrary script text, absurd script values, and requests
//! that are malformed, oversized or endless (spec 15). The server must answer 400 and close (or
//! just close), never grow without bound, never panic; the script parser must return a typed
//! error naming the field.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed setup is a failed test"
)]

use std::time::Duration;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use upstream_sim::Sim;
use upstream_sim::script::{MAX_EMBEDDING_DIM, Script, ScriptError};

const SCRIPT: &str = r#"{"version": 1, "responses": [{"completion": {"content": "hi"}}]}"#;

/// Writes `request` (in pieces, stopping early if the server closes) and returns what the
/// server answered before closing.
async fn exchange(addr: std::net::SocketAddr, pieces: impl Iterator<Item = Vec<u8>>) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for piece in pieces {
        if stream.write_all(&piece).await.is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer));
    // A reset after the 400 is fine: the bytes before it were kept.
    let _ = read.await.expect("the server closes the connection");
    answer
}

fn status_400(answer: &[u8]) -> bool {
    answer.starts_with(b"HTTP/1.1 400")
}

#[tokio::test]
async fn endless_chunk_extension_is_refused_not_buffered() {
    // Adversarial: a chunk-size line whose extension never ends used to grow the read buffer
    // without bound (httparse answers `Partial` forever).
    let sim = Sim::start(Script::from_json(SCRIPT).unwrap()).unwrap();
    let head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5;ext=".to_vec();
    let filler = std::iter::repeat_n(vec![b'a'; 16 * 1024], 64);
    let answer = exchange(sim.addr(), std::iter::once(head).chain(filler)).await;
    assert!(status_400(&answer), "{}", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn malformed_and_oversized_requests_get_400() {
    let sim = Sim::start(Script::from_json(SCRIPT).unwrap()).unwrap();
    let cases: Vec<Vec<Vec<u8>>> = vec![
        vec![b"\x00\xff garbage\r\n\r\n".to_vec()],
        vec![b"POST / HTTP/1.1\r\ncontent-length: -5\r\n\r\n".to_vec()],
        vec![b"POST / HTTP/1.1\r\ncontent-length: 99999999999999999999999\r\n\r\n".to_vec()],
        vec![b"POST / HTTP/1.1\r\ncontent-length: 1073741824\r\n\r\n".to_vec()],
        vec![b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec()],
        vec![b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nfffffffffffffff\r\n".to_vec()],
        // A head that never ends.
        std::iter::once(b"GET / HTTP/1.1\r\nx: ".to_vec())
            .chain(std::iter::repeat_n(vec![b'b'; 16 * 1024], 8))
            .collect(),
        // Too many headers.
        vec![
            format!(
                "GET / HTTP/1.1\r\n{}\r\n",
                (0..200).map(|i| format!("h{i}: v\r\n")).collect::<String>()
            )
            .into_bytes(),
        ],
    ];
    for pieces in cases {
        let first = String::from_utf8_lossy(&pieces[0])
            .chars()
            .take(60)
            .collect::<String>();
        let answer = exchange(sim.addr(), pieces.into_iter()).await;
        assert!(
            status_400(&answer),
            "{first:?} → {}",
            String::from_utf8_lossy(&answer)
        );
    }
    // The simulator still serves a well-formed request afterwards.
    let answer = exchange(
        sim.addr(),
        std::iter::once(
            b"POST /v1/chat/completions HTTP/1.1\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}"
                .to_vec(),
        ),
    )
    .await;
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

#[test]
fn absurd_embedding_dim_is_a_typed_error_naming_the_field() {
    let text = r#"{"version": 1, "responses": [{"embedding": {"dim": 4294967295}}]}"#;
    match Script::from_json(text) {
        Err(ScriptError::Invalid { field, .. }) => assert_eq!(field, "responses[0].embedding.dim"),
        other => panic!("{other:?}"),
    }
    let ok = format!(
        r#"{{"version": 1, "responses": [{{"embedding": {{"dim": {MAX_EMBEDDING_DIM}}}}}]}}"#
    );
    assert!(Script::from_json(&ok).is_ok());
}

#[test]
fn absurd_numbers_and_types_are_typed_errors() {
    for text in [
        r#"{"version": 1, "responses": [{"status": 99999}]}"#,
        r#"{"version": 1, "responses": [{"status": -1}]}"#,
        r#"{"version": 1, "responses": [{"completion": {"chunks": 0}}]}"#,
        r#"{"version": 1, "responses": [{"completion": {"chunks": 1e99}}]}"#,
        r#"{"version": 1, "faults": {"p_429": NaN}}"#,
        r#"{"version": 1, "faults": {"p_429": 1.5}}"#,
        r#"{"version": 1.0000000001}"#,
        r#"{"version": "1"}"#,
        r#"{"version": 1, "responses": [{"headers": {"bad name": "v"}}]}"#,
        r#"{"version": 1, "responses": [{"headers": {"x": "a\r\nb"}}]}"#,
        r#"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]"#,
    ] {
        assert!(Script::from_json(text).is_err(), "{text}");
    }
}

proptest! {
    /// Script parsing never panics, on any text.
    #[test]
    fn script_from_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Script::from_json(&text);
    }

    /// Nor on JSON-shaped text with the script's own vocabulary.
    #[test]
    fn script_from_json_soup_never_panics(
        parts in prop::collection::vec(prop_oneof![
            Just("{"), Just("}"), Just("["), Just("]"), Just(","), Just(":"),
            Just("\"version\""), Just("1"), Just("\"responses\""), Just("\"completion\""),
            Just("\"embedding\""), Just("\"dim\""), Just("\"chunks\""), Just("\"status\""),
            Just("\"faults\""), Just("\"p_429\""), Just("\"headers\""), Just("-1"), Just("1e400"),
            Just("null"), Just("\"text\""), Just("\"base64\""), Just("\"%%%\""),
        ], 0..40)
    ) {
        let _ = Script::from_json(&parts.concat());
    }
}
