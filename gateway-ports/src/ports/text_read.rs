//! The fields of the common chat chunk and body shapes, read straight from the JSON text
//! (issue 21: read during the transport's JSON check, so a frame is scanned once).
//!
//! Parsing every SSE frame into a `serde_json::Value` (a map per object, a hash per key) was a
//! third of the stream overhead of a governed call. Text mode needs only a handful of fields, so
//! [`TextFrame::read`] walks the text once with borrowing visitors and keeps just those.
//! [`crate::ChunkJson::parse`] runs it as its JSON check and keeps the result; the core decides
//! what the fields mean.
//!
//! It reads, it does not judge: it accepts only shapes on which the core's `Value` reading
//! cannot fail or diverge, and returns `None` for everything else — an `error` key, a duplicate key it reads, a field of an
//! unexpected type, a delta key other than `role`, `content`,
//! `reasoning_content` and `reasoning` (tool calls included) — so the caller falls back to the
//! `Value` reading. The equivalence is pinned by a proptest (gateway-core
//! `accumulate_fast_props.rs`).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The top-level fields text mode reads from a chunk or a body; `C` reads
/// `choices`.
#[derive(Debug)]
pub struct Envelope<'a, C> {
    /// `id`: a string, or `None` when absent or `null`.
    pub id: Option<Cow<'a, str>>,
    /// `model`: a string, or `None` when absent or `null`.
    pub model: Option<Cow<'a, str>>,
    /// `choices`, or `None` when absent or `null`.
    pub choices: Option<C>,
    /// `usage`: an object, or `None` when absent or `null`.
    pub usage: Option<Map<String, Value>>,
}

/// One streamed chunk: `choices` keeps the first selectable choice.
pub type TextFrame<'a> = Envelope<'a, ChoicePick<'a>>;

/// The text fields of a delta (stream) or a message (body), each `null` → `None` or a string.
#[derive(Debug, Default)]
pub struct Fragments<'a> {
    /// `content`.
    pub content: Option<Cow<'a, str>>,
    /// `reasoning_content`.
    pub reasoning_content: Option<Cow<'a, str>>,
    /// `reasoning`.
    pub reasoning: Option<Cow<'a, str>>,
}

/// The fields text mode reads from one streamed choice.
#[derive(Debug, Default)]
pub struct TextChoice<'a> {
    /// `index` is absent, `null` or the integer 0 (text mode).
    pub selectable: bool,
    /// `delta`; empty when absent or `null`.
    pub delta: Fragments<'a>,
    /// `finish_reason`, when a string.
    pub finish_reason: Option<Cow<'a, str>>,
}

/// A non-stream body in text mode: `choices[0]` only.
#[derive(Debug)]
pub struct TextBody<'a> {
    /// `id`, `model`, `usage`.
    pub envelope: Envelope<'a, FirstChoice<'a>>,
    /// `choices[0].message`; empty when absent or `null`.
    pub message: Fragments<'a>,
    /// `choices[0].finish_reason`, when a string.
    pub finish_reason: Option<Cow<'a, str>>,
}

impl<'a> TextFrame<'a> {
    /// Reads one chunk `text` (already checked as JSON by the transport), or `None` when its
    /// shape is outside what this reader covers (see the module docs).
    pub fn read(text: &'a str) -> Option<Self> {
        read_envelope(text)
    }

    /// The selected choice, if any.
    pub fn choice(&self) -> Option<&TextChoice<'a>> {
        self.choices.as_ref().and_then(|pick| pick.0.as_ref())
    }
}

impl<'a> TextBody<'a> {
    /// Reads a whole body `text`, or `None` when it is not JSON or its shape is outside what
    /// this reader covers: besides the chunk rules, `choices` must be a non-empty array whose
    /// first element is an object, `message` `null` or an object.
    pub fn read(text: &'a str) -> Option<Self> {
        let mut envelope: Envelope<'a, FirstChoice<'a>> = read_envelope(text)?;
        let first = envelope.choices.take()?;
        Some(TextBody {
            envelope,
            message: first.message,
            finish_reason: first.finish_reason,
        })
    }
}

fn read_envelope<'a, C: Deserialize<'a>>(text: &'a str) -> Option<Envelope<'a, C>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let envelope = de.deserialize_map(EnvelopeVisitor(PhantomData)).ok()?;
    de.end().ok()?;
    Some(envelope)
}

/// A string, borrowed from the text when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Reads an optional string value (`null` → `None`; any other type fails the read).
fn opt_text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Option<Text<'de>>>()?.map(|t| t.0))
}

