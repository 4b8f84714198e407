//! Stages C and E of the settings path: the single definition of a valid [`GatewaySettings`]
//! (scope name, sources, the [`ScopePolicy`](gateway_core::policy::ScopePolicy) rules, the
//! process-wide keys through `super::backends`, the leases, the call deadline, stage D) and the
//! embedding rules. The builders (`crate::assembly`) reuse the scope-name, source and embedding
//! guards. Logs nothing: warnings are returned as data.

use std::collections::BTreeSet;

use gateway_core::config::validate_source;
use gateway_ports::config::SourceConfig;
use gateway_ports::vocab::ScopeKind;
use gateway_ports::{ConfigError, ConfigWarning};

use super::backends::{check_process_wide, positive_finite};
use super::{GatewaySettings, LEASE_GRACE_S, PROBE_GRACE_S, ValidatedSettings};

pub(super) fn max_timeout_s(sources: &[SourceConfig]) -> f64 {
    sources.iter().map(|s| s.timeout_s).fold(0.0, f64::max)
}

/// `true` when `scope` is a valid scope name: `^[A-Za-z][A-Za-z0-9_]*$` without `__`.
pub fn is_scope_name(scope: &str) -> bool {
    let mut chars = scope.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !scope.contains("__")
}

/// Validates a scope name; `origin` names where it came from (code `settings.scope`, chosen).
pub(crate) fn check_scope_name(scope: &str, origin: &str) -> Result<(), ConfigError> {
    if is_scope_name(scope) {
        Ok(())
    } else {
        Err(ConfigError::new(
            "settings.scope",
            origin,
            format!("scope name `{scope}` must match ^[A-Za-z][A-Za-z0-9_]*$ and contain no `__`"),
        ))
    }
}

/// The deadline domain check, with the code `deadline.domain`.
pub(crate) fn check_deadline_s(deadline_s: Option<f64>, origin: &str) -> Result<(), ConfigError> {
    gateway_core::deadline::ensure_call_deadline_s(deadline_s, origin).map(|_| ())
}

/// C1 normalization of one source: lower-case provider, no trailing `/` on `base_url`.
pub(crate) fn normalize_source(source: &mut SourceConfig) {
    source.provider = source.provider.to_ascii_lowercase();
    let trimmed = source.base_url.trim_end_matches('/').len();
    source.base_url.truncate(trimmed);
}

/// The no-sources message, naming the scope's real keys (e.g. `LLM__OPENAI__1__BASE_URL`). An
/// OCR source needs only its base URL (no key by default, model `monkeyocr`).
fn no_sources_message(scope: &str, kind: ScopeKind) -> String {
    let upper = scope.to_ascii_uppercase();
    let needed = if kind == ScopeKind::Ocr {
        format!(
            "set {upper}__MONKEY__1__BASE_URL (and {upper}__MONKEY__1__API_KEY if the \
             server wants a key; the model defaults to monkeyocr)"
        )
    } else {
        format!(
            "set {upper}__OPENAI__1__BASE_URL, {upper}__OPENAI__1__API_KEY and \
             {upper}__OPENAI__1__MODEL"
        )
    };
    format!(
        "scope `{upper}` has no sources: {needed} (any provider word works in place of \
         {}, and 1, 2, … number several sources of one provider)",
        if kind == ScopeKind::Ocr {
            "MONKEY"
        } else {
            "OPENAI"
        }
    )
}

