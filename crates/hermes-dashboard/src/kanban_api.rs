//! The kanban page's routes over hermes-kanban (the Python kanban plugin's `/board`,
//! `/tasks/{id}`, `PATCH /tasks/{id}` and comments, under `/api/kanban`). A card dragged to
//! another column is a `PATCH` with its new `status`, carried out by the board's own life-cycle
//! verbs: `done` completes, `blocked` blocks, `scheduled` schedules, `archived` archives,
//! `ready` unblocks a blocked or scheduled task, and the moves no verb covers (`triage`,
//! `todo`, `ready`) go through `Board::move_to`. `running` is the dispatcher's to set.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use hermes_kanban::lifecycle::Completion;
use hermes_kanban::{Board, BoardPaths, KanbanError, ListFilter, ProcessEnv, Status};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::reply::{ApiError, ApiResult, blocking, body};

/// The board's columns, in order (Python's `BOARD_COLUMNS`).
pub const COLUMNS: [&str; 8] = [
    "triage",
    "todo",
    "scheduled",
    "ready",
    "running",
    "blocked",
    "review",
    "done",
];
/// Tasks shown at most (the newest archived ones are never shown).
const MAX_TASKS: usize = 2_000;
/// Events of one task sent at most (the newest).
const MAX_EVENTS: usize = 500;

fn kanban_error(e: KanbanError) -> ApiError {
    match e {
        KanbanError::UnknownTask(id) => ApiError::not_found(format!("task {id} not found")),
        e @ (KanbanError::InvalidValue { .. }
        | KanbanError::EmptyComment
        | KanbanError::InvalidBoard(_)
        | KanbanError::UnknownBoard(_)) => ApiError::bad_request(e.to_string()),
        e @ KanbanError::WrongState { .. } => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        e => ApiError::internal(e.to_string()),
    }
}

async fn with_board<T: Send + 'static>(
    app: &App,
    f: impl FnOnce(&Board) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let root = hermes_kanban::kanban_root(app.home.root());
    blocking(move || {
        let paths = BoardPaths::resolve(&root, None, &ProcessEnv).map_err(kanban_error)?;
        let board = Board::open(paths).map_err(kanban_error)?;
        f(&board)
    })
    .await
}

fn task_json(task: &hermes_kanban::Task) -> Value {
    serde_json::to_value(task).unwrap_or(Value::Null)
}

/// `GET /api/kanban/board`: `{"columns": [{"name", "tasks"}], "now"}`.
pub(crate) async fn board(State(app): State<Arc<App>>) -> ApiResult {
    let (tasks, comments) = with_board(&app, |board| {
        let tasks = board
            .list(&ListFilter {
                limit: Some(MAX_TASKS),
                ..ListFilter::default()
            })
            .map_err(kanban_error)?;
        let mut comments = HashMap::new();
        for t in &tasks {
            comments.insert(
                t.id.clone(),
                board.comments(&t.id).map_err(kanban_error)?.len(),
            );
        }
        Ok((tasks, comments))
    })
    .await?;
    let mut columns: Vec<(&str, Vec<Value>)> = COLUMNS.iter().map(|c| (*c, Vec::new())).collect();
    for t in &tasks {
        let slot = columns
            .iter()
            .position(|(name, _)| *name == t.status)
            .unwrap_or(1);
        let mut v = task_json(t);
        v["comment_count"] = json!(comments.get(&t.id).copied().unwrap_or(0));
        columns[slot].1.push(v);
    }
    let columns: Vec<Value> = columns
        .into_iter()
        .map(|(name, tasks)| json!({"name": name, "tasks": tasks}))
        .collect();
    Ok(Json(
        json!({"columns": columns, "now": hermes_store::time::now() as i64}),
    ))
}

