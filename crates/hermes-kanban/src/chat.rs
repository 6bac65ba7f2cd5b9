//! `/kanban ...` typed in the REPL or a chat: the everyday board actions as one text command
//! answered with text. `list [status]`, `show ID`, `comment ID TEXT`, `unblock ID [answer]`
//! (the answer is a comment the resumed worker reads), `block ID REASON`, `complete ID
//! [summary]`, `archive ID`; anything else prints the usage.

use std::path::Path;

use crate::board::{Board, ListFilter};
use crate::error::{KanbanError, Result};
use crate::lifecycle::Completion;
use crate::model::{BlockKind, Status};
use crate::paths::{BoardPaths, ProcessEnv};

pub const USAGE: &str = "Kanban: /kanban list [status] · show ID · comment ID TEXT · unblock ID [answer] · block ID REASON · complete ID [summary] · archive ID";

/// Runs one `/kanban` command for `author` on the current board under `root`.
pub fn run(root: &Path, args: &str, author: &str) -> String {
    match run_inner(root, args.trim(), author) {
        Ok(text) => text,
        Err(e) => format!("⚠️ {e}"),
    }
}

fn run_inner(root: &Path, args: &str, author: &str) -> Result<String> {
    let mut words = args.splitn(3, char::is_whitespace);
    let verb = words.next().unwrap_or("").to_ascii_lowercase();
    let id = words.next().unwrap_or("").trim().to_string();
    let rest = words.next().unwrap_or("").trim().to_string();
    if verb.is_empty() || verb == "help" {
        return Ok(USAGE.to_string());
    }
    let board = Board::open(BoardPaths::resolve(root, None, &ProcessEnv)?)?;
    let need_id = |id: &str| {
        if id.is_empty() {
            Err(KanbanError::UnknownTask("(none given)".into()))
        } else {
            Ok(())
        }
    };
    Ok(match verb.as_str() {
        "list" | "ls" => {
            board.recompute_ready(None)?;
            let status = Some(id.as_str())
                .filter(|s| !s.is_empty())
                .map(Status::parse)
                .transpose()?;
            let tasks = board.list(&ListFilter {
                status,
                limit: Some(30),
                ..Default::default()
            })?;
            if tasks.is_empty() {
                "The board is empty.".to_string()
            } else {
                tasks
                    .iter()
                    .map(|t| {
                        format!(
                            "{} {} · {} · {}",
                            t.id,
                            t.status,
                            t.assignee.as_deref().unwrap_or("-"),
                            t.title
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        "show" => {
            need_id(&id)?;
            let t = board.get(&id)?;
            let mut out = format!(
                "{} · {}\nstatus {} · assignee {}",
                t.id,
                t.title,
                t.status,
                t.assignee.as_deref().unwrap_or("-")
            );
            if let Some(s) = board.latest_summary(&id)? {
                out.push_str(&format!("\nlatest: {s}"));
            }
            for c in board.comments(&id)?.iter().rev().take(5).rev() {
                out.push_str(&format!("\n💬 {}: {}", c.author, c.body));
            }
            out
        }
        "comment" => {
            need_id(&id)?;
            board.comment(&id, author, &rest)?;
            format!("Commented on {id}.")
        }
        "unblock" => {
            need_id(&id)?;
            if !rest.is_empty() {
                board.comment(&id, author, &format!("UNBLOCK: {rest}"))?;
            }
            if board.unblock(&id)? {
                format!("Unblocked {id}; a worker picks it up on the next dispatcher pass.")
            } else {
                format!("{id} is not blocked.")
            }
        }
        "block" => {
            need_id(&id)?;
            let reason = Some(rest.as_str()).filter(|r| !r.is_empty());
            match board.block(&id, reason, Some(BlockKind::NeedsInput), None)? {
                Some(_) => format!("Blocked {id}."),
                None => format!("{id} is not running or ready."),
            }
        }
        "complete" | "done" => {
            need_id(&id)?;
            let summary = Some(rest.as_str()).filter(|r| !r.is_empty());
            let done = board.complete(
                &id,
                &Completion {
                    result: None,
                    summary,
                    metadata: None,
                    expected_run: None,
                },
            )?;
            if done {
                format!("Completed {id}.")
            } else {
                format!("{id} cannot be completed now.")
            }
        }
        "archive" => {
            need_id(&id)?;
            if board.archive(&id)? {
                format!("Archived {id}.")
            } else {
                format!("{id} is already archived.")
            }
        }
        _ => USAGE.to_string(),
    })
}
