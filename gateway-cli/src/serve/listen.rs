//! The accept loop of `pgw serve`: HTTP/1.1 connections served by hyper with a header read
//! timeout, and the graceful shutdown that lets in-flight requests finish.
//!
//! Why not `axum::serve`: it builds hyper's connection without a timer, so hyper's header read
//! timeout never runs, and a client that opens a connection and sends half a request line (or
//! nothing at all) holds it, and a task and a file descriptor, forever. Here every connection
//! has `PGW_SERVE_CLIENT_TIMEOUT_S` to deliver each request's headers, which also closes idle
//! keep-alive connections after that long (hyper starts the timer when it waits for the next
//! request's head).

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The pause after an accept error that is not about one connection (too many open files):
/// accepting again at once would spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `stop` turns `true`; then stops accepting, asks every open
/// connection to finish its in-flight request and close, and returns when all have closed.
/// `header_timeout` bounds each request's headers and each idle keep-alive wait.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    header_timeout: Duration,
    stop: watch::Receiver<bool>,
) {
    // Each connection task holds a receiver; `closed()` resolves when the last one is gone.
    let (open_tx, open_rx) = watch::channel(());
    let mut accept_stop = stop.clone();
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    tracing::warn!(code = "serve.accept_failed", "accepting a connection failed: {e}");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            _ = accept_stop.wait_for(|stopping| *stopping) => break,
        };
        // Nagle's algorithm off: a streamed answer is one write per frame, and a small write
        // behind an unacknowledged one would otherwise wait for the client's delayed ACK.
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut conn_stop = stop.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            let mut draining = false;
            loop {
                tokio::select! {
                    _served = conn.as_mut() => break,
                    _ = conn_stop.wait_for(|stopping| *stopping), if !draining => {
                        draining = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(open);
        });
    }
    drop(open_rx);
    open_tx.closed().await;
}

/// Errors of one accepted connection (the client gave up before the accept): nothing to wait
/// for.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
