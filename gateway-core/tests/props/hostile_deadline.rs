//! Issue 22 (hostile inputs): a configured or caller deadline whose end instant cannot be
//! represented (`LLM__CALL_DEADLINE_S=1e19`, `ChatOptions::call_deadline(Duration::MAX)`) never
//! panics: the end instant is computed with checked arithmetic and an unrepresentable one means
//! "no deadline within this process's lifetime" (docs/decisions.md, issue 22). Covers G-96..G-99
//! at the extremes, for every site where a call deadline meets an `Instant` (the plain call, the
//! multi-loop call handle, the per-attempt remaining time).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test assertions: a failing unwrap is a failing test"
)]

use crate::support;

use std::time::Duration;

use gateway_core::attempt::{SettleMode, TransportResult};
use gateway_core::deadline::ensure_call_deadline_s;
use gateway_core::governor::CallOptions;
use gateway_core::retry_loop::LoopPolicy;
use gateway_ports::CallOperation;
use gateway_testkit::Script;
use proptest::prelude::*;
use support::*;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// One plain call with the per-call deadline `d`, then one two-loop call handle with it.
async fn both_paths(assembled: Option<Duration>, per_call: Option<Duration>) {
    let fx = FxBuilder {
        deadline: assembled,
        ..FxBuilder::default()
    }
    .build();
    fx.runner.push(Script::ok(TransportResult::ok(10, 5)));
    let options = match per_call {
        Some(d) => CallOptions::default().with_deadline(d),
        None => CallOptions::default(),
    };
    let g = fx.chat_with(options.clone()).await.expect("plain call");
    assert_eq!(g.stats.attempts, 1);

    fx.runner.push(Script::ok(TransportResult::ok(10, 5)));
    fx.runner.push(Script::ok(TransportResult::ok(10, 5)));
    let mut handle = fx.gov.begin_call(options, CallOperation::Embed).unwrap();
    for _ in 0..2 {
        handle
            .run_loop(&fx.runner, LoopPolicy::EMBED, SettleMode::PromptOnly, None)
            .await
            .expect("loop of a call handle");
    }
    let stats = handle.finish();
    assert_eq!(stats.attempts, 2);
    fx.gov.quiesce().await;
}

#[test]
fn issue_22_g_99_per_call_duration_max_does_not_panic() {
    rt().block_on(both_paths(None, Some(Duration::MAX)));
}

#[test]
fn issue_22_g_96_assembled_1e19_seconds_does_not_panic() {
    // 1e19 s fits a Duration (u64 seconds) but no Instant: accepted at the settings edge.
    let d = ensure_call_deadline_s(Some(1e19), "LLM__CALL_DEADLINE_S").unwrap();
    assert!(d.is_some());
    rt().block_on(both_paths(d, None));
}

/// Extreme durations: near zero, around the representable edge, and the maximum.
fn extreme_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..1_000).prop_map(Duration::from_secs),
        (1u64 << 30..=u64::MAX).prop_map(Duration::from_secs),
        (0u32..1_000_000_000).prop_map(|n| Duration::new(u64::MAX, n)),
        Just(Duration::MAX),
        (1e9f64..1.8e19).prop_map(|s| Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Issue 22: any deadline, assembled or per call, runs the call to its result.
    #[test]
    fn issue_22_extreme_deadlines_never_panic(
        assembled in proptest::option::of(extreme_duration()),
        per_call in proptest::option::of(extreme_duration()),
    ) {
        rt().block_on(both_paths(assembled, per_call));
    }

    /// Issue 22: the settings edge accepts every positive finite value that fits a Duration
    /// and refuses the rest, never panicking.
    #[test]
    fn issue_22_g_96_settings_edge_total(s in any::<f64>()) {
        let r = ensure_call_deadline_s(Some(s), "LLM__CALL_DEADLINE_S");
        let fits = s.is_finite() && s > 0.0 && Duration::try_from_secs_f64(s).is_ok();
        prop_assert_eq!(r.is_ok(), fits);
    }
}
