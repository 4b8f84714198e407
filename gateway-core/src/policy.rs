//! [`ScopePolicy`]: every knob that governs the calls of one scope, as one value shared by every
//! configuration path — the environment and settings-struct paths (the facade's
//! `GatewaySettings::policy`), the facade's client builders, the assembled `ClientPlan`, and
//! [`GovernorBuilder::policy`](crate::governor::GovernorBuilder::policy).
//!
//! Owns the values (settings-edge units: `f64` seconds, `u32` counts, as in `SourceConfig`) and
//! the single definition of the scope-policy guards: the policy rules ([`ScopePolicy::validate`]:
//! retry, breaker, backpressure, stall threshold, waiters), the telemetry text cap
//! ([`ScopePolicy::check_text_cap`]), the call-deadline domain ([`ScopePolicy::call_deadline`])
//! and stage D on the hedge thresholds ([`ScopePolicy::check_hedge`], through `crate::hedge`).
//! Each path runs them in its own stage order and spells the origins its own way: callers pass
//! a prefix (`GatewaySettings.`, `GatewayClientBuilder::`), and the field part names the knob
//! (`retry.max_attempts`, `hedge_after_s`), which is also what the environment path maps back
//! to its keys.
//!
//! Why in the core and not in `gateway-ports`: the guards use the core's deadline and hedge
//! definitions, and the governor builder consumes the type; ports keep only the value types it
//! is made of (`RetryPolicy`, `BreakerConfig`, …).

use std::time::Duration;

use gateway_ports::{
    BackpressurePolicy, BreakerConfig, ConfigError, GlobalLimits, RetryPolicy, SelectorKind,
    SourceConfig, WaitPolicy,
};

use crate::config::hedge::{HedgeAssembly, HedgeAssemblyInput, HedgeConfig, check_hedge_assembly};

/// Default `{SCOPE}__MAX_WAITERS`: most callers waiting for a source at once.
pub const DEFAULT_MAX_WAITERS: u32 = 10_000;

/// The policy of one scope: how sources are ordered, when calls wait, retry, hedge and give up.
///
/// Build it with struct-update syntax from [`ScopePolicy::default`]; nothing is checked until a
/// path validates it (the facade's settings validation or builder `plan()`, or
/// [`GovernorBuilder::policy`](crate::governor::GovernorBuilder::policy)). Durations are `f64`
/// seconds; the environment key of each field is in its doc.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScopePolicy {
    /// `{SCOPE}__SELECTOR` (default `health_aware`).
    pub selector: SelectorKind,
    /// `{SCOPE}__QUOTA_FULL`: every source quota-full — wait (default) or fail fast.
    pub quota_full: WaitPolicy,
    /// `{SCOPE}__CIRCUIT_OPEN`: every source breaker-rejected — fail fast (default) or wait.
    pub circuit_open: WaitPolicy,
    /// `{SCOPE}__MAX_WAITERS` (default 10 000, ≥ 1).
    pub max_waiters: u32,
    /// `{SCOPE}__CALL_DEADLINE_S` in seconds; `None` = no deadline.
    pub call_deadline_s: Option<f64>,
    /// `{SCOPE}__RETRY__*`.
    pub retry: RetryPolicy,
    /// `{SCOPE}__BREAKER__*`; an unset `probe_ttl_s` is resolved by the settings path.
    pub breaker: BreakerConfig,
    /// `{SCOPE}__BACKPRESSURE__*`.
    pub backpressure: BackpressurePolicy,
    /// `{SCOPE}__GLOBAL__*` (`0` = no scope-wide limit).
    pub global_limits: GlobalLimits,
    /// `{SCOPE}__HEDGE__AFTER_S` in seconds; `None` = first-token hedging off.
    pub hedge_after_s: Option<f64>,
    /// `{SCOPE}__HEDGE__MAX_EXTRA` (default 1; domain [1, 3]; > 1 acts as 1).
    pub hedge_max_extra: u32,
    /// `{SCOPE}__HEDGE__STALL_AFTER_S` in seconds; `None` = stall hedging off.
    pub hedge_stall_after_s: Option<f64>,
    /// `{SCOPE}__STREAM__STALL_THRESHOLD_MS`, written into every source at assembly;
    /// `None` keeps each source's own value. The settings path defaults to `Some(1000)`,
    /// the builders to `None`.
    pub stall_threshold_ms: Option<u32>,
    /// `PGW_TELEMETRY_TEXT_CAP` in characters; `None` = no truncation.
    pub telemetry_text_cap: Option<u32>,
}

