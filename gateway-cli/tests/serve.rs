//! `pgw serve` end to end (README D33): the built `pgw` serves the OpenAI HTTP API in front of a
//! `pgw sim` process, driven by a real HTTP client (reqwest) over loopback sockets.
//!
//! Every test starts its own simulator and server on port 0; nothing sleeps to hit a timing
//! window (the drain test waits for the simulator to have received the request).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use support::{KEY, SimProcess};

/// The caller token of the tests' tenant `acme`.
const TOKEN: &str = "tok-acme-0123456789";

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/serve")
        .join(format!("{name}.json"))
}

/// A `pgw serve` process; killed on drop.
struct Serve {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Serve {
    /// Starts `pgw serve` with one chat source `LLM__SIM__1` at `sim`, an embedding scope when
    /// `embed` is given, fast retries and `extra` entries.
    fn start(sim: &SimProcess, embed: Option<&SimProcess>, extra: &[(&str, &str)]) -> Self {
        Self::start_at(&sim.base_url(), embed.map(SimProcess::base_url), extra)
    }

    fn start_at(sim: &str, embed: Option<String>, extra: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgw"));
        cmd.env_clear()
            .current_dir(dir.path())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env(
                "PGW_SERVE_KEYS",
                format!("{TOKEN}=acme,tok-beta-0123456789=beta"),
            )
            .env("LLM__SIM__1__BASE_URL", sim)
            .env("LLM__SIM__1__API_KEY", KEY)
            .env("LLM__SIM__1__MODEL", "m")
            .env("LLM__RETRY__BACKOFF_BASE_S", "0.01")
            .env("LLM__RETRY__BACKOFF_MAX_S", "0.02");
        if let Some(e) = embed {
            cmd.env("PGW_SERVE_EMBED_SCOPES", "EMBED")
                .env("EMBED__SIM__1__BASE_URL", e)
                .env("EMBED__SIM__1__API_KEY", KEY)
                .env("EMBED__SIM__1__MODEL", "e");
        }
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if !line.trim().starts_with("127.0.0.1:") {
            let out = child.wait_with_output().unwrap();
            panic!(
                "pgw serve printed {line:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Self {
            child,
            base: format!("http://{}", line.trim()),
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the process and returns its stderr.
    fn stderr(mut self) -> String {
        use std::io::Read as _;
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn chat_body(stream: bool) -> Value {
    json!({"model": "llm", "messages": [{"role": "user", "content": "hi there"}], "stream": stream})
}

async fn post(serve: &Serve, path: &str, token: Option<&str>, body: &Value) -> reqwest::Response {
    let mut req = client().post(serve.url(path)).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

/// The message of the `model_not_found` 404 that `/v1/embeddings` answers for `model`.
async fn embeddings_404(serve: &Serve, model: &str) -> String {
    let body = json!({"model": model, "input": "a"});
    let r = post(serve, "/v1/embeddings", Some(TOKEN), &body).await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "model_not_found", "{v}");
    v["error"]["message"].as_str().unwrap().to_owned()
}

/// A 503 or 429 answer: its `Retry-After` header and its JSON body.
async fn unavailable(r: reqwest::Response) -> (Option<String>, Value) {
    let status = r.status().as_u16();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let v: Value = r.json().await.unwrap();
    assert!(status == 503 || status == 429, "{status} {v}");
    (retry_after, v)
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

// covers: D33
#[tokio::test(flavor = "multi_thread")]
async fn d33_non_stream_chat_is_an_openai_chat_completion() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[]);
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-pgw-source"], "sim_1");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion", "{v}");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "Hello from the simulator"
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["usage"]["total_tokens"].as_u64().unwrap() > 0, "{v}");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"), "{v}");
    // The upstream key never reaches the caller.
    assert!(!v.to_string().contains(KEY));
}

// covers: D33 (stream, stream_options.include_usage, [DONE])
#[tokio::test(flavor = "multi_thread")]
async fn d33_stream_chat_is_sse_chunks_with_usage_and_done() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[]);
    let mut body = chat_body(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = post(&serve, "/v1/chat/completions", Some(TOKEN), &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let text = r.text().await.unwrap();
    let data = sse_data(&text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{text}");
    let frames: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = frames
        .iter()
        .filter_map(|f| f["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Hello from the simulator");
    assert!(
        frames
            .iter()
            .all(|f| f["object"] == "chat.completion.chunk")
    );
    assert_eq!(frames[0]["choices"][0]["delta"]["role"], "assistant");
    let usage = frames.last().unwrap();
    assert_eq!(usage["choices"], json!([]), "{usage}");
    assert!(usage["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        frames[frames.len() - 2]["choices"][0]["finish_reason"],
        "stop"
    );
    // Without include_usage there is no usage frame.
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(true),
    )
    .await;
    let text = r.text().await.unwrap();
    assert!(!text.contains("\"usage\""), "{text}");
}

// covers: D33 (a retried call is invisible to the client)
#[tokio::test(flavor = "multi_thread")]
async fn d33_retried_call_is_invisible_to_the_client() {
    let sim = SimProcess::start(&fixture("retry"));
    let serve = Serve::start(&sim, None, &[]);
    for stream in [false, true] {
        let r = post(
            &serve,
            "/v1/chat/completions",
            Some(TOKEN),
            &chat_body(stream),
        )
        .await;
        assert_eq!(r.status(), 200);
        if !stream {
            assert_eq!(r.headers()["x-pgw-attempts"], "2");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["choices"][0]["message"]["content"], "second time lucky");
        } else {
            let text = r.text().await.unwrap();
            assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
            assert!(!text.contains("error"), "{text}");
            let frames = json_frames(&text);
            let content: String = frames
                .iter()
                .filter_map(|f| f["choices"][0]["delta"]["content"].as_str())
                .collect();
            // The content arrives as the upstream's deltas, not as one replayed frame.
            assert_eq!(content, "second time lucky", "{text}");
            assert!(frames.len() >= 4, "{text}");
        }
    }
    let metrics = client()
        .get(serve.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("pgw_retries_total{scope=\"llm\"} 1"),
        "{metrics}"
    );
    for needle in [
        "pgw_calls_total{scope=\"llm\",source=\"sim_1\",outcome=\"ok\"} 2",
        "pgw_breaker_state{scope=\"llm\",source=\"sim_1\"} 0",
        "pgw_ttft_ms_count{scope=\"llm\",source=\"sim_1\"} 2",
        "pgw_call_latency_ms_count{scope=\"llm\"} 2",
        "pgw_tokens_total{scope=\"llm\",source=\"sim_1\",kind=\"completion\"}",
        "pgw_http_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 2",
    ] {
        assert!(metrics.contains(needle), "{needle} missing in {metrics}");
    }
}

// covers: D33 (a hedged call is invisible to the client)
#[tokio::test(flavor = "multi_thread")]
async fn d33_hedged_call_is_invisible_to_the_client() {
    let sim = SimProcess::start(&fixture("hedge"));
    let serve = Serve::start(
        &sim,
        None,
        &[
            ("LLM__SIM__2__BASE_URL", &sim.base_url()),
            ("LLM__SIM__2__API_KEY", KEY),
            ("LLM__SIM__2__MODEL", "m"),
            ("LLM__HEDGE__AFTER_S", "0.2"),
        ],
    );
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-pgw-hedges"], "1");
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"], "hedge leg wins",
        "{v}"
    );
    let metrics = client()
        .get(serve.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("pgw_hedges_total{scope=\"llm\"} 1"),
        "{metrics}"
    );
}

// covers: D33 (embeddings, float and base64)
#[tokio::test(flavor = "multi_thread")]
async fn d33_embeddings_float_and_base64() {
    let sim = SimProcess::start(&fixture("hello"));
    let emb = SimProcess::start(&support::fixture("embed"));
    let serve = Serve::start(
        &sim,
        Some(&emb),
        &[("PGW_SERVE_ALIASES", "text-embedding-3-small=embed")],
    );
    let body = json!({"model": "text-embedding-3-small", "input": ["a", "bb"]});
    let r = post(&serve, "/v1/embeddings", Some(TOKEN), &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"][1]["index"], 1);
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 4);
    // The model that answered, as in a chat answer (not the alias the request named).
    assert_ne!(v["model"], "text-embedding-3-small", "{v}");
    assert!(!v["model"].as_str().unwrap().is_empty(), "{v}");
    let body = json!({"model": "embed", "input": "a", "encoding_format": "base64"});
    let v: Value = post(&serve, "/v1/embeddings", Some(TOKEN), &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["data"][0]["embedding"].as_str().unwrap().len(), 24, "{v}"); // 4 × f32 = 16 bytes
    // A chat model on the embeddings route is a 404 naming the model; it lists the embedding
    // names only (the chat scope `llm` is not one of them).
    let message = embeddings_404(&serve, "llm").await;
    assert!(
        message.ends_with("served: embed, text-embedding-3-small"),
        "{message}"
    );
    // GET /v1/models lists scopes and aliases.
    let v: Value = client()
        .get(serve.url("/v1/models"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["embed", "llm", "text-embedding-3-small"]);
}

// covers: D33 (caller keys; tokens never echoed)
#[tokio::test(flavor = "multi_thread")]
async fn d33_auth_failures_are_openai_shaped_401s() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[]);
    for token in [None, Some("tok-wrong-0123456789"), Some("")] {
        let r = post(&serve, "/v1/chat/completions", token, &chat_body(false)).await;
        assert_eq!(r.status(), 401);
        let text = r.text().await.unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["code"], "invalid_api_key", "{v}");
        assert!(
            !text.contains("tok-wrong") && !text.contains(TOKEN),
            "{text}"
        );
    }
    let r = client().get(serve.url("/v1/models")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    // healthz and metrics need no key.
    let r = client().get(serve.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let stderr = serve.stderr();
    assert!(!stderr.contains(TOKEN) && !stderr.contains(KEY), "{stderr}");
}

// covers: D33 (OpenAI-shaped 400s, body limit, unknown model)
#[tokio::test(flavor = "multi_thread")]
async fn d33_bad_bodies_get_openai_shaped_errors() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[("PGW_SERVE_MAX_BODY_BYTES", "2000")]);
    let send_raw = |body: String| {
        client()
            .post(serve.url("/v1/chat/completions"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let r = send_raw("{not json".into()).await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    // The message says why, not only where.
    let deep = format!("{{\"a\":{}{}}}", "[".repeat(300), "]".repeat(300));
    let v: Value = send_raw(deep).await.unwrap().json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("recursion limit exceeded"), "{message}");
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &json!({"model": "llm", "messages": "hi"}),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["param"], "messages");
    let big = json!({"model": "llm", "messages": [{"role": "user", "content": "x".repeat(5000)}]});
    let r = send_raw(big.to_string()).await.unwrap();
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "request_too_large", "{v}");
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &json!({"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]}),
    )
    .await;
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "model_not_found");
    assert!(v["error"]["message"].as_str().unwrap().contains("llm"));
    // No embedding scope configured: the 404 names the key that serves one.
    let message = embeddings_404(&serve, "embed").await;
    assert!(
        message.contains("serves no embedding scope (set PGW_SERVE_EMBED_SCOPES"),
        "{message}"
    );
}

// covers: D33 (gateway errors: type, reason_code, retry_after_s, Retry-After)
#[tokio::test(flavor = "multi_thread")]
async fn d33_gateway_errors_carry_type_reason_and_retry_after() {
    let sim = SimProcess::start(&fixture("rejected"));
    let serve = Serve::start(&sim, None, &[("LLM__RETRY__MAX_ATTEMPTS", "1")]);
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(false),
    )
    .await;
    let (retry_after, v) = unavailable(r).await;
    assert!(v["error"]["type"].is_string(), "{v}");
    assert!(v["error"].get("reason_code").is_some(), "{v}");
    let hint = v["error"]["retry_after_s"].as_f64();
    assert!(hint.is_some(), "{v}");
    assert_eq!(
        retry_after,
        hint.map(|h| (h.ceil() as u64).to_string()),
        "{v}"
    );
    let metrics = client()
        .get(serve.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("pgw_errors_total{scope=\"llm\",type="),
        "{metrics}"
    );
}

