//! Recorded requests with secrets redacted: the raw API key is never stored or
//! printed; `authorization` keeps `Bearer <redacted:XXXXXXXX>` (the first 8 hex digits of the
//! key's SHA-256) and only the key's digest is kept for [`RecordedRequest::auth_matches`].

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;

/// Header names whose values are secrets: `authorization`, `proxy-authorization`, `api-key`
/// (Azure) and `x-api-key`.
const SECRET_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
];

/// One request as the simulator received it.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The method, e.g. `POST`.
    pub method: String,
    /// The request target as received (path and query).
    pub path: String,
    /// Headers in wire order with lower-case names; secret values redacted.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `None` when empty or not JSON.
    pub body: Option<Value>,
    /// Body length in bytes.
    pub body_len: usize,
    key_sha256: Option<[u8; 32]>,
}

impl fmt::Debug for RecordedRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordedRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("headers", &self.headers)
            .field("body", &self.body)
            .field("body_len", &self.body_len)
            .finish_non_exhaustive()
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// `Bearer <redacted:XXXXXXXX>` for a bearer value, `<redacted:XXXXXXXX>` otherwise; also
/// returns the digest of the key (the token after `Bearer `, or the whole value).
fn redact(value: &str) -> (String, [u8; 32]) {
    let (scheme, key) = match value.split_once(' ') {
        Some((s, k)) if s.eq_ignore_ascii_case("bearer") => (Some(s), k.trim()),
        _ => (None, value.trim()),
    };
    let digest = sha256(key.as_bytes());
    let short = hex::encode(&digest[..4]);
    let shown = match scheme {
        Some(s) => format!("{s} <redacted:{short}>"),
        None => format!("<redacted:{short}>"),
    };
    (shown, digest)
}

impl RecordedRequest {
    pub(crate) fn new(
        method: &str,
        path: &str,
        raw_headers: &[(String, Vec<u8>)],
        body: Option<Value>,
        body_len: usize,
    ) -> Self {
        let mut key_sha256 = None;
        let headers = raw_headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value).into_owned();
                if SECRET_HEADERS.contains(&name.as_str()) {
                    let (shown, digest) = redact(&value);
                    if key_sha256.is_none() || name == "authorization" {
                        key_sha256 = Some(digest);
                    }
                    (name.clone(), shown)
                } else {
                    (name.clone(), value)
                }
            })
            .collect();
        Self {
            method: method.to_owned(),
            path: path.to_owned(),
            headers,
            body,
            body_len,
            key_sha256,
        }
    }

    /// The first value of a header (name compared case-insensitively); secrets come redacted.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the request carried this API key, as `Authorization: Bearer <key>` (or, without
    /// an `authorization` header, as `api-key` / `x-api-key`). Compares SHA-256 digests.
    pub fn auth_matches(&self, key: &str) -> bool {
        self.key_sha256 == Some(sha256(key.trim().as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_59_authorization_is_redacted_to_a_short_digest() {
        let r = RecordedRequest::new(
            "POST",
            "/v1/chat/completions",
            &[("authorization".to_owned(), b"Bearer sk-secret".to_vec())],
            None,
            0,
        );
        let expected = &hex::encode(Sha256::digest(b"sk-secret"))[..8];
        assert_eq!(
            r.header("Authorization"),
            Some(format!("Bearer <redacted:{expected}>").as_str())
        );
        assert!(r.auth_matches("sk-secret"));
        assert!(!r.auth_matches("sk-other"));
        assert!(!format!("{r:?}").contains("sk-secret"));
    }
}
