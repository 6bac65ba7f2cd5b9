//! `hermes kanban` arguments: the Python Hermes's subcommands and flags.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct KanbanArgs {
    /// The board to use (else `HERMES_KANBAN_BOARD`, else the one `boards switch` chose,
    /// else `default`).
    #[arg(long, value_name = "SLUG", global = true)]
    pub board: Option<String>,

    #[command(subcommand)]
    pub action: KanbanAction,
}

#[derive(Debug, Subcommand)]
pub enum KanbanAction {
    /// Create kanban.db if missing (idempotent).
    Init,
    /// Boards: list, create SLUG, switch SLUG.
    Boards {
        #[command(subcommand)]
        action: BoardsAction,
    },
    /// Create a task.
    Create(CreateArgs),
    /// List tasks (archived ones with --archived).
    #[command(visible_alias = "ls")]
    List {
        /// Only tasks assigned to this profile.
        #[arg(long)]
        mine: bool,
        #[arg(long)]
        assignee: Option<String>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        tenant: Option<String>,
        #[arg(long)]
        archived: bool,
        #[arg(long)]
        json: bool,
    },
    /// A task with its links, comments, runs and events.
    Show {
        task_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Assign a task to a profile (`none` unassigns).
    Assign { task_id: String, profile: String },
    /// PARENT must be done before CHILD runs.
    Link { parent_id: String, child_id: String },
    /// Remove a dependency.
    Unlink { parent_id: String, child_id: String },
    /// Add a comment to a task.
    Comment {
        task_id: String,
        #[arg(required = true)]
        text: Vec<String>,
        #[arg(long)]
        author: Option<String>,
    },
    /// Attach a local file to a task.
    Attach {
        task_id: String,
        path: std::path::PathBuf,
        #[arg(long)]
        name: Option<String>,
        #[arg(long = "content-type")]
        content_type: Option<String>,
        #[arg(long)]
        author: Option<String>,
    },
    /// A task's attachments.
    Attachments {
        task_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Mark tasks done.
    Complete {
        #[arg(required = true)]
        task_ids: Vec<String>,
        #[arg(long)]
        result: Option<String>,
        #[arg(long)]
        summary: Option<String>,
        /// A JSON object of facts for downstream workers.
        #[arg(long)]
        metadata: Option<String>,
    },
    /// Mark a task blocked (the reason is also added as a comment).
    Block {
        task_id: String,
        reason: Vec<String>,
        /// dependency, needs_input, capability or transient.
        #[arg(long)]
        kind: Option<String>,
    },
    /// Return blocked or scheduled tasks to ready (todo while parents are open).
    Unblock {
        #[arg(required = true)]
        task_ids: Vec<String>,
        /// The answer or note, added as a comment the worker reads when it resumes.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Park a task waiting on time, not on a person.
    Schedule {
        task_id: String,
        reason: Vec<String>,
    },
    /// Archive tasks.
    Archive {
        #[arg(required = true)]
        task_ids: Vec<String>,
    },
    /// Follow a task's events (Ctrl-C to stop).
    Tail {
        task_id: String,
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
    },
    /// One dispatcher pass: reclaim, promote, start workers for ready tasks.
    Dispatch {
        /// Only say what would start.
        #[arg(long)]
        dry_run: bool,
        /// At most this many workers running at once.
        #[arg(long = "max")]
        max: Option<usize>,
        #[arg(long = "failure-limit")]
        failure_limit: Option<i64>,
        #[arg(long)]
        json: bool,
    },
    /// Run the dispatcher until interrupted.
    Daemon {
        #[arg(long, default_value_t = 60.0)]
        interval: f64,
        #[arg(long = "max")]
        max: Option<usize>,
        #[arg(long = "failure-limit")]
        failure_limit: Option<i64>,
    },
    /// A task's worker log.
    Log {
        task_id: String,
        /// Only the last N bytes.
        #[arg(long)]
        tail: Option<u64>,
    },
    /// A task's attempts.
    Runs {
        task_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Tasks per status.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Tell a chat when a task completes or blocks.
    #[command(name = "notify-subscribe")]
    NotifySubscribe {
        task_id: String,
        #[arg(long)]
        platform: String,
        #[arg(long = "chat-id")]
        chat_id: String,
        #[arg(long = "thread-id")]
        thread_id: Option<String>,
        #[arg(long = "user-id")]
        user_id: Option<String>,
    },
    /// The chats subscribed to tasks.
    #[command(name = "notify-list")]
    NotifyList {
        task_id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Stop telling a chat about a task.
    #[command(name = "notify-unsubscribe")]
    NotifyUnsubscribe {
        task_id: String,
        #[arg(long)]
        platform: String,
        #[arg(long = "chat-id")]
        chat_id: String,
        #[arg(long = "thread-id")]
        thread_id: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BoardsAction {
    /// The boards, the current one marked.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Create a board.
    Create {
        slug: String,
        #[arg(long)]
        name: Option<String>,
        /// Make it the current board.
        #[arg(long)]
        switch: bool,
    },
    /// Make SLUG the current board.
    Switch { slug: String },
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    pub title: String,
    /// The opening post: spec, acceptance criteria, links.
    #[arg(long)]
    pub body: Option<String>,
    /// The profile that does it.
    #[arg(long)]
    pub assignee: Option<String>,
    /// A task that must be done first (repeatable).
    #[arg(long = "parent")]
    pub parents: Vec<String>,
    /// scratch (default), dir:<absolute path> or worktree[:<absolute path>].
    #[arg(long, default_value = "scratch")]
    pub workspace: String,
    /// The worktree's branch (worktree workspaces only).
    #[arg(long)]
    pub branch: Option<String>,
    #[arg(long)]
    pub tenant: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub priority: i64,
    /// Park it in triage for someone to specify.
    #[arg(long)]
    pub triage: bool,
    #[arg(long = "idempotency-key")]
    pub idempotency_key: Option<String>,
    /// Stop the worker after this long: 90, 90s, 30m, 2h, 1d.
    #[arg(long = "max-runtime")]
    pub max_runtime: Option<String>,
    #[arg(long = "created-by", default_value = "user")]
    pub created_by: String,
    /// A skill the worker should use (repeatable).
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    /// Failures before the task is parked for a person (overrides kanban.failure_limit).
    #[arg(long = "max-retries")]
    pub max_retries: Option<i64>,
    #[arg(long)]
    pub json: bool,
}
