//! Step 2 of the verdict: the first-match outcome table.
//!
//! One pure function over (mode, output summary, finish class) decides deliver or fail, and with
//! which reason code. Rows are evaluated top to bottom and the first matching row wins, so the
//! order below *is* the rule.

use gateway_ports::{Category, FinishClass, ReasonCode, ResponseMode};

use super::registry::reason_category;
use super::summary::OutputSummary;

/// The outcome of step 2: deliver, or fail with a verdict reason code (one of the
/// seven of V-43; its category is [`reason_category`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The result is deliverable.
    Deliver,
    /// The attempt fails with this code.
    Fail(ReasonCode),
}

impl Outcome {
    /// `true` for [`Outcome::Deliver`].
    pub const fn is_deliver(self) -> bool {
        matches!(self, Self::Deliver)
    }

    /// The failure's reason code, `None` when delivered.
    pub const fn reason_code(self) -> Option<ReasonCode> {
        match self {
            Self::Deliver => None,
            Self::Fail(code) => Some(code),
        }
    }

    /// The failure's category by the registry, `None` when delivered.
    pub fn category(self) -> Option<Category> {
        self.reason_code().and_then(reason_category)
    }
}

/// `judge_outcome(mode, summary, finish_class)` (pinned truth table V-36). First
/// matching row wins:
///
/// | row | condition | text | openai |
/// | --- | --- | --- | --- |
/// | 1 | finish `UpstreamError` (beats everything) | `T(upstream_finish_error)` | same |
/// | 2 | openai: `tools_present && !tools_ok` | — | `Truncated` → `RI(tool_truncated)`; else `null_arguments` → `RI(tool_arguments_null)`; else `T(tool_incomplete)` |
/// | 3 | `body_output` | deliver | deliver |
/// | 4 | finish `Truncated` / `Filtered` | `RI(length_without_content)` / `RI(filtered_without_content)` | deliver |
/// | 5 | openai, `any_output`, finish `Natural` or `Unknown` | — | deliver |
/// | 6 | everything else | `T(empty_completion)` | same |
pub fn judge_outcome(
    mode: ResponseMode,
    summary: &OutputSummary,
    finish_class: FinishClass,
) -> Outcome {
    let openai = mode == ResponseMode::OpenAi;
    // Row 1.
    if finish_class == FinishClass::UpstreamError {
        return Outcome::Fail(ReasonCode::UpstreamFinishError);
    }
    // Row 2: body content cannot mask a bad tool (V-32).
    if openai && summary.tools_present && !summary.tools_ok {
        return Outcome::Fail(if finish_class == FinishClass::Truncated {
            ReasonCode::ToolTruncated
        } else if summary.null_arguments {
            ReasonCode::ToolArgumentsNull
        } else {
            ReasonCode::ToolIncomplete
        });
    }
    // Row 3.
    if summary.body_output {
        return Outcome::Deliver;
    }
    // Row 4.
    match (finish_class, openai) {
        (FinishClass::Truncated | FinishClass::Filtered, true) => return Outcome::Deliver,
        (FinishClass::Truncated, false) => {
            return Outcome::Fail(ReasonCode::LengthWithoutContent);
        }
        (FinishClass::Filtered, false) => {
            return Outcome::Fail(ReasonCode::FilteredWithoutContent);
        }
        _ => {}
    }
    // Row 5.
    if openai
        && summary.any_output
        && matches!(finish_class, FinishClass::Natural | FinishClass::Unknown)
    {
        return Outcome::Deliver;
    }
    // Row 6.
    Outcome::Fail(ReasonCode::EmptyCompletion)
}
