//! Unit tests of `GovernorBuilder` (moved from `policy.rs`, so that the policy module does not
//! import the governor that imports it).

use std::sync::Arc;

use gateway_ports::{BreakerConfig, GlobalLimits, RetryPolicy, SelectorKind, SourceConfig};

use super::GovernorBuilder;
use crate::clock::TokioClock;
use crate::memory::{MemoryCircuitBreaker, MemoryRateLimiter};
use crate::policy::ScopePolicy;

fn governor_builder() -> GovernorBuilder {
    let clock: Arc<dyn gateway_ports::Clock> = Arc::new(TokioClock::new());
    let sources = vec![SourceConfig {
        name: "s1".into(),
        ..SourceConfig::default()
    }];
    let limiter = MemoryRateLimiter::new(
        "llm",
        &sources,
        GlobalLimits::default(),
        30.0,
        Arc::clone(&clock),
    );
    let breaker = MemoryCircuitBreaker::new("llm", BreakerConfig::default(), clock);
    GovernorBuilder::new("llm", sources, Arc::new(limiter), Arc::new(breaker))
}

// covers: C5 (the governor builder runs the same policy rules)
#[tokio::test]
async fn governor_builder_takes_and_checks_the_policy() {
    let bad = ScopePolicy {
        max_waiters: 0,
        ..ScopePolicy::default()
    };
    let origin = |p: &ScopePolicy| {
        governor_builder()
            .policy(p)
            .err()
            .map(|e| (e.code, e.origin))
    };
    assert_eq!(
        origin(&bad),
        Some(("settings.policy", "ScopePolicy.max_waiters".to_owned()))
    );
    let bad_hedge = ScopePolicy {
        hedge_max_extra: 4,
        ..ScopePolicy::default()
    };
    assert_eq!(
        origin(&bad_hedge),
        Some((
            "hedge.max_extra_range",
            "ScopePolicy.hedge_max_extra".to_owned()
        ))
    );
    let bad_deadline = ScopePolicy {
        call_deadline_s: Some(0.0),
        ..ScopePolicy::default()
    };
    assert_eq!(
        origin(&bad_deadline),
        Some(("deadline.domain", "ScopePolicy.call_deadline_s".to_owned()))
    );
    // A budget ratio in the policy builds the scope's retry budget.
    let budgeted = ScopePolicy {
        retry: RetryPolicy {
            budget_ratio: Some(0.2),
            ..RetryPolicy::default()
        },
        selector: SelectorKind::RoundRobin,
        ..ScopePolicy::default()
    };
    let Ok(builder) = governor_builder().policy(&budgeted) else {
        panic!("a valid policy is refused");
    };
    let (governor, _rx) = builder.build();
    assert!(governor.retry_budget().is_some());
    let (plain, _rx) = governor_builder().build();
    assert!(plain.retry_budget().is_none());
}
