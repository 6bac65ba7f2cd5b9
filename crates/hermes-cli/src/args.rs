//! Command-line arguments. Flags shared by every mode live in [`CommonArgs`] and may be given
//! before or after the `chat` subcommand.

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hermes",
    version,
    about = "Hermes: a self-improving AI agent in your terminal",
    args_conflicts_with_subcommands = false
)]
pub struct Cli {
    /// One-shot: answer PROMPT, print only the final answer on stdout, and exit.
    #[arg(short = 'z', long = "oneshot", value_name = "PROMPT")]
    pub oneshot: Option<String>,

    #[command(flatten)]
    pub common: CommonArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat interactively, or answer one query with -q.
    Chat(ChatArgs),
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Answer QUERY (streaming the reply and tool progress) and exit.
    #[arg(short = 'q', long = "query", value_name = "QUERY")]
    pub query: Option<String>,

    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Args, Clone, Default)]
pub struct CommonArgs {
    /// Model to use (overrides model.default).
    #[arg(short = 'm', long)]
    pub model: Option<String>,

    /// Provider to use (openrouter, openai, nous, gemini, deepseek, xai, ollama, vllm, llamacpp, lmstudio, custom).
    #[arg(long)]
    pub provider: Option<String>,

    /// Base URL of an OpenAI-compatible endpoint (implies --provider custom unless one is given).
    #[arg(long = "base-url", value_name = "URL")]
    pub base_url: Option<String>,

    /// Toolsets to enable, comma-separated (overrides `toolsets` in config.yaml).
    #[arg(short = 't', long = "toolsets", value_name = "LIST")]
    pub toolsets: Option<String>,

    /// Approve every command without asking (hardline-dangerous commands stay refused).
    #[arg(long)]
    pub yolo: bool,

    /// Model calls allowed per turn (overrides agent.max_turns).
    #[arg(long = "max-turns", value_name = "N")]
    pub max_turns: Option<u32>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

impl CommonArgs {
    /// These flags, with any given again after the subcommand taking precedence.
    pub fn merged(&self, later: &CommonArgs) -> CommonArgs {
        CommonArgs {
            model: later.model.clone().or_else(|| self.model.clone()),
            provider: later.provider.clone().or_else(|| self.provider.clone()),
            base_url: later.base_url.clone().or_else(|| self.base_url.clone()),
            toolsets: later.toolsets.clone().or_else(|| self.toolsets.clone()),
            yolo: self.yolo || later.yolo,
            max_turns: later.max_turns.or(self.max_turns),
            profile: later.profile.clone().or_else(|| self.profile.clone()),
        }
    }
}
