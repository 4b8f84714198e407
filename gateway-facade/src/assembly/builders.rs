//! The builder path: [`GatewayClientBuilder`], [`EmbeddingClientBuilder`] and
//! [`OcrClientBuilder`], each a [`ScopePolicy`] with sources and injected components, whose
//! `plan()` runs stage F (`super::options`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gateway_core::policy::ScopePolicy;
use gateway_ports::config::{
    BackpressurePolicy, BreakerConfig, GlobalLimits, PricingTable, RetryPolicy, SourceConfig,
};
use gateway_ports::vocab::{ScopeKind, SelectorKind, WaitPolicy};
use gateway_ports::{
    ChatTransport, CircuitBreaker, Clock, ConfigError, ConfigWarning, EmbeddingTransport,
    RateLimiter, ResponseCache, StructuredOutputStrategy, TelemetryRecorder,
};

use super::options::{CoreOptions, InjectedComponents, core_setters, missing_transport};
use super::{ClientPlan, EmbeddingPlan, log_warnings, strip_extra_body};
use crate::settings::{
    DEFAULT_BATCH_SIZE, DEFAULT_CHAT_SCOPE, DEFAULT_EMBED_SCOPE, check_embedding,
};

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
        let hedged = self.core.policy.hedge_requested();
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
        let hedged = self.core.policy.hedge_requested();
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