// covers: D33, case 032 (a day-long upstream Retry-After: the server answers at once with the
// hint instead of holding the request; the scope sets no RETRY__MAX_HINT_S)
#[tokio::test(flavor = "multi_thread")]
async fn d33_a_day_long_retry_after_is_answered_at_once_with_the_hint() {
    let sim = SimProcess::start(&fixture("retry_after_day"));
    let serve = Serve::start(&sim, None, &[]);
    let started = tokio::time::Instant::now();
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        post(
            &serve,
            "/v1/chat/completions",
            Some(TOKEN),
            &chat_body(false),
        ),
    )
    .await
    .expect("the request is answered, not held for the hint");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let (retry_after, v) = unavailable(r).await;
    assert_eq!(v["error"]["retry_after_s"].as_f64(), Some(86_400.0), "{v}");
    assert_eq!(retry_after.as_deref(), Some("86400"), "{v}");
}

/// A raw HTTP/1.1 exchange with `serve`: sends `request`, then reads until the server closes
/// the connection or `bound` passes; returns what it read.
fn raw_exchange(serve: &Serve, request: &[u8], bound: std::time::Duration) -> String {
    use std::io::{Read as _, Write as _};
    let addr = serve.base.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(bound)).unwrap();
    tcp.write_all(request).unwrap();
    let mut got = Vec::new();
    let _ = tcp.read_to_end(&mut got); // EOF, or the bound as an error
    String::from_utf8_lossy(&got).into_owned()
}

