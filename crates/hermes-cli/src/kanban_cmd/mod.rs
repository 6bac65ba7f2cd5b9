//! `hermes kanban ...`: the board from the command line, the Python Hermes's subcommands and
//! output (`Created t_… (ready, assignee=…)`, the one-line task list with status icons,
//! `show`, `tail`), plus `dispatch` (one dispatcher pass) and `daemon` (passes until
//! interrupted). The board lives in the shared root of the home (`kanban_root`), so every
//! profile sees the same board.

mod args;
mod render;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

pub use args::KanbanArgs;
use args::{BoardsAction, CreateArgs, KanbanAction};
use hermes_kanban::{
    Board, BoardPaths, Dispatcher, KanbanError, KanbanSettings, ListFilter, NewTask, ProcessEnv,
    Status, Workspace, lifecycle::Completion, model::BlockKind, paths,
};

use crate::args::CommonArgs;
use crate::error::CliError;

impl From<KanbanError> for CliError {
    fn from(e: KanbanError) -> CliError {
        match e {
            KanbanError::Sql(_)
            | KanbanError::Io { .. }
            | KanbanError::Open { .. }
            | KanbanError::OpenRemote { .. }
            | KanbanError::MigrationShort { .. } => CliError::runtime(e.to_string()),
            _ => CliError::config(e.to_string()),
        }
    }
}

