//! Stage F — client assembly: the settings path
//! ([`ClientPlan::from_settings`]) and the builder path ([`GatewayClientBuilder::plan`],
//! [`EmbeddingClientBuilder::plan`]) end in a [`ClientPlan`]: the validated, normalized values a
//! client is built from, plus every assembly warning, logged here exactly once per plan.
//!
//! The client itself (transport wiring, governor, cleanup worker) is built from a plan by the
//! facade's client module once the streaming executor exists; this module owns only the guards,
//! so that both paths run the same functions as the environment path (stages B and D).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gateway_core::config::validate_source;
use gateway_ports::config::{
    BackpressurePolicy, BreakerConfig, GlobalLimits, PricingTable, RetryPolicy, SourceConfig,
};
use gateway_ports::vocab::{ScopeKind, SelectorKind, WaitPolicy};
use gateway_ports::{
    ChatTransport, CircuitBreaker, Clock, ConfigError, ConfigWarning, EmbeddingTransport,
    RateLimiter, ResponseCache, StructuredOutputStrategy, TelemetryRecorder,
};

use crate::settings::{
    DEFAULT_BATCH_SIZE, DEFAULT_CHAT_SCOPE, DEFAULT_EMBED_SCOPE, DEFAULT_MAX_WAITERS,
    EmbeddingSettings, GatewaySettings, ValidatedEmbeddingSettings, ValidatedSettings,
    check_embedding, check_scope_name, normalize_source, stage_d,
};
use gateway_core::hedge::HedgeConfig;

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
/// Durations a caller sees are `Duration`; thresholds that only feed the core stay
/// `f64` seconds as in `SourceConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientPlan {
    /// Lower-case runtime scope label.
    pub scope: String,
    /// Chat, embedding or OCR.
    pub kind: ScopeKind,
    /// Validated sources with the stall threshold distributed (F3).
    pub sources: Vec<SourceConfig>,
    /// Source ordering strategy.
    pub selector: SelectorKind,
    /// All sources quota-full: wait or fail fast.
    pub quota_full: WaitPolicy,
    /// All sources breaker-rejected: wait or fail fast.
    pub circuit_open: WaitPolicy,
    /// Most callers waiting at once.
    pub max_waiters: u32,
    /// The assembled call deadline (`None` = none).
    pub call_deadline: Option<Duration>,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Breaker configuration (`probe_ttl_s` resolved on the settings path).
    pub breaker: BreakerConfig,
    /// Backpressure policy.
    pub backpressure: BackpressurePolicy,
    /// Scope-wide limits.
    pub global_limits: GlobalLimits,
    /// First-token hedge threshold in seconds (`None` = off).
    pub hedge_after_s: Option<f64>,
    /// Hedge legs per round (acts as 1).
    pub hedge_max_extra: u32,
    /// Mid-stream stall hedge threshold in seconds (`None` = off).
    pub hedge_stall_after_s: Option<f64>,
    /// The runtime hedge configuration of these thresholds (`gateway_core::hedge`).
    pub hedge: HedgeConfig,
    /// Telemetry text cap in characters (`None` = no truncation).
    pub telemetry_text_cap: Option<u32>,
    /// AIMD pacer ceiling: `max(64, max source max_concurrency)`.
    pub pacer_ceiling: u32,
    /// Every assembly warning, each once, in stage order.
    pub warnings: Vec<ConfigWarning>,
}

fn pacer_ceiling(sources: &[SourceConfig]) -> u32 {
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
    let at = |f: &str| format!("{prefix}{f}");
    let call_deadline =
        gateway_core::deadline::ensure_call_deadline_s(v.call_deadline_s, &at("call_deadline_s"))?;
    let mut sources = v.sources.clone();
    for source in &mut sources {
        source.stall_threshold_ms = v.stall_threshold_ms;
    }
    let mut warnings = v.warnings().to_vec();
    let hedge = stage_d(
        &v.scope,
        v.hedge_after_s,
        v.hedge_max_extra,
        v.hedge_stall_after_s,
        v.call_deadline_s,
        &sources,
        &at,
    )?;
    let (after, stall, hedge_config) = (hedge.after_s, hedge.stall_after_s, hedge.config());
    push_unique(&mut warnings, hedge.warnings);
    Ok(ClientPlan {
        scope: v.scope.clone(),
        kind: v.scope_kind(),
        pacer_ceiling: pacer_ceiling(&sources),
        sources,
        selector: v.selector,
        quota_full: v.quota_full,
        circuit_open: v.circuit_open,
        max_waiters: v.max_waiters,
        call_deadline,
        retry: v.retry,
        breaker: v.breaker,
        backpressure: v.backpressure,
        global_limits: v.global_limits,
        hedge_after_s: after,
        hedge_max_extra: v.hedge_max_extra,
        hedge_stall_after_s: stall,
        hedge: hedge_config,
        telemetry_text_cap: v.telemetry_text_cap,
        warnings,
    })
}

