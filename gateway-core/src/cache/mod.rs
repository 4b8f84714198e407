//! The response cache layer: key, cacheability, entry
//! codec, read and write paths, hit rewrite and the memory backend.
//!
//! Placement: `chat → cache → loop → round → attempt`. The governor's
//! [`run_chat_cached`](crate::governor::Governor::run_chat_cached) opens the call (closed check,
//! deadline, statistics boundary), then — inside the call deadline — reads ([`CacheCall::read`]),
//! and on a miss runs the loop and writes ([`CacheCall::write`]). A hit is rewritten,
//! gets this call's statistics and produces exactly one `cache_hit` row; the cache layer
//! itself never writes terminal or cancellation rows — the call boundary does.
//!
//! The cache is a degradation surface: a backend error on `get` is a warning and a miss,
//! on `set` a warning and a skipped write; it never fails a call. Cancellation is never
//! swallowed (dropping the call drops the pending `get`/`set`). There is no
//! single-flight: two concurrent identical misses both go upstream and the last write wins.
//!
//! Cacheability is the one predicate of `verdict::cache`, asked on the write path
//! of the delivered response and on the read path of the **stored** values.
//!
//! Structured calls (`structured::ladder::run_cached`) put the re-ask ladder **inside** the
//! cache stage: read, then on a miss the whole ladder, then the write of its final validated
//! answer only; the key carries the structured spec and the round-0 strategy's name.

mod entry;
mod key;
mod memory;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gateway_ports::{
    CachePolicy, ChatRequest, GatewayError, LlmResponse, ResponseCache, ResponseMode, SourceConfig,
    StructuredOutputStrategy,
};

pub use entry::{RestoreMiss, RestoreStructured, decode_entry, encode_entry};
pub use key::{
    CACHE_KEY_PREFIX, CACHE_NAMESPACE_MAX_CHARS, CacheNamespace, KeyParts, StructuredKey,
    model_fingerprint, namespace_problem,
};
pub use memory::MemoryCache;

use crate::verdict::is_cacheable_response;

/// Default entry lifetime (`PGW_CACHE_TTL_S` default 86 400 s).
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(86_400);

/// Default memory capacity (`PGW_CACHE_MEMORY_MAX_ENTRIES` default 10 000).
pub const DEFAULT_MEMORY_MAX_ENTRIES: usize = 10_000;

/// The response cache of one chat scope: the backend, the scope's model fingerprint (computed
/// once here), the default namespace and salt, and the entry TTL.
pub struct ChatCache {
    backend: Arc<dyn ResponseCache>,
    fingerprint: String,
    namespace: String,
    salt: Option<String>,
    ttl: Duration,
}

impl fmt::Debug for ChatCache {
    /// The salt is never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCache")
            .field("fingerprint", &self.fingerprint)
            .field("namespace", &self.namespace)
            .field("salt", &self.salt.as_ref().map(|_| "<redacted>"))
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl ChatCache {
    /// The cache of a scope over `sources`, storing in `backend` under `namespace` (default:
    /// the scope name) for `ttl`, without salt.
    pub fn new(
        backend: Arc<dyn ResponseCache>,
        sources: &[SourceConfig],
        namespace: impl Into<String>,
        ttl: Duration,
    ) -> Self {
        Self {
            backend,
            fingerprint: model_fingerprint(sources),
            namespace: namespace.into(),
            salt: None,
            ttl,
        }
    }

    /// With this default salt (`PGW_CACHE_SALT`; `None` = no salt in the key).
    pub fn with_salt(mut self, salt: Option<String>) -> Self {
        self.salt = salt;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn ResponseCache> {
        &self.backend
    }

    /// The scope's model fingerprint.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The default namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The entry TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The key of `request`, with `strategy` naming the structured strategy.
    pub fn key_for(&self, request: &ChatRequest, strategy: Option<&str>) -> String {
        KeyParts::of_request(
            request,
            &self.fingerprint,
            &self.namespace,
            self.salt.as_deref(),
            strategy,
        )
        .key()
    }

    /// This call's view of the cache, or `None` when the call does not use it:
    /// `CachePolicy::Bypass`, or a structured request without a strategy to rebuild
    /// `structured_data` on a hit (then the call is neither read nor written).
    pub fn prepare<'a>(
        &'a self,
        request: &'a ChatRequest,
        strategy: Option<&'a dyn StructuredOutputStrategy>,
    ) -> Option<CacheCall<'a>> {
        self.prepare_structured(request, strategy, None)
    }

