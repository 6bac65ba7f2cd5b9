//! A read-only look at a session database, for `hermes status` and `hermes doctor`: how many
//! sessions it holds, when it was last active and, on request, whether SQLite's
//! `PRAGMA quick_check` finds damage. Unlike [`Store::open`](crate::Store::open) this never
//! creates, migrates, converts to WAL or writes the file (like any reader of a WAL database,
//! SQLite may create its empty `-wal` / `-shm` companions), so a file another process is using,
//! a damaged one or one from a newer Hermes can be examined safely. The Python Hermes's
//! `state.db` is read the same way.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::StoreError;
use crate::schema::{self, Found, LATEST_VERSION};

/// How long a look waits for another process's lock.
const BUSY_WAIT: Duration = Duration::from_secs(1);

/// What a look at a database found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbReport {
    pub sessions: u64,
    /// The most recent activity recorded, in seconds since the epoch.
    pub last_active: Option<f64>,
    /// The schema version (ours: `user_version`; the Python Hermes's: `schema_version`).
    pub schema_version: Option<i64>,
    /// What `PRAGMA quick_check` reported when it was asked for and found damage (empty:
    /// sound, or not checked).
    pub problems: Vec<String>,
}

fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let missing = |detail: &str| StoreError::Open {
        path: path.to_path_buf(),
        detail: detail.into(),
    };
    if path.is_dir() {
        return Err(missing("it is a directory"));
    }
    if !path.exists() {
        return Err(missing("no such file"));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::from_sqlite(path, e, Duration::ZERO))?;
    conn.busy_timeout(BUSY_WAIT)
        .and_then(|()| conn.execute_batch("PRAGMA query_only = ON;"))
        .map_err(|e| StoreError::from_sqlite(path, e, BUSY_WAIT))?;
    Ok(conn)
}

/// Runs `PRAGMA quick_check`: the complaints, none when the file is sound.
fn quick_check(conn: &Connection, path: &Path) -> Result<Vec<String>, StoreError> {
    let err = |e| StoreError::from_sqlite(path, e, BUSY_WAIT);
    let mut stmt = conn.prepare("PRAGMA quick_check").map_err(err)?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(err)?;
    Ok(rows.into_iter().filter(|r| r != "ok").collect())
}

/// Our `sessions.db`, read-only: its sessions and last activity, and with `check` the result
/// of `PRAGMA quick_check`. A file that is not ours, is damaged, is locked or has a newer
/// schema is the same [`StoreError`] opening the store would give.
pub fn inspect_sessions_db(path: &Path, check: bool) -> Result<DbReport, StoreError> {
    let conn = open_read_only(path)?;
    let err = |e| StoreError::from_sqlite(path, e, BUSY_WAIT);
    let version = match schema::inspect(&conn).map_err(err)? {
        Found::Empty => None,
        Found::Ours(v) if v > LATEST_VERSION => {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: v,
                known: LATEST_VERSION,
            });
        }
        Found::Ours(v) => Some(v),
        Found::Foreign { application_id } => {
            return Err(StoreError::NotOurs {
                path: path.to_path_buf(),
                detail: if application_id == 0 {
                    "it holds tables of another program".into()
                } else {
                    format!("its application id is {application_id:#x}")
                },
            });
        }
    };
    let problems = if check {
        quick_check(&conn, path)?
    } else {
        Vec::new()
    };
    let mut report = DbReport {
        schema_version: version,
        problems,
        ..DbReport::default()
    };
    if version.is_some_and(|v| v >= 1) {
        let (count, last): (i64, Option<f64>) = conn
            .query_row("SELECT count(*), max(updated_at) FROM sessions", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(err)?;
        report.sessions = u64::try_from(count).unwrap_or(0);
        report.last_active = last;
    }
    Ok(report)
}

