//! `OcrClient` (90 Part O) over an injected scripted `OcrTransport` (tier 1, paused clock where
//! timing matters; 05 R-30): 95 §18 rows CF-412..CF-425 (CF-419 is N/A in Rust: `+inf` is not
//! a `Duration`, R-18) and the rules O-1..O-21 they cite. Row content (O-20, CF-421, CF-422,
//! CF-368) is read back from a real SQLite recorder.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use gateway_core::clock::FakeClock;
use gateway_ports::{
    ArchiveEntry, ArchiveFault, ErrorOperation, GatewayError, OcrLayoutWire, OcrRequest, OcrStage,
    OcrTransport, OcrWireFailure, OcrWireRequest, RetryPolicy, ScopeReason, SourceConfig, WireBody,
    WireFailure,
};
use gateway_testkit::HookedBreaker;
use gateway_testkit::hooked::BreakerMethod;
use polygateway::{OcrClient, OcrSettings, PageSize};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Step {
    /// 200 text envelope with this content after `ms` of tokio time.
    Text(&'static str, u64),
    /// 200 envelope `{"success": false, ...}`.
    NotSuccess,
    /// A non-200 status at the given stage.
    Status(OcrStage, u16),
    /// A layout success with the standard archive.
    Layout,
    /// A layout envelope whose archive is this fault.
    Archive(ArchiveFault),
    /// Never answers.
    Hang,
}

/// Answers by script (the last step repeats), advancing the fake clock by each step's ms.
struct FakeOcr {
    clock: Arc<FakeClock>,
    steps: Mutex<VecDeque<Step>>,
    calls: Mutex<Vec<(String, String, usize)>>,
    health: Mutex<Vec<(String, Result<&'static str, u16>)>>,
}

impl FakeOcr {
    fn new(clock: &Arc<FakeClock>, steps: &[Step]) -> Arc<Self> {
        Arc::new(Self {
            clock: Arc::clone(clock),
            steps: Mutex::new(steps.iter().cloned().collect()),
            calls: Mutex::new(Vec::new()),
            health: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> Vec<(String, String, usize)> {
        self.calls.lock().unwrap().clone()
    }

    async fn step(&self, op: &str, req: &OcrWireRequest) -> Step {
        self.calls
            .lock()
            .unwrap()
            .push((op.to_owned(), req.source.name.clone(), req.image.len()));
        let step = {
            let mut steps = self.steps.lock().unwrap();
            if steps.len() > 1 {
                steps.pop_front().unwrap()
            } else {
                steps.front().cloned().unwrap()
            }
        };
        match &step {
            Step::Hang => std::future::pending::<()>().await,
            Step::Text(_, ms) => {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                self.clock.advance(Duration::from_millis(*ms));
            }
            _ => {}
        }
        step
    }
}

fn body(v: &Value) -> WireBody {
    WireBody {
        headers: Vec::new(),
        bytes: Bytes::from(v.to_string()),
    }
}

fn entries() -> Vec<ArchiveEntry> {
    let e = |p: &str, b: &str| ArchiveEntry {
        path: p.to_owned(),
        bytes: Bytes::copy_from_slice(b.as_bytes()),
    };
    vec![
        e(
            "doc/doc_content_list.json",
            r#"[{"type":"title","text":"Invoice","page_idx":0},{"type":"table","table_body":"<table></table>","page_idx":1}]"#,
        ),
        e(
            "doc/doc_middle.json",
            r#"{"pdf_info":[{"page_size":[612,792]},{"page_size":[612,792]}]}"#,
        ),
        e("doc/doc.md", "# Invoice"),
    ]
}

fn http(status: u16) -> WireFailure {
    WireFailure::Http {
        status,
        headers: Vec::new(),
        body: json!({"detail": "server error"}).to_string(),
    }
}

#[async_trait]
impl OcrTransport for FakeOcr {
    async fn recognize_text(&self, req: OcrWireRequest) -> Result<WireBody, OcrWireFailure> {
        match self.step("text", &req).await {
            Step::Text(t, _) => Ok(body(
                &json!({"success": true, "task_type": "text", "content": t, "message": null}),
            )),
            Step::NotSuccess => Ok(body(
                &json!({"success": false, "task_type": "text", "content": "", "message": "CUDA out of memory"}),
            )),
            Step::Status(stage, s) => Err(OcrWireFailure {
                stage,
                failure: http(s),
            }),
            other => panic!("unexpected text step {other:?}"),
        }
    }

    async fn parse_layout(&self, req: OcrWireRequest) -> Result<OcrLayoutWire, OcrWireFailure> {
        let envelope = body(
            &json!({"success": true, "message": "ok", "download_url": "/static/doc.zip", "files": null}),
        );
        match self.step("layout", &req).await {
            Step::Layout => Ok(OcrLayoutWire {
                envelope,
                archive: Some(Ok(entries())),
            }),
            Step::Archive(fault) => Ok(OcrLayoutWire {
                envelope,
                archive: Some(Err(fault)),
            }),
            Step::NotSuccess => Ok(OcrLayoutWire {
                envelope: body(&json!({"success": false, "message": "parse failed"})),
                archive: None,
            }),
            Step::Status(stage, s) => Err(OcrWireFailure {
                stage,
                failure: http(s),
            }),
            Step::Text(..) => Ok(OcrLayoutWire {
                envelope,
                archive: Some(Ok(entries())),
            }),
            Step::Hang => unreachable!(),
        }
    }

    async fn check_health(&self, source: &SourceConfig) -> Result<WireBody, WireFailure> {
        let answer = self
            .health
            .lock()
            .unwrap()
            .iter()
            .find(|(n, _)| *n == source.name)
            .map(|(_, a)| *a);
        match answer {
            Some(Ok("hang")) => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            Some(Ok(text)) => Ok(WireBody {
                headers: Vec::new(),
                bytes: Bytes::from_static(text.as_bytes()),
            }),
            Some(Err(status)) => Err(http(status)),
            None => Ok(body(&json!({"status": "healthy", "model_loaded": true}))),
        }
    }
}

/// The last attempt failure an `AllSourcesExhausted` carries.
fn last_failure(e: &GatewayError) -> Option<gateway_ports::AttemptFailure> {
    e.unavailable()?
        .last_failure
        .as_ref()
        .map(|e| e.failure().clone())
}

fn source(name: &str) -> SourceConfig {
    SourceConfig::new(name, "monkey", "http://127.0.0.1:9", None, "monkeyocr")
}

fn builder(
    fake: &Arc<FakeOcr>,
    clock: &Arc<FakeClock>,
    sources: Vec<SourceConfig>,
) -> polygateway::OcrClientBuilder {
    OcrClient::builder()
        .sources(sources)
        .retry(RetryPolicy {
            max_attempts: 3,
            backoff_base_s: 0.01,
            backoff_max_s: 0.02,
            ..RetryPolicy::default()
        })
        .clock(Arc::clone(clock) as _)
        .transport(Arc::clone(fake) as _)
}

fn client(fake: &Arc<FakeOcr>, clock: &Arc<FakeClock>, sources: Vec<SourceConfig>) -> OcrClient {
    builder(fake, clock, sources).build().unwrap()
}

fn png() -> OcrRequest {
    OcrRequest::new(b"\x89PNG\r\n\x1a\nimage".to_vec())
}

// covers: O-11, O-12, O-19
#[tokio::test(start_paused = true)]
async fn cf_412_text_half_second_generation_500() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("LINE-1", 500)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let r = c.recognize_text(png()).await.unwrap();
    assert_eq!(r.text, "LINE-1");
    assert_eq!(r.source_name, "monkey_1");
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (0, 0));
    assert_eq!(r.raw["task_type"], json!("text"));
    let stats = r.call_stats.unwrap();
    assert_eq!(stats.attempts, 1);
    assert_eq!(stats.generation_ms, 500);
    assert_eq!(
        (stats.stall_ms, stats.stall_count, stats.hedges),
        (None, None, 0)
    );
}

// covers: O-12
#[tokio::test(start_paused = true)]
async fn o_4_empty_text_is_legal() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("", 0)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    assert_eq!(c.recognize_text(png()).await.unwrap().text, "");
}

// covers: O-9
#[tokio::test(start_paused = true)]
async fn cf_413_hang_and_cancel_settles_zero() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Hang]);
    let s = SourceConfig {
        tpm: 600,
        est_tokens: Some(400),
        ..source("m1")
    };
    let c = client(&fake, &clock, vec![s]);
    tokio::select! {
        _ = c.recognize_text(png()) => panic!("the transport hangs"),
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    c.quiesce().await;
    let status = c.sources_status().await;
    assert_eq!(
        status[0].tpm_used,
        Some(0),
        "S6: OCR settles 0 even on cancel"
    );
    assert_eq!(status[0].inflight, Some(0));
}

