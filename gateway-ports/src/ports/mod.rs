//! The port traits and their boundary value types.
//!
//! Every trait is `#[async_trait]`, object-safe and `Send + Sync + 'static`; the core holds them
//! as `Arc<dyn Trait>`. Ports report facts and never judge, retry, sleep for capacity,
//! panic on bad data or read the environment. Dropping any future they return leaves the backend
//! consistent (cancellation safety); the synchronous fast paths
//! (`Permit::settle_and_release_now`, `CircuitBreaker::release_probe_now`) let guards clean up
//! without a task.

pub mod breaker;
pub mod cache;
pub mod chunk_reader;
pub mod clock;
pub mod limiter;
pub mod recorder;
pub mod request_body;
pub mod structured;
pub mod text_read;
pub mod transport;

pub use breaker::{BreakerSnapshot, CircuitBreaker, GateDecision, ProbeLease};
pub use cache::ResponseCache;
pub use chunk_reader::ChunkReader;
pub use clock::Clock;
pub use limiter::{Acquire, LimitGate, Permit, RateLimiter, SourceStats};
pub use recorder::{TelemetryRecorder, TelemetryStatusProvider};
pub use request_body::RequestBody;
pub use structured::{StructuredFailure, StructuredOutputStrategy};
pub use transport::{
    ArchiveEntry, ChatTransport, ChunkJson, EmbeddingTransport, Endpoint, KeepAliveKind,
    OcrLayoutWire, OcrStage, OcrTransport, OcrWireFailure, OcrWireRequest, WireBody, WireEvent,
    WireEventStream, WireNotice, WireRequest, WireResponse, body_text, is_json_content_type,
    json_before_trailing_sse, lossy_utf8,
};
