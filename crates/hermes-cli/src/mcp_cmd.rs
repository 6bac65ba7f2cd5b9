//! `hermes mcp list|test NAME|login NAME|serve`: the MCP servers of config.yaml
//! (`mcp_servers`) from the command line, and Hermes as an MCP server. `list` connects every
//! enabled server (concurrently) and shows its transport (the command of a stdio server,
//! `http HOST/PATH` / `sse HOST/PATH` of a remote one), tool count and status; `test`
//! connects one server and lists the tools a chat would offer, failing (exit 1) when it
//! cannot connect; `login` runs the OAuth authorization of a server (browser, loopback
//! callback) and stores its tokens; `serve` is [`serve`]. Nothing in config.yaml is changed.

mod chat;
mod serve;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use hermes_mcp::{ConsolePrompt, Hub, HubOptions, ServerConfig, Status, Transport};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Without an action: list.
    #[command(subcommand)]
    pub action: Option<McpAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Every configured server with its transport, tool count and status (connects them).
    #[command(visible_alias = "ls")]
    List {
        /// One JSON object per server on one JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Connect to one server and list its tools; exit 1 when it cannot connect.
    Test {
        /// The server's name under `mcp_servers`.
        name: String,
    },
    /// Authorize Hermes with a server that uses OAuth (`auth: oauth`): opens the browser
    /// step and stores the tokens in $HERMES_HOME/mcp-tokens/.
    Login {
        /// The server's name under `mcp_servers`.
        name: String,
    },
    /// Run Hermes as an MCP server: conversations, messaging and `hermes_chat` as tools.
    Serve(serve::ServeArgs),
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME mcp ...`).
pub fn run(top: &CommonArgs, args: &McpArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..top.clone()
    };
    if let Some(McpAction::Serve(serve_args)) = &args.action {
        return serve::run(&common, serve_args);
    }
    let (home, config, _) = crate::session::load_home(&common)?;
    let (servers, warnings) = hermes_mcp::parse_servers(&config.raw);
    for w in &warnings {
        eprintln!("hermes: {w}");
    }
    let options = |wait: bool| HubOptions {
        stderr_log: Some(home.join("logs/mcp-stderr.log")),
        home: Some(home.root().to_path_buf()),
        sampling: None,
        auth_prompt: None,
        wait: wait.then_some(Duration::MAX),
    };
    let find = |name: &str| -> Result<ServerConfig, CliError> {
        servers
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                CliError::config(format!(
                    "no MCP server `{name}` in {} (configured: {})",
                    config.path.display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })
    };
    match &args.action {
        None => list(&servers, options(true), false, &config.path),
        Some(McpAction::List { json }) => list(&servers, options(true), *json, &config.path),
        Some(McpAction::Test { name }) => {
            let server = ServerConfig {
                enabled: true,
                ..find(name)?
            };
            let hub = Hub::connect(std::slice::from_ref(&server), options(true));
            let tools = hub.tools();
            match hub.servers().first().map(|s| &s.status) {
                Some(Status::Connected) => {
                    let over = match &server.transport {
                        Transport::Http { url, .. } => format!(" over HTTP ({url})"),
                        Transport::Sse { url, .. } => format!(" over SSE ({url})"),
                        Transport::Stdio { .. } => String::new(),
                    };
                    println!(
                        "MCP server `{name}` connected{over}: {} tool{}",
                        tools.len(),
                        if tools.len() == 1 { "" } else { "s" }
                    );
                    for tool in &tools {
                        println!("  {}  {}", tool.name(), first_line(tool.description()));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Some(Status::Failed(why)) => Err(CliError::runtime(format!(
                    "MCP server `{name}` failed: {why}"
                ))),
                _ => Err(CliError::runtime(format!(
                    "MCP server `{name}` did not connect"
                ))),
            }
        }
        Some(McpAction::Login { name }) => {
            let server = find(name)?;
            let (Some(settings), Some((url, _))) = (&server.oauth, server.transport.remote())
            else {
                return Err(CliError::config(format!(
                    "MCP server `{name}` does not use OAuth (set `auth: oauth` on a server with a `url`)"
                )));
            };
            let oauth = hermes_mcp::OAuth::new(
                name,
                url,
                settings.clone(),
                home.root(),
                Some(Arc::new(ConsolePrompt)),
            )
            .map_err(|e| CliError::config(e.to_string()))?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")))?;
            runtime
                .block_on(oauth.login())
                .map_err(|e| CliError::runtime(format!("MCP server `{name}`: {e}")))?;
            println!(
                "MCP server `{name}` is authorized (tokens in {}).",
                oauth.store().tokens_path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(McpAction::Serve(_)) => Ok(ExitCode::SUCCESS),
    }
}

fn list(
    servers: &[ServerConfig],
    options: HubOptions,
    json: bool,
    config_path: &std::path::Path,
) -> Result<ExitCode, CliError> {
    if servers.is_empty() {
        if json {
            println!("[]");
        } else {
            println!(
                "No MCP servers configured (add them under mcp_servers in {}).",
                config_path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let hub = Hub::connect(servers, options);
    let views = hub.servers();
    if json {
        let rows: Vec<serde_json::Value> = views
            .iter()
            .map(|s| {
                let (status, error) = match &s.status {
                    Status::Connected => ("connected", None),
                    Status::Connecting => ("connecting", None),
                    Status::Failed(why) => ("failed", Some(why.clone())),
                    Status::Disabled => ("disabled", None),
                };
                serde_json::json!({"name": s.name, "transport": s.transport, "status": status,
                                   "error": error, "tools": s.tools})
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    println!("{:<16} {:<30} {:>5}  Status", "Name", "Transport", "Tools");
    for server in &views {
        let (tools, status) = match &server.status {
            Status::Connected => (server.tools.len().to_string(), "connected".to_string()),
            Status::Connecting => ("-".to_string(), "connecting".to_string()),
            Status::Failed(why) => ("-".to_string(), format!("failed: {why}")),
            Status::Disabled => ("-".to_string(), "disabled".to_string()),
        };
        println!(
            "{:<16} {:<30} {:>5}  {status}",
            server.name,
            shorten(&server.transport),
            tools
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn shorten(text: &str) -> String {
    if text.chars().count() > 30 {
        let short: String = text.chars().take(27).collect();
        format!("{short}...")
    } else {
        text.to_string()
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
