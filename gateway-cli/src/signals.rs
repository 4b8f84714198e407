//! The interrupting signals of `pgw`: SIGINT (Ctrl-C), SIGTERM (`kill`, service managers) and
//! SIGHUP (a closed terminal) all stop a command the same way — the running call is dropped
//! (cancelled with full cleanup), the client drains with `close()`, and the process exits
//! 128 + the signal number: 130, 143 or 129 (docs/cli.md).

use serde_json::{Value, json};

use crate::config::SCHEMA_VERSION;

/// Which signal interrupted the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// SIGINT (Ctrl-C): exit 130.
    Int,
    /// SIGTERM: exit 143.
    Term,
    /// SIGHUP: exit 129.
    Hup,
}

impl Interrupt {
    /// The exit status: 128 + the signal number.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Int => crate::exit::INTERRUPTED,
            Self::Term => 143,
            Self::Hup => 129,
        }
    }

    /// The signal's name (`SIGINT`, `SIGTERM`, `SIGHUP`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "SIGINT",
            Self::Term => "SIGTERM",
            Self::Hup => "SIGHUP",
        }
    }

    /// The one `--json` object printed when a command is interrupted: `ok: false` and an
    /// `Interrupted` error naming the signal.
    pub fn json(self) -> Value {
        json!({
            "schema_version": SCHEMA_VERSION,
            "ok": false,
            "error": {
                "type": "Interrupted",
                "signal": self.name(),
                "message": format!("interrupted by {}; the call was cancelled", self.name()),
            },
        })
    }
}

/// Resolves at the first SIGINT, SIGTERM or SIGHUP received after this function was called.
/// The handlers are installed at the call, not at the first poll, so a signal that arrives
/// while the call it races (in a `select!`) is already under way is never missed. A signal whose
/// handler cannot be installed is simply not awaited (the others still are).
pub fn interrupted() -> impl std::future::Future<Output = Interrupt> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    async move {
        tokio::select! {
            () = recv(int.as_mut()) => Interrupt::Int,
            () = recv(term.as_mut()) => Interrupt::Term,
            () = recv(hup.as_mut()) => Interrupt::Hup,
        }
    }
}

/// The next delivery of `signal`; never, when its handler could not be installed.
async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}
