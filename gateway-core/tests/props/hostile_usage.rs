//! Issue 22 (usage plausibility): an absurd usage object (`prompt_tokens` = 2^64 − 1, a count
//! above 10^8, `cached_tokens` > `prompt_tokens`, reasoning above completion) is not measured:
//! the result carries `Unavailable` usage (so the attempt settles its estimate and no cost is
//! computed), and one `dialect.implausible_usage` warning is recorded per source.

#![allow(clippy::unwrap_used, reason = "test assertions")]

use crate::exec;

use exec::*;
use gateway_core::accumulate::Admission;
use gateway_core::accumulate::{
    AccumulateOptions, DialectWarning, MAX_PLAUSIBLE_TOKENS, measured_usage, parse_non_stream_body,
    usage_is_plausible,
};
use gateway_core::attempt::SettleMode;
use gateway_ports::{ResponseMode, Usage, UsageSource};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const ABSURD: [&str; 5] = [
    r#"{"prompt_tokens": 18446744073709551615, "completion_tokens": 7}"#,
    r#"{"prompt_tokens": 11, "completion_tokens": 100000001}"#,
    r#"{"prompt_tokens": 11, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 12}}"#,
    r#"{"prompt_tokens": 11, "completion_tokens": 7, "prompt_cache_hit_tokens": 99}"#,
    r#"{"prompt_tokens": 11, "completion_tokens": 7, "completion_tokens_details": {"reasoning_tokens": 8}}"#,
];

#[tokio::test(start_paused = true)]
async fn issue_22_absurd_stream_usage_is_unavailable_settles_estimate_and_warns_once() {
    for usage in ABSURD {
        let chunks = || {
            vec![
                delta(0, r#"{"role":"assistant","content":"hi"}"#, None, None),
                delta(0, r#"{}"#, Some("stop"), Some(usage)),
                done(0),
            ]
        };
        let run = run_text(sse(chunks())).await;
        let r = run.ok();
        assert_eq!(r.content, "hi");
        assert_eq!(r.usage_source, UsageSource::Unavailable, "{usage}");
        assert_eq!(r.usage, Usage::default(), "{usage}");
        assert_eq!(r.settle_tokens(SettleMode::PromptAndCompletion, 321), 321);
        // The executor logged the warning once for this source: a second admit is suppressed.
        assert_eq!(
            run.warnings.admit("s1", &DialectWarning::ImplausibleUsage),
            Admission::Suppressed,
            "{usage}"
        );
    }
}

#[test]
fn issue_22_absurd_non_stream_usage_is_unavailable() {
    for usage in ABSURD {
        let body = format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"ok"}},"finish_reason":"stop"}}],"usage":{usage}}}"#
        );
        let acc = parse_non_stream_body(
            body.as_bytes(),
            ResponseMode::Text,
            &AccumulateOptions::new("c", "s"),
        )
        .unwrap();
        assert!(!acc.usage_measured(), "{usage}");
        assert_eq!(
            acc.usage(false),
            (Usage::default(), UsageSource::Unavailable)
        );
    }
}

#[test]
fn issue_22_plausible_edges_stay_measured() {
    let u: Map<String, Value> = serde_json::from_value(json!({
        "prompt_tokens": MAX_PLAUSIBLE_TOKENS,
        "completion_tokens": MAX_PLAUSIBLE_TOKENS,
        "prompt_tokens_details": {"cached_tokens": MAX_PLAUSIBLE_TOKENS},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }))
    .unwrap();
    assert!(measured_usage(&u).is_some());
}

proptest! {
    /// Any reported counts: measured exactly when within the bound and consistent.
    #[test]
    fn issue_22_plausibility_is_the_documented_bound(
        prompt in prop_oneof![0u64..1000, any::<u64>()],
        completion in prop_oneof![0u64..1000, any::<u64>()],
        cached in proptest::option::of(prop_oneof![0u64..1000, any::<u64>()]),
    ) {
        let mut raw = json!({"prompt_tokens": prompt, "completion_tokens": completion});
        if let Some(c) = cached {
            raw["prompt_tokens_details"] = json!({"cached_tokens": c});
        }
        let raw: Map<String, Value> = serde_json::from_value(raw).unwrap();
        let expected = prompt <= MAX_PLAUSIBLE_TOKENS
            && completion <= MAX_PLAUSIBLE_TOKENS
            && cached.is_none_or(|c| c <= prompt);
        prop_assert_eq!(measured_usage(&raw).is_some(), expected);
        if let Some(u) = measured_usage(&raw) {
            prop_assert!(usage_is_plausible(&u));
        }
    }
}
