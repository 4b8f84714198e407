//! Tier 2 of streaming to the caller (README D32): for every public wire case fixture (the
//! `pgw sim` scripts of `gateway-cli/tests/fixtures/case_*.json`, replayed by an in-process
//! `upstream-sim` on 127.0.0.1 over real sockets), in both response modes and both wire modes,
//! whenever `chat` delivers, `chat_stream` delivers the same answer: its deltas concatenate to
//! `chat`'s content and its one `Done` carries the same content and finish. When `chat` fails,
//! the stream ends with one error of the same type; a failure after the first token ends the
//! stream marked committed, and the exact list of such (case, mode) pairs is pinned. Every
//! public chat wire case must have a fixture. Plus the structured refusal. (Dropping a stream:
//! `stream_tier1.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use client_support::{chat_env, sim, user};
use futures_util::StreamExt as _;
use polygateway::{
    ChatOptions, GatewayClient, GatewayError, LlmResponse, ResponseMode, StreamEvent,
};

/// A call deadline for cases that retry forever (018 B: in-band 429s are budget-exempt).
const DEADLINE: &[(&str, &str)] = &[("LLM__CALL_DEADLINE_S", "2")];

fn fixtures() -> Vec<(String, String)> {
    let dir = format!(
        "{}/../gateway-cli/tests/fixtures",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("case_") && n.ends_with(".json"))
        })
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    // Every public chat wire case has its fixture (041 needs a pooled connection, not a
    // script: `wire_e2e.rs`; 049 is an embedding case).
    for id in PUBLIC_CHAT_CASES {
        assert!(
            out.iter()
                .any(|(name, _)| name.starts_with(&format!("case_{id}"))),
            "no fixture for public case {id}"
        );
    }
    out
}

/// The public wire cases whose bytes a chat call reads (the ids of `shared/cases`).
const PUBLIC_CHAT_CASES: [&str; 29] = [
    "001", "002", "004", "005", "007", "008", "009", "011", "012", "013", "015", "016", "018",
    "019", "021", "022", "024", "025", "027", "028", "030", "031", "032", "034", "035", "040",
    "042", "043", "050",
];

/// What a stream produced: the concatenated deltas and the final item.
struct Streamed {
    text: String,
    deltas: usize,
    end: Result<LlmResponse, GatewayError>,
}

async fn collect(client: &GatewayClient, options: ChatOptions) -> Streamed {
    let mut stream = client.chat_stream(vec![user("hi")], options);
    let mut text = String::new();
    let mut deltas = 0;
    let mut end = None;
    while let Some(item) = stream.next().await {
        assert!(end.is_none(), "nothing after the final event");
        match item {
            Ok(StreamEvent::Delta(d)) => {
                deltas += 1;
                text.push_str(&d.content);
            }
            Ok(StreamEvent::Done(r)) => end = Some(Ok(*r)),
            Ok(other) => panic!("unknown event {other:?}"),
            Err(e) => end = Some(Err(e)),
        }
    }
    Streamed {
        text,
        deltas,
        end: end.expect("exactly one final event"),
    }
}

fn options(mode: ResponseMode, stream: bool) -> ChatOptions {
    ChatOptions::new().response_mode(mode).stream(stream)
}

