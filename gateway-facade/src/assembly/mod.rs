//! Stage F — client assembly: the settings path
//! ([`ClientPlan::from_settings`]) and the builder path ([`GatewayClientBuilder::plan`],
//! [`EmbeddingClientBuilder::plan`], [`OcrClientBuilder::plan`]) end in a [`ClientPlan`]: the
//! validated, normalized [`ScopePolicy`] and sources a client is built from, plus every assembly
//! warning, logged here exactly once per plan.
//!
//! This file holds the plan and the settings path; `builders` the three builders and
//! `options` their shared options and stage F. The client itself (transport wiring, governor,
//! cleanup worker) is built from a plan by `crate::wiring`; this module owns only the guards,
//! so that every path runs the same functions as the environment path (stages B and D and the
//! policy rules of [`ScopePolicy`]).

mod builders;
mod options;

use std::time::Duration;

use gateway_core::hedge::HedgeConfig;
use gateway_core::policy::ScopePolicy;
use gateway_ports::config::SourceConfig;
use gateway_ports::vocab::ScopeKind;
use gateway_ports::{ConfigError, ConfigWarning};

pub use builders::{EmbeddingClientBuilder, GatewayClientBuilder, OcrClientBuilder};
pub use options::InjectedComponents;

use crate::settings::{
    EmbeddingSettings, GatewaySettings, ValidatedEmbeddingSettings, ValidatedSettings,
};

/// The smallest AIMD pacer ceiling (`max(64, max source max_concurrency)`).
pub const MIN_PACER_CEILING: u32 = 64;

/// Logs each warning once through `tracing::warn!` (target `polygateway::config`, fields `code`
/// and `source`). Client assembly calls it; `validate()` never does.
pub fn log_warnings(warnings: &[ConfigWarning]) {
    for w in warnings {
        tracing::warn!(
            target: "polygateway::config",
            code = w.code,
            source = w.source.as_deref().unwrap_or(""),
            "{}",
            w.message
        );
    }
}

fn push_unique(into: &mut Vec<ConfigWarning>, found: impl IntoIterator<Item = ConfigWarning>) {
    for w in found {
        if !into.contains(&w) {
            into.push(w);
        }
    }
}

/// Everything a governed client of one scope is built from, after stages B–F.
///
/// The scope policy is kept whole ([`ScopePolicy`], settings-edge units); the values the
/// runtime reads are also given in their runtime form (`call_deadline`, `hedge`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientPlan {
    /// Lower-case runtime scope label.
    pub scope: String,
    /// Chat, embedding or OCR.
    pub kind: ScopeKind,
    /// Validated sources with the stall threshold distributed (F3).
    pub sources: Vec<SourceConfig>,
    /// The validated scope policy: hedge thresholds normalized by stage D, `probe_ttl_s`
    /// resolved on the settings path, `stall_threshold_ms` already written into `sources`
    /// (so `None` here, whichever path built the plan).
    pub policy: ScopePolicy,
    /// The assembled call deadline (`None` = none): `policy.call_deadline_s` as a `Duration`.
    pub call_deadline: Option<Duration>,
    /// The runtime hedge configuration of the policy's thresholds (`gateway_core::hedge`).
    pub hedge: HedgeConfig,
    /// AIMD pacer ceiling: `max(64, max source max_concurrency)`.
    pub pacer_ceiling: u32,
    /// Every assembly warning, each once, in stage order.
    pub warnings: Vec<ConfigWarning>,
}

pub(crate) fn pacer_ceiling(sources: &[SourceConfig]) -> u32 {
    sources
        .iter()
        .map(|s| s.max_concurrency)
        .fold(MIN_PACER_CEILING, u32::max)
}

/// Either settings type accepted by [`ClientPlan::from_settings`] (`from_settings`
/// accepts raw or validated settings).
#[derive(Debug, Clone, Copy)]
pub enum SettingsRef<'a> {
    /// Raw settings: validated here (stages B, C, D).
    Raw(&'a GatewaySettings),
    /// Already validated settings (no validation twice; their warnings are kept).
    Validated(&'a ValidatedSettings),
}

impl<'a> From<&'a GatewaySettings> for SettingsRef<'a> {
    fn from(s: &'a GatewaySettings) -> Self {
        Self::Raw(s)
    }
}

impl<'a> From<&'a ValidatedSettings> for SettingsRef<'a> {
    fn from(s: &'a ValidatedSettings) -> Self {
        Self::Validated(s)
    }
}

