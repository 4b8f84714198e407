//! The unchanged contract suites against Redis (05 R-31; 10 §8.4, §8.5, §8.6; CF-429 Redis
//! half: the limiter suite is the same code as the memory run in
//! contract-tests/tests/memory.rs; the response-cache suite CT-CACHE-01..07 likewise, its TTLs
//! moved by `RedisCacheTime`, never by sleeping).

mod common;

use common::RedisBackend;
use common::cache::RedisCacheBackend;

// Default options: breaker mirror (250 ms) and write-behind (100 ms) on. Every row passes
// unchanged: each row drives one connection, whose scripts carry the buffered writes, and the
// test clock flushes them before it moves.
contract_tests::limiter_contract!(RedisBackend::new().await);
contract_tests::breaker_contract!(RedisBackend::new().await);
contract_tests::cache_contract!(RedisCacheBackend::new().await);

/// The same rows with every operation its own round trip (mirror and write-behind off).
mod immediate {
    use super::RedisBackend;

    contract_tests::limiter_contract!(RedisBackend::immediate().await);
    contract_tests::breaker_contract!(RedisBackend::immediate().await);
}
