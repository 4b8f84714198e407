//! Tier-2 tests (05 R-30): the simulator on real sockets, read with reqwest or with a raw tokio
//! `TcpStream` where read boundaries, resets and framing must be observed. Synchronisation uses
//! `wait_for_requests`, never sleeps; timeouts appear only as upper bounds ("nothing arrives
//! within 200 ms").
#![cfg(feature = "server")]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failing unwrap is a failing test"
)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use upstream_sim::script::{
    Completion, End, FaultRng, Faults, Framing, Head, Headers, Order, RawChunk, Response, Script,
};
use upstream_sim::{Sim, SimHandle};

const HOLD: Duration = Duration::from_millis(200);

fn chat_request(path: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn raw_connect(sim: &SimHandle) -> TcpStream {
    TcpStream::connect(sim.addr()).await.unwrap()
}

/// Reads until EOF, an error, or `HOLD` without data; returns the reads and how it ended.
async fn read_all(stream: &mut TcpStream) -> (Vec<Vec<u8>>, Result<(), std::io::Error>) {
    let mut reads = Vec::new();
    loop {
        let mut buf = vec![0u8; 64 * 1024];
        match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await {
            Err(_) => panic!("no EOF within 5 s"),
            Ok(Ok(0)) => return (reads, Ok(())),
            Ok(Ok(n)) => {
                buf.truncate(n);
                reads.push(buf);
            }
            Ok(Err(e)) => return (reads, Err(e)),
        }
    }
}

/// Reads one full response head plus `body_len` bytes (for keep-alive tests).
async fn read_until(stream: &mut TcpStream, acc: &mut Vec<u8>, needle: &[u8]) {
    while !acc.windows(needle.len()).any(|w| w == needle) {
        let mut buf = [0u8; 4096];
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "EOF before {:?}", String::from_utf8_lossy(needle));
        acc.extend_from_slice(&buf[..n]);
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(sim: &SimHandle, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(format!("http://{}{path}", sim.addr()))
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn script(v: Value) -> Script {
    Script::from_json(&v.to_string()).unwrap()
}

// --- read boundaries (case 027) ---------------------------------------------------------

const CASE_027_READ_1: &[u8] = b"data: {\"id\":\"chatcmpl-XXXX\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"deepseek-v4-flash\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\xe4";
const CASE_027_READ_2: &[u8] =
    b"\xbf\xae\xe5\xa4\x8d\xe6\x96\xb9\xe6\xb3\x95\"},\"finish_reason\":null}]}\n\n";

fn case_027_script() -> Script {
    Script::new(vec![Response {
        headers: Some(Headers::from_pairs([("content-type", "text/event-stream")])),
        ..Response::raw(
            200,
            vec![
                RawChunk::bytes(CASE_027_READ_1.to_vec()),
                RawChunk::bytes(CASE_027_READ_2.to_vec()).after_ms(50),
            ],
        )
    }])
}

#[tokio::test]
async fn case_027_utf8_split_arrives_in_two_reads_raw() {
    let sim = Sim::start(case_027_script()).unwrap();
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request(
        "/v1/chat/completions",
        &json!({"model": "m", "stream": true}),
    ))
    .await
    .unwrap();
    let mut acc = Vec::new();
    let mut boundaries = Vec::new();
    let terminator = b"0\r\n\r\n";
    while !acc.ends_with(terminator) {
        let mut buf = [0u8; 8192];
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        acc.extend_from_slice(&buf[..n]);
        boundaries.push(acc.len());
    }
    let head_end = acc.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut chunk1 = format!("{:x}\r\n", CASE_027_READ_1.len()).into_bytes();
    chunk1.extend_from_slice(CASE_027_READ_1);
    chunk1.extend_from_slice(b"\r\n");
    assert_eq!(&acc[head_end..head_end + chunk1.len()], chunk1.as_slice());
    assert!(
        boundaries.contains(&(head_end + chunk1.len())),
        "a read must end right after the first chunk: {boundaries:?}"
    );
    let mut chunk2 = format!("{:x}\r\n", CASE_027_READ_2.len()).into_bytes();
    chunk2.extend_from_slice(CASE_027_READ_2);
    chunk2.extend_from_slice(b"\r\n0\r\n\r\n");
    assert_eq!(&acc[head_end + chunk1.len()..], chunk2.as_slice());
}

#[tokio::test]
async fn case_027_utf8_split_arrives_in_two_reads_reqwest() {
    let sim = Sim::start(case_027_script()).unwrap();
    let mut resp = post(&sim, "/v1/chat/completions", json!({"stream": true})).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let first = resp.chunk().await.unwrap().unwrap();
    assert_eq!(&first[..], CASE_027_READ_1);
    let second = resp.chunk().await.unwrap().unwrap();
    assert_eq!(&second[..], CASE_027_READ_2);
    assert!(resp.chunk().await.unwrap().is_none());
}

// --- hangs, resets, framing --------------------------------------------------------------

#[tokio::test]
async fn s15_head_hang_sends_nothing() {
    let sim = Sim::start(Script::new(vec![Response {
        head: Head::Hang,
        ..Response::completion(Completion::text("never"))
    }]))
    .unwrap();
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request(
        "/v1/chat/completions",
        &json!({"model": "m"}),
    ))
    .await
    .unwrap();
    sim.wait_for_requests(1).await;
    let mut buf = [0u8; 16];
    assert!(
        tokio::time::timeout(HOLD, s.read(&mut buf)).await.is_err(),
        "the status line must never arrive"
    );
}

#[tokio::test]
async fn s15_end_hang_keeps_the_body_open() {
    let sim = Sim::start(Script::new(vec![Response {
        end: End::Hang,
        ..Response::raw(200, vec![RawChunk::text("data: {}\n\n")])
    }]))
    .unwrap();
    let mut resp = post(&sim, "/v1/chat/completions", json!({})).await;
    assert_eq!(&resp.chunk().await.unwrap().unwrap()[..], b"data: {}\n\n");
    assert!(
        tokio::time::timeout(HOLD, resp.chunk()).await.is_err(),
        "the body must not end"
    );
}

#[tokio::test]
async fn s15_end_reset_is_a_read_error_not_eof() {
    let sim = Sim::start(Script::new(vec![Response {
        end: End::Reset,
        ..Response::raw(200, vec![RawChunk::text("data: {\"choices\":[]}\n\n")])
    }]))
    .unwrap();
    // Raw: the connection ends with ECONNRESET, never a clean EOF.
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request("/v1/chat/completions", &json!({})))
        .await
        .unwrap();
    let (reads, end) = read_all(&mut s).await;
    let err = end.expect_err("expected a reset");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset);
    let got: Vec<u8> = reads.concat();
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(!got.ends_with(b"0\r\n\r\n"));
    // reqwest: the body read fails.
    let resp = post(&sim, "/v1/chat/completions", json!({})).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.bytes().await.is_err());
}

