//! `EmbeddingClient` batching rules on the paused clock with an injected fake transport and a
//! `FakeClock` (tier 1, 05 R-30): 90 E-8..E-15 and 95 §17 rows CF-395..CF-399.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gateway_core::clock::FakeClock;
use gateway_ports::{
    EmbedRequest, EmbeddingTransport, GatewayError, RetryPolicy, ScopeReason, SourceConfig,
    UsageSource, WireBody, WireFailure, WireRequest,
};
use polygateway::EmbeddingClient;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy)]
enum Step {
    /// 200 with vectors of this dimension; usage `prompt_tokens` if `Some`.
    Ok(usize, Option<u64>),
    /// A non-200 status.
    Status(u16),
    /// Never answers.
    Hang,
    /// Answers like `Ok(dim, Some(1))` after this many ms of tokio (paused) time.
    Slow(u64, usize),
}

/// Answers by script (the last step repeats), advancing the fake clock 250 ms per request.
struct FakeEmbed {
    clock: Arc<FakeClock>,
    steps: Mutex<VecDeque<Step>>,
    inputs: Mutex<Vec<Vec<String>>>,
}

impl FakeEmbed {
    fn new(clock: &Arc<FakeClock>, steps: &[Step]) -> Arc<Self> {
        Arc::new(Self {
            clock: Arc::clone(clock),
            steps: Mutex::new(steps.iter().copied().collect()),
            inputs: Mutex::new(Vec::new()),
        })
    }

    fn inputs(&self) -> Vec<Vec<String>> {
        self.inputs.lock().unwrap().clone()
    }
}

#[async_trait]
impl EmbeddingTransport for FakeEmbed {
    async fn send(&self, request: WireRequest) -> Result<WireBody, WireFailure> {
        let input: Vec<String> = request.body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        let n = input.len();
        let offset = self
            .inputs
            .lock()
            .unwrap()
            .iter()
            .map(Vec::len)
            .sum::<usize>();
        self.inputs.lock().unwrap().push(input);
        let step = {
            let mut steps = self.steps.lock().unwrap();
            if steps.len() > 1 {
                steps.pop_front().unwrap()
            } else {
                *steps.front().unwrap()
            }
        };
        if let Step::Hang = step {
            std::future::pending::<()>().await;
        }
        let step = match step {
            Step::Slow(ms, dim) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Step::Ok(dim, Some(1))
            }
            other => other,
        };
        self.clock.advance(Duration::from_millis(250));
        match step {
            Step::Ok(dim, tokens) => {
                let data: Vec<Value> = (0..n)
                    .map(|i| json!({"index": i, "embedding": vec![(offset + i) as f32; dim]}))
                    .collect();
                let mut body = json!({"data": data});
                if let Some(t) = tokens {
                    body["usage"] = json!({"prompt_tokens": t});
                }
                Ok(WireBody {
                    headers: Vec::new(),
                    bytes: body.to_string().into(),
                })
            }
            Step::Status(status) => Err(WireFailure::Http {
                status,
                headers: Vec::new(),
                body: "{\"error\":{\"message\":\"server error\"}}".into(),
            }),
            Step::Hang | Step::Slow(..) => unreachable!(),
        }
    }
}

fn source(name: &str) -> SourceConfig {
    SourceConfig::new(
        name,
        "emb",
        "http://127.0.0.1:9/v1",
        Some("sk-test-x".into()),
        "e-1",
    )
}

fn client(
    transport: &Arc<FakeEmbed>,
    clock: &Arc<FakeClock>,
    sources: Vec<SourceConfig>,
    batch_size: u32,
) -> EmbeddingClient {
    EmbeddingClient::builder()
        .scope("EMBED")
        .sources(sources)
        .batch_size(batch_size)
        .retry(RetryPolicy {
            max_attempts: 3,
            backoff_base_s: 0.01,
            backoff_max_s: 0.02,
            ..RetryPolicy::default()
        })
        .clock(Arc::clone(clock) as _)
        .transport(Arc::clone(transport) as _)
        .build()
        .unwrap()
}

fn texts(n: usize) -> EmbedRequest {
    EmbedRequest::new((0..n).map(|i| format!("t{i}")).collect())
}

