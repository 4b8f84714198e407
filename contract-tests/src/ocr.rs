//! The OCR transport contract suite CT-OCR-01..06, generic over the transport and run
//! against `upstream-sim` serving MonkeyOCR (tier 2: real sockets, content and bounds asserted,
//! no sleeps). One function per row; [`ocr_contract!`](crate::ocr_contract) makes each its own `#[tokio::test]`.
//!
//! ```text
//! contract_tests::ocr_contract!(|sources: &[SourceConfig]| -> Arc<dyn OcrTransport> { … });
//! ```

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gateway_ports::{
    ArchiveFault, OcrStage, OcrTransport, OcrWireRequest, SourceConfig, WireFailure,
};
use serde_json::{Value, json};
use upstream_sim::script::{Head, Match, Ocr, OcrArchive, OcrLocation, Response, Script};
use upstream_sim::{Sim, SimHandle};

/// Builds the transport under test for these sources.
pub trait OcrFactory: Send + Sync + 'static {
    /// A transport serving `sources`.
    fn transport(&self, sources: &[SourceConfig]) -> Arc<dyn OcrTransport>;
}

impl<F> OcrFactory for F
where
    F: Fn(&[SourceConfig]) -> Arc<dyn OcrTransport> + Send + Sync + 'static,
{
    fn transport(&self, sources: &[SourceConfig]) -> Arc<dyn OcrTransport> {
        self(sources)
    }
}

/// A PNG-looking image (magic bytes plus padding).
pub const PNG: &[u8] = b"\x89PNG\r\n\x1a\n-contract-image-";

fn sim(responses: Vec<Response>) -> SimHandle {
    Sim::start(Script::new(responses)).expect("simulator starts")
}

fn source(sim: &SimHandle) -> SourceConfig {
    let mut s = SourceConfig::new(
        "monkey_1",
        "monkey",
        format!("http://{}", sim.addr()),
        None,
        "monkeyocr",
    );
    s.timeout_s = 10.0;
    s
}

fn request(source: &SourceConfig, image: &[u8]) -> OcrWireRequest {
    OcrWireRequest {
        source: Arc::new(source.clone()),
        call_id: "ct-ocr-call-1".to_owned(),
        image: Bytes::copy_from_slice(image),
    }
}

fn ocr(o: Ocr) -> Response {
    Response {
        ocr: Some(o),
        ..Response::default()
    }
}

fn layout() -> Ocr {
    Ocr {
        elements: vec![json!({"type": "text", "text": "Hello", "page_idx": 0})],
        page_sizes: vec![[612.0, 792.0]],
        markdown: "# Hello".to_owned(),
        ..Ocr::default()
    }
}

fn status(code: u16) -> Response {
    Response {
        status: code,
        headers: Some(upstream_sim::script::Headers::from_pairs([
            ("Retry-After", "3"),
            ("X-Custom", "Value"),
        ])),
        chunks: Some(vec![upstream_sim::script::RawChunk::text(
            r#"{"detail":"busy"}"#,
        )]),
        ..Response::default()
    }
}

fn one_file_part(body: &Option<Value>, filename: &str) {
    let parts = body
        .as_ref()
        .and_then(|b| b.get("multipart"))
        .and_then(Value::as_array)
        .expect("a multipart body");
    assert_eq!(parts.len(), 1, "exactly one form part: {parts:?}");
    assert_eq!(parts[0]["name"], json!("file"));
    assert_eq!(parts[0]["filename"], json!(filename));
}

