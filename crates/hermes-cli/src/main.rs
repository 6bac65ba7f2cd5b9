//! The `hermes` binary. Parses the command line, then hands over to one mode: one-shot
//! (`-z`, `chat -q`) or the interactive chat. `--version` answers before any runtime starts.

mod acp;
mod approvals_cmd;
mod args;
mod completion_cmd;
mod compress_cmd;
mod config_cmd;
mod cron_cmd;
mod curator_cmd;
mod dashboard_cmd;
mod error;
mod gateway_cmd;
mod gateway_service;
mod honcho_cmd;
mod interaction;
mod json_out;
mod kanban_cmd;
mod logging;
mod login_cmd;
mod mcp_cmd;
mod memory_cmd;
mod moa_cmd;
mod model_cmd;
mod model_list;
mod oneshot;
mod pairing_cmd;
mod profile_cmd;
mod prompt_size;
mod python_only;
mod render;
mod repl;
mod resume;
mod session;
mod sessions_cmd;
mod setup_cmd;
mod skills_cmd;
mod status_cmd;
mod store_cmd;
mod tools_cmd;
mod tui;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use error::CliError;

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // A sandboxed command starting: restrict this process and exec the command, before
    // anything else runs (and while there is only this thread).
    if argv
        .get(1)
        .is_some_and(|a| a == hermes_tools::sandbox::LAUNCHER_ARG)
    {
        return hermes_tools::sandbox::launcher_main(&argv[2..]);
    }
    // A cloud backend's command client (Daytona, Modal): one command over the API.
    if argv
        .get(1)
        .is_some_and(|a| a == hermes_tools::env::remote_exec::REMOTE_EXEC_ARG)
    {
        return hermes_tools::env::remote_exec::main(&argv[2..]);
    }
    // Commands the agent runs cannot read this process's environment or memory.
    hermes_tools::secrets::protect_process_environment();
    // This executable starts the agent's sandboxed commands.
    if let Ok(exe) = std::env::current_exe() {
        hermes_tools::sandbox::register_launcher(exe);
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        // Only a command line clap refuses is compared with the Python Hermes's commands.
        Err(e) => match python_only::requested(&argv) {
            Some(word) => {
                eprintln!("hermes: {}", python_only::message(&word));
                return ExitCode::from(2);
            }
            None => e.exit(),
        },
    };
    logging::init(cli.verbose);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // May quote a provider's error body.
            eprintln!(
                "hermes: {}",
                hermes_tools::output::terminal_safe(&e.message)
            );
            ExitCode::from(e.code)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(format!("cannot start the async runtime: {e}")))?;
    match (&cli.oneshot, &cli.command) {
        (Some(prompt), _) => runtime.block_on(oneshot::run(
            &cli.common,
            prompt,
            oneshot::Style::AnswerOnly,
        )),
        (None, Some(Command::Chat(chat))) => {
            let common = cli.common.merged(&chat.common);
            match &chat.query {
                Some(q) => runtime.block_on(oneshot::run(&common, q, oneshot::Style::Streamed)),
                None => runtime.block_on(repl::run(&common)),
            }
        }
        (None, None) => runtime.block_on(repl::run(&cli.common)),
        (None, Some(Command::PromptSize(size))) => {
            prompt_size::run(&cli.common.merged(&size.common))
        }
        (None, Some(Command::Sessions(sessions))) => match &sessions.action {
            sessions_cmd::SessionsAction::Compress { id, focus } => {
                runtime.block_on(compress_cmd::run(
                    &cli.common,
                    sessions.profile.as_deref(),
                    id,
                    focus.as_deref(),
                ))
            }
            _ => sessions_cmd::run(&cli.common, sessions),
        },
        (None, Some(Command::Model(model))) => model_cmd::run(model),
        (None, Some(Command::Setup(setup))) => runtime.block_on(setup_cmd::run(&cli.common, setup)),
        (None, Some(Command::Config(config))) => config_cmd::run(&cli.common, config),
        (None, Some(Command::Tools(tools))) => tools_cmd::run(&cli.common, tools),
        (None, Some(Command::Memory(memory))) => memory_cmd::run(&cli.common, memory),
        (None, Some(Command::Skills(skills))) => {
            runtime.block_on(skills_cmd::run(&cli.common, skills))
        }
        (None, Some(Command::Store(store))) => runtime.block_on(store_cmd::run(&cli.common, store)),
        (None, Some(Command::Kanban(kanban))) => {
            runtime.block_on(kanban_cmd::run(&cli.common, kanban))
        }
        (None, Some(Command::Moa(moa))) => moa_cmd::run(&cli.common, moa),
        (None, Some(Command::Honcho(honcho))) => honcho_cmd::run(&cli.common, honcho),
        (None, Some(Command::Curator(curator))) => {
            runtime.block_on(curator_cmd::run(&cli.common, curator))
        }
        (None, Some(Command::Profile(profile))) => profile_cmd::run(profile),
        (None, Some(Command::Status(status))) => status_cmd::status(&cli.common, status),
        (None, Some(Command::Doctor(doctor))) => {
            runtime.block_on(status_cmd::doctor(&cli.common, doctor))
        }
        (None, Some(Command::Cron(cron))) => runtime.block_on(cron_cmd::run(&cli.common, cron)),
        (None, Some(Command::Mcp(mcp))) => mcp_cmd::run(&cli.common, mcp),
        (None, Some(Command::Gateway(gateway))) => {
            runtime.block_on(gateway_cmd::run(&cli.common, gateway))
        }
        (None, Some(Command::Login(login))) => runtime.block_on(login_cmd::run(&cli.common, login)),
        (None, Some(Command::Pairing(pairing))) => pairing_cmd::run(&cli.common, pairing),
        (None, Some(Command::Approvals(approvals))) => approvals_cmd::run(&cli.common, approvals),
        (None, Some(Command::Completion(completion))) => completion_cmd::run(completion),
        (None, Some(Command::Acp)) => runtime.block_on(acp::run(&cli.common)),
        (None, Some(Command::Dashboard(dashboard))) => {
            runtime.block_on(dashboard_cmd::run(&cli.common, dashboard))
        }
    }
}