pub async fn run(top: &CommonArgs, args: &KanbanArgs) -> Result<ExitCode, CliError> {
    let (home, config, _) = crate::session::load_home(top)?;
    let root = hermes_kanban::kanban_root(home.root());
    let settings: KanbanSettings = config
        .section("kanban")
        .map_err(|e| CliError::config(e.to_string()))?;
    if let KanbanAction::Boards { action } = &args.action {
        return boards(&root, action);
    }
    let paths = BoardPaths::resolve(&root, args.board.as_deref(), &ProcessEnv)?;
    let author = std::env::var("HERMES_PROFILE")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .or_else(|| home.profile_name())
        .unwrap_or_else(|| "user".into());
    match &args.action {
        KanbanAction::Dispatch {
            dry_run,
            max,
            failure_limit,
            json,
        } => {
            let settings = with_overrides(settings, *max, *failure_limit);
            let mut dispatcher = Dispatcher::new(paths, settings, current_exe()?);
            let dry_run = *dry_run;
            let report = tokio::task::spawn_blocking(move || dispatcher.tick(dry_run))
                .await
                .map_err(|e| CliError::runtime(e.to_string()))??;
            render::tick(&report, *json);
            return Ok(ExitCode::SUCCESS);
        }
        KanbanAction::Daemon {
            interval,
            max,
            failure_limit,
        } => {
            let settings = with_overrides(settings, *max, *failure_limit);
            return daemon(Dispatcher::new(paths, settings, current_exe()?), *interval).await;
        }
        KanbanAction::Tail { task_id, interval } => return tail(paths, task_id, *interval).await,
        _ => {}
    }
    let board = Board::open(paths)?;
    let ok = act(&board, &args.action, &author)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn current_exe() -> Result<std::path::PathBuf, CliError> {
    std::env::current_exe()
        .map_err(|e| CliError::runtime(format!("cannot find the hermes executable: {e}")))
}

fn with_overrides(
    mut s: KanbanSettings,
    max: Option<usize>,
    failure_limit: Option<i64>,
) -> KanbanSettings {
    if max.is_some() {
        s.max_in_progress = max;
    }
    if let Some(f) = failure_limit {
        s.failure_limit = f.max(1);
    }
    s
}

/// Every action on an open board; `false` when one of several ids failed.
fn act(board: &Board, action: &KanbanAction, author: &str) -> Result<bool, CliError> {
    let mut out = std::io::stdout().lock();
    match action {
        KanbanAction::Init => {
            let _ = writeln!(
                out,
                "Board {} ready at {}",
                board.paths().slug,
                board.paths().db.display()
            );
        }
        KanbanAction::Create(c) => create(board, c)?,
        KanbanAction::List {
            mine,
            assignee,
            status,
            tenant,
            archived,
            json,
        } => {
            board.recompute_ready(None)?;
            let assignee = match (assignee, mine) {
                (Some(a), _) => Some(a.clone()),
                (None, true) => Some(author.to_string()),
                (None, false) => None,
            };
            let tasks = board.list(&ListFilter {
                assignee,
                status: status.as_deref().map(Status::parse).transpose()?,
                tenant: tenant.clone(),
                include_archived: *archived,
                limit: None,
            })?;
            render::list(&tasks, *json);
        }
        KanbanAction::Show { task_id, json } => render::show(board, task_id, *json)?,
        KanbanAction::Assign { task_id, profile } => {
            let profile = (!profile.eq_ignore_ascii_case("none")).then_some(profile.as_str());
            board.assign(task_id, profile)?;
            let _ = writeln!(
                out,
                "Assigned {task_id} to {}",
                profile.unwrap_or("(nobody)")
            );
        }
        KanbanAction::Link {
            parent_id,
            child_id,
        } => {
            board.link(parent_id, child_id)?;
            let _ = writeln!(out, "Linked {parent_id} -> {child_id}");
        }
        KanbanAction::Unlink {
            parent_id,
            child_id,
        } => {
            if !board.unlink(parent_id, child_id)? {
                let _ = writeln!(std::io::stderr(), "no link {parent_id} -> {child_id}");
                return Ok(false);
            }
            let _ = writeln!(out, "Unlinked {parent_id} -> {child_id}");
        }
        KanbanAction::Comment {
            task_id,
            text,
            author: by,
        } => {
            let id = board.comment(task_id, by.as_deref().unwrap_or(author), &text.join(" "))?;
            let _ = writeln!(out, "Commented on {task_id} (#{id})");
        }
        KanbanAction::Attach {
            task_id,
            path,
            name,
            content_type,
            author: by,
        } => {
            let a = board.attach_file(
                task_id,
                path,
                name.as_deref(),
                content_type.as_deref(),
                Some(by.as_deref().unwrap_or(author)),
            )?;
            let _ = writeln!(
                out,
                "Attached {} ({} bytes) to {task_id} as #{}",
                a.filename, a.size, a.id
            );
        }
        KanbanAction::Attachments { task_id, json } => {
            board.get(task_id)?;
            render::attachments(&board.attachments(task_id)?, *json);
        }
        KanbanAction::Complete {
            task_ids,
            result,
            summary,
            metadata,
        } => {
            let metadata = metadata
                .as_deref()
                .map(|m| {
                    serde_json::from_str::<serde_json::Value>(m)
                        .ok()
                        .filter(|v| v.is_object())
                        .ok_or_else(|| CliError::config("--metadata must be a JSON object"))
                })
                .transpose()?;
            return each(task_ids, |id| {
                let done = board.complete(
                    id,
                    &Completion {
                        result: result.as_deref(),
                        summary: summary.as_deref(),
                        metadata: metadata.clone(),
                        expected_run: None,
                    },
                )?;
                Ok(done.then(|| format!("Completed {id}")))
            });
        }
        KanbanAction::Block {
            task_id,
            reason,
            kind,
        } => {
            let reason = Some(reason.join(" ")).filter(|r| !r.trim().is_empty());
            let kind = kind.as_deref().map(BlockKind::parse).transpose()?;
            if let Some(r) = &reason {
                board.comment(task_id, author, &format!("BLOCKED: {r}"))?;
            }
            let suffix = reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            match board.block(task_id, reason.as_deref(), kind, None)? {
                None => {
                    let _ = writeln!(
                        std::io::stderr(),
                        "cannot block {task_id} (not running or ready)"
                    );
                    return Ok(false);
                }
                Some(hermes_kanban::lifecycle::BlockOutcome::Todo) => {
                    let _ = writeln!(out, "{task_id} → todo (dependency wait){suffix}");
                }
                Some(hermes_kanban::lifecycle::BlockOutcome::Triage) => {
                    let _ = writeln!(
                        out,
                        "{task_id} → triage (unblock loop detected — needs a human decision){suffix}"
                    );
                }
                Some(hermes_kanban::lifecycle::BlockOutcome::Blocked) => {
                    let _ = writeln!(out, "Blocked {task_id}{suffix}");
                }
            }
        }
        KanbanAction::Unblock { task_ids, reason } => {
            let reason = reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
            return each(task_ids, |id| {
                if let Some(r) = reason {
                    board.comment(id, author, &format!("UNBLOCK: {r}"))?;
                }
                let ok = board.unblock(id)?;
                Ok(ok.then(|| {
                    format!(
                        "Unblocked {id}{}",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )
                }))
            });
        }
        KanbanAction::Schedule { task_id, reason } => {
            let reason = Some(reason.join(" ")).filter(|r| !r.trim().is_empty());
            if let Some(r) = &reason {
                board.comment(task_id, author, &format!("SCHEDULED: {r}"))?;
            }
            if !board.schedule(task_id, reason.as_deref())? {
                let _ = writeln!(std::io::stderr(), "cannot schedule {task_id}");
                return Ok(false);
            }
            let _ = writeln!(out, "Scheduled {task_id}");
        }
        KanbanAction::Archive { task_ids } => {
            return each(task_ids, |id| {
                Ok(board.archive(id)?.then(|| format!("Archived {id}")))
            });
        }
        KanbanAction::Log { task_id, tail } => {
            board.get(task_id)?;
            render::log(&board.paths().worker_log(task_id), *tail)?;
        }
        KanbanAction::Runs { task_id, json } => render::runs(&board.runs(task_id)?, *json),
        KanbanAction::Stats { json } => render::stats(&board.stats()?, *json),
        KanbanAction::NotifySubscribe {
            task_id,
            platform,
            chat_id,
            thread_id,
            user_id,
        } => {
            board.subscribe(
                task_id,
                platform,
                chat_id,
                thread_id.as_deref(),
                user_id.as_deref(),
            )?;
            let _ = writeln!(out, "Subscribed {platform}:{chat_id} to {task_id}");
        }
        KanbanAction::NotifyList { task_id, json } => {
            render::subscriptions(&board.subscriptions(task_id.as_deref())?, *json)
        }
        KanbanAction::NotifyUnsubscribe {
            task_id,
            platform,
            chat_id,
            thread_id,
        } => {
            if !board.unsubscribe(task_id, platform, chat_id, thread_id.as_deref())? {
                let _ = writeln!(std::io::stderr(), "no such subscription");
                return Ok(false);
            }
            let _ = writeln!(out, "Unsubscribed {platform}:{chat_id} from {task_id}");
        }
        KanbanAction::Boards { .. }
        | KanbanAction::Dispatch { .. }
        | KanbanAction::Daemon { .. }
        | KanbanAction::Tail { .. } => {}
    }
    Ok(true)
}

/// Runs `f` on each id, printing what it says; a refused id is reported and the rest go on.
fn each(
    ids: &[String],
    mut f: impl FnMut(&str) -> Result<Option<String>, KanbanError>,
) -> Result<bool, CliError> {
    let mut all = true;
    for id in ids {
        match f(id) {
            Ok(Some(line)) => println!("{line}"),
            Ok(None) => {
                eprintln!("hermes: {id} was not changed (it is not in a state that allows it)");
                all = false;
            }
            Err(e) => {
                eprintln!("hermes: {e}");
                all = false;
            }
        }
    }
    Ok(all)
}

fn create(board: &Board, c: &CreateArgs) -> Result<(), CliError> {
    let workspace = Workspace::parse(&c.workspace)?;
    if c.branch.is_some() && !matches!(workspace, Workspace::Worktree(_)) {
        return Err(CliError::config(
            "--branch is only valid with --workspace worktree",
        ));
    }
    if c.max_retries.is_some_and(|m| m < 1) {
        return Err(CliError::config(
            "--max-retries must be >= 1 (1 trips on the first failure)",
        ));
    }
    let max_runtime = c
        .max_runtime
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| CliError::config(format!("--max-runtime: {e}")))?;
    let mut new = NewTask::titled(c.title.clone());
    new.body = c.body.clone();
    new.assignee = c.assignee.clone();
    new.created_by = Some(c.created_by.clone());
    new.workspace = workspace;
    new.branch_name = c.branch.clone();
    new.tenant = c.tenant.clone();
    new.priority = c.priority;
    new.parents = c.parents.clone();
    new.triage = c.triage;
    new.idempotency_key = c.idempotency_key.clone();
    new.max_runtime_seconds = max_runtime;
    new.skills = c.skills.clone();
    new.max_retries = c.max_retries;
    let id = board.create(&new)?;
    let task = board.get(&id)?;
    if c.json {
        println!("{}", render::task_json(&task));
    } else {
        println!(
            "Created {id}  ({}, assignee={})",
            task.status,
            task.assignee.as_deref().unwrap_or("-")
        );
    }
    Ok(())
}

