//! The chat call-boundary guards: request, `n`, `meta`, tenant and embedding-dimension checks,
//! each failing with `InvalidArgument` before the statistics boundary (no I/O, no row).
//!
//! Separate so the guards, pure functions shared by the chat and embedding clients, sit in one
//! place.

use gateway_core::cache::check_cache_options;
use gateway_ports::{ChatRequest, GatewayError, Meta, MetaValue, ResponseMode, StructuredSpec};

use super::options::{META_MAX_ENTRIES, META_MAX_STR_CHARS, TENANT_MAX_CHARS};

/// The chat call-boundary guards, in order. Each
/// failure is `InvalidArgument` naming the `ChatOptions` field.
pub(crate) fn check_chat(request: &ChatRequest) -> Result<(), GatewayError> {
    if request.response_mode == ResponseMode::OpenAi && request.structured.is_some() {
        return Err(GatewayError::invalid_argument(
            "ChatOptions::response_mode",
            "openai mode does not support structured output",
        ));
    }
    if let Some(spec) = &request.structured {
        check_structured(spec)?;
    }
    for key in ["model", "messages", "stream", "stream_options"] {
        if request.overlay.contains_key(key) {
            return Err(GatewayError::invalid_argument(
                "ChatOptions::overlay",
                format!("`{key}` is controlled by the library and must not be in the overlay"),
            ));
        }
    }
    check_dimensions(request.tenant_id.as_deref(), &request.meta, "ChatOptions")?;
    check_cache_options(request, "ChatOptions")?;
    // 70 C-31.1: a managed reasoning root in the overlay together with a request level.
    if request.reasoning_effort.is_some()
        && let Some(root) = gateway_core::effort::managed_root_in(
            &request.overlay,
            &gateway_core::thinking::ProviderProfile::plain(""),
        )
    {
        return Err(GatewayError::invalid_argument(
            "ChatOptions::overlay",
            format!(
                "`{root}` in the overlay cannot be combined with ChatOptions::reasoning_effort; \
                 use one of them"
            ),
        ));
    }
    Ok(())
}

/// steps 2–3: structured support is in this build (cargo feature `structured`) and the
/// spec's schema compiles with a valid name.
#[cfg(feature = "structured")]
fn check_structured(spec: &StructuredSpec) -> Result<(), GatewayError> {
    gateway_core::structured::check_spec(spec)
}

#[cfg(not(feature = "structured"))]
fn check_structured(_spec: &StructuredSpec) -> Result<(), GatewayError> {
    Err(GatewayError::invalid_argument(
        "ChatRequest::structured",
        "structured output not enabled: this build lacks the cargo feature `structured` of polygateway",
    ))
}

/// The effective `n` of a chat request must be 1 in both modes: the request
/// overlay's `n` when it has one, else each source's `extra_body` `n`. The text mode reads only
/// choice 0 and would pay for the others. Checked before any I/O; the error names where the
/// value came from.
pub(crate) fn check_n(
    request: &ChatRequest,
    sources: &[gateway_ports::SourceConfig],
) -> Result<(), GatewayError> {
    let is_one = |n: &serde_json::Value| n.as_i64() == Some(1);
    if let Some(n) = request.overlay.get("n") {
        if is_one(n) {
            return Ok(());
        }
        return Err(GatewayError::invalid_argument(
            "ChatOptions::overlay",
            format!(
                "n={n} is not supported: the gateway returns one choice; set n to 1 or remove it"
            ),
        ));
    }
    for source in sources {
        if let Some(n) = source.extra_body.get("n")
            && !is_one(n)
        {
            return Err(GatewayError::invalid_argument(
                format!("SourceConfig::extra_body ({})", source.name),
                format!(
                    "source {}'s extra_body sets n={n}; the gateway returns one choice: set n \
                     to 1 or remove it from the source's EXTRA_BODY",
                    source.name
                ),
            ));
        }
    }
    Ok(())
}

/// `^[a-z][a-z0-9_]{0,63}$`.
fn is_meta_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
}

/// Caller dimensions: `tenant_id` 1–128 characters without control
/// characters; `meta` at most 16 entries, keys `^[a-z][a-z0-9_]{0,63}$`, strings at most 1024
/// characters. Origins `{owner}::tenant_id` / `{owner}::meta`.
pub(crate) fn check_dimensions(
    tenant: Option<&str>,
    meta: &Meta,
    owner: &str,
) -> Result<(), GatewayError> {
    if let Some(tenant) = tenant {
        let chars = tenant.chars().count();
        if chars == 0 || chars > TENANT_MAX_CHARS || tenant.chars().any(char::is_control) {
            return Err(GatewayError::invalid_argument(
                format!("{owner}::tenant_id"),
                format!(
                    "tenant_id must be 1–{TENANT_MAX_CHARS} characters without control characters"
                ),
            ));
        }
    }
    let origin = || format!("{owner}::meta");
    if meta.len() > META_MAX_ENTRIES {
        return Err(GatewayError::invalid_argument(
            origin(),
            format!(
                "meta has {} entries; at most {META_MAX_ENTRIES} are allowed",
                meta.len()
            ),
        ));
    }
    for (key, value) in meta {
        if !is_meta_key(key) {
            return Err(GatewayError::invalid_argument(
                origin(),
                format!("meta key `{key}` must match ^[a-z][a-z0-9_]{{0,63}}$"),
            ));
        }
        if let MetaValue::Str(s) = value
            && s.chars().count() > META_MAX_STR_CHARS
        {
            return Err(GatewayError::invalid_argument(
                origin(),
                format!("meta value of `{key}` exceeds {META_MAX_STR_CHARS} characters"),
            ));
        }
    }
    Ok(())
}
