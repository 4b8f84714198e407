//! The transport contract suite (10 §8.1 CT-CHAT-01…10, §8.2 CT-EMB-01/02) run against
//! `OpenAiTransport` over `upstream-sim` (`contract_tests::transport`). The rows that test this
//! adapter's own choices (pooling, the stale-connection re-send, media-type sniffing, the
//! constructor, the doctor probes) stay in the other files of this folder.

#![allow(
    clippy::expect_used,
    reason = "tests: a transport that does not build fails the row"
)]

use std::sync::Arc;

use adapter_openai::{OpenAiTransport, TransportOptions};
use contract_tests::transport::{TransportHarness, WireLimits};
use gateway_ports::{ChatTransport, EmbeddingTransport, SourceConfig};

/// Builds `OpenAiTransport` with the row's size limits.
struct OpenAi;

impl OpenAi {
    fn build(sources: &[SourceConfig], limits: WireLimits) -> OpenAiTransport {
        let options = TransportOptions {
            max_frame_bytes: limits.max_frame_bytes,
            max_error_body_bytes: limits.max_error_body_bytes,
        };
        OpenAiTransport::new(sources, options).expect("transport builds")
    }
}

impl TransportHarness for OpenAi {
    fn chat(&self, sources: &[SourceConfig], limits: WireLimits) -> Arc<dyn ChatTransport> {
        Arc::new(Self::build(sources, limits))
    }

    fn embedding(
        &self,
        sources: &[SourceConfig],
        limits: WireLimits,
    ) -> Arc<dyn EmbeddingTransport> {
        Arc::new(Self::build(sources, limits))
    }
}

contract_tests::transport_contract!(OpenAi);
