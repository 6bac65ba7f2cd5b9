//! How `hermes kanban` prints: Python's one-line task format with status icons, `show`'s
//! sections, and `--json` for scripts.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use hermes_kanban::model::{Attachment, Event, NotifySub, Run};
use hermes_kanban::time::{age, now};
use hermes_kanban::{Board, KanbanError, Task, TickReport};
use serde_json::{Value, json};

use crate::error::CliError;

fn icon(status: &str) -> &'static str {
    match status {
        "todo" => "◻",
        "ready" => "▶",
        "running" => "●",
        "scheduled" => "⏱",
        "blocked" => "⊘",
        "done" => "✓",
        "archived" => "—",
        "triage" => "?",
        "review" => "◎",
        _ => "?",
    }
}

/// Python's `_task_to_dict`.
pub fn task_json(t: &Task) -> Value {
    json!({
        "id": t.id,
        "title": t.title,
        "body": t.body,
        "assignee": t.assignee,
        "status": t.status,
        "priority": t.priority,
        "tenant": t.tenant,
        "workspace_kind": t.workspace_kind,
        "workspace_path": t.workspace_path,
        "branch_name": t.branch_name,
        "created_by": t.created_by,
        "created_at": t.created_at,
        "started_at": t.started_at,
        "completed_at": t.completed_at,
        "result": t.result,
        "skills": t.skills,
        "max_retries": t.max_retries,
        "session_id": t.session_id,
    })
}

fn line(t: &Task) -> String {
    let tenant = t
        .tenant
        .as_deref()
        .map(|x| format!(" [{x}]"))
        .unwrap_or_default();
    format!(
        "{} {}  {:8}  {:20}{tenant}  {}",
        icon(&t.status),
        t.id,
        t.status,
        t.assignee.as_deref().unwrap_or("(unassigned)"),
        hermes_tools::output::terminal_safe(&t.title)
    )
}

pub fn list(tasks: &[Task], as_json: bool) {
    if as_json {
        println!("{}", Value::Array(tasks.iter().map(task_json).collect()));
    } else if tasks.is_empty() {
        println!("(no matching tasks)");
    } else {
        for t in tasks {
            println!("{}", line(t));
        }
    }
}

pub fn show(board: &Board, id: &str, as_json: bool) -> Result<(), KanbanError> {
    let (task, parents, children, comments, events, runs, latest) = board.consistent(|b| {
        Ok((
            b.get(id)?,
            b.parents(id)?,
            b.children(id)?,
            b.comments(id)?,
            b.events(id, 0)?,
            b.runs(id)?,
            b.latest_summary(id)?,
        ))
    })?;
    if as_json {
        println!(
            "{}",
            json!({
                "task": task_json(&task),
                "latest_summary": latest,
                "parents": parents,
                "children": children,
                "comments": comments,
                "events": events,
                "runs": runs,
            })
        );
        return Ok(());
    }
    let safe = hermes_tools::output::terminal_safe;
    let now = now();
    println!("Task {}: {}", task.id, safe(&task.title));
    println!("  status:    {}", task.status);
    println!("  assignee:  {}", task.assignee.as_deref().unwrap_or("-"));
    if let Some(t) = &task.tenant {
        println!("  tenant:    {t}");
    }
    println!(
        "  workspace: {}{}",
        task.workspace_kind,
        task.workspace_path
            .as_deref()
            .map(|p| format!(" @ {p}"))
            .unwrap_or_default()
    );
    if let Some(b) = &task.branch_name {
        println!("  branch:    {b}");
    }
    if !task.skills.is_empty() {
        println!("  skills:    {}", task.skills.join(", "));
    }
    if let Some(m) = task.max_retries {
        println!("  max-retries: {m} (task)");
    }
    if task.consecutive_failures > 0 {
        println!(
            "  failures:  {}{}",
            task.consecutive_failures,
            task.last_failure_error
                .as_deref()
                .map(|e| format!(" (last: {})", safe(e)))
                .unwrap_or_default()
        );
    }
    if !parents.is_empty() {
        println!("  parents:   {}", parents.join(", "));
    }
    if !children.is_empty() {
        println!("  children:  {}", children.join(", "));
    }
    if let Some(body) = task.body.as_deref().filter(|b| !b.trim().is_empty()) {
        println!("\n{}", safe(body.trim()));
    }
    if let Some(s) = latest {
        println!("\nLatest summary:\n  {}", safe(&s));
    }
    if !comments.is_empty() {
        println!("\nComments:");
        for c in &comments {
            println!(
                "  [{} ago] {}: {}",
                age(c.created_at, now),
                safe(&c.author),
                safe(&c.body)
            );
        }
    }
    if !runs.is_empty() {
        println!("\nRuns:");
        for r in &runs {
            println!("  {}", run_line(r, now));
        }
    }
    if !events.is_empty() {
        println!("\nEvents:");
        for e in &events {
            println!("  {}", event_line(e));
        }
    }
    Ok(())
}