#[tokio::test]
async fn s15_framing_close_is_eof_delimited() {
    let sim = Sim::start(Script::new(vec![Response {
        framing: Framing::Close,
        headers: Some(Headers::from_pairs([("content-type", "text/html")])),
        ..Response::raw(
            502,
            vec![
                RawChunk::text("<html>"),
                RawChunk::text("</html>").after_ms(20),
            ],
        )
    }]))
    .unwrap();
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request("/v1/chat/completions", &json!({})))
        .await
        .unwrap();
    let (reads, end) = read_all(&mut s).await;
    end.unwrap();
    let got = String::from_utf8(reads.concat()).unwrap();
    assert_eq!(
        got,
        "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\nconnection: close\r\n\r\n<html></html>"
    );
    let resp = post(&sim, "/v1/chat/completions", json!({})).await;
    assert_eq!(resp.status(), 502);
    assert_eq!(resp.text().await.unwrap(), "<html></html>");
}

#[tokio::test]
async fn s15_framing_content_length_and_keep_alive() {
    let sim = Sim::start(Script::new(vec![Response {
        framing: Framing::ContentLength,
        ..Response::raw(200, vec![RawChunk::text("{\"a\":"), RawChunk::text("1}")])
    }]))
    .unwrap();
    let mut s = raw_connect(&sim).await;
    for _ in 0..2 {
        s.write_all(&chat_request("/v1/chat/completions", &json!({})))
            .await
            .unwrap();
        let mut acc = Vec::new();
        read_until(&mut s, &mut acc, b"{\"a\":1}").await;
        assert_eq!(
            String::from_utf8(acc).unwrap(),
            "HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{\"a\":1}"
        );
    }
    assert_eq!(sim.wait_for_requests(2).await.len(), 2);
}

