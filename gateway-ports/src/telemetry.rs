//! Telemetry value types: the 39-column `TelemetryRow`, its one exhaustive binding site
//! `TelemetryRow::columns()`, and the recorder health snapshot `TelemetryStatus`.
//!
//! Owns the row shape and the INSERT order. The row is
//! deliberately not `#[non_exhaustive]` and has no `Default`: adding a column breaks every emit
//! site and `columns()` at compile time. Recorders bind by column name from `columns()`, never by
//! destructuring the row themselves.

use std::time::SystemTime;

use serde::Serialize;

use crate::vocab::{
    CallOperation, CauseKind, Effort, EventKind, StreamEnd, ThinkingObservation, UsageSource,
};

/// One bindable SQL value borrowed from a row. `None` fields become `Null`; enum
/// columns become their wire strings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlValue<'a> {
    /// SQL NULL.
    Null,
    /// TEXT.
    Text(&'a str),
    /// INTEGER.
    Int(i64),
    /// REAL / DOUBLE PRECISION.
    Real(f64),
    /// BOOLEAN (SQLite: 0/1).
    Bool(bool),
}

impl<'a> SqlValue<'a> {
    fn opt_text(value: Option<&'a str>) -> Self {
        value.map_or(Self::Null, Self::Text)
    }

    fn opt_int(value: Option<i64>) -> Self {
        value.map_or(Self::Null, Self::Int)
    }

    fn opt_real(value: Option<f64>) -> Self {
        value.map_or(Self::Null, Self::Real)
    }

    /// `true` for `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }
}

/// One telemetry row: exactly the 39 fields, in INSERT order. Storage-ready values
/// shaped by the core's emitter; recorders only persist. `Serialize` only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TelemetryRow {
    /// 1. Row id (UUIDv4).
    pub call_id: String,
    /// 2. Caller's business correlation id.
    pub parent_call_id: Option<String>,
    /// 3. Caller's session.
    pub session_id: Option<String>,
    /// 4. Configured model (terminal rows: empty placeholder).
    pub model: String,
    /// 5. Provider.
    pub provider: String,
    /// 6. Source name.
    pub source_name: String,
    /// 7. JSON of the capped, digested messages.
    pub messages: String,
    /// 8. Response text, capped; `""` on failure rows.
    pub response: String,
    /// 9. Reasoning text, capped.
    pub thinking: String,
    /// 10. Prompt tokens.
    pub prompt_tokens: i64,
    /// 11. Completion tokens.
    pub completion_tokens: i64,
    /// 12. Usage trust level.
    pub usage_source: UsageSource,
    /// 13. Latency in ms per row kind.
    pub latency_ms: i64,
    /// 14. Time to first token in ms.
    pub ttft_ms: Option<f64>,
    /// 15. Largest inter-token gap in ms.
    pub max_inter_token_ms: Option<f64>,
    /// 16. Served from the cache.
    pub cache_hit: bool,
    /// 17. Error message or the labels `cancelled` / `hedge_cancelled`.
    pub error: Option<String>,
    /// 18. Cost.
    pub cost: Option<f64>,
    /// 19. Vendor prompt-cache hits.
    pub cached_prompt_tokens: Option<i64>,
    /// 20. Model name the upstream reported.
    pub model_reported: Option<String>,
    /// 21. Canonical JSON of the sampling intent.
    pub sampling: Option<String>,
    /// 22. Reasoning tokens.
    pub reasoning_tokens: Option<i64>,
    /// 23. Tenant; `''` when absent.
    pub tenant_id: String,
    /// 24. Canonical JSON object; `'{}'` when empty.
    pub meta: String,
    /// 25. Thinking observation.
    pub thinking_observation: Option<ThinkingObservation>,
    /// 26. Effort level (applied on attempt rows, requested on cache-hit and terminal rows).
    pub reasoning_effort: Option<Effort>,
    /// 27. Scope label.
    pub scope: String,
    /// 28. Public method.
    pub operation: CallOperation,
    /// 29. Logical call id (always written).
    pub logical_call_id: Option<String>,
    /// 30. Row kind.
    pub event_kind: EventKind,
    /// 31. HTTP status on failed attempt rows (may be 200 for MonkeyOCR).
    pub http_status_code: Option<i32>,
    /// 32. `GatewayError::type_name()`.
    pub error_type: Option<&'static str>,
    /// 33. Underlying fault kind.
    pub cause_type: Option<CauseKind>,
    /// 34. Summarised upstream error body.
    pub error_body: Option<String>,
    /// 35. Attempts (terminal rows only).
    pub attempts: Option<i64>,
    /// 36. Total latency in ms (terminal rows only).
    pub total_latency_ms: Option<i64>,
    /// 37. Stall ms (successful streaming chat attempt rows only).
    pub stall_ms: Option<i64>,
    /// 38. Stall count (same rows).
    pub stall_count: Option<i64>,
    /// 39. Stream end (successful streaming attempt rows only).
    pub stream_end: Option<StreamEnd>,
}

impl TelemetryRow {
    /// Number of INSERT columns (the physical table has a 40th, `created_at`).
    pub const COLUMN_COUNT: usize = 39;

