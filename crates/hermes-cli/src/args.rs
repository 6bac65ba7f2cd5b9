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

    /// Say more on stderr: `-v` what Hermes does, `-vv` debugging detail (`HERMES_LOG`, e.g.
    /// `debug` or `hermes_llm=trace`, chooses precisely).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(flatten)]
    pub common: CommonArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Chat interactively, or answer one query with -q.
    Chat(ChatArgs),
    /// Count the tokens of the system prompt and of each tool schema sent with every request.
    #[command(name = "prompt-size")]
    PromptSize(PromptSizeArgs),
    /// List, show, search, rename, delete, export or prune stored sessions.
    Sessions(crate::sessions_cmd::SessionsArgs),
    /// Models: `fetch-local` downloads the default local model.
    Model(crate::model_cmd::ModelArgs),
    /// Guided first configuration: provider, key (saved in .env), model; then `hermes doctor`.
    Setup(crate::setup_cmd::SetupArgs),
    /// Read and change config.yaml: show, get, set, unset, path, env-path, edit.
    Config(crate::config_cmd::ConfigArgs),
    /// The tools and toolsets, and which are enabled: list, enable, disable.
    Tools(crate::tools_cmd::ToolsArgs),
    /// The built-in memory (MEMORY.md, USER.md): status, show, reset.
    Memory(crate::memory_cmd::MemoryArgs),
    /// The skills (procedures the agent saved): list, show.
    Skills(crate::skills_cmd::SkillsArgs),
    /// The curator of agent-made skills: status, run [--dry-run], pause, resume, pin, unpin, restore.
    Curator(crate::curator_cmd::CuratorArgs),
    /// The Honcho memory provider's settings: status, enable, disable, mode, strategy, peer,
    /// tokens, map.
    Honcho(crate::honcho_cmd::HonchoArgs),
    /// Mixture-of-Agents presets (the `mixture_of_agents` tool's panels): list, delete.
    Moa(crate::moa_cmd::MoaArgs),
    /// Profiles, each a separate home: list, show, create, use, delete.
    Profile(crate::profile_cmd::ProfileArgs),
    /// What is set up: home, provider, model, key, tools, memory, sessions.
    Status(crate::status_cmd::StatusArgs),
    /// Check the setup for problems and say how to fix each.
    Doctor(crate::status_cmd::DoctorArgs),
    /// Scheduled jobs: list, add, edit, pause, resume, run, remove, status, tick.
    Cron(crate::cron_cmd::CronArgs),
    /// MCP servers of config.yaml: list (connect and show status), test NAME.
    Mcp(crate::mcp_cmd::McpArgs),
    /// The gateway: the API server, the chat platforms and cron in one process (`run`, the
    /// default, in the foreground; `status`; `stop`).
    Gateway(crate::gateway_cmd::GatewayArgs),
    /// Sign in to Nous Portal or OpenAI Codex (ChatGPT) with a device code; tokens go to auth.json.
    Login(crate::login_cmd::LoginArgs),
    /// Chat users waiting for approval, and those approved: list, approve, revoke.
    Pairing(crate::pairing_cmd::PairingArgs),
    /// Command approvals: `check` prints the verdict the terminal tool would reach.
    Approvals(crate::approvals_cmd::ApprovalsArgs),
    /// Print the shell completion script (bash, zsh or fish).
    Completion(crate::completion_cmd::CompletionArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, ...).
    Acp,
    /// The kanban board shared by all profiles: tasks, links, comments, the dispatcher.
    Kanban(crate::kanban_cmd::KanbanArgs),
    /// A local web UI: sessions, usage, the kanban board, skills, cron, memory, config.
    Dashboard(crate::dashboard_cmd::DashboardArgs),
    /// Where sessions and kanban boards are kept: `migrate --to postgres|sqlite` copies them.
    Store(crate::store_cmd::StoreArgs),
}

#[derive(Debug, Args)]
pub struct PromptSizeArgs {
    #[command(flatten)]
    pub common: CommonArgs,
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

    /// Provider to use: local, openrouter, anthropic, openai, nous, gemini, deepseek, xai, bedrock, ollama, vllm, llamacpp, lmstudio, custom, or a name from custom_providers (`hermes model` lists them).
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

    /// The OS sandbox of commands: workspace-write (the default where the kernel supports
    /// it: writes only in the working directory, temp and caches; no network), read-only, or
    /// off (overrides terminal.sandbox in config.yaml).
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<hermes_tools::sandbox::SandboxMode>,

    /// Reasoning effort: none, minimal, low, medium, high, xhigh or max (overrides
    /// agent.reasoning_effort and its per-model overrides).
    #[arg(long = "reasoning-effort", value_name = "LEVEL")]
    pub reasoning_effort: Option<String>,

    /// Model calls allowed per turn (overrides agent.max_turns).
    #[arg(long = "max-turns", value_name = "N")]
    pub max_turns: Option<u32>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,

    /// Leave SOUL.md, project context files (AGENTS.md, ...) and the memory snapshot out of the
    /// system prompt.
    #[arg(long = "ignore-rules")]
    pub ignore_rules: bool,

    /// Print the token usage and estimated cost of the run on stderr at the end.
    #[arg(long)]
    pub usage: bool,

    /// Continue the stored session ID (an id, a unique id prefix, or a title).
    #[arg(
        short = 'r',
        long = "resume",
        value_name = "ID",
        conflicts_with = "continue_last"
    )]
    pub resume: Option<String>,

    /// Continue the most recent session started in this directory (else the most recent one).
    #[arg(short = 'c', long = "continue")]
    pub continue_last: bool,

    /// Append each turn's conversation to $HERMES_HOME/trajectories/ (ShareGPT JSONL).
    #[arg(long = "save-trajectories")]
    pub save_trajectories: bool,
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
            sandbox: later.sandbox.or(self.sandbox),
            reasoning_effort: later
                .reasoning_effort
                .clone()
                .or_else(|| self.reasoning_effort.clone()),
            max_turns: later.max_turns.or(self.max_turns),
            profile: later.profile.clone().or_else(|| self.profile.clone()),
            ignore_rules: self.ignore_rules || later.ignore_rules,
            usage: self.usage || later.usage,
            resume: later.resume.clone().or_else(|| self.resume.clone()),
            continue_last: self.continue_last || later.continue_last,
            save_trajectories: self.save_trajectories || later.save_trajectories,
        }
    }
}
