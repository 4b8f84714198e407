//! Issue 22 (scopes that can never admit): a source whose `TPM` is below its `EST_TOKENS`, or a
//! scope whose `GLOBAL__TPM` no call fits, fails at once with `quota_full` naming the limit — it
//! does not wait the whole stall window — and assembly warns about both cases.

#![allow(clippy::unwrap_used, reason = "test assertions")]

use crate::support;

use std::time::Duration;

use gateway_ports::{GlobalLimits, ScopeReason, WaitPolicy};
use polygateway::{ChatOptions, GatewayClient};
use support::*;

async fn assert_fails_at_once(client: &GatewayClient, names: &str) {
    let started = tokio::time::Instant::now();
    let error = client.chat("hi", ChatOptions::new()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(1),
        "waited {:?}",
        started.elapsed()
    );
    let u = error.unavailable().unwrap();
    assert_eq!(u.reason, ScopeReason::QuotaFull, "{error}");
    assert!(error.to_string().contains(names), "{error}");
    assert!(error.to_string().contains("EST_TOKENS"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn issue_22_source_tpm_below_est_tokens_fails_at_once_naming_tpm() {
    let mut s = source("qwen_1", 30.0);
    s.tpm = 100; // default EST_TOKENS is 1000
    let client = builder(vec![s])
        .quota_full(WaitPolicy::Wait)
        .build()
        .unwrap();
    let codes: Vec<&str> = client.assembly_warnings().iter().map(|w| w.code).collect();
    assert!(codes.contains(&"source.est_exceeds_tpm"), "{codes:?}");
    assert_fails_at_once(&client, "TPM (100)").await;
}

#[tokio::test(start_paused = true)]
async fn issue_22_global_tpm_no_call_fits_fails_at_once_and_warns() {
    let client = builder(vec![source("qwen_1", 30.0), source("qwen_2", 30.0)])
        .global_limits(GlobalLimits {
            tpm: 500,
            ..GlobalLimits::default()
        })
        .quota_full(WaitPolicy::Wait)
        .build()
        .unwrap();
    let codes: Vec<&str> = client.assembly_warnings().iter().map(|w| w.code).collect();
    assert_eq!(
        codes
            .iter()
            .filter(|c| **c == "global.est_exceeds_tpm")
            .count(),
        2,
        "{codes:?}"
    );
    assert_fails_at_once(&client, "GLOBAL__TPM (500)").await;
}

#[tokio::test(start_paused = true)]
async fn issue_22_one_fitting_source_still_serves() {
    let mut tight = source("qwen_1", 30.0);
    tight.tpm = 100;
    let client = builder(vec![tight, source("qwen_2", 30.0)])
        .quota_full(WaitPolicy::Wait)
        .build()
        .unwrap();
    // qwen_2 fits: the call runs there (NullTransport answers an empty body, which fails as a
    // result, not as quota_full).
    let error = client
        .chat("hi", ChatOptions::new().stream(false))
        .await
        .unwrap_err();
    assert_ne!(
        error.unavailable().map(|u| u.reason),
        Some(ScopeReason::QuotaFull),
        "{error}"
    );
}
