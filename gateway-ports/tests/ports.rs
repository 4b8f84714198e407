//! The port traits are object-safe and their fast paths default to "not done" (10 §8; 05 R-9).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use gateway_ports::*;

#[derive(Debug)]
struct NullPermit;

#[async_trait]
impl Permit for NullPermit {
    fn id(&self) -> &str {
        "p-1"
    }
    fn source(&self) -> &str {
        "a_1"
    }
    fn est_tokens(&self) -> u64 {
        1000
    }
    async fn settle(&self, _actual_tokens: u64) -> Result<(), BackendError> {
        Ok(())
    }
    async fn release(&self) -> Result<(), BackendError> {
        Ok(())
    }
}

struct Limiter;

#[async_trait]
impl RateLimiter for Limiter {
    async fn try_acquire(&self, source: &str, _est: u64) -> Result<Acquire, BackendError> {
        match source {
            "a_1" => Ok(Acquire::Granted(Box::new(NullPermit))),
            "full_1" => Ok(Acquire::Denied {
                gate: LimitGate::SourceRpm,
                wait_hint_s: Some(1.0),
            }),
            other => Err(BackendError::source_not_configured(other)),
        }
    }
    async fn source_stats(&self, _source: &str) -> Result<SourceStats, BackendError> {
        Ok(SourceStats::new(0, 0, 0))
    }
    async fn mark_progress(&self) -> Result<(), BackendError> {
        Ok(())
    }
    async fn progress_age_s(&self) -> Result<f64, BackendError> {
        Ok(0.0)
    }
}

struct Breaker;

#[async_trait]
impl CircuitBreaker for Breaker {
    async fn try_enter(&self, source: &str, owner: &str) -> Result<GateDecision, BackendError> {
        Ok(GateDecision {
            source: source.into(),
            owner: owner.into(),
            allowed: true,
            is_probe: true,
            epoch: 3,
            retry_after_s: None,
        })
    }
    async fn record_success(&self, _: &GateDecision, _: bool) -> Result<(), BackendError> {
        Ok(())
    }
    async fn record_failure(
        &self,
        _: &GateDecision,
        _: FailureReason,
        _: bool,
    ) -> Result<(), BackendError> {
        Ok(())
    }
    async fn release_probe(&self, _: &GateDecision) -> Result<(), BackendError> {
        Ok(())
    }
    async fn snapshot(&self, _: &str) -> Result<BreakerSnapshot, BackendError> {
        Ok(BreakerSnapshot::default())
    }
}

struct Cache;

#[async_trait]
impl ResponseCache for Cache {
    async fn get(&self, _key: &str) -> Result<Option<String>, CacheError> {
        Err(CacheError::new("down"))
    }
    async fn set(&self, _key: &str, _value: String, _ttl: Duration) -> Result<(), CacheError> {
        Ok(())
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl TelemetryStatusProvider for Recorder {
    fn status(&self) -> TelemetryStatus {
        TelemetryStatus::for_backend("memory")
    }
}

#[async_trait]
impl TelemetryRecorder for Recorder {
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        let mut rows = self
            .0
            .lock()
            .map_err(|_| RecordError::new(RecordErrorKind::Rejected, "poisoned"))?;
        rows.push(row.call_id);
        Ok(())
    }
}

struct Clock0;

impl Clock for Clock0 {
    fn monotonic(&self) -> Duration {
        Duration::ZERO
    }
    fn wall(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }
}

struct Transport;

#[async_trait]
impl ChatTransport for Transport {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        if request.stream {
            Err(WireFailure::Unsupported { what: "stream" })
        } else {
            Ok(WireResponse::Body(WireBody::default()))
        }
    }
}

#[async_trait]
impl EmbeddingTransport for Transport {
    async fn send(&self, _request: WireRequest) -> Result<WireBody, WireFailure> {
        Ok(WireBody::default())
    }
}

