//! Files the store must refuse without touching: damaged, foreign, newer than this build, or
//! locked by another process. Each case gives a clear error and the bytes on disk stay as they
//! were.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use hermes_protocol::Message;
use hermes_store::{MessageMeta, NewSession, Store, StoreError, StoreOptions};

fn impatient() -> StoreOptions {
    StoreOptions {
        busy_timeout: Duration::from_millis(100),
        write_attempts: 3,
    }
}

fn filled_store(path: &Path) {
    let mut store = Store::open(path).unwrap();
    store
        .create_session(&NewSession {
            id: "s1".into(),
            source: "cli".into(),
            ..NewSession::default()
        })
        .unwrap();
    for i in 0..300 {
        let text = format!("message {i} {}", "padding text ".repeat(20));
        store
            .append_message("s1", &Message::user(text), &MessageMeta::default())
            .unwrap();
    }
    drop(store);
    // The store keeps its WAL on close; move everything into the main file, as a long-lived
    // database would have it, so damage to the file is damage to the data.
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

#[test]
fn a_file_that_is_not_a_database_is_damaged_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let garbage = b"this is not sqlite, but it is somebody's data\n".repeat(200);
    std::fs::write(&path, &garbage).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("not an SQLite database"), "{text}");
    assert!(text.contains("Nothing was changed or deleted"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
}

#[test]
fn a_database_with_damaged_pages_reports_damage_on_read_and_is_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    filled_store(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 8 * page, "the store spans several pages");
    for b in &mut bytes[2 * page..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();

    let outcome = Store::open(&path).and_then(|s| s.messages("s1").map(drop));
    let err = outcome.unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
    assert!(err.to_string().contains("malformed"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "not a byte changed");
}

#[test]
fn a_newer_schema_is_refused_not_downgraded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    filled_store(&path);
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    let err = Store::open(&path).unwrap_err();
    assert_eq!(
        err,
        StoreError::NewerSchema {
            path: path.clone(),
            found: 99,
            known: hermes_store::LATEST_VERSION
        }
    );
    assert!(err.to_string().contains("Upgrade hermes"), "{err}");
    let raw = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = raw
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let n: i64 = raw
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!((v, n), (99, 300));
}

#[test]
fn another_programs_database_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY); INSERT INTO sessions VALUES ('py');",
    )
    .unwrap();
    drop(raw);
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotOurs { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_locked_database_is_a_clear_error_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    filled_store(&path);
    let mut store = Store::open_with(&path, impatient()).unwrap();

    let mut other = rusqlite::Connection::open(&path).unwrap();
    let held = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .unwrap();
    held.execute(
        "INSERT INTO sessions (id, source, started_at, updated_at) VALUES ('x', 'cli', 0, 0)",
        [],
    )
    .unwrap();
    let err = store
        .append_message(
            "s1",
            &Message::user("while locked"),
            &MessageMeta::default(),
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(
        err.to_string().contains("locked by another process"),
        "{err}"
    );
    held.commit().unwrap();

    store
        .append_message(
            "s1",
            &Message::user("after the lock"),
            &MessageMeta::default(),
        )
        .unwrap();
    let messages = store.messages("s1").unwrap();
    assert_eq!(messages.len(), 301);
    assert!(
        store.session("x").unwrap().is_some(),
        "the other writer's data is there too"
    );
}

#[test]
fn a_directory_in_the_way_is_an_open_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(err.to_string().contains("is a directory"), "{err}");
}