// covers: E-15
#[tokio::test(start_paused = true)]
async fn cf_395_generation_ms_is_the_sum_of_batch_transport_times() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1))]);
    let client = client(&fake, &clock, vec![source("e_1")], 2);
    let r = client
        .embed(EmbedRequest::new(
            ["a", "bb", "ccc", "dddd"].map(String::from).to_vec(),
        ))
        .await
        .unwrap();
    let stats = r.call_stats.unwrap();
    assert_eq!(stats.attempts, 2);
    assert_eq!(stats.generation_ms, 500);
    assert_eq!(stats.total_latency_ms, 500);
    assert_eq!(
        r.latency_ms, 500,
        "E-13: sum of the batch attempts' latencies"
    );
    assert_eq!((stats.stall_ms, stats.stall_count), (None, None));
}

// covers: E-9
#[tokio::test(start_paused = true)]
async fn cf_397_three_batches_three_attempts_in_order() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(3, Some(2))]);
    let client = client(&fake, &clock, vec![source("e_1")], 2);
    let r = client.embed(texts(5)).await.unwrap();
    assert_eq!(r.call_stats.unwrap().attempts, 3);
    assert_eq!(
        fake.inputs(),
        [vec!["t0", "t1"], vec!["t2", "t3"], vec!["t4"]]
    );
    let firsts: Vec<f32> = r.vectors.iter().map(|v| v[0]).collect();
    assert_eq!(firsts, [0.0, 1.0, 2.0, 3.0, 4.0]);
    assert_eq!(r.usage.prompt_tokens, 6);
}

#[tokio::test(start_paused = true)]
async fn cf_398_two_calls_have_different_logical_call_ids() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1))]);
    let client = client(&fake, &clock, vec![source("e_1")], 4);
    let a = client.embed(texts(1)).await.unwrap().call_stats.unwrap();
    let b = client.embed(texts(1)).await.unwrap().call_stats.unwrap();
    assert_ne!(a.logical_call_id, b.logical_call_id);
}

// covers: E-10
#[tokio::test(start_paused = true)]
async fn cf_399_a_retry_within_a_batch_counts_in_attempts() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Status(500), Step::Ok(2, Some(1))]);
    let client = client(&fake, &clock, vec![source("e_1")], 4);
    let r = client.embed(texts(2)).await.unwrap();
    assert_eq!(r.call_stats.unwrap().attempts, 2);
    assert_eq!(fake.inputs().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn e_10_every_failure_counts_429_included() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Status(429)]);
    let client = client(&fake, &clock, vec![source("e_1")], 4);
    let error = client.embed(texts(1)).await.unwrap_err();
    assert_eq!(
        error.unavailable().map(|u| u.reason),
        Some(ScopeReason::RetryExhausted),
        "{error:?}"
    );
    assert_eq!(fake.inputs().len(), 3, "max_attempts 3, no 429 exemption");
}

// covers: E-12
#[tokio::test(start_paused = true)]
async fn cf_396_cancel_in_flight_settles_the_estimate() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Hang]);
    let s = SourceConfig {
        tpm: 1000,
        est_tokens: Some(400),
        ..source("e_1")
    };
    let client = client(&fake, &clock, vec![s], 4);
    tokio::select! {
        _ = client.embed(texts(1)) => panic!("the transport hangs"),
        () = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    client.quiesce().await;
    let status = client.sources_status().await;
    assert_eq!(status[0].tpm_used, Some(400));
    assert_eq!(status[0].inflight, Some(0));
}

#[tokio::test(start_paused = true)]
async fn e_11_a_failing_batch_ends_the_call() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1)), Step::Status(400)]);
    let client = client(&fake, &clock, vec![source("e_1")], 1);
    let error = client.embed(texts(3)).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::RequestRejected(_)),
        "{error:?}"
    );
    assert_eq!(fake.inputs().len(), 2, "the third batch never starts");
}

#[tokio::test(start_paused = true)]
async fn e_13_dimension_differs_across_batches_and_weakest_usage_source() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1)), Step::Ok(3, Some(1))]);
    let c = client(&fake, &clock, vec![source("e_1")], 1);
    let error = c.embed(texts(2)).await.unwrap_err();
    match error {
        GatewayError::ResultInvalid(d) => assert!(
            d.failure()
                .message
                .contains("embedding dimension differs across batches"),
            "{d:?}"
        ),
        other => panic!("expected ResultInvalid, got {other:?}"),
    }
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1)), Step::Ok(2, None)]);
    let c = client(&fake, &clock, vec![source("e_1")], 1);
    let r = c.embed(texts(2)).await.unwrap();
    assert_eq!(r.usage_source, UsageSource::Unavailable);
}

