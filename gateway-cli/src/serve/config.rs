//! `pgw serve` configuration: listen address, scopes, aliases, caller keys, per-key limits and
//! the body limit, all read from the same environment map the library reads (`.env`, the
//! process environment, `--set`).
//!
//! Keys (every one optional except the caller keys):
//! - `PGW_SERVE_LISTEN` — `host:port` (default `127.0.0.1:8080`; `--listen` wins).
//! - `PGW_SERVE_CHAT_SCOPES` — comma-separated chat scopes (default `LLM`).
//! - `PGW_SERVE_EMBED_SCOPES` — comma-separated embedding scopes (default none).
//! - `PGW_SERVE_ALIASES` — `model=scope,…`: extra `model` names mapped to a scope.
//! - `PGW_SERVE_KEYS` — `token=tenant,…` and/or `PGW_SERVE_KEYS_FILE` — one `token=tenant` a
//!   line (`#` comments). Tokens are secrets: never logged, never echoed in an error.
//! - `PGW_SERVE_KEY_RPM`, `PGW_SERVE_KEY_MAX_CONCURRENCY` — per caller key (0 = unlimited).
//! - `PGW_SERVE_MAX_BODY_BYTES` — largest request body (default 4 MiB).
//! - `PGW_SERVE_DRAIN_S` — how long shutdown waits for in-flight calls (default 30).
//! - `PGW_SERVE_CLIENT_TIMEOUT_S` — how long a client may take to send a request's headers, or
//!   pause between two pieces of its body, and how long an idle keep-alive connection stays
//!   open (default 30).
//! - `PGW_SERVE_UPSTREAM_STREAM` — `always` (default: the upstream call always streams, so the
//!   first-token watchdog and hedge work for non-stream clients too) or `client` (the upstream
//!   call streams only when the client asked for a stream; lower latency for non-stream calls).
//! - `PGW_SERVE_WORKERS` — runtime threads: `0` (default: the process runtime, one worker per
//!   core or `TOKIO_WORKER_THREADS`), `1` (one thread runs everything, so no wake-up crosses
//!   threads: fewer syscalls, but at most one core), `N` ≥ 2 (a multi-thread runtime of N
//!   workers).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use polygateway::{ConfigError, EnvMap, Secret, is_scope_name};

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default largest request body, in bytes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default drain time on shutdown, in seconds.
pub const DEFAULT_DRAIN_S: f64 = 30.0;
/// Default `PGW_SERVE_CLIENT_TIMEOUT_S`, in seconds (hyper's own header read timeout).
pub const DEFAULT_CLIENT_TIMEOUT_S: f64 = 30.0;
/// Largest `PGW_SERVE_CLIENT_TIMEOUT_S`: one day.
const MAX_CLIENT_TIMEOUT: Duration = Duration::from_secs(86_400);
/// Longest tenant label, in characters (the library's `tenant_id` bound).
const TENANT_MAX_CHARS: usize = 128;

/// One caller key: its bearer token (secret) and the tenant it maps to.
#[derive(Debug, Clone)]
pub struct CallerKey {
    /// The bearer token (redacted in `Debug`).
    pub token: Secret<String>,
    /// Tenant label: telemetry `tenant_id` and the cache namespace of its calls.
    pub tenant: String,
    /// Internal limiter bucket name (`key<n>`); never the token.
    pub bucket: String,
}

/// The validated server configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Chat scopes (upper case as configured).
    pub chat_scopes: Vec<String>,
    /// Embedding scopes.
    pub embed_scopes: Vec<String>,
    /// Alias (lower case) → scope (upper case).
    pub aliases: BTreeMap<String, String>,
    /// Caller keys.
    pub keys: Vec<CallerKey>,
    /// Requests per minute per caller key (0 = unlimited).
    pub key_rpm: u32,
    /// Concurrent requests per caller key (0 = unlimited).
    pub key_max_concurrency: u32,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Shutdown drain bound.
    pub drain: Duration,
    /// A client's time to send a request's headers or the next piece of its body, and an idle
    /// keep-alive connection's lifetime.
    pub client_timeout: Duration,
    /// `true` (default): the upstream call always streams; `false`: only when the client
    /// streams.
    pub upstream_always_streams: bool,
    /// Runtime threads (`PGW_SERVE_WORKERS`): 1 = a current-thread runtime, N ≥ 2 = a
    /// multi-thread runtime of N workers, 0 = the process runtime.
    pub workers: usize,
}

