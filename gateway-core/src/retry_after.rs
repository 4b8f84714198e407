//! Server wait hints: `retry-after-ms`, `x-ms-retry-after-ms` and `Retry-After` → seconds.
//!
//! Owns the parsing of the hint a server attaches to a failed HTTP response (spec 30 §3,
//! G-31..G-37; README D4; 05 R-33) and the pure decision of the optional hint cap.
//! It does not decide *when* a hint is parsed — the classifier (`crate::classify`) calls it only
//! for `Transient` 429 and 503 responses — nor how long to sleep: the backoff
//! (`crate::backoff`) takes the larger of its own delay and the hint, never clamping the hint.
//!
//! Why a module of its own: a bad header must never change a category, never panic, and
//! never flood the logs with the raw header under a 429 storm. Keeping the parser pure
//! (headers and the wall clock are passed in) lets tests pin every value of G-37.

use std::time::SystemTime;

/// Stable `code` field of the one warning this module logs: a hint header was not finite
/// (`inf`, `-inf`, `Infinity`, `1e999`) and was treated as "no hint".
pub const RETRY_AFTER_NOT_FINITE: &str = "retry_after_not_finite";

/// The millisecond hint headers, in the order they are consulted.
/// Both are preferred over `Retry-After` when they hold a usable value.
pub const MS_HINT_HEADERS: [&str; 2] = ["retry-after-ms", "x-ms-retry-after-ms"];

/// The seconds-or-HTTP-date hint header.
pub const RETRY_AFTER_HEADER: &str = "retry-after";

/// What one header value says, before the warning discipline is applied.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reading {
    /// A usable hint, in seconds: finite and `> 0`.
    Hint(f64),
    /// `±inf`: ignored with one warning.
    NotFinite,
    /// NaN, `<= 0`, a past date, empty or garbage: ignored silently.
    Unusable,
}

/// Parses the server's wait hint from the response headers, in seconds.
///
/// `headers` are `(name, value)` pairs as the adapter reports them (names lower-cased by the
/// adapter; matched here ASCII case-insensitively anyway; the first occurrence of a name wins).
/// `source_name` only names the source in the warning. `wall_now` is the local wall clock used
/// for HTTP-date hints (the response's `Date` header is deliberately not consulted: 05 R-60,
/// wire case 031).
///
/// Algorithm:
/// 1. `retry-after-ms`, then `x-ms-retry-after-ms`: finite and `> 0` → `ms / 1000`;
/// 2. `retry-after`: a decimal number of seconds (finite `> 0` → that value);
/// 3. otherwise an HTTP-date (IMF-fixdate, RFC 850, asctime; the weekday is not checked):
///    `date − wall_now` when positive.
///
/// Returns `None` when no header yields a usable hint. A non-finite value (`±inf`, `1e999`)
/// logs exactly one `warn` per call (field `code` = [`RETRY_AFTER_NOT_FINITE`], naming the
/// source and the header, never the raw value); NaN, zero, negative, past dates, empty and
/// garbage values are ignored silently. Never panics, for any input. The returned value
/// is always finite and `> 0`; it may be huge (`Retry-After: 1e300`).
pub fn parse_retry_after(
    headers: &[(String, String)],
    source_name: &str,
    wall_now: SystemTime,
) -> Option<f64> {
    let mut warned = false;
    let mut warn_once = |header: &'static str| {
        if !warned {
            warned = true;
            tracing::warn!(
                code = RETRY_AFTER_NOT_FINITE,
                source = source_name,
                header,
                "{source_name}: Retry-After is not finite; treated as no hint ({RETRY_AFTER_NOT_FINITE})"
            );
        }
    };

    for name in MS_HINT_HEADERS {
        let Some(value) = first_header(headers, name) else {
            continue;
        };
        match read_milliseconds(value) {
            Reading::Hint(seconds) => return Some(seconds),
            Reading::NotFinite => warn_once(name),
            Reading::Unusable => {}
        }
    }

    let value = first_header(headers, RETRY_AFTER_HEADER)?;
    match read_retry_after(value, wall_now) {
        Reading::Hint(seconds) => Some(seconds),
        Reading::NotFinite => {
            warn_once(RETRY_AFTER_HEADER);
            None
        }
        Reading::Unusable => None,
    }
}