#[async_trait]
impl OcrTransport for Transport {
    async fn recognize_text(&self, _req: OcrWireRequest) -> Result<WireBody, OcrWireFailure> {
        Err(OcrWireFailure {
            stage: OcrStage::OcrText,
            failure: WireFailure::FrameTooLarge { limit: 1 },
        })
    }
    async fn parse_layout(&self, _req: OcrWireRequest) -> Result<OcrLayoutWire, OcrWireFailure> {
        Ok(OcrLayoutWire {
            envelope: WireBody::default(),
            archive: Some(Err(ArchiveFault::ForeignLocation)),
        })
    }
    async fn check_health(&self, _source: &SourceConfig) -> Result<WireBody, WireFailure> {
        Ok(WireBody::default())
    }
}

#[tokio::test]
async fn s8_0_ports_are_object_safe_and_defaults_hold() {
    let limiter: Arc<dyn RateLimiter> = Arc::new(Limiter);
    let breaker: Arc<dyn CircuitBreaker> = Arc::new(Breaker);
    let cache: Arc<dyn ResponseCache> = Arc::new(Cache);
    let recorder: Arc<dyn TelemetryRecorder> = Arc::new(Recorder::default());
    let clock: Arc<dyn Clock> = Arc::new(Clock0);
    let chat: Arc<dyn ChatTransport> = Arc::new(Transport);
    let embed: Arc<dyn EmbeddingTransport> = Arc::new(Transport);
    let ocr: Arc<dyn OcrTransport> = Arc::new(Transport);

    // CT-LIM-15: the default fast path does nothing and says so.
    let Acquire::Granted(permit) = limiter.try_acquire("a_1", 1000).await.unwrap() else {
        panic!("expected a grant");
    };
    assert!(!permit.settle_and_release_now(10));
    permit.settle(10).await.unwrap();
    permit.release().await.unwrap();
    assert!(matches!(
        limiter.try_acquire("full_1", 1).await.unwrap(),
        Acquire::Denied {
            gate: LimitGate::SourceRpm,
            ..
        }
    ));
    assert_eq!(
        limiter.try_acquire("ghost", 1).await.unwrap_err().kind,
        BackendErrorKind::SourceNotConfigured
    );
    limiter.close().await;

    // CT-BRK-12: the default fast path does nothing and says so.
    let decision = breaker.try_enter("a_1", "call-1").await.unwrap();
    let probe = decision.probe_lease().expect("is_probe holds a lease");
    assert_eq!(
        (probe.source.as_str(), probe.owner.as_str(), probe.epoch),
        ("a_1", "call-1", 3)
    );
    assert!(!breaker.release_probe_now(&probe));
    let not_probe = GateDecision {
        is_probe: false,
        ..decision
    };
    assert_eq!(not_probe.probe_lease(), None);
    breaker.close().await;

    assert!(cache.get("k").await.is_err());
    cache.close().await;

    recorder.flush().await;
    recorder.close().await;
    assert_eq!(recorder.status().backend, "memory");

    assert_eq!(clock.monotonic(), Duration::ZERO);

    let source = Arc::new(SourceConfig::default());
    let request = WireRequest {
        source: source.clone(),
        call_id: "c".into(),
        endpoint: Endpoint::ChatCompletions,
        body: serde_json::json!({}).into(),
        stream: false,
    };
    assert!(matches!(
        chat.send(request.clone()).await,
        Ok(WireResponse::Body(_))
    ));
    assert!(embed.send(request).await.is_ok());
    let ocr_request = OcrWireRequest {
        source: source.clone(),
        call_id: "c".into(),
        image: bytes::Bytes::from_static(b"x"),
    };
    assert_eq!(
        ocr.recognize_text(ocr_request.clone())
            .await
            .unwrap_err()
            .stage,
        OcrStage::OcrText
    );
    assert!(ocr.parse_layout(ocr_request).await.is_ok());
    assert!(ocr.check_health(&source).await.is_ok());
}

