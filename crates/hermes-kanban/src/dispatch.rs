//! The dispatcher: one tick reaps the workers it started, reclaims expired claims and crashed
//! or overdue workers, promotes tasks whose parents are done, then claims ready tasks and
//! starts one worker process per task (`hermes -p <assignee> chat -q "work kanban task <id>"`,
//! Python's command line) in the task's workspace, its output in the board's log directory,
//! pinned to this board by the `HERMES_KANBAN_*` variables. Caps: the board-wide
//! `max_in_progress` and `max_in_progress_per_profile`. One tick at a time per board across
//! processes (an advisory lock file beside the database): a second dispatcher skips.
//!
//! The workers are separate processes in their own process groups: a dispatcher that exits
//! (`hermes kanban dispatch`) leaves them running, and the next tick of any dispatcher finds
//! out how they ended from the board (their own `kanban_complete`/`kanban_block`) or from the
//! process being gone.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::board::Board;
use crate::error::{KanbanError, Result};
use crate::lifecycle::{WorkerExit, claim_ttl, claimer_id, host_name};
use crate::model::Task;
use crate::paths::BoardPaths;
use crate::settings::KanbanSettings;
use crate::time::now;

/// A worker's process is given this long to appear before "not alive" means crashed (only
/// for workers another process started: ours are waited on).
const CRASH_GRACE_SECONDS: i64 = 30;
/// SIGTERM, then this long, then SIGKILL, for a worker past its `max_runtime_seconds`.
const TERMINATE_GRACE: Duration = Duration::from_secs(5);

/// What one tick did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TickReport {
    /// Another dispatcher holds this board's tick lock.
    pub skipped_locked: bool,
    pub reclaimed: Vec<String>,
    pub crashed: Vec<String>,
    pub timed_out: Vec<String>,
    pub promoted: usize,
    /// (task, assignee, workspace)
    pub spawned: Vec<(String, String, String)>,
    pub skipped_unassigned: Vec<String>,
    /// Ready tasks whose assignee names no profile.
    pub skipped_unknown_profile: Vec<String>,
    pub auto_blocked: Vec<String>,
}

impl TickReport {
    pub fn is_idle(&self) -> bool {
        self.reclaimed.is_empty()
            && self.crashed.is_empty()
            && self.timed_out.is_empty()
            && self.promoted == 0
            && self.spawned.is_empty()
            && self.auto_blocked.is_empty()
    }
}

/// A worker this dispatcher started.
struct Worker {
    child: Child,
    claimer: String,
}

/// The dispatcher of one board.
pub struct Dispatcher {
    paths: BoardPaths,
    settings: KanbanSettings,
    /// The `hermes` executable workers run.
    exe: PathBuf,
    claimer: String,
    workers: HashMap<String, Worker>,
}

impl Dispatcher {
    pub fn new(paths: BoardPaths, settings: KanbanSettings, exe: PathBuf) -> Dispatcher {
        Dispatcher {
            paths,
            settings,
            exe,
            claimer: claimer_id(),
            workers: HashMap::new(),
        }
    }

    pub fn paths(&self) -> &BoardPaths {
        &self.paths
    }

    /// Workers started by this dispatcher and still running.
    pub fn live_workers(&mut self) -> usize {
        self.workers
            .retain(|_, w| matches!(w.child.try_wait(), Ok(None)));
        self.workers.len()
    }

