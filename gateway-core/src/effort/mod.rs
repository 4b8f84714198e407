//! Reasoning effort: source intent, the capability table, resolution of a level
//! against a model, managed roots versus raw overlays, and the contradiction warning.
//!
//! - [`source_intent`] / [`effective_effort`]: the request level wins; `None`
//!   inherits the source intent (`REASONING_EFFORT`, else the `ENABLE_THINKING` sugar).
//! - [`CapabilityEntry`] rows live on the provider profiles of [`ProviderRegistry`];
//!   the built-in rows are in [`table`]; [`ProviderRegistry::register`] extends them.
//! - [`resolve`]: supported → send; `nearest` → smallest distance in
//!   `EFFORT_ORDER`, tie → weaker; `error` → an [`EffortRefusal`] naming model, level, supported
//!   levels, the cheapest usable level and the key to set.
//! - [`plan_attempt`]: the per-attempt decision the executor applies — the
//!   fragment merged into the body, or a `RequestRejected` before any byte.
//! - [`check_source`] (C-31.3): the assembly-time checks of a chat source.
//! - [`ContradictionThrottle`]: one warning per `(source, model, applied level)`.

pub mod table;

use std::collections::HashSet;
use std::fmt;
use std::sync::Mutex;

use gateway_ports::config::SourceConfig;
use gateway_ports::request::{ChatRequest, JsonObject};
use gateway_ports::{
    AttemptError, AttemptFailure, ConfigError, EFFORT_ORDER, Effort, EffortFallback,
    ErrorOperation, GatewayError, ThinkingObservation,
};
use serde_json::Value;

use crate::thinking::{ProviderProfile, ProviderRegistry};

pub mod capability;
pub use capability::{
    CapabilityEntry, Evidence, EvidenceKind, ThinkingWire, effort_index, glob_match,
};

/// The supported level nearest to `level`: smallest `|index(l) − index(x)|` in
/// `EFFORT_ORDER`, a tie going to the weaker level. `None` when `supported` is empty.
pub fn nearest(level: Effort, supported: &[Effort]) -> Option<Effort> {
    let target = effort_index(level);
    supported
        .iter()
        .copied()
        .min_by_key(|x| (effort_index(*x).abs_diff(target), effort_index(*x)))
}

/// The cheapest usable level: the first supported level in `EFFORT_ORDER` other
/// than `none`/`auto`, else the first supported level.
pub fn cheapest_usable(supported: &[Effort]) -> Option<Effort> {
    let mut sorted = supported.to_vec();
    sorted.sort_by_key(|l| effort_index(*l));
    sorted
        .iter()
        .copied()
        .find(|l| !matches!(l, Effort::Off | Effort::Auto))
        .or_else(|| sorted.first().copied())
}

/// Parses a level from text: the eight names, ASCII case-insensitive after trimming.
/// Anything else is `InvalidArgument` naming `origin` and listing the eight names.
pub fn parse_effort(text: &str, origin: &str) -> Result<Effort, GatewayError> {
    Effort::from_wire(&text.trim().to_ascii_lowercase()).ok_or_else(|| {
        let names: Vec<&str> = EFFORT_ORDER.iter().map(|l| l.as_str()).collect();
        GatewayError::invalid_argument(
            origin,
            format!(
                "unknown reasoning effort level; use one of: {}",
                names.join(", ")
            ),
        )
    })
}

/// The source-level intent: `REASONING_EFFORT` if set, else `ENABLE_THINKING`
/// (`true` → `auto`, `false` → `none`), else `None`.
pub fn source_intent(source: &SourceConfig) -> Option<Effort> {
    source.reasoning_effort.or(match source.enable_thinking {
        Some(true) => Some(Effort::Auto),
        Some(false) => Some(Effort::Off),
        None => None,
    })
}

/// The level in effect for `source`: the request level if `Some`, else the source intent.
pub fn effective_effort(request: Option<Effort>, source: &SourceConfig) -> Option<Effort> {
    request.or_else(|| source_intent(source))
}

/// Where an effective level came from (it decides which key a refusal names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelOrigin {
    /// `ChatOptions::reasoning_effort`.
    Request,
    /// The source's `REASONING_EFFORT` / `ENABLE_THINKING`.
    Source,
}

/// What the library sends for reasoning on one attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ThinkingDirective {
    /// The matched entry's wire family; `None` when nothing was resolved.
    pub wire: Option<ThinkingWire>,
    /// Keys merged at the payload top level (after `extra_body` and the overlay).
    pub fragment: JsonObject,
    /// The level actually encoded (`LlmResponse::applied_effort`).
    pub applied: Option<Effort>,
}

