//! Reading a MonkeyOCR response: bodies under a byte cap, the headers kept, an HTTP failure's
//! wire form, and the result location of an envelope.
//!
//! Separate from the requests: pure response handling, no client state.

use bytes::Bytes;
use gateway_ports::{WireBody, WireFailure};
use reqwest::Response;

use crate::MAX_ERROR_BODY_BYTES;

/// What one read of a body produced.
pub(crate) enum Read {
    /// The whole body.
    Whole(Bytes),
    /// The body exceeds the cap (the connection is dropped, not pooled).
    Over,
}

/// Reads `response` up to `cap` bytes, never more than `cap + 1` into memory.
pub(crate) async fn read_capped(
    mut response: Response,
    cap: usize,
) -> Result<Read, reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(cap).unwrap_or(u64::MAX))
    {
        return Ok(Read::Over);
    }
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if out.len().saturating_add(chunk.len()) > cap {
            return Ok(Read::Over);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Read::Whole(Bytes::from(out)))
}

fn header_pairs(response: &Response) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// A non-200 answer as `WireFailure::Http` (body retained up to 1 MiB, truncated silently).
pub(crate) async fn http_failure(mut response: Response) -> WireFailure {
    let status = response.status().as_u16();
    let headers = header_pairs(&response);
    let mut kept = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if kept.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    WireFailure::Http {
        status,
        headers,
        body: gateway_ports::body_text(&kept).into_owned(),
    }
}

/// A 200 JSON answer read whole within `cap`.
pub(crate) async fn read_body(response: Response, cap: usize) -> Result<WireBody, WireFailure> {
    let headers = header_pairs(&response);
    match read_capped(response, cap).await {
        Ok(Read::Whole(bytes)) => Ok(WireBody { headers, bytes }),
        Ok(Read::Over) => Err(WireFailure::FrameTooLarge { limit: cap }),
        Err(e) => Err(WireFailure::ReadError(crate::fault::network_fault(
            &e,
            crate::fault::Phase::Body,
        ))),
    }
}

/// The result location named by a parse envelope: a non-empty string `download_url`.
/// Nothing else of the envelope is read.
pub fn result_location(envelope: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(envelope).ok()?;
    value
        .get("download_url")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
