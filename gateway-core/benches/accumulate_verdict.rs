//! Accumulation plus verdict cost per chunk (issue 5): the pure judgment path of one streamed
//! attempt — `Accumulator::push_chunk` for every chunk, `finish()`, `judge_attempt` and the
//! openai snapshot — over pre-parsed chunks (JSON parsing is the transport's cost), reported per
//! chunk (`Throughput::Elements`). A last group runs the whole `ChatExecutor` over an in-memory
//! transport (no sleeps) to show what the executor adds per chunk: the watchdog `select!`, the
//! progress clock and the `watch` counter.
//!
//! Shapes (256 chunks each): text-mode content deltas; openai-mode content deltas; openai-mode
//! tool-call argument fragments; text-mode reasoning then content. Run:
//! `cargo bench -p gateway-core --bench accumulate_verdict -- --warm-up-time 1 --measurement-time 3`.

#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use std::hint::black_box;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use gateway_core::accumulate::{AccumulateOptions, Accumulator};
use gateway_core::attempt::{
    AttemptCtx, AttemptOutcome, AttemptRunner as _, LegControl, LegSignals,
};
use gateway_core::executor::ChatExecutor;
use gateway_core::verdict::{AttemptFacts, StreamFacts, StreamTerminal, judge_attempt};
use gateway_ports::{
    ChatRequest, ChatTransport, MissingDone, ResponseMode, SourceConfig, WireEvent, WireFailure,
    WireRequest, WireResponse,
};
use serde_json::{Value, json};

const CHUNKS: usize = 256;

fn frame(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn usage() -> Value {
    json!({"id": "chatcmpl-bench", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 256}})
}

fn content_stream() -> Vec<Value> {
    let mut v = vec![frame(json!({"role": "assistant", "content": ""}), None)];
    for i in 0..CHUNKS - 3 {
        v.push(frame(json!({"content": format!("token{i} ")}), None));
    }
    v.push(frame(json!({}), Some("stop")));
    v.push(usage());
    v
}

fn tool_stream() -> Vec<Value> {
    let mut v = vec![frame(
        json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_1",
            "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": \""}}]}),
        None,
    )];
    for i in 0..CHUNKS - 4 {
        v.push(frame(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": format!("w{i} ")}}]}),
            None,
        ));
    }
    v.push(frame(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"}"}}]}),
        None,
    ));
    v.push(frame(json!({}), Some("tool_calls")));
    v.push(usage());
    v
}

fn reasoning_stream() -> Vec<Value> {
    let mut v = vec![frame(json!({"role": "assistant"}), None)];
    for i in 0..CHUNKS / 2 {
        v.push(frame(
            json!({"reasoning_content": format!("think{i} ")}),
            None,
        ));
    }
    for i in 0..CHUNKS / 2 - 3 {
        v.push(frame(json!({"content": format!("token{i} ")}), None));
    }
    v.push(frame(json!({}), Some("stop")));
    v.push(usage());
    v
}

/// One attempt's judgment: accumulate, finish, verdict, snapshot. Returns whether it delivered.
fn judge(mode: ResponseMode, chunks: &[Value]) -> bool {
    let mut acc = Accumulator::new(mode, AccumulateOptions::new("call-bench", "s1"));
    let mut any_fragment = false;
    for chunk in chunks {
        let Ok(facts) = acc.push_chunk(chunk) else {
            return false;
        };
        any_fragment |= facts.is_progress();
    }
    let acc = acc.finish();
    let facts = AttemptFacts {
        mode,
        missing_done: MissingDone::Retry,
        stream: Some(StreamFacts {
            terminal: StreamTerminal::Done,
            usage_after_finish: acc.usage_after_finish,
            any_fragment,
        }),
        finish_reason: acc.finish_reason.as_ref().map(|f| f.as_str()),
        content: &acc.content,
        thinking: &acc.thinking,
        message: acc.message.as_ref(),
        usage_measured: acc.usage_measured(),
        refusal: &acc.refusal,
        tool_calls_in_text: acc.tool_calls_in_text,
    };
    let delivered = judge_attempt(&facts).is_deliver();
    let snapshot = acc.completion().is_none_or(|c| c.is_ok());
    delivered && snapshot
}

fn bench_pure(c: &mut Criterion) {
    let mut group = c.benchmark_group("accumulate_verdict");
    group.throughput(Throughput::Elements(CHUNKS as u64));
    let shapes: [(&str, ResponseMode, Vec<Value>); 4] = [
        ("text_content", ResponseMode::Text, content_stream()),
        ("openai_content", ResponseMode::OpenAi, content_stream()),
        ("openai_tool_args", ResponseMode::OpenAi, tool_stream()),
        (
            "text_reasoning_then_content",
            ResponseMode::Text,
            reasoning_stream(),
        ),
    ];
    for (name, mode, chunks) in &shapes {
        assert_eq!(chunks.len(), CHUNKS, "{name}");
        assert!(judge(*mode, chunks), "{name} must deliver");
        group.bench_function(*name, |b| {
            b.iter(|| black_box(judge(*mode, black_box(chunks))))
        });
    }
    group.finish();
}

/// A transport that answers at once with pre-built events (no sleeps, no sockets).
#[derive(Debug)]
struct MemoryTransport {
    events: Mutex<Vec<WireEvent>>,
}

#[async_trait]
impl ChatTransport for MemoryTransport {
    async fn send(&self, _request: WireRequest) -> Result<WireResponse, WireFailure> {
        Ok(WireResponse::Events {
            headers: Vec::new(),
            content_type: Some("text/event-stream".to_owned()),
            events: Box::pin(futures_util::stream::iter(std::mem::take(
                &mut *self.events.lock().unwrap_or_else(PoisonError::into_inner),
            ))),
        })
    }
}

fn bench_executor(c: &mut Criterion) {
    let mut group = c.benchmark_group("executor_in_memory");
    group.throughput(Throughput::Elements(CHUNKS as u64));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let source = Arc::new(SourceConfig::new(
        "s1",
        "test",
        "http://127.0.0.1:9",
        None,
        "m",
    ));
    for (name, mode, chunks) in [
        ("text_content", ResponseMode::Text, content_stream()),
        ("openai_tool_args", ResponseMode::OpenAi, tool_stream()),
    ] {
        let mut events: Vec<WireEvent> = chunks
            .into_iter()
            .map(|c| WireEvent::Chunk(c.into()))
            .collect();
        events.push(WireEvent::Done);
        let mut request = ChatRequest::new(vec![]);
        request.response_mode = mode;
        let request = Arc::new(request);
        // The events are cloned in the (untimed) setup, so only the attempt is measured.
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let transport = Arc::new(MemoryTransport {
                        events: Mutex::new(events.clone()),
                    });
                    ChatExecutor::new(transport, Arc::clone(&request))
                },
                |executor| {
                    rt.block_on(async {
                        let (signals, _rx) = LegSignals::new();
                        let ctx = AttemptCtx::new("call-bench", Arc::clone(&source));
                        let out = executor.run(ctx, Some(signals), LegControl::new()).await;
                        assert!(matches!(out, AttemptOutcome::Success(_)), "{out:?}");
                        black_box(out)
                    })
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pure, bench_executor);
criterion_main!(benches);
