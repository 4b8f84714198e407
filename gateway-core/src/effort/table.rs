//! The built-in capability table: which reasoning levels each provider profile
//! and model family accepts, and the JSON fragment each level sends.
//!
//! Every entry carries [`Evidence`]: the provider documentation page that states the parameter
//! and its values, and the date of the release or documentation change it describes. Entries are
//! scanned per profile in declaration order, so a specific pattern precedes a general one. Users
//! extend or replace a profile with `ProviderRegistry::register` (builder `register_provider`).
//! `docs/effort.md` renders this table for users.

use gateway_ports::Effort;
use serde_json::{Value, json};

use super::capability::{CapabilityEntry, Evidence, ThinkingWire};

const OPENAI_REASONING: &str = "https://platform.openai.com/docs/guides/reasoning";
const OPENAI_GPT5: &str = "https://platform.openai.com/docs/guides/latest-model";
const OPENAI_MODELS: &str = "https://platform.openai.com/docs/models";
const DEEPSEEK_REASONER: &str = "https://api-docs.deepseek.com/guides/reasoning_model";
const DEEPSEEK_PRICING: &str = "https://api-docs.deepseek.com/quick_start/pricing";
const DASHSCOPE_THINKING: &str = "https://help.aliyun.com/zh/model-studio/deep-thinking";
const QWEN_VLLM: &str = "https://qwen.readthedocs.io/en/latest/deployment/vllm.html";
const VLLM_REASONING: &str = "https://docs.vllm.ai/en/latest/features/reasoning_outputs.html";
const ANTHROPIC_OPENAI_SDK: &str = "https://docs.anthropic.com/en/api/openai-sdk";
const ANTHROPIC_THINKING: &str =
    "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking";
const GEMINI_OPENAI: &str = "https://ai.google.dev/gemini-api/docs/openai";
const OPENROUTER_REASONING: &str = "https://openrouter.ai/docs/use-cases/reasoning-tokens";
const GLM_THINKING: &str = "https://docs.bigmodel.cn/cn/guide/capabilities/thinking";

fn effort_levels(levels: &[Effort]) -> Vec<(Effort, Value)> {
    levels
        .iter()
        .map(|l| (*l, json!({"reasoning_effort": l.as_str()})))
        .collect()
}

fn fixed(level: Effort) -> Vec<(Effort, Value)> {
    vec![(level, json!({}))]
}

fn entry(
    profile: &str,
    pattern: &str,
    wire: ThinkingWire,
    levels: Vec<(Effort, Value)>,
    source: &str,
    date: &str,
) -> CapabilityEntry {
    CapabilityEntry::new(
        profile,
        pattern,
        wire,
        levels,
        Evidence::documented(source, date),
    )
}

/// OpenAI: o-series (`low`/`medium`/`high`), GPT-5 (`minimal` … `high`), GPT-5.1 (`none`,
/// `low` … `high`), GPT-5 chat and GPT-4 family (no reasoning).
pub fn openai() -> Vec<CapabilityEntry> {
    use Effort::{High, Low, Medium, Minimal, Off};
    let re = ThinkingWire::ReasoningEffort;
    vec![
        entry(
            "openai",
            "gpt-5-chat*",
            ThinkingWire::Fixed,
            fixed(Off),
            OPENAI_MODELS,
            "2025-08-07",
        ),
        entry(
            "openai",
            "gpt-5.1*",
            re,
            effort_levels(&[Off, Low, Medium, High]),
            OPENAI_GPT5,
            "2025-11-13",
        ),
        entry(
            "openai",
            "gpt-5*",
            re,
            effort_levels(&[Minimal, Low, Medium, High]),
            OPENAI_GPT5,
            "2025-08-07",
        ),
        entry(
            "openai",
            "o1",
            re,
            effort_levels(&[Low, Medium, High]),
            OPENAI_REASONING,
            "2024-12-17",
        ),
        entry(
            "openai",
            "o1-2*",
            re,
            effort_levels(&[Low, Medium, High]),
            OPENAI_REASONING,
            "2024-12-17",
        ),
        entry(
            "openai",
            "o3*",
            re,
            effort_levels(&[Low, Medium, High]),
            OPENAI_REASONING,
            "2025-04-16",
        ),
        entry(
            "openai",
            "o4-mini*",
            re,
            effort_levels(&[Low, Medium, High]),
            OPENAI_REASONING,
            "2025-04-16",
        ),
        entry(
            "openai",
            "gpt-4*",
            ThinkingWire::Fixed,
            fixed(Off),
            OPENAI_MODELS,
            "2024-05-13",
        ),
    ]
}