// covers: O-8
#[tokio::test(start_paused = true)]
async fn cf_414_text_success_is_one_attempt() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let r = c.recognize_text(png()).await.unwrap();
    assert_eq!(r.call_stats.unwrap().attempts, 1);
    assert_eq!(fake.calls().len(), 1);
}

// covers: O-8, O-13, O-15
#[tokio::test(start_paused = true)]
async fn cf_415_cf_423_layout_is_one_attempt_mapped_from_the_zip() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Layout]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let r = c.parse_layout(png()).await.unwrap();
    assert_eq!(r.call_stats.as_ref().unwrap().attempts, 1);
    assert_eq!(r.elements.len(), 2);
    assert_eq!(r.elements[0].kind, "title");
    assert_eq!(r.elements[0].text.as_deref(), Some("Invoice"));
    assert_eq!(r.elements[1].text.as_deref(), Some("<table></table>"));
    assert_eq!(r.elements[1].page_index, Some(1));
    assert_eq!(r.page_sizes, vec![PageSize(612.0, 792.0); 2]);
    assert_eq!(r.markdown, "# Invoice");
    assert_eq!(
        r.raw["archive_members"],
        json!([
            "doc/doc_content_list.json",
            "doc/doc_middle.json",
            "doc/doc.md"
        ])
    );
    assert_eq!(r.raw["download_url"], json!("/static/doc.zip"));
}

