//! Stage D — the hedge assembly guard (20 §11.4, D0–D14, exact order), shared by the settings
//! validation (C11) and client assembly (F2).
//!
//! INTERIM: 20 §9.2 wants this to be the single definition in `gateway-core`
//! (`gateway_core::hedge::check_hedge_assembly`, being written by the hedging issue). Until that
//! function lands, the facade carries this implementation behind the same shape; when it lands,
//! [`check_hedge_assembly`] becomes a thin delegation and the tests in
//! `tests/config_hedge.rs` pin that nothing changed.

use gateway_ports::config::SourceConfig;
use gateway_ports::{ConfigError, ConfigWarning};

/// The inputs of stage D with the origins each value came from (20 §2.4).
#[derive(Debug, Clone, Copy)]
pub struct HedgeInputs<'a> {
    /// First-token hedge threshold in seconds (`None` = off).
    pub after_s: Option<f64>,
    /// Legs per round (D1; domain [1, 3]).
    pub max_extra: u32,
    /// The scope's sources (cross-guards D6–D12).
    pub sources: &'a [SourceConfig],
    /// The already validated call deadline in seconds.
    pub call_deadline_s: Option<f64>,
    /// Origin of `after_s` (e.g. `GatewaySettings.hedge_after_s`).
    pub origin: &'a str,
    /// Mid-stream stall hedge threshold in seconds (`None` = off).
    pub stall_after_s: Option<f64>,
    /// Origin of `stall_after_s`.
    pub stall_origin: &'a str,
    /// Origin of `max_extra`.
    pub max_extra_origin: &'a str,
}

/// The normalized thresholds `(after_s, stall_after_s)` and the warnings of stage D.
pub type HedgeOutcome = ((Option<f64>, Option<f64>), Vec<ConfigWarning>);

fn domain_ok(v: Option<f64>) -> bool {
    v.is_none_or(|s| s.is_finite() && s > 0.0)
}

/// Runs stage D (20 §11.4) in its exact order. Errors: `hedge.max_extra_range` (D2, checked
/// even when hedging is off), `hedge.after_domain` (D3), `hedge.stall_domain` (D4),
/// `hedge.no_sources` (D6), `hedge.after_ge_min_timeout` (D7), `hedge.after_ge_deadline` (D8),
/// `hedge.stall_ge_min_inter_token` (D10), `hedge.stall_ge_deadline` (D11). Warnings:
/// `hedge.after_ge_ttft` (D9), `hedge.single_source` (D12), `hedge.multi_leg_unsupported` (D13).
/// With both thresholds unset it returns `(None, None)` and no warning at all (D5).
pub fn check_hedge_assembly(input: HedgeInputs<'_>) -> Result<HedgeOutcome, ConfigError> {
    // D2 (D1 is a type error in Rust: env parsing reports it as config.parse).
    if !(1..=3).contains(&input.max_extra) {
        return Err(ConfigError::new(
            "hedge.max_extra_range",
            input.max_extra_origin,
            format!(
                "hedge_max_extra ({{SCOPE}}__HEDGE__MAX_EXTRA={}) must be in [1,3]",
                input.max_extra
            ),
        ));
    }
    // D3, D4 (D0 domain: None or finite > 0).
    if !domain_ok(input.after_s) {
        return Err(ConfigError::new(
            "hedge.after_domain",
            input.origin,
            format!(
                "{} must be None or a finite positive number of seconds",
                input.origin
            ),
        ));
    }
    if !domain_ok(input.stall_after_s) {
        return Err(ConfigError::new(
            "hedge.stall_domain",
            input.stall_origin,
            format!(
                "{} must be None or a finite positive number of seconds",
                input.stall_origin
            ),
        ));
    }
    let (after, stall) = (input.after_s, input.stall_after_s);
    // D5.
    if after.is_none() && stall.is_none() {
        return Ok(((None, None), Vec::new()));
    }
    // D6.
    if input.sources.is_empty() {
        let origin = if after.is_some() {
            input.origin
        } else {
            input.stall_origin
        };
        return Err(ConfigError::new(
            "hedge.no_sources",
            origin,
            "hedge_after_s / hedge_stall_after_s ({SCOPE}__HEDGE__AFTER_S / {SCOPE}__HEDGE__STALL_AFTER_S) are set but sources is empty",
        ));
    }
    let mut warnings = Vec::new();
    if let Some(a) = after {
        // D7.
        let min_timeout = input
            .sources
            .iter()
            .map(|s| s.timeout_s)
            .fold(f64::INFINITY, f64::min);
        if a >= min_timeout {
            return Err(ConfigError::new(
                "hedge.after_ge_min_timeout",
                input.origin,
                format!(
                    "hedge_after_s ({{SCOPE}}__HEDGE__AFTER_S={a}) must be < min source timeout_s ({min_timeout})"
                ),
            ));
        }
        // D8.
        if let Some(d) = input.call_deadline_s
            && a >= d
        {
            return Err(ConfigError::new(
                "hedge.after_ge_deadline",
                input.origin,
                format!(
                    "hedge_after_s ({{SCOPE}}__HEDGE__AFTER_S={a}) must be < call_deadline_s ({d})"
                ),
            ));
        }
        // D9 (warning).
        let min_ttft = input
            .sources
            .iter()
            .filter_map(|s| s.ttft_timeout_s)
            .fold(f64::INFINITY, f64::min);
        if a >= min_ttft {
            warnings.push(ConfigWarning::new(
                "hedge.after_ge_ttft",
                format!(
                    "hedge_after_s ({a}) >= min ttft_timeout_s ({min_ttft}): the TTFT watchdog cuts streaming hangs first; only non-stream calls benefit"
                ),
            ));
        }
    }
    if let Some(st) = stall {
        // D10.
        let min_inter = input
            .sources
            .iter()
            .map(|s| s.inter_token_timeout_s.unwrap_or(s.timeout_s))
            .fold(f64::INFINITY, f64::min);
        if st >= min_inter {
            return Err(ConfigError::new(
                "hedge.stall_ge_min_inter_token",
                input.stall_origin,
                format!(
                    "hedge_stall_after_s ({{SCOPE}}__HEDGE__STALL_AFTER_S={st}) must be < min effective inter_token_timeout_s ({min_inter})"
                ),
            ));
        }
        // D11.
        if let Some(d) = input.call_deadline_s
            && st >= d
        {
            return Err(ConfigError::new(
                "hedge.stall_ge_deadline",
                input.stall_origin,
                format!(
                    "hedge_stall_after_s ({{SCOPE}}__HEDGE__STALL_AFTER_S={st}) must be < call_deadline_s ({d})"
                ),
            ));
        }
    }
    // D12, D13.
    if input.sources.len() == 1 {
        warnings.push(
            ConfigWarning::new(
                "hedge.single_source",
                "hedging is configured but the scope has a single source: no other source exists at run time, hedging stays silent",
            )
            .with_source(input.sources[0].name.clone()),
        );
    }
    if input.max_extra > 1 {
        warnings.push(ConfigWarning::new(
            "hedge.multi_leg_unsupported",
            format!(
                "hedge_max_extra = {} is accepted but acts as 1 (single-leg hedging) until staggered hedging exists",
                input.max_extra
            ),
        ));
    }
    Ok(((after, stall), warnings))
}
