//! Many sessions in one process: ten API-server requests at once, each delegating to a
//! sub-agent and searching past sessions. Every session's state travels with the session, so
//! from the store: each child is filed under the request that delegated it, and each search
//! left out exactly its own session (the bug this guards against kept the current session in
//! one process-wide slot: the last request to start won).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;

use common::gateway::Gateway;
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const REQUESTS: usize = 10;

/// The last message of a chat request, and the first user message.
fn last_and_first_user(body: &Value) -> (Value, String) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let first_user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    (messages.last().cloned().unwrap_or(Value::Null), first_user)
}

/// The model: a parent asked `task-N marker` delegates `child-N` and searches for `marker`;
/// a child answers; a parent with its tool results answers `parent-N done`.
fn model(body: &Value) -> Turn {
    let (last, first_user) = last_and_first_user(body);
    if let Some(n) = first_user
        .strip_prefix("child-")
        .and_then(|r| r.split_whitespace().next())
    {
        return Turn::text(format!("child-{n} done"));
    }
    let Some(n) = first_user
        .strip_prefix("task-")
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
    else {
        return Turn::text("ok");
    };
    if last["role"] == "user" {
        return Turn::Reply(Reply::tool_calls(vec![
            (
                "delegate_task",
                json!({"goal": format!("child-{n} look around")}),
            ),
            ("session_search", json!({"query": "marker"})),
        ]));
    }
    Turn::text(format!("parent-{n} done"))
}

fn chat(addr: &str, text: &str) -> Value {
    let body = json!({"messages": [{"role": "user", "content": text}]}).to_string();
    let reply = hermes_testkit::http_client::http(addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

#[test]
fn concurrent_requests_keep_their_own_sessions() {
    let server = MockServer::start(Script::responding(model));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let gateway = Gateway::start(&home, &[]);
    let addr = gateway.addr.clone();

    // An earlier conversation that every search can find.
    let seeded = chat(&addr, "seed marker");
    assert_eq!(seeded["choices"][0]["message"]["content"], "ok");

    let answers: Vec<(usize, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..REQUESTS)
            .map(|n| {
                let addr = addr.clone();
                scope.spawn(move || (n, chat(&addr, &format!("task-{n} marker"))))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (n, answer) in &answers {
        assert_eq!(
            answer["choices"][0]["message"]["content"],
            format!("parent-{n} done")
        );
    }
    let (code, _) = gateway.terminate();
    assert_eq!(code, Some(0));

    let db = rusqlite::Connection::open(home.hermes_home().join("sessions.db")).unwrap();
    let first_user = |session: &str| -> String {
        db.query_row(
            "SELECT content FROM messages WHERE session_id = ?1 AND role = 'user' ORDER BY id LIMIT 1",
            [session],
            |r| r.get(0),
        )
        .unwrap()
    };
    let sessions: Vec<(String, String, Option<String>)> = {
        let mut stmt = db
            .prepare("SELECT id, source, parent_session_id FROM sessions")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let mut parents: HashMap<String, String> = HashMap::new();
    for (id, source, _) in &sessions {
        if source == "api" {
            let text = first_user(id);
            if let Some(task) = text
                .strip_suffix(" marker")
                .and_then(|t| t.strip_prefix("task-"))
            {
                parents.insert(task.to_string(), id.clone());
            }
        }
    }
    assert_eq!(parents.len(), REQUESTS, "{sessions:?}");

    let mut children = 0;
    for (id, source, parent) in &sessions {
        if source != "subagent" {
            continue;
        }
        children += 1;
        let text = first_user(id);
        let n = text
            .strip_prefix("child-")
            .and_then(|r| r.split_whitespace().next())
            .unwrap();
        assert_eq!(
            parent.as_deref(),
            Some(parents[n].as_str()),
            "child {id} of task {n} filed under the wrong parent"
        );
    }
    assert_eq!(children, REQUESTS);

    for (n, parent) in &parents {
        let found: String = db
            .query_row(
                "SELECT content FROM messages WHERE session_id = ?1 AND role = 'tool' AND tool_name = 'session_search'",
                [parent],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            !found.contains(parent.as_str()),
            "task {n}'s search found its own session {parent}: {found}"
        );
        assert!(
            found.contains("seed marker") || found.contains(">>>marker<<<"),
            "task {n}'s search found nothing: {found}"
        );
    }
}
