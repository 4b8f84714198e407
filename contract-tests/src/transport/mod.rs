//! The chat and embedding transport contract suite, CT-CHAT-01..10 and CT-EMB-01..02 (10 §8.1,
//! §8.2), generic over the transport and run against `upstream-sim` and a tiny raw server on
//! real sockets (tier 2: 127.0.0.1, event-driven, no sleeps to hit a window).
//!
//! One async function per row, each taking a [`TransportHarness`] that builds the transport
//! under test for the sources and size limits a row needs; [`transport_contract!`](crate::transport_contract) makes each
//! its own `#[tokio::test]`:
//!
//! ```text
//! struct MyHarness;
//! impl contract_tests::transport::TransportHarness for MyHarness { … }
//! contract_tests::transport_contract!(MyHarness);
//! ```
//!
//! The rows assert the wire facts the ports promise: the request (path, method, authentication
//! per `AUTH_STYLE`, `X-Request-Id`, `HEADERS`, `QUERY`, the body verbatim, no redirects:
//! [`request`](mod@request)); the status split and the failures before a status line (`Http` with every
//! header and the retained body, `Network` with its kind, the connect timeout: [`status`]); the
//! 200 bodies and streams (events in wire order as each read arrives, exactly one terminal event,
//! clean and broken ends, the caps, content decoding, the JSON answer to a streamed request,
//! closing on drop: [`stream`]); and the embedding endpoint ([`embedding`]).
//!
//! Rows that stay with `adapter-openai` (its `tests/`), because they test that adapter's choices
//! rather than the port: connection pooling (a body read to its end returns its connection to
//! the pool, R-28 reuse, the short error body kept pooled), the stale pooled connection re-sent
//! once (README D29), the first-byte media-type sniffing of README D20 (a JSON-typed body that is
//! not JSON framed as SSE, the warning), the constructor's refusals (duplicate source, `CA_FILE`),
//! the unknown-source refusal, the `pgw doctor` probes, and the SSE framer's own rules and
//! properties (40 S-14…S-31, fed in memory). A transport without a pool passes every row here.
//!
//! Panics in this module are test assertions.

use std::sync::Arc;

use futures_util::StreamExt as _;
use gateway_ports::{
    ChatTransport, EmbeddingTransport, Endpoint, RequestBody, Secret, SourceConfig, WireEvent,
    WireEventStream, WireFailure, WireRequest, WireResponse,
};
use serde_json::{Value, json};
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

pub mod embedding;
pub mod raw;
pub mod request;
pub mod status;
pub mod stream;

pub use embedding::*;
pub use request::*;
pub use status::*;
pub use stream::*;

/// The size limits a row builds its transport with (10 §8.1 adapter size options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireLimits {
    /// Cap in bytes on one SSE line, one event's data and one 200 non-stream body; above it
    /// `FrameTooLarge { limit }`.
    pub max_frame_bytes: usize,
    /// How many bytes of a non-200 body are retained (a longer body is truncated, never an
    /// error).
    pub max_error_body_bytes: usize,
}

impl Default for WireLimits {
    /// The specification's defaults: 16 MiB frames, 1 MiB error bodies.
    fn default() -> Self {
        Self {
            max_frame_bytes: 16 * 1024 * 1024,
            max_error_body_bytes: 1024 * 1024,
        }
    }
}

/// Builds the transport under test. Every call builds a fresh transport serving exactly
/// `sources` (each with its own `base_url`, pointing at a simulator or raw server of the row).
pub trait TransportHarness: Send + Sync + 'static {
    /// A chat transport for `sources` with these limits.
    fn chat(&self, sources: &[SourceConfig], limits: WireLimits) -> Arc<dyn ChatTransport>;
    /// An embedding transport for `sources` with these limits.
    fn embedding(
        &self,
        sources: &[SourceConfig],
        limits: WireLimits,
    ) -> Arc<dyn EmbeddingTransport>;
}

/// The test API key (never a real one).
pub const KEY: &str = "sk-test-0123456789";

/// The `call_id` every row sends.
pub const CALL_ID: &str = "call-0001";