/// The relay-renamed hint headers (LiteLLM forwards the provider's `retry-after-ms`
/// and `retry-after` as `llm_provider-…`), consulted in this order after D4's headers; the first
/// is read as milliseconds, the second with `Retry-After` syntax.
pub const RELAY_HINT_HEADERS: [&str; 2] =
    ["llm_provider-retry-after-ms", "llm_provider-retry-after"];

/// The rate-limit reset headers (OpenAI's `x-ratelimit-reset-requests` /
/// `x-ratelimit-reset-tokens`, values such as `6m0s`, `1.5s`, `250ms` or plain seconds), each
/// paired with its `x-ratelimit-remaining-*` header.
pub const RATELIMIT_RESET_HEADERS: [(&str, &str); 2] = [
    (
        "x-ratelimit-reset-requests",
        "x-ratelimit-remaining-requests",
    ),
    ("x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"),
];

/// Parses the server's wait hint from the headers **and** the body of a failed response, in
/// seconds (README D4 then D19).
///
/// Order, first usable wins:
/// 1. D4's headers ([`parse_retry_after`]);
/// 2. the relay-renamed headers [`RELAY_HINT_HEADERS`] (D4 syntax);
/// 3. [`RATELIMIT_RESET_HEADERS`]: plain seconds or a Go-style duration; the dimension whose
///    `x-ratelimit-remaining-*` is `0`, else the larger of the two;
/// 4. in the JSON body (an object, or the first element of an array), at
///    `error.metadata.headers.X-RateLimit-Reset` (epoch milliseconds, a number or a numeric
///    string; past values ignored; OpenRouter);
/// 5. a `google.rpc.RetryInfo` detail's `retryDelay` (e.g. `"30s"`) anywhere in
///    `error.details` (Google AI / Vertex).
///
/// Same safety rules as D4: a non-finite value is ignored with exactly one warning per call
/// naming the source and the header (never the raw value); zero, negative, past and garbage
/// values are ignored silently. Never panics. The result is finite and `> 0`.
pub fn parse_retry_hint(
    headers: &[(String, String)],
    raw_body: &str,
    source_name: &str,
    wall_now: SystemTime,
) -> Option<f64> {
    if let Some(hint) = parse_retry_after(headers, source_name, wall_now) {
        return Some(hint);
    }
    let mut warned = false;
    let mut verdict = |reading: Reading, header: &'static str| -> Option<f64> {
        match reading {
            Reading::Hint(s) => Some(s),
            Reading::NotFinite => {
                if !warned {
                    warned = true;
                    tracing::warn!(
                        code = RETRY_AFTER_NOT_FINITE,
                        source = source_name,
                        header,
                        "{source_name}: retry hint is not finite; treated as no hint ({RETRY_AFTER_NOT_FINITE})"
                    );
                }
                None
            }
            Reading::Unusable => None,
        }
    };

    if let Some(v) = first_header(headers, RELAY_HINT_HEADERS[0])
        && let Some(s) = verdict(read_milliseconds(v), RELAY_HINT_HEADERS[0])
    {
        return Some(s);
    }
    if let Some(v) = first_header(headers, RELAY_HINT_HEADERS[1])
        && let Some(s) = verdict(read_retry_after(v, wall_now), RELAY_HINT_HEADERS[1])
    {
        return Some(s);
    }

    let mut resets: Vec<(f64, bool)> = Vec::new();
    for (reset, remaining) in RATELIMIT_RESET_HEADERS {
        let Some(v) = first_header(headers, reset) else {
            continue;
        };
        if let Some(s) = verdict(read_duration(v), reset) {
            let exhausted = first_header(headers, remaining)
                .and_then(|r| r.trim_ascii().parse::<f64>().ok())
                .is_some_and(|r| r == 0.0);
            resets.push((s, exhausted));
        }
    }
    let exhausted_max = resets
        .iter()
        .filter(|(_, e)| *e)
        .map(|(s, _)| *s)
        .reduce(f64::max);
    if let Some(s) = exhausted_max.or_else(|| resets.iter().map(|(s, _)| *s).reduce(f64::max)) {
        return Some(s);
    }

    body_hint(raw_body, wall_now, &mut verdict)
}

