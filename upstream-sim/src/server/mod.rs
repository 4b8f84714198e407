//! The in-process simulator (spec 15 "Handle and command line"): [`Sim`] starts the accept loop
//! on a tokio `TcpListener`, [`SimHandle`] inspects and steers it.
//!
//! Each accepted connection runs in a task of a `JoinSet` owned by the accept loop; shutting the
//! simulator down (or dropping its handle) ends the loop, which drops the set and so aborts every
//! connection — hung ones included. Requests are recorded after their answer is planned, and
//! each record wakes [`SimHandle::wait_for_requests`] through a `Notify` (no polling).

mod conn;
mod record;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

pub use record::RecordedRequest;

use crate::script::{Plan, RequestFacts, Script, ScriptError, ScriptRunner};

/// Why the simulator could not start or take a script.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The script is invalid.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// Binding or configuring the listening socket failed.
    #[error("upstream-sim could not listen: {0}")]
    Io(#[from] std::io::Error),
    /// [`Sim::start`] / [`Sim::start_at`] was called outside a tokio runtime.
    #[error("upstream-sim must be started inside a tokio runtime (or use Sim::start_in_thread)")]
    NoRuntime,
}

/// State shared by the accept loop, the connections and the handle.
#[derive(Debug)]
pub(crate) struct Shared {
    runner: Mutex<ScriptRunner>,
    requests: Mutex<Vec<RecordedRequest>>,
    recorded: Notify,
    connections: AtomicU64,
    received: AtomicU64,
    recording: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn plan(&self, facts: &RequestFacts) -> Plan {
        lock(&self.runner).next_plan(facts)
    }

    /// The script's keep-alive idle timeout, if any.
    pub(crate) fn keep_alive_idle_ms(&self) -> Option<u64> {
        lock(&self.runner).script().keep_alive_idle_ms
    }

    /// Whether requests are kept (see [`SimHandle::set_recording`]).
    pub(crate) fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    /// Counts a received request, keeps it when recording, and wakes the waiters.
    pub(crate) fn record(&self, request: Option<RecordedRequest>) {
        if let Some(request) = request {
            lock(&self.requests).push(request);
        }
        self.received.fetch_add(1, Ordering::Release);
        self.recorded.notify_waiters();
    }
}

/// Entry points that start a simulator.
#[derive(Debug, Clone, Copy)]
pub struct Sim;

impl Sim {
    /// Starts a simulator for `script` on an ephemeral `127.0.0.1` port, on the current tokio
    /// runtime (any flavour; on a `current_thread` runtime it shares that thread).
    ///
    /// Errors: [`SimError::Script`] for an invalid script, [`SimError::Io`] if binding fails,
    /// [`SimError::NoRuntime`] outside a runtime.
    pub fn start(script: Script) -> Result<SimHandle, SimError> {
        Self::start_at(SocketAddr::from(([127, 0, 0, 1], 0)), script)
    }

    /// Like [`Sim::start`], on `addr` (port 0 picks a free port).
    pub fn start_at(addr: SocketAddr, script: Script) -> Result<SimHandle, SimError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| SimError::NoRuntime)?;
        let runner = ScriptRunner::new(script)?;
        let listener = bind(addr)?;
        let _entered = runtime.enter();
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            runner: Mutex::new(runner),
            requests: Mutex::new(Vec::new()),
            recorded: Notify::new(),
            connections: AtomicU64::new(0),
            received: AtomicU64::new(0),
            recording: AtomicBool::new(true),
        });
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        runtime.spawn(accept_loop(listener, Arc::clone(&shared), shutdown_rx));
        Ok(SimHandle {
            addr,
            shared,
            shutdown_tx,
        })
    }

    /// Starts a simulator on its own OS thread running a `current_thread` runtime (the benchmark
    /// setup of 05 R-56: the simulator on one core, the load generator on another). Works from
    /// sync or async code; the thread ends when the handle shuts down or is dropped.
    pub fn start_in_thread(addr: SocketAddr, script: Script) -> Result<SimHandle, SimError> {
        let runner = ScriptRunner::new(script)?;
        let listener = bind(addr)?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SimHandle, SimError>>();
        std::thread::Builder::new()
            .name("upstream-sim".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(SimError::Io(e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(SimError::Io(e)));
                            return;
                        }
                    };
                    let addr = match listener.local_addr() {
                        Ok(a) => a,
                        Err(e) => {
                            let _ = ready_tx.send(Err(SimError::Io(e)));
                            return;
                        }
                    };
                    let shared = Arc::new(Shared {
                        runner: Mutex::new(runner),
                        requests: Mutex::new(Vec::new()),
                        recorded: Notify::new(),
                        connections: AtomicU64::new(0),
                        received: AtomicU64::new(0),
                        recording: AtomicBool::new(true),
                    });
                    let (shutdown_tx, shutdown_rx) = watch::channel(false);
                    let handle = SimHandle {
                        addr,
                        shared: Arc::clone(&shared),
                        shutdown_tx,
                    };
                    if ready_tx.send(Ok(handle)).is_ok() {
                        accept_loop(listener, shared, shutdown_rx).await;
                    }
                });
            })?;
        ready_rx
            .recv()
            .map_err(|_| SimError::Io(std::io::Error::other("simulator thread ended early")))?
    }
}

fn bind(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    shared.connections.fetch_add(1, Ordering::Relaxed);
                    connections.spawn(conn::serve(stream, Arc::clone(&shared)));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::debug!(error = %e, "upstream-sim accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
    // Dropping `connections` aborts every connection task, hung ones included.
}

/// Handle on a running simulator. Dropping it shuts the simulator down.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown_tx: watch::Sender<bool>,
}

impl SimHandle {
    /// The bound socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI base URL, `http://<addr>/v1`. Paths without the `/v1` prefix are served too.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests received so far, in arrival order, with secrets redacted.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// How many requests were received so far (recorded or not).
    pub fn request_count(&self) -> u64 {
        self.shared.received.load(Ordering::Acquire)
    }

    /// Turns recording on (the default) or off. Load runs turn it off so memory stays flat;
    /// requests are still counted, so [`SimHandle::wait_for_requests`] keeps working.
    pub fn set_recording(&self, on: bool) {
        self.shared.recording.store(on, Ordering::Relaxed);
    }

    /// How many TCP connections were accepted so far (keep-alive and pool-reuse checks, 05
    ///
    pub fn connection_count(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Whether at least one request was received and every request carried this API key
    /// (see [`RecordedRequest::auth_matches`]). Compares digests; the key is not stored.
    pub fn auth_matches(&self, key: &str) -> bool {
        let requests = lock(&self.shared.requests);
        !requests.is_empty() && requests.iter().all(|r| r.auth_matches(key))
    }

    /// Waits until at least `n` requests were received (counted once their answer is planned,
    /// before it is sent) and returns the recorded requests. Event-driven: no polling, no sleep.
    pub async fn wait_for_requests(&self, n: u64) -> Vec<RecordedRequest> {
        loop {
            let notified = self.shared.recorded.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.request_count() >= n {
                return self.requests();
            }
            notified.await;
        }
    }

    /// Replaces the script. Selection counters and the fault sequence restart at request 0;
    /// recorded requests are kept. Errors: the new script's validation error (the old script
    /// stays in force).
    pub fn set_script(&self, script: Script) -> Result<(), ScriptError> {
        let runner = ScriptRunner::new(script)?;
        *lock(&self.shared.runner) = runner;
        Ok(())
    }

    /// Stops accepting and aborts every open connection (hung ones included). Idempotent.
    pub fn shutdown(&self) {
        let _ = self.shutdown_tx.send(true);
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}
