//! A task's life, as compare-and-swap updates in `BEGIN IMMEDIATE` transactions (Python's
//! design: SQLite serialises writers, a loser sees zero rows changed and moves on): promotion
//! of tasks whose parents are done, claims (`ready -> running` with a run row), heartbeats,
//! completion, typed blocks with the unblock-loop breaker, unblock, schedule, archive,
//! reclaiming expired claims and recording failures with the circuit breaker.

use hermes_sql::{Db, Dialect, params};
use serde_json::{Value, json};

use crate::board::{Board, append_event, ensure_task};
use crate::error::{KanbanError, Result};
use crate::model::{BlockKind, Status, Task};
use crate::time::now;

/// A claim lasts this long unless heartbeats extend it (Python's 15 minutes).
pub const DEFAULT_CLAIM_TTL_SECONDS: i64 = 15 * 60;
/// Consecutive failures before a task is parked for a person (Python's default).
pub const DEFAULT_FAILURE_LIMIT: i64 = 2;
/// Re-blocks for the same reason after an unblock before the task goes to triage.
pub const BLOCK_RECURRENCE_LIMIT: i64 = 2;

/// The claim time-to-live: `HERMES_KANBAN_CLAIM_TTL_SECONDS` when a positive number.
pub fn claim_ttl() -> i64 {
    std::env::var("HERMES_KANBAN_CLAIM_TTL_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(DEFAULT_CLAIM_TTL_SECONDS)
}

/// This host and process, as Python writes a claim (`host:pid`).
pub fn claimer_id() -> String {
    format!("{}:{}", host_name(), std::process::id())
}

pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// How a finished run went, for the run row and the event.
#[derive(Debug, Clone)]
pub struct Completion<'a> {
    pub result: Option<&'a str>,
    pub summary: Option<&'a str>,
    pub metadata: Option<Value>,
    /// Only complete when this run is still the task's current one (a worker's own run).
    pub expected_run: Option<i64>,
}

/// Where a block sent the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockOutcome {
    Blocked,
    /// A `dependency` block: back to `todo`, promoted when the parents finish.
    Todo,
    /// Re-blocked too often for the same reason: a person must triage it.
    Triage,
}

/// What ended a worker without a `kanban_complete` / `kanban_block`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerExit {
    /// Exit status 0 without a terminal kanban call: a protocol violation.
    Clean,
    Code(i32),
    Signal(i32),
    /// The process is gone and nobody saw how it ended.
    Vanished,
}

impl WorkerExit {
    fn describe(&self, pid: i64) -> (String, &'static str) {
        match self {
            WorkerExit::Clean => (
                "worker exited cleanly (rc=0) without calling kanban_complete or kanban_block — \
                 protocol violation. A run that ends without a terminal kanban call counts as failed."
                    .to_string(),
                "protocol_violation",
            ),
            WorkerExit::Code(c) => (format!("pid {pid} exited with code {c}"), "crashed"),
            WorkerExit::Signal(s) => (format!("pid {pid} killed by signal {s}"), "crashed"),
            WorkerExit::Vanished => (format!("pid {pid} not alive"), "crashed"),
        }
    }
}