/// Steps 4 and 5 of [`parse_retry_hint`]: the body's hints.
fn body_hint(
    raw_body: &str,
    wall_now: SystemTime,
    verdict: &mut impl FnMut(Reading, &'static str) -> Option<f64>,
) -> Option<f64> {
    let trimmed = raw_body.trim_ascii_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    let parsed: serde_json::Value = serde_json::from_str(trimmed).ok()?;
    let top = match &parsed {
        serde_json::Value::Array(items) => items.first()?,
        other => other,
    };
    let error = top.get("error")?;

    let reset = error
        .get("metadata")
        .and_then(|m| m.get("headers"))
        .and_then(|h| h.as_object())
        .and_then(|h| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("x-ratelimit-reset"))
                .map(|(_, v)| v)
        });
    if let Some(value) = reset {
        let ms = match value {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::String(s) => s.trim_ascii().parse::<f64>().ok(),
            _ => None,
        };
        if let Some(ms) = ms {
            let now_ms = wall_now
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64() * 1000.0)
                .unwrap_or(0.0);
            let reading = if ms.is_infinite() {
                Reading::NotFinite
            } else {
                positive_seconds((ms - now_ms) / 1000.0)
            };
            if let Some(s) = verdict(reading, "X-RateLimit-Reset") {
                return Some(s);
            }
        }
    }

    let details = error.get("details").and_then(|d| d.as_array())?;
    for detail in details {
        let is_retry_info = detail
            .get("@type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"));
        let delay = detail.get("retryDelay").and_then(|d| d.as_str());
        if let (true, Some(delay)) = (is_retry_info, delay)
            && let Some(s) = verdict(read_duration(delay), "retryDelay")
        {
            return Some(s);
        }
    }
    None
}

/// Reads plain seconds (`"6"`, `"1.5"`) or a Go-style duration (`"6m0s"`, `"1.5s"`,
/// `"250ms"`, `"1h2m"`; units `h`, `m`, `s`, `ms`, `us`, `µs`, `ns`).
fn read_duration(value: &str) -> Reading {
    let value = value.trim_ascii();
    if let Ok(seconds) = value.parse::<f64>() {
        return positive_seconds(seconds);
    }
    match parse_go_duration(value) {
        Some(seconds) => positive_seconds(seconds),
        None => Reading::Unusable,
    }
}

/// A Go `time.Duration` string in seconds; `None` when it is not one.
fn parse_go_duration(value: &str) -> Option<f64> {
    let mut rest = value;
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    while !rest.is_empty() {
        let num_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        if num_len == 0 {
            return None;
        }
        let number: f64 = rest.get(..num_len)?.parse().ok()?;
        rest = rest.get(num_len..)?;
        let (factor, unit_len) = if rest.starts_with("ms") {
            (1e-3, 2)
        } else if rest.starts_with("us") {
            (1e-6, 2)
        } else if rest.starts_with("µs") {
            (1e-6, "µs".len())
        } else if rest.starts_with("ns") {
            (1e-9, 2)
        } else if rest.starts_with('h') {
            (3600.0, 1)
        } else if rest.starts_with('m') {
            (60.0, 1)
        } else if rest.starts_with('s') {
            (1.0, 1)
        } else {
            return None;
        };
        total += number * factor;
        rest = rest.get(unit_len..)?;
    }
    Some(total)
}

/// hint cap: `true` when a cap is configured (`{SCOPE}__RETRY__MAX_HINT_S`) and the server
/// hint exceeds it, i.e. the call fails at once carrying `retry_after_s = hint_s` instead of
/// sleeping (30 G-35 note). This is a decision, never a clamp: when it returns `false`
/// the hint is slept in full (bounded only by the call deadline).
///
/// `max_hint_s = None` (unset) never caps. A non-finite cap is treated as unset (the config
/// guard only admits finite values `> 0`).
pub fn hint_exceeds_cap(hint_s: f64, max_hint_s: Option<f64>) -> bool {
    match max_hint_s {
        Some(cap) if cap.is_finite() => hint_s > cap,
        _ => false,
    }
}

