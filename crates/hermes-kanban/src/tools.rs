//! The `kanban_*` tools (toolset `kanban`). A worker the dispatcher started
//! (`HERMES_KANBAN_TASK` set) gets the task tools scoped to its own task: it may read any
//! card, comment anywhere and create follow-up cards, but only completes, blocks, heartbeats
//! and attaches to its own, within its own run (a prompt-injected worker cannot close a
//! sibling's task). A profile with `kanban` in its toolsets is an orchestrator: it also lists
//! the board and unblocks, and is not scoped.

use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use crate::board::{Board, ListFilter, NewTask};
use crate::error::KanbanError;
use crate::lifecycle::{BlockOutcome, Completion};
use crate::model::{BlockKind, Status, Task, Workspace};
use crate::paths::{BoardPaths, ProcessEnv};

/// A worker's own task, from the variables the dispatcher set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerScope {
    pub task: String,
    pub run_id: Option<i64>,
    pub claim_lock: Option<String>,
}

impl WorkerScope {
    /// `HERMES_KANBAN_TASK` (+ `_RUN_ID`, `_CLAIM_LOCK`), when this process is a worker.
    pub fn from_env() -> Option<WorkerScope> {
        let var = |n: &str| {
            std::env::var(n)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Some(WorkerScope {
            task: var("HERMES_KANBAN_TASK")?,
            run_id: var("HERMES_KANBAN_RUN_ID").and_then(|v| v.parse().ok()),
            claim_lock: var("HERMES_KANBAN_CLAIM_LOCK"),
        })
    }
}

/// Who is using the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Worker(WorkerScope),
    Orchestrator,
}

struct Shared {
    /// The root the boards hang from (the default home).
    root: PathBuf,
    /// The home's SSRF-safe fetcher, for `kanban_attach_url`.
    fetcher: hermes_web::net::Fetcher,
    scope: Scope,
    /// The profile name written as author and creator.
    author: String,
    auto_subscribe: bool,
}

impl Shared {
    fn board(&self) -> Result<Board, ToolError> {
        BoardPaths::resolve(&self.root, None, &ProcessEnv)
            .and_then(Board::open)
            .map_err(err)
    }

    /// The task a call is about: its `task_id`, else the worker's own.
    fn task_arg(&self, args: &Value) -> Result<String, ToolError> {
        match (str_arg(args, "task_id"), &self.scope) {
            (Some(id), _) => Ok(id),
            (None, Scope::Worker(w)) => Ok(w.task.clone()),
            (None, Scope::Orchestrator) => Err(ToolError::new("task_id is required")),
        }
    }

    /// Refuses a worker changing the life of a task that is not its own; its run id when it is.
    fn own(&self, task: &str) -> Result<Option<i64>, ToolError> {
        match &self.scope {
            Scope::Worker(w) if w.task != task => Err(err(KanbanError::NotOwnTask {
                own: w.task.clone(),
                other: task.to_string(),
            })),
            Scope::Worker(w) => Ok(w.run_id),
            Scope::Orchestrator => Ok(None),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Show,
    List,
    Complete,
    Block,
    Heartbeat,
    Comment,
    Create,
    Link,
    Unblock,
    Attach,
    AttachUrl,
    Attachments,
}

const WORKER_KINDS: &[Kind] = &[
    Kind::Show,
    Kind::Complete,
    Kind::Block,
    Kind::Heartbeat,
    Kind::Comment,
    Kind::Create,
    Kind::Link,
    Kind::Attach,
    Kind::AttachUrl,
    Kind::Attachments,
];
const ORCHESTRATOR_ONLY: &[Kind] = &[Kind::List, Kind::Unblock];

/// One `kanban_*` tool.
pub struct KanbanTool {
    kind: Kind,
    shared: Arc<Shared>,
}

/// The kanban tools for `scope`, over the boards under `root`; `author` is the profile
/// writing (comments, created cards); `fetcher` downloads `kanban_attach_url`'s files under
/// the home's URL policy.
pub fn kanban_tools(
    root: PathBuf,
    fetcher: hermes_web::net::Fetcher,
    scope: Scope,
    author: String,
    auto_subscribe: bool,
) -> Vec<Arc<dyn Tool>> {
    let kinds: Vec<Kind> = match scope {
        Scope::Worker(_) => WORKER_KINDS.to_vec(),
        Scope::Orchestrator => WORKER_KINDS
            .iter()
            .chain(ORCHESTRATOR_ONLY)
            .copied()
            .collect(),
    };
    let shared = Arc::new(Shared {
        root,
        fetcher,
        scope,
        author,
        auto_subscribe,
    });
    kinds
        .into_iter()
        .map(|kind| {
            Arc::new(KanbanTool {
                kind,
                shared: shared.clone(),
            }) as Arc<dyn Tool>
        })
        .collect()
}

fn err(e: KanbanError) -> ToolError {
    ToolError::new(e.to_string())
}

fn str_arg(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn str_list(args: &Value, key: &str) -> Vec<String> {
    match args.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(s)) => s.split(',').map(|p| p.trim().to_string()).collect(),
        _ => Vec::new(),
    }
}

const TASK_ID: &str = "Task id; omitted: your own task (the one the dispatcher gave you).";

fn summary(t: &Task) -> Value {
    json!({
        "id": t.id,
        "title": t.title,
        "status": t.status,
        "assignee": t.assignee,
        "priority": t.priority,
        "tenant": t.tenant,
    })
}

impl KanbanTool {
    fn show(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        let task = board.get(&id).map_err(err)?;
        Ok(json!({
            "task": {
                "id": task.id,
                "title": task.title,
                "status": task.status,
                "assignee": task.assignee,
                "workspace": task.workspace_path,
                "created_by": task.created_by,
            },
            "parents": board.parents(&id).map_err(err)?,
            "children": board.children(&id).map_err(err)?,
            "worker_context": crate::context::worker_context(&board, &id).map_err(err)?,
        }))
    }

