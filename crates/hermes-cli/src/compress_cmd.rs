//! `hermes sessions compress ID [--focus TEXT]`: compresses a stored session with the same
//! compressor the agent uses (pruning, protected head and tail, a summary by the auxiliary
//! model) and continues it in a child session (or in place with `compression.in_place`).

use std::process::ExitCode;
use std::sync::Arc;

use hermes_runtime::{Compression, Unattended};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

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
    let (_runtime, mut session) = crate::session::open(&args, Arc::new(Unattended))?;
    let original = session.session_id();
    if session.history().is_empty() {
        session.close().await;
        return Err(CliError::config(format!(
            "session {original} has no messages to compress"
        )));
    }
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let outcome = session.compress(focus, &cancel).await;
    let now = session.session_id();
    session.close().await;
    let out = match outcome {
        Compression::Off => {
            return Err(CliError::config(
                "compression is disabled (compression.enabled: false in config.yaml)",
            ));
        }
        Compression::Interrupted => return Err(CliError::interrupted()),
        Compression::Unchanged(out) => {
            if let Some(notice) = &out.notice {
                eprintln!("hermes: {notice}");
            }
            println!(
                "Session {original} is already compact (~{} tokens); nothing was changed.",
                out.tokens_before
            );
            return Ok(ExitCode::SUCCESS);
        }
        Compression::Done(out) => out,
    };
    if let Some(notice) = &out.notice {
        eprintln!("hermes: {notice}");
    }
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
    Ok(ExitCode::SUCCESS)
}
