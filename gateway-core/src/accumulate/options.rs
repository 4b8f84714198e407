//! The small value types every file of the accumulator shares: the per-attempt options and
//! what one frame told the executor. A leaf: it imports nothing from its siblings.

/// Default per-attempt cap on retained response bytes: 64 MiB (`MAX_RESPONSE_BYTES`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Per-attempt options of the accumulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccumulateOptions {
    /// The attempt's `call_id` (a UUIDv4): the hash key of synthesized tool ids when the
    /// upstream sent no response id.
    pub call_id: String,
    /// The source name; used in classification messages and warning texts only.
    pub source_name: String,
    /// Cap on the bytes an attempt retains (stream) or on the body length (non-stream), in
    /// bytes; beyond it → `ResultInvalid(response_too_large)`. Default 64 MiB.
    pub max_response_bytes: usize,
    /// Whether the provider profile strips inline `<think>…</think>` from the text projection
    /// (the `qwen` profile). Default `false`.
    pub inline_think_tags: bool,
}

impl AccumulateOptions {
    /// Options with the defaults: 64 MiB, no inline think tags.
    pub fn new(call_id: impl Into<String>, source_name: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            source_name: source_name.into(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            inline_think_tags: false,
        }
    }
}

/// The fragments of one frame: strings, `""` when absent, and whether the frame is
/// progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatDelta {
    /// The `content` fragment.
    pub content: String,
    /// The `reasoning_content` fragment.
    pub reasoning_content: String,
    /// The `reasoning` alias fragment.
    pub reasoning: String,
    /// Whether the frame is progress: at most one progress event per frame.
    pub progress: bool,
}

/// What one chunk told the executor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameFacts {
    /// The frame's fragments and progress flag.
    pub delta: ChatDelta,
    /// A choice was selected in this frame; `false` for usage-only and
    /// annotation frames.
    pub choice_selected: bool,
    /// This frame recorded the finish_reason for the first time.
    pub finish_recorded: bool,
    /// A finish_reason is recorded, after this frame.
    pub finish_seen: bool,
    /// This frame carried a non-null usage object, now the last usage.
    pub usage_recorded: bool,
}

impl FrameFacts {
    /// `true` when the frame is progress: drives watchdogs, TTFT and stall timestamps.
    pub fn is_progress(&self) -> bool {
        self.delta.progress
    }
}