/// `GET /api/kanban/tasks/{id}`: the task with its comments, events, runs and links.
pub(crate) async fn task(State(app): State<Arc<App>>, Path(id): Path<String>) -> ApiResult {
    let detail = with_board(&app, move |board| {
        let task = board.get(&id).map_err(kanban_error)?;
        let comments = board.comments(&id).map_err(kanban_error)?;
        let mut events = board.events(&id, 0).map_err(kanban_error)?;
        if events.len() > MAX_EVENTS {
            events.drain(..events.len() - MAX_EVENTS);
        }
        let runs = board.runs(&id).map_err(kanban_error)?;
        let parents = board.parents(&id).map_err(kanban_error)?;
        let children = board.children(&id).map_err(kanban_error)?;
        Ok(json!({
            "task": task_json(&task),
            "comments": comments,
            "events": events,
            "runs": runs,
            "links": {"parents": parents, "children": children},
        }))
    })
    .await?;
    Ok(Json(detail))
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Update {
    status: Option<String>,
    block_reason: Option<String>,
    result: Option<String>,
    summary: Option<String>,
}

/// `PATCH /api/kanban/tasks/{id}` `{"status": ...}`: the move, or 409 naming why not.
pub(crate) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let update: Update = body(raw)?;
    let Some(raw_status) = update.status.clone() else {
        return Err(ApiError::bad_request("nothing to change: give a status"));
    };
    let status = Status::parse(&raw_status).map_err(kanban_error)?;
    let task = with_board(&app, move |board| {
        let current = board.get(&id).map_err(kanban_error)?;
        let reason = update.block_reason.as_deref();
        let moved = match status {
            Status::Done => board
                .complete(
                    &id,
                    &Completion {
                        result: update.result.as_deref(),
                        summary: update.summary.as_deref(),
                        metadata: None,
                        expected_run: None,
                    },
                )
                .map_err(kanban_error)?,
            Status::Blocked => board
                .block(&id, reason, None, None)
                .map_err(kanban_error)?
                .is_some(),
            Status::Scheduled => board.schedule(&id, reason).map_err(kanban_error)?,
            Status::Archived => board.archive(&id).map_err(kanban_error)?,
            Status::Ready if matches!(current.status.as_str(), "blocked" | "scheduled") => {
                board.unblock(&id).map_err(kanban_error)?
            }
            Status::Ready | Status::Todo | Status::Triage => {
                board.move_to(&id, status).map_err(kanban_error)?
            }
            Status::Running => {
                return Err(ApiError::bad_request(
                    "Cannot set status to 'running' directly; the dispatcher claims tasks",
                ));
            }
            Status::Review => {
                return Err(ApiError::bad_request(
                    "review is set by workers handing a task over, not by a move",
                ));
            }
        };
        if !moved {
            let mut detail = format!(
                "status transition to '{}' not valid from '{}'",
                status.as_str(),
                current.status
            );
            if status == Status::Ready {
                let mut open = Vec::new();
                for p in board.parents(&id).map_err(kanban_error)? {
                    let parent = board.get(&p).map_err(kanban_error)?;
                    if parent.status != "done" {
                        open.push(format!(
                            "'{}' ({}, status={})",
                            parent.title, p, parent.status
                        ));
                    }
                }
                if !open.is_empty() {
                    detail = format!(
                        "Cannot move to 'ready': blocked by parent(s) not done — {}",
                        open.join(", ")
                    );
                }
            }
            return Err(ApiError::new(StatusCode::CONFLICT, detail));
        }
        board.get(&id).map_err(kanban_error)
    })
    .await?;
    Ok(Json(json!({"ok": true, "task": task_json(&task)})))
}

#[derive(Debug, Deserialize)]
pub(crate) struct NewComment {
    body: String,
    author: Option<String>,
}

/// `POST /api/kanban/tasks/{id}/comments` `{"body", "author"?}`.
pub(crate) async fn comment(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let new: NewComment = body(raw)?;
    if new.body.trim().is_empty() {
        return Err(ApiError::bad_request("body is required"));
    }
    let author = new
        .author
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "dashboard".into());
    let comment_id = with_board(&app, move |board| {
        board.comment(&id, &author, &new.body).map_err(kanban_error)
    })
    .await?;
    Ok(Json(json!({"ok": true, "id": comment_id})))
}
