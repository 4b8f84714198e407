//! Stage B of the assembly guards: validation of one `SourceConfig` (R-33,
//!
//!
//! Owns the single definition of what a valid source is, so that the three assembly paths
//! (environment, settings struct, builder — 20 §9.2) cannot disagree: the facade calls
//! [`validate_source`] for every source on every path. Parsing keys and resolving defaults is the
//! facade's job; this module only judges an already-typed value.
//!
//! Origins: every error names the offending field as `sources[{name}].{field}` (the field names
//! are the `SourceConfig` attribute names, which upper-cased are the per-source environment FIELD
//! segments of 20 §4). Callers prefix it with their path (`GatewaySettings.`,
//! `GatewayClientBuilder::`) or rewrite it to the environment key that set the value.

use std::time::Duration;

use gateway_ports::config::SourceConfig;
use gateway_ports::vocab::{AuthStyle, ScopeKind};
use gateway_ports::{ConfigError, ConfigWarning};

pub mod hedge;

/// Stage D (the hedge thresholds) has a file of its own, [`hedge`]; re-exported here so
/// `gateway_core::config` holds every assembly guard of the core.
pub use hedge::{HedgeAssembly, HedgeAssemblyInput, check_hedge_assembly, non_chat_hedge_warning};

/// Keys the library controls in a request body; an `extra_body` holding one is refused
/// (20 §11.2 B6, chosen).
pub const LIBRARY_BODY_KEYS: [&str; 4] = ["model", "messages", "stream", "stream_options"];

/// Header names the adapter sets itself; a configured `HEADERS` entry with one of them is refused
/// (20 §4 `HEADERS`, 05 R-33; compared ASCII case-insensitively).
pub const RESERVED_HEADER_NAMES: [&str; 4] =
    ["authorization", "api-key", "content-type", "x-request-id"];

/// The origin of a source field as reported by [`validate_source`]: `sources[{name}].{field}`.
pub fn source_field_origin(name: &str, field: &str) -> String {
    format!("sources[{name}].{field}")
}

/// Splits an origin produced by [`source_field_origin`] back into `(name, field)`.
pub fn split_source_field_origin(origin: &str) -> Option<(&str, &str)> {
    let rest = origin.strip_prefix("sources[")?;
    let (name, field) = rest.split_once("].")?;
    Some((name, field))
}

/// `true` when `s` is an absolute `http://` or `https://` URL with a non-empty authority and no
/// whitespace or control characters (20 §2.3 `url`; scheme ASCII case-insensitive).
pub fn is_http_url(s: &str) -> bool {
    has_scheme_and_authority(s, &["http://", "https://"])
}

/// `true` when `s` starts with one of `schemes` (ASCII case-insensitive), followed by a
/// non-empty authority, and contains no whitespace or control characters.
pub fn has_scheme_and_authority(s: &str, schemes: &[&str]) -> bool {
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    schemes.iter().any(|scheme| {
        lower.starts_with(scheme) && {
            let rest = &s[scheme.len()..];
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            !authority.is_empty()
        }
    })
}

/// `true` when `name` is a valid HTTP header name (an RFC 9110 token).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `true` when `name` is one of [`RESERVED_HEADER_NAMES`] (ASCII case-insensitive).
pub fn is_reserved_header(name: &str) -> bool {
    RESERVED_HEADER_NAMES
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
}

fn positive_finite(v: f64) -> bool {
    // Also fits a `Duration` (≤ ≈ 1.8e19 s), so the transport and the executor can arm it: a
    // larger value is refused here, naming its key, instead of failing later (chosen).
    v.is_finite() && v > 0.0 && Duration::try_from_secs_f64(v).is_ok()
}

