//! The interactive chat: read a line, run a turn with the answer streaming, repeat. Ctrl-C
//! cancels a running turn (the conversation stays valid) and exits at the prompt; Ctrl-D (end
//! of input) exits. A line ending in `\` continues on the next line.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use hermes_protocol::Message;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::interaction::{Lines, Terminal};
use crate::persist::Tee;
use crate::render::StreamRenderer;
use crate::setup;

const HELP: &str = "Commands: /new (or /reset) starts a new conversation, /title [NAME] shows or sets its title, /help shows this, /quit (or Ctrl-D) exits.
Ctrl-C stops the running turn. End a line with \\ to continue on the next line.";

pub async fn run(args: &CommonArgs) -> Result<ExitCode, CliError> {
    // One reader of stdin: messages and the answers to approval/clarify prompts share it.
    let lines = Lines::new(spawn_stdin_reader());
    let session = setup::build_with(args, "cli", Arc::new(Terminal::new(lines.clone())))?;
    for w in &session.warnings {
        eprintln!("hermes: {w}");
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!(
            "Hermes · {} via {} · tools: {} · /help for commands",
            session.spec.model,
            session.spec.provider,
            session.agent.tool_schemas().len()
        );
    }
    let recorder = session.persistence.start(&session.agent);
    if let Some(resumed) = session.persistence.resumed() {
        print!("{}", crate::resume::recap(resumed));
    }
    let mut history: Vec<Message> = session.persistence.history();
    let renderer = StreamRenderer::new();
    let sink = Tee(&recorder, &renderer);
    loop {
        if interactive {
            print!("\n❯ ");
            let _ = std::io::stdout().flush();
        }
        let input = tokio::select! {
            line = lines.next_message() => line,
            _ = tokio::signal::ctrl_c() => {
                println!();
                session.background.shutdown().await;
                return Ok(ExitCode::from(130));
            }
        };
        let Some(input) = input else {
            session.background.shutdown().await;
            return Ok(ExitCode::SUCCESS);
        };
        let text = input.trim();
        if text.is_empty() {
            continue;
        }
        match text {
            "/quit" | "/exit" | "/q" => {
                session.background.shutdown().await;
                return Ok(ExitCode::SUCCESS);
            }
            "/new" | "/reset" => {
                history.clear();
                recorder.new_session();
                println!("Started a new conversation.");
                continue;
            }
            "/help" => {
                println!("{HELP}");
                continue;
            }
            cmd if cmd == "/title" || cmd.starts_with("/title ") => {
                println!("{}", recorder.title_command(&cmd["/title".len()..]));
                continue;
            }
            cmd if cmd.starts_with('/') && !cmd.contains(char::is_whitespace) => {
                println!("Unknown command {cmd}. {HELP}");
                continue;
            }
            _ => {}
        }
        let cancel = CancellationToken::new();
        let turn =
            session
                .agent
                .run_turn(text, std::mem::take(&mut history), &sink, cancel.clone());
        tokio::pin!(turn);
        let result = tokio::select! {
            r = &mut turn => r,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                turn.await
            }
        };
        renderer.finish_turn();
        let unfinished = recorder.end_turn(&result);
        history = result.messages;
        history.extend(unfinished);
        if result.interrupted {
            println!("  · interrupted");
        } else if let Some(err) = result.error {
            eprintln!("hermes: {err}");
        }
    }
}

/// Lines from stdin, read on a thread so the async side can wait for Ctrl-C at the same time.
fn spawn_stdin_reader() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(4);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}
