//! Importing the Python Hermes's `state.db`, read from a fixture the Python Hermes wrote itself
//! (`fixtures/make_python_state_db.py`): every field lands where it belongs, tool calls arrive
//! in our shape, imported text is searchable, a second import adds nothing, foreign, missing
//! and newer files are refused with our store untouched, older schemas are read, taken titles
//! get a suffix, and the Python file is never modified (even while a Python Hermes writes it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use hermes_protocol::{Message, Role, ToolCall};
use hermes_store::import::{PYTHON_SCHEMA_VERSION, TITLE_SUFFIX};
use hermes_store::{
    ImportReport, MessageMeta, NewSession, SearchQuery, Store, StoreError, import_python,
};
use rusqlite::{Connection, OpenFlags, params};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/python_state.db"
);

const WALRUS: &str = "20250301_090000_a1b2c3";
const WALRUS_CONTINUED: &str = "20250301_093000_d4e5f6";
const TOKYO: &str = "20250302_181500_0a0b0c";
const LEGACY: &str = "20250303_070000_fedcba";

/// The fixture itself, read-only (it is never to change).
fn fixture() -> Connection {
    Connection::open_with_flags(FIXTURE, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    store: Store,
    state_db: PathBuf,
}

/// Our store and a copy of the fixture, side by side in a fresh home.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let state_db = dir.path().join("state.db");
    std::fs::copy(FIXTURE, &state_db).unwrap();
    let store = Store::open(dir.path().join("sessions.db")).unwrap();
    Setup {
        dir,
        store,
        state_db,
    }
}

fn import(s: &mut Setup) -> ImportReport {
    import_python(&mut s.store, &s.state_db).unwrap()
}

