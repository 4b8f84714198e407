//! Reading the chunks of one stream in order, reusing the previous chunk's reading when only
//! its `content` string changed (issue 21: the per-frame JSON reading was the largest single
//! cost of a governed stream call).
//!
//! The content chunks of one completion stream are the same text but for the content string:
//! `id`, `object`, `created`, `model`, the choice's `index`, `finish_reason: null` and the
//! closing brackets repeat byte for byte. When a chunk starts with exactly the bytes that
//! preceded the previous chunk's content string and ends with exactly the bytes that followed
//! it, and what lies between holds no `"`, no `\` and no control character, the chunk is the
//! previous one with another plain string in that place. It is then valid JSON with the same
//! structure, and its reading is the previous reading with the content range moved, so it is
//! built without scanning the text again. Anything else is read in full
//! ([`ChunkJson::parse`]), and a full reading whose content string was borrowed becomes the
//! next template when that string is not empty (a reasoning chunk with `"content":""` and a
//! varying `reasoning_content` would never be matched again). A stream whose content chunks keep
//! missing the template (a provider that adds a varying field, such as random padding, to every
//! chunk) stops making templates after three misses with no hit between, so it pays at most
//! three template copies over the full reading.
//!
//! This is a reading, not a judgement: the result is the value [`ChunkJson::parse`] returns
//! for the same text (pinned by a proptest over chunk sequences in this module's tests).

use std::fmt;

use super::text_read::KeptFrame;
use super::transport::ChunkJson;

/// The bytes around the previous chunk's content string and that chunk's reading.
#[derive(Clone)]
struct Template {
    /// The text before the content string (through its opening quote).
    prefix: Box<str>,
    /// The text after the content string (from its closing quote).
    suffix: Box<str>,
    /// The reading of the chunk these bytes came from.
    frame: KeptFrame,
}

/// Checks the chunks of one stream, in order, as [`ChunkJson::parse`] does (same results),
/// reusing the reading of the previous chunk when only its content string differs (see the
/// module docs). One per stream; its template holds a copy of one chunk's bytes outside the
/// content string (≈ 150 bytes for a typical chunk; at most the framer's frame bound) and that
/// chunk's reading. `Debug` prints lengths only: chunk bytes are payload.
#[derive(Clone, Default)]
pub struct ChunkReader {
    template: Option<Template>,
    /// Content chunks that missed the template since the last hit (each but the last made a
    /// new one). At [`MAX_MISSES`] this stream's chunks differ outside the content string (a
    /// provider's random padding field), and every chunk is read in full without a template.
    misses: u8,
}

/// Consecutive content chunks that may each start a new template before the reader stops
/// making them for the stream: a stream whose chunks all differ elsewhere (OpenAI's
/// `obfuscation` padding after the choices) then costs at most this many template copies.
const MAX_MISSES: u8 = 3;

impl fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkReader")
            .field(
                "template_bytes",
                &self
                    .template
                    .as_ref()
                    .map(|t| t.prefix.len() + t.suffix.len()),
            )
            .field("misses", &self.misses)
            .finish()
    }
}

impl ChunkReader {
    /// A reader with no template yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks that `text` is exactly one JSON text and keeps it, like [`ChunkJson::parse`].
    /// Errors: the `serde_json` syntax error of a text that is not JSON.
    pub fn parse(&mut self, text: &str) -> Result<ChunkJson, serde_json::Error> {
        if self.given_up() {
            return ChunkJson::parse(text);
        }
        if let Some(chunk) = self.reuse(text) {
            self.misses = 0;
            return Ok(chunk);
        }
        let chunk = ChunkJson::parse(text)?;
        // A chunk without a borrowed content string (a role-only, finish or usage chunk)
        // leaves the template as it was: the content chunks after it still fit.
        let next = chunk.kept_frame().and_then(|frame| {
            let (start, end) = frame.content_range().filter(|(s, e)| e > s)?;
            Some(Template {
                prefix: text.get(..start)?.into(),
                suffix: text.get(end..)?.into(),
                frame: frame.clone(),
            })
        });
        if next.is_some() {
            if self.template.is_some() {
                self.misses += 1;
                if self.given_up() {
                    self.template = None;
                    return Ok(chunk);
                }
            }
            self.template = next;
        }
        Ok(chunk)
    }

