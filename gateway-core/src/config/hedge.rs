//! The hedge configuration of a chat scope and stage D of the assembly guards (60; 20 §11.4).
//!
//! Owns [`HedgeConfig`], the assembled thresholds of one chat scope (`{SCOPE}__HEDGE__AFTER_S`,
//! `{SCOPE}__HEDGE__STALL_AFTER_S`, `{SCOPE}__HEDGE__MAX_EXTRA`) and the entry gate of 60 H-12
//! ([`HedgeConfig::hedges_round`]); stage D, [`check_hedge_assembly`] (which conditions raise a
//! [`ConfigError`], which only warn), plus the non-chat warning of stage E3
//! ([`non_chat_hedge_warning`]). It sits beside the other assembly guards (`crate::config`);
//! the hedged round that reads these thresholds is `crate::hedge`, which re-exports them.

use std::time::Duration;

use gateway_ports::{ConfigError, ConfigWarning, ScopeKind, SourceConfig};

/// Largest accepted `HEDGE__MAX_EXTRA`.
pub const MAX_EXTRA_LIMIT: u32 = 3;

/// The hedge thresholds of one chat scope. Both thresholds unset (the
/// default) = hedging off: every round runs the single-leg path with no progress receiver.
///
/// Build it with [`HedgeConfig::new`] (checked durations) or [`HedgeConfig::from_secs`]
/// (checked seconds), starting from [`HedgeConfig::off`] with the checked
/// [`HedgeConfig::with_after`] / [`HedgeConfig::with_stall_after`] /
/// [`HedgeConfig::with_max_extra`], or from a validated [`HedgeAssembly`]
/// ([`HedgeAssembly::config`]). These check each value's own domain; the checks against the
/// sources and the call deadline are stage D ([`check_hedge_assembly`]). Thresholds are
/// runtime-timer durations. Implements 60 H-1, H-6, H-9, H-12.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeConfig {
    /// `{SCOPE}__HEDGE__AFTER_S`: first-token threshold (streaming: no progress yet;
    /// non-stream: pure elapsed time). `None` = off.
    pub after: Option<Duration>,
    /// `{SCOPE}__HEDGE__STALL_AFTER_S`: mid-stream silence threshold (streaming only, after the
    /// first progress). `None` = off.
    pub stall_after: Option<Duration>,
    /// `{SCOPE}__HEDGE__MAX_EXTRA` in [1, 3]; until staggered hedging exists any value acts as 1
    /// (at most one hedge leg per round).
    pub max_extra: u32,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self::off()
    }
}

impl HedgeConfig {
    /// Hedging off: no thresholds, `max_extra = 1`.
    pub const fn off() -> Self {
        Self {
            after: None,
            stall_after: None,
            max_extra: 1,
        }
    }

    /// A checked configuration: `max_extra` in [1, 3], each threshold unset or non-zero.
    ///
    /// Errors (`ConfigError.code`, `origin`): `hedge.max_extra_range` (`hedge_max_extra`),
    /// `hedge.after_domain` (`hedge_after_s`), `hedge.stall_domain` (`hedge_stall_after_s`);
    /// callers prefix the origin with their path.
    pub fn new(
        after: Option<Duration>,
        stall_after: Option<Duration>,
        max_extra: u32,
    ) -> Result<Self, ConfigError> {
        if !(1..=MAX_EXTRA_LIMIT).contains(&max_extra) {
            return Err(ConfigError::new(
                "hedge.max_extra_range",
                "hedge_max_extra",
                format!("hedge_max_extra ({max_extra}) must be an integer in [1,3]"),
            ));
        }
        let zero = |d: Option<Duration>| d.is_some_and(|d| d.is_zero());
        if zero(after) {
            return Err(ConfigError::new(
                "hedge.after_domain",
                "hedge_after_s",
                "hedge_after_s must be None or a positive duration",
            ));
        }
        if zero(stall_after) {
            return Err(ConfigError::new(
                "hedge.stall_domain",
                "hedge_stall_after_s",
                "hedge_stall_after_s must be None or a positive duration",
            ));
        }
        Ok(Self {
            after,
            stall_after,
            max_extra,
        })
    }

