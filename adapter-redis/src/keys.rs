//! Key layout (docs/decisions.md "Redis key layout"): every key of a scope starts with the hash
//! tag `{pgw:<scope>}` so all keys a script touches hash to one Cluster slot.

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
pub(crate) fn time_offset_key(tag: &str) -> String {
    format!("{tag}:test_time_offset_us")
}

/// The limiter keys of a scope (without the time offset key): state, permits, window, leases,
/// progress.
pub(crate) fn limiter_keys(tag: &str) -> Vec<String> {
    vec![
        format!("{tag}:lim:state"),
        format!("{tag}:lim:permits"),
        format!("{tag}:lim:window"),
        format!("{tag}:lim:leases"),
        format!("{tag}:lim:progress"),
    ]
}

/// The breaker keys of one source (state, window buckets) followed by the time offset key.
pub(crate) fn breaker_keys(tag: &str, source: &str) -> Vec<String> {
    vec![
        format!("{tag}:brk:{source}"),
        format!("{tag}:brkwin:{source}"),
        time_offset_key(tag),
    ]
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