/// Components injected into a builder. They are not owned by the client:
/// `close()` does not close them.
#[derive(Clone, Default)]
pub struct InjectedComponents {
    /// Rate limiter (`None` = the in-memory limiter built from the sources, F5).
    pub limiter: Option<Arc<dyn RateLimiter>>,
    /// Circuit breaker (`None` = the in-memory breaker).
    pub breaker: Option<Arc<dyn CircuitBreaker>>,
    /// Response cache (`None` = no cache).
    pub cache: Option<Arc<dyn ResponseCache>>,
    /// Telemetry recorder (`None` = no telemetry).
    pub telemetry: Option<Arc<dyn TelemetryRecorder>>,
    /// Price table (`None` = no cost).
    pub pricing: Option<PricingTable>,
    /// Clock (`None` = the tokio clock).
    pub clock: Option<Arc<dyn Clock>>,
    /// The response cache's default namespace, salt and TTL (builder options).
    pub(crate) cache_options: crate::wiring::CacheOptions,
}

impl fmt::Debug for InjectedComponents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InjectedComponents")
            .field("limiter", &self.limiter.is_some())
            .field("breaker", &self.breaker.is_some())
            .field("cache", &self.cache.is_some())
            .field("telemetry", &self.telemetry.is_some())
            .field("pricing", &self.pricing)
            .field("clock", &self.clock.is_some())
            .field("cache_options", &self.cache_options)
            .finish()
    }
}

/// The values every builder shares (scope, sources, policies, hedge and stall options).
#[derive(Debug, Clone)]
struct CoreOptions {
    scope: String,
    sources: Vec<SourceConfig>,
    selector: SelectorKind,
    quota_full: WaitPolicy,
    circuit_open: WaitPolicy,
    max_waiters: u32,
    call_deadline: Option<Duration>,
    retry: RetryPolicy,
    breaker: BreakerConfig,
    backpressure: BackpressurePolicy,
    global_limits: GlobalLimits,
    hedge_after_s: Option<f64>,
    hedge_max_extra: u32,
    hedge_stall_after_s: Option<f64>,
    stall_threshold_ms: Option<u32>,
    telemetry_text_cap: Option<u32>,
}

