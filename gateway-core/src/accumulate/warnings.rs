//! Dialect warnings: what an attempt raises, and the
//! per-client throttle that logs each `(source, key)` once.
//!
//! An attempt only *collects* [`DialectWarning`]s (in S-95 step 1 order); it never logs. The
//! client owns one [`WarningThrottle`] (one throttle per `GatewayClient`) and passes each
//! warning of a delivered or failed attempt through it, so a key is logged once per source, the
//! set never grows beyond [`WARNING_CAPACITY`] keys, and saturation is said exactly once.
//! Warnings never change a result.

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// Capacity of the warning key set of one client.
pub const WARNING_CAPACITY: usize = 1024;

/// The text logged once when the key set is full.
pub const SATURATION_MESSAGE: &str =
    "dialect warning set saturated (1024); further warnings of this kind are omitted";

/// Longest conflict path kept in a `field:` key, in characters.
const FIELD_KEY_CHARS: usize = 128;
/// Longest finish value kept in a `finish:` key, in characters.
const FINISH_KEY_CHARS: usize = 64;

/// One dialect warning raised by an attempt.
///
/// Carries the path or value only; field contents (which may be tool arguments) never appear.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DialectWarning {
    /// An unknown field was deleted after a merge conflict; `path` is normalized
    /// (`delta.ext`, `tool_calls[].function.strict`).
    FieldConflict {
        /// The normalized path.
        path: String,
    },
    /// A finish_reason outside the registry (class `unknown`) was delivered.
    UnregisteredFinish {
        /// The raw value.
        value: String,
    },
    /// The SSE split-data-lines recovery happened.
    SplitDataLines,
    /// A tool call arrived without an id and a stable one was synthesized.
    SynthesizedToolId,
    /// A streamed request got a 200 JSON body, judged as a non-stream body.
    JsonBodyOnStream,
    /// A JSON body followed by an event-stream trailer (`data: [DONE]`, comments) was read as
    /// that JSON value.
    TrailingSse,
    /// A chunk `id` differed from the stream's first id and was accepted.
    ChunkIdChanges,
    /// A `content` part of an unknown type was skipped; `kind` is its `type`,
    /// cut to 64 characters.
    UnknownContentPart {
        /// The part's `type`.
        kind: String,
    },
    /// The usage object was implausible (a count above 10^8, cached above prompt, reasoning
    /// above completion) and was treated as unavailable (issue 22).
    ImplausibleUsage,
}

