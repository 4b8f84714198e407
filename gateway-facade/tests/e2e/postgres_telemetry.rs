//! `PGW_TELEMETRY_BACKEND=postgres` through the facade (cargo feature `postgres`; 80 T-42,
//! T-53..T-58; 95 CF-394) against the real server on 127.0.0.1:5432 and `upstream-sim`.
//! Run: `cargo test -p gateway-facade --features postgres --test postgres_telemetry`.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::client_support;

use client_support::{chat_env, sim, sim_completion};
use polygateway::{ChatOptions, GatewayClient};

const SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";

async fn admin() -> tokio_postgres::Client {
    let (client, conn) =
        tokio_postgres::connect(&format!("{SERVER}?sslmode=disable"), tokio_postgres::NoTls)
            .await
            .expect("PostgreSQL on 127.0.0.1:5432 (user postgres, db test) must be running");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// T-42, T-47 (`auto`), R-24: every attempt row and the terminal row of a failed call land in
/// Postgres; `quiesce()` flushes them. A fresh schema, dropped at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t_42_postgres_backend_writes_attempt_and_terminal_rows() {
    let schema = format!("pgw_facade_{}", std::process::id());
    let db = admin().await;
    db.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
    ))
    .await
    .unwrap();
    let sim =
        sim(r#"{"version":1,"responses":[{"status":503,"chunks":[{"text":"unavailable"}]}]}"#);
    let dsn = format!(
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test?sslmode=disable&options=-c%20search_path%3D{schema}"
    );
    let env = chat_env(
        &sim,
        &[
            ("PGW_TELEMETRY_BACKEND", "postgres"),
            ("PGW_TELEMETRY_PG_DSN", &dsn),
            ("PGW_TELEMETRY_SCHEMA_MODE", "auto"),
            ("LLM__RETRY__MAX_ATTEMPTS", "3"),
        ],
    );
    let client = GatewayClient::from_env_map("LLM", &env).expect("client assembles");
    let outcome = client.chat_outcome("hi", ChatOptions::new()).await;
    assert!(outcome.result.is_err());
    client.quiesce().await;
    let status = client.telemetry_status();
    assert_eq!(status.backend, "postgres");
    assert_eq!(
        (status.written_rows, status.dropped_rows),
        (4, 0),
        "{status:?}"
    );
    client.close().await;
    let kinds: Vec<(String, i64)> = db
        .query(
            &format!("SELECT event_kind, count(*) FROM {schema}.llm_calls GROUP BY 1 ORDER BY 1"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    db.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
    assert_eq!(
        kinds,
        [
            ("attempt".to_owned(), 3),
            ("terminal_failure".to_owned(), 1)
        ]
    );
}

/// CF-394, T-56: a DSN that passes the scheme check but cannot be parsed is not an assembly
/// error: the client assembles, the call succeeds, telemetry is fatal with a secret-free reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cf_394_malformed_dsn_is_fatal_and_the_call_succeeds() {
    let sim = sim_completion(r#"{"content":"ok"}"#);
    let env = chat_env(
        &sim,
        &[
            ("PGW_TELEMETRY_BACKEND", "postgres"),
            (
                "PGW_TELEMETRY_PG_DSN",
                "postgres://app:hunter2-secret@127.0.0.1:notaport/test",
            ),
        ],
    );
    let client = GatewayClient::from_env_map("LLM", &env).expect("client assembles");
    let r = client
        .chat("hi", ChatOptions::new())
        .await
        .expect("call succeeds");
    assert_eq!(r.content, "ok");
    client.quiesce().await;
    let status = client.telemetry_status();
    assert!(status.fatal && !status.degraded, "{status:?}");
    assert!(status.dropped_rows >= 1);
    let reason = status.reason.unwrap();
    assert!(
        reason.contains("PGW_TELEMETRY_PG_DSN") && !reason.contains("hunter2"),
        "{reason}"
    );
    client.close().await;
}
