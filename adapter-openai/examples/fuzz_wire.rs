//! Long-running random-input harness for the wire readers (issue 22; 40 S-31, CT-CHAT-05/06,
//! R-27, R-29): the SSE framer, the chunk reader (the streamed-200 event stream over a body cut
//! into reads) and the non-stream body reader (capped whole-body read, its one-event
//! interpretation, and the core's non-stream body parser and stream accumulator downstream).
//!
//! No coverage guidance (the toolchain here has no `cargo fuzz` / `cargo afl`): inputs are
//! generated from an SSE- and JSON-aware token grammar mixed with raw random bytes, cut at
//! random read boundaries, with random frame / response caps. Every input is checked against the
//! invariants below; a violation (or a panic) prints the seed and the input in hex and exits 1.
//!
//! Run: `cargo run --release -p adapter-openai --features fuzzing --example fuzz_wire -- \
//!       --minutes 30 [--seed N]` (use `nice -n 19`; prints a progress line every minute).

#![expect(clippy::print_stderr, reason = "a harness binary reports on stderr")]
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a wall-clock time budget is what this harness measures"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use adapter_openai::fuzzing::{json_body_read, stream_events, whole_body_read};
use adapter_openai::sse::{SseEvent, SseFramer, UNRECOGNIZED_EXCERPT_BUDGET_BYTES};
use gateway_core::accumulate::{AccumulateOptions, Accumulator, parse_non_stream_body};
use gateway_ports::ResponseMode;
use gateway_ports::ports::transport::WireEvent;

/// xorshift64*: deterministic from the seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const TOKENS: &[&[u8]] = &[
    b"data:",
    b"data: ",
    b"data:  ",
    b"event: error\n",
    b"event:message\n",
    b"id: 7\n",
    b"retry: 10\n",
    b"error: {\"message\":\"x\"}\n",
    b": keep-alive\n",
    b":\n",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"[DONE]",
    b" [DONE] ",
    b"\xEF\xBB\xBF",
    b"\xEF\xBB",
    b"\xFF\xFE",
    b"\xC3",
    b"\xE2\x82",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\u002d",
    b",",
    b":",
    b"null",
    b"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}",
    b"{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"t\"},\"finish_reason\":null}]}",
    b"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}",
    b"{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":18446744073709551615,\"completion_tokens\":-1,\"prompt_tokens_details\":{\"cached_tokens\":99}}}",
    b"{\"choices\":[{\"index\":3,\"delta\":{\"role\":\"user\",\"content\":7}}]}",
    b"{\"error\":{\"message\":\"boom\",\"code\":429}}",
    b"{\"id\":\"r1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}",
    b"{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[null,{\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}",
    b"1e999999",
    b"-0.0",
    b"\"\\ud800\"",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

/// Index of the first JSON-document token in [`TOKENS`].
const JSON_FROM: usize = 30;

fn gen_input(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let pieces = 1 + rng.below(64);
    for _ in 0..pieces {
        match rng.below(10) {
            0 => {
                // raw bytes
                let n = rng.below(48);
                for _ in 0..n {
                    out.push(rng.next() as u8);
                }
            }
            1 => {
                // a long run (pushes the frame cap)
                let byte = TOKENS[rng.below(TOKENS.len())]
                    .first()
                    .copied()
                    .unwrap_or(b'a');
                let n = rng.below(4096);
                out.extend(std::iter::repeat_n(byte, n));
            }
            2..=5 => {
                // a well-formed event around a (possibly hostile) JSON token
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(TOKENS[JSON_FROM + rng.below(TOKENS.len() - JSON_FROM)]);
                out.extend_from_slice(if rng.chance(80) { b"\n\n" } else { b"\r\n\r\n" });
            }
            _ => out.extend_from_slice(TOKENS[rng.below(TOKENS.len())]),
        }
    }
    // mutate a few bytes
    if !out.is_empty() && rng.chance(30) {
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(out.len());
            out[i] = rng.next() as u8;
        }
    }
    out
}

fn cut(rng: &mut Rng, bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut reads = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let len = match rng.below(4) {
            0 => 1,
            1 => 1 + rng.below(8),
            _ => 1 + rng.below(bytes.len() - start),
        };
        let end = (start + len).min(bytes.len());
        reads.push(bytes[start..end].to_vec());
        if rng.chance(5) {
            reads.push(Vec::new()); // empty reads happen on the wire too
        }
        start = end;
    }
    reads
}

fn frame(max: usize, reads: &[Vec<u8>]) -> Result<Vec<SseEvent>, String> {
    let mut framer = SseFramer::new(max);
    let mut out = Vec::new();
    for read in reads {
        framer.push(read, &mut out);
        if framer.buffered_bytes() > max.saturating_mul(2) {
            return Err(format!(
                "framer buffered {} > 2 x cap {max}",
                framer.buffered_bytes()
            ));
        }
    }
    framer.finish(&mut out);
    Ok(out)
}

fn one_terminal_last<T: std::fmt::Debug>(
    what: &str,
    out: &[T],
    terminal: impl Fn(&T) -> bool,
) -> Result<(), String> {
    let terminals = out.iter().filter(|e| terminal(e)).count();
    if terminals != 1 || !out.last().is_some_and(&terminal) {
        return Err(format!(
            "{what}: {terminals} terminal events, last {:?}",
            out.last()
        ));
    }
    Ok(())
}

