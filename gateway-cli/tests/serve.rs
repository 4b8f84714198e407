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
            assert!(text.contains("second time lucky") && text.ends_with("data: [DONE]\n\n"));
            assert!(!text.contains("error"), "{text}");
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
    let body = json!({"model": "embed", "input": "a", "encoding_format": "base64"});
    let v: Value = post(&serve, "/v1/embeddings", Some(TOKEN), &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["data"][0]["embedding"].as_str().unwrap().len(), 24, "{v}"); // 4 × f32 = 16 bytes
    // A chat model on the embeddings route is a 404 naming the model.
    let r = post(
        &serve,
        "/v1/embeddings",
        Some(TOKEN),
        &json!({"model": "llm", "input": "a"}),
    )
    .await;
    assert_eq!(r.status(), 404);
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
    let status = r.status().as_u16();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let v: Value = r.json().await.unwrap();
    assert!(status == 503 || status == 429, "{status} {v}");
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