// covers: D33 (an unknown caller is refused from its headers, before its body is read: a client
// that announces a body and never sends it gets its 401 at once, and no `100 Continue`)
#[test]
fn d33_unknown_caller_is_refused_before_its_body() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[]);
    let bound = std::time::Duration::from_secs(20);
    for headers in [
        "Content-Length: 1000\r\n",
        "Content-Length: 1000\r\nAuthorization: Bearer tok-wrong-0123456789\r\nExpect: 100-continue\r\n",
    ] {
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n{{}}"
        );
        let started = tokio::time::Instant::now();
        let got = raw_exchange(&serve, request.as_bytes(), bound);
        assert!(got.starts_with("HTTP/1.1 401"), "{got:?}");
        assert!(!got.contains("100 Continue"), "{got:?}");
        assert!(got.contains("invalid_api_key"), "{got:?}");
        assert!(started.elapsed() < bound, "answered, not held");
    }
}

// covers: D33 (a client that stalls is not served forever: half a request line is closed, and a
// body that stops arriving fails with a 400, after PGW_SERVE_CLIENT_TIMEOUT_S)
#[test]
fn d33_stalled_clients_are_closed_after_the_client_timeout() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[("PGW_SERVE_CLIENT_TIMEOUT_S", "1")]);
    let bound = std::time::Duration::from_secs(20);
    let started = tokio::time::Instant::now();
    let got = raw_exchange(&serve, b"POST /v1/chat/compl", bound);
    assert!(
        started.elapsed() < bound,
        "the half request line was closed: {got:?}"
    );
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"model\":"
    );
    let started = tokio::time::Instant::now();
    let got = raw_exchange(&serve, request.as_bytes(), bound);
    assert!(got.starts_with("HTTP/1.1 400"), "{got:?}");
    assert!(started.elapsed() < bound);
}

