//! The two-tenant cache isolation scenario, shared by the memory run
//! (`gateway-facade/tests/e2e/e2e_cache.rs`) and the Redis run (`adapter-redis/tests/cache_e2e.rs`),
//! which include this file with `#[path]` so both backends face the same assertions.

use polygateway::{CacheNamespace, ChatOptions, GatewayClient};
use upstream_sim::SimHandle;

/// Two tenants sending the identical request through `GatewayClient`s on one shared backend:
/// `per_scope(ns)` builds a client whose default namespace is `ns`; `shared` is a client with
/// the scope's default namespace. Returns nothing; asserts isolation and same-tenant hits.
/// The simulator answers the n-th upstream request with `answer-n`.
pub async fn two_tenants_isolated(
    per_scope: &dyn Fn(&str) -> GatewayClient,
    shared: &GatewayClient,
    sim: &SimHandle,
) {
    let ns_a = CacheNamespace::compose("tenant-a", 1, "chat");
    let ns_b = CacheNamespace::compose("tenant-b", 1, "chat");
    // Per-scope namespaces (PGW_CACHE_NAMESPACE / builder `cache_namespace`).
    let a = per_scope(&ns_a);
    let b = per_scope(&ns_b);
    let a1 = a
        .chat("same question", ChatOptions::new().tenant_id("a"))
        .await
        .unwrap();
    assert!(!a1.cache_hit);
    assert_eq!(a1.content, "answer-1");
    let b1 = b
        .chat("same question", ChatOptions::new().tenant_id("b"))
        .await
        .unwrap();
    assert!(!b1.cache_hit, "tenant b never reads tenant a's entry");
    assert_eq!(b1.content, "answer-2");
    let a2 = a
        .chat("same question", ChatOptions::new().tenant_id("a"))
        .await
        .unwrap();
    assert!(a2.cache_hit, "same tenant hits");
    assert_eq!(a2.content, "answer-1");
    let b2 = b
        .chat("same question", ChatOptions::new().tenant_id("b"))
        .await
        .unwrap();
    assert!(b2.cache_hit);
    assert_eq!(b2.content, "answer-2");
    // Another client of tenant a (another process) shares a's entries.
    let a_again = per_scope(&ns_a);
    let a3 = a_again
        .chat("same question", ChatOptions::new())
        .await
        .unwrap();
    assert!(a3.cache_hit);
    assert_eq!(a3.content, "answer-1");
    assert_eq!(sim.request_count(), 2);

    // Per-call namespaces on one client override its default; the tenant id alone never
    // isolates (it is not in the key).
    let call = |ns: &str, tenant: &str| {
        ChatOptions::new()
            .cache_namespace(ns.to_owned())
            .tenant_id(tenant.to_owned())
    };
    let c_a = shared
        .chat("same question", call(&ns_a, "a"))
        .await
        .unwrap();
    assert!(
        c_a.cache_hit,
        "the per-call namespace of tenant a reads a's entry"
    );
    assert_eq!(c_a.content, "answer-1");
    let c_b = shared
        .chat("same question", call(&ns_b, "b"))
        .await
        .unwrap();
    assert_eq!(c_b.content, "answer-2", "and tenant b's reads b's");
    let ns_c = CacheNamespace::compose("tenant-c", 1, "chat");
    let c_c = shared
        .chat("same question", call(&ns_c, "a"))
        .await
        .unwrap();
    assert!(
        !c_c.cache_hit,
        "tenant c's namespace is empty, whatever the tenant id"
    );
    assert_eq!(c_c.content, "answer-3");
    assert_eq!(sim.request_count(), 3);
    // The epoch bump starts tenant a on an empty key space.
    let bumped = CacheNamespace::compose("tenant-a", 2, "chat");
    let a_v2 = shared
        .chat("same question", call(&bumped, "a"))
        .await
        .unwrap();
    assert!(!a_v2.cache_hit);
    assert_eq!(a_v2.content, "answer-4");

    // Salt: same namespace, another salt → a fresh key space; the same salt hits.
    let salted = |salt: &str| call(&ns_a, "a").cache_salt(salt.to_owned());
    let s1 = shared.chat("same question", salted("s1")).await.unwrap();
    assert!(!s1.cache_hit, "a salt never reads unsalted entries");
    assert_eq!(s1.content, "answer-5");
    let s2 = shared.chat("same question", salted("s2")).await.unwrap();
    assert!(!s2.cache_hit, "another salt never reads s1's entries");
    assert_eq!(s2.content, "answer-6");
    let s1_again = shared.chat("same question", salted("s1")).await.unwrap();
    assert!(s1_again.cache_hit);
    assert_eq!(s1_again.content, "answer-5");
    assert_eq!(sim.request_count(), 6);
    for c in [a, b, a_again] {
        c.close().await;
    }
}
