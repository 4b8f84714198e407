//! What users read names no specification rules (issue 23): every `pgw … --help` text, the
//! messages of `pgw`'s configuration and call errors, the string literals of the library crates
//! (error messages, help texts), and the user-facing docs pages and README. Rule ids belong in
//! tests and `docs/rule-coverage.md` only.
//!
//! Also checks the small first-hour items: the no-sources error names the scope's real keys,
//! `pgw status` prints the sources of a scope, logs carry no ANSI colour codes off a terminal.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::path::{Path, PathBuf};

use crate::support::*;

/// Spec references: a rule id such as `R-48`, `G-12`, `CF-101`, `CT-LIM-13`, `spec 70`, `05 R-`,
/// or a section sign with a spec-file number (`20 §4`).
fn spec_refs(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let word_start = |i: usize| i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
    for (i, _) in text.char_indices() {
        if !word_start(i) {
            continue;
        }
        let rest = &text[i..];
        let prefix_len = ["CT-", "CF-"]
            .iter()
            .find(|p| rest.starts_with(**p))
            .map(|p| {
                if *p == "CT-" {
                    // CT-<LETTERS>-<digits>
                    let letters = rest[3..].bytes().take_while(u8::is_ascii_uppercase).count();
                    if letters > 0 && rest[3 + letters..].starts_with('-') {
                        3 + letters + 1
                    } else {
                        0
                    }
                } else {
                    3
                }
            })
            .or_else(|| {
                let b = rest.as_bytes();
                (b.len() > 2 && b"RGCOSTVEH".contains(&b[0]) && b[1] == b'-').then_some(2)
            })
            .unwrap_or(0);
        if prefix_len > 0 {
            let digits = rest[prefix_len..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let after = rest.as_bytes().get(prefix_len + digits);
            if digits > 0 && !after.is_some_and(u8::is_ascii_alphanumeric) {
                found.push(rest[..prefix_len + digits].to_owned());
            }
        }
        // The decisions of the specification's README: `D9`, `README D31`, `D19–D36`.
        if let Some(after_d) = rest.strip_prefix('D') {
            let digits = after_d.bytes().take_while(u8::is_ascii_digit).count();
            let after = after_d.as_bytes().get(digits);
            if (1..=2).contains(&digits) && !after.is_some_and(u8::is_ascii_alphanumeric) {
                found.push(rest[..1 + digits].to_owned());
            }
        }
        for marker in ["spec ", "05 R-"] {
            if rest.starts_with(marker)
                && rest[marker.len()..]
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_digit() || marker == "05 R-")
            {
                found.push(rest.chars().take(marker.len() + 3).collect());
            }
        }
        let b = rest.as_bytes();
        if b.len() > 3
            && b[0].is_ascii_digit()
            && b[1].is_ascii_digit()
            && rest[2..].starts_with(" §")
        {
            found.push(rest.chars().take(6).collect());
        }
    }
    found
}

#[test]
fn the_matcher_finds_rule_ids_and_spares_ordinary_text() {
    for hit in [
        "see 05 R-48",
        "(G-12)",
        "CF-101 pins it",
        "CT-LIM-13",
        "spec 70 says",
        "20 §4",
        "V-52.",
    ] {
        assert!(!spec_refs(hit).is_empty(), "missed {hit:?}");
    }
    for clean in [
        "UTF-8",
        "SHA-256",
        "X-Request-Id",
        "A-Z",
        "p99",
        "HTTP 429",
        "re-ask",
        "TLS-1",
    ] {
        assert!(spec_refs(clean).is_empty(), "false hit in {clean:?}");
    }
}

fn assert_clean(what: &str, text: &str) {
    let refs = spec_refs(text);
    assert!(
        refs.is_empty(),
        "{what} names specification rules {refs:?}; say what happens and which key to set \
         instead:\n{text}"
    );
}

/// The subcommand names listed by `pgw --help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_help_text_is_free_of_spec_ids() {
    let pgw = Pgw::new();
    let (code, help, _) = pgw.run(&["--help"], &[]);
    assert_eq!(code, 0);
    assert_clean("pgw --help", &help);
    assert!(help.contains("-q, --quiet"), "{help}");
    assert!(help.contains("-v, --verbose"), "{help}");
    let commands = subcommands(&help);
    for expected in [
        "demo",
        "chat",
        "embed",
        "doctor",
        "status",
        "sim",
        "schema-sql",
    ] {
        assert!(
            commands.iter().any(|c| c == expected),
            "{expected} missing from {commands:?}"
        );
    }
    for command in &commands {
        let (code, text, _) = pgw.run(&[command, "--help"], &[]);
        assert_eq!(code, 0, "pgw {command} --help");
        assert_clean(&format!("pgw {command} --help"), &text);
        let (_, short, _) = pgw.run(&[command, "-h"], &[]);
        assert_clean(&format!("pgw {command} -h"), &short);
    }
}