#[tokio::test]
async fn case_034_status_without_reason_phrase() {
    let sim = Sim::start(Script::new(vec![Response {
        framing: Framing::ContentLength,
        headers: Some(Headers::from_pairs([
            ("Content-Type", "text/html; charset=UTF-8"),
            ("Server", "cloudflare"),
        ])),
        ..Response::raw(520, vec![RawChunk::text("<html>520</html>")])
    }]))
    .unwrap();
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request("/v1/chat/completions", &json!({})))
        .await
        .unwrap();
    let mut acc = Vec::new();
    read_until(&mut s, &mut acc, b"</html>").await;
    assert!(acc.starts_with(b"HTTP/1.1 520 \r\nContent-Type: text/html; charset=UTF-8\r\nServer: cloudflare\r\ncontent-length: 16\r\n\r\n"));
    let resp = post(&sim, "/v1/chat/completions", json!({})).await;
    assert_eq!(resp.status().as_u16(), 520);
}

#[tokio::test]
async fn s15_headers_list_keeps_duplicates_in_order() {
    let sim = Sim::start(script(json!({"version": 1, "responses": [{
        "status": 429,
        "headers": [["retry-after", "1"], ["x-other", "y"], ["retry-after", "2"]],
        "framing": "content_length",
        "chunks": [{"text": "{}"}]
    }]})))
    .unwrap();
    let resp = post(&sim, "/v1/chat/completions", json!({})).await;
    assert_eq!(resp.status(), 429);
    let values: Vec<_> = resp
        .headers()
        .get_all("retry-after")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(values, vec!["1", "2"]);
}

#[tokio::test]
async fn s15_keep_alive_chunked_and_pooled_reqwest_reuses_one_connection() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion {
        chunks: 3,
        ..Completion::text("pooled")
    })]))
    .unwrap();
    // Raw: two chunked streams on one connection.
    let mut s = raw_connect(&sim).await;
    for _ in 0..2 {
        s.write_all(&chat_request(
            "/v1/chat/completions",
            &json!({"stream": true}),
        ))
        .await
        .unwrap();
        let mut acc = Vec::new();
        read_until(&mut s, &mut acc, b"[DONE]\n\n\r\n0\r\n\r\n").await;
        assert!(acc.starts_with(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"));
    }
    drop(s);
    // reqwest: one pooled client, sequential requests, one more connection in total.
    let client = client();
    for i in 0..10 {
        let resp = client
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&json!({"stream": i % 2 == 0}))
            .send()
            .await
            .unwrap();
        let text = resp.text().await.unwrap();
        assert!(text.contains(if i % 2 == 0 { "[DONE]" } else { "pooled" }));
    }
    assert_eq!(sim.wait_for_requests(12).await.len(), 12);
    assert_eq!(sim.connection_count(), 2);
}

// --- generated bodies ---------------------------------------------------------------------

fn sse_frames(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| f.strip_prefix("data: ").unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn s15_completion_stream_over_http() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion {
        reasoning: Some("think".into()),
        chunks: 2,
        ..Completion::text("Hi there")
    })]))
    .unwrap();
    let resp = post(
        &sim,
        "/v1/chat/completions",
        json!({"model": "gpt-x", "stream": true, "messages": [{"role": "user", "content": "hey"}]}),
    )
    .await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    let frames = sse_frames(&resp.text().await.unwrap());
    assert_eq!(frames.len(), 7);
    let parsed: Vec<Value> = frames[..6]
        .iter()
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    assert_eq!(parsed[0]["model"], "gpt-x");
    assert_eq!(parsed[0]["choices"][0]["delta"]["reasoning_content"], "th");
    let content: String = parsed[2..4]
        .iter()
        .map(|p| p["choices"][0]["delta"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(content, "Hi there");
    assert_eq!(parsed[4]["choices"][0]["finish_reason"], "stop");
    assert_eq!(parsed[5]["usage"]["prompt_tokens"], 1);
    assert_eq!(frames[6], "[DONE]");
}

#[tokio::test]
async fn s15_completion_done_false_ends_without_done() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion {
        done: false,
        ..Completion::text("x")
    })]))
    .unwrap();
    let resp = post(&sim, "/chat/completions", json!({"stream": true})).await;
    let body = resp.text().await.unwrap();
    assert!(!body.contains("[DONE]"), "{body}");
    assert!(body.ends_with("\n\n"));
}

