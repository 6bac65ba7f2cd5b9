//! `/api/sessions` through the binary: a session created empty over the API, a turn in it (JSON)
//! and a streamed one (Python's event names) with the stored conversation replayed to the
//! model, its messages, listing and paging, retitling, a fork that carries the history to a
//! child session (the parent ended as `branched`) and answers from it, deletion, 404 for unknown
//! ids (before any stream starts) and 401 without the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use hermes_testkit::http_client::{HttpReply, sse_events};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const AUTH: &str = "Authorization: Bearer k1";

fn http(addr: &str, method: &str, path: &str, body: &str) -> HttpReply {
    hermes_testkit::http_client::http(addr, method, path, &[AUTH], body)
}

fn home_for(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    home
}

/// Role and content of each message the model was sent, after the system prompt.
fn sent(request: &Value) -> Vec<(String, String)> {
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    messages[1..]
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect()
}

fn header<'a>(reply: &'a HttpReply, name: &str) -> Option<&'a str> {
    reply.head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn sessions_are_resources_whose_turns_replay_the_stored_conversation() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Nice to meet you, Ada."),
        Turn::text("Your name is Ada."),
        Turn::text("Still Ada, in the fork."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);

    // Without the key nothing is listed.
    let r = hermes_testkit::http_client::http(&gw.addr, "GET", "/api/sessions", &[], "");
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_api_key");

    // An empty session with a title.
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions",
        r#"{"title": "Ada chat"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "hermes.session");
    let s = &v["session"];
    let id = s["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("api_"), "{id}");
    assert_eq!(s["title"], "Ada chat");
    assert_eq!(s["source"], "api");
    assert_eq!(s["model"], "hermes-agent");
    assert_eq!(s["message_count"], 0);
    assert_eq!(s["parent_session_id"], Value::Null);
    assert_eq!(s["ended_at"], Value::Null);
    assert_eq!(s["has_system_prompt"], false);
    assert!(s.get("system_prompt").is_none());
    // The same id again is a conflict.
    let again = json!({"id": id}).to_string();
    let r = http(&gw.addr, "POST", "/api/sessions", &again);
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "session_exists");

    // A turn in it: a JSON answer.
    let path = format!("/api/sessions/{id}/chat");
    let r = http(&gw.addr, "POST", &path, r#"{"message": "I am Ada."}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(header(&r, "x-hermes-session-id"), Some(id.as_str()));
    let v = r.json();
    assert_eq!(v["object"], "hermes.session.chat.completion");
    assert_eq!(v["session_id"], id.as_str());
    assert_eq!(
        v["message"],
        json!({"role": "assistant", "content": "Nice to meet you, Ada."})
    );
    for key in ["input_tokens", "output_tokens", "total_tokens"] {
        assert!(v["usage"][key].is_u64(), "{v}");
    }
    assert_eq!(
        sent(&server.last_chat_request().unwrap()),
        pairs(&[("user", "I am Ada.")])
    );

    // A streamed turn: the stored conversation is replayed to the model.
    let path = format!("/api/sessions/{id}/chat/stream");
    let r = http(
        &gw.addr,
        "POST",
        &path,
        r#"{"message": "What is my name?"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(header(&r, "content-type"), Some("text/event-stream"));
    assert_eq!(header(&r, "x-hermes-session-id"), Some(id.as_str()));
    let events = sse_events(&r.body);
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_deref().unwrap())
        .filter(|n| *n != "assistant.delta")
        .collect();
    assert_eq!(
        names,
        [
            "run.started",
            "message.started",
            "assistant.completed",
            "run.completed",
            "done"
        ]
    );
    let data: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["seq"], i as u64 + 1, "{d}");
        assert_eq!(d["session_id"], id.as_str());
        assert!(d["run_id"].as_str().unwrap().starts_with("run_"));
        assert!(d["ts"].is_f64());
    }
    assert_eq!(
        data[0]["user_message"],
        json!({"role": "user", "content": "What is my name?"})
    );
    let message_id = data[1]["message"]["id"].as_str().unwrap();
    let text: String = events
        .iter()
        .zip(&data)
        .filter(|((n, _), _)| n.as_deref() == Some("assistant.delta"))
        .map(|(_, d)| {
            assert_eq!(d["message_id"], message_id);
            d["delta"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(text, "Your name is Ada.");
    let completed = &data[data.len() - 3];
    assert_eq!(completed["content"], "Your name is Ada.");
    assert_eq!(completed["completed"], true);
    assert_eq!(completed["interrupted"], false);
    let run = &data[data.len() - 2];
    assert_eq!(
        run["messages"],
        json!([{"role": "assistant", "content": "Your name is Ada.", "tool_call_id": null,
                "tool_calls": null, "tool_name": null, "reasoning": null}])
    );
    assert_eq!(
        sent(&server.last_chat_request().unwrap()),
        pairs(&[
            ("user", "I am Ada."),
            ("assistant", "Nice to meet you, Ada."),
            ("user", "What is my name?"),
        ])
    );

    // Its messages, as stored.
    let r = http(&gw.addr, "GET", &format!("/api/sessions/{id}/messages"), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["session_id"], id.as_str());
    let stored: Vec<(&str, &str)> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["session_id"], id.as_str());
            assert!(m["id"].is_i64() && m["timestamp"].is_f64());
            (m["role"].as_str().unwrap(), m["content"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        stored,
        [
            ("user", "I am Ada."),
            ("assistant", "Nice to meet you, Ada."),
            ("user", "What is my name?"),
            ("assistant", "Your name is Ada."),
        ]
    );

    // Retitled; an unknown field is refused.
    let path = format!("/api/sessions/{id}");
    let r = http(&gw.addr, "PATCH", &path, r#"{"title": "Ada"}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["session"]["title"], "Ada");
    assert_eq!(r.json()["session"]["message_count"], 4);
    let r = http(&gw.addr, "PATCH", &path, r#"{"model": "x", "title": "y"}"#);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "unsupported_session_field");
    assert_eq!(
        r.json()["error"]["message"],
        "Unsupported session fields: model"
    );

    // A fork: the history copied into a child session, the next title of the lineage.
    let r = http(&gw.addr, "POST", &format!("/api/sessions/{id}/fork"), "{}");
    assert_eq!(r.status, 201, "{}", r.body);
    let fork = r.json()["session"].clone();
    let fork_id = fork["id"].as_str().unwrap().to_string();
    assert_ne!(fork_id, id);
    assert_eq!(fork["parent_session_id"], id.as_str());
    assert_eq!(fork["title"], "Ada #2");
    assert_eq!(fork["message_count"], 4);
    let r = http(&gw.addr, "GET", &path, "");
    assert_eq!(r.json()["session"]["end_reason"], "branched");
    // A turn in the fork continues the copied conversation.
    let r = http(
        &gw.addr,
        "POST",
        &format!("/api/sessions/{fork_id}/chat"),
        r#"{"message": "And now?"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["message"]["content"], "Still Ada, in the fork.");
    assert_eq!(
        sent(&server.last_chat_request().unwrap()),
        pairs(&[
            ("user", "I am Ada."),
            ("assistant", "Nice to meet you, Ada."),
            ("user", "What is my name?"),
            ("assistant", "Your name is Ada."),
            ("user", "And now?"),
        ])
    );

    // The listing: both (the fork is a branch, so it is listed), most recent first, paged.
    let r = http(&gw.addr, "GET", "/api/sessions", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(
        (v["limit"].clone(), v["offset"].clone()),
        (json!(50), json!(0))
    );
    assert_eq!(v["has_more"], false);
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [fork_id.as_str(), id.as_str()]);
    assert_eq!(v["data"][1]["preview"], "I am Ada.");
    let r = http(&gw.addr, "GET", "/api/sessions?limit=1&offset=1", "");
    let v = r.json();
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["id"], id.as_str());
    assert_eq!(v["has_more"], true);

    // Unknown ids: 404 in OpenAI's shape, for the stream too (no stream starts).
    for (method, path) in [
        ("GET", "/api/sessions/nope"),
        ("GET", "/api/sessions/nope/messages"),
        ("POST", "/api/sessions/nope/fork"),
        ("POST", "/api/sessions/nope/chat"),
        ("POST", "/api/sessions/nope/chat/stream"),
        ("DELETE", "/api/sessions/nope"),
    ] {
        let r = http(&gw.addr, method, path, r#"{"message": "hi"}"#);
        assert_eq!(r.status, 404, "{method} {path}: {}", r.body);
        assert_eq!(header(&r, "content-type"), Some("application/json"));
        assert_eq!(r.json()["error"]["code"], "session_not_found");
        assert_eq!(r.json()["error"]["message"], "Session not found: nope");
    }
    assert_eq!(server.chat_request_count(), 3);

    // Deleted.
    let r = http(&gw.addr, "DELETE", &format!("/api/sessions/{fork_id}"), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"object": "hermes.session.deleted", "id": fork_id, "deleted": true})
    );
    let r = http(&gw.addr, "GET", &format!("/api/sessions/{fork_id}"), "");
    assert_eq!(r.status, 404, "{}", r.body);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn session_requests_are_checked_before_any_turn() {
    let server = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let r = http(&gw.addr, "POST", "/api/sessions", r#"{"id": "../etc"}"#);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_session_id");
    let r = http(&gw.addr, "POST", "/api/sessions", r#"{"system_prompt": 3}"#);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_system_prompt");
    let r = http(&gw.addr, "POST", "/api/sessions", "[1]");
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["error"]["message"],
        "Request body must be a JSON object"
    );
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions",
        r#"{"id": "mine", "system_prompt": "Be brief."}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.json()["session"]["id"], "mine");
    assert_eq!(r.json()["session"]["has_system_prompt"], true);
    // A turn without a message.
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions/mine/chat",
        r#"{"message": ""}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "missing_message");
    // A title another session holds.
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions",
        r#"{"id": "a", "title": "T"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions",
        r#"{"id": "b", "title": "T"}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_title");
    let r = http(&gw.addr, "GET", "/api/sessions/b", "");
    assert_eq!(
        r.status, 404,
        "the refused session was not kept: {}",
        r.body
    );
    // A fork whose title is taken is not kept, and its parent stays as it was.
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions/mine/fork",
        r#"{"id": "f", "title": "T"}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_title");
    assert_eq!(http(&gw.addr, "GET", "/api/sessions/f", "").status, 404);
    let r = http(&gw.addr, "GET", "/api/sessions/mine", "");
    assert_eq!(r.json()["session"]["end_reason"], Value::Null);
    // Clearing a title.
    let r = http(&gw.addr, "PATCH", "/api/sessions/a", r#"{"title": null}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["session"]["title"], Value::Null);
    assert_eq!(server.chat_request_count(), 0);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn a_streamed_session_turn_reports_its_tools() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo streamed-tool-output"})),
        Turn::text("It printed streamed-tool-output."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let r = http(&gw.addr, "POST", "/api/sessions", r#"{"id": "tools"}"#);
    assert_eq!(r.status, 201, "{}", r.body);
    let r = http(
        &gw.addr,
        "POST",
        "/api/sessions/tools/chat/stream",
        r#"{"message": "Run echo."}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let events = sse_events(&r.body);
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_deref().unwrap())
        .filter(|n| *n != "assistant.delta")
        .collect();
    assert_eq!(
        names,
        [
            "run.started",
            "message.started",
            "tool.started",
            "tool.completed",
            "assistant.completed",
            "run.completed",
            "done"
        ]
    );
    let data = |name: &str| -> Value {
        let (_, d) = events
            .iter()
            .find(|(n, _)| n.as_deref() == Some(name))
            .unwrap();
        serde_json::from_str(d).unwrap()
    };
    assert_eq!(data("tool.started")["tool_name"], "terminal");
    assert_eq!(data("tool.completed")["tool_name"], "terminal");
    // The call's arguments travel with both, as in the Python Hermes.
    let args = json!({"command": "echo streamed-tool-output"});
    assert_eq!(data("tool.started")["args"], args);
    assert_eq!(data("tool.completed")["args"], args);
    assert_eq!(
        data("tool.completed")["preview"],
        data("tool.started")["preview"]
    );
    let run = data("run.completed");
    let roles: Vec<&str> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "tool", "assistant"]);
    assert_eq!(
        run["messages"][0]["tool_calls"][0]["function"]["name"],
        "terminal"
    );
    assert!(
        run["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("streamed-tool-output")
    );
    assert_eq!(
        data("assistant.completed")["content"],
        "It printed streamed-tool-output."
    );
    // The session holds the whole turn.
    let r = http(&gw.addr, "GET", "/api/sessions/tools/messages", "");
    assert_eq!(r.json()["data"].as_array().unwrap().len(), 4);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}