#[test]
fn error_messages_of_pgw_are_free_of_spec_ids() {
    let pgw = Pgw::new();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: &[Case<'_>] = &[
        (&["chat", "hi"], &[]),
        (&["chat", "hi", "--json"], &[]),
        (&["chat", "hi", "--base-url", "http://127.0.0.1:9/v1"], &[]),
        (
            &["chat", "hi", "--set", "LLM__X__1__TIMEOUT_S=abc"],
            &[("LLM__X__1__BASE_URL", "http://127.0.0.1:9/v1")],
        ),
        (
            &["chat", "hi", "--set", "LLM__HEDGE__AFTER_S=0"],
            &[
                ("LLM__X__1__BASE_URL", "http://127.0.0.1:9/v1"),
                ("LLM__X__1__API_KEY", "sk-x"),
                ("LLM__X__1__MODEL", "m"),
            ],
        ),
        (
            &["chat", "hi", "--set", "LLM__X__1__TIMEOUT_SS=1"],
            &[
                ("LLM__X__1__BASE_URL", "http://127.0.0.1:9/v1"),
                ("LLM__X__1__API_KEY", "sk-x"),
                ("LLM__X__1__MODEL", "m"),
            ],
        ),
        (
            &["chat", "hi", "--set", "PGW_CACHE_BACKEND=nope"],
            &[
                ("LLM__X__1__BASE_URL", "http://127.0.0.1:9/v1"),
                ("LLM__X__1__API_KEY", "sk-x"),
                ("LLM__X__1__MODEL", "m"),
            ],
        ),
        (&["embed", "hi"], &[]),
        (&["doctor"], &[]),
        (&["status"], &[]),
        (&["ocr", "nope.png"], &[]),
        (&["sim", "--script", "missing.json"], &[]),
        (&["demo", "--calls", "0"], &[]),
        (&["chat", "--nope"], &[]),
        (&["schema-sql", "oracle"], &[]),
    ];
    for (args, env) in cases {
        let (code, stdout, stderr) = pgw.run(args, env);
        assert_ne!(code, 0, "pgw {args:?} should fail");
        assert_clean(&format!("pgw {args:?} stdout"), &stdout);
        assert_clean(&format!("pgw {args:?} stderr"), &stderr);
    }
}

/// A call that reaches a closed port: the call error's message is clean too.
#[test]
fn call_error_messages_are_free_of_spec_ids() {
    let pgw = Pgw::new();
    let mut args = vec![
        "chat",
        "hi",
        "--json",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key",
        KEY,
        "--model",
        "m",
    ];
    args.extend(FAST_RETRY);
    let (code, stdout, stderr) = pgw.run(&args, &[]);
    assert_ne!(code, 0);
    assert_clean("pgw chat (unreachable) stdout", &stdout);
    assert_clean("pgw chat (unreachable) stderr", &stderr);
}

