//! The Python Hermes's kanban schema, verbatim, so a board either program made is the other's
//! board. Older Python boards lack columns added since; they are added in place (as Python's
//! `_migrate_add_optional_columns` does) and nothing is ever dropped.
//!
//! On PostgreSQL the same tables are made from the same text, translated: integers are
//! `BIGINT`, `AUTOINCREMENT` keys are identity columns, and `tasks` gains `seq` (a serial
//! standing in for SQLite's `rowid`, the insertion order `list` breaks ties with).

use hermes_sql::{Db, Dialect};

use crate::error::Result;

pub const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id                   TEXT PRIMARY KEY,
    title                TEXT NOT NULL,
    body                 TEXT,
    assignee             TEXT,
    status               TEXT NOT NULL,
    priority             INTEGER DEFAULT 0,
    created_by           TEXT,
    created_at           INTEGER NOT NULL,
    started_at           INTEGER,
    completed_at         INTEGER,
    workspace_kind       TEXT NOT NULL DEFAULT 'scratch',
    workspace_path       TEXT,
    branch_name          TEXT,
    project_id           TEXT,
    claim_lock           TEXT,
    claim_expires        INTEGER,
    tenant               TEXT,
    result               TEXT,
    idempotency_key      TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    worker_pid           INTEGER,
    last_failure_error   TEXT,
    max_runtime_seconds  INTEGER,
    last_heartbeat_at    INTEGER,
    current_run_id       INTEGER,
    workflow_template_id TEXT,
    current_step_key     TEXT,
    skills               TEXT,
    model_override       TEXT,
    max_retries          INTEGER,
    goal_mode            INTEGER NOT NULL DEFAULT 0,
    goal_max_turns       INTEGER,
    session_id           TEXT,
    block_kind           TEXT,
    block_recurrences    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS task_links (
    parent_id  TEXT NOT NULL,
    child_id   TEXT NOT NULL,
    PRIMARY KEY (parent_id, child_id)
);

CREATE TABLE IF NOT EXISTS task_comments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS task_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id    TEXT NOT NULL,
    run_id     INTEGER,
    kind       TEXT NOT NULL,
    payload    TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS task_runs (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id             TEXT NOT NULL,
    profile             TEXT,
    step_key            TEXT,
    status              TEXT NOT NULL,
    claim_lock          TEXT,
    claim_expires       INTEGER,
    worker_pid          INTEGER,
    max_runtime_seconds INTEGER,
    last_heartbeat_at   INTEGER,
    started_at          INTEGER NOT NULL,
    ended_at            INTEGER,
    outcome             TEXT,
    summary             TEXT,
    metadata            TEXT,
    error               TEXT
);

CREATE TABLE IF NOT EXISTS task_attachments (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id      TEXT NOT NULL,
    filename     TEXT NOT NULL,
    stored_path  TEXT NOT NULL,
    content_type TEXT,
    size         INTEGER NOT NULL DEFAULT 0,
    uploaded_by  TEXT,
    created_at   INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS kanban_notify_subs (
    task_id       TEXT NOT NULL,
    platform      TEXT NOT NULL,
    chat_id       TEXT NOT NULL,
    thread_id     TEXT NOT NULL DEFAULT '',
    user_id       TEXT,
    notifier_profile TEXT,
    created_at    INTEGER NOT NULL,
    last_event_id INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, platform, chat_id, thread_id)
);

