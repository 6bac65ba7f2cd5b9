//! `hermes completion [bash|zsh|fish]`: prints the shell completion script for every command
//! and flag of this binary (generated from the argument definitions, so it never drifts).
//! The Python Hermes's command, same default shell (bash). Install e.g. with
//! `hermes completion bash > ~/.local/share/bash-completion/completions/hermes`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, CommandFactory, ValueEnum};

use crate::args::Cli;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell to print the script for.
    #[arg(value_enum, default_value_t = Shell::Bash)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

pub fn run(args: &CompletionArgs) -> Result<ExitCode, CliError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut command, "hermes", &mut script);
    std::io::stdout()
        .lock()
        .write_all(&script)
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(shell: clap_complete::Shell) -> String {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "hermes", &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_shell_completes_subcommands_and_their_flags() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let s = script(shell);
            for word in ["sessions", "gateway", "cron", "oneshot", "provider"] {
                assert!(s.contains(word), "{shell:?} script lacks {word}");
            }
        }
        assert!(script(clap_complete::Shell::Bash).contains("complete -F"));
        assert!(script(clap_complete::Shell::Zsh).starts_with("#compdef hermes"));
        assert!(script(clap_complete::Shell::Fish).contains("complete -c hermes"));
    }
}
