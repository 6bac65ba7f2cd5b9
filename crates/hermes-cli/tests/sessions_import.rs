//! `hermes sessions import` through the binary, on a state.db the Python Hermes wrote
//! (crates/hermes-store/tests/fixtures): `sessions list` hints at it, the import reports what
//! it did, imported sessions are listed and searched (also by the model's `session_search`),
//! `--resume` sends the imported conversation as it was, and a missing or foreign file is one
//! clear line and exit 1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::path::PathBuf;

use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../hermes-store/tests/fixtures/python_state.db"
);

const WALRUS: &str = "20250301_090000_a1b2c3";
const WALRUS_CONTINUED: &str = "20250301_093000_d4e5f6";
const LEGACY: &str = "20250303_070000_fedcba";

/// A test home holding the Python Hermes's state.db.
fn home_with_state_db() -> (TestHome, PathBuf) {
    let home = TestHome::new();
    std::fs::create_dir_all(home.hermes_home()).unwrap();
    let state_db = home.hermes_home().join("state.db");
    std::fs::copy(FIXTURE, &state_db).unwrap();
    (home, state_db)
}

fn import(home: &TestHome) {
    let o = run(home, &["sessions", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The messages of a request after the system prompt.
fn conversation(request: &Value) -> Vec<Value> {
    request["messages"].as_array().unwrap()[1..].to_vec()
}

#[test]
fn import_lists_and_searches_the_python_sessions() {
    let (home, state_db) = home_with_state_db();
    let before = std::fs::read(&state_db).unwrap();

    let hint = run(&home, &["sessions", "list"]);
    assert!(hint.status.success(), "{}", stderr(&hint));
    let text = stdout(&hint);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("hermes sessions import") && text.contains("state.db"),
        "{text}"
    );

    let python_row = |home: &TestHome| {
        let o = run(home, &["status", "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let status: Value = serde_json::from_str(&stdout(&o)).unwrap();
        status["python"].as_str().unwrap().to_string()
    };
    let before_import = python_row(&home);
    assert!(
        before_import.contains("4 sessions") && before_import.contains("`hermes sessions import`"),
        "{before_import}"
    );

    let o = run(&home, &["sessions", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Imported: status no longer advises the import.
    let after_import = python_row(&home);
    assert!(
        after_import.contains("4 sessions") && after_import.ends_with(", all imported"),
        "{after_import}"
    );
    assert!(!after_import.contains("sessions import"), "{after_import}");
    assert_eq!(
        stdout(&o),
        format!(
            "Imported 4 sessions (17 messages) from {}.\n",
            state_db.display()
        )
    );
    let again = run(&home, &["sessions", "import"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        stdout(&again),
        format!(
            "Imported 0 sessions (0 messages) from {}; 4 already here.\n",
            state_db.display()
        )
    );
    assert_eq!(
        std::fs::read(&state_db).unwrap(),
        before,
        "state.db only read"
    );

    let list = stdout(&run(&home, &["sessions", "list"]));
    for needle in [
        WALRUS,
        "Walrus deployment",
        "Walrus deployment (continued)",
        "東京の天気",
        "list the files",
    ] {
        assert!(list.contains(needle), "{needle} in {list}");
    }
    assert!(!list.contains("hermes sessions import"), "{list}");

    let found = stdout(&run(&home, &["sessions", "search", "pinniped"]));
    assert!(
        found.contains(WALRUS) && found.contains(">>>pinniped<<<"),
        "{found}"
    );
    let tool = stdout(&run(
        &home,
        &["sessions", "search", "walrus-7f9c", "--role", "tool"],
    ));
    assert!(tool.contains("tool:"), "{tool}");
    let show = stdout(&run(&home, &["sessions", "show", WALRUS]));
    for needle in [
        "→ terminal",
        "→ read_file",
        "openrouter",
        "5 messages · 2 tool calls",
    ] {
        assert!(show.contains(needle), "{needle} in {show}");
    }
}

#[test]
fn a_resumed_python_session_sends_its_conversation() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Scaling now."),
        Turn::text("Continuing."),
        Turn::text("Still two files."),
    ]));
    let (home, _) = home_with_state_db();
    home.write_mock_config(&server);
    import(&home);

    let o = run(&home, &["-z", "Scale it up", "--resume", WALRUS]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Scaling now.\n");
    let sent = conversation(&server.chat_requests()[0]);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "assistant", "user"]
    );
    assert_eq!(sent[0]["content"], "Deploy the walrus service to staging");
    assert_eq!(sent[1]["content"], "Let me look at the deployment first.");
    assert_eq!(
        sent[1]["tool_calls"],
        json!([
            {"id": "call_walrus_1", "type": "function",
             "function": {"name": "terminal",
                          "arguments": "{\"command\": \"kubectl get pods -n staging\"}"}},
            {"id": "call_walrus_2", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"deploy/walrus.yaml\"}"}},
        ])
    );
    assert_eq!(sent[2]["tool_call_id"], "call_walrus_1");
    assert!(sent[2]["content"].as_str().unwrap().contains("walrus-7f9c"));
    assert_eq!(sent[3]["tool_call_id"], "call_walrus_2");
    assert!(sent[4]["content"].as_str().unwrap().contains("pinniped"));
    assert_eq!(sent[5]["content"], "Scale it up");

    // An in-place compaction's replaced turns are not sent, only what it left.
    let o = run(&home, &["-z", "Go on", "--resume", WALRUS_CONTINUED]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = conversation(&server.chat_requests()[1]);
    let contents: Vec<&str> = sent
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "[Summary] The walrus runs on staging with 3 replicas.",
            "Understood; continuing from the summary.",
            "Go on"
        ]
    );

    // A tool call the Python Hermes stored without an id is paired with its result.
    let o = run(&home, &["-z", "And now?", "--resume", LEGACY]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = conversation(&server.chat_requests()[2]);
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_legacy_1");
    assert_eq!(sent[1]["tool_calls"][0]["function"]["name"], "terminal");
    assert_eq!(sent[2]["role"], "tool");
    assert_eq!(sent[2]["tool_call_id"], "call_legacy_1");
    assert_eq!(sent.len(), 5);
}

#[test]
fn the_model_finds_imported_sessions_with_session_search() {
    let server = MockServer::start(Script::new(vec![
        Reply::tool_calls(vec![("session_search", json!({"query": "pinniped"}))]).into(),
        Turn::text("Found it."),
    ]));
    let (home, _) = home_with_state_db();
    home.write_mock_config(&server);
    import(&home);
    let o = run(&home, &["-z", "What did we roll out?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let request = &server.chat_requests()[1];
    let result = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let search: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(search["results"][0]["session_id"], WALRUS, "{search}");
}

#[test]
fn a_missing_or_foreign_file_is_one_clear_line() {
    let home = TestHome::new();
    let missing = run(&home, &["sessions", "import"]);
    assert_eq!(missing.status.code(), Some(1));
    let err = stderr(&missing);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no Python Hermes database at") && err.contains("state.db"),
        "{err}"
    );
    assert_eq!(
        stdout(&run(&home, &["sessions", "list"])),
        "No sessions yet.\n"
    );

    let foreign = home.write_file("notes.db", "not a database at all\n");
    let o = run(
        &home,
        &["sessions", "import", "--from", foreign.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("is not the Python Hermes's state.db (it is not an SQLite database)")
            && err.contains("nothing was imported"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "not a database at all\n"
    );
}

#[test]
fn import_respects_the_profile() {
    let home = TestHome::new();
    let profile = home.hermes_home().join("profiles/work");
    std::fs::create_dir_all(&profile).unwrap();
    std::fs::copy(FIXTURE, profile.join("state.db")).unwrap();
    let o = run(&home, &["sessions", "-p", "work", "import"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Imported 4 sessions"), "{}", stdout(&o));
    let work = stdout(&run(&home, &["sessions", "-p", "work", "list"]));
    assert!(work.contains(WALRUS), "{work}");
    let default = stdout(&run(&home, &["sessions", "list"]));
    assert_eq!(default, "No sessions yet.\n");
}
