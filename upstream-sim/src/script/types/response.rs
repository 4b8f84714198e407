//! One scripted response ([`Response`]): its status, [`Headers`], framing and which answer it
//! carries.
//!
//! Separate from the script as a whole: these types say what one answer is.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize, de};

use super::Match;
use super::completion::{Completion, Embedding};
use super::framing::{End, Framing, Head, RawChunk, default_status};
use super::ocr::Ocr;

/// One scripted response (spec 15 "Response").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// Only requests matching this filter get this response; absent matches every request.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<Match>,
    /// HTTP status code; default 200.
    #[serde(default = "default_status")]
    pub status: u16,
    /// Response headers in wire order (duplicates kept); absent: a content type chosen from
    /// the body kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Headers>,
    /// How the body is delimited on the wire; default `chunked`.
    #[serde(default)]
    pub framing: Framing,
    /// Whether the status line is ever sent; default `send`.
    #[serde(default)]
    pub head: Head,
    /// Delay before the status line, in milliseconds.
    #[serde(default)]
    pub head_delay_ms: u64,
    /// A raw body: one write per entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<RawChunk>>,
    /// A generated chat completion (SSE when the request streams, else one JSON body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<Completion>,
    /// A generated embeddings response, one vector per input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Embedding>,
    /// A MonkeyOCR answer (`/ocr/text`, `/parse` and its result archive; see [`Ocr`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocr: Option<Ocr>,
    /// What happens after the last write; default `eof`.
    #[serde(default)]
    pub end: End,
}
impl Default for Response {
    fn default() -> Self {
        Self {
            matcher: None,
            status: 200,
            headers: None,
            framing: Framing::default(),
            head: Head::default(),
            head_delay_ms: 0,
            chunks: None,
            completion: None,
            embedding: None,
            ocr: None,
            end: End::default(),
        }
    }
}

impl Response {
    /// A 200 response generating this completion.
    pub fn completion(completion: Completion) -> Self {
        Self {
            completion: Some(completion),
            ..Self::default()
        }
    }

    /// A response with this status and raw body chunks.
    pub fn raw(status: u16, chunks: Vec<RawChunk>) -> Self {
        Self {
            status,
            chunks: Some(chunks),
            ..Self::default()
        }
    }

    /// A 200 embeddings response with vectors of `dim` numbers.
    pub fn embedding(dim: u32) -> Self {
        Self {
            embedding: Some(Embedding { dim }),
            ..Self::default()
        }
    }
}

/// Response headers as ordered `(name, value)` pairs. JSON accepts an object (`{name: value}`,
/// in document order) or a list of pairs (`[[name, value], ...]`, which keeps duplicates);
/// it is always written as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// Builds headers from pairs, keeping order and duplicates.
    pub fn from_pairs<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(n, v)| (n.into(), v.into()))
                .collect(),
        )
    }

    /// Whether a header of this name (ASCII case-insensitive) is present.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

impl Serialize for Headers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (n, v) in &self.0 {
            seq.serialize_element(&[n, v])?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeadersVisitor;
        impl<'de> Visitor<'de> for HeadersVisitor {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object {name: value} or a list of [name, value] pairs")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((n, v)) = map.next_entry::<String, String>()? {
                    out.push((n, v));
                }
                Ok(Headers(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Headers, A::Error> {
                let mut out = Vec::new();
                while let Some((n, v)) = seq.next_element::<(String, String)>()? {
                    out.push((n, v));
                }
                Ok(Headers(out))
            }
        }
        deserializer.deserialize_any(HeadersVisitor)
    }
}
