//! The response cache layer (70 Part C, C-39..C-64; 95 §13 CF-319..CF-344, CF-255, CF-290,
//! CF-291, CF-314, CF-363): key, entry codec, read and write paths, hit rewrite, hit row, memory
//! backend and tenant isolation. Tier 1: paused tokio clock or `FakeClock`, `ScriptedRunner`,
//! the real `MemoryCache` (wrapped where a backend call must fail, tick or park).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on fixture errors by design"
)]

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gateway_core::attempt::TransportResult;
use gateway_core::cache::{
    CACHE_KEY_PREFIX, CacheNamespace, ChatCache, KeyParts, MemoryCache, RestoreMiss, decode_entry,
    encode_entry, model_fingerprint,
};
use gateway_core::clock::FakeClock;
use gateway_core::governor::CallOptions;
use gateway_core::telemetry::{RowInput, RowShaper};
use gateway_ports::{
    CacheError, CachePolicy, CallStats, ChatRequest, Clock, Effort, FinishReason, GatewayError,
    JsonObject, LlmResponse, OpenAiChatCompletion, ResponseCache, ResponseMode, StreamEnd,
    StructuredFailure, StructuredOutputStrategy, StructuredSpec, Usage,
};
use gateway_testkit::hooked::{CacheMethod, HookedCall};
use gateway_testkit::{Effect, HookedCache, RecordedRow, Script};
use serde_json::{Map, Value, json};
use support::*;

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn user(text: &str) -> JsonObject {
    obj(json!({"role": "user", "content": text}))
}

fn request(text: &str) -> ChatRequest {
    ChatRequest::new(vec![user(text)])
}

fn key_of(request: &ChatRequest) -> String {
    KeyParts::of_request(request, "fp", "ns", None, None).key()
}

fn completion(message: Value, finish: Option<&str>, id: Option<&str>) -> OpenAiChatCompletion {
    OpenAiChatCompletion::try_new(
        obj(message),
        finish.map(str::to_owned),
        id.map(str::to_owned),
        Some(obj(json!({"prompt_tokens": 11, "completion_tokens": 7}))),
    )
    .unwrap()
}

/// Installs a hook advancing `clock` by `d` on every `get` and `set` (a "ticking" backend).
fn tick(cache: &HookedCache, clock: &Arc<FakeClock>, d: Duration) {
    let clock = clock.clone();
    cache.before(move |c| {
        if matches!(c.method(), CacheMethod::Get | CacheMethod::Set) {
            clock.advance(d);
        }
        Effect::Forward
    });
}

/// A governor fixture (fake clock) plus a `ChatCache` over the real `MemoryCache` behind hooks
/// (counting every call; a test makes one fail, tick a fake clock or sleep on paused time).
struct CacheFx {
    fx: Fx,
    memory: Arc<MemoryCache>,
    backend: Arc<HookedCache>,
    cache: ChatCache,
}

impl CacheFx {
    fn gets(&self) -> u64 {
        self.backend.count(CacheMethod::Get)
    }
    fn sets(&self) -> u64 {
        self.backend.count(CacheMethod::Set)
    }
}

fn cache_fx_with(
    edit: impl FnOnce(&HookedCache, &Arc<FakeClock>),
    deadline: Option<Duration>,
) -> CacheFx {
    let fx = FxBuilder {
        fake_clock: true,
        deadline,
        ..FxBuilder::default()
    }
    .build();
    let fake = fx.fake.clone().unwrap();
    let memory = Arc::new(MemoryCache::new(100, fake.clone()));
    let backend = Arc::new(HookedCache::new(memory.clone()));
    edit(&backend, &fake);
    let cache = ChatCache::new(
        backend.clone(),
        &[source("s1")],
        "llm",
        Duration::from_secs(60),
    );
    CacheFx {
        fx,
        memory,
        backend,
        cache,
    }
}

fn cache_fx() -> CacheFx {
    cache_fx_with(|_, _| {}, None)
}

impl CacheFx {
    async fn chat(&self, request: &ChatRequest) -> Result<LlmResponse, GatewayError> {
        let call = self.cache.prepare(request, None);
        let options = CallOptions::default()
            .with_row_input(Arc::new(RowInput::chat(request)))
            .with_stream(request.stream);
        self.fx
            .gov
            .run_chat_cached(&self.fx.runner, options, call.as_ref())
            .await
    }

