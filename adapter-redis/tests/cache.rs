//! `RedisCache` against the real Redis (10 §8.6; 70 C-62): `SET … PX` / `GET`, the key verbatim
//! under the scope's hash-tagged prefix, errors as `CacheError` (the core degrades them). The
//! whole contract suite CT-CACHE-01..07 runs against Redis in tests/contract.rs; these are the
//! Redis-specific extras.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use adapter_redis::{RedisCache, RedisConnection, RedisOptions};
use common::{connection, fresh_scope, require_redis};
use gateway_ports::ResponseCache;
use tokio::time::Instant;

/// CT-CACHE-01/04: set then get returns the identical value; a second set replaces value and TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_cache_01_04_set_get_replace() {
    let conn = connection();
    require_redis(&conn).await;
    let c = RedisCache::new(&fresh_scope("cache"), conn);
    assert_eq!(c.get("pgw:cache:v1:k").await.unwrap(), None);
    let v = "{\"text\":\"héllo\",\"n\":1}".to_owned();
    c.set("pgw:cache:v1:k", v.clone(), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(c.get("pgw:cache:v1:k").await.unwrap(), Some(v));
    c.set("pgw:cache:v1:k", "second".into(), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        c.get("pgw:cache:v1:k").await.unwrap().as_deref(),
        Some("second")
    );
}

/// CT-CACHE-03: scopes (namespaces of the prefix) are isolated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_cache_03_scopes_isolated() {
    let conn = connection();
    require_redis(&conn).await;
    let a = RedisCache::new(&fresh_scope("ca"), conn.clone());
    let b = RedisCache::new(&fresh_scope("cb"), conn);
    a.set("k", "a".into(), Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(b.get("k").await.unwrap(), None);
}

// covers: CT-CACHE-02
/// C-62: a zero TTL stores nothing (`PX` needs at least 1 ms); the suite's TTL rows
/// (CT-CACHE-02/04 in tests/contract.rs) move time with `advance_ttls`, never by sleeping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_62_zero_ttl_stores_nothing_and_advance_ttls_expires() {
    let conn = connection();
    require_redis(&conn).await;
    let c = RedisCache::new(&fresh_scope("cttl"), conn);
    c.set("z", "v".into(), Duration::ZERO).await.unwrap();
    assert_eq!(c.get("z").await.unwrap(), None);
    c.set("k", "v".into(), Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(c.advance_ttls(Duration::from_secs(29)).await.unwrap(), 1);
    assert_eq!(c.get("k").await.unwrap().as_deref(), Some("v"));
    c.advance_ttls(Duration::from_secs(1)).await.unwrap();
    assert_eq!(c.get("k").await.unwrap(), None, "the server expired it");
}

/// CT-CACHE-05: an unreachable Redis is a `CacheError` within the operation timeout, never a
/// panic or a value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ct_cache_05_unreachable_is_cache_error() {
    let conn = RedisConnection::new(
        "redis://:hunter2@127.0.0.1:1",
        RedisOptions {
            op_timeout: Duration::from_millis(200),
            ..RedisOptions::default()
        },
    )
    .unwrap();
    let c = RedisCache::new("down", conn.clone());
    let t0 = Instant::now();
    let e = c.get("k").await.expect_err("no Redis");
    assert!(t0.elapsed() < Duration::from_millis(600));
    assert!(!e.detail.contains("hunter2"), "no password in errors");
    assert!(
        c.set("k", "v".into(), Duration::from_secs(1))
            .await
            .is_err()
    );
    assert!(
        !format!("{conn:?}").contains("hunter2"),
        "no password in Debug"
    );
}
