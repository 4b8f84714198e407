//! HTTP/1.1 response encoding of a [`Plan`]: the status line and headers, chunked
//! body chunks and the final chunk. Pure byte building, so the server and any in-memory wire that
//! wants raw HTTP bytes encode identically.

use super::render::Plan;
use super::types::Framing;

/// The final chunk of a chunked body: `0\r\n\r\n`.
pub const CHUNKED_TERMINATOR: &[u8] = b"0\r\n\r\n";

/// Appends `data` as one HTTP/1.1 chunk (`<hex len>\r\n<data>\r\n`) to `out`. Empty data appends
/// nothing (an empty chunk would end the body).
pub fn encode_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The standard reason phrase of a status, or `""` for codes without one (e.g. Cloudflare's 520,
/// whose status line is `HTTP/1.1 520 `).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

impl Plan {
    /// Whether this status never carries a body (1xx, 204, 304): no framing header, no writes.
    pub fn bodyless(&self) -> bool {
        self.status < 200 || self.status == 204 || self.status == 304
    }

    /// The headers as sent on the wire: the plan's headers, then the framing header
    /// (`transfer-encoding: chunked`, `content-length: N` or `connection: close`) unless the
    /// script already sets a header of that name or the status is bodyless.
    pub fn wire_headers(&self) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        if let Some((name, value)) = self.framing_header() {
            headers.push((name.to_owned(), value));
        }
        headers
    }

    fn framing_header(&self) -> Option<(&'static str, String)> {
        if self.bodyless() {
            return None;
        }
        let (name, value) = match self.framing {
            Framing::Chunked => ("transfer-encoding", "chunked".to_owned()),
            Framing::ContentLength => ("content-length", self.body_len().to_string()),
            Framing::Close => ("connection", "close".to_owned()),
        };
        let present = self
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name));
        (!present).then_some((name, value))
    }

    /// Total body length in bytes (the sum of the writes).
    pub fn body_len(&self) -> usize {
        self.writes.iter().map(|w| w.bytes.len()).sum()
    }

    /// Appends the status line, the wire headers and the blank line to `out`.
    pub fn encode_head(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(
            format!(
                "HTTP/1.1 {} {}\r\n",
                self.status,
                reason_phrase(self.status)
            )
            .as_bytes(),
        );
        for (n, v) in &self.headers {
            push_header(out, n, v);
        }
        if let Some((n, v)) = self.framing_header() {
            push_header(out, n, &v);
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Appends write `data` as it appears on the wire under this plan's framing.
    pub fn encode_write(&self, out: &mut Vec<u8>, data: &[u8]) {
        match self.framing {
            Framing::Chunked => encode_chunk(out, data),
            Framing::ContentLength | Framing::Close => out.extend_from_slice(data),
        }
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}
