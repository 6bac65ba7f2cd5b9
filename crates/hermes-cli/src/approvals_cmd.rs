//! `hermes approvals check [--json] -- COMMAND` (or `--stdin`, one command per line, `-0` for
//! NUL-separated): the verdict the terminal tool would reach on a command, through the same
//! code path ([`hermes_tools::ApprovalGate::evaluate`] with the home's `approvals` settings,
//! deny rules and `command_allowlist`, `--yolo` and `HERMES_YOLO_MODE`): `refused (rule)`,
//! `needs approval (rule)` or `allowed`. With `--json`, one object per command:
//! `{"command", "verdict": "refused"|"needs_approval"|"allowed", "rule", "reason"}`. Users run
//! it to understand a refusal before they change a rule.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hermes_tools::approval::{ApprovalGate, ApprovalSettings, CommandChecker, Decision, is_truthy};
use hermes_tools::protect::ProtectedPaths;
use serde_json::json;

use crate::args::CommonArgs;
use crate::error::CliError;

/// The most `--stdin` reads.
const MAX_STDIN_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub action: ApprovalsAction,

    /// Use the profile NAME: a separate home under $HERMES_HOME/profiles/NAME.
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsAction {
    /// Print the verdict the terminal tool would reach on COMMAND: refused (rule), needs
    /// approval (rule) or allowed.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// One JSON object per command: {"command", "verdict", "rule", "reason"}.
    #[arg(long)]
    pub json: bool,

    /// Read the commands from stdin, one per line.
    #[arg(long)]
    pub stdin: bool,

    /// With --stdin: commands are separated by NUL bytes (multi-line commands).
    #[arg(short = '0', long = "null", requires = "stdin")]
    pub null: bool,

    /// Check as with --yolo (HERMES_YOLO_MODE is read too).
    #[arg(long)]
    pub yolo: bool,

    /// The command line to check (after `--`, so its options are not taken for ours).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// `top` holds the flags given before the subcommand (`hermes -p NAME approvals ...`).
pub fn run(top: &CommonArgs, args: &ApprovalsArgs) -> Result<ExitCode, CliError> {
    match &args.action {
        ApprovalsAction::Check(check) => {
            let common = CommonArgs {
                profile: args.profile.clone().or_else(|| top.profile.clone()),
                yolo: top.yolo || check.yolo,
                ..CommonArgs::default()
            };
            run_check(&common, check)
        }
    }
}

fn run_check(common: &CommonArgs, args: &CheckArgs) -> Result<ExitCode, CliError> {
    let commands = match (args.stdin, args.command.is_empty()) {
        (true, true) => read_stdin(args.null)?,
        (false, false) => vec![args.command.join(" ")],
        (true, false) => {
            return Err(CliError::config(
                "give the command after `--` or use --stdin, not both",
            ));
        }
        (false, true) => {
            return Err(CliError::config(
                "nothing to check: `hermes approvals check -- COMMAND`, or --stdin",
            ));
        }
    };
    let gate = session_gate(common)?;
    let mut out = std::io::stdout().lock();
    for command in &commands {
        let decision = gate.evaluate(command);
        let line = if args.json {
            json_line(command, &decision)
        } else {
            text_line(&decision)
        };
        writeln!(out, "{line}")
            .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The approval gate a session of this home would have (without a judge or a user).
fn session_gate(common: &CommonArgs) -> Result<ApprovalGate, CliError> {
    let (home, config, env) = crate::session::load_home(common)?;
    let yolo = common.yolo || env.var("HERMES_YOLO_MODE").is_some_and(|v| is_truthy(&v));
    let settings = ApprovalSettings::from_config(&config, yolo)
        .map_err(|e| CliError::config(e.to_string()))?;
    let user_home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let protected = ProtectedPaths::new(user_home, Some(home.root().to_path_buf()));
    let checker = CommandChecker::new(protected.home(), protected.hermes_home());
    Ok(ApprovalGate::new(settings, checker, None))
}

/// The commands on stdin: one per line, or NUL-separated; blank ones skipped.
fn read_stdin(null: bool) -> Result<Vec<String>, CliError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_STDIN_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::runtime(format!("cannot read stdin: {e}")))?;
    if bytes.len() as u64 > MAX_STDIN_BYTES {
        return Err(CliError::config(format!(
            "stdin holds more than {} MiB of commands; check fewer at once",
            MAX_STDIN_BYTES / (1024 * 1024)
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    let sep = if null { '\0' } else { '\n' };
    Ok(text
        .split(sep)
        .map(|c| c.strip_suffix('\r').unwrap_or(c))
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
        .collect())
}

fn text_line(decision: &Decision) -> String {
    let safe = |s: &str| crate::render::one_line(s).into_owned();
    match decision {
        Decision::Refused { rule, .. } => format!("refused ({})", safe(rule)),
        Decision::NeedsApproval { rule, .. } => format!("needs approval ({})", safe(rule)),
        Decision::Allowed {
            rule: Some(rule),
            reason: Some(reason),
        } => format!("allowed ({}: {})", safe(rule), safe(reason)),
        Decision::Allowed { .. } => "allowed".to_string(),
    }
}

fn json_line(command: &str, decision: &Decision) -> String {
    let (verdict, rule, reason) = match decision {
        Decision::Refused { rule, reason, .. } => ("refused", Some(rule), Some(reason)),
        Decision::NeedsApproval { rule, reason } => ("needs_approval", Some(rule), Some(reason)),
        Decision::Allowed { rule, reason } => ("allowed", rule.as_ref(), reason.as_ref()),
    };
    // Sorted keys: the same line for scripts whatever serde_json's features.
    hermes_protocol::json_order::sorted_keys(&json!({
        "command": command,
        "verdict": verdict,
        "rule": rule,
        "reason": reason,
    }))
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines() {
        let d = Decision::Refused {
            rule: "recursive delete of root filesystem".into(),
            reason: "blocklist".into(),
            hardline: true,
        };
        assert_eq!(
            text_line(&d),
            "refused (recursive delete of root filesystem)"
        );
        assert_eq!(
            json_line("rm -rf /", &d),
            r#"{"command":"rm -rf /","reason":"blocklist","rule":"recursive delete of root filesystem","verdict":"refused"}"#
        );
        let d = Decision::Allowed {
            rule: None,
            reason: None,
        };
        assert_eq!(text_line(&d), "allowed");
        assert_eq!(
            json_line("ls", &d),
            r#"{"command":"ls","reason":null,"rule":null,"verdict":"allowed"}"#
        );
    }
}