#[tokio::test(start_paused = true)]
async fn e_8_builder_without_sources_is_no_sources() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1))]);
    let client = client(&fake, &clock, Vec::new(), 4);
    let error = client.embed(texts(1)).await.unwrap_err();
    let u = error.unavailable().expect("AllSourcesExhausted");
    assert_eq!((u.reason, u.retry_after_s), (ScopeReason::NoSources, 0.0));
}

#[tokio::test(start_paused = true)]
async fn cf_403_tiny_deadline_with_slow_transport_is_deadline_exceeded() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Hang]);
    let client = client(&fake, &clock, vec![source("e_1")], 4);
    let mut request = texts(1);
    request.call_deadline = Some(Duration::from_micros(1));
    let error = client.embed(request).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::CallDeadlineExceeded(ref d) if d.scope == "embed"),
        "{error:?}"
    );
}

/// A recorder keeping every row in memory.
#[derive(Default)]
struct Rows(Mutex<Vec<gateway_ports::TelemetryRow>>);

impl gateway_ports::TelemetryStatusProvider for Rows {
    fn status(&self) -> gateway_ports::TelemetryStatus {
        gateway_ports::TelemetryStatus::for_backend("none")
    }
}

#[async_trait]
impl gateway_ports::TelemetryRecorder for Rows {
    fn record(&self, row: gateway_ports::TelemetryRow) -> Result<(), gateway_ports::RecordError> {
        self.0.lock().unwrap().push(row);
        Ok(())
    }
}

// covers: E-16
#[tokio::test(start_paused = true)]
async fn cf_407_failing_embed_rows_have_error_and_no_effort_and_one_terminal() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Status(500)]);
    let rows = Arc::new(Rows::default());
    let s = SourceConfig {
        enable_thinking: Some(true),
        ..source("e_1")
    };
    let client = EmbeddingClient::builder()
        .scope("EMBED")
        .sources(vec![s])
        .retry(RetryPolicy {
            max_attempts: 3,
            backoff_base_s: 0.01,
            backoff_max_s: 0.02,
            ..RetryPolicy::default()
        })
        .clock(Arc::clone(&clock) as _)
        .telemetry(Arc::clone(&rows) as _)
        .transport(Arc::clone(&fake) as _)
        .build()
        .unwrap();
    assert!(client.embed(texts(1)).await.is_err());
    client.quiesce().await;
    let rows = rows.0.lock().unwrap().clone();
    let attempts: Vec<_> = rows
        .iter()
        .filter(|r| r.event_kind == gateway_ports::EventKind::Attempt)
        .collect();
    assert_eq!(attempts.len(), 3);
    assert!(
        attempts
            .iter()
            .all(|r| r.error.is_some() && r.reasoning_effort.is_none())
    );
    assert!(
        rows.iter()
            .all(|r| r.operation == gateway_ports::CallOperation::Embed)
    );
    let terminal = rows
        .iter()
        .filter(|r| r.event_kind == gateway_ports::EventKind::TerminalFailure)
        .count();
    assert_eq!(terminal, 1);
}

/// An embedding client over `fake` recording rows into `rows`.
fn client_with_rows(
    fake: &Arc<FakeEmbed>,
    clock: &Arc<FakeClock>,
    rows: &Arc<Rows>,
    batch_size: u32,
) -> EmbeddingClient {
    EmbeddingClient::builder()
        .scope("EMBED")
        .sources(vec![source("e_1")])
        .batch_size(batch_size)
        .retry(RetryPolicy {
            max_attempts: 3,
            backoff_base_s: 0.01,
            backoff_max_s: 0.02,
            ..RetryPolicy::default()
        })
        .clock(Arc::clone(clock) as _)
        .telemetry(Arc::clone(rows) as _)
        .transport(Arc::clone(fake) as _)
        .build()
        .unwrap()
}