fn run_line(r: &Run, now: i64) -> String {
    format!(
        "#{} {} {} ({}, {} ago){}",
        r.id,
        r.outcome.as_deref().unwrap_or(&r.status),
        r.profile.as_deref().unwrap_or("-"),
        r.ended_at
            .map(|e| format!("{}s", e - r.started_at))
            .unwrap_or_else(|| "running".into()),
        age(r.started_at, now),
        r.summary
            .as_deref()
            .or(r.error.as_deref())
            .map(|s| format!(": {}", hermes_tools::output::terminal_safe(s)))
            .unwrap_or_default()
    )
}

pub fn event_line(e: &Event) -> String {
    let payload = e
        .payload
        .as_ref()
        .map(|p| format!(" {p}"))
        .unwrap_or_default();
    format!(
        "[{}] {}{}",
        hermes_kanban::time::age(e.created_at, now()) + " ago",
        e.kind,
        hermes_tools::output::terminal_safe(&payload)
    )
}

pub fn attachments(items: &[Attachment], as_json: bool) {
    if as_json {
        println!("{}", json!(items));
    } else if items.is_empty() {
        println!("(no attachments)");
    } else {
        for a in items {
            println!(
                "#{} {} ({} bytes) {}",
                a.id, a.filename, a.size, a.stored_path
            );
        }
    }
}

pub fn runs(items: &[Run], as_json: bool) {
    if as_json {
        println!("{}", json!(items));
    } else if items.is_empty() {
        println!("(no runs)");
    } else {
        let now = now();
        for r in items {
            println!("{}", run_line(r, now));
        }
    }
}

pub fn stats(counts: &[(String, i64)], as_json: bool) {
    if as_json {
        let map: serde_json::Map<String, Value> =
            counts.iter().map(|(s, n)| (s.clone(), json!(n))).collect();
        println!("{}", Value::Object(map));
    } else if counts.is_empty() {
        println!("(empty board)");
    } else {
        for (s, n) in counts {
            println!("{} {s:10} {n}", icon(s));
        }
    }
}

pub fn subscriptions(subs: &[NotifySub], as_json: bool) {
    if as_json {
        println!("{}", json!(subs));
    } else if subs.is_empty() {
        println!("(no subscriptions)");
    } else {
        for s in subs {
            let thread = if s.thread_id.is_empty() {
                String::new()
            } else {
                format!(" thread {}", s.thread_id)
            };
            println!("{}  {}:{}{thread}", s.task_id, s.platform, s.chat_id);
        }
    }
}

pub fn tick(r: &TickReport, as_json: bool) {
    if as_json {
        println!("{}", json!(r));
        return;
    }
    if r.skipped_locked {
        println!("Another dispatcher is running a pass on this board; skipped.");
        return;
    }
    for (id, who, ws) in &r.spawned {
        if ws.is_empty() {
            println!("Would start {id} as {who}");
        } else {
            println!("Started {id} as {who} in {ws}");
        }
    }
    let groups: [(&str, &Vec<String>); 7] = [
        ("Reclaimed (claim expired)", &r.reclaimed),
        ("Crashed", &r.crashed),
        ("Timed out", &r.timed_out),
        (
            "Parked for a person after repeated failures",
            &r.auto_blocked,
        ),
        ("Ready but unassigned", &r.skipped_unassigned),
        (
            "Ready but the assignee is no profile (create it with `hermes profile create`)",
            &r.skipped_unknown_profile,
        ),
        ("", &Vec::new()),
    ];
    for (label, ids) in groups.iter().filter(|(_, ids)| !ids.is_empty()) {
        println!("{label}: {}", ids.join(", "));
    }
    if r.promoted > 0 {
        println!("Promoted {} task(s) to ready", r.promoted);
    }
    if r.is_idle() && r.skipped_unassigned.is_empty() && r.skipped_unknown_profile.is_empty() {
        println!("Nothing to do.");
    }
}

/// The worker log, or its last `tail` bytes.
pub fn log(path: &Path, tail: Option<u64>) -> Result<(), CliError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(_) => {
            println!("(no log yet at {})", path.display());
            return Ok(());
        }
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // Bounded: at most the last 1 MiB unless less is asked.
    let want = tail.unwrap_or(1024 * 1024).min(1024 * 1024);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(want)));
    let mut buf = Vec::new();
    f.take(want)
        .read_to_end(&mut buf)
        .map_err(|e| CliError::runtime(format!("{}: {e}", path.display())))?;
    print!(
        "{}",
        hermes_tools::output::terminal_safe(&String::from_utf8_lossy(&buf))
    );
    Ok(())
}