    /// [`HedgeConfig::new`] from settings-edge seconds: each threshold unset or finite, `> 0`
    /// and representable as a `Duration`. Errors as for [`HedgeConfig::new`].
    pub fn from_secs(
        after_s: Option<f64>,
        stall_after_s: Option<f64>,
        max_extra: u32,
    ) -> Result<Self, ConfigError> {
        let secs = |v: Option<f64>, field: &str, code: &'static str| match v {
            None => Ok(None),
            Some(v) if v.is_finite() && v > 0.0 => Duration::try_from_secs_f64(v)
                .map(Some)
                .map_err(|_| threshold_error(field, code)),
            Some(_) => Err(threshold_error(field, code)),
        };
        Self::new(
            secs(after_s, "hedge_after_s", "hedge.after_domain")?,
            secs(stall_after_s, "hedge_stall_after_s", "hedge.stall_domain")?,
            max_extra,
        )
    }

    /// The same config with the first-token threshold set; checked as [`HedgeConfig::new`].
    pub fn with_after(self, after: Duration) -> Result<Self, ConfigError> {
        Self::new(Some(after), self.stall_after, self.max_extra)
    }

    /// The same config with the stall threshold set; checked as [`HedgeConfig::new`].
    pub fn with_stall_after(self, stall_after: Duration) -> Result<Self, ConfigError> {
        Self::new(self.after, Some(stall_after), self.max_extra)
    }

    /// The same config with `max_extra` set (stored as given, acts as 1); checked as
    /// [`HedgeConfig::new`].
    pub fn with_max_extra(self, max_extra: u32) -> Result<Self, ConfigError> {
        Self::new(self.after, self.stall_after, max_extra)
    }

    /// `true` when either threshold is set.
    pub const fn is_enabled(&self) -> bool {
        self.after.is_some() || self.stall_after.is_some()
    }

    /// The entry gate of 60 H-12: does a round of a request with this wire mode run hedged?
    /// `after` set → always (non-stream: pure time trigger); only `stall_after` set → only when
    /// `stream`; neither → never. Depends only on configuration and `stream`.
    pub const fn hedges_round(&self, stream: bool) -> bool {
        self.after.is_some() || (self.stall_after.is_some() && stream)
    }

    /// Hedge legs a round may launch: 0 when off, else 1 whatever `max_extra` says.
    pub const fn legs_per_round(&self) -> u32 {
        if self.is_enabled() { 1 } else { 0 }
    }
}

// ---------------------------------------------------------------------------------------------
// Stage D (20 §11.4)
// ---------------------------------------------------------------------------------------------

/// The inputs of stage D besides the sources.
///
/// `scope` is the environment prefix used in messages (e.g. `"LLM"`, naming
/// `LLM__HEDGE__AFTER_S`); the origins name where each value came from (the env key,
/// `GatewaySettings.hedge_after_s`, `GatewayClientBuilder::hedge_after_s`, …).
#[derive(Debug, Clone, Copy)]
pub struct HedgeAssemblyInput<'a> {
    /// Environment prefix of the scope for messages, e.g. `"LLM"`.
    pub scope: &'a str,
    /// `hedge_after_s` in seconds, unvalidated.
    pub hedge_after_s: Option<f64>,
    /// `hedge_max_extra` (type errors are env parse errors, stage A1).
    pub hedge_max_extra: u32,
    /// `hedge_stall_after_s` in seconds, unvalidated.
    pub stall_after_s: Option<f64>,
    /// The assembled `call_deadline_s`, already validated (stage C10 / F1).
    pub call_deadline_s: Option<f64>,
    /// Origin of `hedge_after_s`.
    pub after_origin: &'a str,
    /// Origin of `hedge_stall_after_s`.
    pub stall_origin: &'a str,
    /// Origin of `hedge_max_extra`.
    pub max_extra_origin: &'a str,
}

/// The result of a successful stage D: the normalized thresholds and the warnings (as data;
/// the assembled client logs them once).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HedgeAssembly {
    /// Normalized `hedge_after_s` in seconds.
    pub after_s: Option<f64>,
    /// Normalized `hedge_stall_after_s` in seconds.
    pub stall_after_s: Option<f64>,
    /// `hedge_max_extra` as accepted.
    pub max_extra: u32,
    /// `hedge.after_ge_ttft`, `hedge.single_source`, `hedge.multi_leg_unsupported`, in that order.
    pub warnings: Vec<ConfigWarning>,
    after: Option<Duration>,
    stall_after: Option<Duration>,
}

fn threshold_error(field: &str, code: &'static str) -> ConfigError {
    ConfigError::new(
        code,
        field,
        format!("{field} must be None or a finite positive number of seconds"),
    )
}