/// `90`, `90s`, `30m`, `2h`, `1d` in seconds.
fn parse_duration(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('s') => (&s[..s.len() - 1], 1),
        Some('m') => (&s[..s.len() - 1], 60),
        Some('h') => (&s[..s.len() - 1], 3600),
        Some('d') => (&s[..s.len() - 1], 86_400),
        _ => (s, 1),
    };
    match num.trim().parse::<i64>() {
        Ok(n) if n > 0 => Ok(n * mult),
        _ => Err(format!("`{s}` is not a duration (90, 90s, 30m, 2h, 1d)")),
    }
}

fn boards(root: &std::path::Path, action: &BoardsAction) -> Result<ExitCode, CliError> {
    match action {
        BoardsAction::List { json } => {
            let current = BoardPaths::resolve(root, None, &ProcessEnv)?.slug;
            let all = paths::list_boards(root);
            if *json {
                let rows: Vec<_> = all
                    .iter()
                    .map(|b| serde_json::json!({"slug": b, "current": *b == current}))
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else {
                for b in all {
                    println!("{} {b}", if b == current { "*" } else { " " });
                }
            }
        }
        BoardsAction::Create { slug, name, switch } => {
            let p = paths::create_board(root, slug, name.as_deref())?;
            Board::open(p.clone())?;
            if *switch {
                switch_board(root, &p.slug)?;
            }
            println!("Created board {}", p.slug);
        }
        BoardsAction::Switch { slug } => {
            let slug = paths::normalize_slug(slug)?;
            if !paths::board_exists(root, &slug) {
                return Err(KanbanError::UnknownBoard(slug).into());
            }
            switch_board(root, &slug)?;
            println!("Current board: {slug}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn switch_board(root: &std::path::Path, slug: &str) -> Result<(), CliError> {
    let file = paths::current_board_file(root);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::runtime(format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(&file, format!("{slug}\n"))
        .map_err(|e| CliError::runtime(format!("{}: {e}", file.display())))
}

/// Dispatcher passes every `interval` seconds until Ctrl-C or SIGTERM; one line per pass that
/// did something.
async fn daemon(mut dispatcher: Dispatcher, interval: f64) -> Result<ExitCode, CliError> {
    let interval = Duration::from_secs_f64(interval.max(0.2));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::runtime(e.to_string()))?;
    eprintln!(
        "hermes: kanban dispatcher on board {} every {:.1}s (Ctrl-C to stop)",
        dispatcher.paths().slug,
        interval.as_secs_f64()
    );
    loop {
        let (d, result) = tokio::task::spawn_blocking(move || {
            let r = dispatcher.tick(false);
            (dispatcher, r)
        })
        .await
        .map_err(|e| CliError::runtime(e.to_string()))?;
        dispatcher = d;
        match result {
            Ok(report) if !report.is_idle() => render::tick(&report, false),
            Ok(_) => {}
            Err(e) => eprintln!("hermes: dispatcher pass failed: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    eprintln!(
        "hermes: kanban dispatcher stopped ({} workers still running on their own)",
        dispatcher.live_workers()
    );
    Ok(ExitCode::SUCCESS)
}

/// Prints a task's events as they arrive.
async fn tail(paths: BoardPaths, task_id: &str, interval: f64) -> Result<ExitCode, CliError> {
    let board = Board::open(paths)?;
    board.get(task_id)?;
    println!("Tailing events for {task_id}. Ctrl-C to stop.");
    let mut last = 0;
    loop {
        for e in board.events(task_id, last)? {
            last = e.id;
            println!("{}", render::event_line(&e));
        }
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs_f64(interval.max(0.1))) => {}
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    println!("\n(stopped)");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(90));
        assert_eq!(parse_duration("30m"), Ok(1800));
        assert_eq!(parse_duration("2h"), Ok(7200));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-5m").is_err());
    }
}