    fn hit_rows(&self) -> Vec<gateway_core::rows::CacheHitRowFacts> {
        self.fx
            .sink
            .rows()
            .into_iter()
            .filter_map(|r| match r {
                RecordedRow::CacheHit(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    /// Stores `entry` under the key of `request` directly in the backend.
    async fn inject(&self, request: &ChatRequest, entry: Value) {
        let key = self.cache.key_for(request, None);
        self.memory
            .set(&key, entry.to_string(), Duration::from_secs(60))
            .await
            .unwrap();
    }
}

fn text_result(content: &str, finish: Option<&str>, end: Option<StreamEnd>) -> TransportResult {
    let mut r = TransportResult::ok(10, 5);
    r.content = content.to_owned();
    r.finish_reason = finish.and_then(FinishReason::new);
    r.stream_end = end;
    r
}

fn openai_result(content: &str, c: OpenAiChatCompletion) -> TransportResult {
    let mut r = TransportResult::ok(11, 7);
    r.content = content.to_owned();
    r.finish_reason = c.finish_reason().and_then(FinishReason::new);
    r.completion = Some(c);
    r
}

fn openai(text: &str) -> ChatRequest {
    ChatRequest {
        response_mode: ResponseMode::OpenAi,
        ..request(text)
    }
}

// ---------------------------------------------------------------------------------------------
// The key (C-43..C-48)
// ---------------------------------------------------------------------------------------------

/// C-43, C-46: `pgw:cache:v1:` + 64 lower-case hex digits, stable for equal inputs.
#[test]
fn c_43_key_shape_and_stability() {
    let k = key_of(&request("hi"));
    assert!(k.starts_with(CACHE_KEY_PREFIX), "{k}");
    let hex = &k[CACHE_KEY_PREFIX.len()..];
    assert_eq!(hex.len(), 64);
    assert!(
        hex.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(k, key_of(&request("hi")));
    assert_ne!(k, key_of(&request("ho")));
}

/// C-44: the key object holds exactly the listed members, optional ones only when present.
#[test]
fn c_44_key_object_members() {
    let plain = request("hi");
    let o = KeyParts::of_request(&plain, "fp", "ns", None, None).key_object();
    let keys: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["messages", "model", "namespace"]);
    let spec = StructuredSpec::Schema {
        name: "A".into(),
        schema: json!({"type": "object"}),
        strict: true,
    };
    let full = ChatRequest {
        response_mode: ResponseMode::OpenAi,
        overlay: obj(json!({"temperature": 0.2})),
        reasoning_effort: Some(Effort::Low),
        structured: Some(spec),
        ..request("hi")
    };
    let o =
        KeyParts::of_request(&full, "fp", "ns", Some("pepper"), Some("json_schema")).key_object();
    let mut keys: Vec<&str> = o.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "messages",
            "model",
            "namespace",
            "reasoning_effort",
            "response_mode",
            "salt",
            "sampling",
            "structured"
        ]
    );
    assert_eq!(o["response_mode"], "openai");
    assert_eq!(o["structured"]["strategy"], "json_schema");
    assert_eq!(o["structured"]["kind"], "schema");
}

/// CF-323 (C-44): text mode and the default mode give one key; openai differs.
#[test]
fn cf_323_response_mode_member() {
    let a = request("m");
    let b = ChatRequest {
        response_mode: ResponseMode::Text,
        ..request("m")
    };
    assert_eq!(key_of(&a), key_of(&b));
    assert_ne!(key_of(&a), key_of(&openai("m")));
}

/// CF-324 (C-44, C-47): tools, tool_choice, a raw reasoning key, a tool result message and
/// assistant tool arguments each change the key.
#[test]
fn cf_324_sampling_and_tool_messages_change_key() {
    let base = request("m");
    let k = key_of(&base);
    for (key, value) in [
        (
            "tools",
            json!([{"type": "function", "function": {"name": "f"}}]),
        ),
        ("tool_choice", json!("auto")),
        ("reasoning", json!({"effort": "high"})),
    ] {
        let mut r = base.clone();
        r.overlay.insert(key.to_owned(), value);
        assert_ne!(key_of(&r), k, "overlay {key}");
    }
    let call = |args: &str| {
        obj(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": args}}]}))
    };
    let with_tool = |args: &str, result: &str| {
        ChatRequest::new(vec![
            user("m"),
            call(args),
            obj(json!({"role": "tool", "tool_call_id": "c1", "content": result})),
        ])
    };
    let k1 = key_of(&with_tool("{\"q\":1}", "r1"));
    assert_ne!(
        k1,
        key_of(&with_tool("{\"q\":2}", "r1")),
        "assistant tool arguments"
    );
    assert_ne!(k1, key_of(&with_tool("{\"q\":1}", "r2")), "tool result");
}

/// CF-325 (C-44): request-level effort `low` vs `max` never share a key (the facade still
/// refuses a request-level effort until the capability table exists, R-48).
#[test]
fn cf_325_request_effort_in_key() {
    let low = ChatRequest {
        reasoning_effort: Some(Effort::Low),
        ..request("m")
    };
    let max = ChatRequest {
        reasoning_effort: Some(Effort::Max),
        ..request("m")
    };
    assert_ne!(key_of(&low), key_of(&max));
    assert_ne!(key_of(&low), key_of(&request("m")));
}

// covers: CF-322, CF-326, C-48
/// CF-321, CF-322, CF-326 (C-42, C-48): the key ignores tenant, meta, session, parent id,
/// stream, deadline and the call context; telemetry truncation never reaches it.
#[test]
fn cf_321_322_326_key_independent_of_call_dimensions() {
    let a = request("a long message that a text cap of 8 would truncate");
    let mut b = a.clone();
    b.tenant_id = Some("acme".into());
    b.meta.insert("team".into(), "x".into());
    b.session_id = Some("s".into());
    b.parent_call_id = Some("p".into());
    b.stream = false;
    b.call_deadline = Some(Duration::from_secs(3));
    b.cache = CachePolicy::Refresh;
    assert_eq!(key_of(&a), key_of(&b));
    // CF-322: shaping telemetry rows with a text cap leaves the request (and key) untouched.
    let input = RowInput::chat(&a);
    let _ = gateway_core::telemetry::shape::cap_messages(&a.messages, Some(8));
    drop(input);
    assert_eq!(
        key_of(&a),
        key_of(&request(
            "a long message that a text cap of 8 would truncate"
        ))
    );
}

/// C-45: the fingerprint covers provider, model, extra_body and the thinking config, sorted;
/// it ignores credentials, URLs, timeouts, limits and the stall threshold.
#[test]
fn c_45_model_fingerprint() {
    let a = source("s1");
    let mut b = a.clone();
    b.base_url = "http://other:1".into();
    b.api_key = Some("sk-secret".to_owned().into());
    b.timeout_s = 5.0;
    b.rpm = 7;
    b.tpm = 9;
    b.stall_threshold_ms = 1234;
    assert_eq!(
        model_fingerprint(std::slice::from_ref(&a)),
        model_fingerprint(&[b])
    );
    let mut c = a.clone();
    c.model = "other".into();
    assert_ne!(
        model_fingerprint(std::slice::from_ref(&a)),
        model_fingerprint(&[c.clone()])
    );
    let mut d = a.clone();
    d.extra_body.insert("temperature".into(), json!(0.1));
    assert_ne!(
        model_fingerprint(std::slice::from_ref(&a)),
        model_fingerprint(&[d])
    );
    let mut e = a.clone();
    e.enable_thinking = Some(true);
    assert_ne!(
        model_fingerprint(std::slice::from_ref(&a)),
        model_fingerprint(&[e])
    );
    // Order of sources does not matter.
    assert_eq!(
        model_fingerprint(&[a.clone(), c.clone()]),
        model_fingerprint(&[c, a])
    );
}

/// C-47: multimodal parts are digested before hashing; the input is never modified.
#[test]
fn c_47_multimodal_parts_digested() {
    let img = |url: &str| {
        ChatRequest::new(vec![obj(json!({"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": url}}]}))])
    };
    let a = img("data:image/png;base64,AAAA");
    let before = a.clone();
    let o = KeyParts::of_request(&a, "fp", "ns", None, None).key_object();
    assert_eq!(a, before, "input untouched");
    let part = &o["messages"][0]["content"][1];
    assert_eq!(part["type"], "image_url");
    assert!(part["sha256"].is_string());
    assert!(!o.to_string().contains("AAAA"));
    assert_ne!(key_of(&a), key_of(&img("data:image/png;base64,BBBB")));
}

/// C-42: the tenant-prefixed namespace helper; an escaped prefix cannot collide.
#[test]
fn c_42_namespace_compose() {
    assert_eq!(CacheNamespace::compose("acme", 3, "chat"), "acme:3:chat");
    assert_ne!(
        CacheNamespace::compose("a:1", 2, "x"),
        CacheNamespace::compose("a", 1, "2:x")
    );
}

mod props {
    use super::*;
    use gateway_ports::{EFFORT_ORDER, EffortFallback};
    use proptest::prelude::*;