    fn list(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        board.recompute_ready(None).map_err(err)?;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(50, |n| n.clamp(1, 200) as usize);
        let filter = ListFilter {
            assignee: str_arg(args, "assignee"),
            status: str_arg(args, "status")
                .map(|s| Status::parse(&s))
                .transpose()
                .map_err(err)?,
            tenant: str_arg(args, "tenant"),
            include_archived: args
                .get("include_archived")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            limit: Some(limit + 1),
        };
        let mut tasks = board.list(&filter).map_err(err)?;
        let truncated = tasks.len() > limit;
        tasks.truncate(limit);
        let mut rows = Vec::with_capacity(tasks.len());
        for t in &tasks {
            let mut row = summary(t);
            row["parents"] = json!(board.parents(&t.id).map_err(err)?);
            row["children"] = json!(board.children(&t.id).map_err(err)?);
            rows.push(row);
        }
        Ok(json!({"tasks": rows, "count": rows.len(), "truncated": truncated}))
    }

    fn complete(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        let run = self.shared.own(&id)?;
        let summary_text = str_arg(args, "summary");
        let result = str_arg(args, "result");
        if summary_text.is_none() && result.is_none() {
            return Err(ToolError::new(
                "give a summary (or result) of what was done",
            ));
        }
        let cards = str_list(args, "created_cards");
        let mut phantom = Vec::new();
        for card in &cards {
            let ok = board
                .find(card)
                .map_err(err)?
                .is_some_and(|t| t.created_by.as_deref() == Some(self.shared.author.as_str()));
            if !ok {
                phantom.push(card.clone());
            }
        }
        if !phantom.is_empty() {
            return Err(ToolError::new(format!(
                "created_cards lists task(s) you did not create: {}; list only ids kanban_create returned",
                phantom.join(", ")
            )));
        }
        let mut metadata = args.get("metadata").filter(|m| m.is_object()).cloned();
        if !cards.is_empty() {
            metadata.get_or_insert_with(|| json!({}))["created_cards"] = json!(cards);
        }
        let done = board
            .complete(
                &id,
                &Completion {
                    result: result.as_deref(),
                    summary: summary_text.as_deref(),
                    metadata,
                    expected_run: run,
                },
            )
            .map_err(err)?;
        if !done {
            let task = board.get(&id).map_err(err)?;
            return Err(ToolError::new(format!(
                "task {id} is {} and cannot be completed by this run",
                task.status
            )));
        }
        Ok(json!({"ok": true, "task_id": id, "status": "done"}))
    }

