//! The config.yaml keys that shape the system prompt, read with the Python Hermes's names and
//! defaults: `agent.tool_use_enforcement` (`auto`, `true`/`false`, or a list of model-name
//! fragments) and the top-level `context_file_max_chars`.

use hermes_config::{Config, ConfigError};
use serde::Deserialize;

use crate::prompt::context_files::DEFAULT_MAX_CHARS;
use crate::prompt::text::ACT_NOW_MODELS;

/// When the "act now, do not describe" rule is given.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ToolUseEnforcement {
    /// `true` / `false`: every model / none.
    Flag(bool),
    /// `auto` (the default: the model families known to need it), or `always` / `never` and
    /// the other spellings the Python Hermes accepts.
    Mode(String),
    /// Model-name fragments, e.g. `[gpt, qwen]`.
    Models(Vec<String>),
}

impl Default for ToolUseEnforcement {
    fn default() -> Self {
        ToolUseEnforcement::Mode("auto".into())
    }
}

impl ToolUseEnforcement {
    pub fn applies_to(&self, model: &str) -> bool {
        let model = model.to_lowercase();
        let matches =
            |fragment: &str| !fragment.is_empty() && model.contains(&fragment.to_lowercase());
        match self {
            ToolUseEnforcement::Flag(on) => *on,
            ToolUseEnforcement::Models(list) => list.iter().any(|f| matches(f)),
            ToolUseEnforcement::Mode(mode) => match mode.trim().to_lowercase().as_str() {
                "true" | "always" | "yes" | "on" => true,
                "false" | "never" | "no" | "off" => false,
                _ => ACT_NOW_MODELS.iter().any(|f| matches(f)),
            },
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AgentKeys {
    tool_use_enforcement: ToolUseEnforcement,
}

/// Prompt settings of one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptSettings {
    pub tool_use_enforcement: ToolUseEnforcement,
    /// Characters kept of one context file (or SOUL.md).
    pub context_file_max_chars: usize,
}

impl Default for PromptSettings {
    fn default() -> Self {
        PromptSettings {
            tool_use_enforcement: ToolUseEnforcement::default(),
            context_file_max_chars: DEFAULT_MAX_CHARS,
        }
    }
}

impl PromptSettings {
    pub fn from_config(config: &Config) -> Result<PromptSettings, ConfigError> {
        let agent: AgentKeys = config.section("agent")?;
        let max: Option<f64> = config.section("context_file_max_chars")?;
        Ok(PromptSettings {
            tool_use_enforcement: agent.tool_use_enforcement,
            context_file_max_chars: max
                .filter(|m| m.is_finite() && *m >= 1.0)
                .map_or(DEFAULT_MAX_CHARS, |m| m as usize),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;
    use std::path::Path;

    fn settings(yaml: &str) -> PromptSettings {
        let env = Environment::isolated::<&str, &str>([]);
        let c = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        PromptSettings::from_config(&c).unwrap()
    }

    #[test]
    fn enforcement_modes() {
        let auto = settings("").tool_use_enforcement;
        assert!(auto.applies_to("openai/gpt-5.1"));
        assert!(auto.applies_to("Qwen3-Coder"));
        assert!(!auto.applies_to("anthropic/claude-sonnet-4.5"));
        let on = settings("agent:\n  tool_use_enforcement: true\n").tool_use_enforcement;
        assert!(on.applies_to("anthropic/claude-sonnet-4.5"));
        let off = settings("agent:\n  tool_use_enforcement: never\n").tool_use_enforcement;
        assert!(!off.applies_to("gpt-5"));
        let list = settings("agent:\n  tool_use_enforcement: [claude]\n").tool_use_enforcement;
        assert!(list.applies_to("anthropic/claude-sonnet-4.5") && !list.applies_to("gpt-5"));
    }

    #[test]
    fn context_cap_defaults_and_overrides() {
        assert_eq!(settings("").context_file_max_chars, 20_000);
        assert_eq!(
            settings("context_file_max_chars: 5000\n").context_file_max_chars,
            5000
        );
        assert_eq!(
            settings("context_file_max_chars: null\n").context_file_max_chars,
            20_000
        );
    }
}