fn ours(s: &Setup) -> Connection {
    Connection::open(s.dir.path().join("sessions.db")).unwrap()
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_session_field_is_imported() {
    let mut s = setup();
    let report = import(&mut s);
    assert_eq!(
        (
            report.sessions_imported,
            report.sessions_skipped,
            report.messages_imported,
            report.messages_dropped
        ),
        (4, 0, 17, 0),
        "{report:?}"
    );
    assert!(report.retitled.is_empty());
    assert_eq!(report.source, s.state_db);

    let py = fixture();
    let mut stmt = py
        .prepare(
            "SELECT id, source, model, billing_provider, title, parent_session_id, cwd, \
             system_prompt, started_at, ended_at, end_reason, api_call_count, input_tokens, \
             output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, \
             estimated_cost_usd FROM sessions ORDER BY id",
        )
        .unwrap();
    let rows: Vec<(String, Value)> = stmt
        .query_map([], |r| {
            let mut v = serde_json::Map::new();
            for (i, name) in r.as_ref().column_names().enumerate() {
                let value = match r.get_ref(i)? {
                    rusqlite::types::ValueRef::Null => Value::Null,
                    rusqlite::types::ValueRef::Integer(n) => json!(n),
                    rusqlite::types::ValueRef::Real(x) => json!(x),
                    rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                    rusqlite::types::ValueRef::Blob(_) => unreachable!(),
                };
                v.insert(name.to_string(), value);
            }
            Ok((r.get(0)?, Value::Object(v)))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 4);
    for (id, p) in rows {
        let got = s.store.session(&id).unwrap().unwrap();
        let got = serde_json::to_value(&got).unwrap();
        let pairs = [
            ("source", "source"),
            ("model", "model"),
            ("provider", "billing_provider"),
            ("title", "title"),
            ("parent_session_id", "parent_session_id"),
            ("cwd", "cwd"),
            ("system_prompt", "system_prompt"),
            ("started_at", "started_at"),
            ("ended_at", "ended_at"),
            ("end_reason", "end_reason"),
            ("api_call_count", "api_call_count"),
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_tokens"),
            ("cache_write_tokens", "cache_write_tokens"),
            ("reasoning_tokens", "reasoning_tokens"),
            ("estimated_cost_usd", "estimated_cost_usd"),
        ];
        for (ours, theirs) in pairs {
            assert_eq!(got[ours], p[theirs], "{id}: {ours} vs Python {theirs}");
        }
        // Counts are recomputed from the messages imported (every row, inactive included).
        let messages = s.store.messages(&id).unwrap();
        assert_eq!(got["message_count"], json!(messages.len()), "{id}");
        let calls: usize = messages.iter().map(|m| m.message.tool_calls.len()).sum();
        assert_eq!(got["tool_call_count"], json!(calls), "{id}");
        let last = messages.iter().map(|m| m.timestamp).fold(0.0, f64::max);
        assert!(got["updated_at"].as_f64().unwrap() >= last, "{id}");
    }

    let walrus = s.store.session(WALRUS).unwrap().unwrap();
    assert_eq!(
        (walrus.provider.as_deref(), walrus.title.as_deref()),
        (Some("openrouter"), Some("Walrus deployment"))
    );
    assert_eq!(
        (
            walrus.message_count,
            walrus.tool_call_count,
            walrus.api_call_count
        ),
        (5, 2, 2)
    );
    assert_eq!(walrus.estimated_cost_usd, Some(0.0123));
    assert_eq!(walrus.end_reason.as_deref(), Some("compression"));
    let continued = s.store.session(WALRUS_CONTINUED).unwrap().unwrap();
    assert_eq!(continued.parent_session_id.as_deref(), Some(WALRUS));
    let legacy = s.store.session(LEGACY).unwrap().unwrap();
    assert_eq!(
        (legacy.model, legacy.title, legacy.ended_at),
        (None, None, None)
    );
}

/// role, timestamp, finish_reason, token_count, tool_call_id, tool_name, active
type PythonMessage = (
    String,
    f64,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    i64,
);

#[test]
fn every_message_field_is_imported_in_order() {
    let mut s = setup();
    import(&mut s);
    let py = fixture();
    for id in [WALRUS, WALRUS_CONTINUED, TOKYO, LEGACY] {
        let theirs: Vec<PythonMessage> = py
            .prepare(
                "SELECT role, timestamp, finish_reason, token_count, tool_call_id, tool_name, \
                 active FROM messages WHERE session_id = ?1 ORDER BY id",
            )
            .unwrap()
            .query_map([id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mine = s.store.messages(id).unwrap();
        assert_eq!(mine.len(), theirs.len(), "{id}");
        assert!(mine.windows(2).all(|w| w[0].id < w[1].id));
        for (m, (role, ts, finish, tokens, call_id, tool_name, _active)) in mine.iter().zip(&theirs)
        {
            assert_eq!(m.message.role.as_str(), role);
            assert_eq!(m.timestamp, *ts);
            assert_eq!(&m.finish_reason, finish);
            assert_eq!(&m.token_count, tokens);
            assert_eq!(&m.message.tool_call_id, call_id);
            assert_eq!(&m.message.name, tool_name);
            assert!(!m.partial);
        }
        // Compacted (inactive) rows stay inactive: the conversation goes on from the rest.
        let active: Vec<String> = theirs
            .iter()
            .zip(&mine)
            .filter(|((.., active), _)| *active == 1)
            .map(|(_, m)| m.message.content.clone())
            .collect();
        let conversation: Vec<String> = s
            .store
            .conversation(id)
            .unwrap()
            .into_iter()
            .map(|m| m.content)
            .collect();
        assert_eq!(conversation, active, "{id}");
    }

    let walrus = s.store.messages(WALRUS).unwrap();
    let call = &walrus[1].message;
    assert_eq!(call.content, "Let me look at the deployment first.");
    assert_eq!(
        call.tool_calls,
        vec![
            ToolCall {
                id: "call_walrus_1".into(),
                name: "terminal".into(),
                arguments: "{\"command\": \"kubectl get pods -n staging\"}".into(),
            },
            ToolCall {
                id: "call_walrus_2".into(),
                name: "read_file".into(),
                arguments: "{\"path\": \"deploy/walrus.yaml\"}".into(),
            },
        ]
    );
    assert_eq!(
        call.reasoning.as_deref(),
        Some("The user wants a staging deploy; check the cluster and the manifest.")
    );
    assert_eq!(
        call.reasoning_details,
        Some(json!([{"type": "reasoning.text", "text": "check cluster", "index": 0}]))
    );
    assert_eq!(walrus[2].message.role, Role::Tool);
    assert!(walrus[2].message.content.contains("walrus-7f9c"));
    // Stored in our shape: the OpenAI list without the Python Hermes's extra ids.
    let stored: String = ours(&s)
        .query_row(
            "SELECT tool_calls FROM messages WHERE id = ?1",
            [walrus[1].id],
            |r| r.get(0),
        )
        .unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(
        stored[0],
        json!({"id": "call_walrus_1", "type": "function",
               "function": {"name": "terminal",
                            "arguments": "{\"command\": \"kubectl get pods -n staging\"}"}})
    );

    let continued = s.store.messages(WALRUS_CONTINUED).unwrap();
    let flags: Vec<bool> = s
        .store
        .active_messages(WALRUS_CONTINUED)
        .unwrap()
        .iter()
        .map(|m| {
            m.message.content.starts_with("[Summary]")
                || m.message.content.starts_with("Understood")
        })
        .collect();
    assert_eq!((continued.len(), flags), (4, vec![true, true]));

    let tokyo = s.store.messages(TOKYO).unwrap();
    assert_eq!(tokyo[0].message.content, "Café ☕ — 東京の天気は？ 🌧️");
    assert_eq!(
        tokyo[1].message.content,
        "東京は雨です。Bring an umbrella ☂️"
    );
    assert_eq!(
        tokyo[1].message.reasoning.as_deref(),
        Some("Weather lookup not needed; answer from the forecast in context."),
        "reasoning_content is the reasoning"
    );
    assert_eq!(
        tokyo[2].message.content,
        "What is in this picture?\n[image]"
    );

    let legacy = s.store.messages(LEGACY).unwrap();
    assert_eq!(legacy[1].message.content, "");
    assert_eq!(
        legacy[1].message.tool_calls,
        vec![ToolCall {
            id: "call_legacy_1".into(),
            name: "terminal".into(),
            arguments: "{\"command\": \"ls\"}".into(),
        }],
        "a call stored without an id takes its result's"
    );
    assert_eq!(
        legacy[2].message.tool_call_id.as_deref(),
        Some("call_legacy_1")
    );
}

#[test]
fn imported_text_is_found_by_search() {
    let mut s = setup();
    import(&mut s);
    let find = |text: &str, roles: &[Role]| {
        s.store
            .search(&SearchQuery {
                roles,
                ..SearchQuery::new(text)
            })
            .unwrap()
    };
    let hits = find("pinniped", &[]);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, WALRUS);
    assert_eq!(hits[0].session_title.as_deref(), Some("Walrus deployment"));
    assert!(hits[0].snippet.contains(">>>pinniped<<<"), "{hits:?}");
    // Tool results, tool names and compacted turns are indexed too.
    assert_eq!(find("walrus-7f9c", &[Role::Tool])[0].session_id, WALRUS);
    assert_eq!(find("read_file", &[Role::Assistant])[0].session_id, WALRUS);
    assert_eq!(find("narwhal", &[])[0].session_id, WALRUS_CONTINUED);
    assert_eq!(find("cafe", &[Role::User])[0].session_id, TOKYO);
    assert_eq!(find("capybara", &[])[0].session_id, TOKYO);
    let conn = ours(&s);
    assert_eq!(
        count(&conn, "SELECT count(*) FROM messages_fts"),
        count(&conn, "SELECT count(*) FROM messages"),
        "every imported message is indexed"
    );
}

#[test]
fn a_second_import_imports_nothing() {
    let mut s = setup();
    let first = import(&mut s);
    assert_eq!(first.sessions_imported, 4);
    let before = count(&ours(&s), "SELECT count(*) FROM messages");
    let second = import(&mut s);
    assert_eq!(
        (
            second.sessions_imported,
            second.sessions_skipped,
            second.messages_imported
        ),
        (0, 4, 0)
    );
    assert_eq!(count(&ours(&s), "SELECT count(*) FROM messages"), before);
    assert_eq!(count(&ours(&s), "SELECT count(*) FROM sessions"), 4);
}

#[test]
fn sessions_already_here_are_left_alone_and_children_link_to_them() {
    let mut s = setup();
    s.store
        .create_session(&NewSession {
            id: WALRUS.into(),
            source: "cli".into(),
            ..NewSession::default()
        })
        .unwrap();
    s.store
        .append_message(
            WALRUS,
            &Message::user("our own walrus"),
            &MessageMeta::default(),
        )
        .unwrap();
    let report = import(&mut s);
    assert_eq!((report.sessions_imported, report.sessions_skipped), (3, 1));
    assert_eq!(report.messages_imported, 12);
    let ours = s.store.messages(WALRUS).unwrap();
    assert_eq!(ours.len(), 1, "nothing added to the session already here");
    assert_eq!(ours[0].message.content, "our own walrus");
    assert_eq!(
        s.store
            .session(WALRUS_CONTINUED)
            .unwrap()
            .unwrap()
            .parent_session_id
            .as_deref(),
        Some(WALRUS)
    );
}

#[test]
fn the_python_file_is_never_modified() {
    let mut s = setup();
    let before = std::fs::read(&s.state_db).unwrap();
    let files = files_in(s.dir.path());
    import(&mut s);
    import(&mut s);
    assert_eq!(std::fs::read(&s.state_db).unwrap(), before);
    assert_eq!(
        files_in(s.dir.path()),
        files,
        "no journal or WAL files left"
    );
}

#[test]
fn a_database_the_python_hermes_is_writing_is_read() {
    let mut s = setup();
    let python = Connection::open(&s.state_db).unwrap();
    let mode: String = python
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    python
        .execute_batch(
            "INSERT INTO sessions (id, source, started_at) VALUES ('py_live', 'cli', 1.0);
             INSERT INTO messages (session_id, role, content, timestamp)
                 VALUES ('py_live', 'user', 'committed while running', 2.0);
             BEGIN IMMEDIATE;
             INSERT INTO sessions (id, source, started_at) VALUES ('py_pending', 'cli', 3.0);",
        )
        .unwrap();
    // The Python Hermes holds the write lock with an uncommitted session: we read past it.
    let report = import(&mut s);
    assert_eq!(report.sessions_imported, 5);
    assert_eq!(
        s.store.conversation("py_live").unwrap()[0].content,
        "committed while running"
    );
    assert!(s.store.session("py_pending").unwrap().is_none());
    python.execute_batch("COMMIT").unwrap();
    let again = import(&mut s);
    assert_eq!((again.sessions_imported, again.sessions_skipped), (1, 5));
    let count: i64 = python
        .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 6, "the Python file keeps all its rows");
}

/// Our store with one session, to check a refused import leaves it as it was.
fn store_with_one_session(dir: &Path) -> Store {
    let mut store = Store::open(dir.join("sessions.db")).unwrap();
    store
        .start_session(
            &NewSession {
                id: "ours".into(),
                source: "cli".into(),
                ..NewSession::default()
            },
            &Message::user("hello"),
            &MessageMeta::default(),
        )
        .unwrap();
    store
}

fn assert_untouched(store: &Store) {
    let all = store.list_sessions(100, None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(store.messages("ours").unwrap().len(), 1);
}

#[test]
fn missing_and_foreign_files_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_with_one_session(dir.path());

    let missing = dir.path().join("state.db");
    let err = import_python(&mut store, &missing).unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("no such file"), "{err}");
    assert!(!missing.exists(), "a missing file is not created");

    let garbage = dir.path().join("garbage.db");
    let bytes = b"definitely not sqlite\n".repeat(300);
    std::fs::write(&garbage, &bytes).unwrap();
    let err = import_python(&mut store, &garbage).unwrap_err();
    assert!(matches!(err, StoreError::NotOurs { .. }), "{err:?}");
    assert!(err.to_string().contains("not an SQLite database"), "{err}");
    assert_eq!(std::fs::read(&garbage).unwrap(), bytes);

    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let err = import_python(&mut store, &other).unwrap_err();
    assert!(matches!(err, StoreError::NotOurs { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("no Python Hermes sessions and messages tables"),
        "{err}"
    );
    assert_eq!(std::fs::read(&other).unwrap(), before);

    // Our own database is not the Python one (it has sessions and messages tables too).
    let rust_home = tempfile::tempdir().unwrap();
    drop(store_with_one_session(rust_home.path()));
    let err = import_python(&mut store, &rust_home.path().join("sessions.db")).unwrap_err();
    assert!(err.to_string().contains("not the Python Hermes"), "{err}");

    let err = import_python(&mut store, dir.path()).unwrap_err();
    assert!(err.to_string().contains("directory"), "{err}");
    assert_untouched(&store);
}

#[test]
fn a_newer_schema_that_cannot_be_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_with_one_session(dir.path());
    let newer = dir.path().join("state.db");
    Connection::open(&newer)
        .unwrap()
        .execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version VALUES (99);
             CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT, started_at REAL);
             CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, kind TEXT,
                                    body TEXT, timestamp REAL);
             INSERT INTO sessions VALUES ('n1', 'cli', 1.0);",
        )
        .unwrap();
    let err = import_python(&mut store, &newer).unwrap_err();
    assert_eq!(
        err,
        StoreError::NewerSchema {
            path: newer.clone(),
            found: 99,
            known: PYTHON_SCHEMA_VERSION
        }
    );
    assert!(err.to_string().contains("newer Hermes"), "{err}");
    assert_untouched(&store);

    // A newer version whose tables still have what the import reads is imported.
    Connection::open(&newer)
        .unwrap()
        .execute_batch(
            "ALTER TABLE messages ADD COLUMN role TEXT;
             INSERT INTO messages (session_id, role, body, timestamp) VALUES ('n1', 'user', 'x', 2.0);",
        )
        .unwrap();
    let report = import_python(&mut store, &newer).unwrap();
    assert_eq!((report.sessions_imported, report.messages_imported), (1, 1));
    assert_eq!(store.messages("n1").unwrap()[0].message.content, "");
}