    /// One pass; with `dry_run` only reports what it would start.
    pub fn tick(&mut self, dry_run: bool) -> Result<TickReport> {
        let lock_path = self.paths.db.with_extension("db.dispatch.lock");
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| KanbanError::io(&lock_path, e))?;
        let mut lock = fd_lock::RwLock::new(lock_file);
        let Ok(_held) = lock.try_write() else {
            return Ok(TickReport {
                skipped_locked: true,
                ..TickReport::default()
            });
        };
        let board = Board::open(self.paths.clone())?;
        let mut report = TickReport::default();
        self.reap_own(&board, &mut report)?;
        report.reclaimed = board.release_stale_claims(&pid_alive)?;
        self.detect_vanished(&board, &mut report)?;
        self.enforce_max_runtime(&board, &mut report)?;
        report.promoted = board.recompute_ready(Some(self.settings.failure_limit))?;
        self.spawn_ready(&board, dry_run, &mut report)?;
        Ok(report)
    }

    /// Workers we started that have exited: if their task is still running under them, they
    /// ended without a terminal kanban call.
    fn reap_own(&mut self, board: &Board, report: &mut TickReport) -> Result<()> {
        let mut ended = Vec::new();
        for (id, w) in self.workers.iter_mut() {
            if let Ok(Some(status)) = w.child.try_wait() {
                ended.push((id.clone(), w.child.id(), w.claimer.clone(), exit_of(status)));
            }
        }
        for (id, pid, claimer, exit) in ended {
            self.workers.remove(&id);
            if let Some(tripped) = board.record_worker_exit(
                &id,
                i64::from(pid),
                &claimer,
                &exit,
                self.settings.failure_limit,
            )? {
                report.crashed.push(id.clone());
                if tripped {
                    report.auto_blocked.push(id);
                }
            }
        }
        Ok(())
    }

    /// Running tasks claimed on this host by another process whose worker is gone.
    fn detect_vanished(&mut self, board: &Board, report: &mut TickReport) -> Result<()> {
        let prefix = format!("{}:", host_name());
        let now = now();
        for task in running(board)? {
            let (Some(pid), Some(lock)) = (task.worker_pid, task.claim_lock.as_deref()) else {
                continue;
            };
            if !lock.starts_with(&prefix) || self.workers.contains_key(&task.id) {
                continue;
            }
            let grace = std::env::var("HERMES_KANBAN_CRASH_GRACE_SECONDS")
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|v| *v >= 0)
                .unwrap_or(CRASH_GRACE_SECONDS);
            if task.started_at.is_some_and(|s| now - s < grace) || pid_alive(pid) {
                continue;
            }
            if let Some(tripped) = board.record_worker_exit(
                &task.id,
                pid,
                lock,
                &WorkerExit::Vanished,
                self.settings.failure_limit,
            )? {
                report.crashed.push(task.id.clone());
                if tripped {
                    report.auto_blocked.push(task.id);
                }
            }
        }
        Ok(())
    }

    /// Workers running past their task's `max_runtime_seconds` are stopped (their process
    /// group: SIGTERM, a grace, SIGKILL) and the task goes back to `ready` with a failure.
    fn enforce_max_runtime(&mut self, board: &Board, report: &mut TickReport) -> Result<()> {
        let now = now();
        for task in running(board)? {
            let (Some(max), Some(pid)) = (task.max_runtime_seconds, task.worker_pid) else {
                continue;
            };
            let started = board
                .runs(&task.id)?
                .last()
                .map(|r| r.started_at)
                .or(task.started_at)
                .unwrap_or(now);
            if now - started <= max {
                continue;
            }
            let Ok(pgid) = u32::try_from(pid) else {
                continue;
            };
            hermes_tools::terminal::signal_group(pgid, libc::SIGTERM);
            let deadline = Instant::now() + TERMINATE_GRACE;
            while pid_alive(pid) && Instant::now() < deadline {
                if let Some(w) = self.workers.get_mut(&task.id) {
                    let _ = w.child.try_wait();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if pid_alive(pid) {
                hermes_tools::terminal::signal_group(pgid, libc::SIGKILL);
            }
            if let Some(mut w) = self.workers.remove(&task.id) {
                let _ = w.child.wait();
            }
            let lock = task.claim_lock.clone().unwrap_or_default();
            let error = format!("worker ran past max_runtime_seconds={max} and was stopped");
            let released = board.write(|c| {
                let n = c.execute(
                    "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, \
                     worker_pid = NULL WHERE id = ? AND status = 'running' AND claim_lock IS ?",
                    &hermes_sql::params![task.id, task.claim_lock],
                )?;
                Ok(n == 1)
            })?;
            if released {
                crate::lifecycle::close_run_timed_out(board, &task.id, &error, pid, &lock, max)?;
                report.timed_out.push(task.id.clone());
                if board.record_failure(
                    &task.id,
                    &error,
                    "timed_out",
                    self.settings.failure_limit,
                )? {
                    report.auto_blocked.push(task.id);
                }
            }
        }
        Ok(())
    }

    fn spawn_ready(&mut self, board: &Board, dry_run: bool, report: &mut TickReport) -> Result<()> {
        let ready: Vec<Task> = board.list(&crate::board::ListFilter {
            status: Some(crate::model::Status::Ready),
            ..Default::default()
        })?;
        let running_tasks = running(board)?;
        let mut in_progress = running_tasks.len();
        let mut per_profile: HashMap<String, usize> = HashMap::new();
        for t in &running_tasks {
            if let Some(a) = &t.assignee {
                *per_profile.entry(a.clone()).or_default() += 1;
            }
        }
        let default_assignee = Some(self.settings.default_assignee.trim())
            .filter(|a| !a.is_empty() && profile_exists(&self.paths.root, a))
            .map(str::to_string);
        for task in ready {
            if task.claim_lock.is_some() {
                continue;
            }
            if self
                .settings
                .max_in_progress
                .is_some_and(|cap| in_progress >= cap)
            {
                break;
            }
            let assignee = match (&task.assignee, &default_assignee) {
                (Some(a), _) => a.clone(),
                (None, Some(d)) => {
                    if !dry_run {
                        board.assign(&task.id, Some(d))?;
                    }
                    d.clone()
                }
                (None, None) => {
                    report.skipped_unassigned.push(task.id);
                    continue;
                }
            };
            if !profile_exists(&self.paths.root, &assignee) {
                report.skipped_unknown_profile.push(task.id);
                continue;
            }
            let current = per_profile.get(&assignee).copied().unwrap_or(0);
            if self
                .settings
                .max_in_progress_per_profile
                .is_some_and(|cap| current >= cap)
            {
                continue;
            }
            if dry_run {
                report.spawned.push((task.id, assignee, String::new()));
                in_progress += 1;
                continue;
            }
            let Some(claimed) = board.claim(&task.id, &self.claimer, claim_ttl())? else {
                continue;
            };
            let started = self
                .workspace(board, &claimed)
                .and_then(|ws| Ok((self.start_worker(&claimed, &assignee, &ws)?, ws)));
            match started {
                Ok((child, ws)) => {
                    board.set_worker_pid(&claimed.id, child.id())?;
                    self.workers.insert(
                        claimed.id.clone(),
                        Worker {
                            child,
                            claimer: self.claimer.clone(),
                        },
                    );
                    report
                        .spawned
                        .push((claimed.id, assignee.clone(), ws.display().to_string()));
                    in_progress += 1;
                    *per_profile.entry(assignee).or_default() += 1;
                }
                Err(e) => {
                    if board.record_spawn_failure(
                        &claimed.id,
                        &e.to_string(),
                        self.settings.failure_limit,
                    )? {
                        report.auto_blocked.push(claimed.id);
                    }
                }
            }
        }
        Ok(())
    }

    /// The task's working directory, created and recorded on the task.
    fn workspace(&self, board: &Board, task: &Task) -> Result<PathBuf> {
        let dir = crate::workspace::resolve(&self.paths, task)?;
        board.write(|c| {
            c.execute(
                "UPDATE tasks SET workspace_path = ? WHERE id = ?",
                &hermes_sql::params![dir.to_string_lossy(), task.id],
            )?;
            Ok(())
        })?;
        Ok(dir)
    }

    fn start_worker(&self, task: &Task, assignee: &str, workspace: &Path) -> Result<Child> {
        use std::os::unix::process::CommandExt;
        std::fs::create_dir_all(&self.paths.logs)
            .map_err(|e| KanbanError::io(&self.paths.logs, e))?;
        let log_path = self.paths.worker_log(&task.id);
        rotate_log(
            &log_path,
            self.settings.worker_log_rotate_bytes,
            self.settings.worker_log_backup_count,
        );
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| KanbanError::io(&log_path, e))?;
        let log_err = log.try_clone().map_err(|e| KanbanError::io(&log_path, e))?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("-p").arg(assignee);
        if let Some(model) = &task.model_override {
            cmd.arg("-m").arg(model);
        }
        cmd.arg("chat")
            .arg("-q")
            .arg(format!("work kanban task {}", task.id))
            .current_dir(workspace)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .process_group(0)
            .env("HERMES_HOME", &self.paths.root)
            .env("HERMES_KANBAN_TASK", &task.id)
            .env("HERMES_KANBAN_WORKSPACE", workspace)
            .env("HERMES_KANBAN_DB", &self.paths.db)
            .env("HERMES_KANBAN_WORKSPACES_ROOT", &self.paths.workspaces)
            .env("HERMES_KANBAN_ATTACHMENTS_ROOT", &self.paths.attachments)
            .env("HERMES_KANBAN_BOARD", &self.paths.slug)
            .env("HERMES_PROFILE", assignee)
            .env("TERMINAL_CWD", workspace)
            .env_remove("HERMES_KANBAN_HOME");
        if let Some(run) = task.current_run_id {
            cmd.env("HERMES_KANBAN_RUN_ID", run.to_string());
        }
        if let Some(lock) = &task.claim_lock {
            cmd.env("HERMES_KANBAN_CLAIM_LOCK", lock);
        }
        if let Some(branch) = &task.branch_name {
            cmd.env("HERMES_KANBAN_BRANCH", branch);
        }
        if let Some(tenant) = &task.tenant {
            cmd.env("HERMES_TENANT", tenant);
        }
        cmd.spawn()
            .map_err(|e| KanbanError::Spawn(format!("{}: {e}", self.exe.display())))
    }
}

