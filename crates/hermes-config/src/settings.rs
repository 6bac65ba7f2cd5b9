//! The typed settings Hermes reads from `config.yaml`, with Hermes's defaults. Unknown keys are
//! kept in [`Config::raw`] (later features read their own sections from it) and otherwise
//! ignored, so a config written for the Python Hermes loads unchanged.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ConfigError, Environment, yaml};

/// The toolsets enabled when config and command line name none.
pub const DEFAULT_TOOLSETS: &[&str] = &["hermes-cli"];

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub model: ModelSettings,
    pub agent: AgentSettings,
    pub toolsets: Vec<String>,
    pub terminal: TerminalSettings,
    /// The whole document after `${VAR}` substitution (`Null` when there is no file).
    pub raw: Value,
    /// The file this came from.
    pub path: PathBuf,
}

/// `model:` — which provider and model to talk to. Also accepts the short form
/// `model: some/model-name`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ModelSettings {
    pub provider: Option<String>,
    pub default: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Output token limit sent with each request (none by default: the provider decides).
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// `provider: local`: the GGUF file to run (relative paths are under `$HERMES_HOME`).
    pub path: Option<String>,
    /// `provider: local`: a built-in chat template name (`gemma`, `chatml`, `llama3`, ...) or
    /// a template text; none uses the template stored in the GGUF.
    pub chat_template: Option<String>,
    /// Context window in tokens (`provider: local`: the KV cache size).
    pub context_length: Option<u32>,
    /// `provider: local`: inference threads (default: the machine's physical cores).
    pub threads: Option<u32>,
    /// `provider: local`: nucleus sampling and the sampling seed.
    pub top_p: Option<f32>,
    pub seed: Option<u32>,
    /// `native` (default): the provider's own tool calling; `prompt`: tools are described in
    /// the system prompt and the reply parsed back into tool calls (for OpenAI-compatible
    /// servers without tool support; always the case for `provider: local`).
    pub tool_calling: Option<String>,
    /// `provider: local`: `auto` (default: the model answers in text or calls a tool) or
    /// `required` (while tools are offered, every reply is a tool call).
    pub tool_choice: Option<String>,
    /// Wire format override: `chat_completions`, `anthropic_messages` or `codex_responses`
    /// (default: the provider's own, else guessed from the base URL).
    pub api_mode: Option<String>,
}

/// `agent:` — the turn loop.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AgentSettings {
    /// Model calls allowed per turn.
    pub max_turns: u32,
    /// Retries of a failed model call after the first attempt.
    pub api_max_retries: u32,
    /// Backoff base and cap, in seconds.
    pub retry_base_delay: f64,
    pub retry_max_delay: f64,
    /// Read-only tool calls run at most this many at once.
    pub max_parallel_tools: usize,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            max_turns: 90,
            api_max_retries: 3,
            retry_base_delay: 5.0,
            retry_max_delay: 120.0,
            max_parallel_tools: 8,
        }
    }
}

/// `terminal:` — the terminal tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct TerminalSettings {
    /// Seconds before a foreground command is killed.
    pub timeout: u64,
    /// Working directory of commands (default: where hermes was started).
    pub cwd: Option<String>,
    /// Environment variables passed to commands even though they look like secrets.
    pub env_passthrough: Vec<String>,
}

impl Default for TerminalSettings {
    fn default() -> Self {
        TerminalSettings {
            timeout: 180,
            cwd: None,
            env_passthrough: Vec::new(),
        }
    }
}

impl Config {
    /// Reads `path` (a missing file gives the defaults).
    pub fn load(path: &Path, env: &Environment) -> Result<Config, ConfigError> {
        let text = match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
            Ok(meta) if meta.is_dir() => {
                return Err(ConfigError::IsDirectory {
                    path: path.to_path_buf(),
                });
            }
            Ok(_) => std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?,
        };
        Config::from_yaml(path, &text, env)
    }

    /// Parses config text as if it were the file at `path`.
    pub fn from_yaml(path: &Path, text: &str, env: &Environment) -> Result<Config, ConfigError> {
        let mut raw = yaml::parse(path, text)?;
        yaml::substitute(&mut raw, env);
        if !(raw.is_object() || raw.is_null()) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "(top level)".into(),
                message: "expected a mapping of settings".into(),
            });
        }
        let mut config = Config {
            path: path.to_path_buf(),
            raw,
            ..Config::default()
        };
        config.model = match config.raw.get("model") {
            Some(Value::String(name)) => ModelSettings {
                default: Some(name.clone()),
                ..ModelSettings::default()
            },
            _ => config.section("model")?,
        };
        config.agent = config.section("agent")?;
        config.terminal = config.section("terminal")?;
        config.toolsets = match config.raw.get("toolsets") {
            None | Some(Value::Null) => DEFAULT_TOOLSETS.iter().map(|s| s.to_string()).collect(),
            Some(Value::String(s)) => split_list(s),
            Some(_) => config.section("toolsets")?,
        };
        Ok(config)
    }

    /// Deserialises the top-level section `key` (absent or null: the type's default). Type
    /// errors name the key path, e.g. `agent.max_turns`.
    pub fn section<T: DeserializeOwned + Default>(&self, key: &str) -> Result<T, ConfigError> {
        match self.raw.get(key) {
            None | Some(Value::Null) => Ok(T::default()),
            Some(value) => serde_path_to_error::deserialize(value.clone()).map_err(|e| {
                let inner = e.path().to_string();
                let key = if inner == "." || inner.is_empty() {
                    key.to_string()
                } else {
                    format!("{key}.{inner}")
                };
                ConfigError::Invalid {
                    path: self.path.clone(),
                    key,
                    message: e.into_inner().to_string(),
                }
            }),
        }
    }
}

