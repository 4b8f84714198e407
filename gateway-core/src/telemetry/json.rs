//! Allocation-lean JSON text for row columns (issue 9 follow-up; 80 T-12, T-13, T-34; 70 C-46).
//!
//! Writes exactly the bytes `serde_json`'s compact serializer writes (`Value::to_string`), but
//! straight into one `String` from borrowed values: no intermediate `Value` trees, no map
//! clones (with `preserve_order` every cloned map re-hashes its keys), and runs of a string
//! without any byte to escape are copied in one piece instead of going through an escape table
//! byte by byte. Numbers are printed by `serde_json::Number`'s own `Display`. The unit tests
//! pin the output to `serde_json`'s byte for byte.

use serde_json::{Map, Value};

/// `true` when `b` is a byte JSON escapes (`"`, `\\`, or a control byte below 0x20).
const fn escaped(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

/// The position of the first byte JSON escapes in `bytes` at or after `from`. Scans 16-byte
/// blocks branch-free, so the compiler vectorises the scan (a handful of SIMD instructions per
/// block instead of a table lookup per byte).
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let tail = bytes.get(from..)?;
    let mut blocks = tail.chunks_exact(16);
    let mut base = from;
    for block in blocks.by_ref() {
        if let Ok(block) = <&[u8; 16]>::try_from(block)
            && block.iter().fold(false, |acc, &b| acc | escaped(b))
        {
            return block.iter().position(|&b| escaped(b)).map(|at| base + at);
        }
        base += 16;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| escaped(b))
        .map(|at| base + at)
}

/// The escape sequence of an escaped byte, as `serde_json` writes it: the two-character forms
/// for `"`, `\\`, backspace, form feed, newline, carriage return and tab, `\\u00XX` (lower-case
/// hex) for the other control bytes.
fn push_escape(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        _ => {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}

/// Appends `s` as a JSON string literal, byte for byte what `serde_json` writes: runs without
/// an escaped byte are copied whole.
pub(crate) fn write_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut run_start = 0;
    while let Some(at) = next_escape(bytes, run_start) {
        // `at` is an ASCII byte, so both cuts are on character boundaries.
        out.push_str(s.get(run_start..at).unwrap_or_default());
        push_escape(out, bytes.get(at).copied().unwrap_or(0));
        run_start = at + 1;
    }
    out.push_str(s.get(run_start..).unwrap_or_default());
    out.push('"');
}

/// Appends a number as `serde_json` prints it (its `Display` is its serialization: `itoa` for
/// integers, the shortest round-trip form for floats).
fn write_number(out: &mut String, n: &serde_json::Number) {
    use std::fmt::Write as _;
    let _ = write!(out, "{n}");
}

/// Appends `value` as compact JSON, object keys in map order (what `value.to_string()` gives).
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map),
    }
}

/// Appends `map` as a compact JSON object, keys in map order.
pub(crate) fn write_object(out: &mut String, map: &Map<String, Value>) {
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        write_value(out, v);
    }
    out.push('}');
}

/// Appends `value` as canonical JSON (70 C-46): object keys sorted by code point at every
/// depth, no whitespace.
pub(crate) fn write_canonical(out: &mut String, value: &Value) {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&str, &Value)> =
                map.iter().map(|(k, v)| (k.as_str(), v)).collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            write_canonical_entries(out, &entries);
        }
        other => write_value(out, other),
    }
}

/// Appends an object from entries already sorted by key with unique keys (canonical JSON).
pub(crate) fn write_canonical_entries(out: &mut String, entries: &[(&str, &Value)]) {
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        write_canonical(out, v);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(f: impl FnOnce(&mut String)) -> String {
        let mut out = String::new();
        f(&mut out);
        out
    }

    /// Byte-identical to `serde_json`'s compact output for escapes, controls, unicode, numbers
    /// and nesting (issue 9 follow-up: row contents unchanged).
    #[test]
    fn write_value_matches_serde_json() {
        let samples = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(1.5),
            json!(1e300),
            json!(-0.0),
            json!(0.1),
            json!(""),
            json!("plain ascii text that is long enough to span more than one chunk of 32"),
            json!("quote \" backslash \\ slash / tab \t nl \n cr \r bs \u{8} ff \u{c}"),
            json!("ctl \u{1} \u{1f} del \u{7f} é ü 漢字 🚀"),
            json!({"b": 1, "a": [1, "x", {"z": null, "y": [true]}], "é": "\"q\""}),
            json!([[], {}, [{}], {"k": []}]),
        ];
        for v in &samples {
            assert_eq!(text(|o| write_value(o, v)), v.to_string(), "{v:?}");
        }
        for s in ["", "a", "\"", "\\", "\u{0}", "x\u{1f}y", "ok 🚀"] {
            assert_eq!(text(|o| write_str(o, s)), Value::from(s).to_string());
        }
        // Every byte below 0x80 at every position of a 16-byte block and across blocks.
        for b in 0u8..0x80 {
            let c = char::from(b);
            for at in [0, 7, 15, 16, 31, 40] {
                let mut s: String = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH".into();
                s.insert(at, c);
                assert_eq!(
                    text(|o| write_str(o, &s)),
                    Value::from(s.as_str()).to_string()
                );
            }
        }
    }

    /// Canonical output equals sorting every object and printing it (70 C-46).
    #[test]
    fn c_46_write_canonical_sorts_at_every_depth() {
        let v = json!({"b": {"d": 1, "c": [ {"y": 1, "x": 2} ]}, "a": "s", "B": null});
        assert_eq!(
            text(|o| write_canonical(o, &v)),
            r#"{"B":null,"a":"s","b":{"c":[{"x":2,"y":1}],"d":1}}"#
        );
    }
}
