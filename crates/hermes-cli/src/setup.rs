//! Wiring one session together from the home, config, environment and flags: provider, tools,
//! tool context, system prompt and agent options. Every failure here is a configuration error
//! (exit code 2) with a message that says what to fix.

use std::path::PathBuf;
use std::sync::Arc;

use hermes_config::{Config, Environment, HermesHome};
use hermes_core::delegation;
use hermes_core::memory::{MemorySettings, MemoryStore, MemoryTool};
use hermes_core::skills::{self, Library, SkillSettings};
use hermes_core::{Agent, AgentOptions, prompt};
use hermes_llm::reasoning::{ReasoningEffort, ReasoningSettings};
use hermes_llm::{Overrides, ProviderSpec, RetryPolicy};
use hermes_tools::{
    CommandJudge, Interaction, ProcessRegistry, Registry, SessionTools, ToolContext,
};

use crate::args::CommonArgs;
use crate::error::CliError;

/// Everything a frontend needs to run turns.
pub struct Session {
    pub agent: Agent,
    pub spec: ProviderSpec,
    /// Things the user should know (toolsets this build lacks, ...), printed on stderr.
    pub warnings: Vec<String>,
    /// The stored session this run records into (new, or resumed).
    pub persistence: crate::resume::Persistence,
    /// Background processes of the session: shut down before exit.
    pub background: Arc<ProcessRegistry>,
    /// The session's approval gate (mode, rules), for `/approvals`.
    pub approvals: Arc<hermes_tools::ApprovalGate>,
    /// Each tool offered to the model with its toolset, in registration order.
    pub tool_toolsets: Vec<(String, String)>,
    /// The home's skills (for `/skills` and `/skill-name`).
    pub skills: Arc<Library>,
}

/// The tools and system prompt of a session, before any provider is involved.
pub struct Prepared {
    pub tools: Registry,
    pub system_prompt: String,
    pub warnings: Vec<String>,
    pub skills: Arc<Library>,
}

/// Loads the home and config of this run.
pub fn load_home(args: &CommonArgs) -> Result<(HermesHome, Config, Environment), CliError> {
    let home = HermesHome::resolve(args.profile.as_deref())
        .map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let (config, env) = hermes_config::load(&home).map_err(|e| CliError::config(e.to_string()))?;
    Ok((home, config, env))
}

/// Builds the agent for `platform` (`cli`, ...) with nobody to ask (one-shot runs).
pub fn build(args: &CommonArgs, platform: &str) -> Result<Session, CliError> {
    build_with(args, platform, Arc::new(crate::interaction::Unattended))
}

