//! One board's database: opening it (Python's pragmas, the header check that refuses a file
//! that is not SQLite rather than overwriting it), write transactions (`BEGIN IMMEDIATE` with a
//! busy timeout, so concurrent dispatchers and workers serialise in SQLite, not in us), and the
//! plain records: tasks, links, comments, events, runs, attachments. The life-cycle
//! transitions (claim, complete, block, ...) are in [`crate::lifecycle`].

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use hermes_config::StoreTarget;
use hermes_sql::{Db, params};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::error::{KanbanError, Result};
use crate::model::{Attachment, Comment, Event, Run, Status, Task, Workspace};
use crate::paths::BoardPaths;
use crate::time::now;

/// Attachments above this are refused (Python's 25 MiB).
pub const ATTACHMENT_MAX_BYTES: u64 = 25 * 1024 * 1024;
/// How long a writer waits for another's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// An open board.
pub struct Board {
    pub(crate) db: Db,
    paths: BoardPaths,
}

/// What `create` needs; everything but the title is optional.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub title: String,
    pub body: Option<String>,
    pub assignee: Option<String>,
    pub created_by: Option<String>,
    pub workspace: Workspace,
    pub branch_name: Option<String>,
    pub tenant: Option<String>,
    pub priority: i64,
    pub parents: Vec<String>,
    /// Park it in `triage` for a person to specify.
    pub triage: bool,
    pub idempotency_key: Option<String>,
    pub max_runtime_seconds: Option<i64>,
    pub skills: Vec<String>,
    pub max_retries: Option<i64>,
    pub session_id: Option<String>,
}

impl NewTask {
    pub fn titled(title: impl Into<String>) -> NewTask {
        NewTask {
            title: title.into(),
            body: None,
            assignee: None,
            created_by: None,
            workspace: Workspace::Scratch,
            branch_name: None,
            tenant: None,
            priority: 0,
            parents: Vec::new(),
            triage: false,
            idempotency_key: None,
            max_runtime_seconds: None,
            skills: Vec::new(),
            max_retries: None,
            session_id: None,
        }
    }
}

/// Which tasks `list` returns.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub assignee: Option<String>,
    pub status: Option<Status>,
    pub tenant: Option<String>,
    pub include_archived: bool,
    pub limit: Option<usize>,
}

