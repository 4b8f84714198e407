//! The environment map every configured command assembles from.
//!
//! `pgw` never mutates its process environment: it reads the `.env` file (dotenvy) and the
//! process environment into one [`EnvMap`], overlays `--set KEY=VALUE` and then the command's
//! flags, and hands the map to the facade's `from_env_map` path, so a flag error names a real key
//! (`LLM__CLI__1__API_KEY`). Precedence, lowest first: `.env` < process environment < `--set` <
//! flags (the process environment wins over `.env`; R-52: flags win over the
//! environment). The CLI alone defaults `PGW_TELEMETRY_BACKEND` to `none`.

use std::path::{Path, PathBuf};

use polygateway::{ConfigError, EnvMap};

/// The provider segment of the source built from flags (`{SCOPE}__CLI__1__*`).
pub const CLI_PROVIDER: &str = "CLI";

/// Where the `.env` file comes from.
#[derive(Debug, Clone, Default)]
pub struct EnvFileChoice {
    /// An explicit file (`--env-file`); it must exist.
    pub path: Option<PathBuf>,
    /// `--no-env-file`: read no file at all.
    pub disabled: bool,
}

/// Reads `.env` (or the chosen file) and the process environment into one map; the process
/// environment wins. An explicit `--env-file` that is missing or unparsable is a `ConfigError`
/// (code `cli.env_file`, origin `--env-file`); a malformed default `.env` is one too (origin
/// `.env`), since silently ignoring it would hide the user's configuration.
pub fn base_map(choice: &EnvFileChoice) -> Result<EnvMap, ConfigError> {
    let mut map = EnvMap::new();
    if !choice.disabled {
        let (path, origin, required) = match &choice.path {
            Some(p) => (p.clone(), "--env-file", true),
            None => (PathBuf::from(".env"), ".env", false),
        };
        if required || path.exists() {
            read_env_file(&path, origin, &mut map)?;
        }
    }
    // Non-UTF-8 values are kept as a marker the settings refuse for known keys.
    map.extend(polygateway::process_env());
    Ok(map)
}

/// Largest `.env` file read, in bytes (1 MiB): a larger file, or a FIFO or device
/// (`--env-file /dev/zero`), is a `cli.env_file` error instead of an unbounded read.
pub const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// The key of a `.env` line (`KEY=…`, `export KEY=…`, or the first word of a line without `=`),
/// when it looks like one; never the value.
fn line_key(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
    let key = line.split(['=', ' ', '\t']).next()?.trim();
    let ok = !key.is_empty()
        && key.len() <= 128
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    ok.then_some(key)
}

/// Where a `.env` problem is, without any value: `line N` or `line N (key KEY)`.
fn line_place(number: usize, line: &str) -> String {
    match line_key(line) {
        Some(key) => format!("line {number} (key {key})"),
        None => format!("line {number}"),
    }
}

fn read_env_file(path: &Path, origin: &str, map: &mut EnvMap) -> Result<(), ConfigError> {
    let shown = path.display();
    let fail = |detail: String| ConfigError::new("cli.env_file", origin, detail);
    let bytes = gateway_ports::files::read_regular_file_capped(path, MAX_ENV_FILE_BYTES)
        .map_err(|e| fail(format!("{shown} {e}")))?;
    // Non-UTF-8 is reported by line and key, never dropped silently and never echoed.
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let raw = e.as_bytes();
            let number = 1 + raw[..valid].iter().filter(|&&b| b == b'\n').count();
            let start = raw[..valid]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let head = String::from_utf8_lossy(&raw[start..valid]);
            return Err(fail(format!(
                "{shown}: {} is not valid UTF-8",
                line_place(number, &head)
            )));
        }
    };
    for item in dotenvy::from_read_iter(std::io::Cursor::new(text.as_bytes())) {
        let (key, value) = item.map_err(|e| match e {
            // The parser's message quotes the whole line, value included: report where it is.
            dotenvy::Error::LineParse(line, _) => {
                let first = line.lines().next().unwrap_or_default();
                let number = text
                    .find(line.as_str())
                    .map_or(0, |at| 1 + text[..at].matches('\n').count());
                let place = if number == 0 {
                    line_place(0, first).replacen("line 0", "a line", 1)
                } else {
                    line_place(number, first)
                };
                fail(format!("cannot parse {shown}: {place} is malformed"))
            }
            dotenvy::Error::EnvVar(_) => fail(format!(
                "cannot parse {shown}: a variable substitution could not be resolved"
            )),
            _ => fail(format!("cannot read {shown}")),
        })?;
        map.insert(key, value);
    }
    Ok(())
}

/// Applies `--set KEY=VALUE` entries; an entry without `=` is a usage problem reported as a
/// `ConfigError` (code `cli.set`, origin `--set`).
pub fn apply_sets(map: &mut EnvMap, sets: &[String]) -> Result<(), ConfigError> {
    for entry in sets {
        let Some((key, value)) = entry.split_once('=') else {
            return Err(ConfigError::new(
                "cli.set",
                "--set",
                format!("`{entry}` is not KEY=VALUE"),
            ));
        };
        map.insert(key.trim().to_owned(), value.to_owned());
    }
    Ok(())
}

