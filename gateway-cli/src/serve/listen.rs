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
/// accepting again at once would spin, and a shorter pause would flood the log.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

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
        // The stop's `Ref` ends inside the select: nothing of it is held across an await.
        let accepted = tokio::select! {
            accepted = listener.accept() => Some(accepted),
            _ = accept_stop.wait_for(|stopping| *stopping) => None,
        };
        let Some(accepted) = accepted else { break };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                tracing::warn!(
                    code = "serve.accept_failed",
                    "accepting a connection failed: {e}"
                );
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
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
    // Stop listening before waiting: new clients are refused at once (a load balancer fails
    // over) instead of completing handshakes into a backlog nobody accepts.
    drop(listener);
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::Notify;

    /// Shutdown: the listener closes at once (new clients are refused) while an in-flight
    /// request is still being answered, and `serve` returns only after that request finished.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_refuses_new_clients_and_finishes_the_in_flight_request() {
        // `entered`: the handler holds the request; `release`: let it answer. A `Notify` keeps a
        // notification that comes before its waiter, so neither side can miss the other.
        let entered = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        let (held, let_go) = (Arc::clone(&entered), Arc::clone(&release));
        let app = Router::new().route(
            "/slow",
            get(move || {
                let (held, let_go) = (Arc::clone(&held), Arc::clone(&let_go));
                async move {
                    held.notify_one();
                    let_go.notified().await;
                    "done"
                }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = watch::channel(false);
        let server = tokio::spawn(serve(listener, app, Duration::from_secs(30), stop_rx));
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        entered.notified().await;
        stop_tx.send(true).unwrap();
        // The listener closes once the loop sees the stop; the request is still held.
        let refused = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match tokio::net::TcpStream::connect(addr).await {
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break true,
                    // A handshake the kernel completed into the backlog just before the close
                    // is reset by it; the next attempt finds no listener.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        tokio::task::yield_now().await;
                    }
                    Err(_) => break false,
                    Ok(_) => tokio::task::yield_now().await,
                }
            }
        })
        .await
        .unwrap_or(false);
        assert!(refused, "new clients are refused during the drain");
        assert!(
            !server.is_finished(),
            "serve waits for the in-flight request"
        );
        release.notify_one();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("done"), "{answer}");
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .unwrap()
            .unwrap();
    }
}
