//! Key layout (docs/decisions.md "Redis key layout"): every key of a scope starts with the hash
//! tag `{pgw:<scope>}` so all keys a script touches hash to one Cluster slot.

use fred::types::Key;

/// The hash-tagged prefix of `scope`: `{pgw:<scope>}`. Braces in the scope name are
/// percent-encoded (`{` → `%7B`, `}` → `%7D`, `%` → `%25`) so they cannot end the tag early.
pub fn scope_tag(scope: &str) -> String {
    let mut out = String::with_capacity(scope.len() + 6);
    out.push_str("{pgw:");
    for c in scope.chars() {
        match c {
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out.push('}');
    out
}

/// The test-time offset key of a scope (read by the scripts only in `test-time` builds).
pub(crate) fn time_offset_key(tag: &str) -> Key {
    Key::from(format!("{tag}:test_time_offset_us"))
}

/// The limiter keys of a scope (without the time offset key): state, permits, window, leases,
/// progress. Built once per limiter; a clone shares the bytes.
pub(crate) fn limiter_keys(tag: &str) -> Vec<Key> {
    vec![
        Key::from(format!("{tag}:lim:state")),
        Key::from(format!("{tag}:lim:permits")),
        Key::from(format!("{tag}:lim:window")),
        Key::from(format!("{tag}:lim:leases")),
        Key::from(format!("{tag}:lim:progress")),
    ]
}

/// The breaker keys of one source: state, window buckets.
pub(crate) fn breaker_source_keys(tag: &str, source: &str) -> [Key; 2] {
    [
        Key::from(format!("{tag}:brk:{source}")),
        Key::from(format!("{tag}:brkwin:{source}")),
    ]
}

/// The breaker keys of one source (state, window buckets) followed by the time offset key.
pub(crate) fn breaker_keys(tag: &str, source: &str) -> Vec<Key> {
    let [s, b] = breaker_source_keys(tag, source);
    vec![s, b, time_offset_key(tag)]
}

#[cfg(test)]
mod tests {
    use super::scope_tag;

    #[test]
    fn tag_escapes_braces() {
        assert_eq!(scope_tag("prod"), "{pgw:prod}");
        assert_eq!(scope_tag("a}b{c%"), "{pgw:a%7Db%7Bc%25}");
    }
}
