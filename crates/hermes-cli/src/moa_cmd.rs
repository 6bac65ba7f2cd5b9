//! `hermes moa list|delete NAME`: the Mixture-of-Agents presets of config.yaml (`moa.presets`),
//! listed in the Python Hermes's layout with the cost cap of a call added; `delete` removes a
//! preset of config.yaml (the built-in `default` stays) and moves the default to `default`. Presets are written
//! by editing config.yaml (`hermes config edit`): the interactive picker of the Python Hermes's
//! `hermes moa config` is not built.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_core::moa::presets::{DEFAULT_PRESET, MoaSettings, Slot};
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct MoaArgs {
    /// Without an action: list.
    #[command(subcommand)]
    pub action: Option<MoaAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum MoaAction {
    /// The presets: reference models and aggregator of each, the default marked `*`.
    #[command(alias = "ls")]
    List,
    /// Remove a preset from config.yaml.
    Delete {
        /// The preset's name.
        name: String,
    },
}

fn slot_line(slot: &Slot) -> String {
    match slot.reasoning {
        Some(effort) => format!("{} [reasoning={}]", slot.label(), effort.as_str()),
        None => slot.label(),
    }
}

/// The listing, as the Python Hermes prints it, then the cap.
pub fn listing(raw: &Value) -> String {
    let settings = MoaSettings::from_config(raw);
    let mut out = String::from("Mixture of Agents presets\n");
    let _ = writeln!(out, "Default: {}", settings.default_preset);
    let active = raw
        .get("active_preset")
        .and_then(Value::as_str)
        .filter(|n| settings.presets.iter().any(|(p, _)| p == n))
        .unwrap_or("(off)");
    let _ = writeln!(out, "Active in config: {active}");
    for (name, preset) in &settings.presets {
        let marker = if *name == settings.default_preset {
            '*'
        } else {
            ' '
        };
        let _ = writeln!(out, "\n{marker} {name}\n  Reference models:");
        for (i, slot) in preset.references.iter().enumerate() {
            let _ = writeln!(out, "    {}. {}", i + 1, slot_line(slot));
        }
        let _ = writeln!(out, "  Aggregator: {}", slot_line(&preset.aggregator));
    }
    let _ = match settings.max_cost_usd {
        Some(cap) => writeln!(out, "\nCost cap per call: ${cap:.2} (moa.max_cost_usd)"),
        None => writeln!(out, "\nCost cap per call: none (moa.max_cost_usd: 0)"),
    };
    out
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME moa ...`).
pub fn run(top: &CommonArgs, args: &MoaArgs) -> Result<ExitCode, CliError> {
    let common = CommonArgs {
        profile: args.profile.clone().or_else(|| top.profile.clone()),
        ..CommonArgs::default()
    };
    let (home, config, _) = crate::session::load_home(&common)?;
    let raw = config.raw.get("moa").cloned().unwrap_or(Value::Null);
    let text = match args.action.as_ref().unwrap_or(&MoaAction::List) {
        MoaAction::List => listing(&raw),
        MoaAction::Delete { name } => {
            let in_config = raw
                .get("presets")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(name.as_str()));
            if !in_config {
                return Err(CliError::config(if name == DEFAULT_PRESET {
                    "The default preset comes with Hermes and cannot be deleted; change it under moa.presets.default in config.yaml".to_string()
                } else {
                    format!("Unknown MoA preset: {name}")
                }));
            }
            let path = home.config_path();
            let edit = |e: hermes_config::edit::EditError| CliError::runtime(e.to_string());
            hermes_config::edit::unset(&path, &format!("moa.presets.{name}")).map_err(edit)?;
            // As in the Python Hermes, the first preset left (the built-in `default`) takes
            // over as the default, and an active preset that is gone is switched off.
            if MoaSettings::from_config(&raw).default_preset == *name {
                let first = Value::String(DEFAULT_PRESET.to_string());
                hermes_config::edit::set(&path, "moa.default_preset", &first).map_err(edit)?;
            }
            if raw.get("active_preset").and_then(Value::as_str) == Some(name.as_str()) {
                let off = Value::String(String::new());
                hermes_config::edit::set(&path, "moa.active_preset", &off).map_err(edit)?;
            }
            format!("Deleted MoA preset: {name}\n")
        }
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