impl CoreOptions {
    fn new(scope: &str) -> Self {
        Self {
            scope: scope.to_owned(),
            sources: Vec::new(),
            selector: SelectorKind::HealthAware,
            quota_full: WaitPolicy::Wait,
            circuit_open: WaitPolicy::FailFast,
            max_waiters: DEFAULT_MAX_WAITERS,
            call_deadline: None,
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

    /// Stage F for the builder path: F1, F2, F2w, F3 (+ stage B for every source),
    /// the scope policies (C5, chosen), F4. F5 is checked by the caller, which owns the
    /// transport.
    fn plan(self, kind: ScopeKind, builder: &str) -> Result<ClientPlan, ConfigError> {
        let at = |f: &str| format!("{builder}::{f}");
        check_scope_name(&self.scope, &at("scope"))?;
        let mut sources = self.sources;
        for source in &mut sources {
            normalize_source(source);
        }
        // F1.
        if self.call_deadline.is_some_and(|d| d.is_zero()) {
            return Err(ConfigError::new(
                "deadline.domain",
                at("call_deadline"),
                "call deadline must be > 0 (leave it unset for none)",
            ));
        }
        let deadline_s = self.call_deadline.map(|d| d.as_secs_f64());
        // F2 (stage D on the builder's sources, which may be empty).
        let mut warnings = Vec::new();
        let hedge = stage_d(
            &self.scope,
            self.hedge_after_s,
            self.hedge_max_extra,
            self.hedge_stall_after_s,
            deadline_s,
            &sources,
            &at,
        )?;
        let (after, stall, hedge_config) = (hedge.after_s, hedge.stall_after_s, hedge.config());
        let found = hedge.warnings;
        // F2w (05 R-44).
        if sources.is_empty() {
            warnings.push(ConfigWarning::new(
                "builder.no_sources",
                "the builder has no sources: every call fails with AllSourcesExhausted(no_sources)",
            ));
        }
        // F3: distribute an explicit threshold, then stage B (B4 included) for every source.
        if let Some(ms) = self.stall_threshold_ms {
            if ms == 0 {
                return Err(ConfigError::new(
                    "source.stall_threshold",
                    at("stall_threshold_ms"),
                    "SourceConfig.stall_threshold_ms must be a positive integer",
                ));
            }
            for source in &mut sources {
                source.stall_threshold_ms = ms;
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for source in &sources {
            if !names.insert(source.name.clone()) {
                return Err(ConfigError::new(
                    "settings.duplicate_source",
                    at(&format!("sources[{}]", source.name)),
                    format!("two sources are named `{}`", source.name),
                ));
            }
            let found = validate_source(source, kind).map_err(|mut e| {
                e.origin = at(&e.origin);
                e
            })?;
            warnings.extend(found);
        }
        warnings.extend(found);
        // Issue 22: a global TPM below a source's token estimate admits no call to it.
        warnings.extend(gateway_core::config::global_tpm_warnings(
            &sources,
            self.global_limits.tpm,
        ));
        // Scope policies: the same C5 rules as the settings path (chosen).
        let probe = GatewaySettings {
            scope: self.scope.clone(),
            retry: self.retry,
            breaker: self.breaker,
            backpressure: self.backpressure,
            max_waiters: self.max_waiters,
            ..GatewaySettings::default()
        };
        crate::settings::check_policies(&probe, &|f: &str| at(f))?;
        // F4.
        if self.telemetry_text_cap == Some(0) {
            return Err(ConfigError::new(
                "telemetry.text_cap",
                at("telemetry_text_cap"),
                "text_cap must be > 0 (leave it unset for no truncation)",
            ));
        }
        Ok(ClientPlan {
            scope: self.scope.to_ascii_lowercase(),
            kind,
            pacer_ceiling: pacer_ceiling(&sources),
            sources,
            selector: self.selector,
            quota_full: self.quota_full,
            circuit_open: self.circuit_open,
            max_waiters: self.max_waiters,
            call_deadline: self.call_deadline,
            retry: self.retry,
            breaker: self.breaker,
            backpressure: self.backpressure,
            global_limits: self.global_limits,
            hedge_after_s: after,
            hedge_max_extra: self.hedge_max_extra,
            hedge_stall_after_s: stall,
            hedge: hedge_config,
            telemetry_text_cap: self.telemetry_text_cap,
            warnings,
        })
    }
}

macro_rules! core_setters {
    () => {
        /// Scope name.
        pub fn scope(mut self, scope: impl Into<String>) -> Self {
            self.core.scope = scope.into();
            self
        }
        /// The sources (may be empty: warning `builder.no_sources`).
        pub fn sources(mut self, sources: Vec<SourceConfig>) -> Self {
            self.core.sources = sources;
            self
        }
        /// Source ordering strategy.
        pub fn selector(mut self, selector: SelectorKind) -> Self {
            self.core.selector = selector;
            self
        }
        /// All sources quota-full: wait or fail fast.
        pub fn quota_full(mut self, policy: WaitPolicy) -> Self {
            self.core.quota_full = policy;
            self
        }
        /// All sources breaker-rejected: wait or fail fast.
        pub fn circuit_open(mut self, policy: WaitPolicy) -> Self {
            self.core.circuit_open = policy;
            self
        }
        /// Most callers waiting at once (`0` → `settings.policy`).
        pub fn max_waiters(mut self, max_waiters: u32) -> Self {
            self.core.max_waiters = max_waiters;
            self
        }
        /// Call deadline; a zero `Duration` → `deadline.domain` at `plan()` (F1).
        pub fn call_deadline(mut self, deadline: Duration) -> Self {
            self.core.call_deadline = Some(deadline);
            self
        }
        /// Retry policy.
        pub fn retry(mut self, retry: RetryPolicy) -> Self {
            self.core.retry = retry;
            self
        }
        /// Breaker configuration.
        pub fn breaker_config(mut self, breaker: BreakerConfig) -> Self {
            self.core.breaker = breaker;
            self
        }
        /// Backpressure policy.
        pub fn backpressure(mut self, backpressure: BackpressurePolicy) -> Self {
            self.core.backpressure = backpressure;
            self
        }
        /// Scope-wide limits.
        pub fn global_limits(mut self, limits: GlobalLimits) -> Self {
            self.core.global_limits = limits;
            self
        }
        /// First-token hedge threshold in seconds (stage D, origin `…::hedge_after_s`).
        pub fn hedge_after_s(mut self, after_s: f64) -> Self {
            self.core.hedge_after_s = Some(after_s);
            self
        }
        /// Hedge legs per round, [1, 3].
        pub fn hedge_max_extra(mut self, max_extra: u32) -> Self {
            self.core.hedge_max_extra = max_extra;
            self
        }
        /// Mid-stream stall hedge threshold in seconds (stage D).
        pub fn hedge_stall_after_s(mut self, stall_after_s: f64) -> Self {
            self.core.hedge_stall_after_s = Some(stall_after_s);
            self
        }
        /// Stall metering threshold in ms written into every source (F3); `None` (the
        /// default) keeps each source's own value.
        pub fn stall_threshold_ms(mut self, threshold_ms: Option<u32>) -> Self {
            self.core.stall_threshold_ms = threshold_ms;
            self
        }
        /// Telemetry text cap in characters (`Some(0)` → `telemetry.text_cap`, F4).
        pub fn telemetry_text_cap(mut self, cap: Option<u32>) -> Self {
            self.core.telemetry_text_cap = cap;
            self
        }
        /// Injected rate limiter (not owned by the client).
        pub fn limiter(mut self, limiter: Arc<dyn RateLimiter>) -> Self {
            self.components.limiter = Some(limiter);
            self
        }
        /// Injected circuit breaker (not owned by the client).
        pub fn breaker(mut self, breaker: Arc<dyn CircuitBreaker>) -> Self {
            self.components.breaker = Some(breaker);
            self
        }
        /// Injected response cache (not owned by the client).
        pub fn cache(mut self, cache: Arc<dyn ResponseCache>) -> Self {
            self.components.cache = Some(cache);
            self
        }
        /// Injected telemetry recorder (not owned by the client).
        pub fn telemetry(mut self, recorder: Arc<dyn TelemetryRecorder>) -> Self {
            self.components.telemetry = Some(recorder);
            self
        }
        /// Price table.
        pub fn pricing(mut self, pricing: PricingTable) -> Self {
            self.components.pricing = Some(pricing);
            self
        }
        /// Injected clock.
        pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
            self.components.clock = Some(clock);
            self
        }
    };
}

fn missing_transport(builder: &str) -> ConfigError {
    ConfigError::new(
        "builder.missing_transport",
        format!("{builder}::transport"),
        "the builder needs a transport",
    )
}

/// The builder path for a chat scope: sources and components injected by the application.
/// `plan()` runs stage F; origins are spelt `GatewayClientBuilder::<option>`.
pub struct GatewayClientBuilder {
    core: CoreOptions,
    transport: Option<Arc<dyn ChatTransport>>,
    components: InjectedComponents,
    pub(crate) structured: crate::structured::StructuredConfig,
    pub(crate) profiles: gateway_core::thinking::ProviderRegistry,
}

impl Default for GatewayClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for GatewayClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewayClientBuilder")
            .field("core", &self.core)
            .field("transport", &self.transport.is_some())
            .field("components", &self.components)
            .finish()
    }
}

impl GatewayClientBuilder {
    const NAME: &'static str = "GatewayClientBuilder";

