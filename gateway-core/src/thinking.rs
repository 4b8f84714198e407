//! Provider profiles, inline think tags and the thinking observation (40 S-100;
//! 70 C-35).
//!
//! Owns three small pure pieces of the judgment path:
//! - the [`ProviderProfile`] `{ name, inline_think_tags, entries, managed_roots }` and its
//!   [`ProviderRegistry`] (built-in: one profile per capability-table profile of
//!   `crate::effort::table`, `qwen` with inline think tags; every other provider without);
//! - [`strip_think_tags`] / [`finalize_text`]: moving `<think>…</think>` spans out of the content
//!   into the thinking projection for profiles that enable it;
//! - [`observe_thinking`]: `Observed` / `Absent` / `Unknown` from the thinking projection and the
//!   reported `reasoning_tokens`.

use std::collections::BTreeMap;

use gateway_ports::ThinkingObservation;

use crate::effort::capability::CapabilityEntry;

/// The name of the built-in profile with inline think tags.
pub const QWEN: &str = "qwen";

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// A provider profile, minimal form : the provider name and whether its
/// models write reasoning inline as `<think>…</think>` in the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderProfile {
    /// The provider name, matched against `SourceConfig.provider` (lower-cased).
    pub name: String,
    /// `true` = strip `<think>…</think>` spans from the content into the thinking projection.
    pub inline_think_tags: bool,
    /// The capability entries of this profile, scanned in order.
    pub entries: Vec<CapabilityEntry>,
    /// Managed roots this profile adds to the built-in ones.
    pub managed_roots: Vec<String>,
}

impl ProviderProfile {
    /// A profile with this name and flag.
    pub fn new(name: impl Into<String>, inline_think_tags: bool) -> Self {
        Self {
            name: name.into(),
            inline_think_tags,
            entries: Vec::new(),
            managed_roots: Vec::new(),
        }
    }

    /// The same profile with these capability entries appended (a custom profile
    /// brings its own entries).
    pub fn with_entries(mut self, entries: impl IntoIterator<Item = CapabilityEntry>) -> Self {
        self.entries.extend(entries);
        self
    }

    /// The same profile with one more managed root.
    pub fn with_managed_root(mut self, root: impl Into<String>) -> Self {
        self.managed_roots.push(root.into());
        self
    }

    /// The profile of a provider nobody registered: no inline think tags ("others false").
    pub fn plain(name: impl Into<String>) -> Self {
        Self::new(name, false)
    }
}

/// The provider-profile registry (providers can be registered at run time). Lookup is by
/// provider name, ASCII case-insensitive (the configuration lower-cases the provider segment,
/// 20 §3.3; a registered `"Qwen"` therefore serves `qwen`). `Default` is [`Self::builtin`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderRegistry {
    profiles: BTreeMap<String, ProviderProfile>,
}

impl Default for ProviderRegistry {
    fn default() -> Self {
        Self::builtin()
    }
}

impl ProviderRegistry {
    /// A registry with no profiles: every provider is plain.
    pub fn empty() -> Self {
        Self {
            profiles: BTreeMap::new(),
        }
    }

    /// The built-in registry: one profile per provider of the capability table
    /// (`crate::effort::table`), `qwen` with inline think tags; every other provider
    /// plain.
    pub fn builtin() -> Self {
        let mut registry = Self::empty();
        for entry in crate::effort::table::builtin_entries() {
            let name = entry.profile.clone();
            let profile = registry
                .profiles
                .entry(name.clone())
                .or_insert_with(|| ProviderProfile::new(name.as_str(), name == QWEN));
            profile.entries.push(entry);
        }
        registry
            .profiles
            .entry(QWEN.to_owned())
            .or_insert_with(|| ProviderProfile::new(QWEN, true));
        registry
    }

    /// Registers `profile`, replacing (and returning) a profile of the same name.
    pub fn register(&mut self, profile: ProviderProfile) -> Option<ProviderProfile> {
        self.profiles
            .insert(profile.name.to_ascii_lowercase(), profile)
    }

    /// The registered profile of `provider`, if any.
    pub fn get(&self, provider: &str) -> Option<&ProviderProfile> {
        self.profiles.get(&provider.to_ascii_lowercase())
    }

    /// The profile of `provider`: the registered one, else [`ProviderProfile::plain`].
    pub fn profile_for(&self, provider: &str) -> ProviderProfile {
        self.get(provider)
            .cloned()
            .unwrap_or_else(|| ProviderProfile::plain(provider))
    }

