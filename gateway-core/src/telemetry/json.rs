//! Allocation-lean JSON text for row columns (issue 9 follow-up; 80 T-12).
//!
//! Writes exactly the bytes `serde_json`'s compact serializer writes (`Value::to_string`), but
//! straight into one `String` from borrowed values: no intermediate `Value` trees, no map
//! clones (with `preserve_order` every cloned map re-hashes its keys). Strings and leaf values
//! go through `serde_json` itself, so escaping and number printing are its own; only the
//! assembly (and the canonical key order of 70 C-46) is ours. The unit tests pin the output to
//! `serde_json`'s byte for byte.

use std::io;

use serde_json::Value;

/// An `io::Write` that appends to a `String`. `serde_json` writes whole UTF-8 pieces (it cuts a
/// string only at the ASCII bytes it escapes), so each piece passes the strict check; a piece
/// that did not would be an error, never a panic.
struct StringWriter<'a>(&'a mut String);

impl io::Write for StringWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let piece =
            std::str::from_utf8(buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.0.push_str(piece);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Appends `value` as compact JSON through `serde_json`'s own serializer (its escaping and
/// number printing), straight into `out`: no intermediate `String` or `Value`.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut String, value: &T) {
    // Serializing a `str` or a `Value` into memory cannot fail.
    let _ = serde_json::to_writer(StringWriter(out), value);
}

/// Appends `s` as a JSON string literal, exactly as `serde_json` writes it.
pub(crate) fn write_str(out: &mut String, s: &str) {
    write_json(out, s);
}

/// Appends `value` as compact JSON, object keys in map order (what `value.to_string()` gives).
pub(crate) fn write_value(out: &mut String, value: &Value) {
    write_json(out, value);
}

/// Appends `value` as canonical JSON: object keys sorted by code point at every
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

    /// Canonical output equals sorting every object and printing it.
    #[test]
    fn c_46_write_canonical_sorts_at_every_depth() {
        let v = json!({"b": {"d": 1, "c": [ {"y": 1, "x": 2} ]}, "a": "s", "B": null});
        assert_eq!(
            text(|o| write_canonical(o, &v)),
            r#"{"B":null,"a":"s","b":{"c":[{"x":2,"y":1}],"d":1}}"#
        );
    }
}
