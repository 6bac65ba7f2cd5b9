//! The database schema and its versioned migrations. The version lives in SQLite's
//! `user_version` header field and the file is tagged with our `application_id`, so a foreign
//! SQLite file is recognised and left alone. Migrations run at open, each in the same
//! transaction as its version bump; a file newer than this build is refused, never downgraded.

use rusqlite::Connection;

/// "HRMS": marks a file as a Hermes sessions database.
pub const APPLICATION_ID: i64 = 0x4852_4d53;

/// One step of the schema: applied to a database at `version - 1`.
struct Migration {
    version: i64,
    sql: &'static str,
}

/// Every migration, in order. Never edit a released one: add the next.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        sql: V1,
    },
    Migration {
        version: 2,
        sql: V2,
    },
];

/// The newest schema this build knows.
pub const LATEST_VERSION: i64 = 2;

/// Version 2: messages replaced by an in-place compression stay (searchable, exportable) but
/// are no longer part of the conversation the agent continues from.
const V2: &str = "ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1;";

/// What [`inspect`] found in a file's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A new, empty database.
    Empty,
    /// Ours, at this schema version.
    Ours(i64),
    /// Another application's data (its application id, or 0 with tables of its own).
    Foreign { application_id: i64 },
}

/// Reads the header fields that tell whose file this is and which schema it has.
pub fn inspect(conn: &Connection) -> rusqlite::Result<Found> {
    // One statement, so one snapshot: read separately, a migration committing in between
    // would make a half-seen file look like another program's.
    let (app, version, objects): (i64, i64, i64) = conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()), \
                (SELECT user_version FROM pragma_user_version()), \
                (SELECT count(*) FROM sqlite_master)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    if app == APPLICATION_ID {
        return Ok(Found::Ours(version));
    }
    if app != 0 {
        return Ok(Found::Foreign {
            application_id: app,
        });
    }
    Ok(if objects == 0 && version == 0 {
        Found::Empty
    } else {
        Found::Foreign { application_id: 0 }
    })
}

/// Applies every migration above `from`. Runs inside the caller's write transaction.
pub fn migrate(conn: &Connection, from: i64) -> rusqlite::Result<()> {
    for m in MIGRATIONS.iter().filter(|m| m.version > from) {
        conn.execute_batch(m.sql)?;
        conn.pragma_update(None, "user_version", m.version)?;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    Ok(())
}

/// Version 1: sessions, messages (with an in-progress flag for streamed answers), and a
/// full-text index over what was said, kept in sync by triggers. Rows still streaming
/// (`partial = 1`) stay out of the index until they are final.
const V1: &str = r#"
CREATE TABLE sessions (
    id                 TEXT PRIMARY KEY,
    source             TEXT NOT NULL,
    model              TEXT,
    provider           TEXT,
    title              TEXT,
    parent_session_id  TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    cwd                TEXT,
    system_prompt      TEXT,
    started_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    ended_at           REAL,
    end_reason         TEXT,
    message_count      INTEGER NOT NULL DEFAULT 0,
    tool_call_count    INTEGER NOT NULL DEFAULT 0,
    api_call_count     INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
    estimated_cost_usd REAL
);
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
CREATE INDEX sessions_updated ON sessions(updated_at DESC);
CREATE INDEX sessions_cwd ON sessions(cwd, updated_at DESC);
CREATE INDEX sessions_parent ON sessions(parent_session_id);

CREATE TABLE messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role          TEXT NOT NULL,
    content       TEXT NOT NULL DEFAULT '',
    tool_calls    TEXT,
    tool_call_id  TEXT,
    tool_name     TEXT,
    reasoning     TEXT,
    reasoning_details TEXT,
    finish_reason TEXT,
    timestamp     REAL NOT NULL,
    token_count   INTEGER,
    partial       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX messages_session ON messages(session_id, id);

CREATE VIRTUAL TABLE messages_fts USING fts5(body);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.partial = 0 BEGIN
    INSERT INTO messages_fts(rowid, body) VALUES (
        new.id,
        new.content || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    );
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN old.partial = 0 BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages
WHEN old.partial = 0 OR new.partial = 0 BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id AND old.partial = 0;
    INSERT INTO messages_fts(rowid, body) SELECT
        new.id,
        new.content || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')
    WHERE new.partial = 0;
END;
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order_up_to_latest() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
        assert_eq!(MIGRATIONS.last().map(|m| m.version), Some(LATEST_VERSION));
    }

    #[test]
    fn a_fresh_database_migrates_and_is_recognised_as_ours() {
        let conn = Connection::open_in_memory().unwrap();
        assert_eq!(inspect(&conn).unwrap(), Found::Empty);
        migrate(&conn, 0).unwrap();
        assert_eq!(inspect(&conn).unwrap(), Found::Ours(LATEST_VERSION));
    }

    #[test]
    fn another_programs_tables_are_foreign() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE sessions (id TEXT)")
            .unwrap();
        assert_eq!(
            inspect(&conn).unwrap(),
            Found::Foreign { application_id: 0 }
        );
    }
}
