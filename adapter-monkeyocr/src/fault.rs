//! Network-fault kinds of a reqwest error, from what reqwest and the I/O
//! error chain say. `detail` is the innermost cause's text, never the URL (which may carry
//! `QUERY` values), a header or a payload (CT-CHAT-08 via CT-OCR-06).

use std::error::Error as StdError;
use std::io;

use gateway_ports::error::{NetworkFault, NetworkFaultKind};

/// When the error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before a status line.
    Send,
    /// While reading a body.
    Body,
}

/// The fault of a reqwest error in this phase, with a secret-free detail.
pub(crate) fn network_fault(err: &reqwest::Error, phase: Phase) -> NetworkFault {
    let (mut timeout, connect) = (err.is_timeout(), err.is_connect());
    let (mut io_seen, mut eof, mut pipe) = (false, false, false);
    let mut innermost: Option<String> = None;
    let mut cur: Option<&(dyn StdError + 'static)> = err.source();
    let mut depth = 0;
    while let Some(e) = cur {
        depth += 1;
        if depth > 32 {
            break;
        }
        innermost = Some(e.to_string());
        if let Some(io_err) = e.downcast_ref::<io::Error>() {
            io_seen = true;
            match io_err.kind() {
                io::ErrorKind::TimedOut => timeout = true,
                io::ErrorKind::UnexpectedEof => eof = true,
                io::ErrorKind::BrokenPipe => pipe = true,
                _ => {}
            }
            if let Some(inner) = io_err.get_ref() {
                cur = Some(inner);
                continue;
            }
        }
        cur = e.source();
    }
    let lowered = innermost
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let protocol = eof || lowered.contains("incomplete") || lowered.contains("parse");
    let kind = match phase {
        Phase::Send if connect && timeout => NetworkFaultKind::ConnectTimeout,
        Phase::Send if connect && (lowered.contains("tls") || lowered.contains("certificate")) => {
            NetworkFaultKind::Tls
        }
        Phase::Send if connect => NetworkFaultKind::Connect,
        Phase::Send if timeout => NetworkFaultKind::ReadTimeout,
        Phase::Send if pipe => NetworkFaultKind::Write,
        Phase::Send if protocol => NetworkFaultKind::Protocol,
        Phase::Send if io_seen || err.is_request() => NetworkFaultKind::Read,
        Phase::Send => NetworkFaultKind::Other,
        Phase::Body if timeout => NetworkFaultKind::ReadTimeout,
        Phase::Body if protocol => NetworkFaultKind::Protocol,
        Phase::Body => NetworkFaultKind::Read,
    };
    let what = match phase {
        Phase::Send => "request failed before the status line",
        Phase::Body => "body read failed",
    };
    let detail = match innermost {
        Some(cause) => format!("{what}: {cause}"),
        None => what.to_owned(),
    };
    NetworkFault::new(kind, detail)
}