impl Board {
    /// Promotes `todo` (and non-sticky `blocked`) tasks whose parents are all done or
    /// archived to `ready`. Returns how many.
    pub fn recompute_ready(&self, failure_limit: Option<i64>) -> Result<usize> {
        let limit = failure_limit.unwrap_or(DEFAULT_FAILURE_LIMIT);
        self.write(|c| {
            let rows: Vec<(String, String, i64, Option<i64>)> = crate::board::rows_to(
                c.query(
                    "SELECT id, status, consecutive_failures, max_retries FROM tasks \
                     WHERE status IN ('todo', 'blocked')",
                    &[],
                )?,
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get::<Option<i64>>(2)?.unwrap_or(0),
                        r.get(3)?,
                    ))
                },
            )?;
            let mut promoted = 0;
            for (id, status, failures, max_retries) in rows {
                if status == "blocked"
                    && (sticky_block(c, &id)? || failures >= max_retries.unwrap_or(limit))
                {
                    continue;
                }
                if !parents_finished(c, &id)? {
                    continue;
                }
                let n = c.execute(
                    "UPDATE tasks SET status = 'ready' WHERE id = ? AND status = ?",
                    &params![id, status],
                )?;
                if n == 1 {
                    append_event(c, &id, "promoted", None, None)?;
                    promoted += 1;
                }
            }
            Ok(promoted)
        })
    }

    /// `ready -> running` for `claimer`, with a new run; `None` when someone else got it or
    /// its parents are not done after all (it goes back to `todo`).
    pub fn claim(&self, id: &str, claimer: &str, ttl: i64) -> Result<Option<Task>> {
        let now = now();
        let expires = now + ttl;
        let claimed = self.write(|c| {
            if !parents_finished(c, id)? {
                c.execute(
                    "UPDATE tasks SET status = 'todo' WHERE id = ? AND status = 'ready'",
                    &params![id],
                )?;
                append_event(c, id, "claim_rejected", Some(json!({"reason": "parents_not_done"})), None)?;
                return Ok(false);
            }
            // Across machines the row lock decides: a claimer that finds the task locked by
            // another's claim moves on instead of queueing behind it (SQLite has one writer
            // at a time already).
            if c.dialect() == Dialect::Postgres
                && c.query_row(
                    "SELECT id FROM tasks WHERE id = ? AND status = 'ready' \
                     AND claim_lock IS NULL FOR UPDATE SKIP LOCKED",
                    &params![id],
                )?
                .is_none()
            {
                return Ok(false);
            }
            let stale: Option<Option<i64>> = c.query_value(
                "SELECT current_run_id FROM tasks WHERE id = ? AND status = 'ready'",
                &params![id],
            )?;
            if let Some(Some(run)) = stale {
                c.execute(
                    "UPDATE task_runs SET status = 'reclaimed', outcome = 'reclaimed', \
                     summary = COALESCE(summary, 'invariant recovery on re-claim'), ended_at = ?, \
                     claim_lock = NULL, claim_expires = NULL, worker_pid = NULL \
                     WHERE id = ? AND ended_at IS NULL",
                    &params![now, run],
                )?;
            }
            let n = c.execute(
                "UPDATE tasks SET status = 'running', claim_lock = ?, claim_expires = ?, \
                 started_at = COALESCE(started_at, ?), last_heartbeat_at = ? \
                 WHERE id = ? AND status = 'ready' AND claim_lock IS NULL",
                &params![claimer, expires, now, now, id],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let row = c
                .query_row(
                    "SELECT assignee, max_runtime_seconds, current_step_key FROM tasks WHERE id = ?",
                    &params![id],
                )?
                .ok_or_else(|| KanbanError::UnknownTask(id.to_string()))?;
            let (assignee, max_runtime, step): (Option<String>, Option<i64>, Option<String>) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            let run = c.insert(
                "INSERT INTO task_runs (task_id, profile, step_key, status, claim_lock, \
                 claim_expires, max_runtime_seconds, started_at, last_heartbeat_at) \
                 VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?)",
                &params![id, assignee, step, claimer, expires, max_runtime, now, now],
            )?;
            c.execute("UPDATE tasks SET current_run_id = ? WHERE id = ?", &params![run, id])?;
            append_event(
                c,
                id,
                "claimed",
                Some(json!({"lock": claimer, "expires": expires, "run_id": run})),
                Some(run),
            )?;
            Ok(true)
        })?;
        if claimed { self.find(id) } else { Ok(None) }
    }

    /// Extends a running claim held by `claimer`; `false` when it is no longer ours.
    pub fn heartbeat(&self, id: &str, claimer: &str, note: Option<&str>) -> Result<bool> {
        let now = now();
        let expires = now + claim_ttl();
        self.write(|c| {
            let n = c.execute(
                "UPDATE tasks SET claim_expires = ?, last_heartbeat_at = ? \
                 WHERE id = ? AND status = 'running' AND claim_lock = ?",
                &params![expires, now, id, claimer],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let run = current_run(c, id)?;
            if let Some(run) = run {
                c.execute(
                    "UPDATE task_runs SET claim_expires = ?, last_heartbeat_at = ? WHERE id = ?",
                    &params![expires, now, run],
                )?;
            }
            if let Some(note) = note.map(str::trim).filter(|n| !n.is_empty()) {
                append_event(
                    c,
                    id,
                    "heartbeat",
                    Some(json!({"note": truncate(note, 500)})),
                    run,
                )?;
            }
            Ok(true)
        })
    }

    /// Records the worker's pid on the task and its run.
    pub fn set_worker_pid(&self, id: &str, pid: u32) -> Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE tasks SET worker_pid = ? WHERE id = ?",
                &params![pid, id],
            )?;
            let run = current_run(c, id)?;
            if let Some(run) = run {
                c.execute(
                    "UPDATE task_runs SET worker_pid = ? WHERE id = ?",
                    &params![pid, run],
                )?;
            }
            append_event(c, id, "spawned", Some(json!({"pid": pid})), run)
        })
    }

    /// `running|ready|blocked -> done`; children may become ready. `false` when the task was
    /// not in such a state (or another run is current).
    pub fn complete(&self, id: &str, done: &Completion<'_>) -> Result<bool> {
        let now = now();
        let summary = done.summary.or(done.result);
        let ok = self.write(|c| {
            ensure_task(c, id)?;
            let n = c.execute(
                "UPDATE tasks SET status = 'done', result = ?, completed_at = ?, claim_lock = NULL, \
                 claim_expires = NULL, worker_pid = NULL, block_kind = NULL, block_recurrences = 0, \
                 consecutive_failures = 0, last_failure_error = NULL \
                 WHERE id = ? AND status IN ('running', 'ready', 'blocked') \
                 AND (current_run_id = ?4 OR ?4 IS NULL)",
                &params![done.result, now, id, done.expected_run],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let mut run = end_run(c, id, "completed", "done", summary, None, done.metadata.as_ref())?;
            if run.is_none() && (summary.is_some() || done.metadata.is_some()) {
                run = Some(synthesize_run(c, id, "completed", summary, done.metadata.as_ref())?);
            }
            let first_line = summary
                .map(|s| truncate(s.trim().lines().next().unwrap_or(""), 400))
                .filter(|s| !s.is_empty());
            append_event(
                c,
                id,
                "completed",
                Some(json!({
                    "result_len": done.result.map(str::len).unwrap_or(0),
                    "summary": first_line,
                })),
                run,
            )?;
            Ok(true)
        })?;
        if ok {
            self.recompute_ready(None)?;
            self.cleanup_scratch(id)?;
        }
        Ok(ok)
    }

    /// Blocks a running or ready task, routed by `kind` (see [`BlockOutcome`]).
    pub fn block(
        &self,
        id: &str,
        reason: Option<&str>,
        kind: Option<BlockKind>,
        expected_run: Option<i64>,
    ) -> Result<Option<BlockOutcome>> {
        let kind_str = kind.map(BlockKind::as_str);
        self.write(|c| {
            let Some(row) = c.query_row(
                "SELECT block_kind, block_recurrences FROM tasks WHERE id = ?",
                &params![id],
            )?
            else {
                return Err(KanbanError::UnknownTask(id.to_string()));
            };
            let (prev_kind, prev_rec) = (
                row.get::<Option<String>>(0)?,
                row.get::<Option<i64>>(1)?.unwrap_or(0),
            );
            let (status, recurrences, event) = if kind == Some(BlockKind::Dependency) {
                ("todo", prev_rec, "dependency_wait")
            } else {
                let rec = if prev_kind.as_deref() == kind_str {
                    prev_rec + 1
                } else {
                    1
                };
                if rec >= BLOCK_RECURRENCE_LIMIT {
                    ("triage", rec, "block_loop_detected")
                } else {
                    ("blocked", rec, "blocked")
                }
            };
            let n = c.execute(
                "UPDATE tasks SET status = ?, claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL, block_kind = ?, block_recurrences = ? \
                 WHERE id = ? AND status IN ('running', 'ready') \
                 AND (current_run_id = ?5 OR ?5 IS NULL)",
                &params![status, kind_str, recurrences, id, expected_run],
            )?;
            if n != 1 {
                return Ok(None);
            }
            let mut run = end_run(c, id, "blocked", "blocked", reason, None, None)?;
            if run.is_none() && reason.is_some() {
                run = Some(synthesize_run(c, id, "blocked", reason, None)?);
            }
            let mut payload = json!({"reason": reason, "kind": kind_str});
            if event != "dependency_wait" {
                payload["recurrences"] = json!(recurrences);
            }
            if event == "block_loop_detected" {
                payload["limit"] = json!(BLOCK_RECURRENCE_LIMIT);
            }
            append_event(c, id, event, Some(payload), run)?;
            Ok(Some(match status {
                "todo" => BlockOutcome::Todo,
                "triage" => BlockOutcome::Triage,
                _ => BlockOutcome::Blocked,
            }))
        })
    }

    /// `blocked|scheduled -> ready` (or `todo` while parents are unfinished); the failure
    /// counter is reset. `false` when the task was neither.
    pub fn unblock(&self, id: &str) -> Result<bool> {
        let now = now();
        self.write(|c| {
            ensure_task(c, id)?;
            let stale: Option<Option<i64>> = c.query_value(
                "SELECT current_run_id FROM tasks WHERE id = ? AND status IN ('blocked', 'scheduled')",
                &params![id],
            )?;
            if let Some(Some(run)) = stale {
                c.execute(
                    "UPDATE task_runs SET status = 'reclaimed', outcome = 'reclaimed', \
                     summary = COALESCE(summary, 'invariant recovery on unblock'), ended_at = ?, \
                     claim_lock = NULL, claim_expires = NULL, worker_pid = NULL \
                     WHERE id = ? AND ended_at IS NULL",
                    &params![now, run],
                )?;
            }
            let undone = c.query_row(
                "SELECT 1 FROM task_links l JOIN tasks p ON p.id = l.parent_id \
                 WHERE l.child_id = ? AND p.status != 'done' LIMIT 1",
                &params![id],
            )?;
            let new_status = if undone.is_some() { "todo" } else { "ready" };
            let n = c.execute(
                "UPDATE tasks SET status = ?, current_run_id = NULL, consecutive_failures = 0, \
                 last_failure_error = NULL WHERE id = ? AND status IN ('blocked', 'scheduled')",
                &params![new_status, id],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let payload = (new_status != "ready").then(|| json!({"status": new_status}));
            append_event(c, id, "unblocked", payload, None)?;
            Ok(true)
        })
    }

    /// A person moving a card by hand (the dashboard's drag between columns) to `triage`,
    /// `todo` or `ready`, the moves the other verbs do not cover: Python's direct status write.
    /// `ready` needs every parent done; a running task's run is closed as reclaimed; a task
    /// leaving `done`/`archived` sends its `ready` children back to `todo`. `false` when the
    /// move is not allowed from where the task is.
    pub fn move_to(&self, id: &str, status: Status) -> Result<bool> {
        if !matches!(status, Status::Triage | Status::Todo | Status::Ready) {
            return Err(KanbanError::InvalidValue {
                what: "status for a direct move",
                value: status.as_str().to_string(),
                allowed: "triage, todo, ready",
            });
        }
        let new_status = status.as_str();
        let moved = self.write(|c| {
            ensure_task(c, id)?;
            let prev: String = c
                .query_value("SELECT status FROM tasks WHERE id = ?", &params![id])?
                .unwrap_or_default();
            if status == Status::Ready {
                let undone: Option<i64> = c.query_value(
                    "SELECT 1 FROM task_links l JOIN tasks p ON p.id = l.parent_id \
                     WHERE l.child_id = ? AND p.status != 'done' LIMIT 1",
                    &params![id],
                )?;
                if undone.is_some() {
                    return Ok(false);
                }
            }
            let n = c.execute(
                "UPDATE tasks SET status = ?, claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL WHERE id = ?",
                &params![new_status, id],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let run = if prev == "running" {
                end_run(
                    c,
                    id,
                    "reclaimed",
                    "reclaimed",
                    Some(&format!("status changed to {new_status} (dashboard/direct)")),
                    None,
                    None,
                )?
            } else {
                None
            };
            append_event(c, id, "status", Some(json!({"status": new_status})), run)?;
            if prev == "done" || prev == "archived" {
                let children = c
                    .query(
                        "SELECT child_id FROM task_links WHERE parent_id = ? ORDER BY child_id",
                        &params![id],
                    )?
                    .iter()
                    .map(|r| r.get::<String>(0))
                    .collect::<hermes_sql::Result<Vec<_>>>()?;
                for child in children {
                    let demoted = c.execute(
                        "UPDATE tasks SET status = 'todo' WHERE id = ? AND status = 'ready'",
                        &params![child],
                    )?;
                    if demoted == 1 {
                        append_event(
                            c,
                            &child,
                            "status",
                            Some(json!({"status": "todo", "reason": "parent_reopened", "parent": id})),
                            None,
                        )?;
                    }
                }
            }
            Ok(true)
        })?;
        if moved && status == Status::Ready {
            self.recompute_ready(None)?;
        }
        Ok(moved)
    }

    /// Parks a task in `scheduled`: waiting on time, not on a person.
    pub fn schedule(&self, id: &str, reason: Option<&str>) -> Result<bool> {
        self.write(|c| {
            ensure_task(c, id)?;
            let n = c.execute(
                "UPDATE tasks SET status = 'scheduled', claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL WHERE id = ? AND status IN ('todo', 'ready', 'running', 'blocked')",
                &params![id],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let mut run = end_run(c, id, "scheduled", "scheduled", reason, None, None)?;
            if run.is_none() && reason.is_some() {
                run = Some(synthesize_run(c, id, "scheduled", reason, None)?);
            }
            append_event(c, id, "scheduled", Some(json!({"reason": reason})), run)?;
            Ok(true)
        })
    }

    /// Archives a task (a run still going is closed as reclaimed); archived parents no longer
    /// hold their children back.
    pub fn archive(&self, id: &str) -> Result<bool> {
        let ok = self.write(|c| {
            ensure_task(c, id)?;
            let n = c.execute(
                "UPDATE tasks SET status = 'archived', claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL WHERE id = ? AND status != 'archived'",
                &params![id],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let run = end_run(
                c,
                id,
                "reclaimed",
                "reclaimed",
                Some("task archived with run still active"),
                None,
                None,
            )?;
            append_event(c, id, "archived", None, run)?;
            Ok(true)
        })?;
        if ok {
            self.recompute_ready(None)?;
        }
        Ok(ok)
    }

    /// A worker that ended without completing or blocking: the task goes back to `ready`
    /// with a failure counted (parked in `blocked` once the limit is reached). Returns
    /// whether the breaker tripped; `None` when the task was no longer this worker's.
    pub fn record_worker_exit(
        &self,
        id: &str,
        pid: i64,
        claimer: &str,
        exit: &WorkerExit,
        failure_limit: i64,
    ) -> Result<Option<bool>> {
        let (error, kind) = exit.describe(pid);
        let released = self.write(|c| {
            let n = c.execute(
                "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL WHERE id = ? AND status = 'running' AND worker_pid = ? \
                 AND claim_lock IS ?",
                &params![id, pid, claimer],
            )?;
            if n != 1 {
                return Ok(false);
            }
            let mut payload = json!({"pid": pid, "claimer": claimer});
            match exit {
                WorkerExit::Clean => {
                    payload["exit_code"] = json!(0);
                    payload["protocol_violation"] = json!(true);
                }
                WorkerExit::Code(code) => {
                    payload["exit_kind"] = json!("nonzero_exit");
                    payload["exit_code"] = json!(code);
                }
                WorkerExit::Signal(sig) => {
                    payload["exit_kind"] = json!("signaled");
                    payload["exit_code"] = json!(sig);
                }
                WorkerExit::Vanished => {}
            }
            let run = end_run(
                c,
                id,
                "crashed",
                "crashed",
                None,
                Some(&error),
                Some(&payload),
            )?;
            append_event(c, id, kind, Some(payload), run)?;
            Ok(true)
        })?;
        if !released {
            return Ok(None);
        }
        self.record_failure(id, &error, "crashed", failure_limit)
            .map(Some)
    }

    /// Counts a failure on a task the caller already put back in `ready`; parks it in
    /// `blocked` (event `gave_up`) once the task's limit (its `max_retries`, else
    /// `failure_limit`) is reached. Returns whether it tripped.
    pub fn record_failure(
        &self,
        id: &str,
        error: &str,
        outcome: &str,
        failure_limit: i64,
    ) -> Result<bool> {
        let error = truncate(error, 500);
        self.write(|c| {
            let Some(row) = c.query_row(
                "SELECT consecutive_failures, max_retries FROM tasks WHERE id = ?",
                &params![id],
            )?
            else {
                return Ok(false);
            };
            let (failures, max_retries) = (
                row.get::<Option<i64>>(0)?.unwrap_or(0),
                row.get::<Option<i64>>(1)?,
            );
            let failures = failures + 1;
            let (limit, source) = match max_retries {
                Some(m) => (m, "task"),
                None => (failure_limit, "dispatcher"),
            };
            if failures >= limit {
                c.execute(
                    "UPDATE tasks SET status = 'blocked', claim_lock = NULL, claim_expires = NULL, \
                     worker_pid = NULL, consecutive_failures = ?, last_failure_error = ? \
                     WHERE id = ? AND status IN ('ready', 'running')",
                    &params![failures, error, id],
                )?;
                let run = end_run(c, id, "gave_up", "gave_up", None, Some(&error), None)?;
                append_event(
                    c,
                    id,
                    "gave_up",
                    Some(json!({
                        "failures": failures,
                        "effective_limit": limit,
                        "limit_source": source,
                        "error": error,
                        "trigger_outcome": outcome,
                    })),
                    run,
                )?;
                Ok(true)
            } else {
                c.execute(
                    "UPDATE tasks SET consecutive_failures = ?, last_failure_error = ? WHERE id = ?",
                    &params![failures, error, id],
                )?;
                Ok(false)
            }
        })
    }

    /// A claim whose worker could not start goes back to `ready` with a failure counted.
    pub fn record_spawn_failure(&self, id: &str, error: &str, failure_limit: i64) -> Result<bool> {
        let error = truncate(error, 500);
        self.write(|c| {
            let n = c.execute(
                "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, \
                 worker_pid = NULL WHERE id = ? AND status = 'running'",
                &params![id],
            )?;
            if n == 1 {
                let run = end_run(
                    c,
                    id,
                    "spawn_failed",
                    "spawn_failed",
                    None,
                    Some(&error),
                    None,
                )?;
                append_event(c, id, "spawn_failed", Some(json!({"error": error})), run)?;
            }
            Ok(())
        })?;
        self.record_failure(id, &error, "spawn_failed", failure_limit)
    }

    /// Running tasks whose claim expired: a live local worker gets its claim extended, any
    /// other claim is released back to `ready` (event `reclaimed`). Returns the reclaimed ids.
    pub fn release_stale_claims(&self, pid_alive: &dyn Fn(i64) -> bool) -> Result<Vec<String>> {
        let now = now();
        let host_prefix = format!("{}:", host_name());
        let stale: Vec<(String, Option<String>, Option<i64>, i64)> = crate::board::rows_to(
            self.db.query(
                "SELECT id, claim_lock, worker_pid, claim_expires FROM tasks \
                 WHERE status = 'running' AND claim_expires IS NOT NULL AND claim_expires < ?",
                &params![now],
            )?,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let mut reclaimed = Vec::new();
        for (id, lock, pid, expires) in stale {
            let local = lock.as_deref().is_some_and(|l| l.starts_with(&host_prefix));
            if local && pid.is_some_and(pid_alive) {
                let new_expires = now + claim_ttl();
                self.write(|c| {
                    let n = c.execute(
                        "UPDATE tasks SET claim_expires = ? WHERE id = ? AND status = 'running' \
                         AND claim_lock IS ? AND claim_expires < ?",
                        &params![new_expires, id, lock, now],
                    )?;
                    if n == 1 {
                        let run = current_run(c, &id)?;
                        append_event(
                            c,
                            &id,
                            "claim_extended",
                            Some(json!({"reason": "pid_alive", "worker_pid": pid, "claim_expires_now": new_expires})),
                            run,
                        )?;
                    }
                    Ok(())
                })?;
                continue;
            }
            let done = self.write(|c| {
                let n = c.execute(
                    "UPDATE tasks SET status = 'ready', claim_lock = NULL, claim_expires = NULL, \
                     worker_pid = NULL WHERE id = ? AND status = 'running' AND claim_lock IS ? \
                     AND claim_expires < ?",
                    &params![id, lock, now],
                )?;
                if n != 1 {
                    return Ok(false);
                }
                let stale_lock = format!("stale_lock={}", lock.clone().unwrap_or_default());
                let run = end_run(
                    c,
                    &id,
                    "reclaimed",
                    "reclaimed",
                    None,
                    Some(&stale_lock),
                    None,
                )?;
                append_event(
                    c,
                    &id,
                    "reclaimed",
                    Some(json!({
                        "stale_lock": lock,
                        "worker_pid": pid,
                        "claim_expires": expires,
                        "now": now,
                        "host_local": local,
                    })),
                    run,
                )?;
                Ok(true)
            })?;
            if done {
                reclaimed.push(id);
            }
        }
        Ok(reclaimed)
    }

    /// Removes a finished task's scratch workspace (only one under the board's workspaces).
    fn cleanup_scratch(&self, id: &str) -> Result<()> {
        let task = self.get(id)?;
        if task.workspace_kind != "scratch" {
            return Ok(());
        }
        let dir = self.paths().workspaces.join(id);
        let inside = task
            .workspace_path
            .as_deref()
            .is_none_or(|p| std::path::Path::new(p) == dir);
        if inside && dir.is_dir() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        Ok(())
    }
}

/// Whether every parent of `id` is done or archived.
fn parents_finished(c: &Db, id: &str) -> Result<bool> {
    let undone = c.query_row(
        "SELECT 1 FROM task_links l JOIN tasks p ON p.id = l.parent_id \
         WHERE l.child_id = ? AND p.status NOT IN ('done', 'archived') LIMIT 1",
        &params![id],
    )?;
    Ok(undone.is_none())
}

/// A block a worker or person asked for (the latest of blocked/unblocked is `blocked`):
/// only an explicit unblock lifts it.
fn sticky_block(c: &Db, id: &str) -> Result<bool> {
    let kind: Option<String> = c.query_value(
        "SELECT kind FROM task_events WHERE task_id = ? AND kind IN ('blocked', 'unblocked') \
         ORDER BY id DESC LIMIT 1",
        &params![id],
    )?;
    Ok(kind.as_deref() == Some("blocked"))
}

pub(crate) fn current_run(c: &Db, id: &str) -> Result<Option<i64>> {
    Ok(c.query_value::<Option<i64>>(
        "SELECT current_run_id FROM tasks WHERE id = ?",
        &params![id],
    )?
    .flatten())
}

/// Closes the task's current run and clears the pointer; the run's id, if there was one.
fn end_run(
    c: &Db,
    id: &str,
    outcome: &str,
    status: &str,
    summary: Option<&str>,
    error: Option<&str>,
    metadata: Option<&Value>,
) -> Result<Option<i64>> {
    let Some(run) = current_run(c, id)? else {
        return Ok(None);
    };
    c.execute(
        "UPDATE task_runs SET status = ?, outcome = ?, summary = ?, error = ?, metadata = ?, \
         ended_at = ?, claim_lock = NULL, claim_expires = NULL, worker_pid = NULL \
         WHERE id = ? AND ended_at IS NULL",
        &params![
            status,
            outcome,
            summary,
            error,
            metadata.map(Value::to_string),
            now(),
            run
        ],
    )?;
    c.execute(
        "UPDATE tasks SET current_run_id = NULL WHERE id = ?",
        &params![id],
    )?;
    Ok(Some(run))
}

/// A closed run for an outcome reached without a claim (a person completing a task by hand),
/// so the summary still reaches the children.
fn synthesize_run(
    c: &Db,
    id: &str,
    outcome: &str,
    summary: Option<&str>,
    metadata: Option<&Value>,
) -> Result<i64> {
    let now = now();
    let profile: Option<String> = c
        .query_value::<Option<String>>("SELECT assignee FROM tasks WHERE id = ?", &params![id])?
        .flatten();
    let run = c.insert(
        "INSERT INTO task_runs (task_id, profile, status, started_at, ended_at, outcome, summary, metadata) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        &params![
            id,
            profile,
            outcome,
            now,
            now,
            outcome,
            summary,
            metadata.map(Value::to_string)
        ],
    )?;
    Ok(run)
}

pub(crate) fn truncate(s: &str, max_chars: usize) -> String {
    s.chars().take(max_chars).collect()
}

/// Closes the run of a worker stopped for running past its limit (event `timed_out`).
pub(crate) fn close_run_timed_out(
    board: &Board,
    id: &str,
    error: &str,
    pid: i64,
    claimer: &str,
    max_runtime: i64,
) -> Result<()> {
    board.write(|c| {
        let run = end_run(c, id, "timed_out", "timed_out", None, Some(error), None)?;
        append_event(
            c,
            id,
            "timed_out",
            Some(json!({"pid": pid, "claimer": claimer, "max_runtime_seconds": max_runtime})),
            run,
        )
    })
}