    /// [`MAX_MISSES`] reached: no more templates for this stream.
    fn given_up(&self) -> bool {
        self.misses >= MAX_MISSES
    }

    /// The chunk read from the template, when `text` fits it.
    fn reuse(&self, text: &str) -> Option<ChunkJson> {
        let t = self.template.as_ref()?;
        let (p, s) = (t.prefix.len(), t.suffix.len());
        let bytes = text.as_bytes();
        // Long enough that prefix and suffix do not overlap, and both match.
        if bytes.len() < p + s
            || !bytes.starts_with(t.prefix.as_bytes())
            || !bytes.ends_with(t.suffix.as_bytes())
        {
            return None;
        }
        let new_end = bytes.len() - s;
        let middle = bytes.get(p..new_end)?;
        // A plain JSON string body: no closing quote, no escape, no control character.
        if middle.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20) {
            return None;
        }
        let frame = t.frame.with_content_end(new_end)?;
        Some(ChunkJson::with_reading(text, frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(content: &str) -> String {
        format!(
            r#"{{"id":"c-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{{"index":0,"delta":{{"content":"{content}"}},"finish_reason":null}}]}}"#
        )
    }

    #[test]
    fn r_56_a_chunk_that_differs_only_in_its_content_reuses_the_reading() {
        let mut reader = ChunkReader::new();
        let first = reader.parse(&frame("Hello")).unwrap();
        assert_eq!(first, ChunkJson::parse(&frame("Hello")).unwrap());
        assert!(reader.template.is_some());
        for content in [
            "",
            " world",
            "ünï ✓",
            "a much longer piece of content than before",
        ] {
            let text = frame(content);
            assert!(
                reader.reuse(&text).is_some(),
                "{content:?} fits the template"
            );
            let chunk = reader.parse(&text).unwrap();
            assert_eq!(
                chunk.kept_frame(),
                ChunkJson::parse(&text).unwrap().kept_frame()
            );
            let read = chunk.text_frame().unwrap();
            assert_eq!(
                read.choice().unwrap().delta.content.as_deref(),
                Some(content)
            );
            assert_eq!(read.id.as_deref(), Some("c-1"));
        }
    }

    #[test]
    fn s_25_a_chunk_with_a_quote_an_escape_or_a_control_character_is_read_in_full() {
        let mut reader = ChunkReader::new();
        reader.parse(&frame("Hello")).unwrap();
        for content in [r#"a\"b"#, r"a\nb", "a\u{1}b"] {
            let text = frame(content);
            assert!(reader.reuse(&text).is_none(), "{content:?}");
            assert_eq!(
                reader.parse(&text).ok().map(|c| c.kept_frame().cloned()),
                ChunkJson::parse(&text)
                    .ok()
                    .map(|c| c.kept_frame().cloned())
            );
        }
        // a chunk without content keeps the template
        reader
            .parse(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#)
            .unwrap();
        assert!(reader.reuse(&frame("again")).is_some());
        // a text that is not JSON is an error, as with ChunkJson::parse
        let broken = frame("x").replace("}]}", "}]");
        assert!(reader.parse(&broken).is_err());
    }

    /// A stream whose chunks differ after the content (a random padding field) stops making
    /// templates after a few chunks, and its chunks are still read exactly.
    #[test]
    fn r_56_a_stream_whose_chunks_differ_elsewhere_stops_making_templates() {
        let padded = |content: &str, pad: &str| {
            format!(
                r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":"{content}"}}}}],"obfuscation":"{pad}"}}"#
            )
        };
        let mut reader = ChunkReader::new();
        for (i, pad) in ["a", "bb", "ccc", "dddd", "e", "ff"].iter().enumerate() {
            let text = padded("x", pad);
            let chunk = reader.parse(&text).unwrap();
            assert_eq!(
                chunk.kept_frame(),
                ChunkJson::parse(&text).unwrap().kept_frame()
            );
            assert_eq!(
                reader.given_up(),
                i + 1 > usize::from(MAX_MISSES),
                "chunk {i}"
            );
        }
        assert!(reader.template.is_none());
        // a hit resets the count: content chunks that fit
        let mut reader = ChunkReader::new();
        for _ in 0..10 {
            reader.parse(&frame("y")).unwrap();
        }
        assert!(!reader.given_up());
        assert_eq!(reader.misses, 0);
        // a reasoning phase (empty content, varying reasoning) makes no template and counts no
        // miss, so the content phase after it still reuses readings
        let reasoning = |r: &str| {
            format!(
                r#"{{"id":"c","choices":[{{"index":0,"delta":{{"content":"","reasoning_content":"{r}"}}}}]}}"#
            )
        };
        let mut reader = ChunkReader::new();
        for r in ["a", "bb", "ccc", "dddd", "eeeee"] {
            reader.parse(&reasoning(r)).unwrap();
        }
        assert!(reader.template.is_none() && !reader.given_up());
        reader.parse(&frame("first")).unwrap();
        assert!(reader.reuse(&frame("second")).is_some());
        assert!(
            !format!("{reader:?}").contains("c-1"),
            "Debug prints no payload"
        );
    }

    /// The shapes of the property below: `{c}` is where the content goes, written into the
    /// text as is (so quotes, backslashes and control characters make other or broken texts).
    const SHAPES: &[&str] = &[
        r#"{"id":"c-1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":"{c}"},"finish_reason":null}]}"#,
        r#"{"id":"c-1","choices":[{"index":0,"delta":{"role":"assistant","content":"{c}"},"finish_reason":null}],"model":"m"}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"{c}","reasoning_content":"r"},"finish_reason":"stop"}],"id":"tail-id","model":"tail-model"}"#,
        r#"{"choices":[{"index":1,"delta":{"content":"x"}},{"index":0,"delta":{"content":"{c}"},"finish_reason":"len\u0067th"}],"usage":{"total_tokens":3}}"#,
        r#" {"id":"c-\n2","choices":[{"delta":{"content":"{c}"}}]} "#,
        r#"{"id":"c-1","choices":[{"index":0,"delta":{"content":"{c}","tool_calls":[]}}]}"#,
        r#"{"error":{"message":"{c}"}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"{c}"}}]"#,
    ];

    fn content() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        proptest::collection::vec(
            prop_oneof![
                6 => proptest::char::range('a', 'z').prop_map(String::from),
                2 => Just(" ".to_owned()),
                1 => Just("\"".to_owned()),
                1 => Just("\\".to_owned()),
                1 => Just("\\n".to_owned()),
                1 => Just("\\u00e9".to_owned()),
                1 => Just("\u{1}".to_owned()),
                1 => Just("\u{7f}".to_owned()),
                1 => Just("é✓😀".to_owned()),
                1 => Just("}]}".to_owned()),
            ],
            0..12,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        /// Over any sequence of chunks, the reader's result is `ChunkJson::parse`'s: the same
        /// error or success, the same text and the same kept reading (ranges included).
        #[test]
        fn r_56_s_25_the_reader_returns_what_a_full_reading_returns(
            chunks in proptest::collection::vec((0..SHAPES.len(), content()), 1..24)
        ) {
            let mut reader = ChunkReader::new();
            for (shape, content) in chunks {
                let text = SHAPES[shape].replace("{c}", &content);
                let fast = reader.parse(&text);
                let full = ChunkJson::parse(&text);
                match (fast, full) {
                    (Ok(a), Ok(b)) => {
                        proptest::prop_assert_eq!(a.as_str(), b.as_str());
                        proptest::prop_assert_eq!(a.kept_frame(), b.kept_frame(), "{}", text);
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => proptest::prop_assert!(false, "{text}: {a:?} vs {b:?}"),
                }
            }
        }
    }
}
