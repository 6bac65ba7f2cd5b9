//! `hermes login [nous|codex]`: the device-code sign-in of Nous Portal or OpenAI Codex
//! (ChatGPT). Prints the URL to open and the code to enter, waits for the approval, saves the
//! tokens in `$HERMES_HOME/auth.json` in the Python Hermes's format, and makes the provider the
//! one config.yaml uses (`model.provider`, a base URL or key of the previous provider removed,
//! a model the new provider cannot serve replaced by its default).

use std::process::ExitCode;

use clap::Args;
use hermes_llm::auth_store::AuthStore;
use hermes_llm::oauth::{self, AuthProvider, Endpoints};
use hermes_llm::resolve::preset;
use serde_json::Value;

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Where to sign in: `nous` (Nous Portal, the default) or `codex` (OpenAI Codex / ChatGPT).
    #[arg(value_name = "PROVIDER", default_value = "nous")]
    pub provider: String,

    /// Save the sign-in without making it the provider config.yaml uses.
    #[arg(long = "no-switch")]
    pub no_switch: bool,
}

pub async fn run(common: &CommonArgs, args: &LoginArgs) -> Result<ExitCode, CliError> {
    let kind = AuthProvider::parse(&args.provider).ok_or_else(|| {
        CliError::config(format!(
            "unknown sign-in `{}`: use `hermes login nous` or `hermes login codex`",
            args.provider
        ))
    })?;
    let (home, config, env) = crate::session::load_home(common)?;
    let store = AuthStore::for_home(home.root());
    let client = hermes_llm::http_client(&hermes_llm::HttpTimeouts {
        connect: std::time::Duration::from_secs(15),
        idle: std::time::Duration::from_secs(30),
    })
    .map_err(|e| CliError::runtime(e.to_string()))?;
    let mut say = |line: &str| println!("{line}");
    let outcome = oauth::login(kind, &store, &Endpoints::from_env(&env), &client, &mut say)
        .await
        .map_err(|e| CliError::runtime(e.to_string()))?;
    println!();
    println!("Signed in to {}.", kind.display_name());
    println!("  Tokens saved in {}", outcome.auth_file.display());
    if args.no_switch {
        return Ok(ExitCode::SUCCESS);
    }
    for note in switch_provider(&home, &config.raw, kind)? {
        println!("  {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Makes config.yaml use the signed-in provider; returns what changed.
fn switch_provider(
    home: &hermes_config::HermesHome,
    raw: &Value,
    kind: AuthProvider,
) -> Result<Vec<String>, CliError> {
    let path = home.config_path();
    let edit_err = |e: hermes_config::edit::EditError| CliError::runtime(e.to_string());
    let mut notes = vec![format!("config.yaml: model.provider = {}", kind.id())];
    hermes_config::edit::set(&path, "model.provider", &Value::String(kind.id().into()))
        .map_err(edit_err)?;
    let previous = raw.pointer("/model/provider").and_then(Value::as_str);
    if previous != Some(kind.id()) {
        // Endpoint and key of another provider would send this one's requests astray.
        for key in ["model.base_url", "model.api_key"] {
            if hermes_config::edit::unset(&path, key).map_err(edit_err)? {
                notes.push(format!(
                    "removed {key} (it belonged to the previous provider)"
                ));
            }
        }
    }
    let model = raw.pointer("/model/default").and_then(Value::as_str);
    // The Codex backend serves OpenAI's models only: an OpenRouter-style name cannot work.
    let unusable = model.is_none_or(|m| m.trim().is_empty() || m.contains('/'));
    if kind == AuthProvider::Codex
        && unusable
        && let Some(default) = preset(kind.id()).and_then(|p| p.default_model)
    {
        hermes_config::edit::set(&path, "model.default", &Value::String(default.into()))
            .map_err(edit_err)?;
        notes.push(format!("config.yaml: model.default = {default}"));
    }
    Ok(notes)
}