// covers: D32 (tier 2: deltas concatenate to chat's content for every public wire case)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d32_stream_deltas_equal_chat_content_for_every_public_wire_case() {
    let mut delivered = 0;
    let mut committed = Vec::new();
    for (name, script) in fixtures() {
        for mode in [ResponseMode::OpenAi, ResponseMode::Text] {
            for wire_stream in [true, false] {
                let label = format!("{name} {mode:?} stream={wire_stream}");
                // A fresh simulator and client per call: sequence scripts restart.
                let a = sim(&script);
                let chat_client =
                    GatewayClient::from_env_map("LLM", &chat_env(&a, DEADLINE)).expect("client");
                let chat = chat_client
                    .chat(vec![user("hi")], options(mode, wire_stream))
                    .await;
                chat_client.close().await;
                let b = sim(&script);
                let stream_client =
                    GatewayClient::from_env_map("LLM", &chat_env(&b, DEADLINE)).expect("client");
                let streamed = tokio::time::timeout(
                    std::time::Duration::from_secs(60),
                    collect(&stream_client, options(mode, wire_stream)),
                )
                .await
                .unwrap_or_else(|_| panic!("{label}: the stream ended within 60 s"));
                stream_client.close().await;
                match (chat, streamed.end) {
                    (Ok(c), Ok(s)) => {
                        delivered += 1;
                        assert_eq!(streamed.text, c.content, "{label}: deltas = chat content");
                        assert_eq!(s.content, c.content, "{label}: Done content");
                        assert_eq!(s.finish_reason, c.finish_reason, "{label}");
                        assert_eq!(s.stream_end, c.stream_end, "{label}");
                        assert_eq!(s.completion, c.completion, "{label}: fidelity snapshot");
                        if !c.content.is_empty() {
                            assert!(streamed.deltas >= 1, "{label}");
                        }
                    }
                    // After the commit point the stream is not retried (D32): the failure
                    // `chat` retried (and saw last) ends the stream, marked committed, with
                    // exactly the forwarded text as its partial output.
                    (c, Err(s)) if s.is_committed() => {
                        committed.push(label.clone());
                        let partial = s.partial_output().unwrap();
                        assert_eq!(partial.content, streamed.text, "{label}: partial output");
                        assert!(!streamed.text.is_empty(), "{label}: committed ⇒ forwarded");
                        if let Err(c) = c {
                            let last = match &c {
                                GatewayError::CallDeadlineExceeded(d) => d.last_failure.as_deref(),
                                other => {
                                    other.unavailable().and_then(|u| u.last_failure.as_deref())
                                }
                            }
                            .or(c.attempt_error())
                            .expect("a failed call names its last attempt failure");
                            assert_eq!(last.type_name(), s.type_name(), "{label}");
                            assert_eq!(last.reason_code(), s.reason_code(), "{label}");
                        }
                    }
                    (Err(c), Err(s)) => {
                        assert_eq!(c.type_name(), s.type_name(), "{label}: same error type");
                        assert!(streamed.text.is_empty(), "{label}: nothing forwarded");
                    }
                    (c, s) => panic!("{label}: chat {c:?} but stream {s:?}"),
                }
            }
        }
    }
    assert!(delivered >= 20, "most cases deliver: {delivered}");
    // Exactly these end after the commit point where chat retries (docs/streaming.md, "Where
    // chat_stream and chat end differently"): a missing [DONE] after text (001 A), a stream cut
    // before its finish (002 A/B, 015 B, 042 C), an in-band error after text (018 A/B), a reset
    // after text (040 A/B), a relay heartbeat corrupting a frame after text (050), and in
    // fidelity mode a stream without `role` judged at its end (025 B/C).
    assert_eq!(committed, EXPECTED_COMMITTED, "the committed failures");
}

const EXPECTED_COMMITTED: [&str; 22] = [
    "case_001_a OpenAi stream=true",
    "case_001_a Text stream=true",
    "case_002_a OpenAi stream=true",
    "case_002_a Text stream=true",
    "case_002_b OpenAi stream=true",
    "case_002_b Text stream=true",
    "case_015_b OpenAi stream=true",
    "case_015_b Text stream=true",
    "case_018_a OpenAi stream=true",
    "case_018_a Text stream=true",
    "case_018_b OpenAi stream=true",
    "case_018_b Text stream=true",
    "case_025_b OpenAi stream=true",
    "case_025_c OpenAi stream=true",
    "case_040_a OpenAi stream=true",
    "case_040_a Text stream=true",
    "case_040_b OpenAi stream=true",
    "case_040_b Text stream=true",
    "case_042_c OpenAi stream=true",
    "case_042_c Text stream=true",
    "case_050 OpenAi stream=true",
    "case_050 Text stream=true",
];

// covers: D32 (structured requests are refused by chat_stream)
#[tokio::test]
async fn d32_structured_request_is_refused_with_invalid_argument() {
    let a = sim(r#"{"version":1,"responses":[{"completion":{"content":"x"}}]}"#);
    let client = GatewayClient::from_env_map("LLM", &chat_env(&a, &[])).expect("client");
    let mut request = polygateway::ports::ChatRequest::new(vec![user("hi")]);
    request.structured = Some(polygateway::ports::StructuredSpec::Json);
    let streamed = collect(&client, ChatOptions::new()).await;
    assert!(streamed.end.is_ok(), "a plain request streams");
    let mut stream = client.chat_stream(request, ChatOptions::new());
    let first = stream.next().await.expect("one item");
    let error = first.expect_err("refused");
    assert!(
        matches!(error, GatewayError::InvalidArgument(_)),
        "{error:?}"
    );
    assert!(error.to_string().contains("structured"), "{error}");
    assert!(stream.next().await.is_none(), "nothing after the error");
    assert_eq!(
        a.request_count(),
        1,
        "no upstream request for the refused call"
    );
    client.close().await;
}