    /// A builder for scope `LLM` with every option at its default.
    pub fn new() -> Self {
        Self {
            core: CoreOptions::new(DEFAULT_CHAT_SCOPE),
            transport: None,
            components: InjectedComponents::default(),
            structured: crate::structured::StructuredConfig::default(),
            profiles: gateway_core::thinking::ProviderRegistry::builtin(),
        }
    }

    core_setters!();

    /// The response cache's default namespace (default: the scope name). Use
    /// `gateway_core::cache::CacheNamespace::compose` for tenant-prefixed namespaces. Needs a
    /// cache (`.cache(..)`).
    pub fn cache_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.components.cache_options.namespace = Some(namespace.into());
        self
    }

    /// The response cache's default salt (default: none). Changing it starts a fresh cache
    /// without deleting keys.
    pub fn cache_salt(mut self, salt: impl Into<String>) -> Self {
        self.components.cache_options.salt = Some(salt.into());
        self
    }

    /// How long a cached response lives (default 86 400 s).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.components.cache_options.ttl = Some(ttl);
        self
    }

    /// The chat transport (required: F5 `builder.missing_transport`).
    pub fn transport(mut self, transport: Arc<dyn ChatTransport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// The structured-output strategy of the first round (default the built-in
    /// `JsonRepairStrategy`).
    pub fn structured_strategy(mut self, strategy: Arc<dyn StructuredOutputStrategy>) -> Self {
        self.structured.strategy = Some(strategy);
        self
    }

    /// The strategy of every round after a failed one (default: unchanged).
    pub fn escalation_strategy(mut self, strategy: Arc<dyn StructuredOutputStrategy>) -> Self {
        self.structured.escalation = Some(strategy);
        self
    }

    /// Re-asks after a reply that does not parse or validate (default 2, like
    /// `PGW_STRUCTURED_MAX_RETRIES`; 0 = no re-ask).
    pub fn structured_max_retries(mut self, max_retries: u32) -> Self {
        self.structured.max_retries = max_retries;
        self
    }

    /// Registers a provider profile: its capability entries and managed roots serve
    /// sources whose provider segment has its name, replacing a built-in profile of that name.
    pub fn register_provider(mut self, profile: gateway_core::thinking::ProviderProfile) -> Self {
        self.profiles.register(profile);
        self
    }

    /// Stage F: F1 deadline, F2 stage D, F2w, F3 + stage B, the C5 policy rules,
    /// F4 text cap, F5 transport. Returns the plan, the transport and the injected components;
    /// logs the warnings once. Errors name `GatewayClientBuilder::<option>`.
    pub fn plan(
        self,
    ) -> Result<(ClientPlan, Arc<dyn ChatTransport>, InjectedComponents), ConfigError> {
        let plan = self.core.plan(ScopeKind::Chat, Self::NAME)?;
        let transport = self
            .transport
            .ok_or_else(|| missing_transport(Self::NAME))?;
        log_warnings(&plan.warnings);
        Ok((plan, transport, self.components))
    }
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

fn strip_extra_body(plan: &mut ClientPlan) {
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

/// The builder path for an embedding scope; origins `EmbeddingClientBuilder::<option>`.
pub struct EmbeddingClientBuilder {
    core: CoreOptions,
    transport: Option<Arc<dyn EmbeddingTransport>>,
    components: InjectedComponents,
    batch_size: u32,
    normalize: bool,
    expected_dim: Option<u32>,
}

impl Default for EmbeddingClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for EmbeddingClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingClientBuilder")
            .field("core", &self.core)
            .field("transport", &self.transport.is_some())
            .field("components", &self.components)
            .field("batch_size", &self.batch_size)
            .field("normalize", &self.normalize)
            .field("expected_dim", &self.expected_dim)
            .finish()
    }
}

