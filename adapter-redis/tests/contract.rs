//! The unchanged contract suites against Redis (05 R-31; 10 §8.4, §8.5; CF-429 Redis half:
//! the limiter suite is the same code as the memory run in contract-tests/tests/memory.rs).

mod common;

use common::RedisBackend;

contract_tests::limiter_contract!(RedisBackend::new().await);
contract_tests::breaker_contract!(RedisBackend::new().await);
