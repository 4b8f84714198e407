//! The repair pass of 70 C-6: four deleting steps applied in order, each to the previous output.
//!
//! Every step only removes text — it never adds a character, never re-orders and never closes an
//! unbalanced bracket — so a value parsed from a repaired text holds only strings that occur in
//! the input (the no-invention property, tested by proptest). Pure functions; no I/O, no panic.

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const FENCE: &str = "```";

/// Step 1: removes every `<think>…</think>` block (the provider think tags of 40 S-100). A stray
/// leading `</think>` (a provider that drops the opening tag) removes everything before it; an
/// unclosed `<think>` is left alone (steps 2–3 may still find the JSON).
pub fn strip_think(text: &str) -> String {
    let mut rest = text;
    if let Some(close) = rest.find(THINK_CLOSE)
        && rest.find(THINK_OPEN).is_none_or(|open| open > close)
    {
        rest = &rest[close + THINK_CLOSE.len()..];
    }
    let mut out = String::with_capacity(rest.len());
    while let Some(open) = rest.find(THINK_OPEN) {
        let after = &rest[open + THINK_OPEN.len()..];
        let Some(close) = after.find(THINK_CLOSE) else {
            break;
        };
        out.push_str(&rest[..open]);
        rest = &after[close + THINK_CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

/// Step 2: the body of the first Markdown code fence (three backticks, optionally followed by a
/// tag such as `json` up to the end of the line), up to the next fence or the end of the text.
/// A text without a fence comes back unchanged.
pub fn first_fence(text: &str) -> String {
    let Some(open) = text.find(FENCE) else {
        return text.to_owned();
    };
    let after = &text[open + FENCE.len()..];
    // The info string runs to the end of the line; a fence on one line (```{"a":1}```) has
    // none when the text after the backticks starts with a bracket.
    let body_start = match after.find('\n') {
        Some(nl) if !after[..nl].trim_start().starts_with(['{', '[']) => nl + 1,
        _ => after
            .char_indices()
            .find(|(_, c)| !c.is_ascii_alphanumeric())
            .map_or(after.len(), |(i, _)| i),
    };
    let body = &after[body_start..];
    match body.find(FENCE) {
        Some(close) => body[..close].to_owned(),
        None => body.to_owned(),
    }
}

/// Step 3: the span from the first `open` (`{`, or `[` for an array root) to its balanced
/// closing bracket, string-aware (brackets inside JSON strings, and escaped quotes, do not
/// count). A text without `open`, or whose span never closes, comes back unchanged.
pub fn balanced_span(text: &str, open: char) -> String {
    let Some(start) = text.find(open) else {
        return text.to_owned();
    };
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[start..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return text[start..start + i + c.len_utf8()].to_owned();
                }
            }
            _ => {}
        }
    }
    text.to_owned()
}

/// Step 4: deletes every `,` that precedes a `}` or `]` with only whitespace between, outside
/// strings (the whitespace stays).
pub fn drop_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ','
            && chars[i + 1..]
                .iter()
                .find(|n| !n.is_whitespace())
                .is_some_and(|n| *n == '}' || *n == ']')
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// The four steps of C-6 in order, each applied to the previous output; returns every
/// intermediate text that differs from its predecessor (the candidates to parse, first first).
pub fn repair_candidates(text: &str, array_root: bool) -> Vec<String> {
    let open = if array_root { '[' } else { '{' };
    let steps: [&dyn Fn(&str) -> String; 4] = [
        &strip_think,
        &first_fence,
        &|t: &str| balanced_span(t, open),
        &drop_trailing_commas,
    ];
    let mut current = text.to_owned();
    let mut out = Vec::with_capacity(4);
    for step in steps {
        let next = step(&current);
        if next != current {
            out.push(next.clone());
            current = next;
        }
    }
    out
}
