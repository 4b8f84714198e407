//! Network-fault kinds: which `NetworkFaultKind` a reqwest error is.
//!
//! reqwest answers questions (`is_connect`, `is_timeout`) but does not say whether a failure
//! was TLS, a protocol violation or a plain read error; the source chain does. This module walks
//! it — downcasting to `hyper::Error`, `std::io::Error` and `rustls::Error` (the versions
//! reqwest uses; R-25 allows it) — collects [`ErrorFacts`] and maps them to a kind with a pure
//! function, so the mapping is unit-tested without sockets.
//!
//! Kinds this adapter can emit (the list in `docs/transport.md`): before a status line
//! `ConnectTimeout`, `Connect`, `Tls`, `Write`, `ReadTimeout` (doctor probe only), `Read`,
//! `Protocol`, `Other`; on a 200 body `Read`, `Protocol`, `ReadTimeout` (doctor probe only).
//! Never `WriteTimeout` or `PoolTimeout`: the adapter sets no write or pool timer.
//!
//! `detail` is the innermost cause's text (an OS error, a hyper or rustls message), never the
//! URL (which may carry `QUERY` values), a header or a payload.

use std::error::Error as StdError;
use std::io;

use gateway_ports::error::{NetworkFault, NetworkFaultKind};

/// When the error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before a status line: connect, TLS, request write, waiting for the head.
    Send,
    /// While reading a 200 (or error) body.
    Body,
}

/// What the error chain says, independent of reqwest's types.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ErrorFacts {
    /// reqwest: the connector failed (DNS, TCP connect, TLS handshake).
    pub(crate) connect: bool,
    /// A timer fired (reqwest's connect timeout or a request timeout).
    pub(crate) timeout: bool,
    /// A `rustls::Error` is in the chain (or a connect failure with invalid TLS data).
    pub(crate) tls: bool,
    /// hyper saw the peer break HTTP: a parse error, or the connection closed before the
    /// message (head or body) was complete.
    pub(crate) protocol: bool,
    /// The request could not be written (broken pipe, hyper's aborted body write).
    pub(crate) write: bool,
    /// An I/O error is in the chain.
    pub(crate) io: bool,
}

/// Maps facts to a kind (10 §7 list; 30 G-15 maps the kind to `cause_type`).
pub(crate) fn kind_for(facts: ErrorFacts, phase: Phase) -> NetworkFaultKind {
    match phase {
        Phase::Send => {
            if facts.tls {
                NetworkFaultKind::Tls
            } else if facts.connect && facts.timeout {
                NetworkFaultKind::ConnectTimeout
            } else if facts.connect {
                NetworkFaultKind::Connect
            } else if facts.timeout {
                NetworkFaultKind::ReadTimeout
            } else if facts.write {
                NetworkFaultKind::Write
            } else if facts.protocol {
                NetworkFaultKind::Protocol
            } else if facts.io {
                // A reset while the request was written or the head awaited: httpx's ReadError.
                NetworkFaultKind::Read
            } else {
                NetworkFaultKind::Other
            }
        }
        Phase::Body => {
            if facts.timeout {
                NetworkFaultKind::ReadTimeout
            } else if facts.protocol {
                // Incomplete chunked encoding, close before Content-Length: httpx's
                // RemoteProtocolError.
                NetworkFaultKind::Protocol
            } else {
                NetworkFaultKind::Read
            }
        }
    }
}

