//! Secret scrubbing and the body summary of failed responses (spec 05 R-34; 30 §2.5).
//!
//! Owns the two text transforms every upstream body goes through before it becomes part of an
//! error message, `AttemptFailure::body_text` or the telemetry `error_body`:
//!
//! 1. [`scrub`]: the source's own API key (exact substring), `Bearer <token>`,
//!    `sk-[A-Za-z0-9_-]{8,}` keys and, unless disabled (`PGW_REDACT_IPS=false`), IPv4/IPv6
//!    addresses are replaced with `<redacted>`;
//! 2. [`summarize_body`]: whitespace collapsed, capped at 2048 characters as
//!    `head(1400) + " …[{N} chars omitted]… " + tail(600)`.
//!
//! [`scrubbed_summary`] chains them in that order (scrub the whole text first, so a secret cut
//! by the head/tail boundary cannot leak half of itself). Classification never reads the output
//! of this module: typing decisions read the raw body.
//!
//! Why hand-written scanners rather than a regex crate: the patterns are few and fixed, and a
//! byte-level scan over `&str` with char-boundary-safe slicing keeps the guarantee "never panics
//! on any input" easy to see (and proptested).

use std::fmt;
use std::net::Ipv6Addr;

use gateway_ports::SourceConfig;

/// The replacement text of every scrubbed secret.
pub const REDACTED: &str = "<redacted>";

/// Largest summary, in characters (Unicode scalar values), returned unshortened.
pub const SUMMARY_MAX_CHARS: usize = 2048;

/// Characters kept from the start of a long body.
pub const SUMMARY_HEAD_CHARS: usize = 1400;

/// Characters kept from the end of a long body.
pub const SUMMARY_TAIL_CHARS: usize = 600;

/// What [`scrub`] removes besides the fixed key patterns.
///
/// `Debug` never prints the key.
#[derive(Clone, Copy)]
pub struct ScrubOptions<'a> {
    /// The source's own API key; every exact occurrence is replaced. `None` or an empty string
    /// disables this rule (an empty key would match everywhere).
    pub source_key: Option<&'a str>,
    /// Replace IPv4 and IPv6 addresses (`PGW_REDACT_IPS`, default `true`).
    pub redact_ips: bool,
    /// The source whose other configured secrets are scrubbed too (issue 22): every `HEADERS`
    /// and `QUERY` value and the `BASE_URL` password ([`SourceConfig::secret_values`]). `None`:
    /// only `source_key` and the fixed patterns.
    pub source: Option<&'a SourceConfig>,
}

impl Default for ScrubOptions<'_> {
    /// No source key; IP addresses redacted (the `PGW_REDACT_IPS` default).
    fn default() -> Self {
        Self {
            source_key: None,
            redact_ips: true,
            source: None,
        }
    }
}

impl fmt::Debug for ScrubOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScrubOptions")
            .field("source_key", &self.source_key.map(|_| REDACTED))
            .field("redact_ips", &self.redact_ips)
            .field("source", &self.source.map(|s| s.name.as_str()))
            .finish()
    }
}