impl Default for ScopePolicy {
    fn default() -> Self {
        Self {
            selector: SelectorKind::HealthAware,
            quota_full: WaitPolicy::Wait,
            circuit_open: WaitPolicy::FailFast,
            max_waiters: DEFAULT_MAX_WAITERS,
            call_deadline_s: None,
            retry: RetryPolicy::default(),
            breaker: BreakerConfig::default(),
            backpressure: BackpressurePolicy::default(),
            global_limits: GlobalLimits::default(),
            hedge_after_s: None,
            hedge_max_extra: 1,
            hedge_stall_after_s: None,
            stall_threshold_ms: None,
            telemetry_text_cap: None,
        }
    }
}

fn positive_finite(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

impl ScopePolicy {
    /// The policy rules, first failure in this order: retry ([`RetryPolicy::validate`]),
    /// breaker, backpressure, `stall_threshold_ms`, `max_waiters`.
    ///
    /// Errors: code `settings.policy`, origin `{prefix}{field}` (e.g.
    /// `GatewaySettings.retry.max_attempts`), message `{field} must be {rule}`.
    pub fn validate(&self, prefix: &str) -> Result<(), ConfigError> {
        let at = |field: &str| format!("{prefix}{field}");
        let policy = |field: &str, rule: &str| {
            Err(ConfigError::new(
                "settings.policy",
                at(field),
                format!("{field} must be {rule}"),
            ))
        };
        self.retry.validate().map_err(|mut e| {
            e.origin = at(&e.origin);
            e
        })?;
        let b = &self.breaker;
        if b.fail_threshold == 0 {
            return policy("breaker.fail_threshold", ">= 1");
        }
        if !(b.fail_rate.is_finite() && b.fail_rate > 0.0 && b.fail_rate <= 1.0) {
            return policy("breaker.fail_rate", "in (0, 1]");
        }
        if b.min_calls == 0 {
            return policy("breaker.min_calls", ">= 1");
        }
        if !positive_finite(b.window_s) {
            return policy("breaker.window_s", "a finite number of seconds > 0");
        }
        if !positive_finite(b.cooldown_s) {
            return policy("breaker.cooldown_s", "a finite number of seconds > 0");
        }
        if !(b.cooldown_max_s.is_finite() && b.cooldown_max_s >= b.cooldown_s) {
            return policy("breaker.cooldown_max_s", "finite and >= breaker.cooldown_s");
        }
        let bp = &self.backpressure;
        if !positive_finite(bp.stall_window_s) {
            return policy(
                "backpressure.stall_window_s",
                "a finite number of seconds > 0",
            );
        }
        if !positive_finite(bp.poll_interval_s) {
            return policy(
                "backpressure.poll_interval_s",
                "a finite number of seconds > 0",
            );
        }
        if bp.poll_interval_s >= bp.stall_window_s {
            return policy(
                "backpressure.poll_interval_s",
                "< backpressure.stall_window_s",
            );
        }
        if self.stall_threshold_ms == Some(0) {
            return policy("stall_threshold_ms", ">= 1");
        }
        if self.max_waiters == 0 {
            return policy("max_waiters", ">= 1");
        }
        Ok(())
    }

    /// The text cap rule: unset or `> 0`. Error code `telemetry.text_cap`, origin
    /// `{prefix}telemetry_text_cap`.
    pub fn check_text_cap(&self, prefix: &str) -> Result<(), ConfigError> {
        if self.telemetry_text_cap == Some(0) {
            return Err(ConfigError::new(
                "telemetry.text_cap",
                format!("{prefix}telemetry_text_cap"),
                "text_cap must be > 0 (leave it unset for no truncation)",
            ));
        }
        Ok(())
    }

    /// The call deadline as a runtime `Duration` (`None` = none) after the domain check
    /// (finite, `> 0`, representable). Error code `deadline.domain` naming `origin`.
    pub fn call_deadline(&self, origin: &str) -> Result<Option<Duration>, ConfigError> {
        crate::deadline::ensure_call_deadline_s(self.call_deadline_s, origin)
    }

    /// `true` when either hedge threshold is set (the hedge keys only act on chat scopes).
    pub fn hedge_requested(&self) -> bool {
        self.hedge_after_s.is_some() || self.hedge_stall_after_s.is_some()
    }

    /// Stage D on this policy's hedge thresholds over `sources`, with messages naming the
    /// keys of `scope` (upper-cased here) and origins `{prefix}hedge_after_s`,
    /// `{prefix}hedge_stall_after_s`, `{prefix}hedge_max_extra`. Errors and warnings as
    /// [`check_hedge_assembly`].
    pub fn check_hedge(
        &self,
        scope: &str,
        sources: &[SourceConfig],
        prefix: &str,
    ) -> Result<HedgeAssembly, ConfigError> {
        let scope_up = scope.to_ascii_uppercase();
        check_hedge_assembly(
            &HedgeAssemblyInput {
                scope: &scope_up,
                hedge_after_s: self.hedge_after_s,
                hedge_max_extra: self.hedge_max_extra,
                stall_after_s: self.hedge_stall_after_s,
                call_deadline_s: self.call_deadline_s,
                after_origin: &format!("{prefix}hedge_after_s"),
                stall_origin: &format!("{prefix}hedge_stall_after_s"),
                max_extra_origin: &format!("{prefix}hedge_max_extra"),
            },
            sources,
        )
    }

    /// The runtime hedge configuration of these thresholds, domain-checked only
    /// ([`HedgeConfig::from_secs`]; the checks against the sources are [`ScopePolicy::check_hedge`]).
    /// Errors as [`HedgeConfig::new`], origins prefixed with `prefix`.
    pub fn hedge_config(&self, prefix: &str) -> Result<HedgeConfig, ConfigError> {
        HedgeConfig::from_secs(
            self.hedge_after_s,
            self.hedge_stall_after_s,
            self.hedge_max_extra,
        )
        .map_err(|mut e| {
            e.origin = format!("{prefix}{}", e.origin);
            e
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_policy_passes_every_guard() {
        let p = ScopePolicy::default();
        assert_eq!(p.validate("P."), Ok(()));
        assert_eq!(p.check_text_cap("P."), Ok(()));
        assert_eq!(p.call_deadline("P.call_deadline_s"), Ok(None));
        assert_eq!(p.hedge_config("P."), Ok(HedgeConfig::off()));
        assert!(!p.hedge_requested());
    }

    #[test]
    fn policy_rules_name_the_field_with_the_prefix() {
        let cases: [(ScopePolicy, &str); 5] = [
            (
                ScopePolicy {
                    retry: RetryPolicy {
                        max_attempts: 0,
                        ..RetryPolicy::default()
                    },
                    ..ScopePolicy::default()
                },
                "retry.max_attempts",
            ),
            (
                ScopePolicy {
                    breaker: BreakerConfig {
                        fail_rate: 1.5,
                        ..BreakerConfig::default()
                    },
                    ..ScopePolicy::default()
                },
                "breaker.fail_rate",
            ),
            (
                ScopePolicy {
                    backpressure: BackpressurePolicy {
                        stall_window_s: 1.0,
                        poll_interval_s: 1.0,
                    },
                    ..ScopePolicy::default()
                },
                "backpressure.poll_interval_s",
            ),
            (
                ScopePolicy {
                    stall_threshold_ms: Some(0),
                    ..ScopePolicy::default()
                },
                "stall_threshold_ms",
            ),
            (
                ScopePolicy {
                    max_waiters: 0,
                    ..ScopePolicy::default()
                },
                "max_waiters",
            ),
        ];
        for (policy, field) in cases {
            let Err(e) = policy.validate("X::") else {
                panic!("{field} accepted");
            };
            assert_eq!(e.code, "settings.policy");
            assert_eq!(e.origin, format!("X::{field}"));
            assert!(e.message.starts_with(field), "{}", e.message);
        }
    }

    #[test]
    fn text_cap_deadline_and_hedge_domains() {
        let p = ScopePolicy {
            telemetry_text_cap: Some(0),
            call_deadline_s: Some(f64::NAN),
            hedge_after_s: Some(-1.0),
            ..ScopePolicy::default()
        };
        assert_eq!(
            p.check_text_cap("S.").map_err(|e| (e.code, e.origin)),
            Err(("telemetry.text_cap", "S.telemetry_text_cap".to_owned()))
        );
        assert_eq!(
            p.call_deadline("S.call_deadline_s")
                .map_err(|e| (e.code, e.origin)),
            Err(("deadline.domain", "S.call_deadline_s".to_owned()))
        );
        assert_eq!(
            p.hedge_config("S.").map_err(|e| (e.code, e.origin)),
            Err(("hedge.after_domain", "S.hedge_after_s".to_owned()))
        );
        let ok = ScopePolicy {
            hedge_after_s: Some(2.0),
            hedge_max_extra: 3,
            ..ScopePolicy::default()
        };
        let h = ok.hedge_config("S.");
        assert_eq!(
            h.map(|h| (h.after, h.max_extra)),
            Ok((Some(Duration::from_secs(2)), 3))
        );
        assert!(ok.hedge_requested());
    }

    // covers: D2, D3, D4 (the domain part of stage D, on the checked constructors)
    #[test]
    fn hedge_config_constructors_refuse_out_of_domain_values() {
        let t = Duration::from_secs(1);
        let code = |r: Result<HedgeConfig, ConfigError>| r.map_err(|e| (e.code, e.origin));
        assert_eq!(
            code(HedgeConfig::new(Some(t), None, 0)),
            Err(("hedge.max_extra_range", "hedge_max_extra".to_owned()))
        );
        assert_eq!(
            code(HedgeConfig::new(Some(t), None, 4)),
            Err(("hedge.max_extra_range", "hedge_max_extra".to_owned()))
        );
        assert_eq!(
            code(HedgeConfig::new(Some(Duration::ZERO), None, 1)),
            Err(("hedge.after_domain", "hedge_after_s".to_owned()))
        );
        assert_eq!(
            code(HedgeConfig::off().with_stall_after(Duration::ZERO)),
            Err(("hedge.stall_domain", "hedge_stall_after_s".to_owned()))
        );
        assert_eq!(
            code(HedgeConfig::off().with_max_extra(9)),
            Err(("hedge.max_extra_range", "hedge_max_extra".to_owned()))
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert_eq!(
                code(HedgeConfig::from_secs(None, Some(bad), 1)),
                Err(("hedge.stall_domain", "hedge_stall_after_s".to_owned())),
                "{bad}"
            );
        }
        let ok = HedgeConfig::new(Some(t), Some(t), 3);
        assert_eq!(
            ok.map(|h| (h.after, h.stall_after, h.max_extra)),
            Ok((Some(t), Some(t), 3))
        );
        assert_eq!(
            HedgeConfig::from_secs(Some(0.25), None, 1),
            HedgeConfig::new(Some(Duration::from_millis(250)), None, 1)
        );
    }

    // covers: C5 (retry rules on the checked constructor)
    #[test]
    fn retry_policy_new_refuses_each_field_by_name() {
        let field = |r: Result<RetryPolicy, ConfigError>| {
            r.map_err(|e| {
                assert_eq!(e.code, "settings.policy");
                assert!(e.message.starts_with(&e.origin), "{}", e.message);
                e.origin
            })
        };
        assert_eq!(
            field(RetryPolicy::new(3, 1.0, 10.0, None, None)),
            Ok(RetryPolicy::default())
        );
        let cases: [(Result<RetryPolicy, ConfigError>, &str); 6] = [
            (
                RetryPolicy::new(0, 1.0, 10.0, None, None),
                "retry.max_attempts",
            ),
            (
                RetryPolicy::new(3, 0.0, 10.0, None, None),
                "retry.backoff_base_s",
            ),
            (
                RetryPolicy::new(3, 1.0, f64::NAN, None, None),
                "retry.backoff_max_s",
            ),
            (
                RetryPolicy::new(3, 2.0, 1.0, None, None),
                "retry.backoff_max_s",
            ),
            (
                RetryPolicy::new(3, 1.0, 10.0, Some(-1.0), None),
                "retry.max_hint_s",
            ),
            (
                RetryPolicy::new(3, 1.0, 10.0, None, Some(0.0)),
                "retry.budget_ratio",
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(field(result), Err(expected.to_owned()));
        }
    }
}
