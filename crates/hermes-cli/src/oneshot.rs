//! One question, one answer: `hermes -z PROMPT` prints only the final answer on stdout;
//! `hermes chat -q PROMPT` streams it with tool progress. Both exit non-zero with a one-line
//! reason on stderr when the turn fails, and 130 when interrupted.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::persist::Tee;
use crate::render::{ProgressRenderer, StreamRenderer};
use crate::setup;

pub enum Style {
    /// Final answer only on stdout (`-z`).
    AnswerOnly,
    /// Streamed answer and tool lines on stdout (`chat -q`).
    Streamed,
}

pub async fn run(args: &CommonArgs, prompt: &str, style: Style) -> Result<ExitCode, CliError> {
    let session = setup::build(args, "cli")?;
    for w in &session.warnings {
        eprintln!("hermes: {w}");
    }
    let cancel = CancellationToken::new();
    spawn_interrupt_handler(cancel.clone());
    let recorder = session.persistence.start(&session.agent);
    let history = session.persistence.history();
    let (result, streamed) = match style {
        Style::AnswerOnly => {
            let sink = ProgressRenderer::new();
            (
                session
                    .agent
                    .run_turn(prompt, history, &Tee(&recorder, &sink), cancel)
                    .await,
                false,
            )
        }
        Style::Streamed => {
            let sink = StreamRenderer::new();
            let r = session
                .agent
                .run_turn(prompt, history, &Tee(&recorder, &sink), cancel)
                .await;
            sink.finish_turn();
            (r, true)
        }
    };
    recorder.end_turn(&result);
    // Background processes die with the session, whatever the outcome of the turn.
    session.background.shutdown().await;
    if result.interrupted {
        return Err(CliError::interrupted());
    }
    if args.usage {
        eprintln!("{}", crate::render::usage_line(&result));
    }
    if let Some(reason) = result.error {
        return Err(CliError::runtime(reason));
    }
    if !streamed {
        println!("{}", result.final_text);
    }
    if !result.completed {
        eprintln!(
            "hermes: stopped after {} model calls (agent.max_turns); the answer above is the model's wrap-up",
            result.api_calls
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// First Ctrl-C cancels the turn (the agent closes its history cleanly); a second one exits
/// at once.
pub fn spawn_interrupt_handler(cancel: CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        cancel.cancel();
        if tokio::signal::ctrl_c().await.is_ok() {
            hermes_tools::process::kill_all_now();
            std::process::exit(130);
        }
    });
}