/// Starts the simulator with a script given as JSON text.
pub fn sim(script_json: &str) -> SimHandle {
    let script = Script::from_json(script_json).expect("valid script");
    Sim::start(script).expect("simulator starts")
}

/// A source named `test_1` pointing at `base_url`, bearer key [`KEY`].
pub fn source(base_url: &str) -> SourceConfig {
    SourceConfig::new("test_1", "test", base_url, Some(Secret::from(KEY)), "m-1")
}

/// A chat transport for one source with default limits.
pub fn chat(h: &dyn TransportHarness, src: &SourceConfig) -> Arc<dyn ChatTransport> {
    h.chat(std::slice::from_ref(src), WireLimits::default())
}

/// A chat transport for one source with these limits.
pub fn chat_with(
    h: &dyn TransportHarness,
    src: &SourceConfig,
    limits: WireLimits,
) -> Arc<dyn ChatTransport> {
    h.chat(std::slice::from_ref(src), limits)
}

/// An embedding transport for one source with default limits.
pub fn embed(h: &dyn TransportHarness, src: &SourceConfig) -> Arc<dyn EmbeddingTransport> {
    h.embedding(std::slice::from_ref(src), WireLimits::default())
}

/// Default limits with this `max_frame_bytes`.
pub fn frame_cap(max_frame_bytes: usize) -> WireLimits {
    WireLimits {
        max_frame_bytes,
        ..WireLimits::default()
    }
}

/// Default limits with this `max_error_body_bytes`.
pub fn error_cap(max_error_body_bytes: usize) -> WireLimits {
    WireLimits {
        max_error_body_bytes,
        ..WireLimits::default()
    }
}