// covers: O-7
#[tokio::test(start_paused = true)]
async fn cf_416_one_retry_is_two_attempts() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(
        &clock,
        &[Step::Status(OcrStage::OcrText, 503), Step::Text("ok", 0)],
    );
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let r = c.recognize_text(png()).await.unwrap();
    assert_eq!(r.call_stats.unwrap().attempts, 2);
}

// covers: O-7
#[tokio::test(start_paused = true)]
async fn o_7_every_failure_counts_429_included() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Status(OcrStage::OcrText, 429)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let e = c.recognize_text(png()).await.unwrap_err();
    assert_eq!(
        e.unavailable().map(|u| u.reason),
        Some(ScopeReason::RetryExhausted),
        "{e:?}"
    );
    assert_eq!(fake.calls().len(), 3);
}

// covers: O-5
#[tokio::test(start_paused = true)]
async fn cf_417_empty_image_is_invalid_argument_without_io() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    for layout in [false, true] {
        let req = OcrRequest::new(Vec::<u8>::new());
        let e = if layout {
            c.parse_layout(req).await.unwrap_err()
        } else {
            c.recognize_text(req).await.unwrap_err()
        };
        assert!(matches!(e, GatewayError::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains("image must not be empty"), "{e}");
    }
    // Caller dimensions come first (O-5 step 1).
    let mut req = OcrRequest::new(Vec::<u8>::new());
    req.tenant_id = Some(String::new());
    let e = c.recognize_text(req).await.unwrap_err();
    assert!(e.to_string().contains("tenant_id"), "{e}");
    // A zero deadline (step 3), named by the method.
    let mut req = png();
    req.call_deadline = Some(Duration::ZERO);
    let e = c.parse_layout(req).await.unwrap_err();
    assert!(e.to_string().contains("parse_layout"), "{e}");
    assert!(fake.calls().is_empty());
}

// covers: O-5, O-9
#[tokio::test(start_paused = true)]
async fn cf_418_deadline_is_cde_with_scope_ocr() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Hang]);
    let s = source("m1");
    let c = client(&fake, &clock, vec![s]);
    let mut req = png();
    req.call_deadline = Some(Duration::from_millis(50));
    let e = c.recognize_text(req).await.unwrap_err();
    match &e {
        GatewayError::CallDeadlineExceeded(d) => {
            assert_eq!(d.scope, "ocr");
            assert!((d.deadline_s - 0.05).abs() < 1e-9);
        }
        other => panic!("want CDE, got {other:?}"),
    }
    c.quiesce().await;
    let status = c.sources_status().await;
    assert_eq!((status[0].inflight, status[0].tpm_used), (Some(0), Some(0)));
}

// covers: O-1
#[tokio::test]
async fn cf_420_builder_zero_deadline_names_the_builder() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let e = builder(&fake, &clock, vec![source("monkey_1")])
        .call_deadline(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(e.code, "deadline.domain");
    assert_eq!(e.origin, "OcrClientBuilder::call_deadline");
}

