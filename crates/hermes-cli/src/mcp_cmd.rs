//! `hermes mcp list|test NAME`: the MCP servers of config.yaml (`mcp_servers`) from the
//! command line. `list` connects every enabled server (concurrently) and shows its transport
//! (the command of a stdio server, `http HOST/PATH` or `https HOST/PATH` of an HTTP one), tool
//! count and status; `test` connects one server and lists the tools a chat would offer,
//! failing (exit 1) when it cannot connect. Nothing is changed. `hermes mcp serve`, `add`,
//! `remove` and OAuth logins are not in this build.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_mcp::{Hub, ServerConfig, Status, Transport};

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
    List,
    /// Connect to one server and list its tools; exit 1 when it cannot connect.
    Test {
        /// The server's name under `mcp_servers`.
        name: String,
    },
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME mcp ...`).
pub fn run(top: &CommonArgs, args: &McpArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..top.clone()
    };
    let (home, config, _) = crate::session::load_home(&common)?;
    let (servers, warnings) = hermes_mcp::parse_servers(&config.raw);
    for w in &warnings {
        eprintln!("hermes: {w}");
    }
    let log = Some(home.join("logs/mcp-stderr.log"));
    match &args.action {
        None | Some(McpAction::List) => {
            if servers.is_empty() {
                println!(
                    "No MCP servers configured (add them under mcp_servers in {}).",
                    config.path.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            let hub = Hub::connect(&servers, log);
            println!("{:<16} {:<30} {:>5}  Status", "Name", "Transport", "Tools");
            for server in &hub.servers {
                let (tools, status) = match &server.status {
                    Status::Connected(list) => (list.len().to_string(), "connected".to_string()),
                    Status::Failed(why) => ("-".to_string(), format!("failed: {why}")),
                    Status::Disabled => ("-".to_string(), "disabled".to_string()),
                };
                println!(
                    "{:<16} {:<30} {:>5}  {status}",
                    server.config.name,
                    transport(&server.config),
                    tools
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(McpAction::Test { name }) => {
            let Some(server) = servers.iter().find(|s| &s.name == name) else {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                return Err(CliError::config(format!(
                    "no MCP server `{name}` in {} (configured: {})",
                    config.path.display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            let server = ServerConfig {
                enabled: true,
                ..server.clone()
            };
            let hub = Hub::connect(std::slice::from_ref(&server), log);
            let tools = hub.tools();
            match hub.servers.first().map(|s| &s.status) {
                Some(Status::Connected(_)) => {
                    let over = match &server.transport {
                        Transport::Http { url, .. } => format!(" over HTTP ({url})"),
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
    }
}

fn transport(config: &ServerConfig) -> String {
    let text = match &config.transport {
        Transport::Stdio { command, args, .. } => {
            let mut parts = vec![command.as_str()];
            parts.extend(args.iter().take(2).map(String::as_str));
            parts.join(" ")
        }
        Transport::Http { url, .. } => match url.split_once("://") {
            Some((scheme, rest)) => format!("{} {rest}", scheme.to_ascii_lowercase()),
            None => format!("http {url}"),
        },
    };
    if text.chars().count() > 30 {
        let short: String = text.chars().take(27).collect();
        format!("{short}...")
    } else {
        text
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