    fn block(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        let run = self.shared.own(&id)?;
        let reason = str_arg(args, "reason").ok_or_else(|| ToolError::new("reason is required"))?;
        let kind = str_arg(args, "kind")
            .map(|k| BlockKind::parse(&k))
            .transpose()
            .map_err(err)?;
        let outcome = board
            .block(&id, Some(&reason), kind, run)
            .map_err(err)?
            .ok_or_else(|| {
                ToolError::new(format!(
                    "task {id} is not running or ready; nothing to block"
                ))
            })?;
        let status = match outcome {
            BlockOutcome::Blocked => "blocked",
            BlockOutcome::Todo => "todo",
            BlockOutcome::Triage => "triage",
        };
        Ok(json!({"ok": true, "task_id": id, "status": status}))
    }

    fn heartbeat(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        self.shared.own(&id)?;
        let claimer = match &self.shared.scope {
            Scope::Worker(w) => w.claim_lock.clone(),
            Scope::Orchestrator => board.get(&id).map_err(err)?.claim_lock,
        }
        .ok_or_else(|| ToolError::new(format!("task {id} has no claim to extend")))?;
        let alive = board
            .heartbeat(&id, &claimer, str_arg(args, "note").as_deref())
            .map_err(err)?;
        if alive {
            Ok(json!({"ok": true, "task_id": id}))
        } else {
            Err(ToolError::new(format!(
                "the claim on {id} is no longer yours (reclaimed or finished); stop working on it"
            )))
        }
    }

    fn comment(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        let body = str_arg(args, "body").ok_or_else(|| ToolError::new("body is required"))?;
        let cid = board
            .comment(&id, &self.shared.author, &body)
            .map_err(err)?;
        Ok(json!({"ok": true, "task_id": id, "comment_id": cid}))
    }

    fn create(&self, args: &Value, ctx: &ToolContext) -> ToolResult {
        let board = self.shared.board()?;
        let title = str_arg(args, "title").ok_or_else(|| ToolError::new("title is required"))?;
        let assignee = str_arg(args, "assignee").ok_or_else(|| {
            ToolError::new("assignee is required: a task without one is never dispatched")
        })?;
        let workspace = match (
            str_arg(args, "workspace_kind").as_deref(),
            str_arg(args, "workspace_path"),
        ) {
            (None | Some("scratch"), _) => Workspace::Scratch,
            (Some(kind), path) => Workspace::parse(&match path {
                Some(p) => format!("{kind}:{p}"),
                None => kind.to_string(),
            })
            .map_err(err)?,
        };
        let mut new = NewTask::titled(title);
        new.body = str_arg(args, "body");
        new.assignee = Some(assignee);
        new.created_by = Some(self.shared.author.clone());
        new.workspace = workspace;
        new.tenant = str_arg(args, "tenant").or_else(|| std::env::var("HERMES_TENANT").ok());
        new.priority = args.get("priority").and_then(Value::as_i64).unwrap_or(0);
        new.parents = str_list(args, "parents");
        new.triage = args.get("triage").and_then(Value::as_bool).unwrap_or(false);
        new.idempotency_key = str_arg(args, "idempotency_key");
        new.max_runtime_seconds = args.get("max_runtime_seconds").and_then(Value::as_i64);
        new.skills = str_list(args, "skills");
        let id = board.create(&new).map_err(err)?;
        let task = board.get(&id).map_err(err)?;
        let mut subscribed = false;
        if self.shared.auto_subscribe
            && let Some(origin) = &ctx.origin
        {
            board
                .subscribe(
                    &id,
                    &origin.platform,
                    &origin.chat_id,
                    origin.thread_id.as_deref(),
                    origin.user_id.as_deref(),
                )
                .map_err(err)?;
            subscribed = true;
        }
        Ok(json!({"ok": true, "task_id": id, "status": task.status, "subscribed": subscribed}))
    }

    fn link(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let parent =
            str_arg(args, "parent_id").ok_or_else(|| ToolError::new("parent_id is required"))?;
        let child =
            str_arg(args, "child_id").ok_or_else(|| ToolError::new("child_id is required"))?;
        board.link(&parent, &child).map_err(err)?;
        Ok(json!({"ok": true, "parent_id": parent, "child_id": child}))
    }

