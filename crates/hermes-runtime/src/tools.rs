//! The tool catalogue of a home: every tool this build has ([`every_tool`]), which toolsets a
//! session asks for ([`configured_toolsets`]: the spec, then `platform_toolsets.<platform>`,
//! then `toolsets`), which MCP servers it connects ([`mcp_selection`]), the tools a cron run may
//! not have, and the settings around them (the working directory from `terminal.cwd`, the
//! reasoning effort).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hermes_config::{Config, HermesHome};
use hermes_core::memory::{MemorySettings, MemoryStore, MemoryTool};
use hermes_core::session_search::SessionSearchTool;
use hermes_core::skills::{self, Library, SkillSettings};
use hermes_core::{code_exec, delegation};
use hermes_llm::reasoning::{ReasoningEffort, ReasoningSettings};
use hermes_tools::{Registry, Tool};
use serde_json::Value;

use crate::error::SessionError;
use crate::spec::Platform;

/// Where the toolsets of a session are chosen, in order: the spec's list (`-t LIST`), then
/// `platform_toolsets.<platform>` (the key the Python Hermes's `hermes tools` writes), then
/// `toolsets`. Returns the list and the setting it came from.
pub fn configured_toolsets(
    requested: Option<&[String]>,
    platform: &Platform,
    config: &Config,
) -> (Vec<String>, String) {
    if let Some(list) = requested {
        return (list.to_vec(), "-t".into());
    }
    let key = format!("platform_toolsets.{}", platform.name());
    let listed = config
        .raw
        .get("platform_toolsets")
        .and_then(|p| p.get(platform.name()))
        .and_then(Value::as_array);
    match listed {
        Some(list) => (
            list.iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect(),
            key,
        ),
        None => (config.toolsets.clone(), "toolsets".into()),
    }
}