/// DeepSeek: the reasoner always thinks, the chat model never does (the mode is the model name).
pub fn deepseek() -> Vec<CapabilityEntry> {
    vec![
        entry(
            "deepseek",
            "deepseek-reasoner*",
            ThinkingWire::Fixed,
            fixed(Effort::Auto),
            DEEPSEEK_REASONER,
            "2025-01-20",
        ),
        entry(
            "deepseek",
            "deepseek-chat*",
            ThinkingWire::Fixed,
            fixed(Effort::Off),
            DEEPSEEK_PRICING,
            "2025-08-21",
        ),
    ]
}

/// Qwen on DashScope (OpenAI-compatible mode): hybrid models take `enable_thinking` plus an
/// optional `thinking_budget`; QwQ and `*-thinking-*` always think; `*-instruct-*` never.
pub fn qwen() -> Vec<CapabilityEntry> {
    use Effort::{Auto, High, Low, Medium, Off};
    let budget = |b: u32| json!({"enable_thinking": true, "thinking_budget": b});
    let hybrid = || {
        vec![
            (Off, json!({"enable_thinking": false})),
            (Auto, json!({"enable_thinking": true})),
            (Low, budget(1024)),
            (Medium, budget(4096)),
            (High, budget(16384)),
        ]
    };
    vec![
        entry(
            "qwen",
            "qwq*",
            ThinkingWire::Fixed,
            fixed(Auto),
            DASHSCOPE_THINKING,
            "2025-03-06",
        ),
        entry(
            "qwen",
            "qwen3*thinking*",
            ThinkingWire::Fixed,
            fixed(Auto),
            DASHSCOPE_THINKING,
            "2025-07-25",
        ),
        entry(
            "qwen",
            "qwen3*instruct*",
            ThinkingWire::Fixed,
            fixed(Off),
            DASHSCOPE_THINKING,
            "2025-07-21",
        ),
        entry(
            "qwen",
            "qwen3*",
            ThinkingWire::EnableThinking,
            hybrid(),
            DASHSCOPE_THINKING,
            "2025-04-29",
        ),
        entry(
            "qwen",
            "qwen-plus*",
            ThinkingWire::EnableThinking,
            hybrid(),
            DASHSCOPE_THINKING,
            "2025-04-29",
        ),
        entry(
            "qwen",
            "qwen-flash*",
            ThinkingWire::EnableThinking,
            hybrid(),
            DASHSCOPE_THINKING,
            "2025-07-28",
        ),
    ]
}

/// Qwen3-style chat templates served by vLLM (or SGLang): `chat_template_kwargs.enable_thinking`.
pub fn vllm() -> Vec<CapabilityEntry> {
    let kwargs = |on: bool| json!({"chat_template_kwargs": {"enable_thinking": on}});
    vec![
        entry(
            "vllm",
            "*qwen3*",
            ThinkingWire::ChatTemplateKwargs,
            vec![(Effort::Off, kwargs(false)), (Effort::Auto, kwargs(true))],
            QWEN_VLLM,
            "2025-04-29",
        ),
        entry(
            "vllm",
            "*deepseek-r1*",
            ThinkingWire::Fixed,
            fixed(Effort::Auto),
            VLLM_REASONING,
            "2025-02-01",
        ),
    ]
}