// covers: O-7, O-16
#[tokio::test(start_paused = true)]
async fn cf_424_transient_then_success_fails_over_without_waiting() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(
        &clock,
        &[Step::Status(OcrStage::OcrText, 500), Step::Text("ok", 0)],
    );
    let c = builder(&fake, &clock, vec![source("monkey_1"), source("monkey_2")])
        .selector(gateway_ports::SelectorKind::RoundRobin)
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let r = c.recognize_text(png()).await.unwrap();
    assert_eq!(r.call_stats.unwrap().attempts, 2);
    let names: Vec<String> = fake.calls().into_iter().map(|(_, n, _)| n).collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1], "the retry goes to the other source");
    assert_eq!(r.source_name, names[1]);
    // README D26: the backoff belongs to the failed source; the other source runs at once.
    assert!(
        started.elapsed() < Duration::from_millis(5),
        "failover waited {:?}",
        started.elapsed()
    );
}

// covers: O-17
#[tokio::test(start_paused = true)]
async fn cf_425_check_health_maps_every_source() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    *fake.health.lock().unwrap() = vec![
        (
            "m_2".to_owned(),
            Ok(r#"{"status":"healthy","model_loaded":false}"#),
        ),
        ("m_3".to_owned(), Err(503)),
        ("m_4".to_owned(), Ok("hang")),
        ("m_5".to_owned(), Ok("not json")),
    ];
    let sources = (1..=5).map(|i| source(&format!("m_{i}"))).collect();
    let c = client(&fake, &clock, sources);
    let started = tokio::time::Instant::now();
    let health = c.check_health().await;
    assert_eq!(
        health.into_iter().collect::<Vec<_>>(),
        vec![
            ("m_1".to_owned(), true),
            ("m_2".to_owned(), false),
            ("m_3".to_owned(), false),
            ("m_4".to_owned(), false),
            ("m_5".to_owned(), false),
        ]
    );
    // Concurrent and bounded by min(timeout_s, 10 s): the hanging probe costs 10 s once.
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    // No admission, no breaker, no attempt.
    assert!(fake.calls().is_empty());
    let status = c.sources_status().await;
    assert!(
        status
            .iter()
            .all(|s| s.consecutive_failures.unwrap_or(0) == 0)
    );
}

// covers: O-14
#[tokio::test(start_paused = true)]
async fn o_14_success_false_is_transient_with_status_200() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::NotSuccess]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let e = c.recognize_text(png()).await.unwrap_err();
    let last = last_failure(&e).expect("exhausted carries the last failure");
    assert_eq!(last.http_status, Some(200));
    assert!(
        last.body_text
            .as_deref()
            .unwrap()
            .contains("CUDA out of memory"),
        "{last:?}"
    );
    assert_eq!(fake.calls().len(), 3, "Transient: retried");
}

// covers: O-13, O-15
#[tokio::test(start_paused = true)]
async fn o_15_archive_faults_are_result_invalid_not_retried() {
    for fault in [
        ArchiveFault::ForeignLocation,
        ArchiveFault::TooLarge { limit: 64 << 20 },
        ArchiveFault::Undecodable,
        ArchiveFault::UnsafeMemberName,
    ] {
        let clock = Arc::new(FakeClock::new());
        let fake = FakeOcr::new(&clock, &[Step::Archive(fault.clone())]);
        let c = client(&fake, &clock, vec![source("monkey_1")]);
        let e = c.parse_layout(png()).await.unwrap_err();
        let d = e
            .result_invalid_details()
            .unwrap_or_else(|| panic!("{e:?}"));
        assert_eq!(d.failure.operation, ErrorOperation::DownloadResult);
        assert_eq!(fake.calls().len(), 1, "ResultInvalid is not retried");
    }
}

// covers: O-16
#[tokio::test(start_paused = true)]
async fn o_16_status_translation_and_sub_operation() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Status(OcrStage::Parse, 400)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let e = c.parse_layout(png()).await.unwrap_err();
    match &e {
        GatewayError::RequestRejected(f) => {
            assert_eq!(f.failure().operation, ErrorOperation::Parse)
        }
        other => panic!("{other:?}"),
    }
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Status(OcrStage::DownloadResult, 503)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let e = c.parse_layout(png()).await.unwrap_err();
    let last = last_failure(&e).unwrap_or_else(|| panic!("{e:?}"));
    assert_eq!(last.operation, ErrorOperation::DownloadResult);
    assert_eq!(last.http_status, Some(503));
    // 401 → SourceDead: the breaker force-opens, so the only source is then circuit-open.
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Status(OcrStage::OcrText, 401)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    let e = c.recognize_text(png()).await.unwrap_err();
    assert!(matches!(e, GatewayError::CircuitOpen(_)), "{e:?}");
    assert_eq!(fake.calls().len(), 1);
}