/// The fault of a reqwest error in this phase, with a secret-free detail.
pub(crate) fn network_fault(err: &reqwest::Error, phase: Phase) -> NetworkFault {
    let mut facts = ErrorFacts {
        connect: err.is_connect(),
        timeout: err.is_timeout(),
        ..ErrorFacts::default()
    };
    let mut innermost: Option<String> = None;
    let mut cur: Option<&(dyn StdError + 'static)> = err.source();
    let mut depth = 0;
    while let Some(e) = cur {
        depth += 1;
        if depth > 32 {
            break;
        }
        innermost = Some(e.to_string());
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_parse() || h.is_incomplete_message() {
                facts.protocol = true;
            }
            if h.is_body_write_aborted() {
                facts.write = true;
            }
            if h.is_timeout() {
                facts.timeout = true;
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            facts.tls = true;
        }
        if let Some(io_err) = e.downcast_ref::<io::Error>() {
            facts.io = true;
            match io_err.kind() {
                io::ErrorKind::BrokenPipe => facts.write = true,
                io::ErrorKind::TimedOut => facts.timeout = true,
                io::ErrorKind::InvalidData if facts.connect => facts.tls = true,
                // hyper's "end of file before message length reached": the peer closed before
                // the HTTP framing completed (httpx's RemoteProtocolError).
                io::ErrorKind::UnexpectedEof => facts.protocol = true,
                _ => {}
            }
            // `io::Error::source` skips the wrapped error itself: descend into it.
            if let Some(inner) = io_err.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        cur = e.source();
    }
    let kind = kind_for(facts, phase);
    let what = match (phase, kind) {
        (_, NetworkFaultKind::Tls) => "TLS handshake failed",
        (_, NetworkFaultKind::ConnectTimeout) => "connect timed out",
        (_, NetworkFaultKind::Connect) => "connect failed",
        (_, NetworkFaultKind::Write) => "request write failed",
        (Phase::Send, NetworkFaultKind::Protocol) => "upstream broke HTTP before the status line",
        (Phase::Send, _) => "request failed before the status line",
        (Phase::Body, NetworkFaultKind::Protocol) => "body ended before its HTTP framing",
        (Phase::Body, _) => "body read failed",
    };
    let detail = match innermost {
        Some(cause) => format!("{what}: {cause}"),
        None => what.to_owned(),
    };
    NetworkFault::new(kind, detail)
}

/// `true` when `err` says the connection closed before any response byte arrived, on a request
/// that was sent (case 041): hyper's "connection closed before message completed",
/// or a reset / broken pipe / unexpected EOF while the request was in flight — never a connect
/// failure, a timeout or TLS. Such a request was never answered, so re-sending it is safe.
pub(crate) fn is_stale_connection(err: &reqwest::Error) -> bool {
    if err.is_connect() || err.is_timeout() || err.is_status() || err.is_body() {
        return false;
    }
    let mut cur: Option<&(dyn StdError + 'static)> = err.source();
    let mut depth = 0;
    while let Some(e) = cur {
        depth += 1;
        if depth > 32 {
            break;
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return false;
        }
        if let Some(io_err) = e.downcast_ref::<io::Error>() {
            if matches!(
                io_err.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionAborted
            ) {
                return true;
            }
            if let Some(inner) = io_err.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        cur = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(f: impl FnOnce(&mut ErrorFacts)) -> ErrorFacts {
        let mut x = ErrorFacts::default();
        f(&mut x);
        x
    }

    #[test]
    fn ct_chat_03_kinds_before_a_status_line() {
        use NetworkFaultKind as K;
        let rows = [
            (facts(|f| f.connect = true), K::Connect),
            (
                facts(|f| {
                    f.connect = true;
                    f.timeout = true
                }),
                K::ConnectTimeout,
            ),
            (
                facts(|f| {
                    f.connect = true;
                    f.tls = true
                }),
                K::Tls,
            ),
            (
                facts(|f| {
                    f.io = true;
                    f.write = true
                }),
                K::Write,
            ),
            (facts(|f| f.protocol = true), K::Protocol),
            (facts(|f| f.io = true), K::Read),
            (facts(|f| f.timeout = true), K::ReadTimeout),
            (ErrorFacts::default(), K::Other),
        ];
        for (f, want) in rows {
            assert_eq!(kind_for(f, Phase::Send), want, "{f:?}");
        }
    }

    #[test]
    fn s_29_kinds_of_a_broken_body() {
        use NetworkFaultKind as K;
        assert_eq!(
            kind_for(facts(|f| f.protocol = true), Phase::Body),
            K::Protocol
        );
        assert_eq!(kind_for(facts(|f| f.io = true), Phase::Body), K::Read);
        assert_eq!(kind_for(ErrorFacts::default(), Phase::Body), K::Read);
    }
}