#[test]
fn ct_chat_06_terminal_events() {
    let terminal = [
        WireEvent::Done,
        WireEvent::FrameTooLarge { limit: 1 },
        WireEvent::End,
        WireEvent::ReadError(NetworkFault::new(NetworkFaultKind::Read, "reset")),
    ];
    assert!(terminal.iter().all(WireEvent::is_terminal));
    let non_terminal = [
        WireEvent::Chunk(serde_json::json!({}).into()),
        WireEvent::KeepAlive(KeepAliveKind::Comment),
        WireEvent::KeepAlive(KeepAliveKind::EmptyData),
        WireEvent::ErrorEvent { data: "{}".into() },
        WireEvent::MalformedFrame { len: 3 },
        WireEvent::Notice(WireNotice::SplitDataLines),
        WireEvent::Unrecognized {
            excerpt: "x".into(),
        },
    ];
    assert!(!non_terminal.iter().any(WireEvent::is_terminal));
}

#[test]
fn r_27_events_response_carries_headers_and_content_type() {
    struct Empty;
    impl futures_core::Stream for Empty {
        type Item = WireEvent;
        fn poll_next(
            self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<WireEvent>> {
            std::task::Poll::Ready(None)
        }
    }
    let response = WireResponse::Events {
        headers: vec![("content-type".into(), "text/event-stream".into())],
        content_type: Some("text/event-stream".into()),
        events: Box::pin(Empty),
    };
    let debug = format!("{response:?}");
    assert!(debug.contains("text/event-stream"));
}

struct Strategy;

impl StructuredOutputStrategy for Strategy {
    fn name(&self) -> &'static str {
        "test"
    }
    fn request_overlay(
        &self,
        _spec: &StructuredSpec,
    ) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
    fn parse(
        &self,
        text: &str,
        _spec: &StructuredSpec,
    ) -> Result<serde_json::Value, StructuredFailure> {
        serde_json::from_str(text).map_err(|e| StructuredFailure {
            validation_errors: Vec::new(),
            repair_error: Some(e.to_string()),
        })
    }
}

#[test]
fn c_4_structured_strategy_is_object_safe() {
    let s: Arc<dyn StructuredOutputStrategy> = Arc::new(Strategy);
    assert!(s.parse("{}", &StructuredSpec::Json).is_ok());
    assert!(
        s.parse("nope", &StructuredSpec::Json)
            .unwrap_err()
            .repair_error
            .is_some()
    );
}

/// 40 S-25, S-26 (05 R-56): a chunk is exactly one JSON text of any type, kept as received;
/// equality is JSON equality; anything else is refused (the adapter then reports
/// `MalformedFrame`, never the payload).
// covers: S-25, S-26
#[test]
fn s_25_chunk_json_is_one_checked_json_text() {
    for ok in [
        " {\"a\": [1, 2]} ",
        "1",
        "\"x\"",
        "null",
        "[]",
        "{\"\\u0041\":\"é\"}",
    ] {
        let chunk = ChunkJson::parse(ok).expect(ok);
        assert_eq!(chunk.as_str(), ok, "kept as received");
        assert_eq!(
            chunk.to_value(),
            serde_json::from_str::<serde_json::Value>(ok).unwrap()
        );
    }
    for bad in [
        "",
        " ",
        "{",
        "{} {}",
        "[DONE]",
        "{\"a\":1,}",
        "nul",
        "\"\u{1}\"",
    ] {
        assert!(ChunkJson::parse(bad).is_err(), "{bad:?}");
    }
    let spaced = ChunkJson::parse("{ \"a\" : 1 , \"b\" : [true] }").unwrap();
    let compact: ChunkJson = serde_json::json!({"b": [true], "a": 1}).into();
    assert_eq!(spaced, compact, "JSON equality, not text equality");
    assert_ne!(
        spaced,
        ChunkJson::parse("{\"a\":1.0,\"b\":[true]}").unwrap()
    );
    assert_eq!(
        format!("{compact:?}"),
        "ChunkJson(\"{\\\"b\\\":[true],\\\"a\\\":1}\")"
    );
}