/// A level the model cannot hit under `EFFORT_FALLBACK=error`, or a model without an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffortRefusal {
    /// The source's configured model.
    pub model: String,
    /// The requested level.
    pub level: Effort,
    /// Supported levels (empty for an unknown model).
    pub supported: Vec<Effort>,
    /// The cheapest usable level, if the model has one.
    pub cheapest: Option<Effort>,
    /// `true` when no entry (and no catch-all) matched the model.
    pub unknown_model: bool,
}

impl EffortRefusal {
    /// The refusal text: model, requested level, supported levels and what to set.
    /// `fallback_key` / `effort_key` are the keys of the source (e.g.
    /// `CHAT__OPENAI__1__EFFORT_FALLBACK`); `origin` picks the advice.
    pub fn message(&self, origin: LevelOrigin, fallback_key: &str, effort_key: &str) -> String {
        if self.unknown_model {
            return format!(
                "no capability entry for model {}: reasoning effort `{}` cannot be sent; remove the \
                 effort, or register a provider profile with an entry for this model",
                self.model, self.level
            );
        }
        let supported: Vec<&str> = self.supported.iter().map(|l| l.as_str()).collect();
        let cheapest = self.cheapest.map_or("none", Effort::as_str);
        let advice = match origin {
            LevelOrigin::Request => format!(
                "set {fallback_key}=nearest to use the nearest supported level, or request one of the supported levels"
            ),
            LevelOrigin::Source => format!(
                "set {effort_key}={cheapest} (the cheapest usable level) or {fallback_key}=nearest"
            ),
        };
        format!(
            "model {} does not support reasoning effort `{}` (supported: {}; cheapest usable: {}); {}",
            self.model,
            self.level,
            supported.join(", "),
            cheapest,
            advice
        )
    }
}

impl fmt::Display for EffortRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(LevelOrigin::Request, "EFFORT_FALLBACK", "REASONING_EFFORT"))
    }
}

/// The first entry of `profile` whose pattern matches `model` (declaration order).
pub fn lookup<'a>(profile: &'a ProviderProfile, model: &str) -> Option<&'a CapabilityEntry> {
    profile.entries.iter().find(|e| e.matches(model))
}

/// Resolves `level` for `model` under `profile`. `None` sends nothing.
pub fn resolve(
    level: Option<Effort>,
    model: &str,
    profile: &ProviderProfile,
    fallback: EffortFallback,
) -> Result<ThinkingDirective, EffortRefusal> {
    let Some(level) = level else {
        return Ok(ThinkingDirective::default());
    };
    let Some(entry) = lookup(profile, model) else {
        return Err(EffortRefusal {
            model: model.to_owned(),
            level,
            supported: Vec::new(),
            cheapest: None,
            unknown_model: true,
        });
    };
    let supported = entry.supported();
    let send = if supported.contains(&level) {
        Some(level)
    } else if fallback == EffortFallback::Nearest {
        nearest(level, &supported)
    } else {
        None
    };
    match send.and_then(|l| entry.fragment(l).map(|f| (l, f))) {
        Some((applied, fragment)) => Ok(ThinkingDirective {
            wire: Some(entry.wire),
            fragment: fragment.clone(),
            applied: Some(applied),
        }),
        None => Err(EffortRefusal {
            model: model.to_owned(),
            level,
            cheapest: cheapest_usable(&supported),
            supported,
            unknown_model: false,
        }),
    }
}

/// The managed roots of C-30: top-level keys plus `chat_template_kwargs.enable_thinking`.
pub const MANAGED_ROOTS: [&str; 5] = [
    "reasoning_effort",
    "enable_thinking",
    "thinking",
    "thinking_budget",
    "reasoning",
];

/// The first managed root present in `object`: a [`MANAGED_ROOTS`] key, the nested
/// `chat_template_kwargs.enable_thinking`, or a root the profile adds. Returned as a path.
pub fn managed_root_in(object: &JsonObject, profile: &ProviderProfile) -> Option<String> {
    if let Some(key) = MANAGED_ROOTS.iter().find(|k| object.contains_key(**k)) {
        return Some((*key).to_owned());
    }
    if object
        .get("chat_template_kwargs")
        .and_then(Value::as_object)
        .is_some_and(|kw| kw.contains_key("enable_thinking"))
    {
        return Some("chat_template_kwargs.enable_thinking".to_owned());
    }
    profile
        .managed_roots
        .iter()
        .find(|k| object.contains_key(k.as_str()))
        .cloned()
}

