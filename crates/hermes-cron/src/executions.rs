//! The durable ledger of cron execution attempts, the Python Hermes's `cron/executions.db`
//! (same table, columns, states and meanings, so either implementation reads the other's):
//! an attempt is recorded `claimed` before the agent is started, becomes `running` just before
//! it runs and ends `completed` or `failed` exactly once. An attempt whose owner process is
//! proved gone (its pid is not alive, or belongs to a process started at another time) becomes
//! `unknown` at the next scheduler tick: it is never retried automatically, since its side
//! effects may have happened. Terminal attempts beyond the newest 1000 are pruned.
//!
//! It is an audit trail, not a queue: failing to write it never stops a job (callers log).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

/// The ledger's file in the cron folder (Python's name).
pub const FILE_NAME: &str = "executions.db";
/// Terminal attempts kept (Python's `MAX_TERMINAL_EXECUTIONS`).
pub const MAX_TERMINAL: usize = 1000;
/// Why an attempt became `unknown` (Python's text).
const ABANDONED: &str = "Scheduler restarted after this execution's owner exited before a durable terminal state; whether side effects ran is unknown.";

/// Why the ledger could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("cron execution ledger {path}: {source}")]
pub struct LedgerError {
    path: PathBuf,
    source: rusqlite::Error,
}

/// Who started an attempt (Python's `source` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The scheduler found the job due.
    Builtin,
    /// Run directly (`hermes cron run`, `POST /api/jobs/{id}/run` made it due at once).
    Direct,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::Direct => "direct",
        }
    }
}

/// One attempt as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub id: String,
    pub job_id: String,
    pub source: String,
    pub process_id: String,
    pub pid: i64,
    pub process_started_at: Option<i64>,
    /// `claimed`, `running`, `completed`, `failed` or `unknown`.
    pub status: String,
    pub claimed_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
}

impl Execution {
    /// Python's record: the row as an object.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "job_id": self.job_id,
            "source": self.source,
            "process_id": self.process_id,
            "pid": self.pid,
            "process_started_at": self.process_started_at,
            "status": self.status,
            "claimed_at": self.claimed_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "error": self.error,
        })
    }

    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Execution> {
        Ok(Execution {
            id: row.get("id")?,
            job_id: row.get("job_id")?,
            source: row.get("source")?,
            process_id: row.get("process_id")?,
            pid: row.get("pid")?,
            process_started_at: row.get("process_started_at")?,
            status: row.get("status")?,
            claimed_at: row.get("claimed_at")?,
            started_at: row.get("started_at")?,
            finished_at: row.get("finished_at")?,
            error: row.get("error")?,
        })
    }
}

