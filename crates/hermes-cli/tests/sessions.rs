//! Stored sessions through the binary: every run is recorded, `hermes sessions ...` reads and
//! manages them, `--resume` / `--continue` send the whole history, `/title` and `/new` work in
//! the REPL, the `session_search` tool finds earlier sessions, trajectories are written when
//! enabled, and a damaged or locked database is reported without losing the answer or the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::path::PathBuf;

use hermes_store::Store;
use hermes_testkit::{Fault, MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

fn db_path(home: &TestHome) -> PathBuf {
    home.hermes_home().join("sessions.db")
}

fn store(home: &TestHome) -> Store {
    Store::open(db_path(home)).unwrap()
}

fn only_session_id(home: &TestHome) -> String {
    let sessions = store(home).list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:#?}");
    sessions[0].session.id.clone()
}

#[test]
fn a_run_is_recorded_and_the_sessions_commands_manage_it() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo walrus-output"})),
        Turn::text("The walrus is fine."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "Check on the walrus\nplease"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "The walrus is fine.\n");

    let id = only_session_id(&home);
    let s = store(&home).session(&id).unwrap().unwrap();
    assert_eq!(s.title.as_deref(), Some("Check on the walrus"));
    assert_eq!(
        (s.source.as_str(), s.model.as_deref()),
        ("cli", Some("mock-model"))
    );
    assert_eq!(
        (s.message_count, s.tool_call_count, s.api_call_count),
        (4, 1, 2)
    );
    assert!(s.input_tokens > 0 && s.output_tokens > 0, "{s:?}");
    assert_eq!(s.end_reason.as_deref(), Some("completed"));
    assert_eq!(
        s.cwd.as_deref(),
        Some(home.workdir().canonicalize().unwrap().to_str().unwrap())
    );

    let list = run(&home, &["sessions", "list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(stdout(&list).contains(&id) && stdout(&list).contains("Check on the walrus"));

    let show = run(&home, &["sessions", "show", &id[..12]]);
    assert!(show.status.success(), "{}", stderr(&show));
    let text = stdout(&show);
    for needle in [
        "→ terminal",
        "walrus-output",
        "The walrus is fine.",
        "4 messages",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }

    let found = run(&home, &["sessions", "search", "walrus"]);
    assert!(
        stdout(&found).contains(">>>walrus<<<"),
        "{}",
        stdout(&found)
    );
    let tools = run(
        &home,
        &["sessions", "search", "walrus-output", "--role", "tool"],
    );
    assert!(stdout(&tools).contains("tool:"), "{}", stdout(&tools));

    let export = run(&home, &["sessions", "export", &id]);
    let record: Value = serde_json::from_str(stdout(&export).trim()).unwrap();
    assert_eq!(record["id"], id.as_str());
    assert_eq!(record["messages"].as_array().unwrap().len(), 4);
    assert_eq!(
        record["messages"][1]["tool_calls"][0]["function"]["name"],
        "terminal"
    );
    let sharegpt = run(&home, &["sessions", "export", &id, "--format", "sharegpt"]);
    let t: Value = serde_json::from_str(stdout(&sharegpt).trim()).unwrap();
    let froms: Vec<&str> = t["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["from"].as_str().unwrap())
        .collect();
    assert_eq!(froms, ["system", "human", "gpt", "tool", "gpt"]);
    assert_eq!(t["completed"], true);

    let renamed = run(&home, &["sessions", "rename", &id, "Walrus", "check"]);
    assert!(
        stdout(&renamed).contains("\"Walrus check\""),
        "{}",
        stdout(&renamed)
    );
    let refused = run_with_stdin(&home, &["sessions", "delete", "Walrus check"], "n\n");
    assert_eq!(refused.status.code(), Some(1));
    assert!(store(&home).session(&id).unwrap().is_some());
    let deleted = run(&home, &["sessions", "delete", "Walrus check", "-y"]);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert_eq!(
        stdout(&run(&home, &["sessions", "list"])),
        "No sessions yet.\n"
    );
    let missing = run(&home, &["sessions", "show", &id]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("no session matches"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn resume_and_continue_send_the_whole_history() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Paris."),
        Turn::text("About 2.1 million."),
        Turn::text("Yes, the Seine."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    assert!(run(&home, &["-z", "Capital of France?"]).status.success());
    let id = only_session_id(&home);

    let o = run(&home, &["-z", "Its population?", "--resume", &id[..15]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&home, &["chat", "-q", "A river?", "--continue"]);
    assert!(o.status.success(), "{}", stderr(&o));

    let last = &server.chat_requests()[2];
    let contents: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "Capital of France?",
            "Paris.",
            "Its population?",
            "About 2.1 million.",
            "A river?"
        ]
    );
    assert_eq!(only_session_id(&home), id, "one session throughout");
    assert_eq!(store(&home).messages(&id).unwrap().len(), 6);

    let unknown = run(&home, &["-z", "hi", "--resume", "no-such-session"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("no session matches `no-such-session`"));
    let fresh = TestHome::new();
    fresh.write_mock_config(&server);
    let nothing = run(&fresh, &["-z", "hi", "--continue"]);
    assert_eq!(nothing.status.code(), Some(2));
    assert!(
        stderr(&nothing).contains("no earlier session to continue"),
        "{}",
        stderr(&nothing)
    );
    assert_eq!(server.chat_requests().len(), 3, "neither reached the model");
}

#[test]
fn the_repl_titles_sessions_and_new_starts_another() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run_with_stdin(
        &home,
        &[],
        "deploy the app\n/title\n/title Deploy work\n/new\nsomething else\n/title Deploy work\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("Title: deploy the app"), "{out}");
    assert!(out.contains("Title set: Deploy work"), "{out}");
    assert!(
        out.contains("Title not set: the title \"Deploy work\" is already used"),
        "{out}"
    );

    let sessions = store(&home).list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 2);
    let (newer, older) = (&sessions[0].session, &sessions[1].session);
    assert_eq!(older.title.as_deref(), Some("Deploy work"));
    assert_eq!(older.end_reason.as_deref(), Some("new_session"));
    assert_eq!(newer.title.as_deref(), Some("something else"));
    assert_eq!(newer.message_count, 2);
}

#[test]
fn session_search_finds_an_earlier_session_but_not_the_current_one() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Noted: the codename is BLUEFALCON."),
        Reply::tool_calls(vec![
            ("session_search", json!({"query": "codename"})),
            ("session_search", json!({})),
        ])
        .into(),
        Turn::text("It was BLUEFALCON."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    assert!(
        run(
            &home,
            &["-z", "Remember: the project codename is BLUEFALCON"]
        )
        .status
        .success()
    );
    let first = only_session_id(&home);
    let o = run(&home, &["-z", "What was the codename again?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It was BLUEFALCON.\n");

    let request = &server.chat_requests()[2];
    let tools: Vec<&Value> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    let search: Value = serde_json::from_str(tools[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(search["count"], 1, "only the earlier session: {search}");
    assert_eq!(search["results"][0]["session_id"], first.as_str());
    assert!(
        search["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains(">>>codename<<<")
    );
    let recent: Value = serde_json::from_str(tools[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(recent["sessions"].as_array().unwrap().len(), 1, "{recent}");
    assert_eq!(recent["sessions"][0]["session_id"], first.as_str());
}

#[test]
fn trajectories_are_appended_when_enabled() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hi"})),
        Turn::text("Done."),
        Fault::http(401, "Incorrect API key provided (mock)").into(),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}agent:\n  save_trajectories: true\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    assert!(run(&home, &["-z", "say hi"]).status.success());
    assert_eq!(run(&home, &["-z", "again"]).status.code(), Some(1));

    let dir = home.hermes_home().join("trajectories");
    let good = std::fs::read_to_string(dir.join("trajectory_samples.jsonl")).unwrap();
    assert_eq!(good.lines().count(), 1);
    let t: Value = serde_json::from_str(good.trim()).unwrap();
    assert_eq!(
        (t["model"].as_str(), t["completed"].as_bool()),
        (Some("mock-model"), Some(true))
    );
    let turns = t["conversations"].as_array().unwrap();
    let froms: Vec<&str> = turns.iter().map(|c| c["from"].as_str().unwrap()).collect();
    assert_eq!(froms, ["system", "human", "gpt", "tool", "gpt"]);
    assert!(turns[0]["value"].as_str().unwrap().contains("<tools>"));
    assert!(turns[2]["value"].as_str().unwrap().contains("<tool_call>"));
    let failed = std::fs::read_to_string(dir.join("failed_trajectories.jsonl")).unwrap();
    let f: Value = serde_json::from_str(failed.trim()).unwrap();
    assert_eq!(f["completed"], false);

    let off = TestHome::new();
    off.write_config(&hermes_testkit::mock_config_yaml(&server));
    let flagged = MockServer::start(Script::new(vec![Turn::text("ok")]));
    off.write_mock_config(&flagged);
    assert!(
        run(&off, &["-z", "x", "--save-trajectories"])
            .status
            .success()
    );
    assert!(
        off.hermes_home()
            .join("trajectories/trajectory_samples.jsonl")
            .exists()
    );
}

#[test]
fn a_damaged_database_is_reported_and_never_touched() {
    let server = MockServer::start(Script::new(vec![Turn::text("still answering")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let garbage = b"not a database, somebody's bytes\n".repeat(100);
    std::fs::write(db_path(&home), &garbage).unwrap();

    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "still answering\n");
    let err = stderr(&o);
    assert!(
        err.contains("this conversation is not being saved"),
        "{err}"
    );
    assert!(
        err.contains("is damaged") && err.contains("Nothing was changed or deleted"),
        "{err}"
    );
    assert_eq!(
        err.matches("not being saved").count(),
        1,
        "said once: {err}"
    );

    let list = run(&home, &["sessions", "list"]);
    assert_eq!(list.status.code(), Some(1));
    assert!(stderr(&list).contains("is damaged"), "{}", stderr(&list));
    assert_eq!(
        run(&home, &["-z", "hi", "--continue"]).status.code(),
        Some(1)
    );
    assert_eq!(std::fs::read(db_path(&home)).unwrap(), garbage);
}

#[test]
fn a_locked_database_is_a_clear_error() {
    let server = MockServer::start(Script::new(vec![Turn::text("first"), Turn::text("second")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    assert!(run(&home, &["-z", "hi"]).status.success());

    let locker = rusqlite::Connection::open(db_path(&home)).unwrap();
    locker
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;")
        .unwrap();
    let list = run(&home, &["sessions", "list"]);
    assert_eq!(list.status.code(), Some(1));
    assert!(
        stderr(&list).contains("locked by another process"),
        "{}",
        stderr(&list)
    );
    let o = run(&home, &["-z", "again"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "second\n");
    assert!(
        stderr(&o).contains("locked by another process"),
        "{}",
        stderr(&o)
    );
    locker.execute_batch("COMMIT;").unwrap();
    drop(locker);

    assert_eq!(
        store(&home).list_sessions(10, None).unwrap().len(),
        1,
        "nothing lost"
    );
}
