//! `delegate_task` through the binary: `hermes -z` with the default toolsets, the scripted mock
//! server playing the parent and its sub-agent, the answer on stdout, the child's request, the
//! summary the parent was sent, and the child's conversation stored as a session under the
//! parent's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_store::Store;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn tool_names(request: &Value) -> Vec<&str> {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

#[test]
fn a_one_shot_run_delegates_and_stores_the_child_session() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "delegate_task",
            json!({"goal": "Say what a.txt holds", "context": "It is in the working directory."}),
        ),
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::text("a.txt holds alpha"),
        Turn::text("It holds alpha."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    std::fs::write(home.workdir().join("a.txt"), "alpha\n").unwrap();

    let o = run(&home, &["-z", "what is in a.txt?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "It holds alpha.\n");
    assert_eq!(stderr(&o), "");

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 4);
    assert!(tool_names(&reqs[0]).contains(&"delegate_task"));
    let child = &reqs[1];
    let cwd = home.workdir().canonicalize().unwrap();
    assert_eq!(
        child["messages"],
        json!([
            {"role": "system", "content": hermes_core::delegation::child_system_prompt(&cwd)},
            {"role": "user", "content": "Say what a.txt holds\n\nContext:\nIt is in the working directory."}
        ])
    );
    assert_eq!(
        tool_names(child),
        [
            "terminal",
            "process",
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "todo",
            "session_search",
            "skills_list",
            "skill_view",
            "skill_manage"
        ]
    );

    let result = reqs[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    let result: Value = serde_json::from_str(result).unwrap();
    let child_id = result["results"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        result,
        json!({"results": [{
            "task": 1,
            "status": "ok",
            "summary": "a.txt holds alpha",
            "api_calls": 2,
            "session_id": child_id
        }]})
    );

    // The child's conversation is a session of its own, under the parent's.
    let store = Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let sessions = store.list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 2, "{sessions:#?}");
    let parent = sessions.iter().find(|s| s.session.source == "cli").unwrap();
    let stored = store.session(&child_id).unwrap().unwrap();
    assert_eq!(stored.source, "subagent");
    assert_eq!(
        stored.parent_session_id.as_deref(),
        Some(parent.session.id.as_str())
    );
    assert_eq!(
        (
            stored.message_count,
            stored.api_call_count,
            stored.end_reason.as_deref()
        ),
        (4, 2, Some("completed"))
    );
    let roles: Vec<String> = store
        .messages(&child_id)
        .unwrap()
        .iter()
        .map(|m| m.message.role.as_str().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
}

#[test]
fn the_delegation_toolset_switches_it_and_its_settings_are_checked() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok"), Turn::text("ok")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi", "-t", "terminal,file"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!tool_names(&server.chat_requests()[0]).contains(&"delegate_task"));
    let o = run(&home, &["-z", "hi", "-t", "delegation"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tool_names(&server.chat_requests()[1]), ["delegate_task"]);

    let mut config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    config.push_str("delegation:\n  max_iterations: lots\n");
    home.write_config(&config);
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.starts_with("hermes: ") && err.contains("delegation.max_iterations"),
        "{err}"
    );
    assert_eq!(server.chat_request_count(), 2, "no request was made");
}
