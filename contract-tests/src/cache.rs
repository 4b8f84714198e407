//! Response cache contract rows CT-CACHE-01..07, generic over a
//! [`CacheBackend`] and its [`TimeControl`]. None sleeps.
//!
//! Running the suite against a backend:
//!
//! ```text
//! contract_tests::cache_contract!(my_crate::RedisCacheBackend::new().await);
//! ```
//!
//! A Redis backend implements [`CacheBackend::cache`] with a fresh key prefix per call (the
//! suite's keys are then isolated), [`CacheBackend::unavailable_cache`] with a client pointed at
//! a closed port, [`CacheBackend::bounded_cache`] as `None` (Redis bounds by `maxmemory`, not
//! entry count) and its `TimeControl` as whatever makes a `PX` TTL elapse without sleeping in
//! the test body (e.g. `PEXPIRE` of the suite's keys by the elapsed amount).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gateway_core::cache::{CacheNamespace, KeyParts};
use gateway_ports::{ChatRequest, ResponseCache};
use serde_json::json;

use crate::TimeControl;

/// A response-cache backend under test.
#[async_trait]
pub trait CacheBackend: Send + Sync + 'static {
    /// A fresh cache, isolated from every other cache this backend built (own key space).
    async fn cache(&self) -> Arc<dyn ResponseCache>;
    /// A cache whose backend is unavailable: every operation must be `Err`.
    async fn unavailable_cache(&self) -> Arc<dyn ResponseCache>;
    /// A cache bounded to `max_entries` values, or `None` when the backend is
    /// not bounded by entry count.
    async fn bounded_cache(&self, max_entries: usize) -> Option<Arc<dyn ResponseCache>>;
    /// The time the caches' TTLs run on.
    fn time(&self) -> &dyn TimeControl;
}

fn k(name: &str) -> String {
    format!("pgw:cache:v1:ct-{name}")
}

// covers: C-60
/// CT-CACHE-01: `set` then `get` within the TTL returns the identical string (any bytes JSON
/// can carry, including non-ASCII and control escapes); an unknown key is `None`.
pub async fn ct_cache_01_set_get_identical<B: CacheBackend>(b: &B) {
    let c = b.cache().await;
    let value = "{\"content\":\"héllo \\n \\u0000 🦀\",\"n\":1}".to_owned();
    c.set(&k("a"), value.clone(), Duration::from_secs(60))
        .await
        .expect("set");
    assert_eq!(c.get(&k("a")).await.expect("get"), Some(value));
    assert_eq!(c.get(&k("missing")).await.expect("get"), None);
}

/// CT-CACHE-02: after the TTL has elapsed `get` returns `None`; just before, the value.
pub async fn ct_cache_02_ttl_elapses<B: CacheBackend>(b: &B) {
    let c = b.cache().await;
    c.set(&k("t"), "v".to_owned(), Duration::from_secs(10))
        .await
        .expect("set");
    b.time().advance(Duration::from_millis(9_000)).await;
    assert_eq!(c.get(&k("t")).await.expect("get").as_deref(), Some("v"));
    b.time().advance(Duration::from_millis(1_001)).await;
    assert_eq!(c.get(&k("t")).await.expect("get"), None, "expired");
}