impl DialectWarning {
    /// The stable code carried by the log event.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::FieldConflict { .. } => "dialect.field_conflict",
            Self::UnregisteredFinish { .. } => "dialect.unregistered_finish",
            Self::SplitDataLines => "dialect.sse_split_data_lines",
            Self::SynthesizedToolId => "dialect.tool_synthesized_id",
            Self::JsonBodyOnStream => "dialect.json_body_on_stream",
            Self::TrailingSse => "dialect:trailing_sse",
            Self::ChunkIdChanges => "dialect:chunk_id_changes",
            Self::UnknownContentPart { .. } => "dialect:content_part_skipped",
            Self::ImplausibleUsage => "dialect.implausible_usage",
        }
    }

    /// The throttle key: `field:<path>` (path cut to 128 characters),
    /// `finish:<value>` (value cut to 64 characters), `sse:split_data_lines`,
    /// `tool:synthesized_id`, `stream:json_body` (chosen).
    pub fn key(&self) -> String {
        match self {
            Self::FieldConflict { path } => format!("field:{}", cut(path, FIELD_KEY_CHARS)),
            Self::UnregisteredFinish { value } => {
                format!("finish:{}", cut(value, FINISH_KEY_CHARS))
            }
            Self::SplitDataLines => "sse:split_data_lines".to_owned(),
            Self::SynthesizedToolId => "tool:synthesized_id".to_owned(),
            Self::JsonBodyOnStream => "stream:json_body".to_owned(),
            Self::TrailingSse => "dialect:trailing_sse".to_owned(),
            Self::ChunkIdChanges => "dialect:chunk_id_changes".to_owned(),
            Self::UnknownContentPart { kind } => {
                format!("dialect:content_part:{}", cut(kind, FINISH_KEY_CHARS))
            }
            Self::ImplausibleUsage => "usage:implausible".to_owned(),
        }
    }

    /// The warning text for `source` (40 S-117 templates). Names the source and the path or
    /// (cut) value only.
    pub fn message(&self, source: &str) -> String {
        match self {
            Self::FieldConflict { path } => format!(
                "source {source}: field {} was deleted after a merge conflict; the fidelity result lacks this field",
                cut(path, FIELD_KEY_CHARS)
            ),
            Self::UnregisteredFinish { value } => format!(
                "source {source}: unregistered finish_reason {:?} delivered as a natural end; results with this value are not cached",
                cut(value, FINISH_KEY_CHARS)
            ),
            Self::SplitDataLines => format!(
                "source {source}: an SSE event with several data lines was split into separate JSON events"
            ),
            Self::SynthesizedToolId => format!(
                "source {source}: a tool call arrived without an id; a stable id was synthesized"
            ),
            Self::JsonBodyOnStream => format!(
                "source {source}: a streamed request was answered with a JSON body; it was judged as a non-stream body"
            ),
            Self::TrailingSse => format!(
                "source {source}: a JSON answer was followed by an event-stream trailer (data: [DONE]); the JSON value was used"
            ),
            Self::ChunkIdChanges => {
                format!("source {source}: stream chunks carry changing ids; the first id is kept")
            }
            Self::UnknownContentPart { kind } => format!(
                "source {source}: a content part of type {:?} was skipped",
                cut(kind, FINISH_KEY_CHARS)
            ),
            Self::ImplausibleUsage => format!(
                "source {source}: implausible token usage reported (a count above 100000000, or cached/reasoning above its total); usage treated as unavailable and the estimate settled"
            ),
        }
    }
}

/// The first `n` characters of `s`.
fn cut(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// What [`WarningThrottle::admit`] decided for one warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// First time for this `(source, key)`: log it.
    Emit,
    /// Already logged for this source, or the set is full and saturation was already said.
    Suppressed,
    /// The set is full and this is the first key refused: log [`SATURATION_MESSAGE`] once.
    Saturated,
}

/// The per-client warning throttle: a set of `(source, key)` pairs of at most
/// [`WARNING_CAPACITY`] entries.
#[derive(Debug, Default)]
pub struct WarningThrottle {
    state: Mutex<ThrottleState>,
}

#[derive(Debug, Default)]
struct ThrottleState {
    seen: HashSet<(String, String)>,
    saturation_said: bool,
}

impl WarningThrottle {
    /// An empty throttle.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides whether `warning` from `source` is logged; records it.
    pub fn admit(&self, source: &str, warning: &DialectWarning) -> Admission {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = (source.to_owned(), warning.key());
        if state.seen.contains(&entry) {
            return Admission::Suppressed;
        }
        if state.seen.len() >= WARNING_CAPACITY {
            if state.saturation_said {
                return Admission::Suppressed;
            }
            state.saturation_said = true;
            return Admission::Saturated;
        }
        state.seen.insert(entry);
        Admission::Emit
    }

    /// Admits and logs `warning` through `tracing` with the fields `source` and `code`;
    /// the text is passed as an argument, never as a format string. Returns the decision.
    pub fn emit(&self, source: &str, warning: &DialectWarning) -> Admission {
        let admission = self.admit(source, warning);
        match admission {
            Admission::Emit => {
                let message = warning.message(source);
                tracing::warn!(source = source, code = warning.code(), "{}", message);
            }
            Admission::Saturated => {
                tracing::warn!(
                    source = source,
                    code = "dialect.saturated",
                    "{}",
                    SATURATION_MESSAGE
                );
            }
            Admission::Suppressed => {}
        }
        admission
    }

    /// Number of keys recorded (≤ [`WARNING_CAPACITY`]).
    pub fn len(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .seen
            .len()
    }

    /// `true` when no key is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