/// Replaces secrets in `text` with [`REDACTED`].
///
/// In order: every exact occurrence of `opts.source_key`, and a prefix of it (6 bytes or more)
/// that ends the text, as a body cut at its retention cap leaves it; then, in one left-to-right scan,
/// `Bearer <token>` (the word `bearer` in any ASCII case at a word start, whitespace, and an
/// RFC 6750 token of `[A-Za-z0-9-._~+/]+=*`: the token is replaced, `Bearer ` is kept),
/// `sk-[A-Za-z0-9_-]{8,}` (the whole match), and when `opts.redact_ips` IPv6 addresses
/// (a run of hex digits, `:` and `.` with at least two colons and one hex digit, not glued to a
/// letter, digit or `_`, that `std::net::Ipv6Addr` accepts) and dotted-quad IPv4 addresses
/// (four decimal parts `0..=255` of 1–3 digits, not part of a longer dotted number).
///
/// Never panics; the output is valid UTF-8 with every non-secret character kept.
pub fn scrub(text: &str, opts: &ScrubOptions<'_>) -> String {
    // A JSON body may echo a secret with escaped characters (`sk\u002d…`): ASCII escapes are
    // decoded first so every rule below sees the plain form (issue 22).
    let unescaped;
    let mut text = text;
    if text.contains('\\') {
        unescaped = unescape_ascii_json(text);
        text = unescaped.as_str();
    }
    let mut secrets: Vec<&str> = opts.source_key.into_iter().collect();
    if let Some(source) = opts.source {
        secrets.extend(source.secret_values());
    }
    // Longest first, so a secret that contains another is replaced whole.
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
    let mut owned: Option<String> = None;
    for secret in &secrets {
        let current = owned.as_deref().unwrap_or(text);
        if current.contains(secret) {
            owned = Some(current.replace(secret, REDACTED));
        }
        // A body retained up to `max_error_body_bytes` can end in the middle of a secret: that
        // cut prefix is a secret too.
        let current = owned.as_deref().unwrap_or(text);
        if let Some(start) = trailing_key_prefix(current, secret) {
            owned = Some(format!(
                "{}{REDACTED}",
                current.get(..start).unwrap_or_default()
            ));
        }
    }
    let text = owned.as_deref().unwrap_or(text);

    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // `copied` = end of the text already copied to `out`; `i` = scan position. Both only ever
    // stop on ASCII bytes or at a match end, which are char boundaries.
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let found = match_bearer(bytes, i)
            .or_else(|| match_sk_key(bytes, i))
            .or_else(|| opts.redact_ips.then(|| match_ipv6(text, i)).flatten())
            .or_else(|| opts.redact_ips.then(|| match_ipv4(bytes, i)).flatten());
        match found {
            Some(Span { start, end }) => {
                out.push_str(text.get(copied..start).unwrap_or_default());
                out.push_str(REDACTED);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    out
}

/// Decodes the JSON escapes `\\uXXXX` of printable ASCII (U+0020..U+007E) and `\\/`; every
/// other byte, and every other escape, is kept as is. Never panics.
fn unescape_ascii_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(rest.get(..at).unwrap_or_default());
        let tail = rest.get(at..).unwrap_or_default();
        let decoded = tail
            .get(2..6)
            .filter(|_| tail.starts_with("\\u"))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .filter(|c| (0x20..0x7F).contains(c))
            .and_then(char::from_u32);
        if let Some(c) = decoded {
            out.push(c);
            rest = tail.get(6..).unwrap_or_default();
        } else if tail.starts_with("\\/") {
            out.push('/');
            rest = tail.get(2..).unwrap_or_default();
        } else {
            out.push('\\');
            rest = tail.get(1..).unwrap_or_default();
        }
    }
    out.push_str(rest);
    out
}

/// Shortest key prefix that [`scrub`] removes from the end of a text (a cut key).
const MIN_CUT_KEY_BYTES: usize = 6;

/// Where a proper prefix of `key`, at least [`MIN_CUT_KEY_BYTES`] long, ends `text` (the body
/// was cut inside the key); the longest such prefix wins.
fn trailing_key_prefix(text: &str, key: &str) -> Option<usize> {
    (MIN_CUT_KEY_BYTES..key.len())
        .rev()
        .filter_map(|len| key.get(..len))
        .find(|prefix| text.ends_with(prefix))
        .map(|prefix| text.len() - prefix.len())
}

/// The G-26 body summary: collapse whitespace, then cap at [`SUMMARY_MAX_CHARS`].
///
/// 1. Every maximal run of Unicode whitespace becomes one space; leading and trailing
///    whitespace is removed.
/// 2. A result of at most 2048 characters (Unicode scalar values) is returned as is.
/// 3. Otherwise: the first 1400 characters, the marker `" …[{N} chars omitted]… "` with
///    `N = total − 2000`, and the last 600 characters (so a trailing JSON `code` or
///    `request_id` survives).
///
/// The result never exceeds 2048 characters and never splits a character. It does not scrub
/// secrets: use [`scrubbed_summary`] for anything that leaves the core.
pub fn summarize_body(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let total = collapsed.chars().count();
    if total <= SUMMARY_MAX_CHARS {
        return collapsed;
    }
    let head_end = collapsed
        .char_indices()
        .nth(SUMMARY_HEAD_CHARS)
        .map_or(collapsed.len(), |(at, _)| at);
    let tail_start = collapsed
        .char_indices()
        .nth(total - SUMMARY_TAIL_CHARS)
        .map_or(collapsed.len(), |(at, _)| at);
    let omitted = total - SUMMARY_HEAD_CHARS - SUMMARY_TAIL_CHARS;
    format!(
        "{} …[{omitted} chars omitted]… {}",
        collapsed.get(..head_end).unwrap_or_default(),
        collapsed.get(tail_start..).unwrap_or_default(),
    )
}