/// Validates one source (20 §11.2 stage B, in the original's order B1 → B6; 05 R-15).
///
/// Returns the stage's warnings (B2w `source.est_exceeds_tpm`, naming the source) or the first
/// error. Codes: `source.identity` (B1: empty `name`/`provider`/`model`, a missing or empty key on
/// a chat/embedding source whose `auth_style` is not `none`, an empty key on an OCR
/// source, a `base_url` that is not an absolute http(s) URL), `source.est_tokens` (B2),
/// `source.watchdog` (B3: `timeout_s` not finite > 0, exactly one watchdog set, or not
/// `0 < inter_token < ttft < timeout_s`), `source.stall_threshold` (B4), `effort.conflict`
/// (B5, 70 C-22: `enable_thinking` contradicting `reasoning_effort` on a chat source; embedding
/// and OCR sources accept both unused),
/// `source.extra_body` (B6), and — beyond the table, so the struct and builder paths keep the
/// environment's domains (chosen) — `source.max_response_bytes` (`0`) and `source.headers`
/// (an invalid or reserved header name, or a value with a control character).
/// Errors name the field as [`source_field_origin`] and never contain a secret.
pub fn validate_source(
    source: &SourceConfig,
    kind: ScopeKind,
) -> Result<Vec<ConfigWarning>, ConfigError> {
    let name = source.name.as_str();
    let err = |code: &'static str, field: &str, message: String| {
        ConfigError::new(code, source_field_origin(name, field), message)
    };
    let mut warnings = Vec::new();

    // B1 identity.
    if name.is_empty() {
        return Err(err(
            "source.identity",
            "name",
            "source name must not be empty".into(),
        ));
    }
    if source.provider.is_empty() {
        return Err(err(
            "source.identity",
            "provider",
            format!("source {name}: provider must not be empty"),
        ));
    }
    if source.model.is_empty() {
        return Err(err(
            "source.identity",
            "model",
            format!("source {name}: model must not be empty"),
        ));
    }
    let key_empty = source
        .api_key
        .as_ref()
        .map(|k| k.expose_secret().trim().is_empty());
    let key_required = kind != ScopeKind::Ocr && source.auth_style != AuthStyle::None;
    match key_empty {
        Some(true) => {
            return Err(err(
                "source.identity",
                "api_key",
                format!("source {name}: api_key is set but empty"),
            ));
        }
        None if key_required => {
            return Err(err(
                "source.identity",
                "api_key",
                format!("source {name}: api_key is required (or set auth_style to none)"),
            ));
        }
        _ => {}
    }
    if !is_http_url(&source.base_url) {
        return Err(err(
            "source.identity",
            "base_url",
            format!("source {name}: base_url must be an absolute http:// or https:// URL"),
        ));
    }

    // B2 gates.
    if source.est_tokens == Some(0) {
        return Err(err(
            "source.est_tokens",
            "est_tokens",
            format!("source {name}: est_tokens must be >= 1 (leave it unset for 1000)"),
        ));
    }
    if source.tpm > 0 && source.effective_est_tokens() > source.tpm {
        warnings.push(
            ConfigWarning::new(
                "source.est_exceeds_tpm",
                format!(
                    "source {name}: est_tokens ({}) exceeds tpm ({}); this source can never be admitted",
                    source.effective_est_tokens(),
                    source.tpm
                ),
            )
            .with_source(name),
        );
    }

    // B3 watchdog: both or neither, and 0 < inter_token < ttft < timeout_s. Each message says
    // which value breaks it, so the user knows which key to change.
    let watchdog = |field: &str, why: String| {
        err(
            "source.watchdog",
            field,
            format!(
                "source {name}: {why} (the watchdogs need 0 < inter_token_timeout_s < \
                 ttft_timeout_s < timeout_s, or neither set)"
            ),
        )
    };
    if !positive_finite(source.timeout_s) {
        return Err(err(
            "source.watchdog",
            "timeout_s",
            format!(
                "source {name}: timeout_s must be a finite number of seconds > 0 and at most 1.8e19"
            ),
        ));
    }
    match (source.ttft_timeout_s, source.inter_token_timeout_s) {
        (None, None) => {}
        (Some(_), None) => {
            return Err(watchdog(
                "ttft_timeout_s",
                "ttft_timeout_s is set but inter_token_timeout_s is not".to_owned(),
            ));
        }
        (None, Some(_)) => {
            return Err(watchdog(
                "inter_token_timeout_s",
                "inter_token_timeout_s is set but ttft_timeout_s is not".to_owned(),
            ));
        }
        (Some(ttft), Some(inter)) => {
            for (field, value) in [("inter_token_timeout_s", inter), ("ttft_timeout_s", ttft)] {
                if !positive_finite(value) {
                    return Err(watchdog(
                        field,
                        format!("{field} ({value}) is not a positive number of seconds"),
                    ));
                }
            }
            if inter >= ttft {
                return Err(watchdog(
                    "inter_token_timeout_s",
                    format!("inter_token_timeout_s ({inter}) is not below ttft_timeout_s ({ttft})"),
                ));
            }
            if ttft >= source.timeout_s {
                return Err(watchdog(
                    "ttft_timeout_s",
                    format!(
                        "ttft_timeout_s ({ttft}) is not below timeout_s ({})",
                        source.timeout_s
                    ),
                ));
            }
        }
    }

    // B4 stall threshold.
    if source.stall_threshold_ms == 0 {
        return Err(err(
            "source.stall_threshold",
            "stall_threshold_ms",
            "SourceConfig.stall_threshold_ms must be a positive integer".into(),
        ));
    }

    // B5 thinking (70 C-22): a contradictory ENABLE_THINKING / REASONING_EFFORT pair. The
    // capability check (C-27) and the raw-root conflict (C-31.3) need the client's provider
    // registry and run at client assembly (`crate::effort::check_source`).
    if kind == ScopeKind::Chat {
        // The message names the key suffixes; the origin is rewritten to the exact key by
        // each path (environment key, settings path, builder option).
        crate::effort::check_intent_pair(source, &|field| field.to_owned()).map_err(|mut e| {
            e.origin = source_field_origin(name, "reasoning_effort");
            e
        })?;
    }

    // B6 extra_body.
    if let Some(key) = LIBRARY_BODY_KEYS
        .iter()
        .find(|k| source.extra_body.contains_key(**k))
    {
        return Err(err(
            "source.extra_body",
            "extra_body",
            format!("source {name}: extra_body must not set the library-controlled key `{key}`"),
        ));
    }

    // Beyond the table (chosen): the environment domains of MAX_RESPONSE_BYTES and HEADERS.
    if source.max_response_bytes == 0 {
        return Err(err(
            "source.max_response_bytes",
            "max_response_bytes",
            format!("source {name}: max_response_bytes must be >= 1"),
        ));
    }
    for (header, value) in &source.headers {
        if !is_header_name(header) || is_reserved_header(header) {
            return Err(err(
                "source.headers",
                "headers",
                format!(
                    "source {name}: header `{header}` is not a valid extra header (the adapter sets authorization, api-key, content-type and x-request-id itself)"
                ),
            ));
        }
        if value.expose_secret().chars().any(char::is_control) {
            return Err(err(
                "source.headers",
                "headers",
                format!(
                    "source {name}: the value of header `{header}` contains a control character"
                ),
            ));
        }
    }
    Ok(warnings)
}

/// Issue 22: one `global.est_exceeds_tpm` warning per source whose token estimate is above the
/// scope's `GLOBAL__TPM` (`global_tpm` 0 = no gate): no call to it can ever be admitted, and
/// such calls fail at once with `quota_full` naming the limit.
pub fn global_tpm_warnings(sources: &[SourceConfig], global_tpm: u64) -> Vec<ConfigWarning> {
    sources
        .iter()
        .filter(|s| global_tpm > 0 && s.effective_est_tokens() > global_tpm)
        .map(|s| {
            ConfigWarning::new(
                "global.est_exceeds_tpm",
                format!(
                    "source {}: est_tokens ({}) exceeds the scope's global tpm ({global_tpm}); calls to this source can never be admitted (they fail at once with quota_full)",
                    s.name,
                    s.effective_est_tokens()
                ),
            )
            .with_source(&s.name)
        })
        .collect()
}
