//! Subcommands the Python Hermes has and this build does not: `hermes backup` says so in one
//! line and exits 2, instead of clap's "unrecognized subcommand" (which reads like a typo).
//! The first positional word of the command line is compared with the Python Hermes's
//! built-in subcommands (its `_BUILTIN_SUBCOMMANDS`), after skipping our top-level flags and
//! their values exactly as clap would.

use std::ffi::OsString;

use clap::CommandFactory;

use crate::args::Cli;

/// The Python Hermes 0.19's top-level subcommands.
const PYTHON_SUBCOMMANDS: &[&str] = &[
    "acp",
    "auth",
    "backup",
    "bundles",
    "chat",
    "checkpoints",
    "claw",
    "completion",
    "computer-use",
    "config",
    "console",
    "cron",
    "curator",
    "dashboard",
    "debug",
    "desktop",
    "doctor",
    "dump",
    "fallback",
    "gateway",
    "gui",
    "hooks",
    "import",
    "insights",
    "journey",
    "learning",
    "login",
    "logout",
    "logs",
    "lsp",
    "mcp",
    "memory",
    "memory-graph",
    "migrate",
    "model",
    "pairing",
    "pets",
    "plugins",
    "portal",
    "postinstall",
    "profile",
    "project",
    "prompt-size",
    "proxy",
    "secrets",
    "security",
    "send",
    "serve",
    "sessions",
    "setup",
    "skills",
    "slack",
    "status",
    "tools",
    "uninstall",
    "update",
    "version",
    "webhook",
    "whatsapp",
    "whatsapp-cloud",
];

/// The Python-only subcommand `argv` (program name first) asks for, if it asks for one.
pub fn requested(argv: &[OsString]) -> Option<String> {
    let command = Cli::command();
    let word = first_positional(&command, argv.get(1..).unwrap_or_default())?;
    let ours = command
        .get_subcommands()
        .any(|sub| sub.get_name() == word || sub.get_all_aliases().any(|a| a == word));
    (!ours && PYTHON_SUBCOMMANDS.contains(&word.as_str())).then_some(word)
}

/// The message for [`requested`]'s answer.
pub fn message(word: &str) -> String {
    format!(
        "`hermes {word}` is not in this build (the Python Hermes has it); `hermes --help` lists \
         the commands this one has"
    )
}

/// The first word that is neither a top-level flag nor the value of one.
fn first_positional(command: &clap::Command, args: &[OsString]) -> Option<String> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let arg = arg.to_str()?;
        if arg == "--" {
            return None;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if !long.contains('=') && takes_value(command, |a| a.get_long() == Some(long)) {
                rest.next();
            }
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            // `-vv` counts; `-zPROMPT` carries its value; `-z PROMPT` takes the next word.
            let mut chars = shorts.chars();
            while let Some(c) = chars.next() {
                if takes_value(command, |a| a.get_short() == Some(c)) {
                    if chars.as_str().is_empty() {
                        rest.next();
                    }
                    break;
                }
            }
        } else {
            return Some(arg.to_string());
        }
    }
    None
}

fn takes_value(command: &clap::Command, named: impl Fn(&clap::Arg) -> bool) -> bool {
    command
        .get_arguments()
        .find(|a| named(a))
        .is_some_and(|a| a.get_action().takes_values())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(line: &[&str]) -> Option<String> {
        let argv: Vec<OsString> = std::iter::once("hermes")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect();
        requested(&argv)
    }

    #[test]
    fn python_only_commands_are_named_and_ours_are_not() {
        assert_eq!(ask(&["backup", "--quick"]).as_deref(), Some("backup"));
        assert_eq!(ask(&["kanban", "list"]), None);
        assert_eq!(ask(&["dashboard", "--port", "1"]), None);
        assert_eq!(
            ask(&["-v", "insights", "--days", "7"]).as_deref(),
            Some("insights")
        );
        assert_eq!(ask(&["curator", "status"]), None);
        assert_eq!(ask(&["sessions", "list"]), None);
        assert_eq!(ask(&["completion", "zsh"]), None);
        assert_eq!(ask(&[]), None);
        // A typo is clap's business (it suggests the right word).
        assert_eq!(ask(&["sesions"]), None);
    }

    #[test]
    fn flag_values_are_not_taken_for_subcommands() {
        assert_eq!(ask(&["-z", "kanban"]), None);
        assert_eq!(ask(&["-m", "backup", "chat"]), None);
        assert_eq!(ask(&["--provider", "logs"]), None);
        assert_eq!(ask(&["--model=x", "backup"]).as_deref(), Some("backup"));
        assert_eq!(ask(&["-mx", "backup"]).as_deref(), Some("backup"));
        assert_eq!(ask(&["--", "kanban"]), None);
    }
}
