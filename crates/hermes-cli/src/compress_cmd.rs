//! `hermes sessions compress ID [--focus TEXT]`: compresses a stored session with the same
//! compressor the agent uses (pruning, protected head and tail, a summary by the auxiliary
//! model) and continues it in a child session (or in place with `compression.in_place`).

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;
use crate::setup;

pub async fn run(
    common: &CommonArgs,
    profile: Option<&str>,
    id: &str,
    focus: Option<&str>,
) -> Result<ExitCode, CliError> {
    let mut args = common.clone();
    args.resume = Some(id.to_string());
    args.continue_last = false;
    if let Some(p) = profile {
        args.profile = Some(p.to_string());
    }
    let session = setup::build(&args, "cli")?;
    let history = session.persistence.history();
    let original = session.persistence.session_id().to_string();
    if history.is_empty() {
        return Err(CliError::config(format!(
            "session {original} has no messages to compress"
        )));
    }
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let Some(out) = session.agent.compress(&history, focus, &cancel).await else {
        return Err(CliError::config(
            "compression is disabled (compression.enabled: false in config.yaml)",
        ));
    };
    if let Some(notice) = &out.notice {
        eprintln!("hermes: {notice}");
    }
    if cancel.is_cancelled() {
        return Err(CliError::interrupted());
    }
    if !out.summarized && out.pruned == 0 {
        println!(
            "Session {original} is already compact (~{} tokens); nothing was changed.",
            out.tokens_before
        );
        return Ok(ExitCode::SUCCESS);
    }
    let recorder = session.persistence.start(&session.agent);
    recorder.compressed(out.messages);
    let now = recorder.session_id();
    drop(recorder);
    let how = if out.summarized {
        "summarized"
    } else {
        "pruned"
    };
    if now == original {
        println!(
            "Compressed session {original} in place ({how}): ~{} -> ~{} tokens.",
            out.tokens_before, out.tokens_after
        );
    } else {
        println!(
            "Compressed session {original} ({how}): ~{} -> ~{} tokens; it continues as session {now} (hermes --resume {now}).",
            out.tokens_before, out.tokens_after
        );
    }
    session.background.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