    fn unblock(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = str_arg(args, "task_id").ok_or_else(|| ToolError::new("task_id is required"))?;
        if !board.unblock(&id).map_err(err)? {
            return Err(ToolError::new(format!(
                "task {id} is not blocked or scheduled"
            )));
        }
        let task = board.get(&id).map_err(err)?;
        Ok(json!({"ok": true, "task_id": id, "status": task.status}))
    }

    fn attach(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        self.shared.own(&id)?;
        let name =
            str_arg(args, "filename").ok_or_else(|| ToolError::new("filename is required"))?;
        let encoded = args
            .get("content_base64")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("content_base64 is required"))?;
        // Base64 is 4/3 of the bytes: refuse before decoding a huge string.
        if encoded.len() as u64 > crate::board::ATTACHMENT_MAX_BYTES / 3 * 4 + 8 {
            return Err(err(KanbanError::AttachmentTooLarge {
                size: encoded.len() as u64 / 4 * 3,
                max: crate::board::ATTACHMENT_MAX_BYTES,
            }));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| ToolError::new(format!("content_base64 is not valid base64: {e}")))?;
        let a = board
            .attach_bytes(
                &id,
                &name,
                &bytes,
                str_arg(args, "content_type").as_deref(),
                Some(&self.shared.author),
            )
            .map_err(err)?;
        Ok(json!({"ok": true, "attachment": a}))
    }

    async fn attach_url(&self, args: &Value) -> ToolResult {
        let id = self.shared.task_arg(args)?;
        self.shared.own(&id)?;
        let url = str_arg(args, "url").ok_or_else(|| ToolError::new("url is required"))?;
        let fetched = crate::attach_url::download(&self.shared.fetcher, &url)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let name =
            str_arg(args, "filename").unwrap_or_else(|| crate::attach_url::file_name(&fetched.url));
        let content_type = str_arg(args, "content_type").or(fetched.content_type.clone());
        let a = self
            .shared
            .board()?
            .attach_bytes(
                &id,
                &name,
                &fetched.body,
                content_type.as_deref(),
                Some(&self.shared.author),
            )
            .map_err(err)?;
        Ok(json!({"ok": true, "attachment": a, "source": fetched.url.as_str()}))
    }

    fn attachments(&self, args: &Value) -> ToolResult {
        let board = self.shared.board()?;
        let id = self.shared.task_arg(args)?;
        Ok(json!({"task_id": id, "attachments": board.attachments(&id).map_err(err)?}))
    }
}

