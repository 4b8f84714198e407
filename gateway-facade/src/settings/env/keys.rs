//! The tables of known environment keys: reserved source segments, the source fields, the
//! scope keys, the embedding-only keys and the process-wide keys.
//!
//! Separate so a new key is added to one table in one place.

/// Reserved second segments.
pub(super) const RESERVED: [&str; 6] = [
    "GLOBAL",
    "RETRY",
    "BREAKER",
    "BACKPRESSURE",
    "HEDGE",
    "STREAM",
];

/// Per-source FIELD segments of `{SCOPE}__{PROVIDER}__{N}__{FIELD}` in documented order
/// (request-shaping keys included). Public so tools and tests enumerate the same list.
pub const SOURCE_FIELDS: [&str; 23] = [
    "BASE_URL",
    "API_KEY",
    "MODEL",
    "TIMEOUT_S",
    "TTFT_TIMEOUT_S",
    "INTER_TOKEN_TIMEOUT_S",
    "MAX_CONCURRENCY",
    "RPM",
    "TPM",
    "EST_TOKENS",
    "REASONING_EFFORT",
    "ENABLE_THINKING",
    "EFFORT_FALLBACK",
    "MISSING_DONE",
    "TRUST_ENV",
    "EXTRA_BODY",
    "HEADERS",
    "QUERY",
    "AUTH_STYLE",
    "CA_FILE",
    "API_KEY_FILE",
    "MAX_RESPONSE_BYTES",
    "POOL_IDLE_TIMEOUT_S",
];

/// Settings field path → key suffix after `{SCOPE}__` (scope and group keys).
pub(super) const SCOPE_KEYS: [(&str, &str); 29] = [
    ("retry.max_attempts", "RETRY__MAX_ATTEMPTS"),
    ("retry.backoff_base_s", "RETRY__BACKOFF_BASE_S"),
    ("retry.backoff_max_s", "RETRY__BACKOFF_MAX_S"),
    ("retry.max_hint_s", "RETRY__MAX_HINT_S"),
    ("retry.budget_ratio", "RETRY__BUDGET_RATIO"),
    ("breaker.fail_threshold", "BREAKER__FAIL_THRESHOLD"),
    ("breaker.cooldown_s", "BREAKER__COOLDOWN_S"),
    ("breaker.cooldown_max_s", "BREAKER__COOLDOWN_MAX_S"),
    ("breaker.fail_rate", "BREAKER__FAIL_RATE"),
    ("breaker.min_calls", "BREAKER__MIN_CALLS"),
    ("breaker.window_s", "BREAKER__WINDOW_S"),
    ("breaker.probe_ttl_s", "BREAKER__PROBE_TTL_S"),
    (
        "backpressure.stall_window_s",
        "BACKPRESSURE__STALL_WINDOW_S",
    ),
    (
        "backpressure.poll_interval_s",
        "BACKPRESSURE__POLL_INTERVAL_S",
    ),
    ("global_limits.max_concurrency", "GLOBAL__MAX_CONCURRENCY"),
    ("global_limits.rpm", "GLOBAL__RPM"),
    ("global_limits.tpm", "GLOBAL__TPM"),
    ("batch_size", "BATCH_SIZE"),
    ("normalize", "NORMALIZE"),
    ("expected_dim", "EXPECTED_DIM"),
    ("selector", "SELECTOR"),
    ("quota_full", "QUOTA_FULL"),
    ("circuit_open", "CIRCUIT_OPEN"),
    ("max_waiters", "MAX_WAITERS"),
    ("call_deadline_s", "CALL_DEADLINE_S"),
    ("hedge_after_s", "HEDGE__AFTER_S"),
    ("hedge_max_extra", "HEDGE__MAX_EXTRA"),
    ("hedge_stall_after_s", "HEDGE__STALL_AFTER_S"),
    ("stall_threshold_ms", "STREAM__STALL_THRESHOLD_MS"),
];

/// The three keys only an embedding scope recognizes.
pub(super) const EMBEDDING_ONLY: [&str; 3] = ["BATCH_SIZE", "NORMALIZE", "EXPECTED_DIM"];

/// Settings field → process-wide key, in table order.
pub(super) const PROCESS_KEYS: [(&str, &str); 21] = [
    ("limiter_backend", "PGW_LIMITER_BACKEND"),
    ("breaker_backend", "PGW_BREAKER_BACKEND"),
    ("cache_backend", "PGW_CACHE_BACKEND"),
    ("redis_url", "REDIS_URL"),
    ("redis_breaker_mirror_ms", "PGW_REDIS_BREAKER_MIRROR_MS"),
    ("redis_write_behind_ms", "PGW_REDIS_WRITE_BEHIND_MS"),
    ("cache_namespace", "PGW_CACHE_NAMESPACE"),
    ("cache_salt", "PGW_CACHE_SALT"),
    ("cache_ttl_s", "PGW_CACHE_TTL_S"),
    ("cache_memory_max_entries", "PGW_CACHE_MEMORY_MAX_ENTRIES"),
    ("telemetry_backend", "PGW_TELEMETRY_BACKEND"),
    ("telemetry_sqlite_path", "PGW_TELEMETRY_SQLITE_PATH"),
    ("telemetry_pg_dsn", "PGW_TELEMETRY_PG_DSN"),
    ("telemetry_pg_pool_max", "PGW_TELEMETRY_PG_POOL_MAX"),
    (
        "telemetry_pg_write_timeout_s",
        "PGW_TELEMETRY_PG_WRITE_TIMEOUT_S",
    ),
    ("telemetry_schema_mode", "PGW_TELEMETRY_SCHEMA_MODE"),
    ("telemetry_text_cap", "PGW_TELEMETRY_TEXT_CAP"),
    ("pricing_path", "PGW_PRICING_PATH"),
    ("structured_max_retries", "PGW_STRUCTURED_MAX_RETRIES"),
    ("lease_ttl_s", "PGW_LEASE_TTL_S"),
    ("redact_ips", "PGW_REDACT_IPS"),
];
