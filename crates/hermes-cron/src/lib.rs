//! Scheduled jobs (cron), without a gateway: the job store in `$HERMES_HOME/cron/jobs.json`
//! in the Python Hermes's format (a Python user's file loads and keeps working, unknown fields
//! survive every rewrite, and what we write loads in Python), schedules (`30m`, `every 2h`,
//! 5-field cron in local time, ISO timestamps), next-run computation, due-job selection that
//! claims each job under the store's file lock so two ticks never run the same one, repeat
//! counting, the run outputs under `cron/output/<job id>/` and the ledger of execution attempts
//! (`cron/executions.db`).
//!
//! Running a job (an agent session) is the CLI's part, and so is scanning prompts for
//! injection: this crate depends on nothing above hermes-config.

pub mod clock;
pub mod executions;
pub mod job;
pub mod output;
pub mod schedule;
pub mod store;

pub use clock::Zone;
pub use job::{Job, JobEdit, NewJob};
pub use output::is_silent;
pub use schedule::{ParsedSchedule, Schedule};
pub use store::{CronStore, RunOutcome, TickLock};

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum CronError {
    /// A schedule that cannot be parsed or cannot run.
    #[error("{0}")]
    Schedule(String),
    /// No job has that id or name.
    #[error("no cron job `{0}` (`hermes cron list` shows them)")]
    NotFound(String),
    /// A name shared by several jobs.
    #[error("the name `{name}` matches {} jobs ({}): use the job id", ids.len(), ids.join(", "))]
    Ambiguous { name: String, ids: Vec<String> },
    /// A request that makes no sense for the job as it is.
    #[error("{0}")]
    Invalid(String),
    /// jobs.json is not what Hermes writes.
    #[error("{}: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another process held the store's lock for too long.
    #[error("{}: another hermes process has held the cron lock for 30 s", path.display())]
    Locked { path: PathBuf },
}

impl CronError {
    /// Whether the user asked for something wrong (exit code 2) rather than the store failing.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            CronError::Schedule(_)
                | CronError::NotFound(_)
                | CronError::Ambiguous { .. }
                | CronError::Invalid(_)
        )
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> CronError {
        CronError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