/// The ledger of one home's cron folder. Each call opens the file briefly (as Python does), so
/// the CLI, the gateway and a Python Hermes may share it.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    pub fn new(cron_dir: &Path) -> Ledger {
        Ledger {
            path: cron_dir.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, source: rusqlite::Error) -> LedgerError {
        LedgerError {
            path: self.path.clone(),
            source,
        }
    }

    fn connect(&self) -> Result<Connection, LedgerError> {
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(&self.path).map_err(|e| self.err(e))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| self.err(e))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=FULL;
             CREATE TABLE IF NOT EXISTS executions (
               id TEXT PRIMARY KEY,
               job_id TEXT NOT NULL,
               source TEXT NOT NULL,
               process_id TEXT NOT NULL,
               pid INTEGER NOT NULL,
               process_started_at INTEGER,
               status TEXT NOT NULL CHECK(status IN
                 ('claimed','running','completed','failed','unknown')),
               claimed_at TEXT NOT NULL,
               started_at TEXT,
               finished_at TEXT,
               error TEXT
             );
             CREATE INDEX IF NOT EXISTS idx_executions_job_claimed
               ON executions(job_id, claimed_at DESC, id DESC);
             CREATE INDEX IF NOT EXISTS idx_executions_status_claimed
               ON executions(status, claimed_at DESC, id DESC);",
        )
        .map_err(|e| self.err(e))?;
        Ok(conn)
    }

    /// Records a claimed attempt of `job_id` (before the agent starts); returns its id.
    pub fn claim(&self, job_id: &str, source: Source, now: &str) -> Result<String, LedgerError> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let pid = std::process::id();
        self.connect()?
            .execute(
                "INSERT INTO executions
                   (id, job_id, source, process_id, pid, process_started_at, status, claimed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'claimed', ?7)",
                params![
                    id,
                    job_id,
                    source.as_str(),
                    process_id(),
                    pid,
                    process_start_time(pid),
                    now
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// `claimed` → `running`, once; false when the attempt was not claimed.
    pub fn mark_running(&self, id: &str, now: &str) -> Result<bool, LedgerError> {
        let n = self
            .connect()?
            .execute(
                "UPDATE executions SET status='running', started_at=?1
                 WHERE id=?2 AND status='claimed'",
                params![now, id],
            )
            .map_err(|e| self.err(e))?;
        Ok(n == 1)
    }

    /// Writes the terminal state once (terminal attempts are never rewritten); false when the
    /// attempt was already terminal or unknown.
    pub fn finish(
        &self,
        id: &str,
        success: bool,
        error: Option<&str>,
        now: &str,
    ) -> Result<bool, LedgerError> {
        let (status, detail) = if success {
            ("completed", None)
        } else {
            ("failed", Some(error.unwrap_or("unknown failure")))
        };
        let conn = self.connect()?;
        let n = conn
            .execute(
                "UPDATE executions SET status=?1, finished_at=?2, error=?3
                 WHERE id=?4 AND status IN ('claimed','running')",
                params![status, now, detail, id],
            )
            .map_err(|e| self.err(e))?;
        if n == 1 {
            self.prune(&conn)?;
        }
        Ok(n == 1)
    }

    /// Marks attempts whose owner process is provably gone `unknown`; returns how many.
    pub fn recover_interrupted(&self, now: &str) -> Result<usize, LedgerError> {
        let conn = self.connect()?;
        let open: Vec<(String, String, i64, Option<i64>)> = {
            let mut stmt = conn
                .prepare(
                    "SELECT id, process_id, pid, process_started_at FROM executions
                     WHERE status IN ('claimed','running')",
                )
                .map_err(|e| self.err(e))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(Iterator::collect)
                .map_err(|e| self.err(e))?
        };
        let mut changed = 0;
        for (id, owner, pid, started) in open {
            if owner == process_id() || owner_is_live(pid, started) {
                continue;
            }
            changed += conn
                .execute(
                    "UPDATE executions SET status='unknown', finished_at=?1, error=?2
                     WHERE id=?3 AND status IN ('claimed','running')",
                    params![now, ABANDONED, id],
                )
                .map_err(|e| self.err(e))?;
        }
        if changed > 0 {
            self.prune(&conn)?;
        }
        Ok(changed)
    }

    /// The newest attempt of each of `job_ids` that has one.
    pub fn latest(&self, job_ids: &[&str]) -> Result<HashMap<String, Execution>, LedgerError> {
        if job_ids.is_empty() || !self.path.exists() {
            return Ok(HashMap::new());
        }
        let conn = self.connect()?;
        let mut stmt = conn
            .prepare(
                "SELECT * FROM executions WHERE job_id=?1
                 ORDER BY claimed_at DESC, id DESC LIMIT 1",
            )
            .map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        for job in job_ids {
            if let Some(e) = stmt
                .query_row([job], Execution::from_row)
                .optional()
                .map_err(|e| self.err(e))?
            {
                out.insert(job.to_string(), e);
            }
        }
        Ok(out)
    }

    /// Attempts, newest first, of one job or all, at most `limit` (1 to 500).
    pub fn list(&self, job_id: Option<&str>, limit: usize) -> Result<Vec<Execution>, LedgerError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        let conn = self.connect()?;
        let limit = limit.clamp(1, 500) as i64;
        let mut stmt = conn
            .prepare(
                "SELECT * FROM executions WHERE (?1 IS NULL OR job_id=?1)
                 ORDER BY claimed_at DESC, id DESC LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map(params![job_id, limit], Execution::from_row)
            .and_then(Iterator::collect)
            .map_err(|e| self.err(e))
    }

    fn prune(&self, conn: &Connection) -> Result<(), LedgerError> {
        conn.execute(
            "DELETE FROM executions WHERE id IN (
               SELECT id FROM executions WHERE status IN ('completed','failed','unknown')
               ORDER BY claimed_at DESC, id DESC LIMIT -1 OFFSET ?1)",
            [MAX_TERMINAL as i64],
        )
        .map(drop)
        .map_err(|e| self.err(e))
    }
}