/// CT-OCR-01: one multipart `POST {base_url}/ocr/text` (one `file` part, filename
/// sniffed, `X-Request-Id`); 200 → the body unjudged; status ≠ 200 → stage `OcrText`.
pub async fn ct_ocr_01_text_post(factory: &dyn OcrFactory) {
    let sim = sim(vec![
        ocr(Ocr {
            content: "LINE-1".to_owned(),
            ..Ocr::default()
        }),
        status(503),
    ]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let body = t.recognize_text(request(&src, PNG)).await.expect("200");
    let v: Value = serde_json::from_slice(&body.bytes).expect("JSON");
    assert_eq!(v["content"], json!("LINE-1"));
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("POST", "/ocr/text")
    );
    assert_eq!(reqs[0].header("x-request-id"), Some("ct-ocr-call-1"));
    one_file_part(&reqs[0].body, "image.png");
    let err = t
        .recognize_text(request(&src, b"%PDF-1.7 doc"))
        .await
        .expect_err("503");
    assert_eq!(err.stage, OcrStage::OcrText);
    assert!(
        matches!(err.failure, WireFailure::Http { status: 503, .. }),
        "{err:?}"
    );
    one_file_part(&sim.requests()[1].body, "document.pdf");
}

/// CT-OCR-02: `POST /parse?return_type=zip_all`, then the relative result location fetched and
/// decoded in memory: one port call. Failures by stage; archive faults as `Some(Err(..))`.
pub async fn ct_ocr_02_parse_and_archive(factory: &dyn OcrFactory) {
    let sim = sim(vec![ocr(layout())]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let wire = t.parse_layout(request(&src, PNG)).await.expect("200");
    let entries = wire.archive.expect("a location").expect("decoded");
    let names: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        names,
        [
            "sim/sim_content_list.json",
            "sim/sim_middle.json",
            "sim/sim.md"
        ]
    );
    assert_eq!(&entries[2].bytes[..], b"# Hello");
    let reqs = sim.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].path, "/parse?return_type=zip_all");
    one_file_part(&reqs[0].body, "image.png");
    assert_eq!(
        (reqs[1].method.as_str(), reqs[1].path.as_str()),
        ("GET", "/static/sim-r0.zip")
    );

    // Stages of failure.
    let sim = sim_of(vec![status(500)]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let err = t.parse_layout(request(&src, PNG)).await.expect_err("500");
    assert_eq!(err.stage, OcrStage::Parse);
    let sim = sim_of(vec![ocr(Ocr {
        download_status: 502,
        ..layout()
    })]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let err = t.parse_layout(request(&src, PNG)).await.expect_err("502");
    assert_eq!(err.stage, OcrStage::DownloadResult);
    assert!(matches!(err.failure, WireFailure::Http { status: 502, .. }));

    // Archive faults: typed, never a panic; a foreign location is never fetched.
    for (archive, location, want) in [
        (
            OcrArchive::Zip,
            OcrLocation::Foreign,
            ArchiveFault::ForeignLocation,
        ),
        (
            OcrArchive::Corrupt,
            OcrLocation::Relative,
            ArchiveFault::Undecodable,
        ),
        (
            OcrArchive::Oversized,
            OcrLocation::Relative,
            ArchiveFault::TooLarge { limit: 64 << 20 },
        ),
        (
            OcrArchive::Bomb,
            OcrLocation::Relative,
            ArchiveFault::TooLarge { limit: 32 << 20 },
        ),
        (
            OcrArchive::Traversal,
            OcrLocation::Relative,
            ArchiveFault::UnsafeMemberName,
        ),
    ] {
        let sim = sim_of(vec![ocr(Ocr {
            archive,
            location,
            ..layout()
        })]);
        let src = source(&sim);
        let t = factory.transport(std::slice::from_ref(&src));
        let wire = t
            .parse_layout(request(&src, PNG))
            .await
            .expect("envelope 200");
        assert_eq!(wire.archive, Some(Err(want.clone())), "{archive:?}");
        if location == OcrLocation::Foreign {
            assert_eq!(
                sim.requests().len(),
                1,
                "a foreign location is never fetched"
            );
        }
    }
    // No location named: no download.
    let sim = sim_of(vec![ocr(Ocr {
        archive: OcrArchive::None,
        ..layout()
    })]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let wire = t.parse_layout(request(&src, PNG)).await.expect("200");
    assert_eq!(wire.archive, None);
    assert_eq!(sim.requests().len(), 1);
}

fn sim_of(responses: Vec<Response>) -> SimHandle {
    sim(responses)
}

/// CT-OCR-03: the adapter never judges `success`: a `success: false` envelope is returned as a
/// 200 fact (the core makes it a failure with status 200).
pub async fn ct_ocr_03_success_false_is_a_fact(factory: &dyn OcrFactory) {
    let sim = sim(vec![ocr(Ocr {
        success: false,
        message: Some("CUDA out of memory".to_owned()),
        archive: OcrArchive::None,
        ..Ocr::default()
    })]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let body = t
        .recognize_text(request(&src, PNG))
        .await
        .expect("a 200 fact");
    let v: Value = serde_json::from_slice(&body.bytes).expect("JSON");
    assert_eq!(v["success"], json!(false));
    let wire = t
        .parse_layout(request(&src, PNG))
        .await
        .expect("a 200 fact");
    let v: Value = serde_json::from_slice(&wire.envelope.bytes).expect("JSON");
    assert_eq!(v["success"], json!(false));
}

/// CT-OCR-04: only the multipart form is sent; `extra_body` never is.
pub async fn ct_ocr_04_only_the_form(factory: &dyn OcrFactory) {
    let sim = sim(vec![ocr(layout())]);
    let mut src = source(&sim);
    src.extra_body.insert("temperature".to_owned(), json!(0.5));
    src.extra_body.insert("lang".to_owned(), json!("en"));
    let t = factory.transport(std::slice::from_ref(&src));
    t.recognize_text(request(&src, PNG)).await.expect("200");
    t.parse_layout(request(&src, PNG)).await.expect("200");
    for r in sim.requests().iter().filter(|r| r.method == "POST") {
        one_file_part(&r.body, "image.png");
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("multipart/form-data; boundary=")),
            "{r:?}"
        );
        assert!(!r.path.contains("temperature") && !r.path.contains("lang"));
    }
}

/// CT-OCR-05: `GET {base_url}/health`, the answer unjudged.
pub async fn ct_ocr_05_health_unjudged(factory: &dyn OcrFactory) {
    let sim = sim(vec![
        Response {
            matcher: Some(Match {
                path: Some("/health".to_owned()),
                model: None,
            }),
            chunks: Some(vec![upstream_sim::script::RawChunk::text(
                r#"{"status":"loading","model_loaded":false}"#,
            )]),
            ..Response::default()
        },
        Response {
            matcher: Some(Match {
                path: Some("/health".to_owned()),
                model: None,
            }),
            ..status(503)
        },
    ]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let body = t.check_health(&src).await.expect("a 200 fact, unjudged");
    let v: Value = serde_json::from_slice(&body.bytes).expect("JSON");
    assert_eq!(v["status"], json!("loading"));
    let err = t.check_health(&src).await.expect_err("503");
    assert!(matches!(err, WireFailure::Http { status: 503, .. }));
    let reqs = sim.requests();
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].path.as_str()),
        ("GET", "/health")
    );
    // Default answer of the simulator: healthy.
    let sim = sim_of(vec![ocr(Ocr::default())]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let body = t.check_health(&src).await.expect("healthy");
    let v: Value = serde_json::from_slice(&body.bytes).expect("JSON");
    assert_eq!(v, json!({"status": "healthy", "model_loaded": true}));
}