fn running(board: &Board) -> Result<Vec<Task>> {
    board.list(&crate::board::ListFilter {
        status: Some(crate::model::Status::Running),
        ..Default::default()
    })
}

fn exit_of(status: std::process::ExitStatus) -> WorkerExit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => WorkerExit::Clean,
        (Some(c), _) => WorkerExit::Code(c),
        (None, Some(s)) => WorkerExit::Signal(s),
        (None, None) => WorkerExit::Vanished,
    }
}

/// Whether a process is alive (a zombie is not): `/proc/<pid>/stat`'s state.
pub fn pid_alive(pid: i64) -> bool {
    if pid <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// `default` is the root home; any other profile is a directory under `profiles/`.
pub fn profile_exists(root: &Path, name: &str) -> bool {
    name == "default" || root.join("profiles").join(name).is_dir()
}

/// Renames `log` to `log.1` (older ones shifted, at most `keep`) when it reached `max_bytes`.
fn rotate_log(log: &Path, max_bytes: u64, keep: u32) {
    let big = std::fs::metadata(log).is_ok_and(|m| max_bytes > 0 && m.len() >= max_bytes);
    if !big {
        return;
    }
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", log.display()));
    if keep == 0 {
        let _ = std::fs::remove_file(log);
        return;
    }
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    let _ = std::fs::rename(log, numbered(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_pid_is_alive_and_nonsense_is_not() {
        assert!(pid_alive(i64::from(std::process::id())));
        assert!(!pid_alive(0));
        assert!(!pid_alive(i64::from(i32::MAX)));
    }

    #[test]
    fn logs_rotate_keeping_the_backups_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("t.log");
        std::fs::write(&log, "0123456789").unwrap();
        rotate_log(&log, 5, 1);
        assert!(!log.exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("t.log.1")).unwrap(),
            "0123456789"
        );
        std::fs::write(&log, "small").unwrap();
        rotate_log(&log, 100, 1);
        assert!(log.exists());
    }
}