impl Board {
    /// Opens (creating if needed) the board's database: its SQLite file, or its schema on
    /// the PostgreSQL server `store.backend: postgres` names.
    pub fn open(paths: BoardPaths) -> Result<Board> {
        if let StoreTarget::Postgres(url) = &paths.backend {
            let open_err = |source| KanbanError::OpenRemote {
                board: paths.slug.clone(),
                source,
            };
            let db = Db::postgres(url.expose(), &paths.pg_schema()).map_err(open_err)?;
            crate::schema::apply(&db)?;
            return Ok(Board { db, paths });
        }
        if let Some(dir) = paths.db.parent() {
            std::fs::create_dir_all(dir).map_err(|e| KanbanError::io(dir, e))?;
        }
        check_header(&paths.db)?;
        let open_err = |source| KanbanError::Open {
            path: paths.db.clone(),
            source,
        };
        let conn = Connection::open(&paths.db).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
        )
        .map_err(open_err)?;
        let db = Db::sqlite(conn);
        crate::schema::apply(&db)?;
        Ok(Board { db, paths })
    }

    pub fn paths(&self) -> &BoardPaths {
        &self.paths
    }

    /// The connection (for `store migrate`, which copies the tables as they are).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Runs `f` in a write transaction (`BEGIN IMMEDIATE`; on PostgreSQL the board's advisory
    /// lock), committed when it succeeds.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Db) -> Result<T>) -> Result<T> {
        self.db.write(f)
    }

    /// Runs several reads as one consistent view of the board, inside a (briefly held) write
    /// transaction: otherwise a task row read before a worker's completion could be shown
    /// with the events written after it.
    pub fn consistent<T>(&self, f: impl FnOnce(&Board) -> Result<T>) -> Result<T> {
        self.db.write(|_| f(self))
    }

    /// Creates a task; `ready` without parents (or with all done), `todo` otherwise, `triage`
    /// when asked. A repeated `idempotency_key` returns the existing task's id.
    pub fn create(&self, new: &NewTask) -> Result<String> {
        let title = new.title.trim();
        if title.is_empty() {
            return Err(KanbanError::TitleRequired);
        }
        let assignee = new.assignee.as_deref().map(canonical_profile).transpose()?;
        if let Some(key) = new.idempotency_key.as_deref().filter(|k| !k.is_empty()) {
            let existing: Option<String> = self.db.query_value(
                "SELECT id FROM tasks WHERE idempotency_key = ? AND status != 'archived' \
                 ORDER BY created_at DESC LIMIT 1",
                &params![key],
            )?;
            if let Some(id) = existing {
                return Ok(id);
            }
        }
        let parents: Vec<String> = new
            .parents
            .iter()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        let skills: Vec<String> = dedup(new.skills.iter().map(|s| s.trim().to_string()));
        let now = now();
        self.write(|c| {
            let missing = missing_tasks(c, &parents)?;
            if !missing.is_empty() {
                return Err(KanbanError::UnknownParents(missing));
            }
            let status = if new.triage {
                Status::Triage
            } else if parents_all_done(c, &parents)? {
                Status::Ready
            } else {
                Status::Todo
            };
            let id = loop {
                let candidate = new_task_id();
                let taken = c
                    .query_row("SELECT 1 FROM tasks WHERE id = ?", &params![candidate])?
                    .is_some();
                if !taken {
                    break candidate;
                }
            };
            c.execute(
                "INSERT INTO tasks (id, title, body, assignee, status, priority, created_by, \
                 created_at, workspace_kind, workspace_path, branch_name, tenant, \
                 idempotency_key, max_runtime_seconds, skills, max_retries, goal_mode, session_id) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 0, ?17)",
                &params![
                    id,
                    title,
                    new.body,
                    assignee,
                    status.as_str(),
                    new.priority,
                    new.created_by,
                    now,
                    new.workspace.kind(),
                    new.workspace.path(),
                    new.branch_name,
                    new.tenant,
                    new.idempotency_key,
                    new.max_runtime_seconds,
                    (!skills.is_empty()).then(|| json!(skills).to_string()),
                    new.max_retries,
                    new.session_id,
                ],
            )?;
            for p in &parents {
                c.execute(
                    "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
                    &params![p, id],
                )?;
            }
            append_event(
                c,
                &id,
                "created",
                Some(json!({
                    "assignee": assignee,
                    "status": status.as_str(),
                    "parents": parents,
                    "tenant": new.tenant,
                    "branch_name": new.branch_name,
                    "skills": (!skills.is_empty()).then_some(&skills),
                    "goal_mode": Value::Null,
                })),
                None,
            )?;
            Ok(id)
        })
    }

    /// The task, or `UnknownTask`.
    pub fn get(&self, id: &str) -> Result<Task> {
        self.find(id)?
            .ok_or_else(|| KanbanError::UnknownTask(id.to_string()))
    }

    pub fn find(&self, id: &str) -> Result<Option<Task>> {
        Ok(self
            .db
            .query_row("SELECT * FROM tasks WHERE id = ?", &params![id])?
            .map(|r| Task::from_row(&r))
            .transpose()?)
    }

    /// Tasks by priority, then age (Python's order); archived ones only when asked.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Task>> {
        let mut sql = String::from("SELECT * FROM tasks WHERE 1=1");
        let mut args: Vec<String> = Vec::new();
        if let Some(a) = &filter.assignee {
            sql.push_str(" AND assignee = ?");
            args.push(canonical_profile(a)?);
        }
        if let Some(s) = filter.status {
            sql.push_str(" AND status = ?");
            args.push(s.as_str().to_string());
        }
        if let Some(t) = &filter.tenant {
            sql.push_str(" AND tenant = ?");
            args.push(t.clone());
        }
        if !filter.include_archived && filter.status != Some(Status::Archived) {
            sql.push_str(" AND status != 'archived'");
        }
        sql.push_str(" ORDER BY priority DESC, created_at ASC, rowid ASC");
        if let Some(n) = filter.limit {
            sql.push_str(&format!(" LIMIT {n}"));
        }
        let args: Vec<hermes_sql::Value> = args.iter().map(hermes_sql::ToValue::to_value).collect();
        rows_to(self.db.query(&sql, &args)?, Task::from_row)
    }

    /// Assigns (or with `None` unassigns) a task; a running task is not reassigned.
    pub fn assign(&self, id: &str, profile: Option<&str>) -> Result<()> {
        let profile = profile.map(canonical_profile).transpose()?;
        self.write(|c| {
            let row = c
                .query_row(
                    "SELECT status, claim_lock, assignee FROM tasks WHERE id = ?",
                    &params![id],
                )?
                .ok_or_else(|| KanbanError::UnknownTask(id.to_string()))?;
            let (status, lock, current): (String, Option<String>, Option<String>) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            if lock.is_some() && status == "running" {
                return Err(KanbanError::WrongState {
                    task: id.to_string(),
                    status,
                    action: "reassigning",
                    needs: "not running (wait for the run to end)",
                });
            }
            if current != profile {
                c.execute(
                    "UPDATE tasks SET assignee = ?, consecutive_failures = 0, \
                     last_failure_error = NULL WHERE id = ?",
                    &params![profile, id],
                )?;
            }
            append_event(c, id, "assigned", Some(json!({"assignee": profile})), None)
        })
    }

    /// `parent` must finish before `child` runs; refused when it would make a cycle.
    pub fn link(&self, parent: &str, child: &str) -> Result<()> {
        if parent == child {
            return Err(KanbanError::SelfLink(parent.to_string()));
        }
        self.write(|c| {
            let missing = missing_tasks(c, &[parent.to_string(), child.to_string()])?;
            if !missing.is_empty() {
                return Err(KanbanError::UnknownParents(missing));
            }
            if would_cycle(c, parent, child)? {
                return Err(KanbanError::Cycle {
                    parent: parent.to_string(),
                    child: child.to_string(),
                });
            }
            c.execute(
                "INSERT OR IGNORE INTO task_links (parent_id, child_id) VALUES (?, ?)",
                &params![parent, child],
            )?;
            let parent_status: String = c
                .query_value("SELECT status FROM tasks WHERE id = ?", &params![parent])?
                .ok_or_else(|| KanbanError::UnknownTask(parent.to_string()))?;
            if parent_status != "done" {
                c.execute(
                    "UPDATE tasks SET status = 'todo' WHERE id = ? AND status = 'ready'",
                    &params![child],
                )?;
            }
            append_event(
                c,
                child,
                "linked",
                Some(json!({"parent": parent, "child": child})),
                None,
            )
        })
    }

    /// Removes a dependency; the child may become ready at once.
    pub fn unlink(&self, parent: &str, child: &str) -> Result<bool> {
        let removed = self.write(|c| {
            let n = c.execute(
                "DELETE FROM task_links WHERE parent_id = ? AND child_id = ?",
                &params![parent, child],
            )?;
            if n > 0 {
                append_event(
                    c,
                    child,
                    "unlinked",
                    Some(json!({"parent": parent, "child": child})),
                    None,
                )?;
            }
            Ok(n > 0)
        })?;
        if removed {
            self.recompute_ready(None)?;
        }
        Ok(removed)
    }

    pub fn parents(&self, id: &str) -> Result<Vec<String>> {
        self.ids(
            "SELECT parent_id FROM task_links WHERE child_id = ? ORDER BY parent_id",
            id,
        )
    }

    pub fn children(&self, id: &str) -> Result<Vec<String>> {
        self.ids(
            "SELECT child_id FROM task_links WHERE parent_id = ? ORDER BY child_id",
            id,
        )
    }

    fn ids(&self, sql: &str, id: &str) -> Result<Vec<String>> {
        rows_to(self.db.query(sql, &params![id])?, |r| r.get(0))
    }

    /// Appends a comment to the task's thread.
    pub fn comment(&self, id: &str, author: &str, body: &str) -> Result<i64> {
        let (author, body) = (author.trim(), body.trim());
        if author.is_empty() || body.is_empty() {
            return Err(KanbanError::EmptyComment);
        }
        self.write(|c| {
            ensure_task(c, id)?;
            let cid = c.insert(
                "INSERT INTO task_comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)",
                &params![id, author, body, now()],
            )?;
            append_event(
                c,
                id,
                "commented",
                Some(json!({"author": author, "len": body.chars().count()})),
                None,
            )?;
            Ok(cid)
        })
    }

    pub fn comments(&self, id: &str) -> Result<Vec<Comment>> {
        let rows = self.db.query(
            "SELECT id, task_id, author, body, created_at FROM task_comments \
             WHERE task_id = ? ORDER BY created_at, id",
            &params![id],
        )?;
        rows_to(rows, |r| {
            Ok(Comment {
                id: r.get(0)?,
                task_id: r.get(1)?,
                author: r.get(2)?,
                body: r.get(3)?,
                created_at: r.get(4)?,
            })
        })
    }

    /// The task's events, oldest first, after event id `after` (0 for all).
    pub fn events(&self, id: &str, after: i64) -> Result<Vec<Event>> {
        let rows = self.db.query(
            "SELECT * FROM task_events WHERE task_id = ? AND id > ? ORDER BY id",
            &params![id, after],
        )?;
        rows_to(rows, Event::from_row)
    }

    /// Every task's events after event id `after`, oldest first, at most `limit`.
    pub fn events_since(&self, after: i64, limit: usize) -> Result<Vec<Event>> {
        let rows = self.db.query(
            "SELECT * FROM task_events WHERE id > ? ORDER BY id LIMIT ?",
            &params![after, limit as i64],
        )?;
        rows_to(rows, Event::from_row)
    }

    /// The task's attempts, oldest first.
    pub fn runs(&self, id: &str) -> Result<Vec<Run>> {
        let rows = self.db.query(
            "SELECT * FROM task_runs WHERE task_id = ? ORDER BY started_at, id",
            &params![id],
        )?;
        rows_to(rows, Run::from_row)
    }

    /// The summary of the latest run that left one.
    pub fn latest_summary(&self, id: &str) -> Result<Option<String>> {
        Ok(self.db.query_value(
            "SELECT summary FROM task_runs WHERE task_id = ? AND summary IS NOT NULL \
             AND summary != '' ORDER BY id DESC LIMIT 1",
            &params![id],
        )?)
    }

    /// Stores `bytes` as a file of the task (a safe name, never overwriting) and records it.
    pub fn attach_bytes(
        &self,
        id: &str,
        name: &str,
        bytes: &[u8],
        content_type: Option<&str>,
        uploaded_by: Option<&str>,
    ) -> Result<Attachment> {
        if bytes.len() as u64 > ATTACHMENT_MAX_BYTES {
            return Err(KanbanError::AttachmentTooLarge {
                size: bytes.len() as u64,
                max: ATTACHMENT_MAX_BYTES,
            });
        }
        ensure_task(&self.db, id)?;
        let dir = self.paths.attachments.join(id);
        std::fs::create_dir_all(&dir).map_err(|e| KanbanError::io(&dir, e))?;
        let safe = safe_file_name(name);
        let path = collision_free(&dir, &safe);
        std::fs::write(&path, bytes).map_err(|e| KanbanError::io(&path, e))?;
        let stored = path.to_string_lossy().to_string();
        let created = now();
        let aid =
            self.write(|c| {
                let aid = c.insert(
                "INSERT INTO task_attachments (task_id, filename, stored_path, content_type, size, \
                 uploaded_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                &params![id, safe, stored, content_type, bytes.len() as i64, uploaded_by, created],
            )?;
                append_event(
                    c,
                    id,
                    "attached",
                    Some(json!({"attachment_id": aid, "filename": safe, "size": bytes.len()})),
                    None,
                )?;
                Ok(aid)
            })?;
        Ok(Attachment {
            id: aid,
            task_id: id.to_string(),
            filename: safe,
            stored_path: stored,
            content_type: content_type.map(str::to_string),
            size: bytes.len() as i64,
            uploaded_by: uploaded_by.map(str::to_string),
            created_at: created,
        })
    }

    /// Attaches a local file (read with the size cap, never past it).
    pub fn attach_file(
        &self,
        id: &str,
        path: &Path,
        name: Option<&str>,
        content_type: Option<&str>,
        uploaded_by: Option<&str>,
    ) -> Result<Attachment> {
        let file = std::fs::File::open(path).map_err(|e| KanbanError::io(path, e))?;
        let mut bytes = Vec::new();
        file.take(ATTACHMENT_MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| KanbanError::io(path, e))?;
        let name = name
            .map(str::to_string)
            .or_else(|| path.file_name().map(|n| n.to_string_lossy().to_string()))
            .unwrap_or_else(|| "attachment".into());
        self.attach_bytes(id, &name, &bytes, content_type, uploaded_by)
    }

    pub fn attachments(&self, id: &str) -> Result<Vec<Attachment>> {
        let rows = self.db.query(
            "SELECT * FROM task_attachments WHERE task_id = ? ORDER BY created_at, id",
            &params![id],
        )?;
        rows_to(rows, |r| {
            Ok(Attachment {
                id: r.get("id")?,
                task_id: r.get("task_id")?,
                filename: r.get("filename")?,
                stored_path: r.get("stored_path")?,
                content_type: r.get("content_type")?,
                size: r.get("size")?,
                uploaded_by: r.get("uploaded_by")?,
                created_at: r.get("created_at")?,
            })
        })
    }

    /// Counts of tasks per status (archived left out).
    pub fn stats(&self) -> Result<Vec<(String, i64)>> {
        let rows = self.db.query(
            "SELECT status, COUNT(*) FROM tasks WHERE status != 'archived' GROUP BY status",
            &[],
        )?;
        rows_to(rows, |r| Ok((r.get(0)?, r.get(1)?)))
    }
}