/// The environment-style key of one source field: `{SCOPE}__{PROVIDER}__{N}__{FIELD}` (the
/// source name is `{provider}_{n}`); `{SCOPE}` when the scope is unknown.
pub fn source_key(scope: Option<&str>, source_name: &str, field: &str) -> String {
    let (provider, n) = source_name.rsplit_once('_').unwrap_or((source_name, "1"));
    format!(
        "{}__{}__{}__{}",
        scope.map_or_else(|| "{SCOPE}".to_owned(), str::to_ascii_uppercase),
        provider.to_ascii_uppercase(),
        n,
        field
    )
}

/// The per-attempt reasoning decision for `request` on `source`.
///
/// - caller overlay holds a managed root and the source has intent → `RequestRejected` (C-31.2);
/// - a request level routed to a raw-only source (its `extra_body` holds a managed root) →
///   `RequestRejected` (C-31.3);
/// - a managed root anywhere and no intent → raw-only: nothing added, `applied = None`;
/// - otherwise [`resolve`] the effective level; a refusal is `RequestRejected`.
///
/// A `RequestRejected` here is raised before any byte is sent.
pub fn plan_attempt(
    request: &ChatRequest,
    source: &SourceConfig,
    profile: &ProviderProfile,
    scope: Option<&str>,
) -> Result<ThinkingDirective, AttemptError> {
    let reject = |message: String| {
        let mut failure = AttemptFailure::new(message, ErrorOperation::Chat);
        failure.source_name = Some(source.name.clone());
        AttemptError::request_rejected(failure)
    };
    let intent = source_intent(source);
    let overlay_root = managed_root_in(&request.overlay, profile);
    let extra_root = managed_root_in(&source.extra_body, profile);
    if let (Some(root), Some(_)) = (&overlay_root, intent) {
        return Err(reject(format!(
            "{}: the overlay sets `{root}` while the source manages reasoning ({} / {}); remove \
             `{root}` from the overlay or unset the source's reasoning keys",
            source.name,
            source_key(scope, &source.name, "REASONING_EFFORT"),
            source_key(scope, &source.name, "ENABLE_THINKING"),
        )));
    }
    if let (Some(root), Some(_)) = (&extra_root, request.reasoning_effort) {
        return Err(reject(format!(
            "{}: a request-level reasoning effort cannot be combined with `{root}` in {}; remove \
             one of them",
            source.name,
            source_key(scope, &source.name, "EXTRA_BODY"),
        )));
    }
    if overlay_root.is_some() || extra_root.is_some() {
        return Ok(ThinkingDirective::default()); // raw-only (C-32)
    }
    let origin = if request.reasoning_effort.is_some() {
        LevelOrigin::Request
    } else {
        LevelOrigin::Source
    };
    let level = effective_effort(request.reasoning_effort, source);
    resolve(level, &source.model, profile, source.effort_fallback).map_err(|refusal| {
        reject(format!(
            "{}: {}",
            source.name,
            refusal.message(
                origin,
                &source_key(scope, &source.name, "EFFORT_FALLBACK"),
                &source_key(scope, &source.name, "REASONING_EFFORT"),
            )
        ))
    })
}

/// The level telemetry records for a chat attempt without a response: the level that
/// was (or would have been) applied on `source` — the request level first, then the source
/// intent, `nearest` applied; the effective level itself when it would be refused.
pub fn row_effort(
    request: Option<Effort>,
    source: &SourceConfig,
    profile: &ProviderProfile,
) -> Option<Effort> {
    let level = effective_effort(request, source)?;
    match resolve(Some(level), &source.model, profile, source.effort_fallback) {
        Ok(directive) => directive.applied.or(Some(level)),
        Err(_) => Some(level),
    }
}

