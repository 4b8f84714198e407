//! A raw HTTP/1.1 server for the facts the simulator does not record (connection reuse and
//! client disconnects), a refused port and a listener whose accept queue is full (a connect that
//! hangs). Event-driven: every fact arrives on a channel, nothing sleeps.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What the raw server does after writing its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Serve the next request on the same connection (keep-alive).
    KeepAlive,
    /// Close the connection.
    Close,
    /// Keep the connection open, reading until the client leaves.
    Hold,
}

/// A raw HTTP/1.1 server that answers every request with the same bytes, counts accepted
/// connections, and reports when a client closes its connection.
#[derive(Debug)]
pub struct RawServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    accepted: Arc<AtomicUsize>,
    /// One message per connection the client closed (read returned 0 or failed).
    pub closed: mpsc::UnboundedReceiver<()>,
    /// One message per request head received.
    pub requests: mpsc::UnboundedReceiver<()>,
}

impl RawServer {
    /// Starts the server. `response` is written after each request, then the connection is
    /// handled per `after`.
    pub async fn start(response: Vec<u8>, after: After) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let (req_tx, requests) = mpsc::unbounded_channel();
        let counter = Arc::clone(&accepted);
        let response = Arc::new(response);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, Ordering::SeqCst);
                let closed_tx = closed_tx.clone();
                let req_tx = req_tx.clone();
                let response = Arc::clone(&response);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut scratch = [0u8; 4096];
                    loop {
                        // Read one request: head plus Content-Length body.
                        let complete = loop {
                            if let Some(end) = find(&buf, b"\r\n\r\n") {
                                let head =
                                    String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                                let len = head
                                    .lines()
                                    .find_map(|l| l.strip_prefix("content-length:"))
                                    .and_then(|v| v.trim().parse::<usize>().ok())
                                    .unwrap_or(0);
                                if buf.len() >= end + 4 + len {
                                    buf.drain(..end + 4 + len);
                                    break true;
                                }
                            }
                            match stream.read(&mut scratch).await {
                                Ok(0) | Err(_) => break false,
                                Ok(n) => buf.extend_from_slice(&scratch[..n]),
                            }
                        };
                        if !complete {
                            let _ = closed_tx.send(());
                            return;
                        }
                        let _ = req_tx.send(());
                        if stream.write_all(&response).await.is_err() {
                            let _ = closed_tx.send(());
                            return;
                        }
                        if after == After::Close {
                            return;
                        }
                        if after == After::Hold {
                            loop {
                                match stream.read(&mut scratch).await {
                                    Ok(0) | Err(_) => {
                                        let _ = closed_tx.send(());
                                        return;
                                    }
                                    Ok(_) => {}
                                }
                            }
                        }
                    }
                });
            }
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            accepted,
            closed,
            requests,
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A base URL whose port refuses connections (a listener bound, then closed).
pub fn refused_base_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/v1")
}

/// A listener whose accept queue is full: further SYNs are dropped, so a connect hangs.
/// Returns the listener (kept alive) and the streams filling its queue.
pub async fn full_backlog() -> (
    socket2::Socket,
    std::net::SocketAddr,
    Vec<tokio::net::TcpStream>,
) {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    sock.listen(0).unwrap();
    let addr = sock.local_addr().unwrap().as_socket().unwrap();
    let mut fill = Vec::new();
    // Linux queues backlog + 1 connections; fill until a connect stops completing.
    for _ in 0..16 {
        let connect = tokio::net::TcpStream::connect(addr);
        match tokio::time::timeout(std::time::Duration::from_millis(100), connect).await {
            Ok(Ok(s)) => fill.push(s),
            _ => break,
        }
    }
    (sock, addr, fill)
}
