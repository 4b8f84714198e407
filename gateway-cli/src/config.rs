//! Flags shared by the configured commands (`chat`, `embed`, `doctor`) and the rendering of
//! configuration errors and warnings.
//!
//! Owns the path from flags to an [`EnvMap`]: `.env` and the process environment
//! ([`crate::envmap::base_map`]), `--set`, the flag source `{SCOPE}__CLI__1__*` and the
//! telemetry default. Every configuration failure becomes one `ConfigError`, printed as JSON
//! (`{"schema_version":1,"ok":false,"error":{"type":"ConfigError","code","key","message"}}`) or
//! as one line on stderr, and exits 3.

use std::path::PathBuf;

use clap::Args;
use polygateway::{ConfigError, ConfigErrorReport, ConfigWarning, EnvMap};
use serde_json::{Value, json};

use crate::envmap::{self, EnvFileChoice, TelemetryFlag};
use crate::exit;
use crate::out;

/// The `schema_version` of every `--json` output.
pub const SCHEMA_VERSION: u32 = 1;

/// Configuration flags of `chat`, `embed` and `doctor`.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Scope to assemble: the prefix of its keys (default `LLM` for chat, status and doctor,
    /// `EMBED` for embed and `doctor --kind embedding`, `OCR` for ocr and `doctor --kind ocr`).
    #[arg(long)]
    pub scope: Option<String>,
    /// Read this file instead of `./.env` (it must exist).
    #[arg(long, value_name = "PATH", conflicts_with = "no_env_file")]
    pub env_file: Option<PathBuf>,
    /// Read no `.env` file.
    #[arg(long)]
    pub no_env_file: bool,
    /// Extra environment entry KEY=VALUE (repeatable); overrides the environment.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Base URL of the flag source `{SCOPE}__CLI__1__BASE_URL`.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// API key of the flag source `{SCOPE}__CLI__1__API_KEY` (prefer the environment: a flag is
    /// visible in the process list).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Model of the flag source `{SCOPE}__CLI__1__MODEL`.
    #[arg(long)]
    pub model: Option<String>,
    /// Per-attempt timeout in seconds of the flag source `{SCOPE}__CLI__1__TIMEOUT_S`.
    #[arg(long, value_name = "SECONDS")]
    pub timeout_s: Option<String>,
    /// `MISSING_DONE` of the flag source (`retry` | `salvage`).
    #[arg(long, value_name = "POLICY")]
    pub missing_done: Option<String>,
    /// Accept keys of the scope that match no known key (`config.unknown_key`) with a warning,
    /// as the library does. By default `pgw` refuses them (exit 3): on the command line a typo
    /// such as `LLM__QWEN__1__TIMEOUT_SS` is almost always a mistake.
    #[arg(long)]
    pub allow_unknown_keys: bool,
    /// Telemetry: `none` (the CLI's default), `sqlite` or `sqlite:PATH`.
    #[arg(long, value_name = "BACKEND", value_parser = envmap::parse_telemetry)]
    pub telemetry: Option<TelemetryFlag>,
}

impl ConfigArgs {
    /// The scope name: the flag, else `default`.
    pub fn scope_or(&self, default: &str) -> String {
        self.scope.clone().unwrap_or_else(|| default.to_owned())
    }

    /// The environment map of this invocation (module docs for the precedence).
    pub fn env_map(&self, scope: &str) -> Result<EnvMap, ConfigError> {
        let mut map = envmap::base_map(&EnvFileChoice {
            path: self.env_file.clone(),
            disabled: self.no_env_file,
        })?;
        envmap::apply_sets(&mut map, &self.set)?;
        envmap::apply_source_flags(
            &mut map,
            scope,
            &[
                ("BASE_URL", self.base_url.as_deref()),
                ("API_KEY", self.api_key.as_deref()),
                ("MODEL", self.model.as_deref()),
                ("TIMEOUT_S", self.timeout_s.as_deref()),
                ("MISSING_DONE", self.missing_done.as_deref()),
            ],
        );
        envmap::apply_telemetry(&mut map, self.telemetry.as_ref());
        Ok(map)
    }
}

/// The R-50 JSON of a configuration error, with `schema_version`.
pub fn config_error_json(error: &ConfigError) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "ok": false,
        "error": ConfigErrorReport::from(error).to_json(),
    })
}

/// Reports a configuration error (JSON on stdout, or one line on stderr) and returns exit 3.
pub fn report_config_error(error: &ConfigError, as_json: bool) -> u8 {
    if as_json {
        out::stdout_json(&config_error_json(error));
    } else {
        out::stderr_line(&format!(
            "pgw: configuration error [{}] {}: {}",
            error.code, error.origin, error.message
        ));
    }
    exit::CONFIG
}

/// `pgw`'s strictness (issue 9; docs/decisions.md): the first `config.unknown_key` warning
/// becomes a `ConfigError` naming the key, unless `--allow-unknown-keys` was given. The library
/// keeps the specification's warning (A7).
pub fn refuse_unknown_keys(
    args: &ConfigArgs,
    warnings: &[ConfigWarning],
) -> Result<(), ConfigError> {
    if args.allow_unknown_keys {
        return Ok(());
    }
    match warnings.iter().find(|w| w.code == "config.unknown_key") {
        Some(w) => Err(ConfigError::new(
            "config.unknown_key",
            w.key.clone().unwrap_or_default(),
            format!("{} (pass --allow-unknown-keys to accept it)", w.message),
        )),
        None => Ok(()),
    }
}

/// A warning as JSON: `{"code","message","source"}`.
pub fn warning_json(warning: &ConfigWarning) -> Value {
    json!({ "code": warning.code, "message": warning.message, "source": warning.source })
}

/// Prints every warning on stderr, one line each (warnings never go to stdout).
pub fn print_warnings(warnings: &[ConfigWarning]) {
    for w in warnings {
        match &w.source {
            Some(source) => out::stderr_line(&format!(
                "pgw: warning [{}] ({source}): {}",
                w.code, w.message
            )),
            None => out::stderr_line(&format!("pgw: warning [{}]: {}", w.code, w.message)),
        }
    }
}
