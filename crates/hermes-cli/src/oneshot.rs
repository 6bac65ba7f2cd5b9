//! One question, one answer: `hermes -z PROMPT` prints only the final answer on stdout;
//! `hermes chat -q PROMPT` streams it with tool progress. Both exit non-zero with a one-line
//! reason on stderr when the turn fails, and 130 when interrupted. A background review the turn
//! made due starts once the answer is out; the process waits for it at most
//! `memory.review_wait_seconds` before exiting, its notices on stderr.

use hermes_tools::output::terminal_safe;
use std::process::ExitCode;
use std::sync::Arc;

use hermes_protocol::TurnEnd;
use hermes_runtime::Unattended;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::render::{ProgressRenderer, StreamRenderer};

pub enum Style {
    /// Final answer only on stdout (`-z`).
    AnswerOnly,
    /// Streamed answer and tool lines on stdout (`chat -q`).
    Streamed,
}

pub async fn run(args: &CommonArgs, prompt: &str, style: Style) -> Result<ExitCode, CliError> {
    let (runtime, mut session) = crate::session::open(args, Arc::new(Unattended))?;
    // A kanban worker keeps its claim alive for as long as this process runs.
    let _heartbeat = hermes_kanban::heartbeat::start_worker_heartbeat(&hermes_kanban::kanban_root(
        runtime.home().root(),
    ));
    let cancel = CancellationToken::new();
    spawn_interrupt_handler(cancel.clone());
    let ((report, unreadable), streamed) = match style {
        Style::AnswerOnly => {
            let sink = ProgressRenderer::new();
            (
                session.turn_with_references(prompt, &sink, cancel).await,
                false,
            )
        }
        Style::Streamed => {
            let sink = StreamRenderer::new();
            let r = session.turn_with_references(prompt, &sink, cancel).await;
            sink.finish_turn();
            (r, true)
        }
    };
    for e in unreadable {
        eprintln!("hermes: {e}; sent without it");
    }
    if args.usage && !report.is_interrupted() {
        eprintln!("{}", crate::render::usage_line(&report));
    }
    let result = match report.end {
        TurnEnd::Interrupted => Err(CliError::interrupted()),
        TurnEnd::Failed(failure) => Err(CliError::runtime(failure.message)),
        TurnEnd::Completed => {
            if !streamed {
                println!("{}", terminal_safe(&report.final_text));
            }
            Ok(ExitCode::SUCCESS)
        }
        TurnEnd::BudgetExhausted => {
            if !streamed {
                println!("{}", terminal_safe(&report.final_text));
            }
            eprintln!(
                "hermes: stopped after {} model calls (agent.max_turns); the answer above is the model's wrap-up",
                report.api_calls
            );
            Ok(ExitCode::SUCCESS)
        }
    };
    // After the answer is out, never before it.
    let review = session.start_review(Arc::new(|line: &str| eprintln!("{line}")));
    let wait = session.review_settings().wait;
    // The stored session ends and background processes die with it, whatever the outcome.
    session.close().await;
    crate::curator_cmd::after_session(args);
    if let Some(review) = review {
        review.wait(wait).await;
    }
    result
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
