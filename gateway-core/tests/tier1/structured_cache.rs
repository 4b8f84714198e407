//! The structured-output ladder inside the response-cache stage (70 C-44, C-49, C-50, C-52,
//! C-55 step 7, C-56, C-58, C-59; 05 R-4 `chat → cache → ladder → loop`): the key carries the
//! structured spec and the strategy's name, only the final validated answer is stored (the
//! intermediate rounds that failed to parse never are), a hit rebuilds `structured_data` from the
//! stored text with zero network, and an exhausted ladder or a truncated final answer writes
//! nothing. Tier 1: `ladder::run_cached` over `Governor::begin_ladder_call`, every round a
//! `ChatExecutor` over a `ScriptedWire`, the real `MemoryCache`, paused clock.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a missing value is a failed test"
)]

use crate::exec;
use crate::support;

use std::sync::Arc;
use std::time::Duration;

use exec::{USAGE, delta, done, response, wire_of};
use gateway_core::cache::{ChatCache, MemoryCache};
use gateway_core::clock::TokioClock;
use gateway_core::executor::ChatExecutor;
use gateway_core::governor::CallOptions;
use gateway_core::structured::ladder::{self, LadderOptions};
use gateway_core::structured::{JsonSchemaStrategy, Ladder};
use gateway_core::telemetry::RowInput;
use gateway_ports::request::{ChatRequest, StructuredSpec};
use gateway_ports::{
    GatewayError, LlmResponse, ResponseCache, ResponseMode, StructuredOutputStrategy,
};
use gateway_testkit::hooked::CacheMethod;
use gateway_testkit::{HookedCache, RecordedRow, ScriptedWire};
use serde_json::{Value, json};
use support::{Fx, FxBuilder};
use upstream_sim::script::{End, Response};

/// A streamed 200 with one content delta, then `finish` + usage + DONE.
fn answer_with(text: &str, finish: &str) -> Response {
    let delta_json = json!({"role": "assistant", "content": text}).to_string();
    response(
        vec![
            delta(0, &delta_json, None, None),
            delta(0, "{}", Some(finish), Some(USAGE)),
            done(0),
        ],
        End::Eof,
    )
}

fn answer(text: &str) -> Response {
    answer_with(text, "stop")
}

fn schema(name: &str) -> StructuredSpec {
    StructuredSpec::Schema {
        name: name.into(),
        schema: json!({"type": "object", "properties": {"answer": {"type": "integer"}},
                       "required": ["answer"]}),
        strict: true,
    }
}

fn structured(spec: Option<StructuredSpec>) -> ChatRequest {
    let mut r = (*exec::request(ResponseMode::Text, true)).clone();
    r.structured = spec;
    r
}

/// A governor fixture, a memory cache (with direct access to the backend) and the ladder's
/// options.
struct Sc {
    fx: Fx,
    memory: Arc<MemoryCache>,
    cache: ChatCache,
    options: LadderOptions,
}

fn sc(max_retries: u32) -> Sc {
    let fx = FxBuilder::default().build();
    let memory = Arc::new(MemoryCache::new(100, Arc::new(TokioClock::new())));
    let cache = ChatCache::new(
        memory.clone(),
        &[exec::source()],
        "llm",
        Duration::from_secs(60),
    );
    Sc {
        fx,
        memory,
        cache,
        options: LadderOptions {
            max_retries,
            ..LadderOptions::default()
        },
    }
}

impl Sc {
    /// One call: structured requests through `ladder::run_cached`, plain ones through
    /// `run_chat_cached` (the two paths share the cache).
    async fn chat(
        &self,
        wire: &Arc<ScriptedWire>,
        request: &ChatRequest,
    ) -> Result<LlmResponse, GatewayError> {
        let call = CallOptions::default().with_row_input(Arc::new(RowInput::chat(request)));
        if request.structured.is_none() {
            let executor = ChatExecutor::new(wire.clone(), Arc::new(request.clone()));
            let cache = self.cache.prepare(request, None);
            return self
                .fx
                .gov
                .run_chat_cached(&executor, call, cache.as_ref())
                .await;
        }
        let handle = self.fx.gov.begin_ladder_call(call).unwrap();
        let cache = self.cache.prepare_structured(
            request,
            Some(self.options.strategy.as_ref()),
            self.options.escalation.as_deref(),
        );
        let mut state = Ladder::new(request, self.options.clone());
        ladder::run_cached(handle, &mut state, cache.as_ref(), |round| {
            ChatExecutor::new(wire.clone(), round)
        })
        .await
    }

    fn key(&self, request: &ChatRequest) -> String {
        self.cache
            .prepare_structured(request, Some(self.options.strategy.as_ref()), None)
            .unwrap()
            .key()
            .to_owned()
    }

    async fn stored(&self, request: &ChatRequest) -> Option<Value> {
        self.memory
            .get(&self.key(request))
            .await
            .unwrap()
            .map(|s| serde_json::from_str(&s).unwrap())
    }

    fn hit_rows(&self) -> usize {
        self.fx
            .sink
            .rows()
            .into_iter()
            .filter(|r| matches!(r, RecordedRow::CacheHit(_)))
            .count()
    }
}

