//! Issue 22: the fault matrix as a tier-2 suite (real sockets, `upstream-sim`, the whole
//! library through `GatewayClient` with SQLite telemetry): one test per fault family, each
//! asserting the outcome, the attempts and the telemetry rows (`rows = attempts + failed calls`,
//! one `attempt` row per upstream request, one `terminal_failure` row per failed call).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use polygateway::{ChatOptions, EnvMap, GatewayClient};
use serde_json::{Value, json};
use upstream_sim::script::Script;
use upstream_sim::{Sim, SimHandle};

const OK: &str = r#"{ "completion": { "content": "ok after the fault", "chunks": 3 } }"#;

/// What one call left behind.
struct Outcome {
    ok: bool,
    error_type: Option<&'static str>,
    attempts: u32,
    /// `(event_kind, http_status_code, error)` of every row, in write order.
    rows: Vec<(String, Option<i64>, Option<String>)>,
}

async fn run(responses: Value, stream: bool) -> Outcome {
    let script = Script::from_json(&json!({ "version": 1, "responses": responses }).to_string())
        .expect("valid script");
    let sim: SimHandle = Sim::start(script).expect("simulator starts");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rows.db");
    let mut env = EnvMap::new();
    for (k, v) in [
        ("LLM__SIM__1__BASE_URL", sim.base_url()),
        ("LLM__SIM__1__API_KEY", "sk-fault-matrix-0000".to_owned()),
        ("LLM__SIM__1__MODEL", "sim-model".to_owned()),
        ("LLM__SIM__1__TIMEOUT_S", "5".to_owned()),
        ("LLM__SIM__1__TTFT_TIMEOUT_S", "0.3".to_owned()),
        ("LLM__SIM__1__INTER_TOKEN_TIMEOUT_S", "0.2".to_owned()),
        ("LLM__RETRY__BACKOFF_BASE_S", "0.01".to_owned()),
        ("LLM__RETRY__BACKOFF_MAX_S", "0.02".to_owned()),
        ("PGW_TELEMETRY_BACKEND", "sqlite".to_owned()),
        (
            "PGW_TELEMETRY_SQLITE_PATH",
            db.to_string_lossy().into_owned(),
        ),
    ] {
        env.insert(k.to_owned(), v);
    }
    let client = GatewayClient::from_env_map("LLM", &env).expect("client assembles");
    let outcome = client
        .chat_outcome(
            vec![serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap()],
            ChatOptions::new().stream(stream),
        )
        .await;
    client.close().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT event_kind, http_status_code, error FROM llm_calls ORDER BY rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    Outcome {
        ok: outcome.result.is_ok(),
        error_type: outcome.result.as_ref().err().map(|e| e.type_name()),
        attempts: outcome.attempts,
        rows,
    }
}

impl Outcome {
    fn kinds(&self, kind: &str) -> usize {
        self.rows.iter().filter(|r| r.0 == kind).count()
    }

    /// The ledger of one call: one attempt row per attempt, one terminal row iff it failed.
    fn assert_ledger(&self) {
        assert_eq!(
            self.kinds("attempt"),
            self.attempts as usize,
            "{:?}",
            self.rows
        );
        assert_eq!(
            self.kinds("terminal_failure"),
            usize::from(!self.ok),
            "{:?}",
            self.rows
        );
        assert_eq!(
            self.rows.len(),
            self.attempts as usize + usize::from(!self.ok)
        );
    }
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn status(code: u16) -> Value {
    json!({ "status": code, "headers": [["content-type", "application/json"]],
            "chunks": [{ "text": "{\"error\":{\"message\":\"fault\"}}" }] })
}

#[tokio::test]
async fn fault_429_is_retried_then_succeeds() {
    let mut r429 = status(429);
    r429["headers"] = json!([["content-type", "application/json"], ["retry-after", "0"]]);
    let o = run(json!([r429, parse(OK)]), true).await;
    assert!(o.ok);
    assert_eq!(o.attempts, 2);
    assert_eq!(o.rows[0].1, Some(429));
    o.assert_ledger();
}

#[tokio::test]
async fn fault_5xx_every_time_exhausts_the_retries() {
    let o = run(json!([status(503)]), true).await;
    assert!(!o.ok);
    assert_eq!(o.error_type, Some("AllSourcesExhausted"));
    assert_eq!(o.attempts, 3, "RETRY__MAX_ATTEMPTS default");
    assert!(
        o.rows
            .iter()
            .filter(|r| r.0 == "attempt")
            .all(|r| r.1 == Some(503))
    );
    o.assert_ledger();
}

#[tokio::test]
async fn fault_401_is_not_retried() {
    let o = run(json!([status(401), parse(OK)]), true).await;
    assert!(!o.ok);
    assert_eq!(o.attempts, 1);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_hang_before_head_hits_ttft_then_retries() {
    let o = run(json!([{ "head": "hang" }, parse(OK)]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_mid_stream_stall_hits_inter_token_then_retries() {
    let stall = json!({ "completion": { "content": "a stalled answer", "chunks": 3,
                                         "inter_chunk_ms": 1000 } });
    let o = run(json!([stall, parse(OK)]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_truncated_stream_is_retried() {
    let cut = json!({ "completion": { "content": "partial", "chunks": 2, "finish_reason": null,
                                       "usage": null, "done": false } });
    let o = run(json!([cut, parse(OK)]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_connection_reset_mid_body_is_retried() {
    let reset = json!({ "end": "reset", "completion": { "content": "partial answer",
        "chunks": 2, "finish_reason": null, "usage": null, "done": false } });
    let o = run(json!([reset, parse(OK)]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_malformed_frames_and_garbage_body() {
    let garbage = json!({ "headers": [["content-type", "text/event-stream"]],
        "chunks": [{ "text": "data: {not json\n\ndata: \u{1}\u{2}\n\n" }] });
    let o = run(json!([garbage, parse(OK)]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
    // Non-stream: a 200 body that is not JSON.
    let not_json = json!({ "headers": [["content-type", "application/json"]],
        "chunks": [{ "text": "<html>oops</html>" }] });
    let o = run(json!([not_json, parse(OK)]), false).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 2);
    o.assert_ledger();
}

#[tokio::test]
async fn fault_absurd_usage_is_delivered_with_usage_unavailable() {
    let absurd = json!({ "completion": { "content": "fine", "usage":
        { "prompt_tokens": 18446744073709551615u64, "completion_tokens": 3 } } });
    let o = run(json!([absurd]), true).await;
    assert!(o.ok, "{:?}", o.rows);
    assert_eq!(o.attempts, 1);
    o.assert_ledger();
}