impl EmbeddingClientBuilder {
    const NAME: &'static str = "EmbeddingClientBuilder";

    /// A builder for scope `EMBED` with every option at its default (`batch_size` 64).
    pub fn new() -> Self {
        Self {
            core: CoreOptions::new(DEFAULT_EMBED_SCOPE),
            transport: None,
            components: InjectedComponents::default(),
            batch_size: DEFAULT_BATCH_SIZE,
            normalize: false,
            expected_dim: None,
        }
    }

    core_setters!();

    /// The embedding transport (required: F5 `builder.missing_transport`).
    pub fn transport(mut self, transport: Arc<dyn EmbeddingTransport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Texts per upstream request (`0` → `embed.batch_size`, F7).
    pub fn batch_size(mut self, batch_size: u32) -> Self {
        self.batch_size = batch_size;
        self
    }

    /// L2-normalize vectors.
    pub fn normalize(mut self, normalize: bool) -> Self {
        self.normalize = normalize;
        self
    }

    /// Required vector dimension (`Some(0)` → `embed.expected_dim`, F7).
    pub fn expected_dim(mut self, expected_dim: Option<u32>) -> Self {
        self.expected_dim = expected_dim;
        self
    }

    /// Stage F for an embedding scope: as [`GatewayClientBuilder::plan`], then F7 (batch size,
    /// expected dimension, `extra_body` stripped) and the E3 warning when hedge options are
    /// set. Logs the warnings once.
    pub fn plan(
        self,
    ) -> Result<
        (
            EmbeddingPlan,
            Arc<dyn EmbeddingTransport>,
            InjectedComponents,
        ),
        ConfigError,
    > {
        let hedged = self.core.hedge_after_s.is_some() || self.core.hedge_stall_after_s.is_some();
        let mut gateway = self.core.plan(ScopeKind::Embedding, Self::NAME)?;
        let transport = self
            .transport
            .ok_or_else(|| missing_transport(Self::NAME))?;
        check_embedding(
            self.batch_size,
            self.expected_dim,
            &format!("{}::", Self::NAME),
        )?;
        strip_extra_body(&mut gateway);
        if hedged {
            gateway.warnings.push(ConfigWarning::new(
                "hedge.non_chat_scope",
                "hedge keys only take effect on chat scopes: embedding scope is non-streaming; hedge configuration is ignored",
            ));
        }
        log_warnings(&gateway.warnings);
        Ok((
            EmbeddingPlan {
                gateway,
                batch_size: self.batch_size,
                normalize: self.normalize,
                expected_dim: self.expected_dim,
            },
            transport,
            self.components,
        ))
    }
}

/// The builder path for an OCR scope; origins `OcrClientBuilder::<option>`.
/// `extra_body` is stripped from every source (MonkeyOCR takes only the form); hedge options
/// only warn (`hedge.non_chat_scope`); an injected cache and price table are ignored (OCR
/// has no response cache and no cost).
pub struct OcrClientBuilder {
    core: CoreOptions,
    transport: Option<Arc<dyn gateway_ports::OcrTransport>>,
    components: InjectedComponents,
}

impl Default for OcrClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for OcrClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OcrClientBuilder")
            .field("core", &self.core)
            .field("transport", &self.transport.is_some())
            .field("components", &self.components)
            .finish()
    }
}