// covers: D33 (errors are OpenAI-shaped, a wrong method too)
#[tokio::test(flavor = "multi_thread")]
async fn d33_a_wrong_method_is_an_openai_shaped_405() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[]);
    let r = client()
        .get(serve.url("/v1/chat/completions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "method_not_allowed", "{v}");
}

// covers: D33 (per-key limits reuse the rate limiter)
#[tokio::test(flavor = "multi_thread")]
async fn d33_per_key_rpm_limit_gives_429_with_retry_after() {
    let sim = SimProcess::start(&fixture("hello"));
    let serve = Serve::start(&sim, None, &[("PGW_SERVE_KEY_RPM", "2")]);
    for _ in 0..2 {
        let r = post(
            &serve,
            "/v1/chat/completions",
            Some(TOKEN),
            &chat_body(false),
        )
        .await;
        assert_eq!(r.status(), 200);
    }
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(false),
    )
    .await;
    assert_eq!(r.status(), 429);
    let retry_after: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    assert_eq!(v["error"]["reason_code"], "key_rpm", "{v}");
    // The other key has its own budget.
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some("tok-beta-0123456789"),
        &chat_body(false),
    )
    .await;
    assert_eq!(r.status(), 200);
}

// covers: D33 (graceful shutdown drains in-flight calls on SIGTERM)
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn d33_sigterm_drains_the_in_flight_call() {
    let script =
        upstream_sim::script::Script::from_json(&std::fs::read_to_string(fixture("slow")).unwrap())
            .unwrap();
    let sim = upstream_sim::Sim::start(script).unwrap();
    let mut serve = Serve::start_at(&sim.base_url(), None, &[]);
    let url = serve.url("/v1/chat/completions");
    let call = tokio::spawn(async move {
        let r = client()
            .post(url)
            .bearer_auth(TOKEN)
            .json(&chat_body(false))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    });
    // The call is in flight once the simulator has its request (it answers after 800 ms).
    sim.wait_for_requests(1).await;
    let pid = serve.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let (status, body) = call.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("finished while draining"), "{body}");
    let code = tokio::task::spawn_blocking(move || serve.child.wait().unwrap().code())
        .await
        .unwrap();
    assert_eq!(code, Some(0));
}