/// Default `PGW_SERVE_WORKERS`: the process runtime (docs/benchmarks.md: one thread saves the
/// cross-thread wake-ups but, on a loaded 2-core machine, gets too little CPU at 1000 rps).
pub const DEFAULT_WORKERS: usize = 0;
/// Largest `PGW_SERVE_WORKERS`.
const MAX_WORKERS: usize = 1024;

fn err(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new("serve.invalid", key, message.into())
}

fn get<'a>(map: &'a EnvMap, key: &str) -> Option<&'a str> {
    map.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
}

fn scopes(map: &EnvMap, key: &str, default: &[&str]) -> Result<Vec<String>, ConfigError> {
    let list: Vec<String> = match get(map, key) {
        Some(v) => v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        None => default.iter().map(|s| (*s).to_owned()).collect(),
    };
    for s in &list {
        if !is_scope_name(s) {
            return Err(err(
                key,
                format!(
                    "`{s}` is not a scope name (letters, digits and underscores, starting with a letter)"
                ),
            ));
        }
    }
    Ok(list.into_iter().map(|s| s.to_ascii_uppercase()).collect())
}

fn number<T: std::str::FromStr>(map: &EnvMap, key: &str, default: T) -> Result<T, ConfigError> {
    match get(map, key) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| err(key, format!("`{v}` is not a valid non-negative number"))),
    }
}

/// Checks a tenant label: 1–128 characters, no control characters, no `=`/`,`.
fn check_tenant(key: &str, what: &str, tenant: &str) -> Result<(), ConfigError> {
    let n = tenant.chars().count();
    if n == 0 || n > TENANT_MAX_CHARS || tenant.chars().any(char::is_control) {
        return Err(err(
            key,
            format!(
                "{what}: the tenant must be 1 to {TENANT_MAX_CHARS} characters without control characters"
            ),
        ));
    }
    Ok(())
}

/// Parses `token=tenant` entries; `what(i)` names an entry without its token.
fn parse_keys<'a>(
    key: &str,
    entries: impl Iterator<Item = (String, &'a str)>,
    out: &mut Vec<CallerKey>,
) -> Result<(), ConfigError> {
    for (what, entry) in entries {
        let Some((token, tenant)) = entry.split_once('=') else {
            return Err(err(key, format!("{what} is not `token=tenant`")));
        };
        let (token, tenant) = (token.trim(), tenant.trim());
        if token.len() < 8 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err(
                key,
                format!("{what}: the token must be at least 8 characters without spaces"),
            ));
        }
        check_tenant(key, &what, tenant)?;
        if out
            .iter()
            .any(|k| k.token.expose_secret().as_str() == token)
        {
            return Err(err(key, format!("{what}: this token is listed twice")));
        }
        let bucket = format!("key{}", out.len() + 1);
        out.push(CallerKey {
            token: Secret::new(token.to_owned()),
            tenant: tenant.to_owned(),
            bucket,
        });
    }
    Ok(())
}

