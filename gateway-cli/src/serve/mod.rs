//! `pgw serve`: an OpenAI-compatible HTTP server in front of the library.
//!
//! Routes: `POST /v1/chat/completions` (non-stream: one `chat.completion` built from the
//! fidelity-mode response; `stream: true`: SSE `chat.completion.chunk` frames as the deltas
//! arrive and `data: [DONE]`),
//! `POST /v1/embeddings`, `GET /v1/models` (one entry per scope and alias), `GET /healthz`,
//! `GET /metrics` (Prometheus text). The request's `model` names a served scope (lower case) or
//! an alias; bearer tokens from configuration map callers to tenants (telemetry `tenant_id` and
//! the cache namespace); upstream keys never leave the server.
//!
//! Streaming goes through `GatewayClient::chat_stream` (module `sse`): deltas are forwarded as
//! they pass the commit point; a failure before it is a plain JSON error with its status, a
//! failure after it ends the SSE body with an error frame.
//!
//! Shutdown: SIGINT or SIGTERM stops accepting, lets in-flight requests finish for at most
//! `PGW_SERVE_DRAIN_S`, then closes every client (telemetry flushed).

mod chat;
mod config;
mod embeddings;
mod failure_log;
mod listen;
mod metrics;
mod openai;
mod respond;
mod routes;
mod sse;
mod state;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use clap::Args;

use crate::envmap::{self, EnvFileChoice};
use crate::exit;
use crate::out;
use config::ServeConfig;
use state::{Client, build_state};

/// How long closing the clients (telemetry flush) may take at shutdown.
const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Arguments of `pgw serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Listen address `host:port` (default `PGW_SERVE_LISTEN`, else 127.0.0.1:8080; port 0
    /// picks a free port). The bound address is printed on stdout first.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Read this file instead of `./.env` (it must exist).
    #[arg(long, value_name = "PATH", conflicts_with = "no_env_file")]
    pub env_file: Option<std::path::PathBuf>,
    /// Read no `.env` file.
    #[arg(long)]
    pub no_env_file: bool,
    /// Extra environment entry KEY=VALUE (repeatable); overrides the environment.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// SIGTERM and SIGINT, registered when made. `serve` makes them before it prints the bound
/// address, so a signal sent by whoever read that address is always handled (a drain), never
/// the default action, which would end the process and its in-flight calls at once.
struct ShutdownSignals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignals {
    /// Registers the handlers now (on the current runtime).
    fn register() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Resolves on the first SIGINT or SIGTERM.
    async fn recv(self) {
        #[cfg(unix)]
        {
            let Self { term, int } = self;
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                (Some(mut only), None) | (None, Some(mut only)) => {
                    let _ = only.recv().await;
                }
                (None, None) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Runs `pgw serve`; returns the exit code. The server runs on the runtime
/// `PGW_SERVE_WORKERS` picks (default: the process runtime; 1: a current-thread runtime on a
/// thread of its own; N: a multi-thread runtime of N workers).
pub async fn run(args: ServeArgs) -> u8 {
    let mut map = match envmap::base_map(&EnvFileChoice {
        path: args.env_file.clone(),
        disabled: args.no_env_file,
    }) {
        Ok(m) => m,
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    if let Err(e) = envmap::apply_sets(&mut map, &args.set) {
        return crate::config::report_config_error(&e, false);
    }
    envmap::apply_telemetry(&mut map, None);
    let cfg = match ServeConfig::from_map(&map, args.listen.as_deref()) {
        Ok(c) => c,
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    if cfg.workers == 0 {
        return serve(map, cfg).await;
    }
    let workers = cfg.workers;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("pgw-serve".to_owned())
        .spawn(move || {
            let runtime = if workers == 1 {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .enable_all()
                    .build()
            };
            let code = match runtime {
                Ok(rt) => {
                    let code = rt.block_on(serve(map, cfg));
                    // Hung upstream connections and detached cleanup must not keep it alive.
                    rt.shutdown_timeout(std::time::Duration::from_millis(500));
                    code
                }
                Err(e) => {
                    out::stderr_line(&format!("pgw: cannot start the serve runtime: {e}"));
                    exit::INTERNAL
                }
            };
            let _ = done_tx.send(code);
        });
    if let Err(e) = spawned {
        out::stderr_line(&format!("pgw: cannot start the serve thread: {e}"));
        return exit::INTERNAL;
    }
    done_rx.await.unwrap_or(exit::INTERNAL)
}

/// Serves `cfg` until shutdown on the current runtime; returns the exit code.
async fn serve(map: polygateway::EnvMap, cfg: ServeConfig) -> u8 {
    let state = match build_state(&map, &cfg) {
        Ok(s) => Arc::new(s),
        Err(e) => return crate::config::report_config_error(&e, false),
    };
    let signals = ShutdownSignals::register();
    let listener = match tokio::net::TcpListener::bind(cfg.listen).await {
        Ok(l) => l,
        Err(e) => {
            out::stderr_line(&format!("pgw: cannot listen on {}: {e}", cfg.listen));
            return exit::INTERNAL;
        }
    };
    match listener.local_addr() {
        Ok(addr) => {
            out::stdout_line(&addr.to_string());
        }
        Err(e) => {
            out::stderr_line(&format!("pgw: cannot read the bound address: {e}"));
            return exit::INTERNAL;
        }
    }
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let app = routes::router(Arc::clone(&state), cfg.max_body_bytes, cfg.client_timeout);
    let server = listen::serve(listener, app, cfg.client_timeout, stop_rx.clone());
    let signal_state = Arc::clone(&state);
    tokio::spawn(async move {
        signals.recv().await;
        signal_state.draining.store(true, Ordering::Relaxed);
        out::stderr_line("pgw: shutting down; draining in-flight requests");
        let _ = stop_tx.send(true);
    });
    let drain = cfg.drain;
    let mut bound_rx = stop_rx;
    tokio::select! {
        () = server => {}
        _ = async move {
            let _ = bound_rx.wait_for(|stop| *stop).await;
            tokio::time::sleep(drain).await;
        } => {
            out::stderr_line("pgw: drain time over (PGW_SERVE_DRAIN_S); dropping the remaining requests");
        }
    }
    // Closing flushes telemetry; bounded so a stuck backend never keeps the process alive.
    let close_all = async {
        for client in state.clients.values() {
            match client {
                Client::Chat(c) => c.close().await,
                Client::Embed(c) => c.close().await,
            }
        }
        if let Some(limiter) = &state.limiter {
            limiter.close().await;
        }
    };
    if tokio::time::timeout(CLOSE_BOUND, close_all).await.is_err() {
        out::stderr_line("pgw: closing the clients took too long; exiting anyway");
    }
    exit::OK
}