/// R-14 (issue 24): a `RequestBody` is the JSON text the transport sends; its `Value` view is
/// parsed once, indexes like a `Value`, compares as bytes to a body and as JSON to a `Value`.
#[test]
fn r_14_request_body_bytes_view_and_equality() {
    let text =
        r#"{"model":"m-1","messages":[{"role":"user","content":"h\u00e9 ✓"}],"stream":true}"#;
    let body = RequestBody::from_json_bytes(bytes::Bytes::from_static(text.as_bytes()));
    assert_eq!(
        body.bytes().as_ref(),
        text.as_bytes(),
        "the bytes are kept verbatim"
    );

    // Index reads the parsed view; a missing key is Null, as for a Value.
    assert_eq!(body["model"], "m-1");
    assert_eq!(body["messages"][0]["content"], "hé ✓");
    assert_eq!(body["stream"], true);
    assert_eq!(body["absent"], serde_json::Value::Null);

    // Parsed once: the view is the same allocation on every call.
    let first: *const serde_json::Value = body.value();
    let second: *const serde_json::Value = body.value();
    assert!(std::ptr::eq(first, second), "value() is cached");

    // PartialEq<Value> is JSON equality (key order and whitespace do not matter) …
    let same = serde_json::json!({"stream": true, "model": "m-1",
        "messages": [{"role": "user", "content": "hé ✓"}]});
    assert!(body == same);
    assert!(same == body);
    assert!(body != serde_json::json!({"model": "m-1"}));
    // … while body == body compares the wire text.
    let reordered = RequestBody::from_value(&same);
    assert!(
        body != reordered,
        "different key order is a different wire text"
    );
    assert_eq!(body, body.clone());
    assert_eq!(
        RequestBody::from_value(&same),
        RequestBody::from(same.clone())
    );

    // From<Value> serialises compactly and keeps the value as its view.
    let owned = RequestBody::from(serde_json::json!({"a": [1, 2.5, null], "b": "x"}));
    assert_eq!(owned.bytes().as_ref(), br#"{"a":[1,2.5,null],"b":"x"}"#);
    assert_eq!(owned["a"][1], 2.5);
}

/// A body whose bytes are not JSON reads as `Null` (never a panic) and is still sent verbatim.
#[test]
fn r_14_request_body_not_json_reads_null() {
    let body = RequestBody::from_json_bytes(bytes::Bytes::from_static(b"{not json"));
    assert_eq!(body.value(), &serde_json::Value::Null);
    assert_eq!(body["model"], serde_json::Value::Null);
    assert_eq!(body.bytes().as_ref(), b"{not json");
    let empty = RequestBody::from_json_bytes(bytes::Bytes::new());
    assert_eq!(empty.value(), &serde_json::Value::Null);
}

/// `Debug` prints the JSON text (a body carries no credential), also inside `WireRequest`.
#[test]
fn r_14_request_body_debug_is_the_json_text() {
    let body = RequestBody::from(serde_json::json!({"model": "m-1", "stream": false}));
    assert_eq!(
        format!("{body:?}"),
        r#"RequestBody("{\"model\":\"m-1\",\"stream\":false}")"#
    );
    let request = WireRequest {
        source: Arc::new(SourceConfig::default()),
        call_id: "c".into(),
        endpoint: Endpoint::ChatCompletions,
        body,
        stream: false,
    };
    let debug = format!("{request:?}");
    assert!(
        debug.contains(r#"body: RequestBody("{\"model\":\"m-1\",\"stream\":false}")"#),
        "{debug}"
    );
    let invalid = RequestBody::from_json_bytes(bytes::Bytes::from_static(b"\xff{}"));
    assert_eq!(format!("{invalid:?}"), "RequestBody(\"\u{fffd}{}\")");
}
