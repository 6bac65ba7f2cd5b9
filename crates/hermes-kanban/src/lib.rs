//! The kanban board: tasks handed between profiles on a board stored in the Python Hermes's
//! `kanban.db` (so its boards carry over), a dispatcher that starts one worker process per
//! ready task, and the `kanban_*` tools workers and orchestrators use.
//!
//! - [`paths`]: where a board lives (`<root>/kanban.db`, named boards, the dispatcher's pins);
//! - [`schema`]: Python's tables, and the columns older boards lack (the same tables in
//!   PostgreSQL when `store.backend: postgres`: one schema per board, on hermes-sql's `Db`);
//! - [`board`]: opening a board, tasks, links, comments, events, runs, attachments;
//!   [`attach_url`]: a file fetched from the web for `kanban_attach_url`;
//! - [`migrate`]: a board copied to the other store (`hermes store migrate`);
//! - [`lifecycle`]: claims, heartbeats, completion, typed blocks, reclaiming, failures;
//! - [`dispatch`]: the dispatcher tick and the worker processes; [`workspace`]: their
//!   working directories;
//! - [`context`]: what a worker reads about its task; [`notify`]: chats subscribed to tasks;
//! - [`tools`]: `kanban_show`, `kanban_complete`, `kanban_block`, ... (the protocol the
//!   prompt states with them is hermes-core's `prompt::text::KANBAN_*`).

pub mod attach_url;
pub mod board;
pub mod chat;
pub mod context;
pub mod dispatch;
pub mod error;
pub mod heartbeat;
pub mod lifecycle;
pub mod migrate;
pub mod model;
pub mod notify;
pub mod paths;
pub mod schema;
pub mod settings;
pub mod time;
pub mod tools;
pub mod workspace;

pub use board::{Board, ListFilter, NewTask};
pub use dispatch::{Dispatcher, TickReport};
pub use error::KanbanError;
pub use model::{BlockKind, Status, Task, Workspace};
pub use paths::{BoardPaths, DEFAULT_BOARD, ProcessEnv};
pub use settings::KanbanSettings;
pub use tools::{Scope, WorkerScope, kanban_tools};

/// The root every board hangs from for a home: the default home, also when `home` is a
/// profile's (the board is shared by all profiles, as in Python).
pub fn kanban_root(home: &std::path::Path) -> std::path::PathBuf {
    let parent = home.parent();
    if parent
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "profiles")
        && let Some(base) = parent.and_then(|p| p.parent())
    {
        return base.to_path_buf();
    }
    home.to_path_buf()
}

#[cfg(test)]
mod tests;
