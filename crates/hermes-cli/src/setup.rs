//! Wiring one session together from the home, config, environment and flags: provider, tools,
//! tool context, system prompt and agent options. Every failure here is a configuration error
//! (exit code 2) with a message that says what to fix.

use std::path::PathBuf;
use std::sync::Arc;

use hermes_config::{Config, Environment, HermesHome};
use hermes_core::{Agent, AgentOptions, prompt};
use hermes_llm::{HttpTimeouts, Overrides, ProviderSpec, RetryPolicy};
use hermes_tools::secrets::ChildEnv;
use hermes_tools::{Registry, ToolContext};

use crate::args::CommonArgs;
use crate::error::CliError;

/// Everything a frontend needs to run turns.
pub struct Session {
    pub agent: Agent,
    pub spec: ProviderSpec,
    /// Things the user should know (toolsets this build lacks, ...), printed on stderr.
    pub warnings: Vec<String>,
}

/// Loads the home and config of this run.
pub fn load_home(args: &CommonArgs) -> Result<(HermesHome, Config, Environment), CliError> {
    let home = HermesHome::resolve(args.profile.as_deref())
        .map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let (config, env) = hermes_config::load(&home).map_err(|e| CliError::config(e.to_string()))?;
    Ok((home, config, env))
}

/// Builds the agent for `platform` (`cli`, ...).
pub fn build(args: &CommonArgs, platform: &str) -> Result<Session, CliError> {
    let (_home, config, env) = load_home(args)?;
    let overrides = Overrides {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
    };
    let spec = hermes_llm::resolve(&config.model, &env, &overrides)
        .map_err(|e| CliError::config(e.to_string()))?;
    let provider = hermes_llm::build_provider(&spec, &HttpTimeouts::default())
        .map_err(|e| CliError::config(e.to_string()))?;

    let toolsets: Vec<String> = match &args.toolsets {
        Some(list) => list
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        None => config.toolsets.clone(),
    };
    let (selected, warnings) = Registry::builtin()
        .select(&toolsets)
        .map_err(|e| CliError::config(e.to_string()))?;
    let tools = selected.available(&env);

    let cwd = tool_cwd(&config)?;
    let tool_ctx = ToolContext {
        child_env: Arc::new(ChildEnv::from_process(&config.terminal.env_passthrough)),
        terminal_timeout: std::time::Duration::from_secs(config.terminal.timeout.max(1)),
        ..ToolContext::new(cwd.clone())
    };

    let tool_names = tools.names();
    let date = prompt::today();
    let system_prompt = prompt::build(&prompt::PromptInputs {
        identity: None,
        cwd: &cwd,
        model: &spec.model,
        provider: &spec.provider,
        date: &date,
        tool_names: &tool_names,
        platform,
    });

    let agent_cfg = &config.agent;
    let options = AgentOptions {
        model: spec.model.clone(),
        max_turns: args.max_turns.unwrap_or(agent_cfg.max_turns).max(1),
        max_tokens: config.model.max_tokens,
        temperature: config.model.temperature,
        retry: RetryPolicy::from_settings(
            agent_cfg.api_max_retries,
            agent_cfg.retry_base_delay,
            agent_cfg.retry_max_delay,
        ),
        max_parallel_tools: agent_cfg.max_parallel_tools.clamp(1, 64),
        key_hint: spec.key_source.clone(),
    };
    let agent = Agent::new(provider, tools, system_prompt, options, tool_ctx);
    Ok(Session {
        agent,
        spec,
        warnings,
    })
}

/// Where tools run: `terminal.cwd` (relative to the current directory), else the current
/// directory.
fn tool_cwd(config: &Config) -> Result<PathBuf, CliError> {
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
