//! The turn loop against the scripted mock server: what is sent, what comes back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_core::NoEvents;
use hermes_protocol::{AgentEvent, Role};
use hermes_testkit::{MockServer, MockUsage, Reply, Script, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_text_turn_sends_system_user_tools_and_streams_with_usage() {
    let server = MockServer::start(Script::new(vec![Turn::text("Hello there.")]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let rec = Recorder::default();
    let result = agent
        .run_turn("hi", Vec::new(), &rec, CancellationToken::new())
        .await;

    assert_eq!(result.final_text, "Hello there.");
    assert!(result.is_completed() && !result.is_interrupted() && !result.failed());
    assert_eq!(result.api_calls, 1);
    assert!(result.usage.input_tokens > 0 && result.usage.output_tokens > 0);
    let req = &server.chat_requests()[0];
    assert_eq!(req["model"], "mock-model");
    assert_eq!(req["stream"], true);
    assert_eq!(req["stream_options"]["include_usage"], true);
    assert_eq!(
        messages(req)[0],
        json!({"role": "system", "content": "You are a test agent."})
    );
    assert_eq!(messages(req)[1], json!({"role": "user", "content": "hi"}));
    let tool_names: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tool_names,
        [
            "terminal",
            "process",
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "todo",
            "clarify"
        ]
    );
    let header = server.requests()[0]
        .header("authorization")
        .map(str::to_string);
    assert_eq!(header.as_deref(), Some("Bearer sk-test"));
    let streamed: String = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Hello there.");
    assert_eq!(result.messages.len(), 2);
}

#[tokio::test]
async fn tool_results_go_back_with_the_call_ids_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(tmp.path().join("b.txt"), "beta").unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hello"})),
        Reply::tool_calls(vec![
            ("read_file", json!({"path": "a.txt"})),
            ("read_file", json!({"path": "b.txt"})),
        ])
        .into(),
        Turn::text("done"),
    ]));
    let agent = agent(&server, tmp.path(), fast_options());
    let rec = Recorder::default();
    let result = agent
        .run_turn("go", Vec::new(), &rec, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "done");
    assert_eq!(result.api_calls, 3);

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    let second = &reqs[1];
    let assistant = &messages(second)[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_0_0");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "terminal");
    let out: serde_json::Value =
        serde_json::from_str(tool_result(second, "call_0_0").unwrap()).unwrap();
    assert_eq!(out["output"], "hello");
    assert_eq!(out["exit_code"], 0);

    let third = &reqs[2];
    let roles: Vec<&str> = messages(third)
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool"
        ]
    );
    assert_eq!(messages(third)[5]["tool_call_id"], "call_1_0");
    assert!(
        messages(third)[5]["content"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_eq!(messages(third)[6]["tool_call_id"], "call_1_1");
    assert!(
        messages(third)[6]["content"]
            .as_str()
            .unwrap()
            .contains("beta")
    );

    let finished: Vec<(String, bool)> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { name, ok, .. } => Some((name.clone(), *ok)),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 3);
    assert!(finished.iter().all(|(_, ok)| *ok));
    // Every message the turn added was announced, in order, as it was added.
    let added: Vec<hermes_protocol::Message> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::MessageAdded(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(added, result.messages);
}

#[tokio::test]
async fn an_exhausted_budget_gets_one_grace_call_without_tools() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo 1"})),
        Turn::tool("terminal", json!({"command": "echo 2"})),
        Turn::text("Wrapped up."),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(
        &server,
        tmp.path(),
        hermes_core::AgentOptions {
            max_turns: 2,
            ..fast_options()
        },
    );
    let result = agent
        .run_turn("loop", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "Wrapped up.");
    assert!(
        !result.is_completed(),
        "a grace answer is not a completed turn"
    );
    assert!(!result.failed());
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[1]["tools"].is_array());
    assert!(
        reqs[2].get("tools").is_none(),
        "the grace call offers no tools"
    );
    let last_user = messages(&reqs[2]).last().unwrap();
    assert_eq!(last_user["role"], "user");
    assert!(
        last_user["content"]
            .as_str()
            .unwrap()
            .contains("Do not call tools")
    );
}

#[tokio::test]
async fn reasoning_is_kept_and_think_blocks_leave_the_answer() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("<think>private plan</think>The answer is 4.")
            .with_reasoning("2+2")
            .into(),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let result = agent
        .run_turn("2+2?", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "The answer is 4.");
    let last = result.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.reasoning.as_deref(), Some("2+2private plan"));
}

#[tokio::test]
async fn usage_adds_up_over_the_turn() {
    let usage = MockUsage {
        prompt_tokens: 100,
        completion_tokens: 10,
        cached_tokens: 40,
    };
    let server = MockServer::start(Script::new(vec![
        Reply::tool_call("terminal", json!({"command": "true"}))
            .with_usage(usage)
            .into(),
        Reply::text("ok").with_usage(usage).into(),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let result = agent
        .run_turn("x", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    assert_eq!(result.usage.input_tokens, 200);
    assert_eq!(result.usage.output_tokens, 20);
    assert_eq!(result.usage.cache_read_tokens, 80);
}

#[tokio::test]
async fn history_carries_over_and_the_chat_facade_keeps_it() {
    let server = MockServer::start(Script::new(vec![Turn::text("first"), Turn::text("second")]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    assert_eq!(agent.chat("one").await.unwrap(), "first");
    assert_eq!(agent.chat("two").await.unwrap(), "second");
    let reqs = server.chat_requests();
    let contents: Vec<&str> = messages(&reqs[1])
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["You are a test agent.", "one", "first", "two"]);
}

/// Regression: tool results were announced (and so persisted) only after every call of the
/// round had finished; a crash during a slow second call lost the first call's result.
#[tokio::test]
async fn each_tool_result_is_announced_before_the_next_call_starts() {
    let server = MockServer::start(Script::new(vec![
        Reply::tool_calls(vec![
            ("terminal", json!({"command": "echo first"})),
            ("terminal", json!({"command": "echo second"})),
        ])
        .into(),
        Turn::text("done"),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let rec = Recorder::default();
    agent
        .run_turn("go", Vec::new(), &rec, CancellationToken::new())
        .await;
    let events = rec.events();
    let first_result = events
        .iter()
        .position(|e| matches!(e, AgentEvent::MessageAdded(m) if m.tool_call_id.as_deref() == Some("call_0_0")))
        .unwrap();
    let second_start = events
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolStarted { call_id, .. } if call_id == "call_0_1"))
        .unwrap();
    assert!(
        first_result < second_start,
        "result of call 1 at {first_result}, call 2 started at {second_start}"
    );
}