// covers: D33 (caller keys are required; configuration errors name the key, exit 3)
#[test]
fn d33_serve_without_caller_keys_refuses_to_start() {
    let pgw = support::Pgw::new();
    let (code, stdout, stderr) = pgw.run(
        &["serve", "--listen", "127.0.0.1:0"],
        &[
            ("LLM__SIM__1__BASE_URL", "http://127.0.0.1:9/v1"),
            ("LLM__SIM__1__API_KEY", KEY),
            ("LLM__SIM__1__MODEL", "m"),
        ],
    );
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stderr.contains("PGW_SERVE_KEYS"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    let (code, _, stderr) = pgw.run(
        &["serve", "--listen", "127.0.0.1:0"],
        &[("PGW_SERVE_KEYS", "short=t"), ("LLM__SIM__1__MODEL", "m")],
    );
    assert_eq!(code, 3);
    assert!(
        stderr.contains("PGW_SERVE_KEYS") && !stderr.contains("short="),
        "{stderr}"
    );
}

// covers: D33 (several `pgw serve` processes share limits through Redis)
#[tokio::test(flavor = "multi_thread")]
async fn d33_two_serve_processes_on_one_redis_share_a_quota_exactly() {
    // Redis must be reachable: fail loudly, never skip.
    std::net::TcpStream::connect("127.0.0.1:6379")
        .expect("Redis on 127.0.0.1:6379 is required by this test");
    let sim = SimProcess::start(&fixture("hello"));
    // A fresh scope per run: the limiter's keys (`{pgw:<scope>}`) never collide with another run.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let scope = format!("Q{}X{nanos}", std::process::id());
    let model = scope.to_ascii_lowercase();
    let keys = [
        (format!("{scope}__SIM__1__BASE_URL"), sim.base_url()),
        (format!("{scope}__SIM__1__API_KEY"), KEY.to_owned()),
        (format!("{scope}__SIM__1__MODEL"), "m".to_owned()),
        (format!("{scope}__SIM__1__RPM"), "5".to_owned()),
        (format!("{scope}__QUOTA_FULL"), "fail_fast".to_owned()),
        ("PGW_LIMITER_BACKEND".to_owned(), "redis".to_owned()),
        ("PGW_BREAKER_BACKEND".to_owned(), "redis".to_owned()),
        ("REDIS_URL".to_owned(), "redis://127.0.0.1:6379".to_owned()),
        ("PGW_SERVE_CHAT_SCOPES".to_owned(), scope.clone()),
    ];
    let extra: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a = Serve::start(&sim, None, &extra);
    let b = Serve::start(&sim, None, &extra);
    let body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    let mut ok = 0;
    let mut refused = 0;
    for i in 0..10 {
        let serve = if i % 2 == 0 { &a } else { &b };
        let r = post(serve, "/v1/chat/completions", Some(TOKEN), &body).await;
        match r.status().as_u16() {
            200 => ok += 1,
            429 | 503 => {
                assert!(r.headers().contains_key("retry-after"));
                refused += 1;
            }
            other => panic!("unexpected status {other}: {}", r.text().await.unwrap()),
        }
    }
    // RPM 5 for the source, shared by both processes: exactly 5 calls pass in total.
    assert_eq!((ok, refused), (5, 5));
}

/// `GET /metrics` as text.
async fn metrics(serve: &Serve) -> String {
    client()
        .get(serve.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The value of the metric line starting with `series ` (labels included), if present.
fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// Polls `/metrics` until every `(series, value)` holds (bounded: 20 s). Waits on a condition,
/// never on a timing window.
async fn metrics_until(serve: &Serve, want: &[(&str, f64)]) -> String {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let text = metrics(serve).await;
        if want.iter().all(|(s, v)| metric_value(&text, s) == Some(*v)) {
            return text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "metrics never reached {want:?}:\n{text}"
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Reads SSE body chunks until the accumulated text contains every needle (a chunk that takes
/// over 30 s fails the test instead of hanging it).
async fn read_until(r: &mut reqwest::Response, needles: &[&str]) -> String {
    let mut text = String::new();
    while !needles.iter().all(|n| text.contains(n)) {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), r.chunk())
            .await
            .unwrap_or_else(|_| panic!("no chunk within 30 s; so far: {text}"));
        match chunk.unwrap() {
            Some(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
            None => panic!("the body ended before {needles:?}: {text}"),
        }
    }
    text
}

/// The JSON frames of an SSE body (without `[DONE]`).
fn json_frames(text: &str) -> Vec<Value> {
    sse_data(text)
        .iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

// covers: D33, D32 (deltas are forwarded as they are committed, before the upstream finishes;
// a client that disconnects cancels the call and frees its slot)
#[tokio::test(flavor = "multi_thread")]
async fn d33_d32_stream_forwards_deltas_before_the_upstream_finishes_and_disconnect_cancels() {
    let sim = SimProcess::start(&fixture("stream_hang"));
    let serve = Serve::start(&sim, None, &[("PGW_SERVE_KEY_MAX_CONCURRENCY", "1")]);
    let mut r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    // The upstream sent two content frames and never finishes: both reach the client now.
    let text = read_until(&mut r, &["first ", "second"]).await;
    assert!(!text.contains("[DONE]"), "{text}");
    let frames = json_frames(&text);
    assert_eq!(frames[0]["object"], "chat.completion.chunk", "{text}");
    assert_eq!(frames[0]["id"], "chatcmpl-up1", "{text}");
    assert_eq!(frames[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(frames[0]["choices"][0]["delta"]["content"], "first ");
    assert!(frames[1]["choices"][0]["delta"].get("role").is_none());
    assert_eq!(frames[1]["choices"][0]["delta"]["content"], "second");
    assert!(
        frames
            .iter()
            .all(|f| f["choices"][0]["finish_reason"].is_null())
    );
    // While the stream is open: one open stream, one upstream permit, the key's slot taken.
    metrics_until(
        &serve,
        &[
            ("pgw_streams_open", 1.0),
            ("pgw_source_inflight{scope=\"llm\",source=\"sim_1\"}", 1.0),
        ],
    )
    .await;
    let busy = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(false),
    )
    .await;
    assert_eq!(
        busy.status(),
        429,
        "the key's one slot is held by the stream"
    );
    // The client goes away mid-stream: the call is cancelled, every slot is freed.
    drop(r);
    metrics_until(
        &serve,
        &[
            ("pgw_streams_open", 0.0),
            ("pgw_source_inflight{scope=\"llm\",source=\"sim_1\"}", 0.0),
        ],
    )
    .await;
    // The key's slot is released asynchronously right after the body is dropped.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut r = post(
            &serve,
            "/v1/chat/completions",
            Some(TOKEN),
            &chat_body(true),
        )
        .await;
        if r.status() == 200 {
            read_until(&mut r, &["first "]).await;
            break;
        }
        assert_eq!(r.status(), 429);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the key's slot leaked"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

// covers: D33, D32 (a failure after the commit point ends the stream with an SSE error event,
// no retry, no [DONE])
#[tokio::test(flavor = "multi_thread")]
async fn d33_d32_committed_failure_ends_the_stream_with_an_error_event() {
    let sim = SimProcess::start(&fixture("stream_truncated"));
    let serve = Serve::start(&sim, None, &[]);
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(!text.contains("[DONE]"), "{text}");
    assert!(!text.contains("a retry must never be seen"), "{text}");
    let frames = json_frames(&text);
    assert_eq!(
        frames[0]["choices"][0]["delta"]["content"], "partial answer",
        "{text}"
    );
    let last = frames.last().unwrap();
    let error = &last["error"];
    assert!(error["message"].is_string(), "{text}");
    assert!(error["type"].is_string(), "{text}");
    assert_eq!(error["committed"], true, "{text}");
    assert!(last.get("choices").is_none(), "{text}");
    let m = metrics(&serve).await;
    assert!(m.contains("pgw_errors_total{scope=\"llm\",type="), "{m}");
    assert_eq!(metric_value(&m, "pgw_streams_open"), Some(0.0), "{m}");
}

// covers: D33, D32 (a failure before the commit point is a plain JSON error with its status and
// Retry-After)
#[tokio::test(flavor = "multi_thread")]
async fn d33_d32_stream_failure_before_commit_is_a_json_error_with_retry_after() {
    let sim = SimProcess::start(&fixture("rejected"));
    let serve = Serve::start(&sim, None, &[("LLM__RETRY__MAX_ATTEMPTS", "1")]);
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(true),
    )
    .await;
    let status = r.status().as_u16();
    assert!(status == 503 || status == 429, "{status}");
    assert_eq!(r.headers()["content-type"], "application/json");
    let retry_after = r.headers()["retry-after"].to_str().unwrap().to_owned();
    let v: Value = r.json().await.unwrap();
    let hint = v["error"]["retry_after_s"].as_f64().unwrap();
    assert_eq!(retry_after, (hint.ceil() as u64).to_string(), "{v}");
    assert!(v["error"]["type"].is_string(), "{v}");
}

// covers: D33, D32 (a hedged streamed call is invisible: only the winner's deltas, one role)
#[tokio::test(flavor = "multi_thread")]
async fn d33_d32_hedged_stream_is_invisible_to_the_client() {
    let sim = SimProcess::start(&fixture("hedge"));
    let serve = Serve::start(
        &sim,
        None,
        &[
            ("LLM__SIM__2__BASE_URL", &sim.base_url()),
            ("LLM__SIM__2__API_KEY", KEY),
            ("LLM__SIM__2__MODEL", "m"),
            ("LLM__HEDGE__AFTER_S", "0.2"),
        ],
    );
    let mut body = chat_body(true);
    body["stream_options"] = json!({"include_usage": true});
    let r = post(&serve, "/v1/chat/completions", Some(TOKEN), &body).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let frames = json_frames(&text);
    let content: String = frames
        .iter()
        .filter_map(|f| f["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "hedge leg wins", "{text}");
    let roles = frames
        .iter()
        .filter(|f| f["choices"][0]["delta"].get("role").is_some())
        .count();
    assert_eq!(roles, 1, "{text}");
    let n = frames.len();
    assert_eq!(frames[n - 2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(frames[n - 1]["choices"], json!([]));
    assert!(
        frames[n - 1]["usage"]["completion_tokens"]
            .as_u64()
            .is_some()
    );
    let m = metrics(&serve).await;
    assert!(m.contains("pgw_hedges_total{scope=\"llm\"} 1"), "{m}");
}

// covers: D33 (cost per scope and source in /metrics, priced exactly as the telemetry rows)
#[tokio::test(flavor = "multi_thread")]
async fn d33_cost_per_scope_and_source_matches_the_telemetry_rows() {
    let sim = SimProcess::start(&fixture("hello"));
    let dir = tempfile::tempdir().unwrap();
    let pricing = dir.path().join("pricing.json");
    std::fs::write(
        &pricing,
        r#"{"m": {"input_per_1m": 1000.0, "output_per_1m": 3000.0}}"#,
    )
    .unwrap();
    let db = dir.path().join("t.db");
    let mut serve = Serve::start(
        &sim,
        None,
        &[
            ("PGW_PRICING_PATH", pricing.to_str().unwrap()),
            ("PGW_TELEMETRY_BACKEND", "sqlite"),
            ("PGW_TELEMETRY_SQLITE_PATH", db.to_str().unwrap()),
        ],
    );
    let mut expected = 0.0;
    for stream in [false, true] {
        let mut body = chat_body(stream);
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        let r = post(&serve, "/v1/chat/completions", Some(TOKEN), &body).await;
        assert_eq!(r.status(), 200);
        let usage = if stream {
            json_frames(&r.text().await.unwrap()).last().unwrap()["usage"].clone()
        } else {
            r.json::<Value>().await.unwrap()["usage"].clone()
        };
        let p = usage["prompt_tokens"].as_f64().unwrap();
        let c = usage["completion_tokens"].as_f64().unwrap();
        expected += (p * 1000.0 + c * 3000.0) / 1e6;
    }
    let m = metrics(&serve).await;
    let got = metric_value(&m, "pgw_cost_total{scope=\"llm\",source=\"sim_1\"}").unwrap();
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}\n{m}");
    // SIGTERM flushes the telemetry; the attempt rows' cost sums to the same figure.
    let pid = serve.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let code = tokio::task::spawn_blocking(move || serve.child.wait().unwrap().code())
        .await
        .unwrap();
    assert_eq!(code, Some(0));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: f64 = conn
        .query_row(
            "SELECT SUM(cost) FROM llm_calls WHERE event_kind = 'attempt'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!((rows - got).abs() < 1e-12, "rows {rows} vs metrics {got}");
}

// covers: D33 (the official OpenAI Python SDK, stream and non-stream, embeddings, a retried and a
// hedged call invisible, a committed failure raised as APIError). Installs `openai` from PyPI;
// skips LOUDLY only when the registry is unreachable.
#[test]
fn d33_openai_python_sdk_end_to_end() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/serve/openai_sdk_e2e.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_pgw"))
        .output()
        .expect("bash runs tools/serve/openai_sdk_e2e.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    if stderr.contains("SKIPPED") {
        eprintln!("{stderr}");
        eprintln!(
            "!!! d33_openai_python_sdk_end_to_end: the OpenAI SDK e2e did NOT run (PyPI unreachable) !!!"
        );
    } else {
        assert!(stdout.contains("openai SDK e2e: ok"), "{stdout}\n{stderr}");
        eprintln!("{stdout}");
    }
}

// covers: D33, D32 (streamed tool calls: fragments as `tool_calls` deltas, the finish reason)
#[tokio::test(flavor = "multi_thread")]
async fn d33_d32_streamed_tool_call_fragments_are_tool_calls_deltas() {
    let sim = SimProcess::start(&fixture("tools"));
    let serve = Serve::start(&sim, None, &[]);
    let r = post(
        &serve,
        "/v1/chat/completions",
        Some(TOKEN),
        &chat_body(true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let frames = json_frames(&text);
    assert_eq!(
        frames[0]["choices"][0]["delta"]["role"], "assistant",
        "{text}"
    );
    let calls: Vec<&Value> = frames
        .iter()
        .filter_map(|f| f["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    assert!(!calls.is_empty(), "{text}");
    assert_eq!(calls[0]["id"], "call_1", "{text}");
    assert_eq!(calls[0]["type"], "function", "{text}");
    assert_eq!(calls[0]["function"]["name"], "get_weather", "{text}");
    assert!(calls.iter().all(|c| c["index"] == 0), "{text}");
    let args: String = calls
        .iter()
        .filter_map(|c| c["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, r#"{"city":"Paris"}"#, "{text}");
    assert_eq!(
        frames.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls",
        "{text}"
    );
}
