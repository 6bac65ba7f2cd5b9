//! `hermes pairing list|approve|revoke`: who may talk to the gateway's bots beyond the
//! allowlists. An unknown user who writes to a bot in a direct chat gets a code; the owner
//! approves it here (`hermes pairing approve telegram K7Q2M9XA`) and the running gateway lets
//! that user in from their next message (it reads the store on every message). The files are
//! the Python Hermes's (`hermes_gateway::pairing`), so approvals carry over both ways.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_gateway::pairing::{PairingStore, Rejected};

use crate::args::CommonArgs;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct PairingArgs {
    /// Without an action: list.
    #[command(subcommand)]
    pub action: Option<PairingAction>,
}

#[derive(Debug, Subcommand)]
pub enum PairingAction {
    /// Codes waiting for approval and the users already approved.
    List {
        /// Only this platform (telegram, discord, slack, ...).
        platform: Option<String>,
    },
    /// Approve the user a code was issued to.
    Approve { platform: String, code: String },
    /// Take an approved user's access away.
    Revoke { platform: String, user_id: String },
}

pub fn run(common: &CommonArgs, args: &PairingArgs) -> Result<ExitCode, CliError> {
    let (home, _, _) = crate::session::load_home(common)?;
    let store = PairingStore::for_home(home.root());
    let failed = |e: hermes_gateway::pairing::PairingError| CliError::runtime(e.to_string());
    match &args.action {
        None => list(&store, None),
        Some(PairingAction::List { platform }) => list(&store, platform.as_deref()),
        Some(PairingAction::Approve { platform, code }) => {
            match store.approve(platform, code).map_err(failed)? {
                Ok(user) => {
                    let name = if user.user_name.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", user.user_name)
                    };
                    println!("Approved {} user {}{name}.", user.platform, user.user_id);
                    Ok(ExitCode::SUCCESS)
                }
                Err(Rejected::Unknown) => Err(CliError::config(format!(
                    "no pending {platform} code {code} (wrong, expired after an hour, or already used); `hermes pairing list` shows the waiting ones"
                ))),
                Err(Rejected::LockedOut) => Err(CliError::config(format!(
                    "{platform} approvals are locked for an hour after too many wrong codes"
                ))),
            }
        }
        Some(PairingAction::Revoke { platform, user_id }) => {
            if store.revoke(platform, user_id).map_err(failed)? {
                println!("Revoked {platform} user {user_id}.");
                Ok(ExitCode::SUCCESS)
            } else {
                Err(CliError::config(format!(
                    "{platform} user {user_id} is not approved"
                )))
            }
        }
    }
}

fn list(store: &PairingStore, platform: Option<&str>) -> Result<ExitCode, CliError> {
    let pending = store
        .pending(platform)
        .map_err(|e| CliError::runtime(e.to_string()))?;
    let approved = store.approved(platform);
    if pending.is_empty() {
        println!("No codes waiting.");
    } else {
        println!("Waiting for approval:");
        for p in &pending {
            println!(
                "  {:<10} {:<20} {:<20} {} min ago",
                p.platform, p.user_id, p.user_name, p.age_minutes
            );
        }
    }
    if approved.is_empty() {
        println!("No approved users.");
    } else {
        println!("Approved:");
        for a in &approved {
            println!("  {:<10} {:<20} {}", a.platform, a.user_id, a.user_name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