/// First value of the header `name` (ASCII case-insensitive), if any.
fn first_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Reads a millisecond header value.
fn read_milliseconds(value: &str) -> Reading {
    match value.trim_ascii().parse::<f64>() {
        Ok(ms) => positive_seconds(ms / 1000.0),
        Err(_) => Reading::Unusable,
    }
}

/// Reads a `Retry-After` value: a number of seconds or an HTTP-date (G-32 steps 2–3).
fn read_retry_after(value: &str, wall_now: SystemTime) -> Reading {
    let value = value.trim_ascii();
    if let Ok(seconds) = value.parse::<f64>() {
        return positive_seconds(seconds);
    }
    match parse_http_date_any_weekday(value) {
        Some(date) => match date.duration_since(wall_now) {
            Ok(ahead) if !ahead.is_zero() => Reading::Hint(ahead.as_secs_f64()),
            _ => Reading::Unusable,
        },
        None => Reading::Unusable,
    }
}

/// Sorts a number of seconds into hint / not finite / unusable.
fn positive_seconds(seconds: f64) -> Reading {
    if seconds.is_infinite() {
        Reading::NotFinite
    } else if seconds > 0.0 {
        Reading::Hint(seconds)
    } else {
        // NaN, zero, negative (a tiny ms value that underflows to 0 lands here too).
        Reading::Unusable
    }
}

/// Day names as the three HTTP-date formats spell them (short for IMF-fixdate and asctime, long
/// for RFC 850).
const WEEKDAYS: [&str; 14] = [
    "Mon",
    "Tue",
    "Wed",
    "Thu",
    "Fri",
    "Sat",
    "Sun",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Parses an HTTP-date (RFC 9110 §5.6.7) with `httpdate`, without checking the weekday against
/// the date: `httpdate` rejects a wrong weekday, so on failure the leading day
/// name is replaced by each day name in turn (at most one can match the date).
fn parse_http_date_any_weekday(value: &str) -> Option<SystemTime> {
    if let Ok(date) = httpdate::parse_http_date(value) {
        return Some(date);
    }
    let name_len = value.bytes().take_while(u8::is_ascii_alphabetic).count();
    if name_len == 0 {
        return None;
    }
    // `name_len` counts ASCII bytes only, so it is a char boundary.
    let rest = value.get(name_len..)?;
    WEEKDAYS
        .iter()
        .find_map(|day| httpdate::parse_http_date(&format!("{day}{rest}")).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_seconds_sorts_values() {
        assert_eq!(positive_seconds(2.5), Reading::Hint(2.5));
        assert_eq!(positive_seconds(f64::INFINITY), Reading::NotFinite);
        assert_eq!(positive_seconds(f64::NEG_INFINITY), Reading::NotFinite);
        assert_eq!(positive_seconds(f64::NAN), Reading::Unusable);
        assert_eq!(positive_seconds(0.0), Reading::Unusable);
        assert_eq!(positive_seconds(-0.0), Reading::Unusable);
    }

    #[test]
    fn d19_go_durations() {
        assert_eq!(parse_go_duration("6m0s"), Some(360.0));
        assert_eq!(parse_go_duration("1.5s"), Some(1.5));
        assert_eq!(parse_go_duration("250ms"), Some(0.25));
        assert_eq!(parse_go_duration("1h2m3s"), Some(3723.0));
        assert_eq!(parse_go_duration("2µs"), Some(2e-6));
        assert_eq!(parse_go_duration(""), None);
        assert_eq!(parse_go_duration("6x"), None);
        assert_eq!(parse_go_duration("s"), None);
        assert_eq!(read_duration("30"), Reading::Hint(30.0));
        assert_eq!(read_duration("0s"), Reading::Unusable);
    }

    #[test]
    fn weekday_fallback_only_on_alphabetic_prefix() {
        assert!(parse_http_date_any_weekday("12345").is_none());
        assert!(parse_http_date_any_weekday("").is_none());
        assert!(parse_http_date_any_weekday("Xyz, 21 Oct 2015 07:28:00 GMT").is_some());
    }
}