    /// Whether `provider` writes inline think tags: `false` when unregistered.
    pub fn inline_think_tags(&self, provider: &str) -> bool {
        self.get(provider).is_some_and(|p| p.inline_think_tags)
    }

    /// The registered profiles, by lower-cased name.
    pub fn profiles(&self) -> impl Iterator<Item = &ProviderProfile> {
        self.profiles.values()
    }
}

/// The process-wide built-in registry (built once; read by the row shaper).
pub fn builtin_registry() -> &'static ProviderRegistry {
    shared_builtin_registry()
}

/// The process-wide built-in registry as a shared `Arc` (built once, so a call that uses the
/// built-in table allocates nothing for it).
pub fn shared_builtin_registry() -> &'static std::sync::Arc<ProviderRegistry> {
    static BUILTIN: std::sync::OnceLock<std::sync::Arc<ProviderRegistry>> =
        std::sync::OnceLock::new();
    BUILTIN.get_or_init(|| std::sync::Arc::new(ProviderRegistry::builtin()))
}

/// Content with its inline think spans removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ThinkSplit {
    /// The content without the spans; leading whitespace removed when at least one span was.
    pub content: String,
    /// The captured inner texts, in order, with no separator.
    pub thinking: String,
    /// How many spans were removed.
    pub spans: usize,
}

/// Removes every non-overlapping `<think>(.*?)</think>` span from `content`:
/// non-greedy, `.` matching newlines, leftmost first, case-sensitive; the inner texts are
/// collected in order with no separator; if at least one span was removed, leading whitespace
/// of the remaining content is removed. An unclosed `<think>` (and everything after it) stays in
/// the content, as does a stray `</think>`.
pub fn strip_think_tags(content: &str) -> ThinkSplit {
    let mut split = ThinkSplit::default();
    let mut rest = content;
    while let Some(open) = rest.find(THINK_OPEN) {
        let after_open = &rest[open + THINK_OPEN.len()..];
        let Some(close) = after_open.find(THINK_CLOSE) else {
            break;
        };
        split.content.push_str(&rest[..open]);
        split.thinking.push_str(&after_open[..close]);
        split.spans += 1;
        rest = &after_open[close + THINK_CLOSE.len()..];
    }
    split.content.push_str(rest);
    if split.spans > 0 {
        split.content = split.content.trim_start().to_owned();
    }
    split
}

/// `finalize_text(content parts, thinking parts, profile)` over the concatenated
/// parts: without inline think tags the result is `(content_raw, thinking_raw)`; with them, the
/// spans of [`strip_think_tags`] move from the content to the end of the thinking. Returns
/// `(content, thinking)`. Never applied to the openai `completion.message`.
pub fn finalize_text(
    content_raw: &str,
    thinking_raw: &str,
    profile: &ProviderProfile,
) -> (String, String) {
    if !profile.inline_think_tags {
        return (content_raw.to_owned(), thinking_raw.to_owned());
    }
    let split = strip_think_tags(content_raw);
    let mut thinking = String::with_capacity(thinking_raw.len() + split.thinking.len());
    thinking.push_str(thinking_raw);
    thinking.push_str(&split.thinking);
    (split.content, thinking)
}

/// The thinking observation of a delivered attempt, from the alias-aware
/// thinking projection (`reasoning_content`, else `reasoning`, plus think-tag content) and the
/// reported `reasoning_tokens` (`completion_tokens_details.reasoning_tokens`). Text
/// outweighs usage details:
/// 1. the projection is non-empty after trimming → `Observed`;
/// 2. else `reasoning_tokens == Some(n)`, `n > 0` → `Observed` (hidden reasoning);
/// 3. else `reasoning_tokens == Some(0)` → `Absent`;
/// 4. else → `Unknown` ("cannot tell", never "did not reason").
///
/// A failed or cancelled attempt has no observation: it keeps the default `Unknown` and does
/// not call this.
pub fn observe_thinking(thinking: &str, reasoning_tokens: Option<u64>) -> ThinkingObservation {
    if !thinking.trim().is_empty() {
        return ThinkingObservation::Observed;
    }
    match reasoning_tokens {
        Some(0) => ThinkingObservation::Absent,
        Some(_) => ThinkingObservation::Observed,
        None => ThinkingObservation::Unknown,
    }
}
