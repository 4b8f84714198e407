//! Shared helpers of the adapter's tier-2 tests (05 R-30): real sockets on 127.0.0.1 through
//! `upstream-sim` in-process, plus a tiny raw server for the facts the simulator does not record
//! (connection reuse, client disconnects). Event-driven: no sleeps. The simulator, request and
//! raw-server helpers are the transport contract suite's (`contract_tests::transport`), so the
//! adapter's own rows and the contract rows build their fixtures the same way.

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a subset of the helpers"
)]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers: a failed setup is a failed test"
)]

use adapter_openai::{OpenAiTransport, TransportOptions};
use gateway_ports::config::SourceConfig;

pub use contract_tests::transport::raw::{After, RawServer, full_backlog, refused_base_url};
pub use contract_tests::transport::{
    KEY, assert_one_terminal_last, b64, chat_body, chat_plain, chat_stream, collect, raw_script,
    request, sim, source,
};

/// A transport with default options for one source.
pub fn transport(source: &SourceConfig) -> OpenAiTransport {
    OpenAiTransport::new([source], TransportOptions::default()).expect("transport builds")
}

/// A transport with these options for one source.
pub fn transport_with(source: &SourceConfig, options: TransportOptions) -> OpenAiTransport {
    OpenAiTransport::new([source], options).expect("transport builds")
}
