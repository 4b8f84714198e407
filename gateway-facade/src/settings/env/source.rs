//! Stage A of one source (`{SCOPE}__{PROVIDER}__{N}__{FIELD}`): its fields in order, the API
//! key file, and `${NAME}` references in headers.
//!
//! Separate from the scope parse: a source's keys are read only here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gateway_core::config::{is_header_name, is_http_url, is_reserved_header};
use gateway_ports::ConfigError;
use gateway_ports::config::{DEFAULT_TIMEOUT_S, Secret, SourceConfig};
use gateway_ports::vocab::{AuthStyle, Effort, EffortFallback, MissingDone, ScopeKind};
use serde_json::Value;

use crate::settings::DEFAULT_OCR_MODEL;
use crate::settings::values::{
    boolean, choice, domain_error, int, json_object, parse_error, positive_float,
};

use super::{Reader, SourceKeys};

/// Largest `API_KEY_FILE` read, in bytes (64 KiB): a larger or endless file (`/dev/zero`) is a
/// `source.api_key_file` error instead of an unbounded read.
const MAX_API_KEY_FILE_BYTES: u64 = 64 * 1024;

/// Reads the key file: a regular file (a FIFO or device is refused before it is opened), at
/// most [`MAX_API_KEY_FILE_BYTES`], UTF-8.
fn read_key_file(path: &str) -> Result<String, String> {
    let bytes = gateway_ports::files::read_regular_file_capped(
        std::path::Path::new(path),
        MAX_API_KEY_FILE_BYTES,
    )
    .map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "is not valid UTF-8".to_owned())
}