impl ClientPlan {
    /// The settings and environment paths: validates raw settings (stages B, C, D), then stage F: the
    /// deadline as a `Duration` (F1), stage D again on the final sources (F2, its warnings not
    /// repeated), `stall_threshold_ms` written into every source (F3, the settings value is
    /// authoritative), the pacer ceiling. Logs the warnings once.
    pub fn from_settings<'a>(settings: impl Into<SettingsRef<'a>>) -> Result<Self, ConfigError> {
        let validated;
        let v = match settings.into() {
            SettingsRef::Raw(raw) => {
                validated = raw.validate()?;
                &validated
            }
            SettingsRef::Validated(v) => v,
        };
        let plan = plan_from_validated(v, "GatewaySettings.")?;
        log_warnings(&plan.warnings);
        Ok(plan)
    }

    /// Builder entry point (path 3) for a chat scope: [`GatewayClientBuilder::new`].
    pub fn builder() -> GatewayClientBuilder {
        GatewayClientBuilder::new()
    }
}

fn plan_from_validated(v: &ValidatedSettings, prefix: &str) -> Result<ClientPlan, ConfigError> {
    let call_deadline = v
        .policy
        .call_deadline(&format!("{prefix}call_deadline_s"))?;
    let mut policy = v.policy;
    let mut sources = v.sources.clone();
    // F3: the threshold moves into the sources (the plan's policy keeps `None`).
    if let Some(ms) = policy.stall_threshold_ms.take() {
        for source in &mut sources {
            source.stall_threshold_ms = ms;
        }
    }
    let mut warnings = v.warnings().to_vec();
    let hedge = policy.check_hedge(&v.scope, &sources, prefix)?;
    policy.hedge_after_s = hedge.after_s;
    policy.hedge_stall_after_s = hedge.stall_after_s;
    let hedge_config = hedge.config();
    push_unique(&mut warnings, hedge.warnings);
    Ok(ClientPlan {
        scope: v.scope.clone(),
        kind: v.scope_kind(),
        pacer_ceiling: pacer_ceiling(&sources),
        sources,
        policy,
        call_deadline,
        hedge: hedge_config,
        warnings,
    })
}

/// The plan of an embedding client: the gateway plan plus batching, with
/// `extra_body` stripped from every source (the wire is exactly `{model, input}`).
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingPlan {
    /// The gateway plan (kind `Embedding`).
    pub gateway: ClientPlan,
    /// Texts per upstream request (≥ 1).
    pub batch_size: u32,
    /// L2-normalize vectors.
    pub normalize: bool,
    /// Required vector dimension.
    pub expected_dim: Option<u32>,
}

/// Either embedding settings type accepted by [`EmbeddingPlan::from_settings`].
#[derive(Debug, Clone, Copy)]
pub enum EmbeddingSettingsRef<'a> {
    /// Raw settings: validated here (stages B–E).
    Raw(&'a EmbeddingSettings),
    /// Already validated settings.
    Validated(&'a ValidatedEmbeddingSettings),
}

impl<'a> From<&'a EmbeddingSettings> for EmbeddingSettingsRef<'a> {
    fn from(s: &'a EmbeddingSettings) -> Self {
        Self::Raw(s)
    }
}

impl<'a> From<&'a ValidatedEmbeddingSettings> for EmbeddingSettingsRef<'a> {
    fn from(s: &'a ValidatedEmbeddingSettings) -> Self {
        Self::Validated(s)
    }
}

pub(crate) fn strip_extra_body(plan: &mut ClientPlan) {
    for source in &mut plan.sources {
        source.extra_body.clear();
    }
}

impl EmbeddingPlan {
    /// The settings path for an embedding scope: stages B–E, then F (F7 strips `extra_body`).
    /// Logs the warnings once.
    pub fn from_settings<'a>(
        settings: impl Into<EmbeddingSettingsRef<'a>>,
    ) -> Result<Self, ConfigError> {
        let validated;
        let v = match settings.into() {
            EmbeddingSettingsRef::Raw(raw) => {
                validated = raw.validate()?;
                &validated
            }
            EmbeddingSettingsRef::Validated(v) => v,
        };
        let mut gateway = plan_from_validated(&v.gateway, "GatewaySettings.")?;
        strip_extra_body(&mut gateway);
        log_warnings(&gateway.warnings);
        Ok(Self {
            gateway,
            batch_size: v.batch_size,
            normalize: v.normalize,
            expected_dim: v.expected_dim,
        })
    }
}

/// The settings path for an OCR scope: stages B–E on the embedded gateway (done by
/// `OcrSettings::validate`), then F with `extra_body` stripped. Logs the warnings once.
pub fn ocr_plan_from_validated(v: &ValidatedSettings) -> Result<ClientPlan, ConfigError> {
    let mut gateway = plan_from_validated(v, "GatewaySettings.")?;
    strip_extra_body(&mut gateway);
    log_warnings(&gateway.warnings);
    Ok(gateway)
}