    /// A request with every optional key member drawn: messages, mode, namespace, salt,
    /// sampling, request effort and structured spec (with the strategy name it is keyed by).
    #[derive(Debug, Clone)]
    struct Drawn {
        request: ChatRequest,
        strategy: Option<&'static str>,
        model: String,
    }

    fn spec_strategy() -> impl Strategy<Value = Option<StructuredSpec>> {
        prop_oneof![
            Just(None),
            Just(Some(StructuredSpec::Json)),
            ("[a-z]{1,6}", "[a-z]{1,6}", any::<bool>()).prop_map(|(name, prop, strict)| Some(
                StructuredSpec::Schema {
                    name,
                    schema: json!({"type": "object", "properties": {prop: {"type": "string"}}}),
                    strict,
                }
            )),
        ]
    }

    fn drawn() -> impl Strategy<Value = Drawn> {
        (
            prop::collection::vec("[a-z ]{0,12}", 1..4),
            any::<bool>(),
            prop::option::of("[a-z]{1,8}"),
            prop::option::of("[a-z]{1,8}"),
            prop::option::of(0u32..100),
            prop::option::of(0usize..EFFORT_ORDER.len()),
            spec_strategy(),
            prop::sample::select(vec!["json_repair", "json_schema", "custom"]),
            "[a-z]{1,6}",
        )
            .prop_map(
                |(texts, openai, ns, salt, seed, effort, spec, strategy, model)| {
                    let mut request = ChatRequest::new(texts.iter().map(|t| user(t)).collect());
                    if openai {
                        request.response_mode = ResponseMode::OpenAi;
                    }
                    request.cache_namespace = ns;
                    request.cache_salt = salt;
                    if let Some(seed) = seed {
                        request.overlay.insert("seed".into(), json!(seed));
                    }
                    request.reasoning_effort = effort.map(|i| EFFORT_ORDER[i]);
                    let strategy = spec.as_ref().map(|_| strategy);
                    request.structured = spec;
                    Drawn {
                        request,
                        strategy,
                        model,
                    }
                },
            )
    }

    fn key_of(d: &Drawn) -> String {
        let mut src = source("s1");
        src.model = d.model.clone();
        let fp = model_fingerprint(&[src]);
        KeyParts::of_request(
            &d.request,
            &fp,
            "scope-default",
            Some("default-salt"),
            d.strategy,
        )
        .key()
    }

    /// One change of exactly one key member (C-44), drawn from every member and, within a
    /// member, every way it can differ.
    fn change(d: &Drawn, which: usize, other: &str, k: usize) -> Drawn {
        let mut m = d.clone();
        let r = &mut m.request;
        match which {
            // messages: one more, a changed text, a changed role, an extra field
            0 => r.messages.push(user(other)),
            1 => {
                let c = r.messages[0]["content"].as_str().unwrap_or("").to_owned();
                r.messages[0].insert("content".into(), json!(format!("{c}{other}")));
            }
            2 => {
                r.messages[0].insert("role".into(), json!("system"));
            }
            3 => {
                r.messages[0].insert("name".into(), json!(other));
            }
            // namespace (per call, vs the default)
            4 => {
                r.cache_namespace = Some(format!(
                    "{}{other}",
                    r.cache_namespace.clone().unwrap_or_default()
                ))
            }
            // response mode
            5 => {
                r.response_mode = match r.response_mode {
                    ResponseMode::Text => ResponseMode::OpenAi,
                    _ => ResponseMode::Text,
                }
            }
            // salt
            6 => {
                r.cache_salt = Some(format!(
                    "{}{other}",
                    r.cache_salt.clone().unwrap_or_default()
                ))
            }
            // sampling: a new key of every kind the caller may set
            7 => {
                let keys = [
                    "temperature",
                    "top_p",
                    "max_tokens",
                    "stop",
                    "tools",
                    "tool_choice",
                    "response_format",
                    "reasoning",
                ];
                r.overlay
                    .insert(format!("{}_{other}", keys[k % keys.len()]), json!(other));
            }
            8 => {
                r.overlay.insert("seed".into(), json!(format!("s{other}")));
            }
            // request effort: another level, or set/unset
            9 => {
                let i = EFFORT_ORDER
                    .iter()
                    .position(|e| Some(*e) == r.reasoning_effort);
                r.reasoning_effort = match i {
                    None => Some(EFFORT_ORDER[k % EFFORT_ORDER.len()]),
                    Some(i) => Some(
                        EFFORT_ORDER[(i + 1 + k % (EFFORT_ORDER.len() - 1)) % EFFORT_ORDER.len()],
                    ),
                };
            }
            10 => {
                r.reasoning_effort = match r.reasoning_effort {
                    None => Some(Effort::Low),
                    Some(_) => None,
                }
            }
            // structured: set/unset, kind, name, schema, strict, strategy
            11 => match r.structured.take() {
                None => {
                    r.structured = Some(StructuredSpec::Json);
                    m.strategy = Some("json_repair");
                }
                Some(_) => m.strategy = None,
            },
            12 => match &mut r.structured {
                None => {
                    r.structured = Some(StructuredSpec::Json);
                    m.strategy = Some("json_repair");
                }
                Some(StructuredSpec::Json) => {
                    r.structured = Some(StructuredSpec::Schema {
                        name: "n".into(),
                        schema: json!({"type": "object"}),
                        strict: true,
                    })
                }
                Some(StructuredSpec::Schema {
                    name,
                    schema,
                    strict,
                }) => match k % 3 {
                    0 => name.push_str(other),
                    1 => schema["required"] = json!([other]),
                    _ => *strict = !*strict,
                },
            },
            13 => match &m.strategy {
                None => {
                    r.structured = Some(StructuredSpec::Json);
                    m.strategy = Some("json_repair");
                }
                Some(name) => {
                    m.strategy = Some(if *name == "other_strategy" {
                        "json_repair"
                    } else {
                        "other_strategy"
                    })
                }
            },
            // the scope's model fingerprint
            _ => m.model.push_str(other),
        }
        m
    }