/// Anthropic's OpenAI-compatible endpoint: `thinking: {type, budget_tokens}` on models with
/// extended thinking; Claude 3.0/3.5 never think.
pub fn anthropic() -> Vec<CapabilityEntry> {
    use Effort::{High, Low, Medium, Off};
    let levels = || {
        let on = |b: u32| json!({"thinking": {"type": "enabled", "budget_tokens": b}});
        vec![
            (Off, json!({"thinking": {"type": "disabled"}})),
            (Low, on(1024)),
            (Medium, on(4096)),
            (High, on(16384)),
        ]
    };
    let tt = ThinkingWire::ThinkingType;
    vec![
        entry(
            "anthropic",
            "claude-3-7-sonnet*",
            tt,
            levels(),
            ANTHROPIC_OPENAI_SDK,
            "2025-02-24",
        ),
        entry(
            "anthropic",
            "claude-sonnet-4*",
            tt,
            levels(),
            ANTHROPIC_THINKING,
            "2025-05-22",
        ),
        entry(
            "anthropic",
            "claude-opus-4*",
            tt,
            levels(),
            ANTHROPIC_THINKING,
            "2025-05-22",
        ),
        entry(
            "anthropic",
            "claude-haiku-4*",
            tt,
            levels(),
            ANTHROPIC_THINKING,
            "2025-10-15",
        ),
        entry(
            "anthropic",
            "claude-3*",
            ThinkingWire::Fixed,
            fixed(Off),
            ANTHROPIC_OPENAI_SDK,
            "2025-02-24",
        ),
    ]
}

/// Gemini's OpenAI-compatible endpoint: `reasoning_effort` `low`/`medium`/`high` (mapped to
/// thinking budgets by Google); Flash also accepts `none` (thinking off), Pro cannot turn off.
pub fn gemini() -> Vec<CapabilityEntry> {
    use Effort::{High, Low, Medium, Off};
    let re = ThinkingWire::ReasoningEffort;
    vec![
        entry(
            "gemini",
            "gemini-2.5-pro*",
            re,
            effort_levels(&[Low, Medium, High]),
            GEMINI_OPENAI,
            "2025-06-17",
        ),
        entry(
            "gemini",
            "gemini-2.5-flash*",
            re,
            effort_levels(&[Off, Low, Medium, High]),
            GEMINI_OPENAI,
            "2025-06-17",
        ),
    ]
}

/// OpenRouter (any routed model): `reasoning: {effort}` or `reasoning: {enabled}`.
pub fn openrouter() -> Vec<CapabilityEntry> {
    use Effort::{Auto, High, Low, Medium, Minimal, Off};
    let eff = |l: Effort| json!({"reasoning": {"effort": l.as_str()}});
    vec![entry(
        "openrouter",
        "*",
        ThinkingWire::OpenRouterReasoning,
        vec![
            (Off, json!({"reasoning": {"enabled": false}})),
            (Auto, json!({"reasoning": {"enabled": true}})),
            (Minimal, eff(Minimal)),
            (Low, eff(Low)),
            (Medium, eff(Medium)),
            (High, eff(High)),
        ],
        OPENROUTER_REASONING,
        "2025-08-07",
    )]
}

/// Zhipu GLM 4.5 / 4.6: `thinking: {type: enabled | disabled}`.
pub fn zhipu() -> Vec<CapabilityEntry> {
    let t = |on: &str| json!({"thinking": {"type": on}});
    ["glm-4.5*", "glm-4.6*"]
        .into_iter()
        .map(|pattern| {
            entry(
                "zhipu",
                pattern,
                ThinkingWire::ThinkingType,
                vec![(Effort::Off, t("disabled")), (Effort::Auto, t("enabled"))],
                GLM_THINKING,
                "2025-07-28",
            )
        })
        .collect()
}

/// Every built-in entry, grouped by profile.
pub fn builtin_entries() -> Vec<CapabilityEntry> {
    [
        openai(),
        deepseek(),
        qwen(),
        vllm(),
        anthropic(),
        gemini(),
        openrouter(),
        zhipu(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