#[tokio::test]
async fn s15_completion_non_stream_json() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion::text(
        "Hello",
    ))]))
    .unwrap();
    let resp = post(&sim, "/v1/chat/completions", json!({"model": "m"})).await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "Hello");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn s15_embeddings_and_models_endpoints() {
    let sim = Sim::start(script(json!({"version": 1, "responses": [
        {"match": {"model": "big"}, "embedding": {"dim": 3}},
        {"completion": {"model": "chat-m"}}
    ]})))
    .unwrap();
    let v: Value = post(
        &sim,
        "/v1/embeddings",
        json!({"model": "big", "input": ["a", "b"]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"][1]["embedding"].as_array().unwrap().len(), 3);
    // No embedding response matches model "small": the default has 8 dimensions.
    let v: Value = post(&sim, "/embeddings", json!({"model": "small", "input": "a"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 8);
    let models: Value = client()
        .get(format!("{}/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["big", "chat-m"]);
}

// --- order, faults, scripts ---------------------------------------------------------------

#[tokio::test]
async fn s15_order_over_http_and_404_without_match() {
    let sim = Sim::start(
        Script::new(vec![Response::raw(500, vec![]), Response::raw(200, vec![])])
            .with_order(Order::Cycle),
    )
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            post(&sim, "/v1/chat/completions", json!({}))
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(got, vec![500, 200, 500]);
    sim.set_script(script(
        json!({"version": 1, "order": "by_model", "responses": [
            {"match": {"model": "a", "path": "/v1/chat/completions"}, "status": 201}
        ]}),
    ))
    .unwrap();
    assert_eq!(
        post(&sim, "/chat/completions", json!({"model": "a"}))
            .await
            .status(),
        201
    );
    let miss = post(&sim, "/v1/chat/completions", json!({"model": "b"})).await;
    assert_eq!(miss.status(), 404);
    let v: Value = miss.json().await.unwrap();
    assert_eq!(v["error"]["code"], "sim_no_match");
}

#[tokio::test]
async fn s15_same_seed_same_faults_over_http() {
    let faults = Faults {
        seed: 5,
        p_429: 0.3,
        retry_after: "3".into(),
        p_5xx: 0.3,
        ..Faults::default()
    };
    let make = || {
        Script::new(vec![Response::completion(Completion::text("ok"))]).with_faults(faults.clone())
    };
    let mut runs = Vec::new();
    for _ in 0..2 {
        let sim = Sim::start(make()).unwrap();
        let mut statuses = Vec::new();
        for _ in 0..24 {
            let r = post(&sim, "/v1/chat/completions", json!({})).await;
            if r.status() == 429 {
                assert_eq!(r.headers()["retry-after"], "3");
            }
            statuses.push(r.status().as_u16());
        }
        runs.push(statuses);
    }
    assert_eq!(runs[0], runs[1]);
    let mut rng = FaultRng::new(5);
    let predicted: Vec<u16> = (0..24)
        .map(|_| match rng.next_fault(&faults) {
            Some(upstream_sim::script::Fault::TooManyRequests { .. }) => 429,
            Some(upstream_sim::script::Fault::ServerError { status }) => status,
            _ => 200,
        })
        .collect();
    assert_eq!(runs[0], predicted);
    assert!(runs[0].contains(&429) && runs[0].contains(&503) && runs[0].contains(&200));
}

#[tokio::test]
async fn r_59_recorded_requests_are_redacted_and_auth_matches() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion::text(
        "ok",
    ))]))
    .unwrap();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let resp = client()
        .post(format!("{}/chat/completions?api-version=1", sim.base_url()))
        .bearer_auth("sk-test-key")
        .header("x-trace", "abc")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let requests = sim.wait_for_requests(1).await;
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions?api-version=1");
    assert_eq!(r.body.as_ref(), Some(&body));
    assert_eq!(r.header("x-trace"), Some("abc"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let shown = r.header("authorization").unwrap();
    assert!(
        shown.starts_with("Bearer <redacted:") && shown.len() == "Bearer <redacted:>".len() + 8
    );
    assert!(!format!("{requests:?}").contains("sk-test-key"));
    assert!(sim.auth_matches("sk-test-key"));
    assert!(!sim.auth_matches("sk-other"));
    assert!(r.auth_matches("sk-test-key"));
}

#[tokio::test]
async fn s15_wait_for_requests_wakes_on_arrival() {
    let sim = Sim::start(Script::new(vec![Response {
        head: Head::Hang,
        ..Response::default()
    }]))
    .unwrap();
    let addr = sim.addr();
    let waiter = sim.wait_for_requests(3);
    let senders = async {
        let mut streams = Vec::new();
        for i in 0..3 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(&chat_request("/v1/chat/completions", &json!({"n": i})))
                .await
                .unwrap();
            streams.push(s);
        }
        streams
    };
    let (requests, _streams) = tokio::join!(waiter, senders);
    assert_eq!(requests.len(), 3);
    let mut ns: Vec<i64> = requests
        .iter()
        .map(|r| r.body.as_ref().unwrap()["n"].as_i64().unwrap())
        .collect();
    ns.sort_unstable();
    assert_eq!(ns, vec![0, 1, 2]);
}

#[tokio::test]
async fn s15_shutdown_closes_hung_connections() {
    let sim = Sim::start(Script::new(vec![Response {
        head: Head::Hang,
        ..Response::default()
    }]))
    .unwrap();
    let mut s = raw_connect(&sim).await;
    s.write_all(&chat_request("/v1/chat/completions", &json!({})))
        .await
        .unwrap();
    sim.wait_for_requests(1).await;
    sim.shutdown();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("shutdown must close the connection")
        .unwrap_or(0);
    assert_eq!(n, 0);
}

#[test]
fn r_56_start_in_thread_serves_from_a_current_thread_runtime() {
    let sim = Sim::start_in_thread(
        "127.0.0.1:0".parse().unwrap(),
        Script::new(vec![Response::completion(Completion::text("threaded"))]),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let v: Value = post(&sim, "/v1/chat/completions", json!({}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "threaded");
        assert_eq!(sim.wait_for_requests(1).await.len(), 1);
    });
}

#[tokio::test]
async fn s15_binary_prints_the_bound_address_first() {
    let dir = std::env::temp_dir().join(format!("upstream-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.json");
    std::fs::write(
        &path,
        Script::new(vec![Response::completion(Completion::text("from-bin"))]).to_json(),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_upstream-sim"))
        .args(["--listen", "127.0.0.1:0", "--script"])
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout);
    let mut first = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut first)
        .await
        .unwrap();
    let addr: std::net::SocketAddr = first.trim().parse().unwrap();
    let v: Value = client()
        .post(format!("http://{addr}/v1/chat/completions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "from-bin");
    child.kill().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn s15_invalid_script_file_fails_the_binary() {
    let dir = std::env::temp_dir().join(format!("upstream-sim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("script.json");
    std::fs::write(&path, r#"{"version": 2, "responses": []}"#).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_upstream-sim"))
        .args(["--listen", "127.0.0.1:0", "--script"])
        .arg(&path)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`version`"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn s15_recording_off_still_counts_requests() {
    let sim = Sim::start(Script::new(vec![Response::completion(Completion::text(
        "x",
    ))]))
    .unwrap();
    sim.set_recording(false);
    for _ in 0..3 {
        post(&sim, "/v1/chat/completions", json!({})).await;
    }
    assert!(sim.wait_for_requests(3).await.is_empty());
    assert_eq!(sim.request_count(), 3);
    sim.set_recording(true);
    post(&sim, "/v1/chat/completions", json!({"k": 1})).await;
    let recorded = sim.wait_for_requests(4).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].body, Some(json!({"k": 1})));
}
