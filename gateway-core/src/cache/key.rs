//! The cache key: the model fingerprint of a scope, the canonical key object and
//! its SHA-256, and the tenant-prefixed namespace helper.
//!
//! The key is `"pgw:cache:v1:" + hex_lower(sha256(canonical_json(key_obj)))` where `key_obj`
//! holds exactly the members of C-44 — the model fingerprint, the message digest, the namespace,
//! the response mode (only when not text), the salt (only when set), the caller sampling (only
//! when non-empty), the request-level effort (only when set) and the structured spec (only when
//! set). Nothing else enters it: not the logical call id, not the telemetry text cap, not the
//! tenant, meta, session, parent id, stream flag or deadline, so stream and non-stream
//! calls share entries.

use std::fmt;

use gateway_ports::{ChatRequest, Effort, JsonObject, ResponseMode, SourceConfig, StructuredSpec};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::telemetry::shape::{canonical_json, digest_messages};

/// The versioned prefix of every response-cache key. Bump the version when the key
/// object or the entry format changes meaning.
pub const CACHE_KEY_PREFIX: &str = "pgw:cache:v1:";

/// Longest namespace or salt, in characters (the `PGW_CACHE_NAMESPACE` domain).
pub const CACHE_NAMESPACE_MAX_CHARS: usize = 256;

/// The model fingerprint of a scope's sources: `sha256` (lower-case hex) of the
/// canonical JSON of the list of `{provider, model, extra_body, reasoning_effort,
/// enable_thinking, effort_fallback}` per source, sorted by each element's canonical JSON.
///
/// Credentials, URLs, headers, query parameters, timeouts, limits and `stall_threshold_ms` are
/// not part of it: rotating a key or moving an endpoint keeps the cache warm. Computed once at
/// assembly.
pub fn model_fingerprint(sources: &[SourceConfig]) -> String {
    let mut elements: Vec<String> = sources
        .iter()
        .map(|s| {
            let mut o = Map::new();
            o.insert("provider".to_owned(), Value::from(s.provider.clone()));
            o.insert("model".to_owned(), Value::from(s.model.clone()));
            o.insert("extra_body".to_owned(), Value::Object(s.extra_body.clone()));
            o.insert(
                "reasoning_effort".to_owned(),
                s.reasoning_effort
                    .map_or(Value::Null, |e| Value::from(e.as_str())),
            );
            o.insert(
                "enable_thinking".to_owned(),
                s.enable_thinking.map_or(Value::Null, Value::Bool),
            );
            o.insert(
                "effort_fallback".to_owned(),
                Value::from(s.effort_fallback.as_str()),
            );
            canonical_json(&Value::Object(o))
        })
        .collect();
    elements.sort();
    let list = format!("[{}]", elements.join(","));
    hex::encode(Sha256::digest(list.as_bytes()))
}

/// The structured member of the key: the spec plus the name of the strategy that
/// parses it (two strategies may accept different texts for one spec).
#[derive(Debug, Clone, Copy)]
pub struct StructuredKey<'a> {
    /// The caller's structured spec.
    pub spec: &'a StructuredSpec,
    /// The strategy's stable name (`StructuredOutputStrategy::name`).
    pub strategy: &'a str,
}

/// Every member of the key object, borrowed from the call. Build it with
/// [`KeyParts::of_request`] or field by field.
#[derive(Clone, Copy)]
pub struct KeyParts<'a> {
    /// The scope's model fingerprint ([`model_fingerprint`]).
    pub fingerprint: &'a str,
    /// The request messages (digested, never stored raw).
    pub messages: &'a [JsonObject],
    /// The effective namespace (per-call override, else the scope default).
    pub namespace: &'a str,
    /// The response mode (`OpenAi` adds `"response_mode":"openai"`).
    pub response_mode: ResponseMode,
    /// The effective salt, if any.
    pub salt: Option<&'a str>,
    /// The caller's sampling intent: the request overlay before structured injection.
    pub sampling: &'a JsonObject,
    /// The request-level effort (not the source's).
    pub reasoning_effort: Option<Effort>,
    /// The structured spec and strategy, if any.
    pub structured: Option<StructuredKey<'a>>,
}

impl fmt::Debug for KeyParts<'_> {
    /// The salt is never printed (it is a secret in the settings).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyParts")
            .field("fingerprint", &self.fingerprint)
            .field("messages", &self.messages.len())
            .field("namespace", &self.namespace)
            .field("response_mode", &self.response_mode)
            .field("salt", &self.salt.map(|_| "<redacted>"))
            .field("sampling", &self.sampling.len())
            .field("reasoning_effort", &self.reasoning_effort)
            .field("structured", &self.structured)
            .finish()
    }
}