/// The string literals of a Rust source file, outside comments (rough lexer: plain, byte and
/// raw strings; char literals and lifetimes skipped).
fn string_literals(src: &str) -> Vec<(usize, String)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let line = |i: usize| src[..i].bytes().filter(|c| *c == b'\n').count() + 1;
    while i < b.len() {
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(b.len(), |j| i + j);
            continue;
        }
        if src[i..].starts_with("/*") {
            i = src[i..].find("*/").map_or(b.len(), |j| i + j + 2);
            continue;
        }
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let raw_start = if src[i..].starts_with("br") { 2 } else { 1 };
        if !ident_before && (src[i..].starts_with('r') || src[i..].starts_with("br")) {
            let hashes = src[i + raw_start..]
                .bytes()
                .take_while(|c| *c == b'#')
                .count();
            if src[i + raw_start + hashes..].starts_with('"') {
                let open = i + raw_start + hashes + 1;
                let close = format!("\"{}", "#".repeat(hashes));
                let end = src[open..].find(&close).map_or(b.len(), |j| open + j);
                out.push((line(i), src[open..end].to_owned()));
                i = (end + close.len()).min(b.len());
                continue;
            }
        }
        match b[i] {
            b'\'' => {
                // 'x', '\n', '\'' or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    i = src[i + 2..].find('\'').map_or(b.len(), |j| i + 3 + j);
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                out.push((line(i), src[i + 1..j.min(b.len())].to_owned()));
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Error messages, `--help` texts and every other string the library and the CLI can show
/// (the `src/` trees of the shipped crates) name no rules.
#[test]
fn string_literals_of_shipped_crates_are_free_of_spec_ids() {
    let root = workspace_root();
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        panic!("cannot list {}", root.display());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let shipped = name.starts_with("gateway-") || name.starts_with("adapter-");
        if shipped && entry.path().join("src").is_dir() {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    assert!(files.len() > 20, "found only {files:?}");
    let mut offenders = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap_or_default();
        for (line, literal) in string_literals(&src) {
            let refs = spec_refs(&literal);
            if !refs.is_empty() {
                offenders.push(format!("{}:{line}: {refs:?}", file.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The rustdoc a user of `polygateway` reads — the facade's and the ports' doc comments (`///`,
/// `//!`; the ports are re-exported as `polygateway::ports`) — says what happens in words and
/// names no rules (issue 23). Lines inside `#[cfg(test)]` modules are tests' docs and may cite.
#[test]
fn rustdoc_of_polygateway_and_its_ports_is_free_of_spec_ids() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("gateway-facade/src"), &mut files);
    rust_files(&root.join("gateway-ports/src"), &mut files);
    assert!(files.len() > 20, "found only {files:?}");
    let mut offenders = Vec::new();
    for file in &files {
        let src = std::fs::read_to_string(file).unwrap_or_default();
        for (n, line) in src.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let doc = line.trim_start();
            if !(doc.starts_with("///") || doc.starts_with("//!")) {
                continue;
            }
            let refs = spec_refs(doc);
            if !refs.is_empty() {
                offenders.push(format!("{}:{}: {refs:?}", file.display(), n + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The pages users read: the README and `docs/*.md` except the maintainers' pages.
#[test]
fn readme_and_docs_pages_are_free_of_spec_ids() {
    let root = workspace_root();
    let mut pages = vec![root.join("README.md")];
    let maintainers = ["rule-coverage.md", "rule-notes.md"];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md")
                && !maintainers.contains(&name.as_str())
                && !name.starts_with("decisions")
            {
                pages.push(entry.path());
            }
        }
    }
    assert!(pages.len() > 5, "{pages:?}");
    let mut offenders = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let refs = spec_refs(line);
            if !refs.is_empty() || line.contains("shared/spec") {
                offenders.push(format!("{}:{}: {line}", page.display(), n + 1));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The no-sources error names the scope's real keys, not a `{SCOPE}__{PROVIDER}` template.
#[test]
fn no_sources_error_names_real_keys() {
    let pgw = Pgw::new();
    let (code, stdout, stderr) = pgw.run(&["chat", "hi", "--scope", "ACME"], &[]);
    assert_eq!(code, 3, "{stdout}{stderr}");
    assert!(stderr.contains("ACME__OPENAI__1__BASE_URL"), "{stderr}");
    assert!(!stderr.contains("{SCOPE}"), "{stderr}");
}

/// Logs carry no ANSI colour codes when stderr is not a terminal (here: a pipe).
#[test]
fn logs_have_no_ansi_codes_off_a_terminal() {
    let pgw = Pgw::new();
    let (_, _, stderr) = pgw.run(
        &[
            "-vvv",
            "chat",
            "hi",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--api-key",
            KEY,
        ],
        &[("LLM__CLI__1__MODEL", "m")],
    );
    assert!(!stderr.is_empty());
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let (code, _, stderr) = pgw.run(&["-q", "-v", "status"], &[]);
    assert_eq!(code, 2, "-q and -v conflict: {stderr}");
}

/// `pgw status` prints every source of the scope with its breaker state, as a table or JSON.
#[test]
fn status_prints_sources_as_table_and_json() {
    let pgw = Pgw::new();
    let env = [
        ("LLM__ALPHA__1__BASE_URL", "http://127.0.0.1:9/v1"),
        ("LLM__ALPHA__1__API_KEY", "sk-status-secret"),
        ("LLM__ALPHA__1__MODEL", "m1"),
        ("LLM__BETA__1__BASE_URL", "http://127.0.0.1:9/v1"),
        ("LLM__BETA__1__API_KEY", "sk-status-secret"),
        ("LLM__BETA__1__MODEL", "m2"),
    ];
    let (code, table, stderr) = pgw.run(&["status"], &env);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("SOURCE"), "{table}");
    assert!(
        lines[0].contains("BREAKER") && lines[0].contains("TPM"),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("alpha_1") && l.contains("closed"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("beta_1") && l.contains("m2"))
    );
    assert!(!table.contains("sk-status-secret"));
    let (code, value, _) = pgw.run_json(&["status", "--json"], &env);
    assert_eq!(code, 0);
    assert_eq!(value["ok"], true);
    let sources = value["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[0]["breaker_state"], "closed");
    assert_eq!(sources[0]["open_count"], 0);
    let (code, value, _) = pgw.run_json(&["status", "--json"], &[]);
    assert_eq!(code, 3, "no sources is a configuration error: {value}");
}

/// `pgw doctor --help` lists only flags that mean something to doctor (no call is sent, no
/// telemetry written).
#[test]
fn doctor_help_lists_only_flags_doctor_uses() {
    let pgw = Pgw::new();
    let (code, help, _) = pgw.run(&["doctor", "--help"], &[]);
    assert_eq!(code, 0);
    for hidden in ["--missing-done", "--telemetry"] {
        assert!(!help.contains(hidden), "{hidden} in:\n{help}");
    }
    for shown in ["--scope", "--kind", "--base-url", "--json"] {
        assert!(help.contains(shown), "{shown} missing:\n{help}");
    }
}