    // covers: C-48, C-45, CF-321, CF-325, CF-326
    proptest! {
        /// The proptest of issue 18 (C-44, C-48): any two requests that differ in one key
        /// member — messages, namespace, response mode, salt, sampling, request effort (every
        /// pair of levels, CF-325), structured spec (kind, name, schema, strict) or its
        /// strategy, the model fingerprint — have different keys; any two that differ only in
        /// non-members (tenant, meta, stream, deadline, session, parent id, cache policy other
        /// than bypass, a source's credentials, URL, timeouts and limits) share one. The
        /// logical call id is not an input of the key at all (the call opens after the key is
        /// built; `cf_321_322_326_key_independent_of_call_dimensions` shows two calls share it).
        #[test]
        fn c_44_c_48_members_change_key_non_members_do_not(
            d in drawn(),
            k in 0usize..64,
            tenant in "[a-z]{1,8}",
            meta_v in "[a-z]{0,8}",
            stream in any::<bool>(),
            deadline_ms in 1u64..100_000,
            other in "[A-Z]{1,8}",
        ) {
            // Non-members.
            let mut n = d.clone();
            n.request.tenant_id = Some(tenant);
            n.request.meta.insert("k".into(), meta_v.as_str().into());
            n.request.stream = stream;
            n.request.call_deadline = Some(Duration::from_millis(deadline_ms));
            n.request.session_id = Some(other.clone());
            n.request.parent_call_id = Some(other.clone());
            n.request.cache = CachePolicy::Refresh;
            prop_assert_eq!(key_of(&d), key_of(&n));
            let mut a = source("s1");
            a.model = d.model.clone();
            let mut b = a.clone();
            b.base_url = format!("http://{}.example:1", other.to_lowercase());
            b.api_key = Some(other.clone().into());
            b.timeout_s = 1.0 + (deadline_ms as f64);
            b.rpm = 7;
            b.max_concurrency = 3;
            prop_assert_eq!(model_fingerprint(&[a.clone()]), model_fingerprint(&[b]));
            // A fingerprint member of a source changes the fingerprint.
            let mut c = a.clone();
            match k % 3 {
                0 => c.provider.push_str(&other),
                1 => { c.extra_body.insert(other.clone(), json!(1)); }
                _ => c.effort_fallback = match c.effort_fallback {
                    EffortFallback::Error => EffortFallback::Nearest,
                    _ => EffortFallback::Error,
                },
            }
            prop_assert_ne!(model_fingerprint(&[a]), model_fingerprint(&[c]));
            // One member changed: every member, every way (k, k+1, k+2 pick the sub-kind),
            // on every drawn request.
            let base = key_of(&d);
            for which in 0..15 {
                for k in k..k + 3 {
                    let m = change(&d, which, &other, k);
                    prop_assert_ne!(&base, &key_of(&m), "member {} (way {}) changed", which, k);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Entry codec (C-53, C-55)
// ---------------------------------------------------------------------------------------------

// covers: C-53
/// CF-319 (C-53): the stored JSON has no `call_stats` and no `structured_data`; the completion
/// is its four fields.
#[test]
fn cf_319_encode_omits_stats_and_structured() {
    let mut r = LlmResponse::default();
    r.content = "ok".into();
    r.call_stats = Some(CallStats::new("l", 1, 5));
    r.structured_data = Some(json!({"a": 1}));
    r.completion = Some(completion(
        json!({"role": "assistant", "content": "ok"}),
        Some("stop"),
        Some("id"),
    ));
    let v: Value = serde_json::from_str(&encode_entry(&r).unwrap()).unwrap();
    assert!(v.get("call_stats").is_none());
    assert!(v.get("structured_data").is_none());
    let mut c: Vec<&str> = v["completion"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    c.sort_unstable();
    assert_eq!(c, ["finish_reason", "message", "response_id", "usage"]);
}

/// CF-320 (C-58): a legacy entry carrying `call_stats` restores without them.
#[test]
fn cf_320_stored_call_stats_never_surface() {
    let hit = decode_entry(
        &json!({"content": "legacy", "call_stats": {"attempts": 9}}).to_string(),
        ResponseMode::Text,
        None,
    )
    .unwrap();
    assert_eq!(hit.content, "legacy");
    assert!(hit.call_stats.is_none());
    assert!(hit.cache_hit);
}

/// CF-327 (C-55 step 3): openai entries with `completion` absent, `{}` or a message without
/// role are misses.
#[test]
fn cf_327_bad_completion_is_miss() {
    for entry in [
        json!({"content": "x"}),
        json!({"content": "x", "completion": {}}),
        json!({"content": "x", "completion": {"message": {"content": "x"}}}),
        json!({"content": "x", "completion": "nope"}),
    ] {
        assert!(
            decode_entry(&entry.to_string(), ResponseMode::OpenAi, None).is_err(),
            "{entry}"
        );
    }
}

// covers: C-55, V-62
/// CF-333 (C-55 steps 4–5): judged on the stored values — salvaged, illegal stream end,
/// `length`, a non-string finish, an openai reasoning-only completion with `length`.
#[test]
fn cf_333_stored_values_judged() {
    let text = |e: Value| decode_entry(&e.to_string(), ResponseMode::Text, None);
    assert_eq!(
        text(json!({"content": "x", "stream_end": "salvaged"})).unwrap_err(),
        RestoreMiss::NotCacheable
    );
    assert!(text(json!({"content": "x", "stream_end": "bogus"})).is_err());
    assert!(text(json!({"content": "x", "finish_reason": "length"})).is_err());
    assert!(text(json!({"content": "x", "finish_reason": 5})).is_err());
    let reasoning_only = json!({"content": "", "completion": {
        "message": {"role": "assistant", "content": null, "reasoning_content": "thought"},
        "finish_reason": "length"}});
    assert!(decode_entry(&reasoning_only.to_string(), ResponseMode::OpenAi, None).is_err());
}

// covers: C-51
/// CF-334 (C-51, C-55): the effective finish falls back to the completion's.
#[test]
fn cf_334_effective_finish_from_completion() {
    let e = json!({"content": "x", "completion": {
        "message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}});
    assert!(decode_entry(&e.to_string(), ResponseMode::OpenAi, None).is_err());
}

/// CF-335 (C-55): a text entry without finish and stream end is a hit with both `None`.
#[test]
fn cf_335_text_entry_without_finish() {
    let hit = decode_entry(r#"{"content":"x"}"#, ResponseMode::Text, None).unwrap();
    assert_eq!(hit.stream_end, None);
    assert_eq!(hit.finish_reason, None);
}

/// CF-336 (C-58): `stream_end eof_after_finish` and only a completion finish → hit with
/// `stream_end None`, `finish_reason stop`.
#[test]
fn cf_336_hit_rewrite_finish_and_stream_end() {
    let e = json!({"content": "ok", "stream_end": "eof_after_finish", "completion": {
        "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop",
        "response_id": "up"}});
    let hit = decode_entry(&e.to_string(), ResponseMode::OpenAi, None).unwrap();
    assert_eq!(hit.stream_end, None);
    assert_eq!(
        hit.finish_reason.as_ref().map(FinishReason::as_str),
        Some("stop")
    );
    assert_eq!(hit.completion.unwrap().response_id(), Some("up"));
}

/// CF-337 (C-53, C-58): a fresh text result with `stop` and `eof_after_finish` stores both;
/// the hit has `stop` and no stream end.
#[test]
fn cf_337_stored_then_rewritten() {
    let mut r = LlmResponse::default();
    r.content = "ok".into();
    r.finish_reason = FinishReason::new("stop");
    r.stream_end = Some(StreamEnd::EofAfterFinish);
    let stored = encode_entry(&r).unwrap();
    let v: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(v["finish_reason"], "stop");
    assert_eq!(v["stream_end"], "eof_after_finish");
    let hit = decode_entry(&stored, ResponseMode::Text, None).unwrap();
    assert_eq!(
        hit.finish_reason.as_ref().map(FinishReason::as_str),
        Some("stop")
    );
    assert_eq!(hit.stream_end, None);
}

/// CF-340 (C-55): a stored completion with `usage` missing or null restores `usage None`.
#[test]
fn cf_340_completion_usage_missing_or_null() {
    for usage in [None, Some(Value::Null)] {
        let mut c =
            json!({"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"});
        if let Some(u) = usage {
            c["usage"] = u;
        }
        let e = json!({"content": "ok", "completion": c});
        let hit = decode_entry(&e.to_string(), ResponseMode::OpenAi, None).unwrap();
        assert!(hit.completion.unwrap().usage().is_none());
    }
}

/// C-55 steps 1, 2, 6: not an object → miss; unknown fields ignored; lenient observation and
/// effort coercion.
#[test]
fn c_55_restore_steps_1_2_6() {
    for bad in ["[1,2]", "\"x\"", "not json", r#"{"content": 5}"#] {
        assert_eq!(
            decode_entry(bad, ResponseMode::Text, None).unwrap_err(),
            RestoreMiss::Malformed,
            "{bad}"
        );
    }
    let hit = decode_entry(
        r#"{"content":"x","future_field":1,"thinking_observation":"maybe","applied_effort":"turbo"}"#,
        ResponseMode::Text,
        None,
    )
    .unwrap();
    assert_eq!(
        hit.thinking_observation,
        gateway_ports::ThinkingObservation::Unknown
    );
    assert_eq!(hit.applied_effort, None);
    let hit = decode_entry(
        r#"{"content":"x","thinking_observation":"observed","applied_effort":"high"}"#,
        ResponseMode::Text,
        None,
    )
    .unwrap();
    assert_eq!(
        hit.thinking_observation,
        gateway_ports::ThinkingObservation::Observed
    );
    assert_eq!(hit.applied_effort, Some(Effort::High));
}

struct JsonOnly;

impl StructuredOutputStrategy for JsonOnly {
    fn name(&self) -> &'static str {
        "json_only"
    }
    fn request_overlay(&self, _spec: &StructuredSpec) -> Map<String, Value> {
        Map::new()
    }
    fn parse(&self, text: &str, _spec: &StructuredSpec) -> Result<Value, StructuredFailure> {
        serde_json::from_str(text).map_err(|_| StructuredFailure::default())
    }
}

/// C-55 step 7: `structured_data` is rebuilt with this call's strategy; failure is a miss.
#[test]
fn c_55_step_7_structured_rebuilt() {
    let spec = StructuredSpec::Json;
    let s = gateway_core::cache::RestoreStructured {
        spec: &spec,
        strategy: &JsonOnly,
        escalation: None,
    };
    let hit = decode_entry(r#"{"content":"{\"a\":1}"}"#, ResponseMode::Text, Some(s)).unwrap();
    assert_eq!(hit.structured_data, Some(json!({"a": 1})));
    assert_eq!(
        decode_entry(r#"{"content":"not json"}"#, ResponseMode::Text, Some(s)).unwrap_err(),
        RestoreMiss::Structured
    );
}

/// C-55 step 7 / C-44: a structured request without a strategy does not use the cache; with
/// one, the strategy name enters the key.
#[test]
fn c_44_structured_needs_strategy() {
    let clock: Arc<dyn Clock> = Arc::new(FakeClock::new());
    let cache = ChatCache::new(
        Arc::new(MemoryCache::new(10, clock)),
        &[source("s1")],
        "llm",
        Duration::from_secs(60),
    );
    let r = ChatRequest {
        structured: Some(StructuredSpec::Json),
        ..request("m")
    };
    assert!(cache.prepare(&r, None).is_none());
    let call = cache.prepare(&r, Some(&JsonOnly)).unwrap();
    assert_ne!(call.key(), cache.key_for(&request("m"), None));
    assert_eq!(call.key(), cache.key_for(&r, Some("json_only")));
}

// ---------------------------------------------------------------------------------------------
// Read / write paths through the governor
// ---------------------------------------------------------------------------------------------

// covers: C-58, V-63
/// CF-290 (C-58): the second identical call hits — attempts 0, a fresh logical id, generation
/// 0, `cache_hit true`, a fresh `call_id`, latency 0, historic usage and model.
#[tokio::test(start_paused = true)]
async fn cf_290_second_identical_call_hits() {
    let f = cache_fx();
    f.fx.runner.push(Script::ok(text_result(
        "answer",
        Some("stop"),
        Some(StreamEnd::Done),
    )));
    let r = request("q");
    let first = f.chat(&r).await.unwrap();
    assert!(!first.cache_hit);
    let second = f.chat(&r).await.unwrap();
    assert!(second.cache_hit);
    assert_eq!(f.fx.runner.call_count(), 1, "upstream called once");
    let (s1, s2) = (
        first.call_stats.unwrap(),
        second.call_stats.clone().unwrap(),
    );
    assert_eq!(s2.attempts, 0);
    assert_eq!(s2.generation_ms, 0);
    assert_eq!(s2.hedges, 0);
    assert!(!s2.hedge_won);
    assert_eq!(s2.stall_ms, None);
    assert_ne!(s1.logical_call_id, s2.logical_call_id);
    assert_ne!(first.call_id, second.call_id);
    assert_eq!(second.latency_ms, 0);
    assert_eq!(second.ttft_ms, None);
    assert_eq!(second.stream_end, None);
    assert_eq!(second.content, "answer");
    assert_eq!(second.usage, Usage::new(10, 5));
    assert_eq!(second.model, "m");
    assert_eq!(second.source_name, "s1");
}

/// CF-291 (C-58; 30 G-122): a cache that advances the injected clock 0.25 s per operation;
/// a hit (one `get`) → `total_latency_ms 250`.
#[tokio::test(start_paused = true)]
async fn cf_291_hit_total_latency_is_cache_path_time() {
    let f = cache_fx_with(|c, clock| tick(c, clock, Duration::from_millis(250)), None);
    let r = request("q");
    f.inject(&r, json!({"content": "cached"})).await;
    let hit = f.chat(&r).await.unwrap();
    assert!(hit.cache_hit);
    assert_eq!(f.gets(), 1);
    assert_eq!(hit.call_stats.unwrap().total_latency_ms, 250);
}

// covers: C-52
/// CF-314 (C-52; 30 G-94): a `set` taking 0.5 s under a 0.2 s deadline → `CDE`; transport
/// called once; one `set` started; nothing stored; one terminal row.
#[tokio::test(start_paused = true)]
async fn cf_314_deadline_expires_during_set() {
    let f = cache_fx_with(
        |c, _| {
            c.delay(CacheMethod::Set, Duration::from_millis(500));
        },
        Some(Duration::from_millis(200)),
    );
    f.fx.runner
        .push(Script::ok(text_result("answer", Some("stop"), None)));
    let r = request("q");
    let e = f.chat(&r).await.unwrap_err();
    assert!(matches!(e, GatewayError::CallDeadlineExceeded(_)), "{e:?}");
    assert_eq!(f.fx.runner.call_count(), 1);
    assert_eq!(f.sets(), 1);
    assert!(f.memory.is_empty(), "nothing stored");
    assert_eq!(f.fx.sink.terminals().len(), 1);
}

// covers: V-61
/// CF-328 (C-52): a failing `set` is a warning; the call returns the fresh response.
#[tokio::test(start_paused = true)]
async fn cf_328_set_failure_returns_fresh() {
    let f = cache_fx_with(
        |c, _| {
            c.fail(CacheMethod::Set, CacheError::new("set refused by the test"));
        },
        None,
    );
    f.fx.runner
        .push(Script::ok(text_result("answer", Some("stop"), None)));
    let r = f.chat(&request("q")).await.unwrap();
    assert_eq!(r.content, "answer");
    assert!(!r.cache_hit);
    assert_eq!(f.sets(), 1);
}

// covers: C-54
/// CF-329 (C-54): a failing `get` is a warning and a miss; upstream called; the write still
/// happens.
#[tokio::test(start_paused = true)]
async fn cf_329_get_failure_is_miss() {
    let f = cache_fx_with(
        |c, _| {
            c.fail(CacheMethod::Get, CacheError::new("get refused by the test"));
        },
        None,
    );
    f.fx.runner
        .push(Script::ok(text_result("answer", Some("stop"), None)));
    let r = f.chat(&request("q")).await.unwrap();
    assert!(!r.cache_hit);
    assert_eq!(f.fx.runner.call_count(), 1);
    assert_eq!(f.sets(), 1);
}

/// CF-330 (C-55, C-56): unusable stored openai messages are misses; the fresh result
/// overwrites them and the next call hits with the fresh `response_id`.
#[tokio::test(start_paused = true)]
async fn cf_330_bad_openai_entries_overwritten() {
    let messages = [
        json!({"role": "assistant"}),
        json!({"role": "assistant", "content": null, "tool_calls": []}),
        json!({"role": "assistant", "content": "", "tool_calls": []}),
        json!({"role": "assistant", "content": " \n", "tool_calls": []}),
        json!({"role": "assistant", "content": null, "reasoning_content": "only"}),
    ];
    for message in messages {
        for stored_content in ["", "stale projection"] {
            let f = cache_fx();
            let r = openai("q");
            f.inject(
                &r,
                json!({"content": stored_content, "finish_reason": "stop", "completion": {
                    "message": message, "finish_reason": "stop", "response_id": "bad"}}),
            )
            .await;
            let fresh = completion(
                json!({"role": "assistant", "content": "good"}),
                Some("stop"),
                Some("fresh"),
            );
            f.fx.runner.push(Script::ok(openai_result("good", fresh)));
            let first = f.chat(&r).await.unwrap();
            assert!(!first.cache_hit, "{message} / {stored_content}");
            assert_eq!(f.fx.runner.call_count(), 1);
            let second = f.chat(&r).await.unwrap();
            assert!(second.cache_hit);
            assert_eq!(f.fx.runner.call_count(), 1);
            assert_eq!(second.completion.unwrap().response_id(), Some("fresh"));
        }
    }
}

/// CF-331 (C-55): a stored tool-only completion is a hit; upstream not called.
#[tokio::test(start_paused = true)]
async fn cf_331_tool_only_completion_hits() {
    let f = cache_fx();
    let r = openai("q");
    let c = json!({"message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call-1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
        "finish_reason": "tool_calls", "response_id": "tool-response"});
    f.inject(&r, json!({"content": "", "completion": c.clone()}))
        .await;
    let hit = f.chat(&r).await.unwrap();
    assert!(hit.cache_hit);
    assert_eq!(f.fx.runner.call_count(), 0);
    let expected: OpenAiChatCompletion = serde_json::from_value(c).unwrap();
    assert_eq!(hit.completion.unwrap(), expected);
}

// covers: CF-338, C-49, C-50, V-61, V-64
/// CF-332, CF-338 (C-49, C-50): salvaged, `length`, `content_filter`, `end_turn`, openai
/// reasoning-only (length and stop) and think-tag-only results are delivered but not stored;
/// the next identical call goes upstream again.
#[tokio::test(start_paused = true)]
async fn cf_332_cf_338_uncacheable_results_not_stored() {
    let reasoning_only = |finish: &str| {
        completion(
            json!({"role": "assistant", "content": null, "reasoning_content": "thought"}),
            Some(finish),
            Some("r"),
        )
    };
    let think_only = completion(
        json!({"role": "assistant", "content": "<think>x</think>"}),
        Some("stop"),
        Some("t"),
    );
    let cases: Vec<(ChatRequest, TransportResult)> = vec![
        (
            request("q"),
            text_result("partial", None, Some(StreamEnd::Salvaged)),
        ),
        (
            request("q"),
            text_result("cut", Some("length"), Some(StreamEnd::Done)),
        ),
        (
            request("q"),
            text_result("hidden", Some("content_filter"), None),
        ),
        (request("q"), text_result("odd", Some("end_turn"), None)),
        (openai("q"), openai_result("", reasoning_only("length"))),
        (openai("q"), openai_result("", reasoning_only("stop"))),
        (openai("q"), {
            let mut r = openai_result("", think_only);
            r.thinking = "x".into();
            r
        }),
    ];
    for (i, (req, result)) in cases.into_iter().enumerate() {
        let f = cache_fx();
        f.fx.runner.push(Script::ok(result.clone()));
        f.fx.runner.push(Script::ok(result));
        let first = f.chat(&req).await.unwrap();
        assert!(!first.cache_hit, "case {i}");
        assert_eq!(f.sets(), 0, "case {i}: backend untouched");
        assert!(f.memory.is_empty(), "case {i}");
        let second = f.chat(&req).await.unwrap();
        assert!(!second.cache_hit, "case {i}");
        assert_eq!(second.call_stats.unwrap().attempts, 1, "case {i}");
        assert_eq!(f.fx.runner.call_count(), 2, "case {i}");
    }
}

// covers: C-57, C-58, V-63
/// CF-339 (C-57, C-58): openai, namespace `tools`, TTL 60: stream then non-stream — first
/// miss, second hit; equal completions, distinct call ids, attempts 0, historic response id;
/// mutating the second hit leaves a third hit with two tool calls.
#[tokio::test(start_paused = true)]
async fn cf_339_hits_are_independent_copies() {
    let fx = FxBuilder {
        fake_clock: true,
        ..FxBuilder::default()
    }
    .build();
    let clock: Arc<dyn Clock> = fx.fake.clone().unwrap();
    let cache = ChatCache::new(
        Arc::new(MemoryCache::new(10, clock)),
        &[source("s1")],
        "tools",
        Duration::from_secs(60),
    );
    let tools = json!([
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"q\": 1}"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]);
    let c = completion(
        json!({"role": "assistant", "content": null, "tool_calls": tools}),
        Some("tool_calls"),
        Some("upstream-1"),
    );
    fx.runner.push(Script::ok(openai_result("", c.clone())));
    let r1 = ChatRequest {
        stream: true,
        ..openai("q")
    };
    let r2 = ChatRequest {
        stream: false,
        ..openai("q")
    };
    async fn go(
        gov: &gateway_core::governor::Governor,
        runner: &gateway_testkit::ScriptedRunner,
        cache: &ChatCache,
        r: &ChatRequest,
    ) -> LlmResponse {
        let call = cache.prepare(r, None);
        gov.run_chat_cached(
            runner,
            CallOptions::default().with_stream(r.stream),
            call.as_ref(),
        )
        .await
        .unwrap()
    }
    let go = |r| go(&fx.gov, &fx.runner, &cache, r);
    let first = go(&r1).await;
    let mut second = go(&r2).await;
    assert!(!first.cache_hit);
    assert!(second.cache_hit);
    assert_eq!(fx.runner.call_count(), 1);
    assert_eq!(first.completion, second.completion);
    assert_ne!(first.call_id, second.call_id);
    assert_eq!(second.call_stats.as_ref().unwrap().attempts, 0);
    assert_eq!(
        second.completion.as_ref().unwrap().response_id(),
        Some("upstream-1")
    );
    // Mutate the second hit's message: rebuild the completion without tool calls.
    let mut message = second.completion.take().unwrap().into_message();
    message.remove("tool_calls");
    let third = go(&r1).await;
    assert_eq!(third.completion.unwrap().tool_calls().len(), 2);
}

// covers: V-57
/// CF-341, CF-255 (C-50, C-52): an upstream failure writes nothing (no orphan task: the
/// backend saw no `set`).
#[tokio::test(start_paused = true)]
async fn cf_341_cf_255_failure_writes_nothing() {
    let f = cache_fx();
    f.fx.runner.push(Script::fail(rejected()));
    let e = f.chat(&openai("q")).await.unwrap_err();
    assert!(matches!(e, GatewayError::RequestRejected(_)), "{e:?}");
    assert_eq!(f.sets(), 0);
    assert_eq!(f.fx.sink.terminals().len(), 1);
    assert!(f.hit_rows().is_empty());
    f.fx.gov.quiesce().await;
    assert_eq!(f.fx.gov.cleanup_stats().pending, 0);
}

/// CF-342 (C-54): cancellation during `get` or `set` propagates (the call is dropped; the
/// boundary writes its one cancelled terminal row, the cache layer none — CF-363).
#[tokio::test(start_paused = true)]
async fn cf_342_cf_363_cancellation_during_get_and_set() {
    // During get.
    let f = cache_fx_with(
        |c, _| {
            c.delay(CacheMethod::Get, Duration::from_secs(10));
        },
        None,
    );
    let r = request("q");
    let res = tokio::time::timeout(Duration::from_secs(1), f.chat(&r)).await;
    assert!(res.is_err(), "cancelled while reading");
    assert_eq!(f.fx.runner.call_count(), 0);
    f.fx.gov.quiesce().await;
    let rows = f.fx.sink.rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].kind(), "terminal_failure");
    // During set.
    let f = cache_fx_with(
        |c, _| {
            c.delay(CacheMethod::Set, Duration::from_secs(10));
        },
        None,
    );
    f.fx.runner
        .push(Script::ok(text_result("answer", Some("stop"), None)));
    let res = tokio::time::timeout(Duration::from_secs(1), f.chat(&r)).await;
    assert!(res.is_err(), "cancelled while writing");
    assert!(f.memory.is_empty());
    f.fx.gov.quiesce().await;
    assert!(f.hit_rows().is_empty());
    assert_eq!(f.fx.sink.terminals().len(), 1);
}

/// CF-343 (C-41): `Bypass` on a stored key neither reads nor writes; `Refresh` writes without
/// reading.
#[tokio::test(start_paused = true)]
async fn cf_343_bypass_and_refresh() {
    let f = cache_fx();
    let r = request("q");
    f.inject(&r, json!({"content": "old"})).await;
    f.fx.runner
        .push(Script::ok(text_result("new", Some("stop"), None)));
    let bypass = ChatRequest {
        cache: CachePolicy::Bypass,
        ..r.clone()
    };
    let out = f.chat(&bypass).await.unwrap();
    assert_eq!(out.content, "new");
    assert_eq!((f.gets(), f.sets()), (0, 0));
    f.fx.runner
        .push(Script::ok(text_result("newer", Some("stop"), None)));
    let refresh = ChatRequest {
        cache: CachePolicy::Refresh,
        ..r.clone()
    };
    let out = f.chat(&refresh).await.unwrap();
    assert_eq!(out.content, "newer");
    assert_eq!((f.gets(), f.sets()), (0, 1));
    let hit = f.chat(&r).await.unwrap();
    assert!(hit.cache_hit);
    assert_eq!(hit.content, "newer");
}

// covers: C-59, CF-363
/// CF-344, CF-363 (C-59; 80 T-12): exactly one `cache_hit` row per hit — latency 0, cost 0.0,
/// historic model and tokens, stream end and stall NULL, request-level effort; no attempt or
/// terminal row.
#[tokio::test(start_paused = true)]
async fn cf_344_one_cache_hit_row() {
    let f = cache_fx();
    let r = request("q");
    f.inject(
        &r,
        json!({"content": "cached", "model": "historic", "usage": {"prompt_tokens": 3, "completion_tokens": 4},
               "stream_end": "done", "finish_reason": "stop"}),
    )
    .await;
    let hit = f.chat(&r).await.unwrap();
    let rows = f.fx.sink.rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let facts = f.hit_rows().pop().unwrap();
    assert_eq!(facts.call_id, hit.call_id);
    assert_eq!(
        facts.call.logical_call_id,
        hit.call_stats.as_ref().unwrap().logical_call_id
    );
    let row = RowShaper::default().cache_hit_row(&facts);
    assert!(row.cache_hit);
    assert_eq!(row.latency_ms, 0);
    assert_eq!(row.cost, Some(0.0));
    assert_eq!(row.model, "historic");
    assert_eq!((row.prompt_tokens, row.completion_tokens), (3, 4));
    assert_eq!(row.stream_end, None);
    assert_eq!(row.stall_ms, None);
    assert_eq!(row.reasoning_effort, None);
}

/// C-56: a restore failure is a miss and the fresh result overwrites the entry.
#[tokio::test(start_paused = true)]
async fn c_56_miss_overwrites() {
    let f = cache_fx();
    let r = request("q");
    f.inject(&r, json!({"content": "x", "stream_end": "salvaged"}))
        .await;
    f.fx.runner
        .push(Script::ok(text_result("fresh", Some("stop"), None)));
    assert!(!f.chat(&r).await.unwrap().cache_hit);
    let hit = f.chat(&r).await.unwrap();
    assert!(hit.cache_hit);
    assert_eq!(hit.content, "fresh");
}

/// C-42: two tenants with their own namespaces never read each other's entries on one shared
/// memory backend; the tenant id alone does not isolate (it is not in the key).
#[tokio::test(start_paused = true)]
async fn c_42_tenants_isolated_by_namespace() {
    let f = cache_fx();
    let tenant = |t: &str| ChatRequest {
        tenant_id: Some(t.into()),
        cache_namespace: Some(CacheNamespace::compose(t, 1, "chat")),
        ..request("same question")
    };
    f.fx.runner
        .push(Script::ok(text_result("for acme", Some("stop"), None)));
    f.fx.runner
        .push(Script::ok(text_result("for globex", Some("stop"), None)));
    assert_eq!(f.chat(&tenant("acme")).await.unwrap().content, "for acme");
    let g = f.chat(&tenant("globex")).await.unwrap();
    assert!(!g.cache_hit, "globex never reads acme's entry");
    assert_eq!(g.content, "for globex");
    assert_eq!(f.chat(&tenant("acme")).await.unwrap().content, "for acme");
    assert_eq!(
        f.chat(&tenant("globex")).await.unwrap().content,
        "for globex"
    );
    assert_eq!(f.fx.runner.call_count(), 2);
    // Same namespace, different tenant ids: shared (C-48).
    let mut shared = tenant("acme");
    shared.tenant_id = Some("someone-else".into());
    assert!(f.chat(&shared).await.unwrap().cache_hit);
    // Epoch bump: a fresh namespace, a miss.
    f.fx.runner
        .push(Script::ok(text_result("acme v2", Some("stop"), None)));
    let bumped = ChatRequest {
        cache_namespace: Some(CacheNamespace::compose("acme", 2, "chat")),
        ..tenant("acme")
    };
    assert!(!f.chat(&bumped).await.unwrap().cache_hit);
}

// covers: CT-CACHE-02, CT-CACHE-06
/// C-61 (memory backend): TTL on the injected clock, LRU eviction, `get` refreshes recency.
#[tokio::test]
async fn c_61_memory_ttl_and_lru() {
    let clock = Arc::new(FakeClock::new());
    let m = MemoryCache::new(2, clock.clone());
    m.set("a", "1".into(), Duration::from_secs(10))
        .await
        .unwrap();
    m.set("b", "2".into(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(m.get("a").await.unwrap().as_deref(), Some("1")); // a is now most recent
    m.set("c", "3".into(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(m.get("b").await.unwrap(), None, "b was least recently used");
    assert_eq!(m.len(), 2);
    clock.advance(Duration::from_secs(10));
    assert_eq!(
        m.get("a").await.unwrap(),
        None,
        "expires_at <= now is a miss"
    );
    assert_eq!(m.len(), 1, "the expired entry was evicted");
    m.close().await;
    assert!(m.get("c").await.is_err());
}

/// C-40/C-41 per-call values: a bad namespace or salt is `InvalidArgument` naming the field.
#[test]
fn c_41_per_call_namespace_domain() {
    let mut r = request("q");
    r.cache_namespace = Some(String::new());
    let e = gateway_core::cache::check_cache_options(&r, "ChatOptions").unwrap_err();
    assert!(format!("{e}").contains("cache_namespace"), "{e}");
    let mut r = request("q");
    r.cache_salt = Some("a\nb".into());
    let e = gateway_core::cache::check_cache_options(&r, "ChatOptions").unwrap_err();
    assert!(format!("{e}").contains("cache_salt"), "{e}");
    r.cache_salt = Some("ok".into());
    assert!(gateway_core::cache::check_cache_options(&r, "ChatOptions").is_ok());
}

/// C-63: no single-flight — two concurrent identical misses both go upstream; the last write
/// wins and the next call hits.
#[tokio::test(start_paused = true)]
async fn c_63_no_single_flight() {
    let fx = FxBuilder {
        fake_clock: true,
        sources: vec![{
            let mut s = source("s1");
            s.max_concurrency = 4;
            s.tpm = 0;
            s
        }],
        ..FxBuilder::default()
    }
    .build();
    let clock: Arc<dyn Clock> = fx.fake.clone().unwrap();
    let cache = ChatCache::new(
        Arc::new(MemoryCache::new(10, clock)),
        &[source("s1")],
        "llm",
        Duration::from_secs(60),
    );
    fx.runner.push(Script::succeed_after(
        Duration::from_millis(100),
        text_result("first", Some("stop"), None),
    ));
    fx.runner.push(Script::succeed_after(
        Duration::from_millis(200),
        text_result("second", Some("stop"), None),
    ));
    let r = request("q");
    let one = cache.prepare(&r, None);
    let two = cache.prepare(&r, None);
    let (a, b) = tokio::join!(
        fx.gov
            .run_chat_cached(&fx.runner, CallOptions::default(), one.as_ref()),
        fx.gov
            .run_chat_cached(&fx.runner, CallOptions::default(), two.as_ref()),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(!a.cache_hit && !b.cache_hit, "both went upstream");
    assert_eq!(fx.runner.call_count(), 2);
    let three = cache.prepare(&r, None);
    let hit = fx
        .gov
        .run_chat_cached(&fx.runner, CallOptions::default(), three.as_ref())
        .await
        .unwrap();
    assert!(hit.cache_hit);
    assert_eq!(hit.content, "second", "the last write wins");
}