impl HedgeAssembly {
    /// The runtime configuration of these values (stage D checked them against the domain of
    /// [`HedgeConfig::new`] and more, so no second check runs here).
    pub fn config(&self) -> HedgeConfig {
        HedgeConfig {
            after: self.after,
            stall_after: self.stall_after,
            max_extra: self.max_extra,
        }
    }
}

/// `ensure_call_deadline` (20 §11.4 D0) for a hedge threshold: `None` stays `None`; otherwise
/// finite, `> 0` and representable as a `Duration`, else a `ConfigError` with `code` naming
/// `origin`.
fn ensure_threshold(
    value: Option<f64>,
    origin: &str,
    code: &'static str,
    field: &str,
) -> Result<Option<(f64, Duration)>, ConfigError> {
    let Some(v) = value else {
        return Ok(None);
    };
    let err = || {
        ConfigError::new(
            code,
            origin,
            format!("{field} ({origin}) must be None or a finite positive number of seconds"),
        )
    };
    if !(v.is_finite() && v > 0.0) {
        return Err(err());
    }
    Duration::try_from_secs_f64(v)
        .map(|d| Some((v, d)))
        .map_err(|_| err())
}

fn min_of(values: impl Iterator<Item = (f64, String)>) -> Option<(f64, String)> {
    values.fold(None, |acc, (v, name)| match acc {
        Some((m, _)) if m <= v => acc,
        _ => Some((v, name)),
    })
}