/// The Python Hermes's `state.db`, read-only: its sessions and their last activity (the latest
/// start, end or message). A file without a `sessions` table is refused.
pub fn inspect_python_db(path: &Path) -> Result<DbReport, StoreError> {
    let conn = open_read_only(path)?;
    let err = |e| StoreError::from_sqlite(path, e, BUSY_WAIT);
    let columns = |table: &str| -> Result<Vec<String>, StoreError> {
        let mut stmt = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .map_err(err)?;
        stmt.query_map([table], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(err)
    };
    let session_cols = columns("sessions")?;
    if session_cols.is_empty() {
        return Err(StoreError::NotOurs {
            path: path.to_path_buf(),
            detail: "it has no Python Hermes sessions table".into(),
        });
    }
    let count: i64 = conn
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .map_err(err)?;
    let mut latest: Vec<String> = ["started_at", "ended_at"]
        .iter()
        .filter(|c| session_cols.iter().any(|s| s == *c))
        .map(|c| format!("(SELECT max({c}) FROM sessions)"))
        .collect();
    if columns("messages")?.iter().any(|c| c == "timestamp") {
        latest.push("(SELECT max(timestamp) FROM messages)".into());
    }
    let last_active = latest
        .iter()
        .map(|q| {
            conn.query_row(&format!("SELECT {q}"), [], |r| r.get::<_, Option<f64>>(0))
                .map_err(err)
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .reduce(f64::max);
    let has_versions = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(err)?
        > 0;
    let schema_version = if has_versions {
        conn.query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .map_err(err)?
    } else {
        None
    };
    Ok(DbReport {
        sessions: u64::try_from(count).unwrap_or(0),
        last_active,
        schema_version,
        problems: Vec::new(),
    })
}

/// How many of the Python Hermes's sessions (`state.db`) are not in our `sessions.db` yet
/// (`hermes sessions import` keeps their ids), both read-only. No `sessions.db` means none are.
pub fn python_sessions_not_imported(
    python_db: &Path,
    sessions_db: &Path,
) -> Result<u64, StoreError> {
    let python = open_read_only(python_db)?;
    let python_err = |e| StoreError::from_sqlite(python_db, e, BUSY_WAIT);
    let mut stmt = python
        .prepare("SELECT id FROM sessions")
        .map_err(python_err)?;
    let ids: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(python_err)?;
    if !sessions_db.exists() {
        return Ok(ids.len() as u64);
    }
    let ours = open_read_only(sessions_db)?;
    let err = |e| StoreError::from_sqlite(sessions_db, e, BUSY_WAIT);
    if matches!(schema::inspect(&ours).map_err(err)?, Found::Empty) {
        return Ok(ids.len() as u64);
    }
    let mut known = ours
        .prepare("SELECT 1 FROM sessions WHERE id = ?1")
        .map_err(err)?;
    let mut missing = 0;
    for id in &ids {
        if !known.exists([id]).map_err(err)? {
            missing += 1;
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewSession, Store};

    #[test]
    fn a_look_counts_sessions_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        {
            let mut store = Store::open(&path).unwrap();
            store
                .create_session(&NewSession {
                    id: "s1".into(),
                    source: "cli".into(),
                    ..NewSession::default()
                })
                .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let report = inspect_sessions_db(&path, true).unwrap();
        assert_eq!(report.sessions, 1);
        assert!(report.last_active.is_some());
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.schema_version, Some(LATEST_VERSION));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn garbage_is_damaged_and_missing_is_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        assert!(matches!(
            inspect_sessions_db(&path, true),
            Err(StoreError::Open { .. })
        ));
        assert!(!path.exists());
        let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &garbage).unwrap();
        assert!(matches!(
            inspect_sessions_db(&path, true),
            Err(StoreError::Damaged { .. })
        ));
        assert_eq!(std::fs::read(&path).unwrap(), garbage);
    }

    #[test]
    fn the_python_database_is_summarised() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER);
             INSERT INTO schema_version VALUES (22);
             CREATE TABLE sessions (id TEXT, started_at REAL, ended_at REAL);
             CREATE TABLE messages (id INTEGER, session_id TEXT, timestamp REAL);
             INSERT INTO sessions VALUES ('a', 100, 150), ('b', 200, NULL);
             INSERT INTO messages VALUES (1, 'b', 250);",
        )
        .unwrap();
        drop(conn);
        let report = inspect_python_db(&path).unwrap();
        assert_eq!(report.sessions, 2);
        assert_eq!(report.last_active, Some(250.0));
        assert_eq!(report.schema_version, Some(22));
    }
}
