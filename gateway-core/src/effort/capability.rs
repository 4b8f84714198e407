//! The capability types: a wire family, the evidence behind an entry, one capability entry, and
//! the two pure helpers an entry needs (level order, model-pattern matching). A leaf of the
//! crate: the provider registry (`crate::thinking`) and the built-in table (`table.rs`) import
//! it, and it imports neither, so the effort module and the provider profiles do not import
//! each other.

use gateway_ports::request::JsonObject;
use gateway_ports::{EFFORT_ORDER, Effort};
use serde_json::Value;

/// The wire family of a capability entry: the shape of the fragment each level sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThinkingWire {
    /// `{"reasoning_effort": "<level>"}` (OpenAI, Gemini's OpenAI-compatible endpoint).
    ReasoningEffort,
    /// `{"enable_thinking": bool}` plus an optional `{"thinking_budget": int}` (DashScope).
    EnableThinking,
    /// `{"chat_template_kwargs": {"enable_thinking": bool}}` (vLLM / SGLang chat templates).
    ChatTemplateKwargs,
    /// `{"thinking": {"type": "enabled" | "disabled", "budget_tokens"?: int}}` (Anthropic, GLM).
    ThinkingType,
    /// `{"reasoning": {"effort": "<level>"}}` or `{"reasoning": {"enabled": bool}}` (OpenRouter).
    OpenRouterReasoning,
    /// Nothing is sent: the model always runs at its one listed level.
    Fixed,
}

impl ThinkingWire {
    /// The lowercase name used in docs and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReasoningEffort => "reasoning_effort",
            Self::EnableThinking => "enable_thinking",
            Self::ChatTemplateKwargs => "chat_template_kwargs",
            Self::ThinkingType => "thinking_type",
            Self::OpenRouterReasoning => "openrouter_reasoning",
            Self::Fixed => "fixed",
        }
    }
}

/// How an entry's facts were established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceKind {
    /// Observed against the live provider (a test id names the run).
    Measured,
    /// Taken from the provider's published documentation.
    Documented,
}

/// Where an entry's facts come from: required on every entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Evidence {
    /// Measured or documented.
    pub kind: EvidenceKind,
    /// A URL or a test id.
    pub source: String,
    /// `YYYY-MM-DD`: when the documentation stated it (or the measurement ran).
    pub date: String,
}

impl Evidence {
    /// Documented evidence at `source` dated `date`.
    pub fn documented(source: impl Into<String>, date: impl Into<String>) -> Self {
        Self {
            kind: EvidenceKind::Documented,
            source: source.into(),
            date: date.into(),
        }
    }

    /// `true` when `source` is non-empty and `date` is a valid `YYYY-MM-DD` calendar date.
    pub fn is_valid(&self) -> bool {
        !self.source.trim().is_empty() && is_iso_date(&self.date)
    }
}

fn is_iso_date(date: &str) -> bool {
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// One row of the capability table: which levels a model family supports under a
/// provider profile, and the JSON fragment each level sends (merged at the payload top level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityEntry {
    /// The provider profile (`SourceConfig.provider`, lower case).
    pub profile: String,
    /// A glob over `SourceConfig.model` (`*` any run, `?` one character), ASCII
    /// case-insensitive.
    pub model_pattern: String,
    /// The wire family of the fragments.
    pub wire: ThinkingWire,
    /// Supported levels (in `EFFORT_ORDER`) and the fragment each sends (a JSON object; empty
    /// for [`ThinkingWire::Fixed`]).
    pub levels: Vec<(Effort, JsonObject)>,
    /// Where these facts come from.
    pub evidence: Evidence,
}

impl CapabilityEntry {
    /// An entry; `levels` pairs each supported level with its fragment (`Value::Object`; any
    /// other value sends nothing).
    pub fn new(
        profile: impl Into<String>,
        model_pattern: impl Into<String>,
        wire: ThinkingWire,
        levels: Vec<(Effort, Value)>,
        evidence: Evidence,
    ) -> Self {
        let mut levels: Vec<(Effort, JsonObject)> = levels
            .into_iter()
            .map(|(level, fragment)| match fragment {
                Value::Object(map) => (level, map),
                _ => (level, JsonObject::new()),
            })
            .collect();
        levels.sort_by_key(|(level, _)| effort_index(*level));
        Self {
            profile: profile.into().to_ascii_lowercase(),
            model_pattern: model_pattern.into(),
            wire,
            levels,
            evidence,
        }
    }

    /// The supported levels, weakest first.
    pub fn supported(&self) -> Vec<Effort> {
        self.levels.iter().map(|(level, _)| *level).collect()
    }

    /// The fragment of `level`, if supported.
    pub fn fragment(&self, level: Effort) -> Option<&JsonObject> {
        self.levels
            .iter()
            .find(|(l, _)| *l == level)
            .map(|(_, fragment)| fragment)
    }

    /// Whether `model` matches this entry's pattern.
    pub fn matches(&self, model: &str) -> bool {
        glob_match(&self.model_pattern, model)
    }
}

/// `pattern` matches `text` (`*` any run, `?` one character), ASCII case-insensitive.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().map(|c| c.to_ascii_lowercase()).collect();
    let t: Vec<char> = text.chars().map(|c| c.to_ascii_lowercase()).collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The position of `level` in `EFFORT_ORDER` (weakest = 0).
pub fn effort_index(level: Effort) -> usize {
    EFFORT_ORDER
        .iter()
        .position(|l| *l == level)
        .unwrap_or_default()
}