#[test]
fn an_older_schema_is_read_with_defaults_for_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("sessions.db")).unwrap();
    let old = dir.path().join("state.db");
    let conn = Connection::open(&old).unwrap();
    conn.execute_batch(
        "CREATE TABLE schema_version (version INTEGER NOT NULL);
         INSERT INTO schema_version VALUES (4);
         CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT,
             parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
             message_count INTEGER, input_tokens INTEGER, output_tokens INTEGER, title TEXT);
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
             role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT,
             tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT);",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO sessions (id, source, model, parent_session_id, started_at, input_tokens, \
         output_tokens, title) VALUES ('old1', 'cli', 'gpt-4o', 'deleted-parent', 100.0, 7, \
         NULL, '  spaced\t title ')",
        [],
    )
    .unwrap();
    let rows: [(&str, Option<&str>, Option<&str>); 4] = [
        ("session_meta", Some("{\"tools\": []}"), None),
        (
            "user",
            Some(
                r#"[{"type":"text","text":"old picture"},{"type":"image_url","image_url":{"url":"x"}}]"#,
            ),
            None,
        ),
        (
            "assistant",
            None,
            Some(
                r#"[{"id":"c1","type":"function","function":{"name":"terminal","arguments":{"command":"ls"}}}]"#,
            ),
        ),
        ("tool", Some("a.txt"), None),
    ];
    for (i, (role, content, calls)) in rows.iter().enumerate() {
        conn.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) \
             VALUES ('old1', ?1, ?2, ?3, ?4)",
            params![role, content, calls, 100.0 + i as f64],
        )
        .unwrap();
    }
    drop(conn);

    let report = import_python(&mut store, &old).unwrap();
    assert_eq!(
        (
            report.sessions_imported,
            report.messages_imported,
            report.messages_dropped
        ),
        (1, 3, 1)
    );
    let s = store.session("old1").unwrap().unwrap();
    assert_eq!(s.parent_session_id, None, "the parent is not here");
    assert_eq!(s.provider, None);
    assert_eq!(s.title.as_deref(), Some("spaced title"));
    assert_eq!(
        (s.input_tokens, s.output_tokens, s.api_call_count),
        (7, 0, 0)
    );
    assert_eq!((s.message_count, s.tool_call_count), (3, 1));
    assert_eq!(s.estimated_cost_usd, None);
    let messages = store.messages("old1").unwrap();
    assert_eq!(messages[0].message.content, "old picture\n[image]");
    assert_eq!(
        messages[1].message.tool_calls[0].arguments,
        "{\"command\":\"ls\"}"
    );
    assert_eq!(
        store.active_messages("old1").unwrap().len(),
        3,
        "active by default"
    );
}

