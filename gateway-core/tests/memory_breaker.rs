//! memory_breaker tests
