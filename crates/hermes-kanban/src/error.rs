//! What can go wrong on the board: typed, each with the message a user or a model reads.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum KanbanError {
    #[error("cannot open the kanban board {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{path} is not a kanban board (no SQLite header); move it away and run `hermes kanban init`"
    )]
    NotADatabase { path: PathBuf },
    #[error("kanban database error: {0}")]
    Sql(#[from] hermes_sql::SqlError),
    #[error("cannot open the kanban board `{board}` in PostgreSQL: {source}")]
    OpenRemote {
        board: String,
        source: hermes_sql::SqlError,
    },
    #[error(
        "copying {table} left {target_rows} rows in the target for {source_rows} in the source"
    )]
    MigrationShort {
        table: String,
        source_rows: i64,
        target_rows: i64,
    },
    #[error(transparent)]
    Config(#[from] hermes_config::ConfigError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no such task: {0}")]
    UnknownTask(String),
    #[error("unknown parent task(s): {}", .0.join(", "))]
    UnknownParents(Vec<String>),
    #[error("a task title is required")]
    TitleRequired,
    #[error("a comment needs a body and an author")]
    EmptyComment,
    #[error("linking {parent} -> {child} would make a dependency cycle")]
    Cycle { parent: String, child: String },
    #[error("a task cannot depend on itself ({0})")]
    SelfLink(String),
    #[error(
        "invalid board name `{0}`: 1-64 characters, lowercase letters, digits, `-` or `_`, not starting with `-` or `_`"
    )]
    InvalidBoard(String),
    #[error("board `{0}` does not exist; create it with `hermes kanban boards create {0}`")]
    UnknownBoard(String),
    #[error("invalid profile name `{0}`")]
    InvalidProfile(String),
    #[error("`{value}` is not a valid {what} (one of: {allowed})")]
    InvalidValue {
        what: &'static str,
        value: String,
        allowed: &'static str,
    },
    #[error("task {task} is {status}; {action} needs a task that is {needs}")]
    WrongState {
        task: String,
        status: String,
        action: &'static str,
        needs: &'static str,
    },
    #[error("attachment of {size} bytes is over the {max}-byte limit")]
    AttachmentTooLarge { size: u64, max: u64 },
    #[error(
        "this worker is scoped to task {own}; refusing to change {other}. Use kanban_comment to hand information to other tasks, or kanban_create for follow-up work"
    )]
    NotOwnTask { own: String, other: String },
    #[error("the worker could not be started: {0}")]
    Spawn(String),
}

impl From<rusqlite::Error> for KanbanError {
    fn from(e: rusqlite::Error) -> KanbanError {
        KanbanError::Sql(e.into())
    }
}

pub type Result<T, E = KanbanError> = std::result::Result<T, E>;

impl KanbanError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> KanbanError {
        KanbanError::Io {
            path: path.into(),
            source,
        }
    }
}
