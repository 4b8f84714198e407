//! Reading one attempt's event stream under the watchdogs: the stream loop (progress,
//! back-pressure through the commit gate, loser cancellation, the stop facts) and a JSON body
//! answering a streamed request. Judging what was read is in `judge`.

use futures_util::StreamExt as _;
use gateway_ports::{
    AttemptFailure, Category, ChunkJson, ErrorOperation, ReasonCode, ResponseMode, WireEvent,
    WireEventStream,
};
use tokio::time::Instant;

use crate::accumulate::{AccumulateError, AccumulateOptions, Accumulator, parse_non_stream_value};
use crate::attempt::{AttemptOutcome, LegControl, LegSignals};
use crate::classify::{
    Classification, classify_error_event, classify_frame_too_large, classify_read_error,
};
use crate::redact::scrubbed_summary;
use crate::stream_call::{CommitGate, StreamDelta};
use crate::verdict::{StreamFacts, StreamTerminal};

use super::judge::Judge;
use super::timing::{ProgressClock, Watchdogs, expiry, stall_from_times};

/// How one stream stopped being read.
enum Stop {
    /// `Done` or `End`: go to post-stream assembly.
    Ended(StreamTerminal),
    /// A fact failed the attempt (S-33 "stop").
    Failed(Classification),
    /// A loser cancel while the transport was pending.
    Cancelled,
}

impl<'a> Judge<'a> {
    /// `Transient(malformed_json)` for a dispatched event that is not JSON; the
    /// message gives the length only, never the payload.
    fn malformed(&self, len: usize) -> Classification {
        let mut failure = AttemptFailure::new(
            format!(
                "{}: malformed SSE frame (malformed_json): {len} bytes of data are not JSON",
                self.source_name
            ),
            ErrorOperation::Chat,
        );
        failure.source_name = Some(self.source_name.to_owned());
        failure.reason_code = Some(ReasonCode::MalformedJson);
        Classification::new(Category::Transient, failure)
    }

    /// The caller-facing delta of one merged frame.
    fn stream_delta(&self, delta: &crate::accumulate::ChatDelta, chunk: &ChunkJson) -> StreamDelta {
        let mut out = StreamDelta::content(delta.content.clone());
        if self.gate.is_some_and(CommitGate::forwards_reasoning) {
            out.reasoning.push_str(&delta.reasoning_content);
            out.reasoning.push_str(&delta.reasoning);
        }
        if self.mode == ResponseMode::OpenAi {
            let raw = chunk.to_value();
            out.tool_calls = StreamDelta::tool_calls_of(&raw);
            out.raw = Some(raw);
        }
        out
    }