impl<'a> KeyParts<'a> {
    /// The key members of `request`: its messages, mode, overlay, request-level effort and
    /// (with `strategy`) structured spec; the per-call namespace and salt override the
    /// defaults. Everything else of the request is ignored.
    pub fn of_request(
        request: &'a ChatRequest,
        fingerprint: &'a str,
        default_namespace: &'a str,
        default_salt: Option<&'a str>,
        strategy: Option<&'a str>,
    ) -> Self {
        Self {
            fingerprint,
            messages: &request.messages,
            namespace: request
                .cache_namespace
                .as_deref()
                .unwrap_or(default_namespace),
            response_mode: request.response_mode,
            salt: request.cache_salt.as_deref().or(default_salt),
            sampling: &request.overlay,
            reasoning_effort: request.reasoning_effort,
            structured: match (&request.structured, strategy) {
                (Some(spec), Some(strategy)) => Some(StructuredKey { spec, strategy }),
                _ => None,
            },
        }
    }

    /// The key object of C-44, members present only under their conditions.
    pub fn key_object(&self) -> Value {
        let mut o = Map::new();
        o.insert("model".to_owned(), Value::from(self.fingerprint));
        let messages = digest_messages(self.messages)
            .into_iter()
            .map(Value::Object)
            .collect();
        o.insert("messages".to_owned(), Value::Array(messages));
        o.insert("namespace".to_owned(), Value::from(self.namespace));
        if self.response_mode != ResponseMode::Text {
            o.insert(
                "response_mode".to_owned(),
                Value::from(self.response_mode.as_str()),
            );
        }
        if let Some(salt) = self.salt {
            o.insert("salt".to_owned(), Value::from(salt));
        }
        if !self.sampling.is_empty() {
            o.insert("sampling".to_owned(), Value::Object(self.sampling.clone()));
        }
        if let Some(effort) = self.reasoning_effort {
            o.insert("reasoning_effort".to_owned(), Value::from(effort.as_str()));
        }
        if let Some(s) = self.structured {
            let mut m = Map::new();
            match s.spec {
                StructuredSpec::Json => {
                    m.insert("kind".to_owned(), Value::from("json"));
                }
                StructuredSpec::Schema {
                    name,
                    schema,
                    strict,
                } => {
                    m.insert("kind".to_owned(), Value::from("schema"));
                    m.insert("name".to_owned(), Value::from(name.clone()));
                    m.insert("schema".to_owned(), schema.clone());
                    m.insert("strict".to_owned(), Value::Bool(*strict));
                }
            }
            m.insert("strategy".to_owned(), Value::from(s.strategy));
            o.insert("structured".to_owned(), Value::Object(m));
        }
        Value::Object(o)
    }

    /// The cache key: [`CACHE_KEY_PREFIX`] + lower-case hex SHA-256 of the canonical JSON of
    /// [`key_object`](Self::key_object).
    pub fn key(&self) -> String {
        let text = canonical_json(&self.key_object());
        let digest = Sha256::digest(text.as_bytes());
        let mut key = String::with_capacity(CACHE_KEY_PREFIX.len() + 64);
        key.push_str(CACHE_KEY_PREFIX);
        key.push_str(&hex::encode(digest));
        key
    }
}

/// The tenant-prefixed namespace convention: `"{tenant_prefix}:{epoch}:{name}"`.
///
/// The namespace is the cache's isolation unit — tenant id and meta never enter the key — so a
/// multi-tenant deployment gives every tenant its own prefix. Bumping `epoch` invalidates all of
/// a tenant's entries without deleting keys (old entries expire by TTL); after an upgrade that
/// changes what a result means, keep prefix and epoch and switch `name` (or the salt) on every
/// path (settings, builder, per call).
#[derive(Debug, Clone, Copy)]
pub struct CacheNamespace;

impl CacheNamespace {
    /// `"{tenant_prefix}:{epoch}:{name}"`. A `:` inside `tenant_prefix` is escaped as `\:` (and
    /// `\` as `\\`) so two different (prefix, name) pairs can never render the same namespace.
    pub fn compose(tenant_prefix: &str, epoch: u64, name: &str) -> String {
        let mut out = String::with_capacity(tenant_prefix.len() + name.len() + 24);
        for c in tenant_prefix.chars() {
            if c == ':' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push(':');
        out.push_str(&epoch.to_string());
        out.push(':');
        out.push_str(name);
        out
    }
}

/// Why a namespace or salt value is refused (the `PGW_CACHE_NAMESPACE` domain: non-empty, at
/// most 256 characters, no control characters). `None` = valid.
pub fn namespace_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("must not be empty")
    } else if value.chars().count() > CACHE_NAMESPACE_MAX_CHARS {
        Some("must be at most 256 characters")
    } else if value.chars().any(char::is_control) {
        Some("must not contain control characters")
    } else {
        None
    }
}
