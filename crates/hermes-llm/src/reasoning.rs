//! Reasoning effort: how hard a reasoning model should think (`agent.reasoning_effort`, per-model
//! `agent.reasoning_overrides`, `/reasoning LEVEL`). One provider-neutral level, translated by
//! each wire format: OpenRouter and Nous take a `reasoning` object, other Chat Completions
//! endpoints and the Responses API an effort string, Anthropic and Bedrock's Claude a thinking
//! block (adaptive effort on current Claude models, a token budget on older ones). Unset means
//! nothing is sent and the provider's default applies.

use serde_json::Value;

/// A reasoning effort level. The names are the Python Hermes's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReasoningEffort {
    /// Thinking switched off (`none`, `false`, `off`, `disabled`).
    Off,
    Minimal,
    Low,
    Medium,
    High,
    XHigh,
    /// The strongest level a provider has (`max`, `ultra`).
    Max,
}

/// The level names accepted, for help and completion.
pub const LEVELS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

impl ReasoningEffort {
    /// Parses a level name; `None` for a name that is not one.
    pub fn parse(text: &str) -> Option<ReasoningEffort> {
        Some(match text.trim().to_ascii_lowercase().as_str() {
            "none" | "off" | "false" | "disabled" | "no" => ReasoningEffort::Off,
            "minimal" => ReasoningEffort::Minimal,
            "low" => ReasoningEffort::Low,
            "medium" => ReasoningEffort::Medium,
            "high" => ReasoningEffort::High,
            "xhigh" => ReasoningEffort::XHigh,
            "max" | "ultra" => ReasoningEffort::Max,
            _ => return None,
        })
    }

    /// A config value: a level name, or YAML `false` for off. `Ok(None)` when unset (empty,
    /// null, `true`); an error naming the accepted levels otherwise.
    pub fn from_config(value: &Value) -> Result<Option<ReasoningEffort>, String> {
        match value {
            Value::Null | Value::Bool(true) => Ok(None),
            Value::Bool(false) => Ok(Some(ReasoningEffort::Off)),
            Value::String(s) if s.trim().is_empty() => Ok(None),
            Value::String(s) => ReasoningEffort::parse(s).map(Some).ok_or_else(|| {
                format!(
                    "unknown reasoning effort {s:?} (use one of: {})",
                    LEVELS.join(", ")
                )
            }),
            other => Err(format!(
                "reasoning effort must be a level name, not {other} (use one of: {})",
                LEVELS.join(", ")
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Off => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::XHigh => "xhigh",
            ReasoningEffort::Max => "max",
        }
    }

    /// The OpenAI effort string (Chat Completions `reasoning_effort`, Responses
    /// `reasoning.effort`): `none` .. `xhigh`, the strongest being `xhigh`.
    pub(crate) fn openai(self) -> &'static str {
        match self {
            ReasoningEffort::Max => "xhigh",
            other => other.as_str(),
        }
    }

    /// Thinking tokens for models that take a budget rather than a level.
    pub(crate) fn budget_tokens(self) -> u32 {
        match self {
            ReasoningEffort::Off => 0,
            ReasoningEffort::Minimal | ReasoningEffort::Low => 4_000,
            ReasoningEffort::Medium => 8_000,
            ReasoningEffort::High => 16_000,
            ReasoningEffort::XHigh | ReasoningEffort::Max => 32_000,
        }
    }
}

/// The configured effort: a default and per-model overrides (first matching substring wins,
/// compared case-insensitively with `-`, `_` and `.` treated alike).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReasoningSettings {
    pub default: Option<ReasoningEffort>,
    pub overrides: Vec<(String, ReasoningEffort)>,
}

impl ReasoningSettings {
    /// From `agent.reasoning_effort` and `agent.reasoning_overrides` (`{model: level}`);
    /// entries that cannot be read are returned as warnings and skipped.
    pub fn from_config(effort: &Value, overrides: &Value) -> (ReasoningSettings, Vec<String>) {
        let mut warnings = Vec::new();
        let default = ReasoningEffort::from_config(effort).unwrap_or_else(|e| {
            warnings.push(format!("agent.reasoning_effort is ignored: {e}"));
            None
        });
        let mut list = Vec::new();
        if let Value::Object(map) = overrides {
            for (model, level) in map {
                match ReasoningEffort::from_config(level) {
                    Ok(Some(effort)) => list.push((model.clone(), effort)),
                    Ok(None) => {}
                    Err(e) => {
                        warnings.push(format!("agent.reasoning_overrides.{model} is ignored: {e}"))
                    }
                }
            }
        }
        (
            ReasoningSettings {
                default,
                overrides: list,
            },
            warnings,
        )
    }