impl ServeConfig {
    /// Reads the configuration from `map`; `listen` (the flag) wins over `PGW_SERVE_LISTEN`.
    ///
    /// Errors: a `ConfigError` naming the key (never a token).
    pub fn from_map(map: &EnvMap, listen: Option<&str>) -> Result<Self, ConfigError> {
        let (listen_key, listen_value) = match listen {
            Some(l) => ("--listen", l.to_owned()),
            None => (
                "PGW_SERVE_LISTEN",
                get(map, "PGW_SERVE_LISTEN")
                    .unwrap_or(DEFAULT_LISTEN)
                    .to_owned(),
            ),
        };
        let listen: SocketAddr = listen_value.parse().map_err(|_| {
            err(
                listen_key,
                format!("`{listen_value}` is not a socket address such as 127.0.0.1:8080"),
            )
        })?;
        let chat_scopes = scopes(map, "PGW_SERVE_CHAT_SCOPES", &["LLM"])?;
        let embed_scopes = scopes(map, "PGW_SERVE_EMBED_SCOPES", &[])?;
        if chat_scopes.is_empty() && embed_scopes.is_empty() {
            return Err(err(
                "PGW_SERVE_CHAT_SCOPES",
                "no scope to serve: set PGW_SERVE_CHAT_SCOPES or PGW_SERVE_EMBED_SCOPES",
            ));
        }
        let all: Vec<&String> = chat_scopes.iter().chain(&embed_scopes).collect();
        for (i, s) in all.iter().enumerate() {
            if all[..i].contains(s) {
                return Err(err(
                    "PGW_SERVE_EMBED_SCOPES",
                    format!("scope `{s}` is listed twice"),
                ));
            }
        }
        let mut aliases = BTreeMap::new();
        if let Some(v) = get(map, "PGW_SERVE_ALIASES") {
            for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let Some((alias, scope)) = entry.split_once('=') else {
                    return Err(err(
                        "PGW_SERVE_ALIASES",
                        format!("`{entry}` is not `model=scope`"),
                    ));
                };
                let (alias, scope) = (
                    alias.trim().to_ascii_lowercase(),
                    scope.trim().to_ascii_uppercase(),
                );
                if !all.iter().any(|s| **s == scope) {
                    return Err(err(
                        "PGW_SERVE_ALIASES",
                        format!(
                            "alias `{alias}` names scope `{scope}`, which is not served (PGW_SERVE_CHAT_SCOPES / PGW_SERVE_EMBED_SCOPES)"
                        ),
                    ));
                }
                if alias.is_empty() || all.iter().any(|s| s.to_ascii_lowercase() == alias) {
                    return Err(err(
                        "PGW_SERVE_ALIASES",
                        format!("alias `{alias}` is empty or already a scope name"),
                    ));
                }
                aliases.insert(alias, scope);
            }
        }
        let mut keys = Vec::new();
        if let Some(v) = get(map, "PGW_SERVE_KEYS") {
            parse_keys(
                "PGW_SERVE_KEYS",
                v.split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .enumerate()
                    .map(|(i, e)| (format!("entry {}", i + 1), e)),
                &mut keys,
            )?;
        }
        if let Some(path) = get(map, "PGW_SERVE_KEYS_FILE") {
            let text = std::fs::read_to_string(path).map_err(|e| {
                err(
                    "PGW_SERVE_KEYS_FILE",
                    format!("cannot read `{path}`: {}", e.kind()),
                )
            })?;
            parse_keys(
                "PGW_SERVE_KEYS_FILE",
                text.lines()
                    .enumerate()
                    .map(|(i, l)| (i, l.trim()))
                    .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
                    .map(|(i, l)| (format!("line {}", i + 1), l)),
                &mut keys,
            )?;
        }
        if keys.is_empty() {
            return Err(err(
                "PGW_SERVE_KEYS",
                "no caller key: set PGW_SERVE_KEYS=token=tenant,… or PGW_SERVE_KEYS_FILE",
            ));
        }
        let drain_s: f64 = number(map, "PGW_SERVE_DRAIN_S", DEFAULT_DRAIN_S)?;
        let drain = Duration::try_from_secs_f64(drain_s).map_err(|_| {
            err(
                "PGW_SERVE_DRAIN_S",
                "must be a non-negative number of seconds",
            )
        })?;
        let client_timeout_s: f64 =
            number(map, "PGW_SERVE_CLIENT_TIMEOUT_S", DEFAULT_CLIENT_TIMEOUT_S)?;
        // At most a day: hyper adds it to `Instant::now()`, which a huge value overflows.
        let client_timeout = Duration::try_from_secs_f64(client_timeout_s)
            .ok()
            .filter(|d| !d.is_zero() && *d <= MAX_CLIENT_TIMEOUT)
            .ok_or_else(|| {
                err(
                    "PGW_SERVE_CLIENT_TIMEOUT_S",
                    "must be a positive number of seconds, at most 86400 (one day)",
                )
            })?;
        let max_body_bytes = number(map, "PGW_SERVE_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)?;
        if max_body_bytes == 0 {
            return Err(err("PGW_SERVE_MAX_BODY_BYTES", "must be at least 1"));
        }
        let upstream_always_streams = match get(map, "PGW_SERVE_UPSTREAM_STREAM") {
            None => true,
            Some(v) if v.eq_ignore_ascii_case("always") => true,
            Some(v) if v.eq_ignore_ascii_case("client") => false,
            Some(v) => {
                return Err(err(
                    "PGW_SERVE_UPSTREAM_STREAM",
                    format!("`{v}` is not `always` or `client`"),
                ));
            }
        };
        let workers = number(map, "PGW_SERVE_WORKERS", DEFAULT_WORKERS)?;
        if workers > MAX_WORKERS {
            return Err(err(
                "PGW_SERVE_WORKERS",
                format!("must be at most {MAX_WORKERS} (0 = one per core)"),
            ));
        }
        Ok(Self {
            upstream_always_streams,
            workers,
            listen,
            chat_scopes,
            embed_scopes,
            aliases,
            keys,
            key_rpm: number(map, "PGW_SERVE_KEY_RPM", 0)?,
            key_max_concurrency: number(map, "PGW_SERVE_KEY_MAX_CONCURRENCY", 0)?,
            max_body_bytes,
            drain,
            client_timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, &str)]) -> EnvMap {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn d33_keys_parse_and_errors_never_echo_a_token() {
        let m = map(&[("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme, tok-bbbbbbbb=beta")]);
        let c = ServeConfig::from_map(&m, None).unwrap();
        assert_eq!(c.keys.len(), 2);
        assert_eq!(c.keys[1].tenant, "beta");
        assert!(!format!("{c:?}").contains("tok-aaaaaaaa"));
        let m = map(&[("PGW_SERVE_KEYS", "tok-secret-zz")]);
        let e = ServeConfig::from_map(&m, None).unwrap_err();
        assert_eq!(e.origin, "PGW_SERVE_KEYS");
        assert!(!e.message.contains("tok-secret-zz"), "{}", e.message);
        let m = map(&[("PGW_SERVE_KEYS", "tok-secret-zz=a,tok-secret-zz=b")]);
        let e = ServeConfig::from_map(&m, None).unwrap_err();
        assert!(!e.message.contains("tok-secret-zz"), "{}", e.message);
    }

    #[test]
    fn d33_no_keys_is_refused_and_aliases_must_name_a_served_scope() {
        let e = ServeConfig::from_map(&map(&[]), None).unwrap_err();
        assert_eq!(e.origin, "PGW_SERVE_KEYS");
        let m = map(&[
            ("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme"),
            ("PGW_SERVE_ALIASES", "gpt-4o=OTHER"),
        ]);
        let e = ServeConfig::from_map(&m, None).unwrap_err();
        assert_eq!(e.origin, "PGW_SERVE_ALIASES");
        let m = map(&[
            ("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme"),
            ("PGW_SERVE_ALIASES", "GPT-4o=llm"),
            ("PGW_SERVE_EMBED_SCOPES", "embed"),
        ]);
        let c = ServeConfig::from_map(&m, Some("127.0.0.1:0")).unwrap();
        assert_eq!(c.aliases["gpt-4o"], "LLM");
        assert_eq!(c.embed_scopes, vec!["EMBED".to_owned()]);
    }

    #[test]
    fn d33_client_timeout_is_positive_and_at_most_a_day() {
        let keys = ("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme");
        let c = ServeConfig::from_map(&map(&[keys]), None).unwrap();
        assert_eq!(c.client_timeout, Duration::from_secs(30));
        let m = map(&[keys, ("PGW_SERVE_CLIENT_TIMEOUT_S", "0.5")]);
        let c = ServeConfig::from_map(&m, None).unwrap();
        assert_eq!(c.client_timeout, Duration::from_millis(500));
        // A value hyper would overflow `Instant::now()` with is refused, naming the key.
        for bad in ["0", "-1", "1e19", "86401", "NaN"] {
            let m = map(&[keys, ("PGW_SERVE_CLIENT_TIMEOUT_S", bad)]);
            let e = ServeConfig::from_map(&m, None).unwrap_err();
            assert_eq!(e.origin, "PGW_SERVE_CLIENT_TIMEOUT_S", "{bad}");
        }
    }

    #[test]
    fn d33_upstream_stream_mode_is_always_or_client() {
        let keys = ("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme");
        let c = ServeConfig::from_map(&map(&[keys]), None).unwrap();
        assert!(c.upstream_always_streams);
        let m = map(&[keys, ("PGW_SERVE_UPSTREAM_STREAM", "Client")]);
        assert!(
            !ServeConfig::from_map(&m, None)
                .unwrap()
                .upstream_always_streams
        );
        let m = map(&[keys, ("PGW_SERVE_UPSTREAM_STREAM", "never")]);
        let e = ServeConfig::from_map(&m, None).unwrap_err();
        assert_eq!(e.origin, "PGW_SERVE_UPSTREAM_STREAM");
        assert!(e.message.contains("never"), "{}", e.message);
    }

    #[test]
    fn d33_workers_default_to_the_process_runtime_and_are_bounded() {
        let keys = ("PGW_SERVE_KEYS", "tok-aaaaaaaa=acme");
        assert_eq!(
            ServeConfig::from_map(&map(&[keys]), None).unwrap().workers,
            0
        );
        let m = map(&[keys, ("PGW_SERVE_WORKERS", "1")]);
        assert_eq!(ServeConfig::from_map(&m, None).unwrap().workers, 1);
        for bad in ["-1", "two", "100000"] {
            let m = map(&[keys, ("PGW_SERVE_WORKERS", bad)]);
            let e = ServeConfig::from_map(&m, None).unwrap_err();
            assert_eq!(e.origin, "PGW_SERVE_WORKERS", "{bad}");
        }
    }
}