// covers: C-50, C-52, C-58, C-59
/// C-44, C-50, C-55 step 7: a ladder that needed a re-ask stores exactly one entry — the final
/// validated answer, never the intermediate round — and the second identical call is a hit with
/// the validated `structured_data`, no upstream request, attempts 0 and one `cache_hit` row.
#[tokio::test(start_paused = true)]
async fn c_44_c_50_structured_ladder_inside_cache_stage_stores_only_final_answer() {
    let s = sc(2);
    let wire = wire_of(vec![answer("not json at all"), answer(r#"{"answer": 1}"#)]);
    let request = structured(Some(schema("answer")));
    let first = s.chat(&wire, &request).await.unwrap();
    assert!(!first.cache_hit);
    assert_eq!(first.structured_data, Some(json!({"answer": 1})));
    assert_eq!(wire.request_count(), 2, "one re-ask");
    assert_eq!(s.memory.len(), 1, "only the final answer is stored");
    let stored = s
        .stored(&request)
        .await
        .expect("stored under the structured key");
    assert_eq!(stored["content"], json!(r#"{"answer": 1}"#));
    assert!(stored.get("structured_data").is_none(), "C-53");

    let second = s.chat(&wire, &request).await.unwrap();
    assert!(second.cache_hit);
    assert_eq!(second.structured_data, Some(json!({"answer": 1})));
    assert_eq!(wire.request_count(), 2, "no upstream request for the hit");
    let stats = second.call_stats.as_ref().unwrap();
    assert_eq!(stats.attempts, 0);
    assert_ne!(
        stats.logical_call_id,
        first.call_stats.as_ref().unwrap().logical_call_id
    );
    assert_ne!(second.call_id, first.call_id);
    s.fx.gov.quiesce().await;
    assert_eq!(s.hit_rows(), 1, "exactly one cache_hit row (C-59)");
    assert!(s.fx.sink.terminals().is_empty());
}

/// C-44 (the `structured` member, normative over 10 §8.6 which omits it): the same messages
/// without structured output, with another schema, or with another strategy never read the
/// structured entry.
#[tokio::test(start_paused = true)]
async fn c_44_structured_spec_and_strategy_are_key_members() {
    let mut s = sc(0);
    let wire = wire_of(vec![answer(r#"{"answer": 7}"#)]);
    let request = structured(Some(schema("answer")));
    s.chat(&wire, &request).await.unwrap();
    assert_eq!(wire.request_count(), 1);
    // Plain request, same messages: a miss.
    let plain = s.chat(&wire, &structured(None)).await.unwrap();
    assert!(!plain.cache_hit);
    assert_eq!(plain.structured_data, None);
    assert_eq!(wire.request_count(), 2);
    // Another schema name: a miss.
    let other = s
        .chat(&wire, &structured(Some(schema("other"))))
        .await
        .unwrap();
    assert!(!other.cache_hit);
    assert_eq!(wire.request_count(), 3);
    // JSON mode: a miss.
    let json_mode = s
        .chat(&wire, &structured(Some(StructuredSpec::Json)))
        .await
        .unwrap();
    assert!(!json_mode.cache_hit);
    assert_eq!(wire.request_count(), 4);
    // Another strategy, same spec: a miss.
    s.options.strategy = Arc::new(JsonSchemaStrategy);
    assert_ne!(
        s.options.strategy.name(),
        LadderOptions::default().strategy.name()
    );
    let other_strategy = s.chat(&wire, &request).await.unwrap();
    assert!(!other_strategy.cache_hit);
    assert_eq!(wire.request_count(), 5);
    // The original call still hits.
    s.options = LadderOptions {
        max_retries: 0,
        ..LadderOptions::default()
    };
    assert!(s.chat(&wire, &request).await.unwrap().cache_hit);
    assert_eq!(wire.request_count(), 5);
}

// covers: C-52, CF-341
/// C-50: an exhausted ladder (every round fails to parse) is an error and writes nothing; the
/// next identical call goes upstream again.
#[tokio::test(start_paused = true)]
async fn c_50_exhausted_ladder_writes_nothing() {
    let s = sc(1);
    let wire = wire_of(vec![answer("nope"), answer("still nope")]);
    let request = structured(Some(schema("answer")));
    match s.chat(&wire, &request).await {
        Err(GatewayError::ResultInvalid(_)) => {}
        other => panic!("expected ResultInvalid, got {other:?}"),
    }
    assert!(
        s.memory.is_empty(),
        "no intermediate round and no failure stored"
    );
    let _ = s.chat(&wire, &request).await;
    assert_eq!(
        wire.request_count(),
        4,
        "the second call went upstream (2 rounds)"
    );
    assert!(s.memory.is_empty());
}

// covers: C-49
/// C-49, C-50: a final answer that parses but was truncated (`length`) is delivered with its
/// `structured_data` and not stored: the one cacheability predicate judges the final answer.
#[tokio::test(start_paused = true)]
async fn c_50_structured_length_answer_not_stored() {
    let s = sc(0);
    let wire = wire_of(vec![answer_with(r#"{"answer": 3}"#, "length")]);
    let request = structured(Some(schema("answer")));
    let first = s.chat(&wire, &request).await.unwrap();
    assert_eq!(first.structured_data, Some(json!({"answer": 3})));
    assert!(s.memory.is_empty(), "a length answer is never stored");
    let second = s.chat(&wire, &request).await.unwrap();
    assert!(!second.cache_hit);
    assert_eq!(wire.request_count(), 2);
}

// covers: C-56
/// C-55 step 7, C-56: a stored entry whose text this call's strategies do not accept is a miss;
/// the ladder runs and its validated answer replaces the entry.
#[tokio::test(start_paused = true)]
async fn c_55_stored_text_the_strategy_refuses_is_a_miss_and_refilled() {
    let s = sc(0);
    let request = structured(Some(schema("answer")));
    s.memory
        .set(
            &s.key(&request),
            json!({"content": "{\"answer\": \"not an integer\"}", "finish_reason": "stop"})
                .to_string(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let wire = wire_of(vec![answer(r#"{"answer": 5}"#)]);
    let first = s.chat(&wire, &request).await.unwrap();
    assert!(!first.cache_hit, "the schema refuses the stored text");
    assert_eq!(wire.request_count(), 1);
    assert_eq!(
        s.stored(&request).await.unwrap()["content"],
        json!(r#"{"answer": 5}"#)
    );
    let second = s.chat(&wire, &request).await.unwrap();
    assert!(second.cache_hit);
    assert_eq!(second.structured_data, Some(json!({"answer": 5})));
}

/// C-55 step 7 with an escalation strategy: an answer produced by an escalated re-ask round is
/// accepted on a hit when the escalation strategy parses it, even if the round-0 strategy would
/// not.
#[tokio::test(start_paused = true)]
async fn c_55_hit_accepts_an_answer_of_the_escalation_strategy() {
    struct Fenced;
    impl StructuredOutputStrategy for Fenced {
        fn name(&self) -> &'static str {
            "fenced_only"
        }
        fn request_overlay(&self, _spec: &StructuredSpec) -> serde_json::Map<String, Value> {
            serde_json::Map::new()
        }
        fn parse(
            &self,
            text: &str,
            _spec: &StructuredSpec,
        ) -> Result<Value, gateway_ports::StructuredFailure> {
            text.strip_prefix("OK:")
                .and_then(|t| serde_json::from_str(t).ok())
                .ok_or_else(gateway_ports::StructuredFailure::default)
        }
    }
    let mut s = sc(1);
    s.options.escalation = Some(Arc::new(Fenced));
    let wire = wire_of(vec![answer("garbage"), answer(r#"OK:{"answer": 9}"#)]);
    let request = structured(Some(StructuredSpec::Json));
    let first = s.chat(&wire, &request).await.unwrap();
    assert_eq!(first.structured_data, Some(json!({"answer": 9})));
    let second = s.chat(&wire, &request).await.unwrap();
    assert!(
        second.cache_hit,
        "the escalation strategy accepts the stored text"
    );
    assert_eq!(second.structured_data, Some(json!({"answer": 9})));
    assert_eq!(wire.request_count(), 2);
}

// covers: C-52, G-94
/// CF-314 on the structured path: the write of the final answer runs inside the call's one
/// deadline; when the deadline expires during `set`, the answer is discarded, the call fails
/// with `CallDeadlineExceeded`, exactly one terminal row is written and nothing is stored.
#[tokio::test(start_paused = true)]
async fn cf_314_structured_write_inside_the_deadline() {
    let fx = FxBuilder {
        deadline: Some(Duration::from_secs(5)),
        ..FxBuilder::default()
    }
    .build();
    // A memory cache whose `set` takes 10 s (paused clock).
    let memory = Arc::new(MemoryCache::new(10, Arc::new(TokioClock::new())));
    let slow = Arc::new(HookedCache::new(memory.clone()));
    slow.delay(CacheMethod::Set, Duration::from_secs(10));
    let cache = ChatCache::new(
        slow.clone(),
        &[exec::source()],
        "llm",
        Duration::from_secs(60),
    );
    let options = LadderOptions::default();
    let request = structured(Some(schema("answer")));
    let wire = wire_of(vec![answer(r#"{"answer": 1}"#)]);
    let call = CallOptions::default().with_row_input(Arc::new(RowInput::chat(&request)));
    let handle = fx.gov.begin_ladder_call(call).unwrap();
    let prepared = cache.prepare_structured(&request, Some(options.strategy.as_ref()), None);
    let mut state = Ladder::new(&request, options.clone());
    let result = ladder::run_cached(handle, &mut state, prepared.as_ref(), |round| {
        ChatExecutor::new(wire.clone(), round)
    })
    .await;
    match result {
        Err(GatewayError::CallDeadlineExceeded(_)) => {}
        other => panic!("expected CallDeadlineExceeded, got {other:?}"),
    }
    assert!(memory.is_empty(), "nothing stored");
    fx.gov.quiesce().await;
    assert_eq!(fx.sink.terminals().len(), 1, "one terminal row");
}