CREATE INDEX IF NOT EXISTS idx_tasks_assignee_status ON tasks(assignee, status);
CREATE INDEX IF NOT EXISTS idx_tasks_status          ON tasks(status);
CREATE INDEX IF NOT EXISTS idx_links_child           ON task_links(child_id);
CREATE INDEX IF NOT EXISTS idx_links_parent          ON task_links(parent_id);
CREATE INDEX IF NOT EXISTS idx_comments_task         ON task_comments(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_events_task           ON task_events(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_runs_task             ON task_runs(task_id, started_at);
CREATE INDEX IF NOT EXISTS idx_runs_status           ON task_runs(status);
CREATE INDEX IF NOT EXISTS idx_attachments_task      ON task_attachments(task_id, created_at);
CREATE INDEX IF NOT EXISTS idx_notify_task           ON kanban_notify_subs(task_id);
";

/// Columns later Python versions added, with the declaration `ALTER TABLE` needs.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("tasks", "branch_name", "TEXT"),
    ("tasks", "project_id", "TEXT"),
    ("tasks", "tenant", "TEXT"),
    ("tasks", "result", "TEXT"),
    ("tasks", "idempotency_key", "TEXT"),
    (
        "tasks",
        "consecutive_failures",
        "INTEGER NOT NULL DEFAULT 0",
    ),
    ("tasks", "worker_pid", "INTEGER"),
    ("tasks", "last_failure_error", "TEXT"),
    ("tasks", "max_runtime_seconds", "INTEGER"),
    ("tasks", "last_heartbeat_at", "INTEGER"),
    ("tasks", "current_run_id", "INTEGER"),
    ("tasks", "workflow_template_id", "TEXT"),
    ("tasks", "current_step_key", "TEXT"),
    ("tasks", "skills", "TEXT"),
    ("tasks", "model_override", "TEXT"),
    ("tasks", "max_retries", "INTEGER"),
    ("tasks", "goal_mode", "INTEGER NOT NULL DEFAULT 0"),
    ("tasks", "goal_max_turns", "INTEGER"),
    ("tasks", "session_id", "TEXT"),
    ("tasks", "block_kind", "TEXT"),
    ("tasks", "block_recurrences", "INTEGER NOT NULL DEFAULT 0"),
    ("task_events", "run_id", "INTEGER"),
    ("kanban_notify_subs", "user_id", "TEXT"),
    ("kanban_notify_subs", "notifier_profile", "TEXT"),
    (
        "kanban_notify_subs",
        "last_event_id",
        "INTEGER NOT NULL DEFAULT 0",
    ),
];

const LATER_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS idx_tasks_tenant ON tasks(tenant);
CREATE INDEX IF NOT EXISTS idx_tasks_idempotency ON tasks(idempotency_key);
CREATE INDEX IF NOT EXISTS idx_tasks_session_id ON tasks(session_id);
CREATE INDEX IF NOT EXISTS idx_events_run ON task_events(run_id, id);";

/// The tables every board has, in the order `store migrate` copies them.
pub const TABLES: &[&str] = &[
    "tasks",
    "task_links",
    "task_comments",
    "task_events",
    "task_runs",
    "task_attachments",
    "kanban_notify_subs",
];

/// Tables whose `id` is generated (their counters follow copied rows).
pub const ID_TABLES: &[&str] = &[
    "task_comments",
    "task_events",
    "task_runs",
    "task_attachments",
];

/// Creates the tables if missing and adds the columns an older board lacks.
pub fn apply(db: &Db) -> Result<()> {
    match db.dialect() {
        Dialect::Sqlite => {
            db.batch(SCHEMA_SQL)?;
            for (table, column, decl) in ADDED_COLUMNS {
                if !db.columns(table)?.iter().any(|c| c == column) {
                    db.batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
                }
            }
            db.batch(LATER_INDEXES)?;
        }
        Dialect::Postgres => {
            if postgres_current(db)? {
                return Ok(());
            }
            // Under the board's write lock: two processes creating the tables at once would
            // otherwise collide in PostgreSQL's catalogue.
            db.write(|d| -> Result<()> {
                d.batch(&postgres_ddl(SCHEMA_SQL))?;
                for (table, column, decl) in ADDED_COLUMNS {
                    d.batch(&postgres_ddl(&format!(
                        "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {decl}"
                    )))?;
                }
                d.batch(LATER_INDEXES)?;
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Whether the board's schema already has every table and column (one catalogue read, so
/// the DDL and its lock are skipped on every open but the first).
fn postgres_current(db: &Db) -> Result<bool> {
    let rows = db.query(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = current_schema()",
        &[],
    )?;
    let mut have = std::collections::HashSet::new();
    for r in &rows {
        have.insert((r.get::<String>(0)?, r.get::<String>(1)?));
    }
    let tables_ok = TABLES
        .iter()
        .all(|t| have.iter().any(|(table, _)| table == t));
    let columns_ok = ADDED_COLUMNS
        .iter()
        .all(|(t, c, _)| have.contains(&(t.to_string(), c.to_string())));
    Ok(tables_ok && columns_ok)
}

/// SQLite's DDL in PostgreSQL's types.
pub fn postgres_ddl(sql: &str) -> String {
    sql.replace(
        "INTEGER PRIMARY KEY AUTOINCREMENT",
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    )
    .replace("INTEGER", "BIGINT")
    .replace(
        "CREATE TABLE IF NOT EXISTS tasks (",
        "CREATE TABLE IF NOT EXISTS tasks (\n    seq                  BIGSERIAL,",
    )
}
