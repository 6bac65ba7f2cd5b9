//! [`SessionSpec`]: everything a frontend decides about one session before it is built: where it
//! comes from ([`Platform`]: the stored source, the skills and prompt hints that apply, the tools
//! it may not have), its working directory (explicit: nothing reads the process's current
//! directory), the model it talks to, its toolsets, approvals, resume and limits. The command
//! line converts its flags into one; the gateway, cron and the API server make their own.

use std::fmt;
use std::path::PathBuf;

use hermes_llm::Overrides;

/// Where a session runs. Decides the stored `source`, the `platform_toolsets.<name>` entry
/// and the platform hints of the system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Platform {
    /// The terminal: the REPL, `-z`, `chat -q`.
    Cli,
    /// A scheduled job: no `cronjob` (a job must not schedule more jobs), no `clarify`.
    Cron,
    /// The OpenAI-compatible API server.
    Api,
    /// A sub-agent's own session.
    Subagent,
    /// An editor driving Hermes over the Agent Client Protocol (`hermes acp`).
    Acp,
    /// A chat platform of the gateway, by name (`telegram`, `discord`, ...).
    Gateway(String),
}

impl Platform {
    /// The name stored as the session's source and used for platform settings.
    pub fn name(&self) -> &str {
        match self {
            Platform::Cli => "cli",
            Platform::Cron => "cron",
            Platform::Api => "api",
            Platform::Subagent => "subagent",
            Platform::Acp => "acp",
            Platform::Gateway(name) => name,
        }
    }

    /// Whether someone can answer questions and approvals as they come.
    pub fn is_unattended(&self) -> bool {
        matches!(self, Platform::Cron | Platform::Subagent)
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which stored conversation a session continues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Resume {
    /// A new stored session.
    #[default]
    New,
    /// A stored session by id, unique id prefix or title.
    Session(String),
    /// The most recently active session started in the spec's working directory, else the
    /// most recent one.
    Latest,
}

/// One session to build.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub platform: Platform,
    /// Relative paths, commands and context files (AGENTS.md, ...) start here.
    pub cwd: PathBuf,
    /// Provider, model and base URL chosen for this session (else config.yaml, else the
    /// environment).
    pub model: Overrides,
    /// Toolsets (names or composites); `None`: `platform_toolsets.<platform>`, else `toolsets`.
    pub toolsets: Option<Vec<String>>,
    /// Approve every flagged command (hardline ones stay refused).
    pub yolo: bool,
    /// The OS sandbox of commands (`--sandbox`; else `terminal.sandbox` in config.yaml).
    pub sandbox: Option<hermes_tools::sandbox::SandboxMode>,
    pub resume: Resume,
    /// Model calls per turn (else `agent.max_turns`).
    pub max_turns: Option<u32>,
    /// Reasoning effort for every model (else `agent.reasoning_effort` and its overrides).
    pub reasoning_effort: Option<String>,
    /// Leave SOUL.md, context files and the memory snapshot out of the system prompt.
    pub ignore_rules: bool,
    /// Append each turn to `trajectories/` (else `agent.save_trajectories`).
    pub save_trajectories: bool,
    /// The chat the session talks in (gateway chats): tools see it (a cron job created
    /// there delivers back to it).
    pub origin: Option<hermes_tools::ChatOrigin>,
    /// A client's own system text (an API request's system messages, a Responses request's
    /// `instructions`): appended to the assembled system prompt, so the model still gets one
    /// system message (strict chat templates reject a second one).
    pub instructions: Option<String>,
    /// Scopes the external memory provider's facts (an API client's `X-Hermes-Session-Key`):
    /// facts written in the session carry it and recall sees only facts carrying it.
    pub memory_scope: Option<String>,
    /// The gateway's key of the chat the session talks in (`agent:main:telegram:dm:42`):
    /// names the chat's conversation in an external memory provider (Honcho).
    pub chat_key: Option<String>,
}

impl SessionSpec {
    /// A new session on `platform` in `cwd`, everything else from config.yaml.
    pub fn new(platform: Platform, cwd: impl Into<PathBuf>) -> SessionSpec {
        SessionSpec {
            platform,
            cwd: cwd.into(),
            model: Overrides::default(),
            toolsets: None,
            yolo: false,
            sandbox: None,
            resume: Resume::New,
            max_turns: None,
            reasoning_effort: None,
            ignore_rules: false,
            save_trajectories: false,
            origin: None,
            instructions: None,
            memory_scope: None,
            chat_key: None,
        }
    }
}
