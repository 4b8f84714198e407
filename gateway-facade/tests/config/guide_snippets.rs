//! The guide is compiled (issue 23): every ```rust snippet of `docs/guide.md` appears (up to
//! formatting and imports) in `examples/guide.rs`, which `cargo test` builds; the first ```rust
//! snippet of `docs/adapters.md` likewise in `examples/custom_backend.rs`. Edit a snippet and
//! this test fails until the example (which must compile) says the same.

use std::path::Path;

/// The bodies of the ```rust blocks of a Markdown page (not `rust,ignore`).
fn rust_blocks(markdown: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim() == "```rust" => current = Some(Vec::new()),
            None => {}
            Some(_) if line.trim() == "```" => blocks.extend(current.take()),
            Some(block) => block.push(line.to_owned()),
        }
    }
    blocks
}

/// The code without its `use` lines and `#[rustfmt::skip]` markers, with every whitespace
/// character and every trailing comma removed: formatting may differ, the tokens may not.
/// (The imports are checked by the example compiling, not by this comparison.)
fn normalise(text: &str) -> String {
    let kept: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("use ") && *l != "#[rustfmt::skip]")
        .collect();
    let compact: String = kept.chars().filter(|c| !c.is_whitespace()).collect();
    compact
        .replace(",}", "}")
        .replace(",)", ")")
        .replace(",]", "]")
}

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn check(page: &str, example: &str, only_first: bool) {
    let markdown = read(page);
    let code = normalise(&read(example));
    let mut blocks = rust_blocks(&markdown);
    assert!(!blocks.is_empty(), "{page} has no rust snippet");
    if only_first {
        blocks.truncate(1);
    }
    for block in blocks {
        let needle = normalise(&block.join("\n"));
        assert!(
            code.contains(&needle),
            "this snippet of {page} is not in {example} (keep them identical):\n{}",
            block.join("\n")
        );
    }
}

#[test]
fn guide_snippets_are_compiled_in_the_guide_example() {
    check("../docs/guide.md", "examples/guide.rs", false);
}

#[test]
fn adapters_recorder_snippet_is_compiled_in_the_custom_backend_example() {
    check("../docs/adapters.md", "examples/custom_backend.rs", true);
}

/// The README's small application is the guide's first program, hence compiled too.
#[test]
fn readme_app_snippet_is_compiled_in_the_guide_example() {
    check("../README.md", "examples/guide.rs", false);
}
