//! `kanban.*` in config.yaml, the Python Hermes's keys and defaults.

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct KanbanSettings {
    /// Run the dispatcher inside `hermes gateway` (on, as Python).
    pub dispatch_in_gateway: bool,
    /// Seconds between dispatcher ticks.
    pub dispatch_interval_seconds: f64,
    /// Consecutive failures (spawn, crash, timeout) before a task is parked for a person.
    pub failure_limit: i64,
    /// At most this many workers running at once on the board (none: no cap).
    pub max_in_progress: Option<usize>,
    /// At most this many workers of one profile at once (none: no cap).
    pub max_in_progress_per_profile: Option<usize>,
    /// The profile an unassigned ready task is given (empty: left unassigned).
    pub default_assignee: String,
    /// Worker logs rotate at this size, keeping this many older files.
    pub worker_log_rotate_bytes: u64,
    pub worker_log_backup_count: u32,
    /// Subscribe the chat a `kanban_create` came from to the task's completion and blocks.
    pub auto_subscribe_on_create: bool,
}

impl Default for KanbanSettings {
    fn default() -> Self {
        KanbanSettings {
            dispatch_in_gateway: true,
            dispatch_interval_seconds: 60.0,
            failure_limit: crate::lifecycle::DEFAULT_FAILURE_LIMIT,
            max_in_progress: None,
            max_in_progress_per_profile: None,
            default_assignee: String::new(),
            worker_log_rotate_bytes: 2 * 1024 * 1024,
            worker_log_backup_count: 1,
            auto_subscribe_on_create: true,
        }
    }
}