/// Marks `key` as read; a second occurrence fails the read (the `Value` reading keeps the last
/// duplicate, which this reader does not model).
fn once<E: de::Error>(seen: &mut u8, bit: u8) -> Result<(), E> {
    if *seen & bit != 0 {
        return Err(E::custom("duplicate key"));
    }
    *seen |= bit;
    Ok(())
}

struct EnvelopeVisitor<C>(PhantomData<C>);

impl<'de, C: Deserialize<'de>> Visitor<'de> for EnvelopeVisitor<C> {
    type Value = Envelope<'de, C>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a chunk or body object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de, C>, A::Error> {
        let mut envelope = Envelope {
            id: None,
            model: None,
            choices: None,
            usage: None,
        };
        let mut seen = 0u8;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                // S-35: an in-band error is the `Value` reading's business.
                "error" => return Err(de::Error::custom("in-band error")),
                "id" => {
                    once(&mut seen, 1)?;
                    envelope.id = opt_text(&mut map)?;
                }
                "model" => {
                    once(&mut seen, 2)?;
                    envelope.model = opt_text(&mut map)?;
                }
                "choices" => {
                    once(&mut seen, 4)?;
                    envelope.choices = map.next_value::<Option<C>>()?;
                }
                "usage" => {
                    once(&mut seen, 8)?;
                    envelope.usage = map.next_value::<Option<Map<String, Value>>>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(envelope)
    }
}

/// `choices` of a chunk: an array of choice objects; keeps the first selectable one.
#[derive(Debug)]
pub struct ChoicePick<'a>(
    /// The first selectable choice, if any.
    pub Option<TextChoice<'a>>,
);

impl<'de> Deserialize<'de> for ChoicePick<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PickVisitor;
        impl<'de> Visitor<'de> for PickVisitor {
            type Value = ChoicePick<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ChoicePick<'de>, A::Error> {
                let mut picked = None;
                while let Some(choice) = seq.next_element::<TextChoice<'de>>()? {
                    if picked.is_none() && choice.selectable {
                        picked = Some(choice);
                    }
                }
                Ok(ChoicePick(picked))
            }
        }
        deserializer.deserialize_seq(PickVisitor)
    }
}

/// `choices` of a body: a non-empty array whose first element is a choice object; the others
/// are not read (text mode).
#[derive(Debug)]
pub struct FirstChoice<'a> {
    /// `message`; empty when absent or `null`.
    pub message: Fragments<'a>,
    /// `finish_reason`, when a string.
    pub finish_reason: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for FirstChoice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor;
        impl<'de> Visitor<'de> for FirstVisitor {
            type Value = FirstChoice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-empty array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstChoice<'de>, A::Error> {
                let Some(first) = seq.next_element::<BodyChoice<'de>>()? else {
                    return Err(de::Error::custom("no choices"));
                };
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(first.0)
            }
        }
        deserializer.deserialize_seq(FirstVisitor)
    }
}

/// One choice object: `delta` (stream) or `message` (body), `finish_reason`, and for a stream
/// `index`.
struct ChoiceVisitor<const BODY: bool>;

impl<'de, const BODY: bool> Visitor<'de> for ChoiceVisitor<BODY> {
    type Value = TextChoice<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a choice object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextChoice<'de>, A::Error> {
        let mut choice = TextChoice {
            selectable: true,
            ..TextChoice::default()
        };
        let mut seen = 0u8;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                // Text mode: absent or null selects; so does a number equal to 0 as u64. A body
                // reads `choices[0]` whatever its index.
                "index" if !BODY => {
                    once(&mut seen, 1)?;
                    choice.selectable = map
                        .next_value::<Option<Number>>()?
                        .is_none_or(|n| n.as_u64() == Some(0));
                }
                "delta" if !BODY => {
                    once(&mut seen, 2)?;
                    let delta = map.next_value::<Option<FragmentsOf<true>>>()?;
                    choice.delta = delta.map(|d| d.0).unwrap_or_default();
                }
                "message" if BODY => {
                    once(&mut seen, 2)?;
                    let message = map.next_value::<Option<FragmentsOf<false>>>()?;
                    choice.delta = message.map(|m| m.0).unwrap_or_default();
                }
                "finish_reason" => {
                    once(&mut seen, 4)?;
                    choice.finish_reason = opt_text(&mut map)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(choice)
    }
}

impl<'de> Deserialize<'de> for TextChoice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ChoiceVisitor::<false>)
    }
}

/// The first choice of a body, read with [`ChoiceVisitor`] in body mode.
struct BodyChoice<'a>(FirstChoice<'a>);

impl<'de> Deserialize<'de> for BodyChoice<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let choice = deserializer.deserialize_map(ChoiceVisitor::<true>)?;
        Ok(BodyChoice(FirstChoice {
            message: choice.delta,
            finish_reason: choice.finish_reason,
        }))
    }
}