fn check_one(rng: &mut Rng, stats: &mut Stats) -> Result<(), String> {
    let input = gen_input(rng);
    let max = match rng.below(4) {
        0 => 1 + rng.below(16),
        1 => 1 + rng.below(512),
        _ => 1 + rng.below(1 << 16),
    };
    let reads = cut(rng, &input);

    // 1. The framer: same events however the body is cut (S-31), one terminal last
    //    (CT-CHAT-06), buffers within the cap (S-17), excerpt budget (S-30).
    let whole = frame(max, std::slice::from_ref(&input))?;
    let split = frame(max, &reads)?;
    if whole != split {
        return Err(format!(
            "framer: split changed the events\n one: {whole:?}\n cut: {split:?}"
        ));
    }
    one_terminal_last("framer", &split, SseEvent::is_terminal)?;
    let mut excerpt = 0usize;
    for event in &split {
        match event {
            SseEvent::Unrecognized { excerpt: e } => {
                if e.is_empty() {
                    return Err("framer: empty Unrecognized excerpt".into());
                }
                excerpt += e.len();
            }
            SseEvent::FrameTooLarge { limit } if *limit != max => {
                return Err(format!("framer: FrameTooLarge limit {limit} != cap {max}"));
            }
            _ => {}
        }
    }
    if excerpt > UNRECOGNIZED_EXCERPT_BUDGET_BYTES {
        return Err(format!("framer: excerpts total {excerpt} bytes"));
    }

    // 2. The chunk reader: the stream over the cut body, with and without a response cap.
    let uncapped = stream_events(reads.clone(), max, u64::MAX).ok_or("stream stalled")?;
    one_terminal_last("stream", &uncapped, WireEvent::is_terminal)?;
    if uncapped.len() != split.len() {
        return Err(format!(
            "stream: {} events, framer {}",
            uncapped.len(),
            split.len()
        ));
    }
    let cap = rng.below(input.len() + 8) as u64;
    let capped = stream_events(reads.clone(), max, cap).ok_or("capped stream stalled")?;
    one_terminal_last("capped stream", &capped, WireEvent::is_terminal)?;
    if capped.len() > uncapped.len() {
        return Err("capped stream yielded more than the uncapped one".into());
    }

    // 3. The non-stream body reader: capped whole read, split-invariant.
    let limit = rng.below(input.len() + 8);
    let body_whole = whole_body_read(vec![input.clone()], limit).ok_or("body read stalled")?;
    let body_split = whole_body_read(reads.clone(), limit).ok_or("body read stalled")?;
    if body_whole != body_split {
        return Err("body reader: split changed the result".into());
    }
    match &body_split {
        Ok(bytes) if bytes.len() > limit || bytes[..] != input[..] => {
            return Err("body reader: bytes differ from the body or pass the cap".into());
        }
        Err(l) if *l != limit || input.len() <= limit => {
            return Err(format!(
                "body reader: refused {} bytes under cap {limit}",
                input.len()
            ));
        }
        _ => {}
    }
    let json = json_body_read(reads, limit).ok_or("json body read stalled")?;
    one_terminal_last("json body", &json, WireEvent::is_terminal)?;

    // 4. Downstream (the core): the non-stream parser and the stream accumulator never panic
    //    on whatever the readers produced.
    for mode in [ResponseMode::Text, ResponseMode::OpenAi] {
        let mut options = AccumulateOptions::new("call-fuzz", "fuzz");
        options.max_response_bytes = 1 + rng.below(1 << 20);
        let _ = parse_non_stream_body(&input, mode, &options);
        let mut acc = Accumulator::new(mode, options);
        for event in &uncapped {
            if let WireEvent::Chunk(chunk) = event {
                stats.chunks += 1;
                let _ = acc.push_json(chunk);
            }
        }
        let done = acc.finish();
        let _ = done.usage(false);
        let _ = done.completion();
    }
    stats.bytes += input.len() as u64;
    Ok(())
}

#[derive(Default)]
struct Stats {
    cases: u64,
    bytes: u64,
    chunks: u64,
}

fn main() {
    let mut minutes = 1.0f64;
    let mut seed = 0x9E37_79B9_7F4A_7C15u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => minutes = args.next().and_then(|v| v.parse().ok()).unwrap_or(minutes),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).unwrap_or(seed),
            other => {
                eprintln!("unknown argument {other}; use --minutes M --seed N");
                std::process::exit(2);
            }
        }
    }
    if seed == 0 {
        seed = 1;
    }
    eprintln!("fuzz_wire: seed {seed}, {minutes} minutes");
    let started = Instant::now();
    let budget = Duration::from_secs_f64(minutes.max(0.0) * 60.0);
    let mut next_report = Duration::from_secs(60);
    let mut stats = Stats::default();
    let mut rng = Rng(seed);
    while started.elapsed() < budget {
        let case_seed = rng.next() | 1;
        let mut case_rng = Rng(case_seed);
        let result = catch_unwind(AssertUnwindSafe(|| check_one(&mut case_rng, &mut stats)));
        let failure = match result {
            Ok(Ok(())) => None,
            Ok(Err(message)) => Some(message),
            Err(_) => Some("panic".to_owned()),
        };
        if let Some(message) = failure {
            let mut again = Rng(case_seed);
            let input = gen_input(&mut again);
            let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
            eprintln!("FAIL case seed {case_seed}: {message}\ninput hex: {hex}");
            std::process::exit(1);
        }
        stats.cases += 1;
        if started.elapsed() >= next_report {
            eprintln!(
                "fuzz_wire: {:>4} min  {} cases  {} MiB  {} chunks accumulated  0 failures",
                next_report.as_secs() / 60,
                stats.cases,
                stats.bytes >> 20,
                stats.chunks
            );
            next_report += Duration::from_secs(60);
        }
    }
    eprintln!(
        "fuzz_wire: done: {} cases, {} bytes, {} chunks accumulated, {:.1} s, 0 failures (seed {seed})",
        stats.cases,
        stats.bytes,
        stats.chunks,
        started.elapsed().as_secs_f64()
    );
}