/// A `-t` value as a toolset list (comma- or space-separated).
pub fn parse_toolsets(list: &str) -> Vec<String> {
    list.split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The MCP servers a session connects, as the Python Hermes chooses them: every enabled server
/// of `mcp_servers`, unless the toolset list names some (`NAME` or `mcp-NAME`: only those) or
/// holds `no_mcp` (none). Returns the toolset list without those entries, the servers and the
/// warnings about unusable entries.
pub fn mcp_selection(
    toolsets: Vec<String>,
    config: &Config,
) -> (Vec<String>, Vec<hermes_mcp::ServerConfig>, Vec<String>) {
    let (servers, warnings) = hermes_mcp::parse_servers(&config.raw);
    let named = |entry: &str| {
        servers
            .iter()
            .find(|s| entry == s.name || entry.strip_prefix("mcp-") == Some(s.name.as_str()))
            .map(|s| s.name.clone())
    };
    let mut rest = Vec::new();
    let mut explicit = Vec::new();
    let mut none = false;
    for entry in toolsets {
        if entry.trim() == "no_mcp" {
            none = true;
        } else if let Some(name) = named(entry.trim()) {
            explicit.push(name);
        } else {
            rest.push(entry);
        }
    }
    let chosen = servers
        .into_iter()
        .filter(|s| s.enabled && !none && (explicit.is_empty() || explicit.contains(&s.name)))
        .collect();
    (rest, chosen, warnings)
}

/// Where a session's tools run: `terminal.cwd` (relative to `here`), else `here`.
pub fn working_dir(config: &Config, here: &Path) -> Result<PathBuf, SessionError> {
    let Some(dir) = config
        .terminal
        .cwd
        .as_deref()
        .filter(|d| !d.trim().is_empty() && *d != ".")
    else {
        return Ok(here.to_path_buf());
    };
    let path = hermes_tools::paths::resolve(here, dir);
    if !path.is_dir() {
        return Err(SessionError::NotADirectory {
            origin: format!("{}: terminal.cwd", config.path.display()),
            path,
        });
    }
    Ok(path)
}

/// The reasoning effort: the spec's level (`--reasoning-effort`, `/reasoning LEVEL`) wins over
/// everything, else `agent.reasoning_effort` with `agent.reasoning_overrides` per model. A bad
/// level from the spec is an error; a bad one in config.yaml a warning.
pub fn reasoning_settings(
    config: &Config,
    level: Option<&str>,
) -> Result<(ReasoningSettings, Vec<String>), SessionError> {
    if let Some(level) = level {
        let effort =
            ReasoningEffort::parse(level).ok_or_else(|| SessionError::ReasoningEffort {
                level: level.to_string(),
            })?;
        let settings = ReasoningSettings {
            default: Some(effort),
            overrides: Vec::new(),
        };
        return Ok((settings, Vec::new()));
    }
    let agent = config.raw.get("agent");
    let field = |k: &str| {
        agent
            .and_then(|a| a.get(k))
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    };
    Ok(ReasoningSettings::from_config(
        &field("reasoning_effort"),
        &field("reasoning_overrides"),
    ))
}

/// Every tool this build has for a home (as `hermes tools` lists them and `hermes prompt-size`
/// measures them): the built-in ones, `session_search`, the skills tools, `cronjob`,
/// `delegate_task`, `execute_code` and `vision_analyze` (schema only until a session installs
/// them), the web
/// tools (`web_search`, `web_extract`, `image_generate`, `text_to_speech` and, with the
/// `browser` feature, the `browser_*` tools) and, when memory is on, the memory tool.
pub fn every_tool(
    home: &HermesHome,
    memory_settings: &MemorySettings,
) -> (Registry, Option<Arc<MemoryStore>>) {
    let shared = SharedTools::new(
        home,
        &hermes_store::StoreLocation::File(home.join(hermes_store::DB_FILE_NAME)),
        memory_settings,
        hermes_web::WebTools::for_home(home),
        KanbanOptions {
            auto_subscribe: true,
            fetcher: hermes_web::net::Fetcher::new(hermes_web::net::UrlPolicy::strict()),
        },
    );
    let skills = Arc::new(Library::for_home(home, SkillSettings::default()));
    (shared.registry(skills), shared.memory)
}

/// The tools one home shares between all its sessions: the ones that hold no session state
/// (what a call needs of its session comes with its `ToolContext`).
pub(crate) struct SharedTools {
    search: Arc<dyn Tool>,
    cronjob: Arc<dyn Tool>,
    memory_tool: Option<Arc<dyn Tool>>,
    pub(crate) memory: Option<Arc<MemoryStore>>,
    /// The web tools: shared ones built once, a browser of its own for each session.
    web: hermes_web::WebTools,
    /// The `kanban_*` tools: a worker's (scoped to its task, when the dispatcher started this
    /// process) or an orchestrator's.
    kanban: Vec<Arc<dyn Tool>>,
    /// Tools a frontend adds for all its sessions (the gateway's `send_message`).
    extra: std::sync::Mutex<Vec<Arc<dyn Tool>>>,
}

impl SharedTools {
    pub(crate) fn new(
        home: &HermesHome,
        store: &hermes_store::StoreLocation,
        memory_settings: &MemorySettings,
        web: hermes_web::WebTools,
        kanban: KanbanOptions,
    ) -> SharedTools {
        let memory = memory_settings.enabled().then(|| {
            Arc::new(MemoryStore::new(
                home.join("memories"),
                memory_settings.limits(),
            ))
        });
        SharedTools {
            search: Arc::new(SessionSearchTool::new(store.clone())),
            cronjob: Arc::new(crate::cronjob::CronjobTool::new(home)),
            memory_tool: memory
                .as_ref()
                .map(|store| Arc::new(MemoryTool::new(store.clone())) as Arc<dyn Tool>),
            memory,
            web,
            kanban: kanban_tools(home, kanban),
            extra: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Adds `tool` to every session's catalogue from now on.
    pub(crate) fn add(&self, tool: Arc<dyn Tool>) {
        if let Ok(mut extra) = self.extra.lock() {
            extra.retain(|t| t.name() != tool.name());
            extra.push(tool);
        }
    }

    /// A session's full catalogue: the built-in tools, the shared ones and the skills tools
    /// over `skills` (the session's platform decides which skills apply).
    pub(crate) fn registry(&self, skills: Arc<Library>) -> Registry {
        let mut registry = Registry::builtin();
        registry.register(self.search.clone());
        registry.register(Arc::new(skills::SkillsListTool::new(skills.clone())));
        registry.register(Arc::new(skills::SkillViewTool::new(skills.clone())));
        registry.register(Arc::new(skills::SkillManageTool::new(skills)));
        registry.register(self.cronjob.clone());
        // Schema only: a session installs the working tool once its providers exist.
        registry.register(Arc::new(delegation::DelegateTaskTool::schema_only()));
        registry.register(Arc::new(code_exec::ExecuteCodeTool::schema_only()));
        registry.register(Arc::new(
            hermes_core::vision::VisionAnalyzeTool::schema_only(),
        ));
        registry.register(Arc::new(
            hermes_core::moa::MixtureOfAgentsTool::schema_only(),
        ));
        for tool in self.web.session_tools() {
            registry.register(tool);
        }
        if let Some(tool) = &self.memory_tool {
            registry.register(tool.clone());
        }
        for tool in &self.kanban {
            registry.register(tool.clone());
        }
        if let Ok(extra) = self.extra.lock() {
            for tool in extra.iter() {
                registry.register(tool.clone());
            }
        }
        registry
    }
}

/// The kanban tools of this process: scoped to one task when the dispatcher started it as a
/// worker (`HERMES_KANBAN_TASK`), else an orchestrator's (offered when `kanban` is among the
/// session's toolsets). The author is the profile (`HERMES_PROFILE`, else the home's).
fn kanban_tools(home: &HermesHome, options: KanbanOptions) -> Vec<Arc<dyn Tool>> {
    let scope = match hermes_kanban::WorkerScope::from_env() {
        Some(worker) => hermes_kanban::Scope::Worker(worker),
        None => hermes_kanban::Scope::Orchestrator,
    };
    let author = std::env::var("HERMES_PROFILE")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| home.profile_name())
        .unwrap_or_else(|| "default".into());
    hermes_kanban::kanban_tools(
        hermes_kanban::kanban_root(home.root()),
        options.fetcher,
        scope,
        author,
        options.auto_subscribe,
    )
}

/// What the kanban tools take from the home's config.
pub(crate) struct KanbanOptions {
    /// `kanban.auto_subscribe_on_create`.
    pub auto_subscribe: bool,
    /// The home's URL policy, for `kanban_attach_url`.
    pub fetcher: hermes_web::net::Fetcher,
}

/// The tools of a cron session: without `cronjob` (a job must not schedule more jobs) and
/// `clarify` (nobody is there to answer), as in the Python Hermes.
pub fn without_cron_tools(tools: Registry) -> Registry {
    let mut kept = Registry::new();
    for name in tools.names() {
        if let Some(tool) = tools.get(name)
            && !matches!(tool.toolset(), "cronjob" | "clarify")
        {
            kept.register(tool.clone());
        }
    }
    kept
}

/// Each tool of `tools` with its toolset, in registration order.
pub fn tool_toolsets(tools: &Registry) -> Vec<(String, String)> {
    tools
        .names()
        .into_iter()
        .filter_map(|n| Some((n.to_string(), tools.get(n)?.toolset().to_string())))
        .collect()
}