/// A delta (`STRICT`: only `role`, `content`, `reasoning_content`, `reasoning`; anything else —
/// tool calls included — is the `Value` reading's business) or a message (other keys ignored,
/// as text mode ignores them).
struct FragmentsOf<'a, const STRICT: bool>(Fragments<'a>);

impl<'de, const STRICT: bool> Deserialize<'de> for FragmentsOf<'de, STRICT> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FragmentsVisitor::<STRICT>)
    }
}

struct FragmentsVisitor<const STRICT: bool>;

impl<'de, const STRICT: bool> Visitor<'de> for FragmentsVisitor<STRICT> {
    type Value = FragmentsOf<'de, STRICT>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a delta or message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fragments = Fragments::default();
        let mut seen = 0u8;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                "content" => {
                    once(&mut seen, 1)?;
                    fragments.content = opt_text(&mut map)?;
                }
                "reasoning_content" => {
                    once(&mut seen, 2)?;
                    fragments.reasoning_content = opt_text(&mut map)?;
                }
                "reasoning" => {
                    once(&mut seen, 4)?;
                    fragments.reasoning = opt_text(&mut map)?;
                }
                // S-54: text mode ignores the role, whatever it is.
                "role" if STRICT => {
                    once(&mut seen, 8)?;
                    map.next_value::<IgnoredAny>()?;
                }
                _ if STRICT => {
                    return Err(de::Error::custom("delta key outside the fast reading"));
                }
                // README D22, D27: a refusal or tool calls in a text-mode body are facts of the
                // verdict; a non-null one goes to the `Value` reading.
                "refusal" | "tool_calls" => {
                    if !map.next_value::<Value>()?.is_null() {
                        return Err(de::Error::custom("refusal or tool calls in a text body"));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(FragmentsOf(fragments))
    }
}

/// A string field of a kept frame: a range of the frame's text, or the unescaped copy.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Span {
    At { start: usize, end: usize },
    Own(Box<str>),
}

impl Span {
    fn keep(text: &str, field: Cow<'_, str>) -> Self {
        match field {
            Cow::Borrowed(s) => {
                let start = s.as_ptr().addr().wrapping_sub(text.as_ptr().addr());
                let end = start.wrapping_add(s.len());
                // A borrowed string is a slice of `text`; anything else is copied.
                match text.get(start..end) {
                    Some(at) if at.as_ptr() == s.as_ptr() => Self::At { start, end },
                    _ => Self::Own(s.into()),
                }
            }
            Cow::Owned(s) => Self::Own(s.into_boxed_str()),
        }
    }

    fn view<'a>(&'a self, text: &'a str) -> Cow<'a, str> {
        match self {
            Self::At { start, end } => Cow::Borrowed(text.get(*start..*end).unwrap_or_default()),
            Self::Own(s) => Cow::Borrowed(s),
        }
    }
}

fn keep_opt(text: &str, field: Option<Cow<'_, str>>) -> Option<Span> {
    field.map(|f| Span::keep(text, f))
}

fn view_opt<'a>(text: &'a str, span: Option<&'a Span>) -> Option<Cow<'a, str>> {
    span.map(|s| s.view(text))
}

#[derive(Debug, Clone, PartialEq)]
struct KeptChoice {
    selectable: bool,
    content: Option<Span>,
    reasoning_content: Option<Span>,
    reasoning: Option<Span>,
    finish_reason: Option<Span>,
}

/// A [`TextFrame`] kept beside its text without borrowing it (ranges), so a checked chunk can
/// carry what its one scan read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptFrame {
    id: Option<Span>,
    model: Option<Span>,
    choices: Option<Option<KeptChoice>>,
    usage: Option<Map<String, Value>>,
}

impl KeptFrame {
    /// Keeps `frame`, read from `text`.
    pub(crate) fn keep(text: &str, frame: TextFrame<'_>) -> Self {
        Self {
            id: keep_opt(text, frame.id),
            model: keep_opt(text, frame.model),
            choices: frame.choices.map(|pick| {
                pick.0.map(|c| KeptChoice {
                    selectable: c.selectable,
                    content: keep_opt(text, c.delta.content),
                    reasoning_content: keep_opt(text, c.delta.reasoning_content),
                    reasoning: keep_opt(text, c.delta.reasoning),
                    finish_reason: keep_opt(text, c.finish_reason),
                })
            }),
            usage: frame.usage,
        }
    }

    /// The range of `text` that holds the selected choice's `content`, when the reading
    /// borrowed it (the string has no escapes); the anchor of [`crate::ChunkReader`]'s template.
    pub(crate) fn content_range(&self) -> Option<(usize, usize)> {
        match self.choices.as_ref()?.as_ref()?.content.as_ref()? {
            Span::At { start, end } => Some((*start, *end)),
            Span::Own(_) => None,
        }
    }