#[test]
fn taken_titles_are_kept_with_a_suffix() {
    let mut s = setup();
    for (id, title) in [
        ("ours1", "Walrus deployment"),
        ("ours2", "東京の天気"),
        ("ours3", "東京の天気 (python)"),
    ] {
        s.store
            .create_session(&NewSession {
                id: id.into(),
                source: "cli".into(),
                ..NewSession::default()
            })
            .unwrap();
        s.store.set_title(id, title).unwrap();
    }
    let report = import(&mut s);
    assert_eq!(report.sessions_imported, 4);
    let mut retitled = report.retitled.clone();
    retitled.sort();
    assert_eq!(
        retitled,
        vec![
            (
                WALRUS.to_string(),
                format!("Walrus deployment{TITLE_SUFFIX}")
            ),
            (TOKYO.to_string(), "東京の天気 (python) #2".to_string()),
        ]
    );
    let title = |id: &str| s.store.session(id).unwrap().unwrap().title;
    assert_eq!(title(WALRUS).as_deref(), Some("Walrus deployment (python)"));
    assert_eq!(title(TOKYO).as_deref(), Some("東京の天気 (python) #2"));
    assert_eq!(
        title(WALRUS_CONTINUED).as_deref(),
        Some("Walrus deployment (continued)")
    );
    assert_eq!(title("ours1").as_deref(), Some("Walrus deployment"));
    // Resolving by the new title finds the imported session.
    assert_eq!(
        s.store
            .resolve_session("Walrus deployment (python)")
            .unwrap()
            .id,
        WALRUS
    );
}

#[test]
fn a_wal_database_is_read_when_no_python_hermes_is_running() {
    let mut s = setup();
    let python = Connection::open(&s.state_db).unwrap();
    let _: String = python
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    drop(python);
    let before = std::fs::read(&s.state_db).unwrap();
    let report = import(&mut s);
    assert_eq!(report.sessions_imported, 4);
    assert_eq!(std::fs::read(&s.state_db).unwrap(), before);
    // Like any reader of a WAL database, SQLite may have made the (empty) WAL beside it.
    let wal = s.dir.path().join("state.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
}
