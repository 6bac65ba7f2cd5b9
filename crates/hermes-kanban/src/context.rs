//! What a worker reads about its task (`kanban_show`'s `worker_context`, Python's
//! `build_worker_context`): the card, its body, attachments, earlier attempts, the parents'
//! handoffs and the comment thread, every field capped so a huge card cannot flood a prompt.

use crate::board::Board;
use crate::error::Result;
use crate::time::{age, now};

const MAX_BODY_CHARS: usize = 8 * 1024;
const MAX_FIELD_CHARS: usize = 4 * 1024;
const MAX_COMMENT_CHARS: usize = 2 * 1024;
const MAX_PRIOR_ATTEMPTS: usize = 10;
const MAX_COMMENTS: usize = 30;

fn cap(s: &str, limit: usize) -> String {
    let count = s.chars().count();
    if count <= limit {
        return s.to_string();
    }
    let kept: String = s.chars().take(limit).collect();
    format!("{kept}… [truncated, {} chars omitted]", count - limit)
}

/// The full text a worker should read to understand task `id`.
pub fn worker_context(board: &Board, id: &str) -> Result<String> {
    let task = board.get(id)?;
    let now = now();
    let mut out: Vec<String> = vec![
        format!("# Kanban task {}: {}", task.id, task.title),
        String::new(),
        format!(
            "Assignee: {}",
            task.assignee.as_deref().unwrap_or("(unassigned)")
        ),
        format!("Status:   {}", task.status),
    ];
    if let Some(t) = &task.tenant {
        out.push(format!("Tenant:   {t}"));
    }
    out.push(format!(
        "Workspace: {} @ {}",
        task.workspace_kind,
        task.workspace_path.as_deref().unwrap_or("(unresolved)")
    ));
    if let Some(m) = task.max_runtime_seconds {
        out.push(format!("Max runtime: {m}s"));
    }
    if let Some(b) = &task.branch_name {
        out.push(format!("Branch:   {b}"));
    }
    out.push(String::new());
    if let Some(body) = task.body.as_deref().filter(|b| !b.trim().is_empty()) {
        out.push("## Body".into());
        out.push(cap(body, MAX_BODY_CHARS));
        out.push(String::new());
    }
    let attachments = board.attachments(id)?;
    if !attachments.is_empty() {
        out.push("## Attachments".into());
        out.push("Files attached to this task; read them with your file tools.".into());
        for a in &attachments {
            let kb = a.size / 1024;
            let size = if kb > 0 {
                format!(", {kb} KB")
            } else {
                String::new()
            };
            let ctype = a
                .content_type
                .as_deref()
                .map(|c| format!(", {c}"))
                .unwrap_or_default();
            out.push(format!(
                "- `{}`{ctype}{size} → `{}`",
                a.filename, a.stored_path
            ));
        }
        out.push(String::new());
    }
    let prior: Vec<_> = board
        .runs(id)?
        .into_iter()
        .filter(|r| r.ended_at.is_some())
        .collect();
    if !prior.is_empty() {
        out.push("## Prior attempts on this task".into());
        let skip = prior.len().saturating_sub(MAX_PRIOR_ATTEMPTS);
        if skip > 0 {
            out.push(format!(
                "_({skip} earlier attempts omitted; showing most recent {MAX_PRIOR_ATTEMPTS})_"
            ));
        }
        for (i, run) in prior.iter().enumerate().skip(skip) {
            out.push(format!(
                "### Attempt {} — {} ({}, {} ago)",
                i + 1,
                run.outcome.as_deref().unwrap_or(&run.status),
                run.profile.as_deref().unwrap_or("-"),
                age(run.started_at, now)
            ));
            if let Some(s) = run.summary.as_deref().filter(|s| !s.is_empty()) {
                out.push(cap(s, MAX_FIELD_CHARS));
            }
            if let Some(e) = run.error.as_deref().filter(|s| !s.is_empty()) {
                out.push(format!("_error_: {}", cap(e, MAX_FIELD_CHARS)));
            }
            if let Some(m) = &run.metadata {
                out.push(format!(
                    "_metadata_: `{}`",
                    cap(&m.to_string(), MAX_FIELD_CHARS)
                ));
            }
            out.push(String::new());
        }
    }
    let parents = board.parents(id)?;
    let mut parent_lines = Vec::new();
    for pid in &parents {
        let Some(parent) = board.find(pid)? else {
            continue;
        };
        if parent.status != "done" {
            continue;
        }
        let when = parent
            .completed_at
            .map(|t| format!(" (completed {} ago)", age(t, now)))
            .unwrap_or_default();
        parent_lines.push(format!("### {pid}: {}{when}", parent.title));
        let latest = board
            .runs(pid)?
            .into_iter()
            .rev()
            .find(|r| r.outcome.as_deref() == Some("completed"));
        match (
            latest.as_ref().and_then(|r| r.summary.as_deref()),
            parent.result.as_deref(),
        ) {
            (Some(s), _) if !s.is_empty() => parent_lines.push(cap(s, MAX_FIELD_CHARS)),
            (_, Some(r)) if !r.is_empty() => parent_lines.push(cap(r, MAX_FIELD_CHARS)),
            _ => parent_lines.push("(no result recorded)".into()),
        }
        if let Some(m) = latest.as_ref().and_then(|r| r.metadata.as_ref()) {
            parent_lines.push(format!(
                "_metadata_: `{}`",
                cap(&m.to_string(), MAX_FIELD_CHARS)
            ));
        }
        parent_lines.push(String::new());
    }
    if !parent_lines.is_empty() {
        out.push("## Parent task results".into());
        out.extend(parent_lines);
    }
    let comments = board.comments(id)?;
    if !comments.is_empty() {
        out.push("## Comment thread".into());
        let skip = comments.len().saturating_sub(MAX_COMMENTS);
        if skip > 0 {
            out.push(format!(
                "_({skip} earlier comments omitted; showing most recent {MAX_COMMENTS})_"
            ));
        }
        for c in comments.iter().skip(skip) {
            let author: String = c
                .author
                .chars()
                .filter(|ch| *ch != '`' && !ch.is_control())
                .take(64)
                .collect();
            out.push(format!(
                "comment from `{author}` {} ago:",
                age(c.created_at, now)
            ));
            out.push(cap(&c.body, MAX_COMMENT_CHARS));
            out.push(String::new());
        }
    }
    Ok(out.join("\n").trim_end().to_string() + "\n")
}