pub(super) fn validate_gateway(
    input: &GatewaySettings,
    kind: ScopeKind,
    prefix: &str,
) -> Result<ValidatedSettings, ConfigError> {
    let at = |field: &str| format!("{prefix}{field}");
    let mut s = input.clone();
    let mut warnings = Vec::new();

    // C1 normalize.
    check_scope_name(&s.scope, &at("scope"))?;
    s.scope = s.scope.to_ascii_lowercase();
    for source in &mut s.sources {
        normalize_source(source);
    }
    // C2, C3 sources.
    if s.sources.is_empty() {
        return Err(ConfigError::new(
            "settings.no_sources",
            at("sources"),
            no_sources_message(&s.scope, kind),
        ));
    }
    let mut names = BTreeSet::new();
    for source in &s.sources {
        if !names.insert(source.name.as_str()) {
            return Err(ConfigError::new(
                "settings.duplicate_source",
                at(&format!("sources[{}]", source.name)),
                format!("two sources are named `{}`", source.name),
            ));
        }
    }
    // C4 stage B for each source.
    for source in &s.sources {
        let found = validate_source(source, kind).map_err(|mut e| {
            e.origin = at(&e.origin);
            e
        })?;
        warnings.extend(found);
    }
    // C5 policies.
    s.policy.validate(prefix)?;
    // C6, C6w, C6b process-wide.
    let pricing = check_process_wide(&mut s, prefix, &mut warnings)?;
    let max_timeout = max_timeout_s(&s.sources);
    // C7 lease.
    match s.lease_ttl_s {
        Some(v) if !(positive_finite(v) && v > max_timeout) => {
            return Err(ConfigError::new(
                "settings.lease_ttl",
                at("lease_ttl_s"),
                format!(
                    "lease_ttl_s (PGW_LEASE_TTL_S={v}) must be a finite number > the largest source timeout_s ({max_timeout})"
                ),
            ));
        }
        Some(_) => {}
        None => s.lease_ttl_s = Some(max_timeout + LEASE_GRACE_S),
    }
    // Issue 22: a global TPM below a source's token estimate admits no call to that source.
    warnings.extend(gateway_core::config::global_tpm_warnings(
        &s.sources,
        s.policy.global_limits.tpm,
    ));
    // C8 stall window vs TTFT (warning).
    let max_ttft = s
        .sources
        .iter()
        .filter_map(|src| src.ttft_timeout_s)
        .fold(f64::NEG_INFINITY, f64::max);
    if s.policy.backpressure.stall_window_s < max_ttft {
        warnings.push(ConfigWarning::new(
            "backpressure.window_below_ttft",
            format!(
                "backpressure.stall_window_s ({}) < max ttft_timeout_s ({max_ttft})",
                s.policy.backpressure.stall_window_s
            ),
        ));
    }
    // C9 probe lease.
    let min_probe = max_timeout + PROBE_GRACE_S;
    match s.policy.breaker.probe_ttl_s {
        Some(v) if !(v.is_finite() && v >= min_probe) => {
            return Err(ConfigError::new(
                "breaker.probe_ttl",
                at("breaker.probe_ttl_s"),
                format!(
                    "breaker.probe_ttl_s ({v}) must be >= the largest source timeout_s + {PROBE_GRACE_S} ({min_probe}): raise probe_ttl_s or lower the sources' timeout_s"
                ),
            ));
        }
        Some(_) => {}
        None => s.policy.breaker.probe_ttl_s = Some(min_probe),
    }
    // C10 call deadline.
    check_deadline_s(s.policy.call_deadline_s, &at("call_deadline_s"))?;
    // C11 stage D.
    let hedge = s.policy.check_hedge(&s.scope, &s.sources, prefix)?;
    s.policy.hedge_after_s = hedge.after_s;
    s.policy.hedge_stall_after_s = hedge.stall_after_s;
    warnings.extend(hedge.warnings);
    Ok(ValidatedSettings {
        settings: s,
        kind,
        warnings,
        pricing,
    })
}

/// The E3 warning through the core's definition.
pub(super) fn non_chat_hedge_warning(
    gateway: &GatewaySettings,
    kind: ScopeKind,
) -> Option<ConfigWarning> {
    gateway_core::hedge::non_chat_hedge_warning(
        kind,
        gateway.policy.hedge_after_s,
        gateway.policy.hedge_stall_after_s,
    )
}

/// E1, E2 / F7.
pub(crate) fn check_embedding(
    batch_size: u32,
    expected_dim: Option<u32>,
    prefix: &str,
) -> Result<(), ConfigError> {
    if batch_size == 0 {
        return Err(ConfigError::new(
            "embed.batch_size",
            format!("{prefix}batch_size"),
            format!("{prefix}batch_size must be ≥ 1: 0"),
        ));
    }
    if expected_dim == Some(0) {
        return Err(ConfigError::new(
            "embed.expected_dim",
            format!("{prefix}expected_dim"),
            format!("{prefix}expected_dim must be ≥ 1: 0"),
        ));
    }
    Ok(())
}
