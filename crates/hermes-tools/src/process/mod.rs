//! Background processes of a session (`terminal` with `background: true`): each job runs in its
//! own process group with stdout and stderr merged into a bounded buffer, can be polled, read
//! by line, waited for, written to and killed through the `process` tool, outlives the turn
//! that started it, and is killed with its whole group when the session ends
//! ([`ProcessRegistry::shutdown`], or on drop).

mod buffer;
mod job;
pub mod tool;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

pub use job::{ExitInfo, Job};

use crate::ToolError;
use crate::env::ExecutionEnvironment;
use crate::sandbox::Sandbox;
use crate::secrets::ChildEnv;
use crate::terminal::signal_group;

/// Jobs running at once per session.
const MAX_RUNNING: usize = 16;
/// Finished jobs remembered for `list`/`log` (the oldest are forgotten first).
const MAX_FINISHED: usize = 32;
/// Grace between SIGTERM and SIGKILL at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Process groups of every live background job in this process, so an abrupt exit (a second
/// Ctrl-C) can still kill them: see [`kill_all_now`].
static LIVE_GROUPS: LazyLock<Mutex<HashSet<u32>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

pub(crate) fn track_group(pgid: u32, live: bool) {
    if let Ok(mut groups) = LIVE_GROUPS.lock() {
        if live {
            groups.insert(pgid);
        } else {
            groups.remove(&pgid);
        }
    }
}

/// SIGKILLs every background job of every session in this process and removes the sessions'
/// non-persistent containers (which ends what runs in them). For exits that skip destructors
/// (`std::process::exit`).
pub fn kill_all_now() {
    if let Ok(mut groups) = LIVE_GROUPS.lock() {
        for pgid in groups.drain() {
            signal_group(pgid, libc::SIGKILL);
        }
    }
    crate::env::docker::remove_all_now();
}

/// The background jobs of one session.
#[derive(Default)]
pub struct ProcessRegistry {
    jobs: Mutex<Vec<Arc<Job>>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for ProcessRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRegistry")
            .field("jobs", &self.jobs().len())
            .finish()
    }
}

impl ProcessRegistry {
    pub fn new() -> ProcessRegistry {
        ProcessRegistry::default()
    }

    /// Starts `command` in the background in `environment`.
    pub async fn spawn(
        &self,
        environment: &dyn ExecutionEnvironment,
        command: &str,
        workdir: &str,
        env: &ChildEnv,
        sandbox: Option<&Sandbox>,
    ) -> Result<Arc<Job>, ToolError> {
        let running = self.jobs().iter().filter(|j| !j.is_finished()).count();
        if running >= MAX_RUNNING {
            return Err(ToolError::new(format!(
                "{running} background processes are already running (the limit is {MAX_RUNNING}); kill one with process(action='kill') first"
            )));
        }
        let id = format!("proc_{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let job = Job::start(id, environment, command, workdir, env, sandbox).await?;
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.push(job.clone());
            // Forget the oldest finished jobs beyond the limit.
            let finished = jobs.iter().filter(|j| j.is_finished()).count();
            let mut excess = finished.saturating_sub(MAX_FINISHED);
            jobs.retain(|j| {
                if excess > 0 && j.is_finished() {
                    excess -= 1;
                    false
                } else {
                    true
                }
            });
        }
        Ok(job)
    }

    /// Every job, oldest first.
    pub fn jobs(&self) -> Vec<Arc<Job>> {
        self.jobs.lock().map(|j| j.clone()).unwrap_or_default()
    }

    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        let id = id.trim();
        self.jobs().into_iter().find(|j| j.id == id)
    }

    /// Ends every job: SIGTERM to each process group, a short grace, then SIGKILL. Returns how
    /// many were still running.
    pub async fn shutdown(&self) -> usize {
        let live: Vec<Arc<Job>> = self
            .jobs()
            .into_iter()
            .filter(|j| j.group_alive())
            .collect();
        for job in &live {
            job.signal(libc::SIGTERM).await;
        }
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        for job in &live {
            let _ = tokio::time::timeout_at(deadline, job.wait_exit()).await;
        }
        for job in &live {
            job.signal(libc::SIGKILL).await;
            job.forget_group();
        }
        // A detached (remote) job reports its exit once its follower has collected the rest
        // and removed its remote files: give that a bounded moment before the session ends.
        let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        for job in &live {
            let _ = tokio::time::timeout_at(deadline, job.wait_exit()).await;
        }
        live.len()
    }
}

impl Drop for ProcessRegistry {
    fn drop(&mut self) {
        for job in self.jobs() {
            if job.group_alive() {
                job.signal_blocking(libc::SIGKILL);
            }
            job.forget_group();
        }
    }
}

#[cfg(test)]
mod tests;