pub(super) fn is_provider(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .split('_')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric()))
}
/// One source from its keys (in field order; then A8, A3).
pub(super) fn parse_source(
    r: &Reader<'_>,
    kind: ScopeKind,
    scope_up: &str,
    provider: &str,
    keys: &SourceKeys<'_>,
    scope_timeout_s: Option<f64>,
) -> Result<SourceConfig, ConfigError> {
    let get = |field: &str| keys.fields.get(field).copied();
    let key_of = |field: &str| {
        format!(
            "{scope_up}__{}__{}__{field}",
            keys.provider_spelling, keys.n
        )
    };
    let mut src = SourceConfig {
        name: format!("{provider}_{}", keys.n),
        provider: provider.to_owned(),
        ..SourceConfig::default()
    };
    if let Some((k, v)) = get("BASE_URL") {
        if !is_http_url(v) {
            return Err(parse_error(k, "an absolute http:// or https:// URL"));
        }
        src.base_url = v.trim_end_matches('/').to_owned();
    }
    if let Some((_, v)) = get("API_KEY") {
        src.api_key = Some(Secret::new(v.to_owned()));
    }
    if let Some((_, v)) = get("MODEL") {
        src.model = v.to_owned();
    }
    src.timeout_s = match get("TIMEOUT_S") {
        Some((k, v)) => positive_float(k, v)?,
        None => scope_timeout_s.unwrap_or(DEFAULT_TIMEOUT_S),
    };
    if let Some((k, v)) = get("TTFT_TIMEOUT_S") {
        src.ttft_timeout_s = Some(positive_float(k, v)?);
    }
    if let Some((k, v)) = get("INTER_TOKEN_TIMEOUT_S") {
        src.inter_token_timeout_s = Some(positive_float(k, v)?);
    }
    if let Some((k, v)) = get("MAX_CONCURRENCY") {
        src.max_concurrency = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("RPM") {
        src.rpm = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("TPM") {
        src.tpm = int(k, v, 0)?;
    }
    if let Some((k, v)) = get("EST_TOKENS") {
        src.est_tokens = Some(int(k, v, 1)?);
    }
    if let Some((k, v)) = get("REASONING_EFFORT") {
        let words: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
        src.reasoning_effort = Some(choice(k, v, Effort::from_wire, &words)?);
    }
    if let Some((k, v)) = get("ENABLE_THINKING") {
        src.enable_thinking = Some(boolean(k, v)?);
    }
    if let Some((k, v)) = get("EFFORT_FALLBACK") {
        src.effort_fallback = choice(k, v, EffortFallback::from_wire, &["error", "nearest"])?;
    }
    if let Some((k, v)) = get("MISSING_DONE") {
        src.missing_done = choice(k, v, MissingDone::from_wire, &["retry", "salvage"])?;
    }
    if let Some((k, v)) = get("TRUST_ENV") {
        src.trust_env = boolean(k, v)?;
    }
    if let Some((k, v)) = get("EXTRA_BODY") {
        src.extra_body = json_object(k, v)?;
    }
    if let Some((k, v)) = get("HEADERS") {
        for (name, value) in json_object(k, v)? {
            let headers_error = |why: String| {
                ConfigError::new("source.headers", k, format!("{k}: header `{name}` {why}"))
            };
            let Value::String(text) = value else {
                return Err(headers_error("must have a string value".into()));
            };
            if !is_header_name(&name) || is_reserved_header(&name) {
                return Err(headers_error(
                    "is not allowed (invalid name, or a header the adapter sets itself)".into(),
                ));
            }
            let resolved = resolve_refs(&text, &r.vals).map_err(headers_error)?;
            src.headers.insert(name, Secret::new(resolved));
        }
    }
    if let Some((k, v)) = get("QUERY") {
        for (name, value) in json_object(k, v)? {
            let Value::String(text) = value else {
                return Err(domain_error(
                    k,
                    &format!("a JSON object of strings (`{name}` is not a string)"),
                ));
            };
            src.query.insert(name, text);
        }
    }
    if let Some((k, v)) = get("AUTH_STYLE") {
        src.auth_style = choice(
            k,
            v,
            AuthStyle::from_wire,
            &["bearer", "api_key_header", "none"],
        )?;
    }
    if let Some((_, v)) = get("CA_FILE") {
        src.ca_file = Some(PathBuf::from(v));
    }
    if let Some((k, v)) = get("API_KEY_FILE") {
        if let Some((api_key, _)) = get("API_KEY") {
            return Err(ConfigError::new(
                "source.api_key_conflict",
                k,
                format!("{k} and {api_key} are exclusive: set one of them"),
            ));
        }
        let content = read_key_file(v).map_err(|reason| {
            ConfigError::new(
                "source.api_key_file",
                k,
                format!("{k}: the key file {reason}"),
            )
        })?;
        let key = content.trim_matches(|c: char| c.is_ascii_whitespace());
        if key.is_empty() {
            return Err(ConfigError::new(
                "source.api_key_file",
                k,
                format!("{k}: the key file is empty"),
            ));
        }
        src.api_key = Some(Secret::new(key.to_owned()));
    }
    if let Some((k, v)) = get("MAX_RESPONSE_BYTES") {
        src.max_response_bytes = int(k, v, 1)?;
    }
    if let Some((k, v)) = get("POOL_IDLE_TIMEOUT_S") {
        src.pool_idle_timeout_s = positive_float(k, v)?;
    }
    // A3 required fields (§3.4; 05 R-33: API_KEY_FILE counts, AUTH_STYLE=none needs no key).
    let missing = |field: &str| {
        let key = key_of(field);
        ConfigError::new(
            "source.missing_field",
            key.clone(),
            format!("{key} is required (source {})", src.name),
        )
    };
    if src.base_url.is_empty() {
        return Err(missing("BASE_URL"));
    }
    if src.api_key.is_none() && kind != ScopeKind::Ocr && src.auth_style != AuthStyle::None {
        return Err(missing("API_KEY"));
    }
    if src.model.is_empty() {
        if kind == ScopeKind::Ocr {
            src.model = DEFAULT_OCR_MODEL.to_owned();
        } else {
            return Err(missing("MODEL"));
        }
    }
    Ok(src)
}

/// Resolves every `${NAME}` in `text` from the same environment (`HEADERS`): `NAME` is
/// `[A-Za-z_][A-Za-z0-9_]*`; an unset or empty `NAME`, or an unterminated `${`, is an error.
/// A `$` not followed by `{` is kept literally.
pub(super) fn resolve_refs(text: &str, vals: &BTreeMap<&str, &str>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("has an unterminated `${` reference".into());
        };
        let name = &after[..end];
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            // The text between the braces is part of the header value: never echoed.
            return Err(
                "has an invalid `${NAME}` reference (NAME must match [A-Za-z_][A-Za-z0-9_]*)"
                    .into(),
            );
        }
        let Some(value) = vals.get(name) else {
            return Err(format!("references `${{{name}}}`, which is unset"));
        };
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