/// This process's id in the ledger (Python's `_PROCESS_ID`): random, so a recycled pid is
/// never mistaken for this process.
fn process_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat` field 22, what the
/// Python Hermes records), where the system tells.
pub fn process_start_time(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`: comm may hold spaces; field 22 is the 20th after the `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the owner of an attempt still runs. Without `/proc` nothing can be proved, so the
/// owner counts as live (state is never rewritten on a guess).
fn owner_is_live(pid: i64, started: Option<i64>) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return true;
    }
    let Ok(pid) = u32::try_from(pid) else {
        return false;
    };
    match (process_start_time(pid), started) {
        (None, _) => false,
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => pid == std::process::id(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: &str = "2026-12-02T10:00:00.000000+00:00";
    const T1: &str = "2026-12-02T10:00:01.000000+00:00";

    #[test]
    fn an_attempt_goes_claimed_running_terminal_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        let id = ledger.claim("job1", Source::Builtin, T0).unwrap();
        assert_eq!(ledger.latest(&["job1"]).unwrap()["job1"].status, "claimed");
        assert!(ledger.mark_running(&id, T0).unwrap());
        assert!(!ledger.mark_running(&id, T0).unwrap());
        assert!(ledger.finish(&id, false, Some("boom"), T1).unwrap());
        // Terminal states are immutable.
        assert!(!ledger.finish(&id, true, None, T1).unwrap());
        let e = &ledger.latest(&["job1", "other"]).unwrap()["job1"];
        assert_eq!(
            (e.status.as_str(), e.error.as_deref(), e.source.as_str()),
            ("failed", Some("boom"), "builtin")
        );
        assert_eq!(e.started_at.as_deref(), Some(T0));
        assert_eq!(e.finished_at.as_deref(), Some(T1));
        assert_eq!(e.process_started_at, process_start_time(std::process::id()));
        assert!(ledger.latest(&["other"]).unwrap().is_empty());
    }

    #[test]
    fn attempts_of_a_dead_owner_become_unknown_and_ours_stay() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        let ours = ledger.claim("a", Source::Direct, T0).unwrap();
        // Another process that has exited: a pid that cannot exist.
        ledger
            .connect()
            .unwrap()
            .execute(
                "INSERT INTO executions (id, job_id, source, process_id, pid, status, claimed_at)
                 VALUES ('gone', 'b', 'builtin', 'other-process', 2147483647, 'running', ?1)",
                [T0],
            )
            .unwrap();
        assert_eq!(ledger.recover_interrupted(T1).unwrap(), 1);
        let latest = ledger.latest(&["a", "b"]).unwrap();
        assert_eq!(latest["a"].id, ours);
        assert_eq!(latest["a"].status, "claimed");
        assert_eq!(latest["b"].status, "unknown");
        assert_eq!(latest["b"].error.as_deref(), Some(ABANDONED));
    }

    #[test]
    fn terminal_attempts_are_pruned_to_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::new(dir.path());
        let conn = ledger.connect().unwrap();
        for i in 0..MAX_TERMINAL + 5 {
            conn.execute(
                "INSERT INTO executions (id, job_id, source, process_id, pid, status, claimed_at)
                 VALUES (?1, 'j', 'builtin', 'p', 1, 'completed', ?2)",
                params![format!("e{i:05}"), format!("2026-01-01T00:00:{i:05}")],
            )
            .unwrap();
        }
        let id = ledger
            .claim("j", Source::Builtin, "2027-01-01T00:00:00")
            .unwrap();
        ledger.finish(&id, true, None, T1).unwrap();
        let all = ledger.list(Some("j"), 500).unwrap();
        assert_eq!(all[0].id, id);
        let count: i64 = conn
            .query_row("SELECT COUNT(*) FROM executions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count as usize, MAX_TERMINAL);
    }
}
