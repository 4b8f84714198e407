//! Response cache port: opaque string keys and values with a TTL. The core builds keys
//! and entries and degrades every error to a warning and a miss.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::CacheError;

/// The response cache port.
#[async_trait]
pub trait ResponseCache: Send + Sync + 'static {
    /// The value stored under `key`, if live.
    async fn get(&self, key: &str) -> Result<Option<String>, CacheError>;
    /// Stores `value` under `key` for `ttl`, replacing value and TTL.
    async fn set(&self, key: &str, value: String, ttl: Duration) -> Result<(), CacheError>;
    /// Releases backend resources; idempotent.
    async fn close(&self) {}
}