// covers: O-18
#[tokio::test(start_paused = true)]
async fn o_18_one_invocation_bounded_by_timeout_s() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Hang]);
    let s = SourceConfig {
        timeout_s: 2.0,
        ..source("monkey_1")
    };
    let c = client(&fake, &clock, vec![s]);
    let e = c.recognize_text(png()).await.unwrap_err();
    let last = last_failure(&e).unwrap_or_else(|| panic!("{e:?}"));
    assert!(
        last.cause.is_some(),
        "a timeout carries its cause_type: {last:?}"
    );
    assert_eq!(fake.calls().len(), 3);
}

// covers: O-6
#[tokio::test(start_paused = true)]
async fn o_6_no_sources_is_exhausted_no_sources() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let c = builder(&fake, &clock, Vec::new()).build().unwrap();
    assert!(
        c.assembly_warnings()
            .iter()
            .any(|w| w.code == "builder.no_sources")
    );
    let e = c.recognize_text(png()).await.unwrap_err();
    assert_eq!(
        e.unavailable().map(|u| u.reason),
        Some(ScopeReason::NoSources)
    );
}

// covers: O-2, O-3, O-21
#[tokio::test]
async fn o_2_o_3_hedge_warns_and_extra_body_is_stripped() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let mut s = source("monkey_1");
    s.extra_body.insert("temperature".to_owned(), json!(0.2));
    let c = builder(&fake, &clock, vec![s, source("monkey_2")])
        .hedge_after_s(5.0)
        .build()
        .unwrap();
    assert!(
        c.assembly_warnings()
            .iter()
            .any(|w| w.code == "hedge.non_chat_scope")
    );
    assert!(c.plan().sources.iter().all(|s| s.extra_body.is_empty()));
    // Settings path: the E3 warning too (the transport needs the `monkeyocr` feature there).
    let mut settings = OcrSettings::default();
    settings.gateway.sources = vec![source("monkey_1"), source("monkey_2")];
    settings.gateway.policy.hedge_after_s = Some(8.0);
    let v = settings.validate().unwrap();
    assert!(
        v.warnings()
            .iter()
            .any(|w| w.code == "hedge.non_chat_scope")
    );
}

