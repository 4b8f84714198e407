//! Shared test support: a fresh schema per test on the real server (127.0.0.1:5432, user
//! `postgres`, database `test`, trust auth), dropped at the end; reading rows back; a manual
//! clock; a log capture. Fails loudly when the server is unreachable (never a silent skip).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use contract_tests::telemetry::{Stored, StoredRow};
use gateway_ports::Clock;
use tokio_postgres::types::Type;

/// The server every test uses (CI's service).
pub const SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// One throwaway schema (spec 95 §16 "throwaway schema"); dropped on `Drop`.
pub struct TestSchema {
    pub name: String,
}

/// A plain connection to the test server (for setup and read-back).
pub async fn connect(search_path: Option<&str>) -> tokio_postgres::Client {
    let (client, conn) =
        tokio_postgres::connect(&format!("{SERVER}?sslmode=disable"), tokio_postgres::NoTls)
            .await
            .expect("PostgreSQL on 127.0.0.1:5432 (user postgres, db test) must be running");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    if let Some(schema) = search_path {
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .await
            .unwrap();
    }
    client
}

impl TestSchema {
    pub async fn new(tag: &str) -> Self {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("pgw_{tag}_{}_{n}", std::process::id());
        let client = connect(None).await;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .await
            .unwrap();
        Self { name }
    }

    /// A DSN whose sessions use this schema (search_path) and carry `app` as application name.
    pub fn dsn(&self, app: &str) -> String {
        format!(
            "{SERVER}?sslmode=disable&application_name={app}&options=-c%20search_path%3D{}",
            self.name
        )
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        connect(Some(&self.name)).await
    }

    /// Every row of `llm_calls`, ordered by `call_id` (writers run concurrently, so there
    /// is no other stable order), normalised for the contract suite: booleans as `Int`,
    /// JSONB as compact JSON text.
    pub async fn rows(&self) -> Vec<StoredRow> {
        read_rows(&self.client().await).await
    }

    /// Physical column names in order.
    pub async fn columns(&self) -> Vec<String> {
        self.client()
            .await
            .query(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = $1 \
                 AND table_name = 'llm_calls' ORDER BY ordinal_position",
                &[&self.name],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    }
}

pub async fn read_rows(client: &tokio_postgres::Client) -> Vec<StoredRow> {
    let rows = client
        .query("SELECT * FROM llm_calls ORDER BY call_id", &[])
        .await
        .unwrap();
    rows.iter()
        .map(|row| {
            let mut out = StoredRow::new();
            for (i, col) in row.columns().iter().enumerate() {
                let ty = col.type_();
                let v = if *ty == Type::TEXT || *ty == Type::VARCHAR {
                    row.get::<_, Option<String>>(i).map(Stored::Text)
                } else if *ty == Type::INT4 {
                    row.get::<_, Option<i32>>(i)
                        .map(|x| Stored::Int(i64::from(x)))
                } else if *ty == Type::INT8 {
                    row.get::<_, Option<i64>>(i).map(Stored::Int)
                } else if *ty == Type::FLOAT8 {
                    row.get::<_, Option<f64>>(i).map(Stored::Real)
                } else if *ty == Type::BOOL {
                    row.get::<_, Option<bool>>(i)
                        .map(|b| Stored::Int(i64::from(b)))
                } else if *ty == Type::JSONB || *ty == Type::JSON {
                    row.get::<_, Option<serde_json::Value>>(i)
                        .map(|j| Stored::Text(j.to_string()))
                } else if *ty == Type::TIMESTAMPTZ {
                    row.get::<_, Option<SystemTime>>(i)
                        .map(|_| Stored::Text("<timestamptz>".into()))
                } else {
                    panic!("unexpected column type {ty} of {}", col.name())
                };
                out.insert(col.name().to_owned(), v.unwrap_or(Stored::Null));
            }
            out
        })
        .collect()
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs inside the test's runtime: use a separate thread with its own runtime.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let client = connect(None).await;
                let _ = client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                    .await;
            });
        })
        .join();
    }
}

/// A clock the test moves by hand (the recorder reads its cooldown through it).
#[derive(Debug, Default)]
pub struct ManualClock {
    offset: Mutex<Duration>,
}

impl ManualClock {
    pub fn advance(&self, by: Duration) {
        *self.offset.lock().unwrap() += by;
    }
}

impl Clock for ManualClock {
    fn monotonic(&self) -> Duration {
        *self.offset.lock().unwrap()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + self.monotonic()
    }
}

/// Captures every log line emitted under the returned guard (including the recorder's worker,
/// which inherits the dispatcher current at construction).
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let sink = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sessions of the test server whose application name is `app`.
pub async fn sessions(app: &str) -> i64 {
    connect(None)
        .await
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .await
        .unwrap()
        .get(0)
}