/// [`scrub`] then [`summarize_body`]: the text every failure carries as `body_text` and in its
/// message.
pub fn scrubbed_summary(text: &str, opts: &ScrubOptions<'_>) -> String {
    summarize_body(&scrub(text, opts))
}

/// A byte range `start..end` of the scanned text to replace; both are char boundaries.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

/// `true` for the bytes that glue a word together (`[A-Za-z0-9_]`).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `Bearer <token>` at `i`: returns the span of the token only.
fn match_bearer(bytes: &[u8], i: usize) -> Option<Span> {
    const WORD: &[u8] = b"bearer";
    let word = bytes.get(i..i + WORD.len())?;
    if !word.eq_ignore_ascii_case(WORD) {
        return None;
    }
    if i > 0 && bytes.get(i - 1).copied().is_some_and(is_word_byte) {
        return None;
    }
    let after_word = i + WORD.len();
    let spaces = count_while(bytes, after_word, |b| b == b' ' || b == b'\t');
    if spaces == 0 {
        return None;
    }
    let start = after_word + spaces;
    let token = count_while(bytes, start, |b| {
        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
    });
    if token == 0 {
        return None;
    }
    let padding = count_while(bytes, start + token, |b| b == b'=');
    Some(Span {
        start,
        end: start + token + padding,
    })
}

/// `sk-[A-Za-z0-9_-]{8,}` at `i` (leftmost, greedy, as the regex of R-34 reads).
fn match_sk_key(bytes: &[u8], i: usize) -> Option<Span> {
    if bytes.get(i..i + 3)? != b"sk-" {
        return None;
    }
    let run = count_while(bytes, i + 3, |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    });
    (run >= 8).then_some(Span {
        start: i,
        end: i + 3 + run,
    })
}

/// An IPv4 dotted quad starting at `i`, which must start a maximal run of digits and dots.
fn match_ipv4(bytes: &[u8], i: usize) -> Option<Span> {
    let is_part = |b: u8| b.is_ascii_digit() || b == b'.';
    if !bytes.get(i)?.is_ascii_digit() || (i > 0 && bytes.get(i - 1).copied().is_some_and(is_part))
    {
        return None;
    }
    let mut end = i + count_while(bytes, i, is_part);
    // A sentence may end right after an address: "from 10.0.0.1."
    while end > i && bytes.get(end - 1) == Some(&b'.') {
        end -= 1;
    }
    let candidate = bytes.get(i..end)?;
    let mut parts = 0;
    for part in candidate.split(|&b| b == b'.') {
        parts += 1;
        if part.is_empty() || part.len() > 3 || parts > 4 {
            return None;
        }
        let value = part
            .iter()
            .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
        if value > 255 {
            return None;
        }
    }
    (parts == 4).then_some(Span { start: i, end })
}

/// An IPv6 address starting at `i`, which must start a maximal run of `[0-9A-Fa-f:.]` not glued
/// to a word character. The run (minus a trailing lone `:` or `.`) must parse as
/// [`Ipv6Addr`], contain two colons and at least one hex digit (so `::` alone and times like
/// `07:28:00` are kept).
fn match_ipv6(text: &str, i: usize) -> Option<Span> {
    let bytes = text.as_bytes();
    let is_part = |b: u8| b.is_ascii_hexdigit() || b == b':' || b == b'.';
    let first = *bytes.get(i)?;
    if !is_part(first) || first == b'.' {
        return None;
    }
    if i > 0
        && bytes
            .get(i - 1)
            .copied()
            .is_some_and(|b| is_part(b) || is_word_byte(b))
    {
        return None;
    }
    let run_end = i + count_while(bytes, i, is_part);
    if bytes.get(run_end).copied().is_some_and(is_word_byte) {
        return None;
    }
    let mut end = run_end;
    // "…at fe80::1." or "host fe80::1: refused": drop one trailing separator unless it is `::`.
    if let Some(&last) = bytes.get(end.saturating_sub(1)) {
        let before = bytes.get(end.saturating_sub(2)).copied();
        if last == b'.' || (last == b':' && before != Some(b':')) {
            end -= 1;
        }
    }
    let candidate = text.get(i..end)?;
    let colons = candidate.bytes().filter(|&b| b == b':').count();
    if colons < 2 || !candidate.bytes().any(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    candidate
        .parse::<Ipv6Addr>()
        .ok()
        .map(|_| Span { start: i, end })
}

/// Number of bytes from `start` on that satisfy `pred`.
fn count_while(bytes: &[u8], start: usize, pred: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(start..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| pred(b)).count())
}
