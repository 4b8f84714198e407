//! Provider profiles (05 R-48), inline think tags (40 S-100, S-101) and the thinking observation
//! (70 C-35; 40 S-103).

use gateway_core::thinking::{
    ProviderProfile, ProviderRegistry, QWEN, ThinkSplit, finalize_text, observe_thinking,
    strip_think_tags,
};
use gateway_ports::ThinkingObservation::{Absent, Observed, Unknown};
use proptest::prelude::*;

// ---------------------------------------------------------------- R-48 registry

/// R-48 + 70 C-25: `qwen` alone has inline think tags; the built-in profiles are those of the
/// capability table, each holding only its own entries; unregistered providers are plain.
#[test]
fn r_48_builtin_registry_qwen_true_others_false() {
    let registry = ProviderRegistry::builtin();
    assert!(registry.inline_think_tags(QWEN));
    let qwen = registry.profile_for("qwen");
    assert_eq!((qwen.name.as_str(), qwen.inline_think_tags), ("qwen", true));
    assert!(qwen.entries.iter().all(|e| e.profile == "qwen"));
    for other in [
        "openai",
        "azure",
        "glm",
        "deepseek",
        "openrouter",
        "",
        "qwen3",
    ] {
        assert!(!registry.inline_think_tags(other), "{other}");
    }
    for unregistered in ["azure", "glm", "", "qwen3"] {
        assert_eq!(
            registry.profile_for(unregistered),
            ProviderProfile::plain(unregistered)
        );
        assert!(registry.get(unregistered).is_none());
    }
    assert_eq!(ProviderRegistry::default(), registry);
    let names: Vec<&str> = registry.profiles().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "anthropic",
            "deepseek",
            "gemini",
            "openai",
            "openrouter",
            "qwen",
            "vllm",
            "zhipu"
        ]
    );
}

#[test]
fn r_48_registry_lookup_is_ascii_case_insensitive() {
    let registry = ProviderRegistry::builtin();
    assert!(registry.inline_think_tags("QWEN"));
    assert!(registry.inline_think_tags("Qwen"));
}

#[test]
fn r_48_profiles_are_registrable_and_replaceable() {
    let mut registry = ProviderRegistry::builtin();
    assert_eq!(
        registry.register(ProviderProfile::new("vllm_local", true)),
        None
    );
    assert!(registry.inline_think_tags("vllm_local"));
    // Replacing the built-in turns its tags off.
    let old = registry.register(ProviderProfile::plain("qwen"));
    assert!(old.is_some_and(|p| p.inline_think_tags && !p.entries.is_empty()));
    assert!(!registry.inline_think_tags("qwen"));
    assert!(!ProviderRegistry::empty().inline_think_tags("qwen"));
}

// ---------------------------------------------------------------- S-100 think tags

#[test]
fn s_100_pinned_think_only_content() {
    let qwen = ProviderProfile::new("qwen", true);
    assert_eq!(
        finalize_text("<think>x</think>", "", &qwen),
        (String::new(), "x".to_owned())
    );
}

#[test]
fn s_100_without_inline_tags_text_is_untouched() {
    let plain = ProviderProfile::plain("openai");
    assert_eq!(
        finalize_text("<think>x</think> hi", "r", &plain),
        ("<think>x</think> hi".to_owned(), "r".to_owned())
    );
}

