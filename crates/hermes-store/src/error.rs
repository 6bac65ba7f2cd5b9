//! What can go wrong with the session store, worded for the person who has to fix it. SQLite's
//! own errors are sorted into the cases that need different advice: a damaged file, a file that
//! is not ours, a schema from a newer Hermes, a lock held by another process. None of them ever
//! leads the store to delete or rewrite the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::ErrorCode;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} is damaged ({detail}). Nothing was changed or deleted: move it aside (for example `mv {path} {path}.damaged`) and Hermes starts a new one; `sqlite3 {path} .recover` can salvage its contents"
    )]
    Damaged { path: PathBuf, detail: String },

    #[error(
        "{path} is not a Hermes sessions database ({detail}); it was left untouched. Move it elsewhere or point HERMES_HOME at another directory"
    )]
    NotOurs { path: PathBuf, detail: String },

    #[error(
        "{path} was written by a newer Hermes (schema version {found}; this build knows up to {known}). Upgrade hermes to use it; the file was left untouched"
    )]
    NewerSchema {
        path: PathBuf,
        found: i64,
        known: i64,
    },

    #[error(
        "{path} is locked by another process (still busy after {waited:.1}s); try again when it has finished"
    )]
    Locked { path: PathBuf, waited: f64 },

    #[error("cannot open the session database {path}: {detail}")]
    Open { path: PathBuf, detail: String },

    #[error("session database {path}: {detail}")]
    Sqlite { path: PathBuf, detail: String },

    #[error(
        "after copying, session {session} has {target} messages in the target for {in_source} in the source"
    )]
    MigrationShort {
        session: String,
        in_source: i64,
        target: i64,
    },

    #[error("session store at {server}: {detail}")]
    Remote { server: String, detail: String },

    #[error("no session matches `{0}` (see `hermes sessions list`)")]
    SessionNotFound(String),

    #[error("`{key}` matches several sessions ({candidates}); give more of the id")]
    Ambiguous { key: String, candidates: String },

    #[error("the title \"{title}\" is already used by session {session_id}")]
    TitleTaken { title: String, session_id: String },

    #[error("invalid title: {0}")]
    InvalidTitle(String),

    #[error("the session writer has stopped: {0}")]
    WriterStopped(String),
}

impl StoreError {
    /// Sorts a SQLite error on the database at `path`. `waited` is how long the operation kept
    /// trying, reported when the database turned out to be locked.
    pub(crate) fn from_sqlite(path: &Path, err: rusqlite::Error, waited: Duration) -> StoreError {
        let path = path.to_path_buf();
        let detail = err.to_string();
        match sqlite_code(&err) {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
                path,
                waited: waited.as_secs_f64(),
            },
            Some(ErrorCode::DatabaseCorrupt) => StoreError::Damaged { path, detail },
            Some(ErrorCode::NotADatabase) => StoreError::Damaged {
                path,
                detail: format!("{detail}: the file is not an SQLite database or is encrypted"),
            },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
                StoreError::Open { path, detail }
            }
            _ => StoreError::Sqlite { path, detail },
        }
    }
}

/// The primary SQLite result code of an error, when it came from SQLite.
pub(crate) fn sqlite_code(err: &rusqlite::Error) -> Option<ErrorCode> {
    match err {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.code),
        _ => None,
    }
}

/// Another connection holds the lock this operation needs; worth retrying.
pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        sqlite_code(err),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn sqlite_errors_are_sorted_by_what_the_user_must_do() {
        let p = Path::new("/h/sessions.db");
        let w = Duration::from_millis(1500);
        assert!(matches!(
            StoreError::from_sqlite(p, failure(rusqlite::ffi::SQLITE_BUSY), w),
            StoreError::Locked { waited, .. } if (waited - 1.5).abs() < 1e-9
        ));
        let damaged = StoreError::from_sqlite(p, failure(rusqlite::ffi::SQLITE_NOTADB), w);
        assert!(matches!(damaged, StoreError::Damaged { .. }));
        let text = damaged.to_string();
        assert!(text.contains("Nothing was changed or deleted"), "{text}");
        assert!(
            text.contains("mv /h/sessions.db /h/sessions.db.damaged"),
            "{text}"
        );
        assert!(matches!(
            StoreError::from_sqlite(p, failure(rusqlite::ffi::SQLITE_FULL), w),
            StoreError::Sqlite { .. }
        ));
    }
}