    /// Reads the event stream under the watchdogs, then assembles and judges it. `options` are
    /// the accumulator's (moved in: the attempt reads one stream, so they are not copied).
    pub(super) async fn stream(
        &self,
        options: AccumulateOptions,
        mut events: WireEventStream,
        watchdogs: Watchdogs,
        mut progress: ProgressClock,
        signals: Option<&LegSignals>,
        control: &LegControl,
    ) -> AttemptOutcome {
        let mut watchdogs = watchdogs;
        let mut acc = Accumulator::new(self.mode, options);
        let mut excerpt: Option<String> = None;
        let mut any_fragment = false;
        // One timer for the whole stream. A progress event moves the true deadline (the
        // inter-token interval restarts), but the timer is re-armed only when the new deadline
        // is *earlier* than the armed one; a later one is picked up lazily when the armed timer
        // fires (then the true deadline is recomputed). Timer-wheel work is thus per budget
        // window, not per frame.
        let mut armed = watchdogs.next(None);
        let timer = tokio::time::sleep_until(armed.map_or_else(Instant::now, |(at, _)| at));
        tokio::pin!(timer);
        // One cancellation waiter for the whole stream (not one registration per frame).
        let cancelled = control.cancelled();
        tokio::pin!(cancelled);
        let stop = loop {
            let event = tokio::select! {
                biased;
                () = &mut cancelled => break Stop::Cancelled,
                event = events.next() => event,
                () = &mut timer, if armed.is_some() => {
                    match watchdogs.next(progress.last_runtime()) {
                        Some((at, kind)) if at > Instant::now() => {
                            armed = Some((at, kind));
                            timer.as_mut().reset(at);
                            continue;
                        }
                        Some((_, kind)) => break Stop::Failed(self.liveness(kind)),
                        None => {
                            armed = None;
                            continue;
                        }
                    }
                }
            };
            // A stream that ends without a terminal event breaks the port contract
            // (CT-CHAT-06); it is judged as a clean end (chosen).
            let Some(event) = event else {
                break Stop::Ended(StreamTerminal::End);
            };
            match event {
                WireEvent::Chunk(chunk) => match acc.push_json(&chunk) {
                    Ok(facts) => {
                        let delta = &facts.delta;
                        if !(delta.content.is_empty()
                            && delta.reasoning_content.is_empty()
                            && delta.reasoning.is_empty())
                        {
                            any_fragment = true;
                        }
                        if facts.is_progress() {
                            progress.progress(signals);
                            let next = watchdogs.next(progress.last_runtime());
                            let earlier = match (next, armed) {
                                (Some((at, _)), Some((armed_at, _))) => at < armed_at,
                                (Some(_), None) => true,
                                (None, _) => false,
                            };
                            if let (true, Some((at, _))) = (earlier, next) {
                                armed = next;
                                timer.as_mut().reset(at);
                            }
                        }
                        if let Some(gate) = self.gate {
                            let delta = self.stream_delta(&facts.delta, &chunk);
                            if !delta.is_empty() {
                                // Back-pressure (D32): a full buffer pauses the upstream read;
                                // the wait is not upstream time, so the watchdogs move with it.
                                let waited = Instant::now();
                                gate.forward(self.call_id, self.hedge_leg, delta).await;
                                let blocked = waited.elapsed();
                                if !blocked.is_zero() {
                                    watchdogs.pause(blocked);
                                    progress.pause(blocked);
                                }
                            }
                        }
                    }
                    Err(error) => break Stop::Failed(error.classify(&self.cctx())),
                },
                WireEvent::Done => break Stop::Ended(StreamTerminal::Done),
                WireEvent::End => break Stop::Ended(StreamTerminal::End),
                WireEvent::KeepAlive(_) => {}
                WireEvent::Notice(notice) => acc.push_notice(notice),
                WireEvent::Unrecognized { excerpt: text } => {
                    excerpt.get_or_insert(text);
                }
                WireEvent::ErrorEvent { data } => {
                    break Stop::Failed(classify_error_event(&data, &self.cctx()));
                }
                WireEvent::MalformedFrame { len } => break Stop::Failed(self.malformed(len)),
                WireEvent::FrameTooLarge { limit } => {
                    break Stop::Failed(classify_frame_too_large(limit, &self.cctx()));
                }
                WireEvent::ReadError(fault) => {
                    break Stop::Failed(classify_read_error(&fault, &self.cctx()));
                }
            }
        };
        // S-10: the stream is released before judging (and on every early return).
        drop(events);
        let terminal = match stop {
            Stop::Ended(terminal) => terminal,
            Stop::Failed(classification) => return self.fail(classification),
            Stop::Cancelled => return AttemptOutcome::CancelledAsLoser,
        };
        let accumulated = acc.finish();
        let facts = StreamFacts {
            terminal,
            usage_after_finish: accumulated.usage_after_finish,
            any_fragment,
        };
        let (ttft_ms, max_inter_token_ms) = progress.ttft_and_gap();
        let (stall_ms, stall_count) = stall_from_times(progress.times(), self.stall_threshold_ms);
        match self.judge(&accumulated, Some(facts)) {
            Ok(mut result) => {
                if let Some(gate) = self.gate {
                    gate.commit_on_success(self.call_id, self.hedge_leg).await;
                }
                result.ttft_ms = ttft_ms;
                result.max_inter_token_ms = max_inter_token_ms;
                result.stall_ms = stall_ms;
                result.stall_count = stall_count;
                AttemptOutcome::Success(result)
            }
            Err(mut classification) => {
                // S-97: an unrecognized excerpt explains a zero-output or truncated stream.
                if let Some(text) = excerpt
                    && matches!(
                        classification.reason_code(),
                        Some(
                            ReasonCode::EarlyEof
                                | ReasonCode::MissingDone
                                | ReasonCode::EmptyCompletion
                        )
                    )
                {
                    classification.failure.body_text = Some(scrubbed_summary(&text, &self.scrub()));
                }
                self.fail(classification)
            }
        }
    }

    /// A JSON body answering a streamed request: one event then `End`, under the
    /// total watchdog only, judged as a non-stream body.
    pub(super) async fn json_body(
        &self,
        mut events: WireEventStream,
        watchdogs: Watchdogs,
        control: &LegControl,
    ) -> AttemptOutcome {
        let mut body: Result<Option<ChunkJson>, Classification> = Ok(None);
        loop {
            let event = tokio::select! {
                biased;
                () = control.cancelled() => return AttemptOutcome::CancelledAsLoser,
                event = events.next() => event,
                kind = expiry(watchdogs.next(None)) => return self.fail(self.liveness(kind)),
            };
            match event {
                None | Some(WireEvent::End | WireEvent::Done) => break,
                Some(WireEvent::Chunk(value)) => {
                    if matches!(body, Ok(None)) {
                        body = Ok(Some(value));
                    }
                }
                Some(WireEvent::MalformedFrame { .. }) => {
                    body = Err(AccumulateError::InvalidJson.classify(&self.cctx()));
                }
                Some(WireEvent::FrameTooLarge { limit }) => {
                    body = Err(classify_frame_too_large(limit, &self.cctx()));
                    break;
                }
                Some(WireEvent::ReadError(fault)) => {
                    body = Err(classify_read_error(&fault, &self.cctx()));
                    break;
                }
                Some(WireEvent::ErrorEvent { data }) => {
                    body = Err(classify_error_event(&data, &self.cctx()));
                }
                Some(
                    WireEvent::KeepAlive(_) | WireEvent::Notice(_) | WireEvent::Unrecognized { .. },
                ) => {}
            }
        }
        drop(events);
        match body {
            Err(classification) => self.fail(classification),
            Ok(None) => self.body(Err(AccumulateError::EmptyResponse)),
            Ok(Some(value)) => self.body(parse_non_stream_value(
                &value.to_value(),
                self.mode,
                &self.acc_options,
            )),
        }
    }
}