/// Refuses to open a non-empty file that is not SQLite (it would be turned into a board).
fn check_header(path: &Path) -> Result<()> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut head = [0u8; 16];
    let n = f.read(&mut head).map_err(|e| KanbanError::io(path, e))?;
    if n == 0 || head.starts_with(b"SQLite format 3\0") {
        Ok(())
    } else {
        Err(KanbanError::NotADatabase {
            path: path.to_path_buf(),
        })
    }
}

/// Records an event inside an open transaction.
pub(crate) fn append_event(
    c: &Db,
    task_id: &str,
    kind: &str,
    payload: Option<Value>,
    run_id: Option<i64>,
) -> Result<()> {
    let payload = payload.filter(|p| !p.is_null()).map(|p| p.to_string());
    c.execute(
        "INSERT INTO task_events (task_id, run_id, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)",
        &params![task_id, run_id, kind, payload, now()],
    )?;
    Ok(())
}

pub(crate) fn ensure_task(c: &Db, id: &str) -> Result<()> {
    let found = c.query_row("SELECT 1 FROM tasks WHERE id = ?", &params![id])?;
    found
        .map(|_| ())
        .ok_or_else(|| KanbanError::UnknownTask(id.to_string()))
}

fn missing_tasks(c: &Db, ids: &[String]) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for id in ids {
        if ensure_task(c, id).is_err() {
            missing.push(id.clone());
        }
    }
    Ok(missing)
}