#[test]
fn s_100_strip_rules() {
    let split = |s: &str| {
        let ThinkSplit {
            content,
            thinking,
            spans,
        } = strip_think_tags(s);
        (content, thinking, spans)
    };
    let rows: [(&str, (&str, &str, usize)); 11] = [
        // Leading whitespace removed once a span was removed.
        ("<think>plan</think>\n\nanswer", ("answer", "plan", 1)),
        // Several spans, inner texts in order with no separator; inner whitespace kept.
        ("<think>a</think>x<think> b\n</think>y", ("xy", "a b\n", 2)),
        // Non-greedy: the first close ends the span.
        ("<think>a</think>b</think>", ("b</think>", "a", 1)),
        // Leftmost open wins; a nested open is inner text.
        ("<think>a<think>b</think>c", ("c", "a<think>b", 1)),
        // `.` matches newlines.
        ("<think>l1\nl2</think>ok", ("ok", "l1\nl2", 1)),
        // Unclosed `<think>` stays in the content, and nothing is trimmed.
        ("  <think>never closed", ("  <think>never closed", "", 0)),
        // A closed span followed by an unclosed one.
        ("<think>a</think> b <think>c", ("b <think>c", "a", 1)),
        // A stray close without open stays.
        ("x</think>y", ("x</think>y", "", 0)),
        // Case-sensitive.
        ("<THINK>a</THINK>b", ("<THINK>a</THINK>b", "", 0)),
        // Only leading whitespace is removed; content before the span stays.
        ("pre <think>t</think> post ", ("pre  post ", "t", 1)),
        // No tags: unchanged, whitespace kept.
        ("  plain  ", ("  plain  ", "", 0)),
    ];
    for (input, (content, thinking, spans)) in rows {
        assert_eq!(
            split(input),
            (content.to_owned(), thinking.to_owned(), spans),
            "{input:?}"
        );
    }
}

#[test]
fn s_100_extracted_thinking_appends_to_streamed_thinking() {
    let qwen = ProviderProfile::new("qwen", true);
    assert_eq!(
        finalize_text("<think>b</think>answer", "a", &qwen),
        ("answer".to_owned(), "ab".to_owned())
    );
}

proptest! {
    /// Stripping never loses or invents characters: content + thinking (+ tags + trimmed
    /// whitespace) account for the input, and text without `<think>` is unchanged.
    #[test]
    fn s_100_text_without_open_tag_is_unchanged(s in "[a-z </>\n]{0,40}") {
        prop_assume!(!s.contains("<think>"));
        let split = strip_think_tags(&s);
        prop_assert_eq!(split.content, s);
        prop_assert_eq!(split.spans, 0);
    }

    #[test]
    fn s_100_stripped_lengths_add_up(parts in prop::collection::vec(("[a-z \n]{0,6}", "[a-z \n]{0,6}"), 0..5)) {
        let mut input = String::new();
        let mut inner = String::new();
        for (outside, thought) in &parts {
            input.push_str(outside);
            input.push_str("<think>");
            input.push_str(thought);
            input.push_str("</think>");
            inner.push_str(thought);
        }
        let split = strip_think_tags(&input);
        prop_assert_eq!(split.spans, parts.len());
        prop_assert_eq!(&split.thinking, &inner);
        let outside: String = parts.iter().map(|(o, _)| o.as_str()).collect();
        prop_assert_eq!(split.content, if parts.is_empty() { outside } else { outside.trim_start().to_owned() });
    }
}

// ---------------------------------------------------------------- C-35 observation

// covers: S-103
#[test]
fn c_35_thinking_observation_rows() {
    let rows = [
        // 1. Text outweighs usage: a non-blank projection is observed, even with 0 tokens.
        ("thought", None, Observed),
        ("thought", Some(0), Observed),
        ("thought", Some(12), Observed),
        // 2. Hidden reasoning.
        ("", Some(5), Observed),
        ("  \n", Some(1), Observed),
        // 3. Reported zero.
        ("", Some(0), Absent),
        (" ", Some(0), Absent),
        // 4. Cannot tell.
        ("", None, Unknown),
        ("\t", None, Unknown),
    ];
    for (thinking, tokens, expected) in rows {
        assert_eq!(
            observe_thinking(thinking, tokens),
            expected,
            "{thinking:?} {tokens:?}"
        );
    }
}

#[test]
fn c_35_think_tag_content_counts_as_projection() {
    let qwen = ProviderProfile::new("qwen", true);
    let (_, thinking) = finalize_text("<think>hmm</think>answer", "", &qwen);
    assert_eq!(observe_thinking(&thinking, Some(0)), Observed);
}

#[test]
fn c_35_failed_attempt_default_is_unknown() {
    assert_eq!(gateway_ports::ThinkingObservation::default(), Unknown);
}