/// CT-CACHE-03: keys built for two namespaces (two tenants) on one shared backend never
/// read each other's value.
pub async fn ct_cache_03_namespaces_never_alias<B: CacheBackend>(b: &B) {
    let c = b.cache().await;
    let request = ChatRequest::new(vec![
        json!({"role": "user", "content": "same"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    ]);
    let ns_a = CacheNamespace::compose("tenant-a", 1, "chat");
    let ns_b = CacheNamespace::compose("tenant-b", 1, "chat");
    let key_a = KeyParts::of_request(&request, "fp", &ns_a, None, None).key();
    let key_b = KeyParts::of_request(&request, "fp", &ns_b, None, None).key();
    assert_ne!(key_a, key_b);
    c.set(&key_a, "for a".to_owned(), Duration::from_secs(60))
        .await
        .expect("set");
    assert_eq!(c.get(&key_b).await.expect("get"), None);
    c.set(&key_b, "for b".to_owned(), Duration::from_secs(60))
        .await
        .expect("set");
    assert_eq!(c.get(&key_a).await.expect("get").as_deref(), Some("for a"));
    assert_eq!(c.get(&key_b).await.expect("get").as_deref(), Some("for b"));
}

/// CT-CACHE-04: `set` on an existing key replaces the value and the TTL (a shorter TTL
/// shortens, a longer one extends).
pub async fn ct_cache_04_set_replaces_value_and_ttl<B: CacheBackend>(b: &B) {
    let c = b.cache().await;
    c.set(&k("r"), "old".to_owned(), Duration::from_secs(10))
        .await
        .expect("set");
    c.set(&k("r"), "new".to_owned(), Duration::from_secs(100))
        .await
        .expect("set");
    b.time().advance(Duration::from_secs(50)).await;
    assert_eq!(
        c.get(&k("r")).await.expect("get").as_deref(),
        Some("new"),
        "value replaced, TTL extended"
    );
    c.set(&k("r"), "short".to_owned(), Duration::from_secs(5))
        .await
        .expect("set");
    b.time().advance(Duration::from_secs(6)).await;
    assert_eq!(c.get(&k("r")).await.expect("get"), None, "TTL shortened");
}

/// CT-CACHE-05: an unavailable backend answers `Err(CacheError)` — never a panic, never a
/// value — and its error text carries no secret-looking URL.
pub async fn ct_cache_05_unavailable_errs<B: CacheBackend>(b: &B) {
    let c = b.unavailable_cache().await;
    let set = c
        .set(&k("u"), "v".to_owned(), Duration::from_secs(60))
        .await;
    assert!(set.is_err(), "set must fail");
    let get = c.get(&k("u")).await;
    match get {
        Err(e) => assert!(!e.detail.contains("@"), "no credentials in {:?}", e.detail),
        Ok(v) => panic!("get on an unavailable backend returned {v:?}"),
    }
}

// covers: C-61
/// CT-CACHE-06: bounded by entry count, evicting the least recently used first (`get` is a
/// use). Skipped for backends without an entry bound (their `bounded_cache` is `None`).
pub async fn ct_cache_06_bounded_lru<B: CacheBackend>(b: &B) {
    let Some(c) = b.bounded_cache(3).await else {
        return;
    };
    let ttl = Duration::from_secs(60);
    for name in ["1", "2", "3"] {
        c.set(&k(name), name.to_owned(), ttl).await.expect("set");
    }
    assert!(c.get(&k("1")).await.expect("get").is_some()); // 1 is now most recent
    c.set(&k("4"), "4".to_owned(), ttl).await.expect("set");
    assert_eq!(
        c.get(&k("2")).await.expect("get"),
        None,
        "2 was least recent"
    );
    for name in ["1", "3", "4"] {
        assert_eq!(
            c.get(&k(name)).await.expect("get").as_deref(),
            Some(name),
            "{name} kept"
        );
    }
    for i in 0..100 {
        c.set(&k(&format!("x{i}")), "x".to_owned(), ttl)
            .await
            .expect("set");
    }
    let live = futures_count(&*c, 100).await;
    assert_eq!(live, 3, "never more than the bound");
}

async fn futures_count(c: &dyn ResponseCache, n: usize) -> usize {
    let mut live = 0;
    for i in 0..n {
        if c.get(&k(&format!("x{i}"))).await.expect("get").is_some() {
            live += 1;
        }
    }
    live
}

/// CT-CACHE-07: a `set` dropped before completion leaves the old or the new value, never a
/// partial one; concurrent writers leave exactly one of the written values.
pub async fn ct_cache_07_dropped_set_old_or_new<B: CacheBackend>(b: &B) {
    let c = b.cache().await;
    let old = "old-".repeat(1000);
    let new = "new-".repeat(1000);
    c.set(&k("d"), old.clone(), Duration::from_secs(60))
        .await
        .expect("set");
    let key = k("d");
    {
        let pending = c.set(&key, new.clone(), Duration::from_secs(60));
        // Poll once, then drop.
        let _ = tokio::time::timeout(Duration::from_nanos(1), pending).await;
    }
    let got = c.get(&k("d")).await.expect("get");
    assert!(
        got.as_deref() == Some(old.as_str()) || got.as_deref() == Some(new.as_str()),
        "partial value after a dropped set"
    );
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = Arc::clone(&c);
        tasks.push(tokio::spawn(async move {
            c.set(&k("w"), format!("writer-{i}"), Duration::from_secs(60))
                .await
                .expect("set");
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let got = c.get(&k("w")).await.expect("get").expect("a value");
    assert!(got.starts_with("writer-"), "{got}");
}

/// Generates one `#[tokio::test]` per response-cache contract row for the backend built by
/// `$make` (an expression, may use `.await`).
#[macro_export]
macro_rules! cache_contract {
    ($make:expr) => {
        $crate::cache_contract!(@rows $make;
            ct_cache_01_set_get_identical,
            ct_cache_02_ttl_elapses,
            ct_cache_03_namespaces_never_alias,
            ct_cache_04_set_replaces_value_and_ttl,
            ct_cache_05_unavailable_errs,
            ct_cache_06_bounded_lru,
            ct_cache_07_dropped_set_old_or_new,
        );
    };
    (@rows $make:expr; $($row:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $row() {
                let backend = $make;
                $crate::cache::$row(&backend).await;
            }
        )+
    };
}