/// Builds the agent for `platform`, asking the user through `interaction`.
pub fn build_with(
    args: &CommonArgs,
    platform: &str,
    interaction: Arc<dyn Interaction>,
) -> Result<Session, CliError> {
    let (home, config, env) = load_home(args)?;
    let overrides = Overrides {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    };
    let mut providers = crate::provider::build(&config, &env, &home, &overrides)?;
    let spec = providers.spec.clone();
    // The in-process model (hermes-local) replaces the HTTP provider a `local` spec implies.
    let local_err = |e: hermes_local::LocalError| CliError::config(e.to_string());
    providers.primary = if spec.is_local() {
        hermes_local::provider_for(&spec, &config.model, home.root()).map_err(local_err)?
    } else {
        hermes_local::with_tool_calling(&config.model, providers.primary).map_err(local_err)?
    };
    let persistence = crate::resume::Persistence::plan(args, &home, &config, &spec, platform)?;

    let cwd = tool_cwd(&config)?;
    let Prepared {
        tools,
        system_prompt,
        warnings,
        skills,
    } = prepare(
        args,
        platform,
        &home,
        &config,
        &env,
        &cwd,
        (&spec.model, &spec.provider),
    )?;
    let judge: Arc<dyn CommandJudge> = Arc::new(crate::judge::ProviderJudge::new(
        providers.primary.clone(),
        &spec.model,
    ));
    // Redacted as `[REDACTED:NAME]`: the variable the key came from, else `model.api_key`.
    let key_name = spec
        .key_source
        .clone()
        .filter(|s| {
            s.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .unwrap_or_else(|| "model.api_key".into());
    let tool_ctx = ToolContext::for_session(SessionTools {
        cwd: cwd.clone(),
        home: &home,
        config: &config,
        env: &env,
        yolo: args.yolo,
        interaction,
        judge: Some(judge),
        known_secrets: spec
            .api_key
            .iter()
            .map(|k| (key_name.clone(), k.clone()))
            .collect(),
        session_id: persistence.session_id().to_string(),
    })
    .map_err(|e| CliError::config(e.to_string()))?;
    let background = tool_ctx.processes.clone();
    let approvals = tool_ctx.approvals.clone();
    let tool_toolsets: Vec<(String, String)> = tools
        .names()
        .into_iter()
        .filter_map(|n| Some((n.to_string(), tools.get(n)?.toolset().to_string())))
        .collect();

    let agent_cfg = &config.agent;
    let (reasoning, reasoning_warnings) = reasoning_settings(&config, args)?;
    let options = AgentOptions {
        model: spec.model.clone(),
        max_turns: args.max_turns.unwrap_or(agent_cfg.max_turns).max(1),
        max_tokens: config.model.max_tokens,
        temperature: config.model.temperature,
        reasoning,
        retry: RetryPolicy::from_settings(
            agent_cfg.api_max_retries,
            agent_cfg.retry_base_delay,
            agent_cfg.retry_max_delay,
        ),
        max_parallel_tools: agent_cfg.max_parallel_tools.clamp(1, 64),
        key_hint: spec.key_source.clone(),
    };
    let tools = with_delegation(tools, &config, &home, &providers, &options)?;
    let tools = hermes_core::code_exec::install(&tools, config.section("code_execution").map_err(|e| CliError::config(e.to_string()))?);
    let compression: hermes_core::compress::CompressionSettings = config
        .section("compression")
        .map_err(|e| CliError::config(e.to_string()))?;
    let aux = crate::provider::auxiliary(
        &config,
        &env,
        &home,
        "compression",
        &providers.primary,
        &spec.model,
    )?;
    let mut agent = Agent::new(providers.primary, tools, system_prompt, options, tool_ctx)
        .with_fallbacks(providers.fallbacks);
    if compression.enabled {
        agent = agent.with_compressor(hermes_core::compress::Compressor::new(
            compression,
            &spec.model,
            aux,
        ));
    }
    let mut warnings = warnings;
    warnings.extend(hermes_local::default_model_notice(
        &spec,
        &home.config_path(),
    ));
    warnings.extend(providers.warnings);
    warnings.extend(reasoning_warnings);
    Ok(Session {
        agent,
        spec,
        warnings,
        persistence,
        background,
        approvals,
        tool_toolsets,
        skills,
    })
}

/// A working `delegate_task` when the session offers one: sub-agents on the session's
/// providers and options, the `delegation:` settings, the session's tools minus the ones
/// sub-agents may not use, and their conversations stored as child sessions of this one.
fn with_delegation(
    tools: Registry,
    config: &Config,
    home: &HermesHome,
    providers: &crate::provider::Providers,
    options: &AgentOptions,
) -> Result<Registry, CliError> {
    if tools.get(delegation::TOOL_NAME).is_none() {
        return Ok(tools);
    }
    let settings: delegation::DelegationSettings = config
        .section("delegation")
        .map_err(|e| CliError::config(e.to_string()))?;
    let primary = hermes_core::ModelTarget {
        provider: providers.primary.clone(),
        model: options.model.clone(),
    };
    let sessions = delegation::ChildSessions {
        db_path: home.join(hermes_store::DB_FILE_NAME),
        parent: Some(crate::persist::current_session().clone()),
    };
    Ok(delegation::Delegation::new(
        primary,
        providers.fallbacks.clone(),
        options.clone(),
        settings,
    )
    .recording(sessions)
    .install(&tools))
}

/// Selects the tools (the memory and skills tools registered first, so their toolsets find
/// them) and assembles the system prompt, with the skills index, which is then fixed for the
/// session.
pub fn prepare(
    args: &CommonArgs,
    platform: &str,
    home: &HermesHome,
    config: &Config,
    env: &Environment,
    cwd: &std::path::Path,
    (model, provider): (&str, &str),
) -> Result<Prepared, CliError> {
    let config_err = |e: hermes_config::ConfigError| CliError::config(e.to_string());
    let (toolsets, _) = configured_toolsets(args, config);
    let memory_settings = MemorySettings::from_config(config).map_err(config_err)?;
    let skills = Arc::new(Library::for_home(
        home,
        SkillSettings::from_config(config, home.root(), platform),
    ));
    let (registry, memory) = every_tool_with(home, &memory_settings, skills.clone());
    let (toolsets, mcp_servers, mcp_warnings) = mcp_selection(toolsets, config);
    let (selected, mut warnings) = registry
        .select(&toolsets)
        .map_err(|e| CliError::config(e.to_string()))?;
    let mut tools = selected.available(env);
    warnings.extend(mcp_warnings);
    // MCP servers connect concurrently; the session starts once each answered or timed out.
    let hub = hermes_mcp::Hub::connect(&mcp_servers, Some(home.join("logs/mcp-stderr.log")));
    warnings.extend(hub.warnings());
    for tool in hub.tools() {
        tools.register(tool);
    }
    // A cron run must not schedule more jobs, and has nobody to ask.
    let tools = if platform == "cron" {
        crate::cron_cmd::without_cron_tools(tools)
    } else {
        tools
    };
    if !memory_settings.provider.trim().is_empty() {
        warnings.push(format!(
            "memory.provider `{}` is not available in this build; using the built-in memory files",
            memory_settings.provider.trim()
        ));
    }

    let tool_names = tools.names();
    let mut toolsets: Vec<&str> = Vec::new();
    for name in &tool_names {
        if let Some(ts) = tools.get(name).map(|t| t.toolset())
            && !toolsets.contains(&ts)
        {
            toolsets.push(ts);
        }
    }
    let index = skills::index::session_index(&skills, &tool_names, &toolsets);
    warnings.extend(index.warnings);
    let date = prompt::today();
    let assembled = prompt::assemble(prompt::SessionPromptInputs {
        home,
        config,
        cwd,
        model,
        provider,
        tool_names: &tool_names,
        platform,
        ignore_rules: args.ignore_rules,
        memory: memory.as_deref(),
        skills_index: index.text.as_deref(),
        date: &date,
    })
    .map_err(config_err)?;
    warnings.extend(assembled.warnings);
    Ok(Prepared {
        tools,
        system_prompt: assembled.text,
        warnings,
        skills,
    })
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

/// Where tools run: `terminal.cwd` (relative to the current directory), else the current
/// directory.
pub fn tool_cwd(config: &Config) -> Result<PathBuf, CliError> {
    let here = std::env::current_dir()
        .map_err(|e| CliError::config(format!("cannot determine the current directory: {e}")))?;
    let Some(dir) = config
        .terminal
        .cwd
        .as_deref()
        .filter(|d| !d.trim().is_empty() && *d != ".")
    else {
        return Ok(here);
    };
    let path = hermes_tools::paths::resolve(&here, dir);
    if !path.is_dir() {
        return Err(CliError::config(format!(
            "{}: terminal.cwd {} is not a directory",
            config.path.display(),
            path.display()
        )));
    }
    Ok(path)
}

/// The reasoning effort: `--reasoning-effort` (or `/reasoning LEVEL`) wins over everything,
/// else `agent.reasoning_effort` with `agent.reasoning_overrides` per model. A bad level on the
/// command line is a usage error; a bad one in config.yaml a warning.
fn reasoning_settings(
    config: &Config,
    args: &CommonArgs,
) -> Result<(ReasoningSettings, Vec<String>), CliError> {
    if let Some(level) = &args.reasoning_effort {
        let effort = ReasoningEffort::parse(level).ok_or_else(|| {
            CliError::config(format!(
                "unknown reasoning effort {level:?} (use one of: {})",
                hermes_llm::reasoning::LEVELS.join(", ")
            ))
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

/// Where the toolsets of a run are chosen, in order: `-t LIST`, then `platform_toolsets.cli`
/// (the key the Python Hermes's `hermes tools` writes), then `toolsets`. Returns the list and
/// the setting it came from.
pub fn configured_toolsets(args: &CommonArgs, config: &Config) -> (Vec<String>, &'static str) {
    if let Some(list) = &args.toolsets {
        let names = list
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        return (names, "-t");
    }
    let platform = config
        .raw
        .pointer("/platform_toolsets/cli")
        .and_then(serde_json::Value::as_array);
    match platform {
        Some(list) => (
            list.iter()
                .filter_map(|v| match v {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect(),
            "platform_toolsets.cli",
        ),
        None => (config.toolsets.clone(), "toolsets"),
    }
}

/// Every tool this build has for a home: the built-in ones, `session_search` over its store,
/// the skills tools, `delegate_task` (schema only until a session installs it) and, when memory
/// is on, the memory tool (with its store).
pub fn every_tool(
    home: &HermesHome,
    memory_settings: &MemorySettings,
) -> (Registry, Option<Arc<MemoryStore>>) {
    let skills = Arc::new(Library::for_home(home, SkillSettings::default()));
    every_tool_with(home, memory_settings, skills)
}

/// [`every_tool`] with the session's skills (settings from config.yaml).
pub fn every_tool_with(
    home: &HermesHome,
    memory_settings: &MemorySettings,
    skills: Arc<Library>,
) -> (Registry, Option<Arc<MemoryStore>>) {
    let mut registry = Registry::builtin();
    registry.register(crate::persist::search_tool(home));
    registry.register(Arc::new(skills::SkillsListTool::new(skills.clone())));
    registry.register(Arc::new(skills::SkillViewTool::new(skills.clone())));
    registry.register(Arc::new(skills::SkillManageTool::new(skills)));
    registry.register(Arc::new(crate::cron_cmd::tool::CronjobTool::new(home)));
    // Schema only: `build_with` installs the working tool once the providers exist.
    registry.register(Arc::new(delegation::DelegateTaskTool::schema_only()));
    registry.register(Arc::new(hermes_core::code_exec::ExecuteCodeTool::schema_only()));
    hermes_web::tools_for_home(home).into_iter().for_each(|t| registry.register(t));
    let memory = memory_settings.enabled().then(|| {
        Arc::new(MemoryStore::new(
            home.join("memories"),
            memory_settings.limits(),
        ))
    });
    if let Some(store) = &memory {
        registry.register(Arc::new(MemoryTool::new(store.clone())));
    }
    (registry, memory)
}