// covers: E-9
#[tokio::test(start_paused = true)]
async fn e_9_one_logical_call_id_across_batches() {
    // 3 batches, the second retried once: 4 attempt rows, all with the call's one id.
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(
        &clock,
        &[
            Step::Ok(2, Some(1)),
            Step::Status(500),
            Step::Ok(2, Some(1)),
        ],
    );
    let rows = Arc::new(Rows::default());
    let client = client_with_rows(&fake, &clock, &rows, 2);
    let r = client.embed(texts(5)).await.unwrap();
    let stats = r.call_stats.unwrap();
    assert_eq!(
        stats.attempts, 4,
        "E-9: attempts accumulate over the batches"
    );
    assert_eq!(stats.generation_ms, 750, "E-15: summed over the batches");
    client.quiesce().await;
    let rows = rows.0.lock().unwrap().clone();
    let attempts: Vec<_> = rows
        .iter()
        .filter(|r| r.event_kind == gateway_ports::EventKind::Attempt)
        .collect();
    assert_eq!(attempts.len(), 4);
    assert!(
        attempts
            .iter()
            .all(|row| row.logical_call_id.as_deref() == Some(stats.logical_call_id.as_str())),
        "E-9: one logical_call_id on every batch's rows: {:?}",
        attempts
            .iter()
            .map(|r| r.logical_call_id.clone())
            .collect::<Vec<_>>()
    );
    // 80 T-15: each attempt row carries its own batch's texts.
    assert!(attempts[0].messages.contains("t0") && !attempts[0].messages.contains("t2"));
    assert!(attempts[3].messages.contains("t4") && !attempts[3].messages.contains("t0"));
    assert!(
        rows.iter()
            .all(|r| r.event_kind != gateway_ports::EventKind::TerminalFailure),
        "a successful call writes no terminal row"
    );
}

// covers: E-9, E-11
#[tokio::test(start_paused = true)]
async fn e_11_failing_second_batch_one_terminal_row_with_the_call_id() {
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Ok(2, Some(1)), Step::Status(500)]);
    let rows = Arc::new(Rows::default());
    let client = client_with_rows(&fake, &clock, &rows, 2);
    let error = client.embed(texts(4)).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::AllSourcesExhausted(_)),
        "{error:?}"
    );
    client.quiesce().await;
    let rows = rows.0.lock().unwrap().clone();
    assert_eq!(
        rows.len(),
        1 + 3 + 1,
        "batch 1, three failed attempts, one terminal"
    );
    let id = rows[0].logical_call_id.clone();
    assert!(id.is_some());
    assert!(rows.iter().all(|r| r.logical_call_id == id));
    let terminal: Vec<_> = rows
        .iter()
        .filter(|r| r.event_kind == gateway_ports::EventKind::TerminalFailure)
        .collect();
    assert_eq!(terminal.len(), 1);
    assert!(
        terminal[0].messages.contains("texts=4 batches=2"),
        "80 T-19: the terminal row summarises the whole call: {}",
        terminal[0].messages
    );
}

// covers: E-7, E-10
#[tokio::test(start_paused = true)]
async fn e_10_one_deadline_shared_by_all_batches() {
    // Each batch takes 400 ms; the call deadline is 1 s. Every batch alone fits, three do not:
    // the third batch is cut at 1 s by the one shared deadline.
    let clock = Arc::new(FakeClock::new());
    let fake = FakeEmbed::new(&clock, &[Step::Slow(400, 2)]);
    let rows = Arc::new(Rows::default());
    let client = client_with_rows(&fake, &clock, &rows, 1);
    let mut request = texts(3);
    request.call_deadline = Some(Duration::from_secs(1));
    let started = tokio::time::Instant::now();
    let error = client.embed(request).await.unwrap_err();
    let elapsed = started.elapsed();
    match &error {
        GatewayError::CallDeadlineExceeded(d) => {
            assert_eq!(d.scope, "embed");
            assert!((d.deadline_s - 1.0).abs() < 1e-9, "{d:?}");
        }
        other => panic!("expected CallDeadlineExceeded, got {other:?}"),
    }
    assert_eq!(elapsed, Duration::from_secs(1), "cut at the one deadline");
    assert_eq!(
        fake.inputs().len(),
        3,
        "the third batch started, then was cut"
    );
    client.quiesce().await;
    let rows = rows.0.lock().unwrap().clone();
    let id = rows[0].logical_call_id.clone();
    assert!(rows.iter().all(|r| r.logical_call_id == id));
    let terminal = rows
        .iter()
        .filter(|r| r.event_kind == gateway_ports::EventKind::TerminalFailure)
        .count();
    assert_eq!(terminal, 1, "one terminal row for the whole call");
    let cancelled = rows
        .iter()
        .filter(|r| {
            r.event_kind == gateway_ports::EventKind::Attempt
                && r.error.as_deref() == Some("cancelled")
        })
        .count();
    assert_eq!(cancelled, 1, "the cut batch's attempt row");
}
