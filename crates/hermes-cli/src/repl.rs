//! The interactive chat: read a line, run a turn with the answer streaming, repeat. Ctrl-C
//! cancels a running turn (the conversation stays valid) and exits at the prompt; Ctrl-D (end
//! of input) exits. A line ending in `\` continues on the next line.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use hermes_protocol::Message;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::render::StreamRenderer;
use crate::setup;

const HELP: &str = "Commands: /new (or /reset) starts a new conversation, /help shows this, /quit (or Ctrl-D) exits.
Ctrl-C stops the running turn. End a line with \\ to continue on the next line.";

pub async fn run(args: &CommonArgs) -> Result<ExitCode, CliError> {
    let session = setup::build(args, "cli")?;
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
    let mut lines = spawn_stdin_reader();
    let mut history: Vec<Message> = Vec::new();
    let renderer = StreamRenderer::new();
    loop {
        if interactive {
            print!("\n❯ ");
            let _ = std::io::stdout().flush();
        }
        let input = tokio::select! {
            line = read_message(&mut lines) => line,
            _ = tokio::signal::ctrl_c() => {
                println!();
                return Ok(ExitCode::from(130));
            }
        };
        let Some(input) = input else {
            return Ok(ExitCode::SUCCESS);
        };
        let text = input.trim();
        if text.is_empty() {
            continue;
        }
        match text {
            "/quit" | "/exit" | "/q" => return Ok(ExitCode::SUCCESS),
            "/new" | "/reset" => {
                history.clear();
                println!("Started a new conversation.");
                continue;
            }
            "/help" => {
                println!("{HELP}");
                continue;
            }
            cmd if cmd.starts_with('/') && !cmd.contains(char::is_whitespace) => {
                println!("Unknown command {cmd}. {HELP}");
                continue;
            }
            _ => {}
        }
        let cancel = CancellationToken::new();
        let turn = session.agent.run_turn(
            text,
            std::mem::take(&mut history),
            &renderer,
            cancel.clone(),
        );
        tokio::pin!(turn);
        let result = tokio::select! {
            r = &mut turn => r,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                turn.await
            }
        };
        renderer.finish_turn();
        history = result.messages;
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

/// One message: lines joined while they end with a backslash. `None` at end of input.
async fn read_message(lines: &mut mpsc::Receiver<String>) -> Option<String> {
    let mut message = String::new();
    loop {
        let line = lines.recv().await?;
        match line.strip_suffix('\\') {
            Some(start) => {
                message.push_str(start);
                message.push('\n');
            }
            None => {
                message.push_str(&line);
                return Some(message);
            }
        }
    }
}
