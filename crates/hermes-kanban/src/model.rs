//! The board's records, read by column name so boards of any Python version load.

use hermes_sql::{Row, SqlError};
use serde::Serialize;
use serde_json::Value;

use crate::error::KanbanError;

/// Where a task is in its life (Python's nine statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for someone to flesh it out; never dispatched.
    Triage,
    /// Waiting for its parents.
    Todo,
    /// Parked on time, not on a person.
    Scheduled,
    /// Dispatchable.
    Ready,
    Running,
    /// Waiting for a person.
    Blocked,
    /// Done, waiting for a reviewer worker.
    Review,
    Done,
    Archived,
}

impl Status {
    pub const ALL: [Status; 9] = [
        Status::Triage,
        Status::Todo,
        Status::Scheduled,
        Status::Ready,
        Status::Running,
        Status::Blocked,
        Status::Review,
        Status::Done,
        Status::Archived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Triage => "triage",
            Status::Todo => "todo",
            Status::Scheduled => "scheduled",
            Status::Ready => "ready",
            Status::Running => "running",
            Status::Blocked => "blocked",
            Status::Review => "review",
            Status::Done => "done",
            Status::Archived => "archived",
        }
    }

    pub fn parse(s: &str) -> Result<Status, KanbanError> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s.trim().to_lowercase())
            .ok_or_else(|| KanbanError::InvalidValue {
                what: "status",
                value: s.to_string(),
                allowed: "triage, todo, scheduled, ready, running, blocked, review, done, archived",
            })
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task is blocked (Python's typed block reasons; `None` = a generic human blocker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// Waiting on another task: goes back to `todo`, promoted when its parents finish.
    Dependency,
    /// Needs a person's answer.
    NeedsInput,
    /// Hit a wall no agent can pass (access, credentials).
    Capability,
    /// May clear on its own.
    Transient,
}

impl BlockKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Dependency => "dependency",
            BlockKind::NeedsInput => "needs_input",
            BlockKind::Capability => "capability",
            BlockKind::Transient => "transient",
        }
    }

    pub fn parse(s: &str) -> Result<BlockKind, KanbanError> {
        match s.trim() {
            "dependency" => Ok(BlockKind::Dependency),
            "needs_input" => Ok(BlockKind::NeedsInput),
            "capability" => Ok(BlockKind::Capability),
            "transient" => Ok(BlockKind::Transient),
            other => Err(KanbanError::InvalidValue {
                what: "block kind",
                value: other.to_string(),
                allowed: "dependency, needs_input, capability, transient",
            }),
        }
    }
}

/// Where a worker works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workspace {
    /// A fresh directory under the board's workspaces, removed when the task is done.
    Scratch,
    /// An existing absolute directory.
    Dir(String),
    /// A linked git worktree of the repository at the path (or the board's default one).
    Worktree(Option<String>),
}

impl Workspace {
    /// Python's `--workspace` flag: `scratch`, `dir:<abs path>`, `worktree[:<path>]`.
    pub fn parse(flag: &str) -> Result<Workspace, KanbanError> {
        let bad = || KanbanError::InvalidValue {
            what: "workspace",
            value: flag.to_string(),
            allowed: "scratch, dir:<absolute path>, worktree[:<path>]",
        };
        match flag.split_once(':') {
            None if flag == "scratch" => Ok(Workspace::Scratch),
            None if flag == "worktree" => Ok(Workspace::Worktree(None)),
            Some(("dir", p)) if std::path::Path::new(p).is_absolute() => {
                Ok(Workspace::Dir(p.to_string()))
            }
            Some(("worktree", p)) if std::path::Path::new(p).is_absolute() => {
                Ok(Workspace::Worktree(Some(p.to_string())))
            }
            _ => Err(bad()),
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Workspace::Scratch => "scratch",
            Workspace::Dir(_) => "dir",
            Workspace::Worktree(_) => "worktree",
        }
    }

    pub fn path(&self) -> Option<&str> {
        match self {
            Workspace::Scratch | Workspace::Worktree(None) => None,
            Workspace::Dir(p) | Workspace::Worktree(Some(p)) => Some(p),
        }
    }
}

