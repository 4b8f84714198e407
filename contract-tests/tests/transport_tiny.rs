//! The transport contract suite (10 §8.1 CT-CHAT-01…10, §8.2 CT-EMB-01/02) run against a second,
//! tiny transport over the simulator (`tiny_transport`), so the suite is shown to be generic
//! over the adapter (issue 14). The same rows run against `adapter-openai` in its
//! `tests/transport_contract.rs`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    missing_docs,
    reason = "test code: a failed setup is a failed test"
)]

mod tiny_transport;

use std::sync::Arc;

use contract_tests::transport::{TransportHarness, WireLimits};
use gateway_ports::{ChatTransport, EmbeddingTransport, SourceConfig};
use tiny_transport::TinyTransport;

/// Builds a fresh `TinyTransport` per row.
struct Tiny;

impl TransportHarness for Tiny {
    fn chat(&self, sources: &[SourceConfig], limits: WireLimits) -> Arc<dyn ChatTransport> {
        Arc::new(TinyTransport::new(sources, limits))
    }

    fn embedding(
        &self,
        sources: &[SourceConfig],
        limits: WireLimits,
    ) -> Arc<dyn EmbeddingTransport> {
        Arc::new(TinyTransport::new(sources, limits))
    }
}

contract_tests::transport_contract!(Tiny);
