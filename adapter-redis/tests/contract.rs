//! The unchanged contract suites against Redis (05 R-31; 10 §8.4, §8.5, §8.6; CF-429 Redis
//! half: the limiter suite is the same code as the memory run in
//! contract-tests/tests/memory.rs; the response-cache suite CT-CACHE-01..07 likewise, its TTLs
//! moved by `RedisCacheTime`, never by sleeping).

mod common;

use common::RedisBackend;
use common::cache::RedisCacheBackend;

contract_tests::limiter_contract!(RedisBackend::new().await);
contract_tests::breaker_contract!(RedisBackend::new().await);
contract_tests::cache_contract!(RedisCacheBackend::new().await);