/// A chat request body as the core would build it.
pub fn chat_body(stream: bool) -> Value {
    let mut body = json!({
        "model": "m-1",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
        "stream": stream,
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// A wire request for `source`.
pub fn request(
    source: &SourceConfig,
    endpoint: Endpoint,
    body: Value,
    stream: bool,
) -> WireRequest {
    WireRequest {
        source: Arc::new(source.clone()),
        call_id: CALL_ID.to_owned(),
        endpoint,
        body: RequestBody::from(body),
        stream,
    }
}

/// A streamed chat request.
pub fn chat_stream(source: &SourceConfig) -> WireRequest {
    request(source, Endpoint::ChatCompletions, chat_body(true), true)
}

/// A non-stream chat request.
pub fn chat_plain(source: &SourceConfig) -> WireRequest {
    request(source, Endpoint::ChatCompletions, chat_body(false), false)
}

/// An embedding request as the core would build it.
pub fn embed_request(source: &SourceConfig) -> WireRequest {
    request(
        source,
        Endpoint::Embeddings,
        json!({"model": "m-1", "input": ["a"]}),
        false,
    )
}

/// Collects a whole event stream.
pub async fn collect(events: WireEventStream) -> Vec<WireEvent> {
    events.collect().await
}

/// Sends a streamed chat request and collects its events; panics unless the answer is `Events`.
pub async fn stream_events(t: &dyn ChatTransport, src: &SourceConfig) -> Vec<WireEvent> {
    match t.send(chat_stream(src)).await {
        Ok(WireResponse::Events { events, .. }) => collect(events).await,
        other => panic!("expected Events, got {other:?}"),
    }
}

/// CT-CHAT-06: exactly one terminal event, and it is the last.
pub fn assert_one_terminal_last(events: &[WireEvent]) {
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "exactly one terminal event: {events:?}");
    assert!(
        events.last().is_some_and(WireEvent::is_terminal),
        "the terminal event is last: {events:?}"
    );
}

/// The parts of an `Http` failure; panics on any other failure.
pub fn http_parts(err: WireFailure) -> (u16, Vec<(String, String)>, String) {
    match err {
        WireFailure::Http {
            status,
            headers,
            body,
        } => (status, headers, body),
        other => panic!("expected Http, got {other:?}"),
    }
}

/// A script that answers with raw chunks (one write each) and these headers; `end` is the
/// simulator's end of body (`eof`, `reset`, `hang`).
pub fn raw_script(status: u16, headers: &[(&str, &str)], chunks: &[&[u8]], end: &str) -> String {
    use std::fmt::Write as _;
    let mut hs = String::new();
    for (i, (n, v)) in headers.iter().enumerate() {
        if i > 0 {
            hs.push(',');
        }
        let _ = write!(hs, "[{},{}]", json!(n), json!(v));
    }
    let mut cs = String::new();
    for (i, c) in chunks.iter().enumerate() {
        if i > 0 {
            cs.push(',');
        }
        let _ = write!(cs, "{{\"base64\":{}}}", json!(b64(c)));
    }
    format!(
        r#"{{"version":1,"responses":[{{"status":{status},"headers":[{hs}],"chunks":[{cs}],"end":"{end}"}}]}}"#
    )
}

/// Standard base64 (the script's `base64` chunk form).
pub fn b64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        out.push(T[(n >> 18) as usize & 63] as char);
        out.push(T[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            T[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            T[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// One `#[tokio::test]` per CT-CHAT / CT-EMB row against the harness expression `$harness`
/// (a value implementing [`TransportHarness`]), in a module `ct_transport`. The calling crate
/// needs `tokio` with the `macros` and `rt` features.
#[macro_export]
macro_rules! transport_contract {
    ($harness:expr) => {
        $crate::transport_contract!(@rows $harness;
            // request side (CT-CHAT-01, -10; CT-EMB-01)
            ct_chat_01_stream_request_shape,
            ct_chat_01_non_stream_request_shape,
            ct_chat_01_redirects_not_followed,
            r_33_auth_style_api_key_header,
            r_33_auth_style_none_sends_no_credentials,
            r_33_headers_and_query_sent,
            ct_chat_10_one_client_per_source_independent_sends,
            ct_emb_01_embeddings_request_shape,
            // status and failures (CT-CHAT-02, -03, -04, -08, -09; CT-EMB-02)
            ct_chat_02_non_200_statuses_for_stream_and_non_stream,
            ct_chat_02_duplicate_headers_kept,
            s_7_error_body_truncated_at_max_error_body_bytes,
            s_7_error_body_decoded_lossy,
            s_7_error_body_broken_keeps_what_was_read,
            ct_chat_03_connect_refused_is_network_connect,
            ct_chat_03_tls_handshake_failure_is_network_tls,
            ct_chat_03_garbage_status_line_is_network_protocol,
            ct_chat_03_closed_before_status_is_network,
            ct_chat_08_non_stream_body_raw_with_headers,
            ct_chat_08_non_stream_body_over_max_frame_bytes,
            r_29_non_stream_body_over_max_response_bytes,
            ct_chat_08_non_stream_body_broken_is_read_error,
            ct_chat_08_close_before_content_length_is_read_error,
            ct_chat_09_dropping_send_closes_the_connection,
            r_25_connect_timeout_is_ttft_timeout_and_network_connect_timeout,
            ct_chat_04_no_read_timer_on_a_body,
            ct_emb_02_embedding_failures,
            ct_emb_02_dropping_send_closes_the_connection,
            // 200 streams (CT-CHAT-04…09)
            ct_chat_05_generated_stream_events_in_order_with_headers,
            ct_chat_05_events_yielded_before_the_body_ends,
            ct_chat_06_clean_end_without_done_is_end,
            ct_chat_06_reset_is_read_error_never_end,
            ct_chat_06_close_delimited_body_end_is_clean,
            ct_chat_07_no_judgement_of_chunk_contents,
            s_17_frame_too_large_over_the_wire,
            r_29_stream_over_max_response_bytes,
            r_27_json_body_to_streamed_request_is_one_event,
            ct_chat_04_gzip_decoded_before_framing,
            r_28_connection_dropped_after_done_when_body_continues,
            ct_chat_09_dropping_the_stream_closes_the_connection,
            s_7_truncated_error_body_connection_closed,
        );
    };
    (@rows $harness:expr; $($row:ident),+ $(,)?) => {
        mod ct_transport {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test]
                async fn $row() {
                    $crate::transport::$row(&$harness).await;
                }
            )+
        }
    };
}