    /// [`prepare`](Self::prepare) for a structured call whose ladder also has an
    /// `escalation` strategy: a stored answer is accepted on a hit when the round-0
    /// `strategy` or the escalation strategy parses it (the answer may come from a re-ask
    /// round). The key names the round-0 strategy only.
    pub fn prepare_structured<'a>(
        &'a self,
        request: &'a ChatRequest,
        strategy: Option<&'a dyn StructuredOutputStrategy>,
        escalation: Option<&'a dyn StructuredOutputStrategy>,
    ) -> Option<CacheCall<'a>> {
        if request.cache == CachePolicy::Bypass {
            return None;
        }
        let structured = match (&request.structured, strategy) {
            (None, _) => None,
            (Some(spec), Some(strategy)) => Some(RestoreStructured {
                spec,
                strategy,
                escalation,
            }),
            (Some(_), None) => return None,
        };
        let key = self.key_for(request, structured.map(|s| s.strategy.name()));
        Some(CacheCall {
            cache: self,
            key,
            policy: request.cache,
            mode: request.response_mode,
            structured,
        })
    }
}

/// One call's use of the cache: its key, policy, response mode and structured strategy.
pub struct CacheCall<'a> {
    cache: &'a ChatCache,
    key: String,
    policy: CachePolicy,
    mode: ResponseMode,
    structured: Option<RestoreStructured<'a>>,
}

impl fmt::Debug for CacheCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheCall")
            .field("key", &self.key)
            .field("policy", &self.policy)
            .field("mode", &self.mode)
            .field("structured", &self.structured)
            .finish()
    }
}

impl CacheCall<'_> {
    /// The call's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether this call reads (`CachePolicy::Use` only).
    pub fn reads(&self) -> bool {
        self.policy == CachePolicy::Use
    }

    /// The read path: `None` (a miss) unless the policy reads, the backend has the
    /// key, and the stored entry restores; otherwise the restored, rewritten response
    /// without `call_id` and `call_stats` (the caller sets them). A backend error is a
    /// warning and a miss; a restore failure is a warning and a miss (the fresh result then
    /// overwrites the entry). Every hit is decoded afresh, so hits are independent
    /// copies.
    pub async fn read(&self) -> Option<LlmResponse> {
        if !self.reads() {
            return None;
        }
        let stored = match self.cache.backend.get(&self.key).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(
                    code = "cache.get_failed",
                    detail = %error.detail,
                    "response cache read failed; treated as a miss"
                );
                return None;
            }
        };
        match decode_entry(&stored, self.mode, self.structured) {
            Ok(hit) => Some(hit),
            Err(miss) => {
                tracing::warn!(
                    code = "cache.entry_refused",
                    reason = %miss,
                    "stored response not served; treated as a miss"
                );
                None
            }
        }
    }

    /// The write path for the delivered `response`: skipped unless cacheable in
    /// this call's mode (a debug line), an encode error is a warning naming the error type, a
    /// backend error a warning; nothing is propagated. Runs inside the call deadline (the
    /// governor awaits it before returning): if the deadline expires during `set`, the future
    /// is dropped and the call fails with `CallDeadlineExceeded`.
    pub async fn write(&self, response: &LlmResponse) {
        if self.policy == CachePolicy::Bypass {
            return;
        }
        if !is_cacheable_response(self.mode, response) {
            tracing::debug!(
                code = "cache.not_cacheable",
                "result not cacheable, skip write"
            );
            return;
        }
        let value = match encode_entry(response) {
            Ok(value) => value,
            Err(_) => {
                tracing::warn!(
                    code = "cache.encode_failed",
                    error_type = "serde_json::Error",
                    "response not serialisable for the cache; write skipped"
                );
                return;
            }
        };
        if let Err(error) = self
            .cache
            .backend
            .set(&self.key, value, self.cache.ttl)
            .await
        {
            tracing::warn!(
                code = "cache.set_failed",
                detail = %error.detail,
                "response cache write failed; the response is still returned"
            );
        }
    }
}

/// The per-call cache options of a chat request (`cache_namespace`, `cache_salt`): each must be
/// non-empty, at most 256 characters, without control characters (the `PGW_CACHE_NAMESPACE`
/// domain).
///
/// Errors: `InvalidArgument` naming `{owner}::cache_namespace` or `{owner}::cache_salt`.
pub fn check_cache_options(request: &ChatRequest, owner: &str) -> Result<(), GatewayError> {
    for (field, value) in [
        ("cache_namespace", &request.cache_namespace),
        ("cache_salt", &request.cache_salt),
    ] {
        if let Some(value) = value
            && let Some(problem) = namespace_problem(value)
        {
            return Err(GatewayError::invalid_argument(
                format!("{owner}::{field}"),
                format!("{field} {problem}"),
            ));
        }
    }
    Ok(())
}