    /// This frame as the reading of a text whose bytes outside its borrowed `content` string
    /// are the same and whose content string now ends at `new_end`: ranges after the string
    /// move by the change of its length. `None` when the content string was not borrowed.
    pub(crate) fn with_content_end(&self, new_end: usize) -> Option<Self> {
        let (start, end) = self.content_range()?;
        let moved = |span: &Option<Span>| match span {
            Some(Span::At { start: s, end: e }) if *s >= end => Some(Span::At {
                start: s - end + new_end,
                end: e - end + new_end,
            }),
            other => other.clone(),
        };
        Some(Self {
            id: moved(&self.id),
            model: moved(&self.model),
            choices: self.choices.as_ref().map(|pick| {
                pick.as_ref().map(|c| KeptChoice {
                    selectable: c.selectable,
                    content: Some(Span::At {
                        start,
                        end: new_end,
                    }),
                    reasoning_content: moved(&c.reasoning_content),
                    reasoning: moved(&c.reasoning),
                    finish_reason: moved(&c.finish_reason),
                })
            }),
            usage: self.usage.clone(),
        })
    }

    /// The frame again, borrowing from `text` (the text it was read from); `usage` is copied.
    pub(crate) fn view<'a>(&'a self, text: &'a str) -> TextFrame<'a> {
        Envelope {
            id: view_opt(text, self.id.as_ref()),
            model: view_opt(text, self.model.as_ref()),
            choices: self.choices.as_ref().map(|pick| {
                ChoicePick(pick.as_ref().map(|c| TextChoice {
                    selectable: c.selectable,
                    delta: Fragments {
                        content: view_opt(text, c.content.as_ref()),
                        reasoning_content: view_opt(text, c.reasoning_content.as_ref()),
                        reasoning: view_opt(text, c.reasoning.as_ref()),
                    },
                    finish_reason: view_opt(text, c.finish_reason.as_ref()),
                }))
            }),
            usage: self.usage.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_typical_content_frame_without_copying() {
        let text = r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null,"logprobs":null}]}"#;
        let frame = TextFrame::read(text).expect("covered shape");
        assert_eq!(frame.id.as_deref(), Some("c1"));
        assert_eq!(frame.model.as_deref(), Some("m"));
        let choice = frame.choice().expect("selected");
        assert!(matches!(choice.delta.content, Some(Cow::Borrowed("Hi"))));
        assert!(choice.finish_reason.is_none());
        assert!(frame.usage.is_none());
    }

    #[test]
    fn declines_shapes_outside_the_fast_reading() {
        for text in [
            r#"{"error":null}"#,
            r#"{"id":1}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#,
            r#"{"choices":[{"delta":{"content":1}}]}"#,
            r#"{"choices":[{"index":"0"}]}"#,
            r#"{"choices":{}}"#,
            r#"{"choices":[null]}"#,
            r#"{"choices":[["x"]]}"#,
            r#"{"usage":1}"#,
            r#"[1]"#,
            r#"1"#,
        ] {
            assert!(TextFrame::read(text).is_none(), "{text}");
        }
    }

    #[test]
    fn picks_the_first_selectable_choice() {
        let text = r#"{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"delta":{"content":"a"}}]}"#;
        let frame = TextFrame::read(text).expect("covered shape");
        let content = frame.choice().and_then(|c| c.delta.content.as_deref());
        assert_eq!(content, Some("a"));
    }
}

#[cfg(test)]
mod kept_tests {
    use super::*;

    /// Issue 21: a kept frame reads back exactly what the reader read, escapes included.
    #[test]
    fn a_kept_frame_views_as_the_read_frame() {
        let text = r#"{"id":"c\u00e91","model":"m","choices":[{"index":0,"delta":{"content":"Hi","reasoning":"r\n"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}"#;
        let kept = KeptFrame::keep(text, TextFrame::read(text).unwrap());
        let copy: String = text.to_owned();
        let view = kept.view(&copy);
        let read = TextFrame::read(text).unwrap();
        assert_eq!(view.id, read.id);
        assert_eq!(view.id.as_deref(), Some("c\u{e9}1"));
        assert_eq!(view.model.as_deref(), Some("m"));
        let (a, b) = (view.choice().unwrap(), read.choice().unwrap());
        assert_eq!(a.delta.content, b.delta.content);
        assert_eq!(a.delta.reasoning.as_deref(), Some("r\n"));
        assert_eq!(a.finish_reason.as_deref(), Some("stop"));
        assert_eq!(view.usage, read.usage);
    }
}