/// The key of a field of the flag source: `{SCOPE}__CLI__1__{FIELD}` with the scope upper-cased.
pub fn cli_key(scope: &str, field: &str) -> String {
    format!("{}__{CLI_PROVIDER}__1__{field}", scope.to_ascii_uppercase())
}

/// Writes the flag source's fields (`None` = flag absent; the environment's value stays).
pub fn apply_source_flags(map: &mut EnvMap, scope: &str, fields: &[(&str, Option<&str>)]) {
    for (field, value) in fields {
        if let Some(v) = value {
            map.insert(cli_key(scope, field), (*v).to_owned());
        }
    }
}

/// `--telemetry` values: `none`, `sqlite` (default path) or `sqlite:PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TelemetryFlag {
    /// No telemetry.
    None,
    /// SQLite at this path (`None` = the settings default `telemetry.db`).
    Sqlite(Option<PathBuf>),
}

/// clap value parser for `--telemetry`.
pub fn parse_telemetry(value: &str) -> Result<TelemetryFlag, String> {
    match value {
        "none" => Ok(TelemetryFlag::None),
        "sqlite" => Ok(TelemetryFlag::Sqlite(None)),
        _ => match value.strip_prefix("sqlite:") {
            Some(path) if !path.is_empty() => Ok(TelemetryFlag::Sqlite(Some(PathBuf::from(path)))),
            _ => Err("expected `none`, `sqlite` or `sqlite:PATH`".to_owned()),
        },
    }
}

/// Applies `--telemetry` and the CLI's default `PGW_TELEMETRY_BACKEND=none`.
pub fn apply_telemetry(map: &mut EnvMap, flag: Option<&TelemetryFlag>) {
    match flag {
        Some(TelemetryFlag::None) => {
            map.insert("PGW_TELEMETRY_BACKEND".to_owned(), "none".to_owned());
        }
        Some(TelemetryFlag::Sqlite(path)) => {
            map.insert("PGW_TELEMETRY_BACKEND".to_owned(), "sqlite".to_owned());
            if let Some(p) = path {
                map.insert(
                    "PGW_TELEMETRY_SQLITE_PATH".to_owned(),
                    p.to_string_lossy().into_owned(),
                );
            }
        }
        None => {}
    }
    let unset = map
        .get("PGW_TELEMETRY_BACKEND")
        .is_none_or(|v| v.trim().is_empty());
    if unset {
        map.insert("PGW_TELEMETRY_BACKEND".to_owned(), "none".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_52_flag_source_keys_and_precedence() {
        let mut map = EnvMap::new();
        map.insert("LLM__CLI__1__MODEL".into(), "from-env".into());
        apply_sets(&mut map, &["LLM__CLI__1__MODEL=from-set".into()]).unwrap();
        assert_eq!(map["LLM__CLI__1__MODEL"], "from-set");
        apply_source_flags(
            &mut map,
            "llm",
            &[("MODEL", Some("flag")), ("API_KEY", None)],
        );
        assert_eq!(map["LLM__CLI__1__MODEL"], "flag");
        assert!(!map.contains_key("LLM__CLI__1__API_KEY"));
        assert!(apply_sets(&mut map, &["nokey".into()]).is_err());
    }

    #[test]
    fn r_52_telemetry_defaults_to_none_and_flag_wins() {
        let mut map = EnvMap::new();
        apply_telemetry(&mut map, None);
        assert_eq!(map["PGW_TELEMETRY_BACKEND"], "none");
        map.insert("PGW_TELEMETRY_BACKEND".into(), "sqlite".into());
        apply_telemetry(&mut map, None);
        assert_eq!(map["PGW_TELEMETRY_BACKEND"], "sqlite");
        let flag = parse_telemetry("sqlite:/tmp/x.db").unwrap();
        apply_telemetry(&mut map, Some(&flag));
        assert_eq!(map["PGW_TELEMETRY_SQLITE_PATH"], "/tmp/x.db");
        assert!(parse_telemetry("postgres").is_err());
        assert!(parse_telemetry("sqlite:").is_err());
    }

    #[test]
    fn r_41_env_file_is_read_into_the_map_without_touching_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.env");
        std::fs::write(&file, "PGW_TEST_ONLY_KEY_R41=from-file\n").unwrap();
        let map = base_map(&EnvFileChoice {
            path: Some(file),
            disabled: false,
        })
        .unwrap();
        assert_eq!(map["PGW_TEST_ONLY_KEY_R41"], "from-file");
        assert!(std::env::var_os("PGW_TEST_ONLY_KEY_R41").is_none());
        let missing = base_map(&EnvFileChoice {
            path: Some(dir.path().join("missing.env")),
            disabled: false,
        })
        .unwrap_err();
        assert_eq!(
            (missing.code, missing.origin.as_str()),
            ("cli.env_file", "--env-file")
        );
    }
}
