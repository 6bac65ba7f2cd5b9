//! The approval settings of a session: `approvals.mode` (manual | smart | off),
//! `approvals.timeout` (seconds to wait for an answer, default 60), `approvals.deny` (globs
//! refused even with `--yolo`), `approvals.non_interactive` (approve | deny: what a run with
//! nobody to ask does with a flagged command; deny by default), the top-level
//! `command_allowlist`, and whether `--yolo` or `HERMES_YOLO_MODE` is on.

use std::path::PathBuf;
use std::time::Duration;

use hermes_config::{Config, ConfigError};
use serde::Deserialize;

/// Who approves dangerous commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalMode {
    /// Ask the user.
    #[default]
    Manual,
    /// Ask an auxiliary model first; the user when it is unsure or says no.
    Smart,
    /// Approve without asking (hardline commands stay refused).
    Off,
}

/// What a session with nobody to ask (`hermes -z`, cron jobs, the API server) does with a
/// command or write that needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonInteractivePolicy {
    /// Refuse it, telling the model why (the default: the checker fails closed, so "needs
    /// approval" includes everything it could not read; approving that unattended would
    /// undo it).
    #[default]
    Deny,
    /// Run it, with a notice on stderr (the Python Hermes's one-shot behaviour).
    Approve,
}

impl NonInteractivePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            NonInteractivePolicy::Deny => "deny",
            NonInteractivePolicy::Approve => "approve",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ApprovalSettings {
    pub mode: ApprovalMode,
    /// How long to wait for the user's answer before denying.
    pub timeout: Duration,
    /// `--yolo` / `HERMES_YOLO_MODE`: approve everything but hardline commands.
    pub yolo: bool,
    /// Approval keys (flag descriptions) and command globs approved permanently.
    pub allowlist: Vec<String>,
    /// Command globs refused in every mode.
    pub deny: Vec<String>,
    /// With nobody to ask: refuse or approve.
    pub non_interactive: NonInteractivePolicy,
    /// Where "always" answers are saved (`command_allowlist`); none: not saved.
    pub config_path: Option<PathBuf>,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            mode: ApprovalMode::Manual,
            timeout: Duration::from_secs(60),
            yolo: false,
            allowlist: Vec::new(),
            deny: Vec::new(),
            non_interactive: NonInteractivePolicy::Deny,
            config_path: None,
        }
    }
}

/// `approvals:` as written; `mode: off` unquoted is a boolean in YAML 1.1 files.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawApprovals {
    mode: Option<RawMode>,
    timeout: Option<f64>,
    deny: Vec<String>,
    non_interactive: Option<RawMode>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawMode {
    Flag(bool),
    Name(String),
}

impl ApprovalSettings {
    /// Reads `approvals` and `command_allowlist` from the config; `yolo` comes from the
    /// command line or the environment.
    pub fn from_config(config: &Config, yolo: bool) -> Result<ApprovalSettings, ConfigError> {
        let raw: RawApprovals = config.section("approvals")?;
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            path: config.path.clone(),
            key: key.to_string(),
            message,
        };
        let mode = match raw.mode {
            None => ApprovalMode::Manual,
            Some(RawMode::Flag(false)) => ApprovalMode::Off,
            Some(RawMode::Flag(true)) => ApprovalMode::Manual,
            Some(RawMode::Name(name)) => match name.trim().to_ascii_lowercase().as_str() {
                "" | "manual" => ApprovalMode::Manual,
                "smart" => ApprovalMode::Smart,
                "off" => ApprovalMode::Off,
                other => {
                    return Err(invalid(
                        "approvals.mode",
                        format!("unknown mode `{other}` (expected manual, smart or off)"),
                    ));
                }
            },
        };
        let timeout = match raw.timeout {
            None => Duration::from_secs(60),
            Some(t) if t.is_finite() && t > 0.0 => Duration::from_secs_f64(t.min(86_400.0)),
            Some(t) => {
                return Err(invalid(
                    "approvals.timeout",
                    format!("{t} is not a positive number of seconds"),
                ));
            }
        };
        let non_interactive = match raw.non_interactive {
            None => NonInteractivePolicy::Deny,
            Some(RawMode::Flag(true)) => NonInteractivePolicy::Approve,
            Some(RawMode::Flag(false)) => NonInteractivePolicy::Deny,
            Some(RawMode::Name(name)) => match name.trim().to_ascii_lowercase().as_str() {
                "approve" | "allow" => NonInteractivePolicy::Approve,
                "" | "deny" | "refuse" => NonInteractivePolicy::Deny,
                other => {
                    return Err(invalid(
                        "approvals.non_interactive",
                        format!("unknown policy `{other}` (expected approve or deny)"),
                    ));
                }
            },
        };
        let allowlist: Vec<String> = config.section("command_allowlist")?;
        Ok(ApprovalSettings {
            mode,
            timeout,
            yolo,
            allowlist: allowlist
                .into_iter()
                .filter(|s| !s.trim().is_empty())
                .collect(),
            deny: raw
                .deny
                .into_iter()
                .filter(|s| !s.trim().is_empty())
                .collect(),
            non_interactive,
            config_path: Some(config.path.clone()),
        })
    }
}

/// Whether an environment value such as `HERMES_YOLO_MODE` means "on".
pub fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;
    use std::path::Path;

    fn load(text: &str) -> Result<ApprovalSettings, ConfigError> {
        let env = Environment::isolated::<&str, &str>([]);
        let config = Config::from_yaml(Path::new("/h/config.yaml"), text, &env)?;
        ApprovalSettings::from_config(&config, false)
    }

    #[test]
    fn modes_timeouts_and_lists() {
        let s = load("").unwrap();
        assert_eq!(s.mode, ApprovalMode::Manual);
        assert_eq!(s.timeout, Duration::from_secs(60));
        let s = load("approvals:\n  mode: smart\n  timeout: 5\n  deny: ['git push*']\ncommand_allowlist:\n  - recursive delete\n").unwrap();
        assert_eq!(s.mode, ApprovalMode::Smart);
        assert_eq!(s.timeout, Duration::from_secs(5));
        assert_eq!(s.deny, vec!["git push*"]);
        assert_eq!(s.allowlist, vec!["recursive delete"]);
        assert_eq!(
            load("approvals:\n  mode: off\n").unwrap().mode,
            ApprovalMode::Off
        );
        assert_eq!(
            load("approvals:\n  mode: false\n").unwrap().mode,
            ApprovalMode::Off
        );
        assert_eq!(
            load("").unwrap().non_interactive,
            NonInteractivePolicy::Deny
        );
        assert_eq!(
            load("approvals:\n  non_interactive: approve\n")
                .unwrap()
                .non_interactive,
            NonInteractivePolicy::Approve
        );
        let e = load("approvals:\n  non_interactive: maybe\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("approvals.non_interactive"), "{e}");
        let e = load("approvals:\n  mode: auto\n").unwrap_err().to_string();
        assert!(e.contains("approvals.mode") && e.contains("auto"), "{e}");
        assert!(load("command_allowlist: 3\n").is_err());
    }

    #[test]
    fn truthy_values() {
        assert!(is_truthy("1") && is_truthy("TRUE") && is_truthy(" yes "));
        assert!(!is_truthy("0") && !is_truthy("") && !is_truthy("no"));
    }
}