/// Stage D of the assembly guards, `check_hedge_assembly`, in the exact
/// order D2 → D14. The single definition point shared by every assembly path (env, settings,
/// builder): the facade calls it with the path's origins.
///
/// Errors (`ConfigError.code`, `origin`): `hedge.max_extra_range` (checked even when hedging
/// is off; origin `max_extra_origin`), `hedge.after_domain`, `hedge.stall_domain`,
/// `hedge.no_sources`, `hedge.after_ge_min_timeout`, `hedge.after_ge_deadline`,
/// `hedge.stall_ge_min_inter_token`, `hedge.stall_ge_deadline`; cross-field errors
/// carry the origin of the threshold at fault and a message naming the fields and the key
/// pattern. Warnings (`ConfigWarning.code`): `hedge.after_ge_ttft` (naming the source with
/// the smallest `ttft_timeout_s`), `hedge.single_source` (naming the source),
/// `hedge.multi_leg_unsupported`. Both thresholds unset → no further checks and no
/// warnings. Never panics.
pub fn check_hedge_assembly<'s>(
    input: &HedgeAssemblyInput<'_>,
    sources: impl IntoIterator<Item = &'s SourceConfig>,
) -> Result<HedgeAssembly, ConfigError> {
    let scope = input.scope;
    let max_extra = input.hedge_max_extra;
    // D2 (D1 is a type error in Rust: env parsing, stage A1).
    if !(1..=MAX_EXTRA_LIMIT).contains(&max_extra) {
        return Err(ConfigError::new(
            "hedge.max_extra_range",
            input.max_extra_origin,
            format!(
                "hedge_max_extra ({scope}__HEDGE__MAX_EXTRA={max_extra}) must be an integer in [1,3]"
            ),
        ));
    }
    // D3, D4.
    let after = ensure_threshold(
        input.hedge_after_s,
        input.after_origin,
        "hedge.after_domain",
        "hedge_after_s",
    )?;
    let stall = ensure_threshold(
        input.stall_after_s,
        input.stall_origin,
        "hedge.stall_domain",
        "hedge_stall_after_s",
    )?;
    // D5.
    if after.is_none() && stall.is_none() {
        return Ok(HedgeAssembly {
            after_s: None,
            stall_after_s: None,
            max_extra,
            warnings: Vec::new(),
            after: None,
            stall_after: None,
        });
    }
    let sources: Vec<&SourceConfig> = sources.into_iter().collect();
    // D6.
    if sources.is_empty() {
        let origin = if after.is_some() {
            input.after_origin
        } else {
            input.stall_origin
        };
        return Err(ConfigError::new(
            "hedge.no_sources",
            origin,
            format!(
                "hedge_after_s / hedge_stall_after_s ({scope}__HEDGE__AFTER_S / \
                 {scope}__HEDGE__STALL_AFTER_S) are set but `sources` is empty; \
                 hedging needs at least one source"
            ),
        ));
    }
    let mut warnings = Vec::new();
    if let Some((a, _)) = after {
        // D7.
        if let Some((min_timeout, _)) =
            min_of(sources.iter().map(|s| (s.timeout_s, s.name.clone())))
            && a >= min_timeout
        {
            return Err(ConfigError::new(
                "hedge.after_ge_min_timeout",
                input.after_origin,
                format!(
                    "hedge_after_s ({scope}__HEDGE__AFTER_S={a}) must be < min source \
                     timeout_s ({min_timeout}); the hedge could never fire"
                ),
            ));
        }
        // D8.
        if let Some(d) = input.call_deadline_s
            && a >= d
        {
            return Err(ConfigError::new(
                "hedge.after_ge_deadline",
                input.after_origin,
                format!(
                    "hedge_after_s ({scope}__HEDGE__AFTER_S={a}) must be < call_deadline_s \
                     ({scope}__CALL_DEADLINE_S={d}); the deadline would always fire first"
                ),
            ));
        }
        // D9 (warning).
        if let Some((min_ttft, name)) = min_of(
            sources
                .iter()
                .filter_map(|s| s.ttft_timeout_s.map(|t| (t, s.name.clone()))),
        ) && a >= min_ttft
        {
            warnings.push(
                ConfigWarning::new(
                    "hedge.after_ge_ttft",
                    format!(
                        "hedge_after_s ({scope}__HEDGE__AFTER_S={a}) is >= the smallest \
                         ttft_timeout_s ({min_ttft}): the TTFT watchdog cuts streaming hangs \
                         first; non-stream calls still benefit"
                    ),
                )
                .with_source(name),
            );
        }
    }
    if let Some((s, _)) = stall {
        // D10.
        if let Some((min_gap, _)) = min_of(sources.iter().map(|src| {
            (
                src.inter_token_timeout_s.unwrap_or(src.timeout_s),
                src.name.clone(),
            )
        })) && s >= min_gap
        {
            return Err(ConfigError::new(
                "hedge.stall_ge_min_inter_token",
                input.stall_origin,
                format!(
                    "hedge_stall_after_s ({scope}__HEDGE__STALL_AFTER_S={s}) must be < the \
                     smallest inter_token_timeout_s (or timeout_s) over the sources \
                     ({min_gap}); the stall window could never open"
                ),
            ));
        }
        // D11.
        if let Some(d) = input.call_deadline_s
            && s >= d
        {
            return Err(ConfigError::new(
                "hedge.stall_ge_deadline",
                input.stall_origin,
                format!(
                    "hedge_stall_after_s ({scope}__HEDGE__STALL_AFTER_S={s}) must be < \
                     call_deadline_s ({scope}__CALL_DEADLINE_S={d})"
                ),
            ));
        }
    }
    // D12.
    if let [only] = sources.as_slice() {
        warnings.push(
            ConfigWarning::new(
                "hedge.single_source",
                format!(
                    "hedging is configured ({scope}__HEDGE__AFTER_S / \
                     {scope}__HEDGE__STALL_AFTER_S) but the scope has a single source: \
                     no other source exists at runtime, hedging stays silent"
                ),
            )
            .with_source(only.name.clone()),
        );
    }
    // D13.
    if max_extra > 1 {
        warnings.push(ConfigWarning::new(
            "hedge.multi_leg_unsupported",
            format!(
                "hedge_max_extra ({scope}__HEDGE__MAX_EXTRA={max_extra}) accepted; only a single \
                 hedge leg runs per round until staggered hedging exists"
            ),
        ));
    }
    // D14.
    Ok(HedgeAssembly {
        after_s: after.map(|(v, _)| v),
        stall_after_s: stall.map(|(v, _)| v),
        max_extra,
        warnings,
        after: after.map(|(_, d)| d),
        stall_after: stall.map(|(_, d)| d),
    })
}

/// Stage E3: an embedding or OCR scope whose embedded gateway
/// settings set either hedge threshold gets the warning `hedge.non_chat_scope` (the keys are
/// ignored there). `None` for chat scopes and when neither threshold is set.
pub fn non_chat_hedge_warning(
    kind: ScopeKind,
    hedge_after_s: Option<f64>,
    stall_after_s: Option<f64>,
) -> Option<ConfigWarning> {
    if hedge_after_s.is_none() && stall_after_s.is_none() {
        return None;
    }
    let name = match kind {
        ScopeKind::Embedding => "embedding",
        ScopeKind::Ocr => "ocr",
        _ => return None,
    };
    Some(ConfigWarning::new(
        "hedge.non_chat_scope",
        format!(
            "hedge keys only take effect on chat scopes: {name} scope is non-streaming; hedge \
             configuration is ignored"
        ),
    ))
}