/// Assembly-time checks of one chat source (C-31.3), with `key(field)` naming the
/// source's keys (`{SCOPE}__{P}__{N}__{FIELD}` or a settings path):
/// - `ENABLE_THINKING=false` with `REASONING_EFFORT≠none`, or `ENABLE_THINKING=true` with
///   `REASONING_EFFORT=none` → `effort.conflict` naming both keys;
/// - an `EXTRA_BODY` holding a managed root on a source with intent → `effort.raw_conflict`;
/// - a source level its model cannot hit (or an unknown model) → `effort.unsupported`.
pub fn check_source(
    source: &SourceConfig,
    registry: &ProviderRegistry,
    key: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    check_intent_pair(source, key)?;
    let Some(level) = source_intent(source) else {
        return Ok(());
    };
    let profile = registry.profile_for(&source.provider);
    if let Some(root) = managed_root_in(&source.extra_body, &profile) {
        return Err(ConfigError::new(
            "effort.raw_conflict",
            key("EXTRA_BODY"),
            format!(
                "source {}: {} sets `{root}` while the source also sets a reasoning level; remove \
                 `{root}` from it or unset {} / {}",
                source.name,
                key("EXTRA_BODY"),
                key("REASONING_EFFORT"),
                key("ENABLE_THINKING")
            ),
        ));
    }
    resolve(Some(level), &source.model, &profile, source.effort_fallback)
        .map(|_| ())
        .map_err(|refusal| {
            ConfigError::new(
                "effort.unsupported",
                key("REASONING_EFFORT"),
                format!(
                    "source {}: {}",
                    source.name,
                    refusal.message(
                        LevelOrigin::Source,
                        &key("EFFORT_FALLBACK"),
                        &key("REASONING_EFFORT")
                    )
                ),
            )
        })
}

/// `ENABLE_THINKING=false` with `REASONING_EFFORT≠none`, or `ENABLE_THINKING=true` with
/// `REASONING_EFFORT=none`, is `effort.conflict` naming both keys (`key(field)` renders them).
pub fn check_intent_pair(
    source: &SourceConfig,
    key: &dyn Fn(&str) -> String,
) -> Result<(), ConfigError> {
    let conflict = match (source.enable_thinking, source.reasoning_effort) {
        (Some(false), Some(level)) => level != Effort::Off,
        (Some(true), Some(level)) => level == Effort::Off,
        _ => false,
    };
    if conflict {
        return Err(ConfigError::new(
            "effort.conflict",
            key("REASONING_EFFORT"),
            format!(
                "source {}: {} and {} contradict each other; set only one of them",
                source.name,
                key("ENABLE_THINKING"),
                key("REASONING_EFFORT")
            ),
        ));
    }
    Ok(())
}

/// Most keys the contradiction throttle remembers.
pub const CONTRADICTION_THROTTLE_MAX: usize = 1024;

/// `(source_name, model, applied level)` keys already warned, and whether the saturation notice
/// was logged.
type ThrottleState = (HashSet<(String, String, Effort)>, bool);

/// The contradiction warning of C-36, throttled per client: at most one warning per
/// `(source_name, model, applied level)`; bounded at [`CONTRADICTION_THROTTLE_MAX`] keys, with
/// one saturation notice after which nothing more is remembered (or warned). Names only.
#[derive(Debug, Default)]
pub struct ContradictionThrottle {
    state: Mutex<ThrottleState>,
}

impl ContradictionThrottle {
    /// An empty throttle.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks one delivered attempt: returns the warning text when `applied` and `observation`
    /// contradict and the key was not warned yet; logs it (target
    /// `polygateway::effort`). `Unknown` and `applied = None` never warn.
    pub fn check(
        &self,
        source_name: &str,
        model: &str,
        applied: Option<Effort>,
        observation: ThinkingObservation,
    ) -> Option<String> {
        let applied = applied?;
        let text = match (applied, observation) {
            (Effort::Off, ThinkingObservation::Observed) => {
                "reasoning observed although `none` was sent".to_owned()
            }
            (level, ThinkingObservation::Absent) if level != Effort::Off => {
                format!("level `{level}` sent but no reasoning observed")
            }
            _ => return None,
        };
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (seen, saturated) = &mut *guard;
        let key = (source_name.to_owned(), model.to_owned(), applied);
        if seen.contains(&key) {
            return None;
        }
        if seen.len() >= CONTRADICTION_THROTTLE_MAX {
            if !*saturated {
                *saturated = true;
                tracing::warn!(
                    target: "polygateway::effort",
                    code = "effort.throttle_saturated",
                    "reasoning contradiction warnings: {CONTRADICTION_THROTTLE_MAX} keys remembered; further ones are not logged"
                );
            }
            return None;
        }
        seen.insert(key);
        tracing::warn!(
            target: "polygateway::effort",
            code = "effort.contradiction",
            source = source_name,
            model,
            level = applied.as_str(),
            "{text} (stale capability table, enabling not effective, or injected but not observed)"
        );
        Some(text)
    }

    /// Keys remembered.
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0
            .len()
    }

    /// `true` when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