/// CT-OCR-06: a status ≠ 200 (2xx included) is `Http` with every header
/// lower-cased and the body; for every request of the adapter.
pub async fn ct_ocr_06_chat_02_status_headers_body(factory: &dyn OcrFactory) {
    let sim = sim(vec![status(201)]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let health_sim = sim_of(vec![Response {
        matcher: Some(Match {
            path: Some("/health".to_owned()),
            model: None,
        }),
        ..status(201)
    }]);
    let health_src = source(&health_sim);
    let health_t = factory.transport(std::slice::from_ref(&health_src));
    for err in [
        t.recognize_text(request(&src, PNG))
            .await
            .expect_err("201")
            .failure,
        t.parse_layout(request(&src, PNG))
            .await
            .expect_err("201")
            .failure,
        health_t.check_health(&health_src).await.expect_err("201"),
    ] {
        match err {
            WireFailure::Http {
                status,
                headers,
                body,
            } => {
                assert_eq!(status, 201);
                assert!(headers.contains(&("retry-after".to_owned(), "3".to_owned())));
                assert!(headers.contains(&("x-custom".to_owned(), "Value".to_owned())));
                assert_eq!(body, r#"{"detail":"busy"}"#);
            }
            other => panic!("want Http, got {other:?}"),
        }
    }
}

/// CT-OCR-06: a failure before a status line is `Network` — connection refused,
/// and a reset before the head.
pub async fn ct_ocr_06_chat_03_network_faults(factory: &dyn OcrFactory) {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut src = SourceConfig::new(
        "monkey_1",
        "monkey",
        format!("http://127.0.0.1:{port}"),
        None,
        "monkeyocr",
    );
    src.timeout_s = 5.0;
    let t = factory.transport(std::slice::from_ref(&src));
    let err = t
        .recognize_text(request(&src, PNG))
        .await
        .expect_err("refused");
    assert_eq!(err.stage, OcrStage::OcrText);
    assert!(matches!(err.failure, WireFailure::Network(_)), "{err:?}");
    assert!(matches!(
        t.check_health(&src).await,
        Err(WireFailure::Network(_))
    ));

    let sim = sim(vec![Response {
        head: Head::Hang,
        end: upstream_sim::script::End::Reset,
        ..Response::default()
    }]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    // A head that never comes: bounded by the caller (the core's `timeout_s`), here 2 s.
    let r = tokio::time::timeout(Duration::from_secs(2), t.parse_layout(request(&src, PNG))).await;
    assert!(
        r.is_err(),
        "the adapter sets no read timer of its own (the core bounds it)"
    );
}

/// CT-OCR-06: dropping a call closes its connection promptly; the transport keeps
/// working afterwards (nothing half-read returns to the pool).
pub async fn ct_ocr_06_chat_09_drop_closes(factory: &dyn OcrFactory) {
    let sim = sim(vec![
        ocr(Ocr {
            download_head: Head::Hang,
            ..layout()
        }),
        ocr(Ocr {
            content: "after".to_owned(),
            ..Ocr::default()
        }),
    ]);
    let src = source(&sim);
    let t = factory.transport(std::slice::from_ref(&src));
    let dropped = tokio::time::timeout(
        Duration::from_millis(500),
        t.parse_layout(request(&src, PNG)),
    )
    .await;
    assert!(dropped.is_err(), "the download hangs; the call is dropped");
    let body = t
        .recognize_text(request(&src, PNG))
        .await
        .expect("next call works");
    let v: Value = serde_json::from_slice(&body.bytes).expect("JSON");
    assert_eq!(v["content"], json!("after"));
}

/// One `#[tokio::test]` per CT-OCR row against the factory expression `$factory`.
#[macro_export]
macro_rules! ocr_contract {
    ($factory:expr) => {
        mod ct_ocr {
            use super::*;
            #[tokio::test]
            async fn ct_ocr_01_text_post() {
                $crate::ocr::ct_ocr_01_text_post(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_02_parse_and_archive() {
                $crate::ocr::ct_ocr_02_parse_and_archive(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_03_success_false_is_a_fact() {
                $crate::ocr::ct_ocr_03_success_false_is_a_fact(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_04_only_the_form() {
                $crate::ocr::ct_ocr_04_only_the_form(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_05_health_unjudged() {
                $crate::ocr::ct_ocr_05_health_unjudged(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_06_chat_02_status_headers_body() {
                $crate::ocr::ct_ocr_06_chat_02_status_headers_body(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_06_chat_03_network_faults() {
                $crate::ocr::ct_ocr_06_chat_03_network_faults(&$factory).await;
            }
            #[tokio::test]
            async fn ct_ocr_06_chat_09_drop_closes() {
                $crate::ocr::ct_ocr_06_chat_09_drop_closes(&$factory).await;
            }
        }
    };
}