fn parents_all_done(c: &Db, parents: &[String]) -> Result<bool> {
    for p in parents {
        let status: Option<String> =
            c.query_value("SELECT status FROM tasks WHERE id = ?", &params![p])?;
        if status.as_deref() != Some("done") {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `parent` is already below `child` (walking down from `child`).
fn would_cycle(c: &Db, parent: &str, child: &str) -> Result<bool> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![child.to_string()];
    while let Some(node) = stack.pop() {
        if node == parent {
            return Ok(true);
        }
        if !seen.insert(node.clone()) {
            continue;
        }
        let kids = c.query(
            "SELECT child_id FROM task_links WHERE parent_id = ?",
            &params![node],
        )?;
        for k in kids {
            stack.push(k.get(0)?);
        }
    }
    Ok(false)
}

/// Every row read as `T`.
pub(crate) fn rows_to<T>(
    rows: Vec<hermes_sql::Row>,
    f: impl Fn(&hermes_sql::Row) -> std::result::Result<T, hermes_sql::SqlError>,
) -> Result<Vec<T>> {
    Ok(rows.iter().map(f).collect::<std::result::Result<_, _>>()?)
}

/// `t_` and 8 hex digits, as Python.
fn new_task_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("t_{}", &hex[..8])
}

/// Profile names are lowercase, `[a-z0-9_-]`, like the homes under `profiles/`.
pub fn canonical_profile(raw: &str) -> Result<String> {
    let p = raw.trim().to_lowercase();
    let ok = !p.is_empty()
        && p.len() <= 64
        && p.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(p)
    } else {
        Err(KanbanError::InvalidProfile(raw.to_string()))
    }
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items.filter(|s| !s.is_empty()) {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// A file name with no directory parts or control characters, at most 200 bytes.
fn safe_file_name(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control())
        .collect::<String>()
        .trim()
        .trim_start_matches('.')
        .to_string();
    let mut name = if cleaned.is_empty() {
        "attachment".to_string()
    } else {
        cleaned
    };
    while name.len() > 200 {
        name.pop();
    }
    name
}

fn collision_free(dir: &Path, name: &str) -> std::path::PathBuf {
    let first = dir.join(name);
    if !first.exists() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.to_string(), String::new()),
    };
    (1..)
        .map(|n| dir.join(format!("{stem}-{n}{ext}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_made_safe() {
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("a\u{0}b.txt"), "ab.txt");
        assert_eq!(safe_file_name(".."), "attachment");
        assert_eq!(safe_file_name("..hidden"), "hidden");
    }

    #[test]
    fn profiles_are_canonical() {
        assert_eq!(canonical_profile(" Writer ").unwrap(), "writer");
        assert!(canonical_profile("../x").is_err());
    }
}