/// "a, b c" -> ["a", "b", "c"]
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_yaml(
            Path::new("/h/config.yaml"),
            text,
            &Environment::isolated([("KEY", "sk-1")]),
        )
    }

    #[test]
    fn the_shared_bench_config_loads_unchanged() {
        let c = parse(
            "model:\n  provider: custom\n  default: mock-model\n  base_url: http://127.0.0.1:5/v1\n  api_key: sk-mock-not-a-real-key\n",
        )
        .unwrap();
        assert_eq!(c.model.provider.as_deref(), Some("custom"));
        assert_eq!(c.model.default.as_deref(), Some("mock-model"));
        assert_eq!(c.model.base_url.as_deref(), Some("http://127.0.0.1:5/v1"));
        assert_eq!(c.model.api_key.as_deref(), Some("sk-mock-not-a-real-key"));
        assert_eq!(c.agent.max_turns, 90);
        assert_eq!(c.terminal.timeout, 180);
        assert_eq!(c.toolsets, vec!["hermes-cli"]);
    }

    #[test]
    fn defaults_when_empty_and_unknown_keys_are_kept() {
        let c = parse("").unwrap();
        assert_eq!(c.agent.max_turns, 90);
        let c = parse("display:\n  skin: ares\nagent:\n  max_turns: 7\n  future_key: 1\n").unwrap();
        assert_eq!(c.agent.max_turns, 7);
        assert_eq!(c.raw["display"]["skin"], "ares");
    }

    #[test]
    fn model_short_form_and_substitution() {
        let c = parse("model: openai/gpt-5\n").unwrap();
        assert_eq!(c.model.default.as_deref(), Some("openai/gpt-5"));
        let c = parse("model:\n  api_key: ${KEY}\n").unwrap();
        assert_eq!(c.model.api_key.as_deref(), Some("sk-1"));
    }

    #[test]
    fn local_model_settings() {
        let c = parse(
            "model:\n  provider: local\n  path: models/x.gguf\n  chat_template: chatml\n  context_length: 4096\n  threads: 2\n  top_p: 0.9\n  seed: 7\n  tool_calling: prompt\n  tool_choice: required\n",
        )
        .unwrap();
        let m = &c.model;
        assert_eq!(m.path.as_deref(), Some("models/x.gguf"));
        assert_eq!(m.chat_template.as_deref(), Some("chatml"));
        assert_eq!(
            (m.context_length, m.threads, m.seed),
            (Some(4096), Some(2), Some(7))
        );
        assert_eq!(m.top_p, Some(0.9));
        assert_eq!(m.tool_calling.as_deref(), Some("prompt"));
        assert_eq!(m.tool_choice.as_deref(), Some("required"));
    }

    #[test]
    fn toolsets_as_list_or_string() {
        assert_eq!(
            parse("toolsets: [terminal, file]\n").unwrap().toolsets,
            vec!["terminal", "file"]
        );
        assert_eq!(
            parse("toolsets: terminal,file\n").unwrap().toolsets,
            vec!["terminal", "file"]
        );
    }

    #[test]
    fn type_errors_name_the_key() {
        let err = parse("agent:\n  max_turns: lots\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("agent.max_turns"), "{text}");
        assert!(text.contains("/h/config.yaml"), "{text}");
    }

    #[test]
    fn top_level_scalar_is_rejected() {
        assert!(parse("just a string\n").is_err());
    }

    #[test]
    fn directory_in_place_of_the_file_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Config::load(tmp.path(), &Environment::isolated::<&str, &str>([])).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }
}