#[async_trait::async_trait]
impl Tool for KanbanTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Show => "kanban_show",
            Kind::List => "kanban_list",
            Kind::Complete => "kanban_complete",
            Kind::Block => "kanban_block",
            Kind::Heartbeat => "kanban_heartbeat",
            Kind::Comment => "kanban_comment",
            Kind::Create => "kanban_create",
            Kind::Link => "kanban_link",
            Kind::Unblock => "kanban_unblock",
            Kind::Attach => "kanban_attach",
            Kind::AttachUrl => "kanban_attach_url",
            Kind::Attachments => "kanban_attachments",
        }
    }

    fn toolset(&self) -> &str {
        "kanban"
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Show => {
                "Read a task: title, body, parents' handoffs, your earlier attempts, comments, as `worker_context`. Call it first."
            }
            Kind::List => {
                "List board tasks (ids, title, status, assignee, links) to route work; 50 rows by default, 200 at most."
            }
            Kind::Complete => {
                "Mark your task done with a handoff: `summary` (1-3 sentences naming the artifacts) and `metadata` (facts: changed_files, tests_run, ...). List ids from kanban_create in `created_cards`."
            }
            Kind::Block => {
                "Stop and say why. kind: dependency (waits for another task, resumes by itself), needs_input (a person must answer), capability (no access/credentials), transient. Only for real blockers."
            }
            Kind::Heartbeat => {
                "Keep your claim alive during a long operation (call every few minutes); `note` shows progress."
            }
            Kind::Comment => {
                "Add a durable note to a task's thread (questions, findings, rationale for the next worker)."
            }
            Kind::Create => {
                "Create a task for a profile (`assignee`), optionally after `parents` (it waits until they are done). For fan-out and follow-up work; the dispatcher starts it."
            }
            Kind::Link => "Make `child_id` wait for `parent_id` (cycles refused).",
            Kind::Unblock => "Unblock a task: ready when its parents are done, else todo.",
            Kind::Attach => "Attach a file (base64 bytes, 25 MB max) to your task.",
            Kind::AttachUrl => {
                "Attach a file from a public http(s) URL (downloaded here, 25 MB max) to your task."
            }
            Kind::Attachments => "List a task's attached files with their paths.",
        }
    }

    fn parameters(&self) -> Value {
        let task_id = json!({"type": "string", "description": TASK_ID});
        match self.kind {
            Kind::Show | Kind::Attachments => json!({
                "type": "object", "properties": {"task_id": task_id}, "required": []
            }),
            Kind::List => json!({
                "type": "object",
                "properties": {
                    "assignee": {"type": "string"},
                    "status": {"type": "string", "enum": ["triage", "todo", "scheduled", "ready", "running", "blocked", "review", "done", "archived"]},
                    "tenant": {"type": "string"},
                    "include_archived": {"type": "boolean"},
                    "limit": {"type": "integer", "description": "Default 50, at most 200."}
                },
                "required": []
            }),
            Kind::Complete => json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "summary": {"type": "string", "description": "1-3 sentences for people and downstream workers."},
                    "metadata": {"type": "object", "description": "Structured facts for downstream workers."},
                    "result": {"type": "string", "description": "Short result line (older field)."},
                    "created_cards": {"type": "array", "items": {"type": "string"}, "description": "Ids kanban_create returned in this run."}
                },
                "required": []
            }),
            Kind::Block => json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "reason": {"type": "string", "description": "What you need or what stopped you, in a sentence or two."},
                    "kind": {"type": "string", "enum": ["dependency", "needs_input", "capability", "transient"]}
                },
                "required": ["reason"]
            }),
            Kind::Heartbeat => json!({
                "type": "object",
                "properties": {"task_id": task_id, "note": {"type": "string"}},
                "required": []
            }),
            Kind::Comment => json!({
                "type": "object",
                "properties": {"task_id": {"type": "string"}, "body": {"type": "string"}},
                "required": ["task_id", "body"]
            }),
            Kind::Create => json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "assignee": {"type": "string", "description": "The profile that does it."},
                    "body": {"type": "string", "description": "Spec and acceptance criteria."},
                    "parents": {"type": "array", "items": {"type": "string"}, "description": "Task ids that must be done first."},
                    "priority": {"type": "integer"},
                    "tenant": {"type": "string"},
                    "workspace_kind": {"type": "string", "enum": ["scratch", "dir", "worktree"]},
                    "workspace_path": {"type": "string", "description": "Absolute path, for dir/worktree."},
                    "triage": {"type": "boolean"},
                    "idempotency_key": {"type": "string"},
                    "max_runtime_seconds": {"type": "integer"},
                    "skills": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["title", "assignee"]
            }),
            Kind::AttachUrl => json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "url": {"type": "string"},
                    "filename": {"type": "string", "description": "Defaults to the URL's last path part."},
                    "content_type": {"type": "string"}
                },
                "required": ["url"]
            }),
            Kind::Link => json!({
                "type": "object",
                "properties": {"parent_id": {"type": "string"}, "child_id": {"type": "string"}},
                "required": ["parent_id", "child_id"]
            }),
            Kind::Unblock => json!({
                "type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]
            }),
            Kind::Attach => json!({
                "type": "object",
                "properties": {
                    "task_id": task_id,
                    "filename": {"type": "string"},
                    "content_base64": {"type": "string"},
                    "content_type": {"type": "string"}
                },
                "required": ["filename", "content_base64"]
            }),
        }
    }

    fn max_result_chars(&self) -> usize {
        // The worker context is the task itself; a bounded but generous cap.
        if self.kind == Kind::Show {
            60_000
        } else {
            hermes_tools::output::DEFAULT_MAX_RESULT_CHARS
        }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        match self.kind {
            Kind::Show => self.show(&args),
            Kind::List => self.list(&args),
            Kind::Complete => self.complete(&args),
            Kind::Block => self.block(&args),
            Kind::Heartbeat => self.heartbeat(&args),
            Kind::Comment => self.comment(&args),
            Kind::Create => self.create(&args, ctx),
            Kind::Link => self.link(&args),
            Kind::Unblock => self.unblock(&args),
            Kind::Attach => self.attach(&args),
            Kind::AttachUrl => self.attach_url(&args).await,
            Kind::Attachments => self.attachments(&args),
        }
    }
}
