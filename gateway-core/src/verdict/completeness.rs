//! Step 1 of the verdict: stream completeness and truncation (50 §2–§3).
//!
//! Owns the decision "did this stream end completely?" — `[DONE]`, or a finish followed by a
//! measured usage and a clean end of body — and what a truly truncated stream becomes:
//! `T(missing_done)` in fidelity mode whatever `MISSING_DONE` says, `T(early_eof)` for zero
//! output, `T(missing_done)` under `retry`, or a `salvaged` delivery under `salvage` (text only).
//! Non-stream responses skip this step.

use gateway_ports::{MissingDone, ReasonCode, ResponseMode, StreamEnd};

/// How the wire ended one streamed attempt: the terminal event the transport reported, or the
/// core's watchdog. Only `Done` and `End` reach completeness; the
/// others have already failed the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamTerminal {
    /// `data: [DONE]` was received (`WireEvent::Done`).
    Done,
    /// The body ended cleanly without `[DONE]` (`WireEvent::End`).
    End,
    /// The body broke mid-stream (`WireEvent::ReadError`): `T(read_error)`, never a clean end,
    /// even after a finish and a usage (V-73 last bullet).
    ReadError,
    /// A frame exceeded `max_frame_bytes`, or the attempt exceeded `max_response_bytes`
    /// (`WireEvent::FrameTooLarge`; 05 R-29): `RI(response_too_large)`.
    FrameTooLarge,
    /// A core watchdog (`ttft`, `inter_token`, `total`) expired: `T(liveness_timeout)`.
    WatchdogExpired,
}

impl StreamTerminal {
    /// The reason code of a terminal that fails the attempt by itself (`ReadError` →
    /// `read_error`, `FrameTooLarge` → `response_too_large`, `WatchdogExpired` →
    /// `liveness_timeout`); `None` for `Done` and `End`, which go to completeness.
    pub const fn failure_code(self) -> Option<ReasonCode> {
        match self {
            Self::Done | Self::End => None,
            Self::ReadError => Some(ReasonCode::ReadError),
            Self::FrameTooLarge => Some(ReasonCode::ResponseTooLarge),
            Self::WatchdogExpired => Some(ReasonCode::LivenessTimeout),
        }
    }
}

/// The wire facts of one streamed attempt that step 1 needs besides the finish and the usage
/// measurement. Built by the attempt executor from the accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamFacts {
    /// How the wire ended.
    pub terminal: StreamTerminal,
    /// A non-null usage object arrived in the frame that first carried the finish or in a later
    /// frame. Usage only before the finish (vLLM's cumulative usage) is `false`.
    pub usage_after_finish: bool,
    /// At least one non-empty content fragment, or one non-empty fragment of the chosen
    /// thinking projection, arrived — judged before think-tag stripping. `false` is the
    /// "zero output" of `early_eof`.
    pub any_fragment: bool,
}

impl StreamFacts {
    /// Facts with this terminal, no usage after the finish and no output fragment.
    pub const fn new(terminal: StreamTerminal) -> Self {
        Self {
            terminal,
            usage_after_finish: false,
            any_fragment: false,
        }
    }
}

/// The result of step 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Completeness {
    /// Continue to step 2 with this `stream_end`: `Done` or `EofAfterFinish` (complete,
    /// V-8), or `Salvaged` (text mode, `MISSING_DONE=salvage`).
    Continue(StreamEnd),
    /// The stream is truncated and fails `Transient` with `missing_done` or `early_eof`
    /// (V-14 steps 1–3).
    Truncated(ReasonCode),
    /// The terminal fact failed the attempt before completeness applies: the code of
    /// [`StreamTerminal::failure_code`]. The executor builds that failure with `crate::classify`
    /// (`classify_read_error`, `classify_frame_too_large`, `classify_liveness_timeout`), which
    /// knows the fault, the limit or the watchdog kind.
    TransportFailed(ReasonCode),
}

/// `stream_is_complete` of 50 V-8 (pinned truth table V-11):
/// 1. `done` (a `[DONE]` was received) → `Done`, whatever else happened;
/// 2. a finish is present (not none, not `""`) **and** `usage_after_finish` **and**
///    `usage_measured` → `EofAfterFinish`;
/// 3. otherwise → `None` (truncated).
///
/// `usage_measured` is `measured(u)` of the last non-null usage object.
pub fn stream_is_complete(
    done: bool,
    finish_reason: Option<&str>,
    usage_after_finish: bool,
    usage_measured: bool,
) -> Option<StreamEnd> {
    let finish_present = finish_reason.is_some_and(|f| !f.is_empty());
    if done {
        Some(StreamEnd::Done)
    } else if finish_present && usage_after_finish && usage_measured {
        Some(StreamEnd::EofAfterFinish)
    } else {
        None
    }
}

/// The handling of a truly truncated stream, in order:
/// 1. `openai` mode → `Truncated(missing_done)` (fidelity never salvages, whatever
///    `MISSING_DONE` says);
/// 2. text mode, zero output (`any_fragment == false`) → `Truncated(early_eof)`;
/// 3. text mode, `MissingDone::Retry` → `Truncated(missing_done)`;
/// 4. text mode, `MissingDone::Salvage` → `Continue(Salvaged)` (step 2 still runs).
pub fn judge_truncation(
    mode: ResponseMode,
    missing_done: MissingDone,
    any_fragment: bool,
) -> Completeness {
    match (mode, missing_done) {
        (ResponseMode::OpenAi, _) => Completeness::Truncated(ReasonCode::MissingDone),
        (ResponseMode::Text, _) if !any_fragment => Completeness::Truncated(ReasonCode::EarlyEof),
        (ResponseMode::Text, MissingDone::Retry) => {
            Completeness::Truncated(ReasonCode::MissingDone)
        }
        (ResponseMode::Text, MissingDone::Salvage) => Completeness::Continue(StreamEnd::Salvaged),
    }
}

/// Step 1 for one streamed attempt: a failing terminal →
/// `TransportFailed`; otherwise [`stream_is_complete`] with `done = (terminal == Done)`, and when
/// that says truncated, [`judge_truncation`]. `MISSING_DONE` governs only true truncation: a
/// stream complete by V-8 is delivered whatever its value.
pub fn judge_completeness(
    mode: ResponseMode,
    missing_done: MissingDone,
    stream: &StreamFacts,
    finish_reason: Option<&str>,
    usage_measured: bool,
) -> Completeness {
    if let Some(code) = stream.terminal.failure_code() {
        return Completeness::TransportFailed(code);
    }
    let done = stream.terminal == StreamTerminal::Done;
    match stream_is_complete(
        done,
        finish_reason,
        stream.usage_after_finish,
        usage_measured,
    ) {
        Some(end) => Completeness::Continue(end),
        None => judge_truncation(mode, missing_done, stream.any_fragment),
    }
}