    /// The effort for `model`.
    pub fn for_model(&self, model: &str) -> Option<ReasoningEffort> {
        let key = normalise(model);
        self.overrides
            .iter()
            .find(|(pattern, _)| !pattern.is_empty() && key.contains(&normalise(pattern)))
            .map(|(_, effort)| *effort)
            .or(self.default)
    }
}

fn normalise(name: &str) -> String {
    name.to_ascii_lowercase()
        .chars()
        .map(|c| if matches!(c, '_' | '.') { '-' } else { c })
        .collect()
}

/// How a Claude model takes thinking: older families a token budget, current ones an adaptive
/// effort level (and `xhigh` only from Opus 4.7 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClaudeThinking {
    Budget,
    Adaptive {
        xhigh: bool,
    },
    /// Haiku models: no extended thinking is requested.
    Unsupported,
}

pub(crate) fn claude_thinking(model: &str) -> ClaudeThinking {
    let m = normalise(model);
    if m.contains("haiku") {
        return ClaudeThinking::Unsupported;
    }
    const BUDGET_FAMILIES: &[&str] = &[
        "claude-3",
        "claude-opus-4-0",
        "claude-opus-4-1",
        "claude-sonnet-4-0",
        "claude-opus-4-2025",
        "claude-sonnet-4-2025",
        "claude-opus-4-5",
        "claude-sonnet-4-5",
    ];
    // Not Claude at all (an Anthropic-compatible endpoint serving another model): budgets are
    // what those accept.
    if !m.contains("claude") || BUDGET_FAMILIES.iter().any(|f| m.contains(f)) {
        return ClaudeThinking::Budget;
    }
    let no_xhigh = ["claude-opus-4-6", "claude-sonnet-4-6"]
        .iter()
        .any(|f| m.contains(f));
    ClaudeThinking::Adaptive { xhigh: !no_xhigh }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_parse_like_the_python_hermes() {
        assert_eq!(
            ReasoningEffort::from_config(&json!(false)),
            Ok(Some(ReasoningEffort::Off))
        );
        assert_eq!(ReasoningEffort::from_config(&json!("")), Ok(None));
        assert_eq!(ReasoningEffort::from_config(&json!(null)), Ok(None));
        assert_eq!(
            ReasoningEffort::from_config(&json!(" High ")),
            Ok(Some(ReasoningEffort::High))
        );
        assert_eq!(
            ReasoningEffort::from_config(&json!("ultra")),
            Ok(Some(ReasoningEffort::Max))
        );
        let e = ReasoningEffort::from_config(&json!("extreme")).unwrap_err();
        assert!(
            e.contains("none, minimal, low, medium, high, xhigh, max"),
            "{e}"
        );
        assert!(ReasoningEffort::from_config(&json!(3)).is_err());
    }

    #[test]
    fn per_model_overrides_win_by_substring() {
        let (s, warnings) = ReasoningSettings::from_config(
            &json!("low"),
            &json!({"gpt-5.1": "high", "claude_opus": "none", "bad": "loud"}),
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(
            s.for_model("openai/gpt-5-1-codex"),
            Some(ReasoningEffort::High)
        );
        assert_eq!(s.for_model("claude-opus-4-7"), Some(ReasoningEffort::Off));
        assert_eq!(s.for_model("deepseek-reasoner"), Some(ReasoningEffort::Low));
        assert_eq!(ReasoningSettings::default().for_model("x"), None);
    }

    #[test]
    fn claude_families_take_budgets_or_levels() {
        assert_eq!(claude_thinking("claude-sonnet-4-5"), ClaudeThinking::Budget);
        assert_eq!(
            claude_thinking("claude-3-7-sonnet-latest"),
            ClaudeThinking::Budget
        );
        assert_eq!(claude_thinking("MiniMax-M2"), ClaudeThinking::Budget);
        assert_eq!(
            claude_thinking("claude-haiku-4-5"),
            ClaudeThinking::Unsupported
        );
        assert_eq!(
            claude_thinking("claude-opus-4-6"),
            ClaudeThinking::Adaptive { xhigh: false }
        );
        assert_eq!(
            claude_thinking("anthropic/claude-opus-4.7"),
            ClaudeThinking::Adaptive { xhigh: true }
        );
    }
}