/// One task row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    pub body: Option<String>,
    pub assignee: Option<String>,
    pub status: String,
    pub priority: i64,
    pub created_by: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
    pub workspace_kind: String,
    pub workspace_path: Option<String>,
    pub branch_name: Option<String>,
    pub tenant: Option<String>,
    pub result: Option<String>,
    pub idempotency_key: Option<String>,
    pub claim_lock: Option<String>,
    pub claim_expires: Option<i64>,
    pub consecutive_failures: i64,
    pub worker_pid: Option<i64>,
    pub last_failure_error: Option<String>,
    pub max_runtime_seconds: Option<i64>,
    pub last_heartbeat_at: Option<i64>,
    pub current_run_id: Option<i64>,
    pub skills: Vec<String>,
    pub model_override: Option<String>,
    pub max_retries: Option<i64>,
    pub session_id: Option<String>,
    pub block_kind: Option<String>,
    pub block_recurrences: i64,
}

impl Task {
    pub(crate) fn from_row(r: &Row) -> Result<Task, SqlError> {
        let skills: Option<String> = r.get("skills")?;
        Ok(Task {
            id: r.get("id")?,
            title: r.get("title")?,
            body: r.get("body")?,
            assignee: r.get("assignee")?,
            status: r.get("status")?,
            priority: r.get::<Option<i64>>("priority")?.unwrap_or(0),
            created_by: r.get("created_by")?,
            created_at: r.get("created_at")?,
            started_at: r.get("started_at")?,
            completed_at: r.get("completed_at")?,
            workspace_kind: r.get("workspace_kind")?,
            workspace_path: r.get("workspace_path")?,
            branch_name: r.get("branch_name")?,
            tenant: r.get("tenant")?,
            result: r.get("result")?,
            idempotency_key: r.get("idempotency_key")?,
            claim_lock: r.get("claim_lock")?,
            claim_expires: r.get("claim_expires")?,
            consecutive_failures: r.get::<Option<i64>>("consecutive_failures")?.unwrap_or(0),
            worker_pid: r.get("worker_pid")?,
            last_failure_error: r.get("last_failure_error")?,
            max_runtime_seconds: r.get("max_runtime_seconds")?,
            last_heartbeat_at: r.get("last_heartbeat_at")?,
            current_run_id: r.get("current_run_id")?,
            skills: skills
                .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
                .unwrap_or_default(),
            model_override: r.get("model_override")?,
            max_retries: r.get("max_retries")?,
            session_id: r.get("session_id")?,
            block_kind: r.get("block_kind")?,
            block_recurrences: r.get::<Option<i64>>("block_recurrences")?.unwrap_or(0),
        })
    }
}

/// One attempt at a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub id: i64,
    pub task_id: String,
    pub profile: Option<String>,
    pub status: String,
    pub worker_pid: Option<i64>,
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub outcome: Option<String>,
    pub summary: Option<String>,
    pub metadata: Option<Value>,
    pub error: Option<String>,
}

impl Run {
    pub(crate) fn from_row(r: &Row) -> Result<Run, SqlError> {
        let metadata: Option<String> = r.get("metadata")?;
        Ok(Run {
            id: r.get("id")?,
            task_id: r.get("task_id")?,
            profile: r.get("profile")?,
            status: r.get("status")?,
            worker_pid: r.get("worker_pid")?,
            started_at: r.get("started_at")?,
            ended_at: r.get("ended_at")?,
            outcome: r.get("outcome")?,
            summary: r.get("summary")?,
            metadata: metadata.and_then(|m| serde_json::from_str(&m).ok()),
            error: r.get("error")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comment {
    pub id: i64,
    pub task_id: String,
    pub author: String,
    pub body: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub id: i64,
    pub task_id: String,
    pub run_id: Option<i64>,
    pub kind: String,
    pub payload: Option<Value>,
    pub created_at: i64,
}

impl Event {
    pub(crate) fn from_row(r: &Row) -> Result<Event, SqlError> {
        let payload: Option<String> = r.get("payload")?;
        Ok(Event {
            id: r.get("id")?,
            task_id: r.get("task_id")?,
            run_id: r.get("run_id")?,
            kind: r.get("kind")?,
            payload: payload.and_then(|p| serde_json::from_str(&p).ok()),
            created_at: r.get("created_at")?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attachment {
    pub id: i64,
    pub task_id: String,
    pub filename: String,
    pub stored_path: String,
    pub content_type: Option<String>,
    pub size: i64,
    pub uploaded_by: Option<String>,
    pub created_at: i64,
}

/// A chat that wants to hear when a task completes or blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotifySub {
    pub task_id: String,
    pub platform: String,
    pub chat_id: String,
    pub thread_id: String,
    pub user_id: Option<String>,
    pub last_event_id: i64,
}