impl OcrClientBuilder {
    const NAME: &'static str = "OcrClientBuilder";

    /// A builder for scope `OCR` with every option at its default (`circuit_open` `fail_fast`).
    pub fn new() -> Self {
        Self {
            core: CoreOptions::new(crate::settings::DEFAULT_OCR_SCOPE),
            transport: None,
            components: InjectedComponents::default(),
        }
    }

    core_setters!();

    /// The OCR transport (required: F5 `builder.missing_transport`).
    pub fn transport(mut self, transport: Arc<dyn gateway_ports::OcrTransport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Stage F for an OCR scope: as [`GatewayClientBuilder::plan`], then `extra_body` stripped
    /// and the E3 warning when hedge options are set. Logs the warnings once.
    pub fn plan(
        self,
    ) -> Result<
        (
            ClientPlan,
            Arc<dyn gateway_ports::OcrTransport>,
            InjectedComponents,
        ),
        ConfigError,
    > {
        let hedged = self.core.hedge_after_s.is_some() || self.core.hedge_stall_after_s.is_some();
        let mut gateway = self.core.plan(ScopeKind::Ocr, Self::NAME)?;
        let transport = self
            .transport
            .ok_or_else(|| missing_transport(Self::NAME))?;
        strip_extra_body(&mut gateway);
        if hedged {
            gateway.warnings.push(ConfigWarning::new(
                "hedge.non_chat_scope",
                "hedge keys only take effect on chat scopes: ocr scope is non-streaming; hedge configuration is ignored",
            ));
        }
        log_warnings(&gateway.warnings);
        let mut components = self.components;
        components.cache = None;
        components.pricing = None;
        Ok((gateway, transport, components))
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
