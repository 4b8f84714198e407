//! Vocabularies: every fieldless enum whose values cross a boundary as a stable wire string
//! (serde, telemetry columns, configuration values, reason codes).
//!
//! Owns the exact spelling of each token in one place: every enum here
//! offers `as_str()` (the wire string), `Display` (the same string), `from_wire()` (the inverse,
//! exact and case-sensitive) and serde with the same strings, so telemetry, the cache, the CLI's
//! JSON and the configuration parser can never disagree about a token.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Defines a fieldless enum with a fixed wire string per variant.
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, ::serde::Serialize, ::serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The exact wire string of this value.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }

            /// Parses the exact wire string (case-sensitive); `None` for anything else.
            pub fn from_wire(s: &str) -> Option<Self> {
                match s {
                    $($wire => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use wire_enum;

wire_enum! {
    /// Response projection mode of a chat call: `Text` is the legacy text projection,
    /// `OpenAi` the fidelity mode that adds the single-choice `completion` snapshot.
    #[derive(Default)]
    pub enum ResponseMode {
        /// `"text"` (default).
        #[default]
        Text => "text",
        /// `"openai"`: fidelity mode.
        OpenAi => "openai",
    }
}

wire_enum! {
    /// How a *streamed* attempt ended. `Option<StreamEnd>::None` means
    /// non-stream, cache hit or failed row.
    pub enum StreamEnd {
        /// `"done"`: `[DONE]` received.
        Done => "done",
        /// `"eof_after_finish"`: no `[DONE]`, but a finish_reason and a measured usage arrived and
        /// the connection closed cleanly.
        EofAfterFinish => "eof_after_finish",
        /// `"salvaged"`: text-mode truncation delivered under `MISSING_DONE=salvage`.
        Salvaged => "salvaged",
    }
}

wire_enum! {
    /// Can the token numbers be billed? (50). Ordered weakest first:
    /// `Unavailable < Estimated < Measured` (an embedding call takes the weakest over its batches).
    #[derive(Default)]
    pub enum UsageSource {
        /// `"unavailable"`: no usage (missing frame, failed attempt, terminal row). Default.
        #[default]
        Unavailable => "unavailable",
        /// `"estimated"`: numbers present but downgraded (only the salvage path).
        Estimated => "estimated",
        /// `"measured"`: usage frame fully trusted (OCR success rows too: 0 tokens is a fact).
        Measured => "measured",
    }
}

wire_enum! {
    /// Whether the model reasoned this time. `Unknown` = cannot tell, never
    /// "did not reason".
    #[derive(Default)]
    pub enum ThinkingObservation {
        /// `"observed"`.
        Observed => "observed",
        /// `"absent"`.
        Absent => "absent",
        /// `"unknown"` (default).
        #[default]
        Unknown => "unknown",
    }
}

wire_enum! {
    /// Reasoning effort level, eight levels weakest first (`Off` is
    /// spelt `"none"` on the wire). `Some(Effort::Off)` = explicitly no reasoning, distinct from
    /// `None` = no preference stated.
    pub enum Effort {
        /// `"none"`: explicitly no reasoning.
        Off => "none",
        /// `"auto"`.
        Auto => "auto",
        /// `"minimal"`.
        Minimal => "minimal",
        /// `"low"`.
        Low => "low",
        /// `"medium"`.
        Medium => "medium",
        /// `"high"`.
        High => "high",
        /// `"xhigh"`.
        Xhigh => "xhigh",
        /// `"max"`.
        Max => "max",
    }
}

/// The eight effort levels in order, weakest first.
pub const EFFORT_ORDER: [Effort; 8] = [
    Effort::Off,
    Effort::Auto,
    Effort::Minimal,
    Effort::Low,
    Effort::Medium,
    Effort::High,
    Effort::Xhigh,
    Effort::Max,
];

wire_enum! {
    /// What to do when the model cannot hit the requested effort level (70).
    #[derive(Default)]
    pub enum EffortFallback {
        /// `"error"` (default): refuse.
        #[default]
        Error => "error",
        /// `"nearest"`: use the nearest supported level.
        Nearest => "nearest",
    }
}

wire_enum! {
    /// Text-mode handling of a truly truncated stream (50).
    #[derive(Default)]
    pub enum MissingDone {
        /// `"retry"` (default).
        #[default]
        Retry => "retry",
        /// `"salvage"`: deliver the truncated text with `StreamEnd::Salvaged`.
        Salvage => "salvage",
    }
}

wire_enum! {
    /// The public method a telemetry row belongs to; given by the call site,
    /// never derived from an error.
    pub enum CallOperation {
        /// `"chat"`.
        Chat => "chat",
        /// `"embed"`.
        Embed => "embed",
        /// `"recognize_text"`.
        RecognizeText => "recognize_text",
        /// `"parse_layout"`.
        ParseLayout => "parse_layout",
    }
}

wire_enum! {
    /// The kind of a telemetry row.
    pub enum EventKind {
        /// `"attempt"`: one transport call actually started.
        Attempt => "attempt",
        /// `"cache_hit"`: one response served from the cache.
        CacheHit => "cache_hit",
        /// `"terminal_failure"`: one logical call that ended in an error or a cancellation.
        TerminalFailure => "terminal_failure",
    }
}

wire_enum! {
    /// Source ordering strategy.
    #[derive(Default)]
    pub enum SelectorKind {
        /// `"round_robin"`.
        RoundRobin => "round_robin",
        /// `"least_inflight"`.
        LeastInflight => "least_inflight",
        /// `"health_aware"` (default).
        #[default]
        HealthAware => "health_aware",
    }
}

wire_enum! {
    /// Wait or fail fast when nothing is runnable. Used by `quota_full`
    /// (default `Wait`) and `circuit_open` (default `FailFast`), so it has no `Default`.
    pub enum WaitPolicy {
        /// `"wait"`.
        Wait => "wait",
        /// `"fail_fast"`.
        FailFast => "fail_fast",
    }
}

wire_enum! {
    /// Per-call response-cache control.
    #[derive(Default)]
    pub enum CachePolicy {
        /// `"use"` (default): read, then write.
        #[default]
        Use => "use",
        /// `"refresh"`: skip the read, write the fresh deliverable result.
        Refresh => "refresh",
        /// `"bypass"`: neither read nor write.
        Bypass => "bypass",
    }
}

wire_enum! {
    /// The breaker/health reason vocabulary and the value type of `per_source_reasons`.
    /// The breaker port only ever receives the five attempt-failure reasons
    /// (`RateLimited`, `Timeout`, `NetworkError`, `SourceDead`, and
    /// `BadResponse`).
    pub enum FailureReason {
        /// `"rate_limited"` (attempt failure).
        RateLimited => "rate_limited",
        /// `"timeout"` (attempt failure).
        Timeout => "timeout",
        /// `"network_error"` (attempt failure).
        NetworkError => "network_error",
        /// `"source_dead"` (attempt failure).
        SourceDead => "source_dead",
        /// `"bad_response"` (attempt failure): a malformed answer — empty completion, protocol
        /// error, invalid JSON, truncation. Breaker and health count it like `network_error`;
        /// telemetry and `per_source_reasons` name it honestly.
        BadResponse => "bad_response",
        /// `"circuit_open"` (admission only).
        CircuitOpen => "circuit_open",
        /// `"quota_full"` (admission only; chosen).
        QuotaFull => "quota_full",
        /// `"paced"` (admission only; chosen).
        Paced => "paced",
    }
}

impl FailureReason {
    /// `true` for the four attempt-failure reasons the breaker port may receive.
    pub const fn is_attempt_failure(self) -> bool {
        matches!(
            self,
            Self::RateLimited
                | Self::Timeout
                | Self::NetworkError
                | Self::SourceDead
                | Self::BadResponse
        )
    }
}

wire_enum! {
    /// Why a whole scope is unavailable (the original `SCOPE_REASONS`).
    pub enum ScopeReason {
        /// `"no_sources"`.
        NoSources => "no_sources",
        /// `"retry_exhausted"`.
        RetryExhausted => "retry_exhausted",
        /// `"stalled"`.
        Stalled => "stalled",
        /// `"quota_full"`.
        QuotaFull => "quota_full",
        /// `"circuit_open"`.
        CircuitOpen => "circuit_open",
        /// `"backend_unavailable"` (chosen).
        BackendUnavailable => "backend_unavailable",
    }
}

wire_enum! {
    /// The exception-side HTTP sub-operation of an attempt failure. Never converted
    /// into the telemetry `operation` column.
    pub enum ErrorOperation {
        /// `"chat"`.
        Chat => "chat",
        /// `"embedding"`.
        Embedding => "embedding",
        /// `"ocr_text"`.
        OcrText => "ocr_text",
        /// `"parse"`.
        Parse => "parse",
        /// `"download_result"`.
        DownloadResult => "download_result",
    }
}

wire_enum! {
    /// The four per-attempt failure categories, returned by `GatewayError::category()`.
    pub enum Category {
        /// `"transient"`: retry after backoff.
        Transient => "transient",
        /// `"source_dead"`: open the breaker at once and switch source.
        SourceDead => "source_dead",
        /// `"request_rejected"`: propagate at once.
        RequestRejected => "request_rejected",
        /// `"result_invalid"`: propagate at once ("bad result ≠ bad service").
        ResultInvalid => "result_invalid",
    }
}

wire_enum! {
    /// Stable reason codes of attempt failures. `#[non_exhaustive]`:
    /// the registry may grow.
    #[non_exhaustive]
    pub enum ReasonCode {
        /// `"upstream_finish_error"` (T).
        UpstreamFinishError => "upstream_finish_error",
        /// `"tool_truncated"` (RI).
        ToolTruncated => "tool_truncated",
        /// `"tool_arguments_null"` (RI).
        ToolArgumentsNull => "tool_arguments_null",
        /// `"tool_incomplete"` (T).
        ToolIncomplete => "tool_incomplete",
        /// `"length_without_content"` (RI).
        LengthWithoutContent => "length_without_content",
        /// `"filtered_without_content"` (RI).
        FilteredWithoutContent => "filtered_without_content",
        /// `"empty_completion"` (T).
        EmptyCompletion => "empty_completion",
        /// `"missing_done"` (T).
        MissingDone => "missing_done",
        /// `"early_eof"` (T).
        EarlyEof => "early_eof",
        /// `"upstream_error_frame"` (T).
        UpstreamErrorFrame => "upstream_error_frame",
        /// `"rate_limited"` (T, in-band 429).
        RateLimited => "rate_limited",
        /// `"context_length_exceeded"` (RR).
        ContextLengthExceeded => "context_length_exceeded",
        /// `"malformed_json"` (T).
        MalformedJson => "malformed_json",
        /// `"protocol_error"` (T).
        ProtocolError => "protocol_error",
        /// `"read_error"` (T).
        ReadError => "read_error",
        /// `"liveness_timeout"` (T).
        LivenessTimeout => "liveness_timeout",
        /// `"empty_response"` (T).
        EmptyResponse => "empty_response",
        /// `"invalid_json"` (T).
        InvalidJson => "invalid_json",
        /// `"response_too_large"` (RI).
        ResponseTooLarge => "response_too_large",
        /// `"refused"` (RI): a text-mode answer whose only output is a refusal.
        Refused => "refused",
        /// `"tool_calls_in_text_mode"` (RI): a text-mode answer whose only output
        /// is tool calls; the openai response mode delivers them.
        ToolCallsInTextMode => "tool_calls_in_text_mode",
        /// `"malformed_item"` (RI): an embedding item whose vector is not all
        /// finite numbers.
        MalformedItem => "malformed_item",
    }
}

wire_enum! {
    /// Underlying fault kind of a failed attempt, written verbatim into the telemetry
    /// `cause_type` column. Exactly ten variants.
    pub enum CauseKind {
        /// `"ConnectTimeout"`.
        ConnectTimeout => "ConnectTimeout",
        /// `"ConnectError"`.
        ConnectError => "ConnectError",
        /// `"WriteTimeout"`.
        WriteTimeout => "WriteTimeout",
        /// `"WriteError"`.
        WriteError => "WriteError",
        /// `"ReadTimeout"`.
        ReadTimeout => "ReadTimeout",
        /// `"ReadError"`.
        ReadError => "ReadError",
        /// `"PoolTimeout"`.
        PoolTimeout => "PoolTimeout",
        /// `"RemoteProtocolError"`.
        RemoteProtocolError => "RemoteProtocolError",
        /// `"NetworkError"`.
        NetworkError => "NetworkError",
        /// `"StreamLivenessTimeout"`: a core watchdog expiry.
        StreamLivenessTimeout => "StreamLivenessTimeout",
    }
}

wire_enum! {
    /// How a source authenticates (`AUTH_STYLE`).
    #[derive(Default)]
    pub enum AuthStyle {
        /// `"bearer"` (default): `Authorization: Bearer <key>`.
        #[default]
        Bearer => "bearer",
        /// `"api_key_header"`: `api-key: <key>` (Azure).
        ApiKeyHeader => "api_key_header",
        /// `"none"`: no authentication header.
        None => "none",
    }
}

wire_enum! {
    /// The kind of scope a source belongs to (checked at validation): it only changes the identity
    /// check (an OCR source may have no key).
    pub enum ScopeKind {
        /// `"chat"`.
        Chat => "chat",
        /// `"embedding"`.
        Embedding => "embedding",
        /// `"ocr"`.
        Ocr => "ocr",
    }
}

wire_enum! {
    /// Circuit breaker state.
    #[derive(Default)]
    pub enum BreakerState {
        /// `"closed"` (default).
        #[default]
        Closed => "closed",
        /// `"open"`.
        Open => "open",
        /// `"half_open"`.
        HalfOpen => "half_open",
    }
}

wire_enum! {
    /// Classification of a finish reason used by the verdict and cacheability.
    pub enum FinishClass {
        /// `stop`, `tool_calls`, `function_call`.
        Natural => "natural",
        /// `length`.
        Truncated => "truncated",
        /// `content_filter`, `sensitive`.
        Filtered => "filtered",
        /// `network_error`, `error`.
        UpstreamError => "upstream_error",
        /// Any other non-empty string, including `STOP` and `end_turn`.
        Unknown => "unknown",
        /// No finish_reason (an empty string counts as absent).
        Absent => "absent",
    }
}

impl FinishClass {
    /// Class of an optional finish reason: `None` is `Absent`.
    pub fn of(reason: Option<&FinishReason>) -> Self {
        reason.map_or(Self::Absent, FinishReason::class)
    }
}

/// The raw upstream `finish_reason`, byte-exact and case-sensitive, never empty.
///
/// The only constructor is [`FinishReason::new`], which returns `None` for `""`, so an empty
/// string is *absent* in both modes. Deserialising `""` is an error.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FinishReason(String);

impl FinishReason {
    /// Wraps a non-empty finish reason; `None` for the empty string.
    pub fn new(reason: impl Into<String>) -> Option<Self> {
        let reason = reason.into();
        if reason.is_empty() {
            None
        } else {
            Some(Self(reason))
        }
    }

    /// The raw value as received.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The finish class; exact, case-sensitive match.
    pub fn class(&self) -> FinishClass {
        match self.0.as_str() {
            "stop" | "tool_calls" | "function_call" => FinishClass::Natural,
            "length" => FinishClass::Truncated,
            "content_filter" | "sensitive" => FinishClass::Filtered,
            "network_error" | "error" => FinishClass::UpstreamError,
            _ => FinishClass::Unknown,
        }
    }

    /// Consumes the wrapper and returns the raw string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for FinishReason {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::new(raw).ok_or_else(|| {
            serde::de::Error::custom("finish_reason must not be empty (an empty string is absent)")
        })
    }
}