    /// Column names in INSERT order.
    pub const COLUMNS: [&'static str; 39] = [
        "call_id",
        "parent_call_id",
        "session_id",
        "model",
        "provider",
        "source_name",
        "messages",
        "response",
        "thinking",
        "prompt_tokens",
        "completion_tokens",
        "usage_source",
        "latency_ms",
        "ttft_ms",
        "max_inter_token_ms",
        "cache_hit",
        "error",
        "cost",
        "cached_prompt_tokens",
        "model_reported",
        "sampling",
        "reasoning_tokens",
        "tenant_id",
        "meta",
        "thinking_observation",
        "reasoning_effort",
        "scope",
        "operation",
        "logical_call_id",
        "event_kind",
        "http_status_code",
        "error_type",
        "cause_type",
        "error_body",
        "attempts",
        "total_latency_ms",
        "stall_ms",
        "stall_count",
        "stream_end",
    ];

    /// Every column as `(name, value)` in INSERT order: the one exhaustive
    /// destructuring of the row. `None` → `SqlValue::Null`; enums → their wire strings;
    /// `cache_hit` → `Bool`.
    pub fn columns(&self) -> [(&'static str, SqlValue<'_>); 39] {
        use SqlValue as V;
        let Self {
            call_id,
            parent_call_id,
            session_id,
            model,
            provider,
            source_name,
            messages,
            response,
            thinking,
            prompt_tokens,
            completion_tokens,
            usage_source,
            latency_ms,
            ttft_ms,
            max_inter_token_ms,
            cache_hit,
            error,
            cost,
            cached_prompt_tokens,
            model_reported,
            sampling,
            reasoning_tokens,
            tenant_id,
            meta,
            thinking_observation,
            reasoning_effort,
            scope,
            operation,
            logical_call_id,
            event_kind,
            http_status_code,
            error_type,
            cause_type,
            error_body,
            attempts,
            total_latency_ms,
            stall_ms,
            stall_count,
            stream_end,
        } = self;
        [
            ("call_id", V::Text(call_id)),
            ("parent_call_id", V::opt_text(parent_call_id.as_deref())),
            ("session_id", V::opt_text(session_id.as_deref())),
            ("model", V::Text(model)),
            ("provider", V::Text(provider)),
            ("source_name", V::Text(source_name)),
            ("messages", V::Text(messages)),
            ("response", V::Text(response)),
            ("thinking", V::Text(thinking)),
            ("prompt_tokens", V::Int(*prompt_tokens)),
            ("completion_tokens", V::Int(*completion_tokens)),
            ("usage_source", V::Text(usage_source.as_str())),
            ("latency_ms", V::Int(*latency_ms)),
            ("ttft_ms", V::opt_real(*ttft_ms)),
            ("max_inter_token_ms", V::opt_real(*max_inter_token_ms)),
            ("cache_hit", V::Bool(*cache_hit)),
            ("error", V::opt_text(error.as_deref())),
            ("cost", V::opt_real(*cost)),
            ("cached_prompt_tokens", V::opt_int(*cached_prompt_tokens)),
            ("model_reported", V::opt_text(model_reported.as_deref())),
            ("sampling", V::opt_text(sampling.as_deref())),
            ("reasoning_tokens", V::opt_int(*reasoning_tokens)),
            ("tenant_id", V::Text(tenant_id)),
            ("meta", V::Text(meta)),
            (
                "thinking_observation",
                V::opt_text(thinking_observation.map(ThinkingObservation::as_str)),
            ),
            (
                "reasoning_effort",
                V::opt_text(reasoning_effort.map(Effort::as_str)),
            ),
            ("scope", V::Text(scope)),
            ("operation", V::Text(operation.as_str())),
            ("logical_call_id", V::opt_text(logical_call_id.as_deref())),
            ("event_kind", V::Text(event_kind.as_str())),
            (
                "http_status_code",
                V::opt_int(http_status_code.map(i64::from)),
            ),
            ("error_type", V::opt_text(*error_type)),
            ("cause_type", V::opt_text(cause_type.map(CauseKind::as_str))),
            ("error_body", V::opt_text(error_body.as_deref())),
            ("attempts", V::opt_int(*attempts)),
            ("total_latency_ms", V::opt_int(*total_latency_ms)),
            ("stall_ms", V::opt_int(*stall_ms)),
            ("stall_count", V::opt_int(*stall_count)),
            ("stream_end", V::opt_text(stream_end.map(StreamEnd::as_str))),
        ]
    }
}

/// Read-only recorder health snapshot. Cheap, synchronous, never fails.
/// `Default` is the `none` backend, healthy, with zero counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TelemetryStatus {
    /// `"sqlite"`, `"postgres"` or `"none"`.
    pub backend: &'static str,
    /// Currently unavailable (recoverable; retried after a cooldown).
    pub degraded: bool,
    /// Permanently disabled (only a malformed DSN).
    pub fatal: bool,
    /// Last degradation reason, secret-free.
    pub reason: Option<String>,
    /// Rows accepted but not written, whatever the cause.
    pub dropped_rows: u64,
    /// Rows written (chosen).
    pub written_rows: u64,
    /// Wall time the recorder entered `degraded` (chosen).
    pub degraded_since: Option<SystemTime>,
    /// Wall time of the next preparation attempt while degraded (chosen).
    pub retry_at: Option<SystemTime>,
    /// Columns missing in manual schema mode, in COLUMNS order (chosen).
    pub missing_columns: Vec<String>,
}

impl Default for TelemetryStatus {
    fn default() -> Self {
        Self::for_backend("none")
    }
}

impl TelemetryStatus {
    /// A healthy status for this backend name with zero counters.
    pub fn for_backend(backend: &'static str) -> Self {
        Self {
            backend,
            degraded: false,
            fatal: false,
            reason: None,
            dropped_rows: 0,
            written_rows: 0,
            degraded_since: None,
            retry_at: None,
            missing_columns: Vec::new(),
        }
    }
}
