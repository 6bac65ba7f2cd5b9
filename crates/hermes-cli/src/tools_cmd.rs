//! `hermes tools list|enable|disable`: which toolsets and tools a run of `hermes` offers the
//! model, and switching toolsets on or off in config.yaml. The choice is read from `-t`, then
//! `platform_toolsets.cli` (what the Python Hermes's `hermes tools` writes), then `toolsets`;
//! enable/disable edit whichever of the two settings is in effect, as a text edit that keeps the
//! file's comments.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::{Config, HermesHome};
use hermes_core::memory::MemorySettings;
use hermes_tools::Registry;
use serde::Serialize;
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Without an action: list the toolsets and tools.
    #[command(subcommand)]
    pub action: Option<ToolsAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ToolsAction {
    /// Every toolset and its tools: ✓ enabled, · off, ! enabled but unavailable here.
    List {
        /// Print the listing as JSON: `{source, selected, toolsets: [{name, enabled, tools:
        /// [{name, available, needs}]}], warnings}`.
        #[arg(long)]
        json: bool,
    },
    /// Switch toolsets on (comma- or space-separated names).
    Enable {
        #[arg(required = true, num_args = 1..)]
        toolsets: Vec<String>,
    },
    /// Switch toolsets off.
    Disable {
        #[arg(required = true, num_args = 1..)]
        toolsets: Vec<String>,
    },
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME tools ...`).
pub fn run(top: &CommonArgs, args: &ToolsArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        // `hermes -t file tools list` shows what `-t file` would offer.
        toolsets: top.toolsets.clone(),
        ..CommonArgs::default()
    };
    let (home, config, env) = crate::session::load_home(&common)?;
    let memory =
        MemorySettings::from_config(&config).map_err(|e| CliError::config(e.to_string()))?;
    let (every, _) = hermes_runtime::tools::every_tool(&home, &memory);
    let text = match args
        .action
        .as_ref()
        .unwrap_or(&ToolsAction::List { json: false })
    {
        ToolsAction::List { json: true } => {
            crate::json_out::print(&listing(&common, &config, &env, &every)?)?;
            return Ok(ExitCode::SUCCESS);
        }
        ToolsAction::List { json: false } => list(&listing(&common, &config, &env, &every)?),
        ToolsAction::Enable { toolsets } => change(&home, &config, &every, toolsets, true)?,
        ToolsAction::Disable { toolsets } => change(&home, &config, &every, toolsets, false)?,
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

/// The real (non-composite) toolsets of `every`, in registry order.
fn real_toolsets(every: &Registry) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for tool in every.names() {
        if let Some(t) = every.get(tool)
            && !names.contains(&t.toolset())
        {
            names.push(t.toolset());
        }
    }
    names
}

/// What `tools list` shows.
#[derive(Debug, Serialize)]
struct Listing {
    /// The setting the choice came from (`-t`, `platform_toolsets.cli`, `toolsets`, ...).
    source: String,
    /// The toolsets as chosen (composite names included).
    selected: Vec<String>,
    toolsets: Vec<ToolsetRow>,
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ToolsetRow {
    name: String,
    enabled: bool,
    tools: Vec<ToolRow>,
}

#[derive(Debug, Serialize)]
struct ToolRow {
    name: String,
    /// False when the tool cannot run here (a missing key, binary or platform).
    available: bool,
    /// The environment variables it needs.
    needs: Vec<String>,
}

fn listing(
    common: &CommonArgs,
    config: &Config,
    env: &hermes_config::Environment,
    every: &Registry,
) -> Result<Listing, CliError> {
    let requested = common
        .toolsets
        .as_deref()
        .map(hermes_runtime::tools::parse_toolsets);
    let (chosen, source) = hermes_runtime::tools::configured_toolsets(
        requested.as_deref(),
        &hermes_runtime::Platform::Cli,
        config,
    );
    let (selected, warnings) = every
        .select(&chosen)
        .map_err(|e| CliError::config(e.to_string()))?;
    let toolsets = real_toolsets(every)
        .into_iter()
        .map(|toolset| {
            let tools: Vec<ToolRow> = every
                .names()
                .into_iter()
                .filter_map(|n| every.get(n))
                .filter(|t| t.toolset() == toolset)
                .map(|tool| ToolRow {
                    name: tool.name().to_string(),
                    available: every.is_available(tool.as_ref(), env),
                    needs: tool.required_env().iter().map(|n| n.to_string()).collect(),
                })
                .collect();
            ToolsetRow {
                name: toolset.to_string(),
                enabled: tools.iter().any(|t| selected.get(&t.name).is_some()),
                tools,
            }
        })
        .collect();
    Ok(Listing {
        source,
        selected: chosen,
        toolsets,
        warnings,
    })
}

fn list(listing: &Listing) -> String {
    let mut out = format!(
        "Toolsets from `{}`: {}\n",
        listing.source,
        listing.selected.join(", ")
    );
    for toolset in &listing.toolsets {
        let on = toolset.enabled;
        out.push_str(&format!(
            "{} {}\n",
            if on { "✓" } else { "·" },
            toolset.name
        ));
        for tool in &toolset.tools {
            let note = match (on && !tool.available, tool.needs.is_empty()) {
                (false, _) => String::new(),
                (true, true) => "  ! unavailable here".to_string(),
                (true, false) => format!("  ! needs {}", tool.needs.join(", ")),
            };
            out.push_str(&format!("    {:<16}{note}\n", tool.name));
        }
    }
    for w in &listing.warnings {
        out.push_str(&format!("! {w}\n"));
    }
    out.push_str("Switch with `hermes tools enable|disable NAME`, or -t LIST for one run.\n");
    out
}

fn change(
    home: &HermesHome,
    config: &Config,
    every: &Registry,
    names: &[String],
    enable: bool,
) -> Result<String, CliError> {
    let names: Vec<String> = names
        .iter()
        .flat_map(|n| n.split([',', ' ']))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    let real = real_toolsets(every);
    for name in &names {
        if !real.contains(&name.as_str()) {
            return Err(CliError::config(format!(
                "unknown toolset `{name}` (this build has: {})",
                real.join(", ")
            )));
        }
    }
    let (current, source) =
        hermes_runtime::tools::configured_toolsets(None, &hermes_runtime::Platform::Cli, config);
    // Composites (`hermes-cli`, `all`) are spelled out so one member can be switched off.
    let (selected, _) = every
        .select(&current)
        .map_err(|e| CliError::config(e.to_string()))?;
    let mut next: Vec<String> = real
        .iter()
        .filter(|t| {
            selected
                .names()
                .iter()
                .any(|n| selected.get(n).is_some_and(|tool| tool.toolset() == **t))
        })
        .map(|t| t.to_string())
        .collect();
    // Names this build does not have (a config shared with the Python Hermes) are kept.
    next.extend(
        current
            .iter()
            .filter(|c| !every.toolset_names().contains(&c.as_str()))
            .cloned(),
    );
    let before = next.clone();
    for name in &names {
        if enable {
            if !next.contains(name) {
                next.push(name.clone());
            }
        } else {
            next.retain(|n| n != name);
        }
    }
    let verb = if enable { "enabled" } else { "disabled" };
    if next == before {
        return Ok(format!("Already {verb}: {}.\n", names.join(", ")));
    }
    let setting = match source.as_str() {
        "platform_toolsets.cli" => "platform_toolsets.cli",
        _ => "toolsets",
    };
    let value = Value::Array(next.iter().cloned().map(Value::String).collect());
    hermes_config::edit::set(&home.config_path(), setting, &value)
        .map_err(|e| CliError::runtime(e.to_string()))?;
    Ok(format!(
        "{} {}; toolsets are now {} (`{}` in {}).\n",
        if enable { "Enabled" } else { "Disabled" },
        names.join(", "),
        next.join(", "),
        setting,
        home.config_path().display()
    ))
}
