//! A custom backend and an app, with `polygateway` as the only crate of ours (docs/adapters.md).
//!
//! Implements two ports — a `ChatTransport` that answers every request with a canned
//! completion and a `TelemetryRecorder` that keeps rows in memory — and injects both through
//! the builder. No environment variable is read (no `PGW_TELEMETRY_BACKEND`), no network is
//! used. Run: `cargo run -p polygateway --no-default-features --example custom_backend`.
#![allow(clippy::print_stdout)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use polygateway::ports::{
    RecordError, RecordErrorKind, TelemetryRow, TelemetryStatusProvider, WireBody, WireFailure,
    WireRequest, WireResponse,
};
use polygateway::{
    ChatOptions, ChatTransport, GatewayClient, SourceConfig, TelemetryRecorder, TelemetryStatus,
};

/// A transport that never touches the network: every request gets the same JSON completion.
#[derive(Debug)]
struct CannedTransport;

#[async_trait]
impl ChatTransport for CannedTransport {
    async fn send(&self, request: WireRequest) -> Result<WireResponse, WireFailure> {
        let body = serde_json::json!({
            "id": format!("canned-{}", request.call_id),
            "object": "chat.completion",
            "created": 0,
            "model": request.source.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": "hello from a custom transport"},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 3, "completion_tokens": 6, "total_tokens": 9}
        });
        Ok(WireResponse::Body(WireBody {
            headers: vec![("content-type".into(), "application/json".into())],
            bytes: body.to_string().into_bytes().into(),
        }))
    }
}

/// A recorder keeping rows in memory, bounded: `record` never blocks and refuses (and counts)
/// rows beyond `capacity`.
#[derive(Debug, Default)]
struct MemoryRecorder {
    rows: Mutex<Vec<TelemetryRow>>,
    dropped: Mutex<u64>,
    capacity: usize,
}

impl TelemetryStatusProvider for MemoryRecorder {
    fn status(&self) -> TelemetryStatus {
        let mut status = TelemetryStatus::for_backend("memory");
        status.written_rows = self.rows.lock().map_or(0, |r| r.len() as u64);
        status.dropped_rows = self.dropped.lock().map_or(0, |d| *d);
        status
    }
}

#[async_trait]
impl TelemetryRecorder for MemoryRecorder {
    fn record(&self, row: TelemetryRow) -> Result<(), RecordError> {
        let refused = || RecordError::new(RecordErrorKind::Dropped, "memory recorder full");
        let mut rows = self.rows.lock().map_err(|_| refused())?;
        if rows.len() >= self.capacity {
            if let Ok(mut d) = self.dropped.lock() {
                *d += 1;
            }
            return Err(refused());
        }
        rows.push(row);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = Arc::new(MemoryRecorder {
        capacity: 1_000,
        ..MemoryRecorder::default()
    });
    let client = GatewayClient::builder()
        .sources(vec![SourceConfig::new(
            "canned_1",
            "openai",
            "http://127.0.0.1:9/v1",
            Some("sk-demo-not-sent-anywhere".into()),
            "demo-model",
        )])
        .transport(Arc::new(CannedTransport))
        .telemetry(recorder.clone())
        .build()?;
    match client.chat("hi", ChatOptions::new()).await {
        Ok(response) => println!("answer: {}", response.content),
        Err(error) => println!("call failed: {error}"),
    }
    client.close().await;
    println!("telemetry rows: {}", recorder.status().written_rows);
    Ok(())
}