// covers: O-1, R-17
#[tokio::test]
async fn o_1_from_env_defaults_and_client_closed() {
    let map: polygateway::EnvMap = [
        ("OCR__MONKEY__1__BASE_URL", "http://127.0.0.1:9"),
        ("PGW_TELEMETRY_BACKEND", "none"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let v = OcrSettings::from_env_map("OCR", &map).unwrap();
    assert_eq!(v.sources[0].name, "monkey_1");
    assert_eq!(v.sources[0].model, "monkeyocr");
    assert!(v.sources[0].api_key.is_none());
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(&clock, &[Step::Text("x", 0)]);
    let c = client(&fake, &clock, vec![source("monkey_1")]);
    c.close().await;
    let e = c.recognize_text(png()).await.unwrap_err();
    assert!(matches!(e, GatewayError::ClientClosed), "{e:?}");
}

/// Rows read back from a real SQLite recorder (real time: its writer is a thread).
mod rows {
    use super::*;

    fn sqlite_client(
        fake: &Arc<FakeOcr>,
        db: &std::path::Path,
    ) -> (OcrClient, Arc<adapter_sqlite::SqliteRecorder>) {
        let recorder = Arc::new(adapter_sqlite::SqliteRecorder::new(
            adapter_sqlite::SqliteRecorderConfig::new(db.to_path_buf()),
        ));
        let clock = Arc::new(FakeClock::new());
        let c = builder(fake, &clock, vec![source("monkey_1")])
            .telemetry(Arc::clone(&recorder) as _)
            .build()
            .unwrap();
        (c, recorder)
    }

    type Row = (
        String,
        Option<String>,
        String,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<f64>,
        Option<String>,
    );

    fn read(db: &std::path::Path) -> Vec<Row> {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT event_kind, operation, messages, error, http_status_code, reasoning_effort, cost, sampling FROM llm_calls ORDER BY rowid",
            )
            .unwrap();
        stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    }

    // covers: O-20, C-33, C-38
    #[tokio::test]
    async fn cf_421_cf_368_failing_script_per_method_rows() {
        for (layout, op) in [(false, "recognize_text"), (true, "parse_layout")] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("t.db");
            let stage = if layout {
                OcrStage::DownloadResult
            } else {
                OcrStage::OcrText
            };
            let fake = FakeOcr::new(&Arc::new(FakeClock::new()), &[Step::Status(stage, 503)]);
            let (c, _rec) = sqlite_client(&fake, &db);
            let req = OcrRequest::new(vec![7u8; 11]);
            let e = if layout {
                c.parse_layout(req).await.unwrap_err()
            } else {
                c.recognize_text(req).await.unwrap_err()
            };
            assert!(e.unavailable().is_some(), "{e:?}");
            c.quiesce().await;
            c.close().await;
            let rows = read(&db);
            assert_eq!(
                rows.len(),
                4,
                "3 attempt rows (script length) + 1 terminal: {rows:?}"
            );
            let kind = if layout { "layout" } else { "text" };
            for (i, row) in rows.iter().enumerate() {
                assert_eq!(row.1.as_deref(), Some(op), "operation = the method (T-27)");
                assert_eq!(
                    row.2,
                    format!(r#"[{{"role":"user","content":"<ocr:{kind} image_bytes=11>"}}]"#)
                );
                assert!(row.3.is_some(), "every failed row has error");
                assert_eq!(
                    (row.5.as_deref(), row.6, row.7.as_deref()),
                    (None, None, None)
                );
                if i < 3 {
                    assert_eq!(row.0, "attempt");
                    assert!(row.3.as_deref().unwrap().starts_with("TransientError: "));
                    assert_eq!(row.4, Some(503));
                } else {
                    assert_eq!(row.0, "terminal_failure");
                    assert!(
                        row.3
                            .as_deref()
                            .unwrap()
                            .starts_with("AllSourcesExhausted: ")
                    );
                }
            }
        }
    }

    // covers: O-14, T-24
    #[tokio::test]
    async fn cf_422_success_false_row_has_status_200() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let fake = FakeOcr::new(&Arc::new(FakeClock::new()), &[Step::NotSuccess]);
        let (c, _rec) = sqlite_client(&fake, &db);
        assert!(c.recognize_text(png()).await.is_err());
        c.quiesce().await;
        c.close().await;
        let rows = read(&db);
        let attempts: Vec<&Row> = rows.iter().filter(|r| r.0 == "attempt").collect();
        assert_eq!(attempts.len(), 3);
        assert!(attempts.iter().all(|r| r.4 == Some(200)), "{rows:?}");
    }

    // covers: O-19, O-20
    #[tokio::test]
    async fn o_20_success_row_of_a_layout() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let fake = FakeOcr::new(&Arc::new(FakeClock::new()), &[Step::Layout]);
        let (c, _rec) = sqlite_client(&fake, &db);
        c.parse_layout(png()).await.unwrap();
        c.quiesce().await;
        c.close().await;
        let conn = rusqlite::Connection::open(&db).unwrap();
        let (resp, usage, cost, pt): (String, String, Option<f64>, i64) = conn
            .query_row(
                "SELECT response, usage_source, cost, prompt_tokens FROM llm_calls",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(resp, "<ocr:layout elements=2 pages=2>");
        assert_eq!(usage, "measured");
        assert_eq!((cost, pt), (None, 0));
    }
}

// covers: O-10
#[tokio::test(start_paused = true)]
async fn o_10_failed_write_backs_never_change_the_outcome() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeOcr::new(
        &clock,
        &[Step::Status(OcrStage::OcrText, 503), Step::Text("ok", 0)],
    );
    let inner = Arc::new(gateway_core::memory::MemoryCircuitBreaker::new(
        "ocr",
        gateway_ports::BreakerConfig::default(),
        Arc::clone(&clock) as _,
    ));
    // Write-backs fail (`record_*`, `release_probe`, no probe fast path); the gate works.
    let breaker = Arc::new(HookedBreaker::new(inner));
    let down = gateway_ports::BackendError::unavailable("down");
    breaker
        .fail(BreakerMethod::RecordSuccess, down.clone())
        .fail(
            BreakerMethod::RecordFailure,
            gateway_ports::BackendError::source_not_configured("monkey_1"),
        )
        .fail(BreakerMethod::ReleaseProbe, down.clone())
        .fail(BreakerMethod::ReleaseProbeNow, down);
    let c = builder(&fake, &clock, vec![source("monkey_1")])
        .breaker(breaker)
        .build()
        .unwrap();
    let r = c.recognize_text(png()).await.unwrap();
    assert_eq!(r.text, "ok");
    assert_eq!(r.call_stats.unwrap().attempts, 2);
}
